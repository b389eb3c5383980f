#include "kernels/data/jpeg.h"

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

}  // namespace
}  // namespace dlb::data
