#include "kernels/data/loader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "kernels/common/dtype.h"
#include "kernels/reference/image.h"

namespace dlb::data {

namespace {

template <class T, class Load>
std::shared_ptr<const T> Cached(const std::string& dir, Load load) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const T>> cache;
  std::lock_guard<std::mutex> lk(mu);
  auto it = cache.find(dir);
  if (it != cache.end()) return it->second;
  auto v = std::make_shared<const T>(load(dir));
  cache.emplace(dir, v);
  return v;
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

std::shared_ptr<const ImageFolder> CachedImageFolder(const std::string& dir) {
  return Cached<ImageFolder>(dir, [](const std::string& d) { return ScanImageFolder(d); });
}

std::shared_ptr<const Cifar10> CachedCifar10(const std::string& dir) {
  return Cached<Cifar10>(dir, [](const std::string& d) { return LoadCifar10(d, true); });
}

double Percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const double r = std::clamp(p, 0.0, 100.0) / 100.0 * double(xs.size() - 1);
  const size_t lo = size_t(std::floor(r)), hi = std::min(lo + 1, xs.size() - 1);
  return xs[lo] + (r - double(lo)) * (xs[hi] - xs[lo]);
}

Support CpuLoader::Supports(const LoaderShape& s, const RunConfig& cfg) {
  if (cfg.dtype != DType::kF32 && cfg.dtype != DType::kBF16)
    return Support::No("batches are f32 or bf16, not " + std::string(Name(cfg.dtype)));
  if (s.batch <= 0 || s.workers <= 0) return Support::No("batch size and workers must be positive");
  return Support::Yes();
}

CpuLoader::CpuLoader(std::shared_ptr<const SampleSource> src, const LoaderShape& s,
                     const RunConfig& cfg, std::string what)
    : shape_(s), cfg_(cfg), what_(std::move(what)) {
  RequireSupported(Supports(s, cfg));
  PipelineOptions o;
  o.batch = s.batch;
  o.workers = s.workers;
  o.depth = s.depth;
  o.dtype = cfg.dtype;
  o.layout = cfg.layout;
  o.seed = cfg.seed;
  const size_t batch_bytes = SampleBytes(src->side(), cfg.dtype) * size_t(s.batch);
  HostAllocator alloc = PlainAllocator();
  if (s.to_device) {
    sink_ = MakeDeviceSink(s.copy ? batch_bytes : 0, &sink_why_);
    if (sink_) alloc = sink_->PinnedAllocator();
  }
  pipe_ = std::make_unique<Pipeline>(std::move(src), o, std::move(alloc));
}

void CpuLoader::WarmUp() {
  // Fill the ring (every worker has run), then drain it: a full ring would hand its batches out
  // at no cost and inflate a short measurement. From here on each batch is made while timed.
  pipe_->WaitFull();
  for (int i = 0; i <= shape_.depth; ++i) pipe_->Next();
  pipe_->ResetStats();
  latency_s_.clear();
  delivered_ = 0;
}

void CpuLoader::Run() {
  const auto t0 = std::chrono::steady_clock::now();
  const Batch& b = pipe_->Next();
  if (sink_ && shape_.copy) sink_->Copy(b.data, size_t(b.size) * pipe_->sample_bytes());
  latency_s_.push_back(Seconds(t0, std::chrono::steady_clock::now()));
  delivered_ += b.size;
}

Verdict CpuLoader::Verify() {
  Verdict v;
  v.metric = "max_abs";
  // The op resizes in float, the reference in double; only the op's output is rounded to bf16.
  v.tolerance = PixelTolerance(cfg_.dtype, 1);
  const Batch& b = pipe_->Next();
  const int64_t first = b.seq * shape_.batch;
  // Order and labels: the batch holds the stream's positions in order, minus skipped ones.
  int64_t prev = first - 1;
  for (int64_t k = 0; k < b.size; ++k) {
    const int64_t p = b.positions[size_t(k)];
    if (p <= prev || p >= first + shape_.batch || pipe_->SampleAt(p) != b.samples[size_t(k)] ||
        pipe_->source().label(b.samples[size_t(k)]) != b.labels[size_t(k)]) {
      v.ok = false;
      v.disposition = Disposition::kNotVerified;
      v.detail = "sample " + std::to_string(k) + " of batch " + std::to_string(b.seq) +
                 " is not the stream's (position " + std::to_string(p) + ")";
      return v;
    }
    prev = p;
  }
  if (b.size == 0) {
    v.ok = false;
    v.detail = "the first batch has no decodable image";
    return v;
  }
  // Pixels: the first, middle and last samples against the float64 reference.
  const size_t n = pipe_->sample_bytes() / (cfg_.dtype == DType::kBF16 ? 2 : 4);
  const int side = pipe_->source().side();
  std::vector<int64_t> picks = {0, b.size / 2, b.size - 1};
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  const uint8_t* base = static_cast<const uint8_t*>(b.data);
  std::vector<uint8_t> device;
  if (sink_ && shape_.copy) {
    sink_->Copy(b.data, size_t(b.size) * pipe_->sample_bytes());
    device = sink_->Readback(size_t(b.size) * pipe_->sample_bytes());
    if (!std::equal(device.begin(), device.end(), base)) {
      v.ok = false;
      v.detail = "the batch on the GPU differs from the host's";
      return v;
    }
  }
  double worst = 0;
  for (int64_t k : picks) {
    const std::vector<double> ref =
        Reference(b.samples[size_t(k)], pipe_->SeedAt(b.positions[size_t(k)]));
    const uint8_t* sample = base + size_t(k) * pipe_->sample_bytes();
    for (size_t i = 0; i < n; ++i) {
      // ref is CHW; the sample is CHW (nchw) or HWC (nhwc).
      size_t r = i;
      if (cfg_.layout == Layout::kNHWC) {
        const size_t c = i % 3, px = i / 3;
        r = c * size_t(side) * side + px;
      }
      const float got = cfg_.dtype == DType::kBF16
                            ? Bf16ToFloat(reinterpret_cast<const uint16_t*>(sample)[i])
                            : reinterpret_cast<const float*>(sample)[i];
      const double e = std::abs(double(got) - ref[r]);
      if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
    }
  }
  v.error = worst;
  v.checked = picks.size() * n;
  v.of = size_t(b.size) * n;
  v.ok = worst <= v.tolerance;
  v.disposition = v.ok ? Disposition::kVerified : Disposition::kNotVerified;
  char buf[200];
  std::snprintf(buf, sizeof buf, "max |error| %.3g <= %.3g at %zu samples vs %s%s", worst,
                v.tolerance, picks.size(), ReferenceName(),
                sink_ && shape_.copy ? ", GPU copy identical" : "");
  v.detail = buf;
  if (!v.ok) v.detail.replace(v.detail.find("<="), 2, ">");
  return v;
}

Cost CpuLoader::cost() const {
  Cost c;
  c.items = shape_.batch;
  c.bytes = mean_bytes_ * shape_.batch;
  return c;
}

std::string CpuLoader::label() const {
  std::string l = what_ + ", " + std::to_string(shape_.workers) + " worker" +
                  (shape_.workers == 1 ? "" : "s") + ", ring of " + std::to_string(shape_.depth);
  if (shape_.to_device)
    l += !sink_        ? ", stays on the host (" + sink_why_ + ")"
         : shape_.copy ? ", pinned, copied to " + sink_->name()
                       : ", pinned";
  return l;
}

std::vector<std::pair<std::string, double>> CpuLoader::Counters() const {
  const PipelineStats st = pipe_->Stats();
  std::vector<std::pair<std::string, double>> c;
  const double wall = st.wall_s > 0 ? st.wall_s : 1;
  if (st.jpeg_bytes > 0) c.emplace_back("jpeg_bytes_per_s", double(st.jpeg_bytes) / wall);
  const double done = double(std::max<int64_t>(1, st.images + st.skipped));
  for (int s = 0; s < kStages; ++s)
    c.emplace_back(std::string(StageName(s)) + "_us_per_item", st.stage_s[s] / done * 1e6);
  c.emplace_back("worker_util", st.worker_cpu_s / (wall * shape_.workers));
  c.emplace_back("skipped_images", double(st.skipped));
  c.emplace_back("workers", double(shape_.workers));
  c.emplace_back("latency_p50_ms", Percentile(latency_s_, 50) * 1e3);
  c.emplace_back("latency_p99_ms", Percentile(latency_s_, 99) * 1e3);
  c.emplace_back("latency_max_ms", Percentile(latency_s_, 100) * 1e3);
  return c;
}

// ---- The two sources' ops -------------------------------------------------------------------

TurboJpegLoader::TurboJpegLoader(const LoaderShape& s, const RunConfig& cfg)
    : CpuLoader(std::make_shared<JpegFolderSource>(CachedImageFolder(s.dir), s.side), s, cfg,
                "libjpeg-turbo " + TurboJpegVersion() +
                    " decode of the crop's window with DCT scaling, RandomResizedCrop " +
                    std::to_string(s.side) + " + flip"),
      folder_(CachedImageFolder(s.dir)) {
  mean_bytes_ = folder_->MeanBytes();
}

std::vector<double> TurboJpegLoader::Reference(int64_t sample, uint64_t seed) const {
  std::vector<uint8_t> file;
  ReadFile(folder_->files[size_t(sample)].path, &file);
  int w = 0, h = 0;
  std::vector<uint8_t> full = ReferenceDecode(file, {1, 1}, &w, &h);
  const Augment a = SampleAugment(w, h, seed);
  const Scale sc = ChooseScale(a.crop, pipeline().source().side(), TurboScales());
  int sw = 0, sh = 0;
  std::vector<uint8_t> rgb = sc.num == sc.denom ? std::move(full) : ReferenceDecode(file, sc, &sw, &sh);
  if (sc.num == sc.denom) sw = w, sh = h;
  return ReferenceSample(rgb, sw, sh, w, h, a, pipeline().source().side(), kImageNetStats);
}

CifarLoader::CifarLoader(const LoaderShape& s, const RunConfig& cfg)
    : CpuLoader(std::make_shared<CifarSource>(CachedCifar10(s.dir)), s, cfg,
                "CIFAR-10 binary records, RandomCrop 32 pad 4 + flip"),
      data_(CachedCifar10(s.dir)) {
  mean_bytes_ = kCifarRecord;
}

std::vector<double> CifarLoader::Reference(int64_t sample, uint64_t seed) const {
  return ReferenceCifarSample(data_->pixels.data() + size_t(sample) * kCifarPixels,
                              SampleCifarAugment(seed), kCifarStats);
}

}  // namespace dlb::data
