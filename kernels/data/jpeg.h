// TurboJPEG decoding for the CPU pipeline: one decompressor per worker thread (a tjhandle is not
// thread-safe), DCT-domain scaling, RGB output.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/data/augment.h"

namespace dlb::data {

// A file that is not a decodable JPEG (corrupt, truncated, not a JPEG): the pipeline skips the
// image and counts it. The message names what libjpeg-turbo said.
class DecodeError : public Error {
 public:
  using Error::Error;
};

struct JpegHeader {
  int width = 0, height = 0;
};

class TurboDecoder {
 public:
  TurboDecoder();
  ~TurboDecoder();
  TurboDecoder(TurboDecoder&&) noexcept;
  TurboDecoder& operator=(TurboDecoder&&) noexcept;
  TurboDecoder(const TurboDecoder&) = delete;
  TurboDecoder& operator=(const TurboDecoder&) = delete;

  JpegHeader Header(const uint8_t* data, size_t size);
  // Decodes at scale s into *rgb (Scaled(w, s) x Scaled(h, s) x 3), with libjpeg's accurate
  // integer DCT and fancy upsampling (TurboJPEG's defaults, and PIL's). A warning (a truncated
  // file's "premature end of data") counts as a failure: the pixels would be partly grey.
  void Decode(const uint8_t* data, size_t size, Scale s, std::vector<uint8_t>* rgb, int* w,
              int* h);

 private:
  void* handle_ = nullptr;
};

// The scaling factors TurboJPEG offers (1/8 .. 2 in eighths, 16 of them), largest first.
const std::vector<Scale>& TurboScales();

// libjpeg-turbo's version ("2.1.5"), from the headers this was compiled against.
std::string TurboJpegVersion();

}  // namespace dlb::data
