#include "kernels/data/jpeg.h"

#include <turbojpeg.h>

#include <algorithm>

#include "kernels/common/rng.h"
#include "kernels/data/dataset.h"
#include "kernels/reference/image.h"
#include "tests/kernels/data/data_testing.h"

namespace dlb::data {
namespace {

using testing::DataTest;
namespace fs = std::filesystem;

// TurboJPEG's decode is libjpeg's: at every scale the pipelines choose from, the pixels equal
// those of libjpeg's own API (jpeg_read_scanlines) exactly.
TEST_F(DataTest, TurboJpegDecodesExactlyAsLibjpegAtEveryScale) {
  const auto dir = MakeJpegs("set", 6, 2, 200, 150);
  TurboDecoder dec;
  int files = 0;
  for (const ImageFile& f : ScanImageFolder(dir).files) {
    const auto bytes = Slurp(f.path);
    const JpegHeader hd = dec.Header(bytes.data(), bytes.size());
    for (Scale s : {Scale{1, 1}, Scale{7, 8}, Scale{1, 2}, Scale{3, 8}, Scale{1, 4}, Scale{1, 8}}) {
      std::vector<uint8_t> got;
      int w = 0, h = 0, rw = 0, rh = 0;
      dec.Decode(bytes.data(), bytes.size(), s, &got, &w, &h);
      const auto ref = ReferenceDecode(bytes, s, &rw, &rh);
      ASSERT_EQ(w, rw);
      ASSERT_EQ(h, rh);
      EXPECT_EQ(w, Scaled(hd.width, s));
      EXPECT_TRUE(got == ref) << f.path << " at " << s.num << "/" << s.denom;
    }
    ++files;
  }
  EXPECT_EQ(files, 6);
  EXPECT_GE(TurboScales().size(), 8u);
  EXPECT_FALSE(TurboJpegVersion().empty());
}

TEST_F(DataTest, ATruncatedOrForeignFileIsADecodeError) {
  const auto dir = MakeJpegs("set", 2, 1);
  const auto good = Slurp(dir / "class_000" / "img_000000.jpg");
  TurboDecoder dec;
  std::vector<uint8_t> rgb;
  int w, h;
  auto cut = good;
  cut.resize(good.size() / 2);
  EXPECT_THROW(dec.Decode(cut.data(), cut.size(), {1, 1}, &rgb, &w, &h), DecodeError);
  EXPECT_THROW(ReferenceDecode(cut, {1, 1}, &w, &h), Error);
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0};
  EXPECT_THROW(dec.Decode(png.data(), png.size(), {1, 1}, &rgb, &w, &h), DecodeError);
  // The handle still works after failures.
  dec.Decode(good.data(), good.size(), {1, 1}, &rgb, &w, &h);
  EXPECT_GT(w, 0);
}

// rgb (w x h) encoded by TurboJPEG with the given chroma subsampling (TJSAMP_*) and flags.
std::vector<uint8_t> Encode(const std::vector<uint8_t>& rgb, int w, int h, int samp, int flags) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, rgb.data(), w, 0, h, TJPF_RGB, &buf, &size, samp, 85, flags);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(buf, buf + size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

// The generated pictures re-encoded in every chroma subsampling, baseline and progressive, at
// sizes that are not whole iMCUs.
std::vector<std::vector<uint8_t>> Variants(const fs::path& dir) {
  struct Files : DataTest {
    using DataTest::Slurp;
  };
  std::vector<std::vector<uint8_t>> v;
  TurboDecoder dec;
  int k = 0;
  for (const ImageFile& f : ScanImageFolder(dir).files) {
    const auto bytes = Files::Slurp(f.path);
    v.push_back(bytes);
    std::vector<uint8_t> rgb;
    int w = 0, h = 0;
    dec.Decode(bytes.data(), bytes.size(), {1, 1}, &rgb, &w, &h);
    const int samp[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440, TJSAMP_GRAY};
    for (int s : samp) v.push_back(Encode(rgb, w, h, s, (k++ % 3 == 0) ? TJFLAG_PROGRESSIVE : 0));
  }
  return v;
}

// Offsets of the start-of-scan markers (FF DA) of a JPEG, found by walking its marker segments
// and, inside each scan, its entropy-coded data (FF 00 and restart markers are data).
std::vector<size_t> ScanStarts(const std::vector<uint8_t>& j) {
  std::vector<size_t> out;
  size_t i = 2;  // after SOI
  while (i + 4 <= j.size() && j[i] == 0xFF) {
    const uint8_t m = j[i + 1];
    if (m == 0xD9) break;
    const size_t len = size_t(j[i + 2]) << 8 | j[i + 3];
    if (m == 0xDA) {
      out.push_back(i);
      i += 2 + len;
      while (i + 1 < j.size() &&
             !(j[i] == 0xFF && j[i + 1] != 0x00 && !(j[i + 1] >= 0xD0 && j[i + 1] <= 0xD7)))
        ++i;
    } else {
      i += 2 + len;
    }
  }
  return out;
}

// The byte-level end-of-image check both pipelines share: a whole file passes, with or without a
// trailer after its end-of-image marker; a file cut anywhere (every length short of the whole, in
// a baseline file and a progressive one of many scans) does not; nor what has no scan at all.
TEST_F(DataTest, HasEndOfImageTellsAWholeFileFromACutOne) {
  const auto dir = MakeJpegs("set", 1, 1, 64, 48);
  const auto baseline = Slurp(dir / "class_000" / "img_000000.jpg");
  std::vector<uint8_t> rgb;
  int w = 0, h = 0;
  TurboDecoder dec;
  dec.Decode(baseline.data(), baseline.size(), {1, 1}, &rgb, &w, &h);
  const auto progressive = Encode(rgb, w, h, TJSAMP_420, TJFLAG_PROGRESSIVE);
  ASSERT_EQ(ScanStarts(baseline).size(), 1u);
  ASSERT_GT(ScanStarts(progressive).size(), 3u);  // a DC scan and AC refinements
  for (const auto* jpeg : {&baseline, &progressive}) {
    const auto& j = *jpeg;
    ASSERT_GE(j.size(), 4u);
    ASSERT_EQ(j[j.size() - 2], 0xFF);
    ASSERT_EQ(j[j.size() - 1], 0xD9);
    EXPECT_TRUE(HasEndOfImage(j.data(), j.size()));
    for (size_t n = 0; n < j.size(); ++n)
      ASSERT_FALSE(HasEndOfImage(j.data(), n)) << "cut to " << n << " of " << j.size() << " bytes";
    // A trailer (a camera's, with bytes that look like markers) after the end-of-image marker.
    for (const std::vector<uint8_t>& trailer :
         std::vector<std::vector<uint8_t>>{{0x00, 0x11, 0x22},
                                           {0xFF},
                                           {0xFF, 0xD9},
                                           {0xFF, 0x00, 0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x02},
                                           std::vector<uint8_t>(1000, 0xAB)}) {
      auto t = j;
      t.insert(t.end(), trailer.begin(), trailer.end());
      EXPECT_TRUE(HasEndOfImage(t.data(), t.size())) << trailer.size() << "-byte trailer";
      dec.Decode(t.data(), t.size(), {1, 1}, &rgb, &w, &h);  // libjpeg takes it too
    }
  }
  // A cut progressive file is the TurboJPEG path's DecodeError too, even for a window at the top.
  for (size_t at : ScanStarts(progressive)) {
    const size_t n = std::min(at + 20, progressive.size() - 2);
    const std::vector<uint8_t> cut(progressive.begin(), progressive.begin() + long(n));
    Window got;
    EXPECT_THROW(
        dec.DecodeWindow(cut.data(), cut.size(), {1, 1}, Window{0, 0, 8, 8}, &rgb, &got, &w, &h),
        DecodeError)
        << "cut 20 bytes into the scan at " << at;
  }
  const std::vector<uint8_t> no_scan = {0xFF, 0xD8, 0xFF, 0xD9};
  EXPECT_FALSE(HasEndOfImage(no_scan.data(), no_scan.size()));
  EXPECT_FALSE(HasEndOfImage(nullptr, 0));
}

// Decoding a window gives, in every pixel the window was asked for, exactly the whole decode's
// pixel: over random windows, the crops the pipeline asks for, every scale and subsampling.
TEST_F(DataTest, AWindowDecodesExactlyAsTheWholeImage) {
  const auto dir = MakeJpegs("set", 4, 1, 233, 171);
  TurboDecoder dec;
  Rng rng(7);
  int windows = 0, narrower = 0;
  for (const auto& jpeg : Variants(dir)) {
    ASSERT_FALSE(jpeg.empty());
    const JpegHeader hd = dec.Header(jpeg.data(), jpeg.size());
    for (const Scale& s : TurboScales()) {
      if (s.num > s.denom) continue;  // the pipeline only shrinks
      std::vector<uint8_t> full, part;
      int sw = 0, sh = 0;
      dec.Decode(jpeg.data(), jpeg.size(), s, &full, &sw, &sh);
      for (int t = 0; t < 24; ++t) {
        Window want;
        if (t % 2) {
          const Augment a = SampleAugment(hd.width, hd.height, rng.Next());
          want = TapWindow(a.crop, hd.width, hd.height, sw, sh, 1 + int(rng.UniformInt(0, 224)));
        } else {
          want.x = int(rng.UniformInt(0, sw - 1));
          want.y = int(rng.UniformInt(0, sh - 1));
          want.w = 1 + int(rng.UniformInt(0, sw - 1 - want.x));
          want.h = 1 + int(rng.UniformInt(0, sh - 1 - want.y));
        }
        Window got;
        int gw = 0, gh = 0;
        dec.DecodeWindow(jpeg.data(), jpeg.size(), s, want, &part, &got, &gw, &gh);
        ASSERT_EQ(gw, sw);
        ASSERT_EQ(gh, sh);
        ASSERT_LE(got.x, want.x);
        ASSERT_LE(got.y, want.y);
        ASSERT_GE(got.x + got.w, want.x + want.w);
        ASSERT_GE(got.y + got.h, want.y + want.h);
        ASSERT_LE(got.x + got.w, sw);
        ASSERT_LE(got.y + got.h, sh);
        ASSERT_EQ(part.size(), size_t(got.w) * got.h * 3);
        for (int y = want.y; y < want.y + want.h; ++y)
          for (int x = want.x; x < want.x + want.w; ++x)
            for (int c = 0; c < 3; ++c)
              ASSERT_EQ(part[(size_t(y - got.y) * got.w + (x - got.x)) * 3 + c],
                        full[(size_t(y) * sw + x) * 3 + c])
                  << "pixel " << x << "," << y << " of window " << want.x << "," << want.y << " "
                  << want.w << "x" << want.h << " at " << s.num << "/" << s.denom;
        ++windows;
        narrower += got.w < sw || got.h < sh;
      }
    }
  }
  EXPECT_GT(windows, 1000);
  EXPECT_GT(narrower, windows / 2);  // the windows do save work
}

// A file cut below the window still fails: rows below the window are not decoded, but the
// end-of-image marker is missing. A window at the top of a whole file decodes.
TEST_F(DataTest, AFileCutBelowTheWindowIsStillADecodeError) {
  const auto dir = MakeJpegs("set", 1, 1, 300, 240);
  const auto good = Slurp(dir / "class_000" / "img_000000.jpg");
  TurboDecoder dec;
  std::vector<uint8_t> rgb;
  Window got;
  int w, h;
  const Window top{0, 0, 40, 30};
  dec.DecodeWindow(good.data(), good.size(), {1, 1}, top, &rgb, &got, &w, &h);
  EXPECT_LT(got.h, h);
  const int whole_w = w;
  for (double keep : {0.95, 0.8, 0.6}) {
    auto cut = good;
    cut.resize(size_t(double(good.size()) * keep));
    EXPECT_THROW(dec.DecodeWindow(cut.data(), cut.size(), {1, 1}, top, &rgb, &got, &w, &h),
                 DecodeError)
        << keep;
    EXPECT_THROW(dec.DecodeWindow(cut.data(), cut.size(), {1, 2}, top, &rgb, &got, &w, &h),
                 DecodeError)
        << keep;
  }
  // A camera's trailer after the end-of-image marker is not a cut.
  auto trailer = good;
  trailer.insert(trailer.end(), {0x00, 0x11, 0x22});
  dec.DecodeWindow(trailer.data(), trailer.size(), {1, 1}, top, &rgb, &got, &w, &h);
  EXPECT_EQ(w, whole_w);
}

}  // namespace
}  // namespace dlb::data
