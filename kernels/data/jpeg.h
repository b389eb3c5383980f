// libjpeg-turbo decoding for the CPU pipeline: one decompressor per worker thread (libjpeg's state
// is not thread-safe), DCT-domain scaling, RGB output, and decoding of only the part of the image
// a crop needs (libjpeg's jpeg_crop_scanline and jpeg_skip_scanlines: TurboJPEG 2.1's API has no
// cropping).
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

  // Reads the header; a DecodeWindow of the same bytes that follows does not read it again.
  JpegHeader Header(const uint8_t* data, size_t size);
  // Decodes at scale s into *rgb (Scaled(w, s) x Scaled(h, s) x 3), with libjpeg's accurate
  // integer DCT and fancy upsampling (TurboJPEG's defaults, and PIL's). A warning (a truncated
  // file's "premature end of data") counts as a failure: the pixels would be partly grey.
  void Decode(const uint8_t* data, size_t size, Scale s, std::vector<uint8_t>* rgb, int* w, int* h);
  // Decodes at scale s only a window of the image that contains `want` (in the pixels of the
  // image decoded at s, sw x sh): *got is the window decoded, its pixels in *rgb (got->w x got->h
  // x 3), each identical to the same pixel of a whole-image Decode. The window is wider than
  // `want`: libjpeg crops columns at iMCU boundaries, and one column more on either side keeps
  // out the columns that fancy upsampling treats as the image's edge. Rows above the window are
  // entropy-decoded and discarded, rows below it are not decoded at all: a file that ends before
  // its end-of-image marker is a DecodeError wherever it was cut, but damage to the entropy data
  // below the window goes unseen (those pixels are not used).
  void DecodeWindow(const uint8_t* data, size_t size, Scale s, const Window& want,
                    std::vector<uint8_t>* rgb, Window* got, int* sw, int* sh);

 private:
  struct State;
  State* st_ = nullptr;
};

// Whether the JPEG in p[0, n) has an end-of-image marker (FF D9) after its last start-of-scan
// marker (FF DA), from the bytes alone. A truncated file has none; both pipelines skip such a file
// even where their decoder would not notice (a window above the cut, nvJPEG's hardware engine),
// since the rest of the image would be grey. Inside entropy-coded data FF is followed only by 00
// or a restart marker, so the first FF D9 after the last scan is the image's end; bytes after it
// (a camera's trailer) are allowed, as libjpeg allows them. False when there is no scan at all.
bool HasEndOfImage(const uint8_t* p, size_t n);

// The scaling factors libjpeg-turbo offers (1/8 .. 2 in eighths, 16 of them), largest first.
const std::vector<Scale>& TurboScales();

// libjpeg-turbo's version ("2.1.5"), from the headers this was compiled against.
std::string TurboJpegVersion();

}  // namespace dlb::data
