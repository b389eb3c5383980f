#include "kernels/data/jpeg.h"

// jpeglib.h needs size_t and FILE declared before it.
#include <jconfig.h>
#include <jpeglib.h>
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <utility>

#include "kernels/common/libjpeg_errors.h"

namespace dlb::data {

bool HasEndOfImage(const uint8_t* p, size_t n) {
  // Backwards from the end to the last FF DA: every FF xx pair after it is a marker, a stuffed
  // FF 00 or a restart marker.
  bool eoi = false;
  size_t end = n;
  while (end >= 2) {
    const void* hit = memrchr(p, 0xFF, end - 1);  // an FF with a byte after it, below `end`
    if (!hit) return false;
    const size_t i = size_t(static_cast<const uint8_t*>(hit) - p);
    if (p[i + 1] == 0xDA) return eoi;
    if (p[i + 1] == 0xD9) eoi = true;
    end = i + 1;
  }
  return false;
}

// libjpeg's decompressor, kept from image to image (jpeg_abort_decompress between them).
struct TurboDecoder::State {
  jpeg_decompress_struct cinfo;
  JpegErrors err;
  // The bytes whose header cinfo holds (jpeg_read_header done, decompression not started).
  const uint8_t* header_of = nullptr;
  size_t header_size = 0;
};

TurboDecoder::TurboDecoder() : st_(new State{}) {
  UseJpegErrors(&st_->cinfo, &st_->err);
  if (setjmp(st_->err.jump)) {
    const std::string why = st_->err.message;
    delete st_;
    throw Error("jpeg_create_decompress: " + why);
  }
  jpeg_create_decompress(&st_->cinfo);
}

TurboDecoder::~TurboDecoder() {
  if (!st_) return;
  jpeg_destroy_decompress(&st_->cinfo);
  delete st_;
}

TurboDecoder::TurboDecoder(TurboDecoder&& o) noexcept : st_(std::exchange(o.st_, nullptr)) {}

TurboDecoder& TurboDecoder::operator=(TurboDecoder&& o) noexcept {
  if (this != &o) {
    TurboDecoder gone(std::move(*this));
    st_ = std::exchange(o.st_, nullptr);
  }
  return *this;
}

JpegHeader TurboDecoder::Header(const uint8_t* data, size_t size) {
  State* st = st_;
  jpeg_decompress_struct* cinfo = &st->cinfo;
  if (setjmp(st->err.jump)) {
    jpeg_abort_decompress(cinfo);
    st->header_of = nullptr;
    throw DecodeError(std::string("not a readable JPEG header (") + st->err.message + ")");
  }
  jpeg_abort_decompress(cinfo);
  st->header_of = nullptr;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  st->header_of = data;
  st->header_size = size;
  if (cinfo->image_width == 0 || cinfo->image_height == 0)
    throw DecodeError("JPEG header gives an empty image");
  return {int(cinfo->image_width), int(cinfo->image_height)};
}

void TurboDecoder::Decode(const uint8_t* data, size_t size, Scale s, std::vector<uint8_t>* rgb,
                          int* w, int* h) {
  Window got;
  DecodeWindow(data, size, s, Window{0, 0, 1 << 30, 1 << 30}, rgb, &got, w, h);
}

void TurboDecoder::DecodeWindow(const uint8_t* data, size_t size, Scale s, const Window& want,
                                std::vector<uint8_t>* rgb, Window* got, int* sw, int* sh) {
  if (st_->header_of != data || st_->header_size != size) Header(data, size);
  State* st = st_;
  jpeg_decompress_struct* cinfo = &st->cinfo;
  st->header_of = nullptr;  // from here on the header is consumed, whatever happens
  if (setjmp(st->err.jump)) {
    jpeg_abort_decompress(cinfo);
    throw DecodeError(st->err.message);
  }
  cinfo->out_color_space = JCS_RGB;
  cinfo->scale_num = static_cast<unsigned>(s.num);
  cinfo->scale_denom = static_cast<unsigned>(s.denom);
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(cinfo);
  const int width = int(cinfo->output_width), height = int(cinfo->output_height);
  *sw = width;
  *sh = height;
  const int x_end = std::clamp(want.x + want.w, 1, width);
  const int y_end = std::clamp(want.y + want.h, 1, height);
  // jpeg_crop_scanline moves the left edge down to an iMCU boundary, and fancy upsampling takes
  // the first and last columns it decodes for the image's edges: one column more on either side
  // keeps those out of `want` (AWindowDecodesExactlyAsTheWholeImage). Skipped rows need no
  // margin: libjpeg keeps the upsampler's context rows across jpeg_skip_scanlines.
  JDIMENSION x0 = JDIMENSION(std::clamp(want.x - 1, 0, width - 1));
  JDIMENSION cw = JDIMENSION(std::min(x_end + 1, width)) - x0;
  jpeg_crop_scanline(cinfo, &x0, &cw);
  const int y0 = std::clamp(want.y, 0, height - 1);
  *got = {int(x0), y0, int(cw), y_end - y0};
  const size_t pitch = size_t(cw) * 3;
  rgb->resize(pitch * size_t(got->h));
  if (y0 > 0) jpeg_skip_scanlines(cinfo, JDIMENSION(y0));
  JSAMPROW rows[16];
  while (int(cinfo->output_scanline) < y_end) {
    const int first = int(cinfo->output_scanline);
    const int n = std::min(16, y_end - first);
    for (int r = 0; r < n; ++r) rows[r] = rgb->data() + size_t(first - y0 + r) * pitch;
    jpeg_read_scanlines(cinfo, rows, JDIMENSION(n));
  }
  if (cinfo->output_scanline == cinfo->output_height) {
    jpeg_finish_decompress(cinfo);  // reads up to the end-of-image marker
  } else {
    jpeg_abort_decompress(cinfo);
    // The rows below were not decoded, and libjpeg has not seen the end of the file.
    if (!HasEndOfImage(data, size))
      throw DecodeError("Premature end of JPEG file (no end-of-image marker)");
  }
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
