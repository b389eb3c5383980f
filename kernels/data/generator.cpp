#include "kernels/data/generator.h"

#include <png.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace dlb::dataset {

namespace fs = std::filesystem;

// ---- PRNG -------------------------------------------------------------------------------------

uint64_t ImageSeed(uint64_t seed, uint64_t i) { return StreamSeed(seed, i); }

namespace {

// ---- Images and files ---------------------------------------------------------------------------

struct Rgb {
  int w = 0, h = 0;
  std::vector<uint8_t> px;  // w * h * 3, row-major
};

struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

TjHandle MakeTj(bool compress) {
  TjHandle h(compress ? tjInitCompress() : tjInitDecompress());
  if (!h) throw Error(std::string("TurboJPEG: ") + tjGetErrorStr2(nullptr));
  return h;
}

void WriteFile(const fs::path& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  f.close();
  if (!f) throw Error(p.string() + ": write failed");
}

// A colour photograph, or nothing (grayscale, unreadable, too small): sources are skipped, not
// fatal, because a folder of someone's files may hold anything.
bool LoadPng(const fs::path& p, Rgb* out) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, p.c_str())) return false;
  if (!(img.format & PNG_FORMAT_FLAG_COLOR)) {
    png_image_free(&img);
    return false;
  }
  img.format = PNG_FORMAT_RGB;  // alpha is composited onto black by libpng
  out->w = static_cast<int>(img.width);
  out->h = static_cast<int>(img.height);
  out->px.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out->px.data(), 0, nullptr)) {
    png_image_free(&img);
    return false;
  }
  return true;
}

bool LoadJpeg(const fs::path& p, Rgb* out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  const std::vector<uint8_t> data{std::istreambuf_iterator<char>(f), {}};
  TjHandle tj = MakeTj(false);
  int w = 0, h = 0, sub = 0, cs = 0;
  if (tjDecompressHeader3(tj.get(), data.data(), data.size(), &w, &h, &sub, &cs) != 0) return false;
  if (cs == TJCS_GRAY) return false;
  out->w = w;
  out->h = h;
  out->px.resize(static_cast<size_t>(w) * h * 3);
  // A warning (a truncated file) counts as a failure too: its missing rows are grey.
  return tjDecompress2(tj.get(), data.data(), data.size(), out->px.data(), w, 0, h, TJPF_RGB, 0) ==
         0;
}

// A PNG whose three channels are the same image is grayscale in disguise.
bool LooksGray(const Rgb& im) {
  uint64_t diff = 0;
  for (size_t k = 0; k + 2 < im.px.size(); k += 3)
    diff += static_cast<uint64_t>(std::abs(im.px[k] - im.px[k + 1]) +
                                  std::abs(im.px[k + 1] - im.px[k + 2]));
  return diff < 2 * (im.px.size() / 3);
}

constexpr int kMinSourceSide = 64;

struct Sources {
  std::vector<Rgb> images;
  std::vector<std::string> files;
  std::string desc;
};

// Every usable colour photo in dir, in file-name order (the order indexes them, so it is fixed);
// only the known ones where `known` is set.
void LoadDir(const fs::path& dir, bool known, Sources* s) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    std::string name = e.path().filename().string();
    if (known) {
      const auto& k = KnownPhotoNames();
      if (std::find(k.begin(), k.end(), name) == k.end()) continue;
    }
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::string ext = f.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    Rgb im;
    bool ok = false;
    if (ext == ".png")
      ok = LoadPng(f, &im);
    else if (ext == ".jpg" || ext == ".jpeg")
      ok = LoadJpeg(f, &im);
    if (!ok || std::min(im.w, im.h) < kMinSourceSide || LooksGray(im)) continue;
    s->images.push_back(std::move(im));
    s->files.push_back(f.string());
  }
}

Sources FindSources(const Options& o) {
  Sources s;
  if (o.procedural) {
    s.desc = "procedural (--procedural)";
    return s;
  }
  if (!o.sources.empty()) {
    LoadDir(o.sources, false, &s);
    if (s.images.empty())
      s.desc = "procedural (no colour photographs in " + o.sources.string() + ")";
  } else {
    for (const auto& d : DefaultSourceDirs()) {
      LoadDir(d, true, &s);
      if (!s.images.empty()) break;
    }
    if (s.images.empty())
      s.desc = "procedural (no python3-skimage data folder found; apt: python3-skimage)";
  }
  if (!s.images.empty()) {
    std::string dir = fs::path(s.files[0]).parent_path().string();
    s.desc = std::to_string(s.images.size()) + " photographs from " + dir + " (";
    for (size_t k = 0; k < s.files.size(); ++k)
      s.desc += (k ? ", " : "") + fs::path(s.files[k]).filename().string();
    s.desc += ")";
  }
  return s;
}

// ---- Procedural content -----------------------------------------------------------------------

// Smooth gradients, value noise over three octaves, a few shaded shapes and fine grain. Flat
// synthetic images compress to a few kB; the texture and grain (+-16 before the crop is shrunk)
// are set so that the JPEGs come out about as large as those made from the photographs (about
// 31 kB against 33 kB at the default 400x350, quality 75-95).
Rgb Procedural(Rng& r, int w, int h) {
  Rgb im;
  im.w = w;
  im.h = h;
  std::vector<float> f(static_cast<size_t>(w) * h * 3);
  double corner[4][3];
  for (auto& c : corner)
    for (double& v : c) v = r.Uniform(20, 235);
  for (int y = 0; y < h; ++y) {
    const double fy = static_cast<double>(y) / (h - 1);
    for (int x = 0; x < w; ++x) {
      const double fx = static_cast<double>(x) / (w - 1);
      for (int c = 0; c < 3; ++c)
        f[(static_cast<size_t>(y) * w + x) * 3 + c] =
            static_cast<float>((1 - fy) * ((1 - fx) * corner[0][c] + fx * corner[1][c]) +
                               fy * ((1 - fx) * corner[2][c] + fx * corner[3][c]));
    }
  }
  const int shapes = static_cast<int>(r.UniformInt(4, 10));
  for (int k = 0; k < shapes; ++k) {
    const bool ellipse = r.Uniform() < 0.5;
    const double cx = r.Uniform(0, w), cy = r.Uniform(0, h);
    const double rx = r.Uniform(0.05, 0.35) * w, ry = r.Uniform(0.05, 0.35) * h;
    double col[3], grad[3];
    for (int c = 0; c < 3; ++c) {
      col[c] = r.Uniform(10, 245);
      grad[c] = r.Uniform(-60, 60);
    }
    for (int y = std::max(0, static_cast<int>(cy - ry)); y < std::min(h, static_cast<int>(cy + ry));
         ++y)
      for (int x = std::max(0, static_cast<int>(cx - rx));
           x < std::min(w, static_cast<int>(cx + rx)); ++x) {
        const double dx = (x - cx) / rx, dy = (y - cy) / ry;
        if (ellipse && dx * dx + dy * dy > 1) continue;
        for (int c = 0; c < 3; ++c)
          f[(static_cast<size_t>(y) * w + x) * 3 + c] =
              static_cast<float>(col[c] + grad[c] * (dx + dy) / 2);
      }
  }
  // Value noise: random values on a coarse grid, bilinearly interpolated.
  const int cells[3] = {48, 12, 3};
  const double amp[3] = {28, 16, 10};
  for (int o = 0; o < 3; ++o) {
    const int gw = w / cells[o] + 2, gh = h / cells[o] + 2;
    std::vector<float> g(static_cast<size_t>(gw) * gh * 3);
    for (float& v : g) v = static_cast<float>(r.Uniform(-amp[o], amp[o]));
    for (int y = 0; y < h; ++y) {
      const double gy = static_cast<double>(y) / cells[o];
      const int y0 = static_cast<int>(gy);
      const double ty = gy - y0;
      for (int x = 0; x < w; ++x) {
        const double gx = static_cast<double>(x) / cells[o];
        const int x0 = static_cast<int>(gx);
        const double tx = gx - x0;
        for (int c = 0; c < 3; ++c) {
          auto at = [&](int xx, int yy) { return g[(static_cast<size_t>(yy) * gw + xx) * 3 + c]; };
          const double v = (1 - ty) * ((1 - tx) * at(x0, y0) + tx * at(x0 + 1, y0)) +
                           ty * ((1 - tx) * at(x0, y0 + 1) + tx * at(x0 + 1, y0 + 1));
          f[(static_cast<size_t>(y) * w + x) * 3 + c] += static_cast<float>(v);
        }
      }
    }
  }
  im.px.resize(f.size());
  for (size_t k = 0; k < f.size(); ++k) {
    const double v = f[k] + r.Uniform(-16, 16);
    im.px[k] = static_cast<uint8_t>(std::clamp(std::lround(v), 0l, 255l));
  }
  return im;
}

// ---- Resize -----------------------------------------------------------------------------------

// Source taps of one output coordinate.
struct Taps {
  int first = 0;
  std::vector<float> w;
};

// Output o of n covers [x0 + o*s, x0 + (o+1)*s) of the source, s = len / n. Shrinking: the box
// average over that interval (an area filter, so a 2000-px photo shrunk to 400 does not alias);
// enlarging: linear interpolation at its centre. Not a timed path, so plain and obvious.
std::vector<Taps> MakeTaps(int x0, int len, int n) {
  std::vector<Taps> taps(static_cast<size_t>(n));
  const double s = static_cast<double>(len) / n;
  for (int o = 0; o < n; ++o) {
    Taps& t = taps[static_cast<size_t>(o)];
    if (len == 1) {
      t.first = x0;
      t.w = {1.0f};
    } else if (s >= 1) {
      const double a = x0 + o * s, b = std::min<double>(a + s, x0 + len);
      t.first = static_cast<int>(std::floor(a));
      for (int k = t.first; k < b; ++k)
        t.w.push_back(
            static_cast<float>((std::min<double>(b, k + 1) - std::max<double>(a, k)) / s));
    } else {
      const double c = std::clamp(x0 + (o + 0.5) * s - 0.5, static_cast<double>(x0),
                                  static_cast<double>(x0 + len - 1));
      t.first = std::min(static_cast<int>(c), x0 + len - 2);
      const double frac = c - t.first;
      t.w = {static_cast<float>(1 - frac), static_cast<float>(frac)};
    }
  }
  return taps;
}

// Crop (cx, cy, cw, ch) of src scaled to w x h, as floats.
std::vector<float> Resize(const Rgb& src, int cx, int cy, int cw, int ch, int w, int h) {
  const auto tx = MakeTaps(cx, cw, w), ty = MakeTaps(cy, ch, h);
  std::vector<float> rows(static_cast<size_t>(ch) * w * 3);  // horizontal pass, rows cy..cy+ch
  for (int y = 0; y < ch; ++y) {
    const uint8_t* in = &src.px[static_cast<size_t>(cy + y) * src.w * 3];
    float* o = &rows[static_cast<size_t>(y) * w * 3];
    for (int x = 0; x < w; ++x) {
      const Taps& t = tx[static_cast<size_t>(x)];
      float acc[3] = {0, 0, 0};
      for (size_t k = 0; k < t.w.size(); ++k)
        for (int c = 0; c < 3; ++c) acc[c] += t.w[k] * in[(t.first + k) * 3 + c];
      for (int c = 0; c < 3; ++c) o[x * 3 + c] = acc[c];
    }
  }
  std::vector<float> out(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    const Taps& t = ty[static_cast<size_t>(y)];
    float* o = &out[static_cast<size_t>(y) * w * 3];
    for (size_t k = 0; k < t.w.size(); ++k) {
      const float* in = &rows[static_cast<size_t>(t.first - cy + static_cast<int>(k)) * w * 3];
      for (int x = 0; x < w * 3; ++x) o[x] += t.w[k] * in[x];
    }
  }
  return out;
}

// ---- One image --------------------------------------------------------------------------------

struct Plan {
  int source = -1;
  int w = 0, h = 0, quality = 0;
  int cx = 0, cy = 0, cw = 0, ch = 0;
  bool flip = false;
  double gain[3] = {1, 1, 1}, offset[3] = {0, 0, 0};
};

// The draws, in this order, from image i's stream: source, target width, target height, quality,
// crop area share, crop aspect, crop x, crop y, flip, gain r g b, offset r g b. CIFAR-10 draws the
// same (its size is fixed at 32x32, its quality unused) so both formats crop alike.
Plan PlanImage(const Options& o, Rng& r, int nsources, int src_w, int src_h, bool cifar) {
  const PipelineRanges& q = o.ranges;
  Plan p;
  const int64_t s = r.UniformInt(0, std::max(0, nsources - 1));
  p.source = nsources > 0 ? static_cast<int>(s) : -1;
  const double wj = r.Uniform(1 - q.size_jitter, 1 + q.size_jitter);
  const double hj = r.Uniform(1 - q.size_jitter, 1 + q.size_jitter);
  p.w = cifar ? 32 : std::max(8, static_cast<int>(std::lround(o.mean_width * wj)));
  p.h = cifar ? 32 : std::max(8, static_cast<int>(std::lround(o.mean_height * hj)));
  p.quality = static_cast<int>(r.UniformInt(o.quality_min, o.quality_max));
  if (cifar) p.quality = 0;
  const double area = r.Uniform(q.area_min, q.area_max) * src_w * src_h;
  const double aspect = static_cast<double>(p.w) / p.h *
                        std::exp(r.Uniform(-std::log(q.aspect_jitter), std::log(q.aspect_jitter)));
  p.cw = std::clamp(static_cast<int>(std::lround(std::sqrt(area * aspect))), 1, src_w);
  p.ch = std::clamp(static_cast<int>(std::lround(std::sqrt(area / aspect))), 1, src_h);
  p.cx = static_cast<int>(r.UniformInt(0, src_w - p.cw));
  p.cy = static_cast<int>(r.UniformInt(0, src_h - p.ch));
  p.flip = r.Uniform() < q.flip_p;
  for (double& g : p.gain) g = r.Uniform(q.gain_min, q.gain_max);
  for (double& b : p.offset) b = r.Uniform(-q.offset_abs, q.offset_abs);
  return p;
}

// The size of the procedural "photograph" an image is cropped from: like a small camera frame.
constexpr int kProcW = 640, kProcH = 480;

// Image i's pixels (interleaved RGB, plan.w x plan.h) and its plan.
std::vector<uint8_t> MakePixels(const Options& o, const Sources& s, int64_t i, bool cifar,
                                Plan* plan) {
  Rng r(ImageSeed(o.seed, static_cast<uint64_t>(i)));
  const int n = static_cast<int>(s.images.size());
  // The source's size is needed for the crop, but the source is drawn first: peek with a copy.
  Rng peek = r;
  const int si = n > 0 ? static_cast<int>(peek.UniformInt(0, n - 1)) : -1;
  Rgb proc;
  const Rgb* src = nullptr;
  if (si >= 0) {
    src = &s.images[static_cast<size_t>(si)];
  } else {
    uint64_t k = ImageSeed(o.seed, static_cast<uint64_t>(i)) ^ 0x70726F6365647572ull;  // "procedur"
    Rng pr(SplitMix64(k));
    proc = Procedural(pr, kProcW, kProcH);
    src = &proc;
  }
  *plan = PlanImage(o, r, n, src->w, src->h, cifar);
  const Plan& p = *plan;
  std::vector<float> f = Resize(*src, p.cx, p.cy, p.cw, p.ch, p.w, p.h);
  std::vector<uint8_t> px(f.size());
  for (int y = 0; y < p.h; ++y)
    for (int x = 0; x < p.w; ++x) {
      const int sx = p.flip ? p.w - 1 - x : x;
      for (int c = 0; c < 3; ++c) {
        const double v = f[(static_cast<size_t>(y) * p.w + sx) * 3 + c] * p.gain[c] + p.offset[c];
        px[(static_cast<size_t>(y) * p.w + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(std::lround(v), 0l, 255l));
      }
    }
  return px;
}

std::vector<uint8_t> EncodeJpeg(void* tj, const std::vector<uint8_t>& px, int w, int h, int q) {
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj, px.data(), w, 0, h, TJPF_RGB, &buf, &size, TJSAMP_420, q, 0) != 0) {
    tjFree(buf);
    throw Error(std::string("TurboJPEG: ") + tjGetErrorStr2(tj));
  }
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  return out;
}

// ---- Running over images -------------------------------------------------------------------

// fn(i, tj) for i in [first, last) on `threads` workers, each with its own TurboJPEG handle;
// progress is reported from the calling thread. The first exception stops the rest and is
// rethrown here.
void ParallelFor(int64_t first, int64_t last, int threads, int64_t done_before, int64_t total,
                 const std::function<void(int64_t, int64_t)>& progress,
                 const std::function<void(int64_t, void*)>& fn) {
  std::atomic<int64_t> next{first}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr err;
  std::mutex mu;
  auto work = [&] {
    try {
      TjHandle tj = MakeTj(true);
      for (int64_t i; !stop && (i = next++) < last;) {
        fn(i, tj.get());
        ++done;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!err) err = std::current_exception();
      stop = true;
    }
  };
  const int64_t n = last - first;
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  std::vector<std::thread> pool;
  for (int t = 0; t < nt; ++t) pool.emplace_back(work);
  // The calling thread only reports, so the callback never runs on a worker.
  while (progress && done < n && !stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    progress(done_before + done, total);
  }
  for (auto& t : pool) t.join();
  if (err) std::rethrow_exception(err);
  if (progress) progress(done_before + n, total);
}

int Digits(int64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

std::string Padded(const char* prefix, int64_t v, int width, const char* suffix) {
  std::string s = std::to_string(v);
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), '0');
  return prefix + s + suffix;
}

const char* FormatName(Format f) { return f == Format::kCifar10 ? "cifar10" : "imagefolder"; }

}  // namespace

// ---- Public -----------------------------------------------------------------------------------

std::vector<fs::path> DefaultSourceDirs() {
  std::vector<fs::path> dirs;
  for (const char* root : {"/usr/lib", "/usr/local/lib"}) {
    std::vector<fs::path> pys;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.path().filename().string().rfind("python3", 0) == 0) pys.push_back(e.path());
    // python3 (Debian's shared dist-packages) first, then python3.N in order.
    std::sort(pys.begin(), pys.end());
    for (const auto& p : pys)
      for (const char* sub : {"dist-packages", "site-packages"})
        if (fs::is_directory(p / sub / "skimage" / "data", ec))
          dirs.push_back(p / sub / "skimage" / "data");
  }
  return dirs;
}

const std::vector<std::string>& KnownPhotoNames() {
  static const std::vector<std::string> names = {
      "astronaut.png",        "chelsea.png", "coffee.png", "motorcycle_left.png",
      "motorcycle_right.png", "rocket.jpg",  "ihc.png"};
  return names;
}

const std::vector<std::string>& Cifar10BatchNames() {
  static const std::vector<std::string> names = {"data_batch_1.bin", "data_batch_2.bin",
                                                 "data_batch_3.bin", "data_batch_4.bin",
                                                 "data_batch_5.bin", "test_batch.bin"};
  return names;
}

std::vector<int64_t> Cifar10BatchSizes(int64_t n) {
  const int64_t test = n / 6, train = n - test;
  std::vector<int64_t> sizes;
  for (int64_t b = 0; b < 5; ++b) sizes.push_back(train / 5 + (b < train % 5 ? 1 : 0));
  sizes.push_back(test);
  return sizes;
}

std::string ImageFileName(int64_t i, int64_t n) {
  return Padded("img_", i, std::max(6, Digits(std::max<int64_t>(0, n - 1))), ".jpg");
}

std::string ClassFolderName(int c, int classes) {
  return Padded("class_", c, std::max(3, Digits(std::max(0, classes - 1))), "");
}

void Validate(const Options& o) {
  auto bad = [](const std::string& s) { throw UsageError(s); };
  if (o.out.empty()) bad("--out: required");
  if (o.images < 1) bad("--images " + std::to_string(o.images) + ": want at least 1");
  if (o.classes < 1) bad("--classes " + std::to_string(o.classes) + ": want at least 1");
  if (o.format == Format::kCifar10 && o.classes != 10)
    bad("--classes " + std::to_string(o.classes) + ": the cifar10 format has 10 classes");
  if (o.classes > o.images)
    bad("--classes " + std::to_string(o.classes) + ": more classes than --images " +
        std::to_string(o.images) + " (every class needs an image)");
  if (o.mean_width < 16 || o.mean_width > 16384)
    bad("--mean-width " + std::to_string(o.mean_width) + ": want 16..16384");
  if (o.mean_height < 16 || o.mean_height > 16384)
    bad("--mean-height " + std::to_string(o.mean_height) + ": want 16..16384");
  if (o.quality_min < 1 || o.quality_min > 100)
    bad("--quality-min " + std::to_string(o.quality_min) + ": want 1..100");
  if (o.quality_max < 1 || o.quality_max > 100)
    bad("--quality-max " + std::to_string(o.quality_max) + ": want 1..100");
  if (o.quality_min > o.quality_max)
    bad("--quality-min " + std::to_string(o.quality_min) + ": above --quality-max " +
        std::to_string(o.quality_max));
  if (o.threads < 0) bad("--threads " + std::to_string(o.threads) + ": want 0 (all) or more");
  std::error_code ec;
  if (!o.sources.empty() && !fs::is_directory(o.sources, ec))
    bad("--sources " + o.sources.string() + ": not a folder");
}

Result Generate(const Options& opt) {
  Validate(opt);
  const bool cifar = opt.format == Format::kCifar10;
  // "data/" and "data" are the same dataset: its name is the last component.
  fs::path out = opt.out.lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec))
      throw UsageError("--out " + out.string() + ": exists and is not a folder");
    if (!fs::is_empty(out, ec) && !opt.force)
      throw UsageError("--out " + out.string() + ": exists and is not empty (--force replaces it)");
  }
  const std::string pid = std::to_string(::getpid());
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  const fs::path tmp = parent / ("." + out.filename().string() + ".partial-" + pid);
  const fs::path old = parent / ("." + out.filename().string() + ".old-" + pid);

  const Sources src = FindSources(opt);
  Result res;
  res.out = out;
  res.source_files = src.files;
  res.source_desc = src.desc;
  res.images.resize(static_cast<size_t>(opt.images));
  const int threads = opt.threads > 0
                          ? opt.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    if (!cifar) {
      for (int c = 0; c < opt.classes; ++c)
        fs::create_directory(tmp / ClassFolderName(c, opt.classes));
      ParallelFor(0, opt.images, threads, 0, opt.images, opt.progress, [&](int64_t i, void* tj) {
        Plan p;
        std::vector<uint8_t> px = MakePixels(opt, src, i, false, &p);
        std::vector<uint8_t> jpg = EncodeJpeg(tj, px, p.w, p.h, p.quality);
        ImageInfo& info = res.images[static_cast<size_t>(i)];
        info.label = static_cast<int>(i % opt.classes);
        info.path = ClassFolderName(info.label, opt.classes) + "/" + ImageFileName(i, opt.images);
        info.width = p.w;
        info.height = p.h;
        info.quality = p.quality;
        info.source = p.source;
        info.flipped = p.flip;
        info.bytes = jpg.size();
        WriteFile(tmp / info.path, jpg.data(), jpg.size());
      });
    } else {
      // One batch file at a time, its records made in parallel into memory.
      constexpr size_t kRecord = 1 + 3 * 32 * 32;
      const auto sizes = Cifar10BatchSizes(opt.images);
      int64_t first = 0;
      for (size_t b = 0; b < sizes.size(); ++b) {
        const std::string name = Cifar10BatchNames()[b];
        std::vector<uint8_t> buf(static_cast<size_t>(sizes[b]) * kRecord);
        ParallelFor(first, first + sizes[b], threads, first, opt.images, opt.progress,
                    [&](int64_t i, void*) {
                      Plan p;
                      std::vector<uint8_t> px = MakePixels(opt, src, i, true, &p);
                      const int64_t rec = i - first;
                      uint8_t* r = &buf[static_cast<size_t>(rec) * kRecord];
                      r[0] = static_cast<uint8_t>(i % 10);
                      for (int c = 0; c < 3; ++c)  // planar: 1024 R, 1024 G, 1024 B
                        for (int k = 0; k < 1024; ++k) r[1 + c * 1024 + k] = px[k * 3 + c];
                      ImageInfo& info = res.images[static_cast<size_t>(i)];
                      info.path = name;
                      info.record = rec;
                      info.label = r[0];
                      info.width = info.height = 32;
                      info.source = p.source;
                      info.flipped = p.flip;
                      info.bytes = kRecord;
                    });
        WriteFile(tmp / name, buf.data(), buf.size());
        first += sizes[b];
      }
      // As the real batches.meta.txt: one label name a line, label k on line k + 1.
      const std::string meta =
          "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n";
      WriteFile(tmp / "batches.meta.txt", meta.data(), meta.size());
    }

    for (const auto& im : res.images) {
      res.total_bytes += im.bytes;
      res.mean_width += im.width;
      res.mean_height += im.height;
    }
    const double n = static_cast<double>(opt.images);
    res.mean_bytes = static_cast<double>(res.total_bytes) / n;
    res.mean_width /= n;
    res.mean_height /= n;

    // What made this dataset, so a cached copy can be checked against a request later. A file
    // at the top level: ImageFolder readers look at the class folders only.
    std::ostringstream info;
    info << "dlbench-dataset 1\nformat=" << FormatName(opt.format) << "\nimages=" << opt.images
         << "\nclasses=" << opt.classes << "\nseed=" << opt.seed
         << "\nmean_width=" << opt.mean_width << "\nmean_height=" << opt.mean_height
         << "\nquality_min=" << opt.quality_min << "\nquality_max=" << opt.quality_max
         << "\nsources=" << src.desc << "\ntotal_bytes=" << res.total_bytes << "\n";
    const std::string text = info.str();
    WriteFile(tmp / "dlbench-dataset.txt", text.data(), text.size());

    // Into place: a replaced dataset is moved aside first and removed after, so at every moment
    // `out` is either the old dataset or the new one, whole.
    if (fs::exists(out, ec) && !fs::is_empty(out, ec)) {
      fs::remove_all(old, ec);
      fs::rename(out, old);
      fs::rename(tmp, out);
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, out);  // over an empty folder, as rename(2) allows
    }
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error(e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return res;
}

}  // namespace dlb::dataset
