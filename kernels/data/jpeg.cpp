#include "kernels/data/jpeg.h"

#include <jconfig.h>
#include <turbojpeg.h>

#include <utility>

namespace dlb::data {

namespace {

std::string TjError(void* h) { return tjGetErrorStr2(h); }

}  // namespace

TurboDecoder::TurboDecoder() : handle_(tjInitDecompress()) {
  if (!handle_) throw Error(std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
}

TurboDecoder::~TurboDecoder() {
  if (handle_) tjDestroy(handle_);
}

TurboDecoder::TurboDecoder(TurboDecoder&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}

TurboDecoder& TurboDecoder::operator=(TurboDecoder&& o) noexcept {
  if (this != &o) {
    if (handle_) tjDestroy(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

JpegHeader TurboDecoder::Header(const uint8_t* data, size_t size) {
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle_, data, static_cast<unsigned long>(size), &w, &h, &subsamp,
                          &colorspace) != 0)
    throw DecodeError("not a readable JPEG header (" + TjError(handle_) + ")");
  if (w <= 0 || h <= 0) throw DecodeError("JPEG header gives an empty image");
  return {w, h};
}

void TurboDecoder::Decode(const uint8_t* data, size_t size, Scale s, std::vector<uint8_t>* rgb,
                          int* w, int* h) {
  const JpegHeader hd = Header(data, size);
  *w = Scaled(hd.width, s);
  *h = Scaled(hd.height, s);
  rgb->resize(size_t(*w) * *h * 3);
  // pitch 0: rows packed. flags 0: accurate DCT, fancy upsampling; warnings are reported as -1.
  if (tjDecompress2(handle_, data, static_cast<unsigned long>(size), rgb->data(), *w, 0, *h,
                    TJPF_RGB, 0) != 0)
    throw DecodeError(TjError(handle_));
}

const std::vector<Scale>& TurboScales() {
  static const std::vector<Scale> scales = [] {
    int n = 0;
    tjscalingfactor* f = tjGetScalingFactors(&n);
    std::vector<Scale> v;
    for (int i = 0; f && i < n; ++i) v.push_back({f[i].num, f[i].denom});
    return v;
  }();
  return scales;
}

std::string TurboJpegVersion() {
#define DLB_STR2(x) #x
#define DLB_STR(x) DLB_STR2(x)
  return DLB_STR(LIBJPEG_TURBO_VERSION);
#undef DLB_STR
#undef DLB_STR2
}

}  // namespace dlb::data
