#include "kernels/data/pipeline.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "kernels/common/memory.h"
#include "kernels/common/rng.h"

namespace dlb::data {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Distinct streams for the epoch permutations and the per-position draws.
constexpr uint64_t kPermSalt = 0x7065726d75746521ull;  // "permute!"
constexpr uint64_t kDrawSalt = 0x6175676d656e7421ull;  // "augment!"

}  // namespace

const char* StageName(int stage) {
  static const char* names[kStages] = {"read", "decode", "augment", "collate"};
  return stage >= 0 && stage < kStages ? names[stage] : "?";
}

void Scratch::Begin() { mark_ns = NowNs(); }

void Scratch::Mark(Stage s) {
  const int64_t now = NowNs();
  stage_ns[s] += now - mark_ns;
  mark_ns = now;
}

// ---- Sources ------------------------------------------------------------------------------------

JpegFolderSource::JpegFolderSource(std::shared_ptr<const ImageFolder> folder, int side)
    : folder_(std::move(folder)), side_(side) {}

void JpegFolderSource::Produce(int64_t i, uint64_t seed, DType dt, Layout layout, void* dst,
                               Scratch* s) const {
  ReadFile(folder_->files[size_t(i)].path, &s->file);
  s->bytes_read += int64_t(s->file.size());
  s->Mark(kRead);
  if (!s->decoder) s->decoder = std::make_unique<TurboDecoder>();
  const JpegHeader hd = s->decoder->Header(s->file.data(), s->file.size());
  const Augment a = SampleAugment(hd.width, hd.height, seed);
  const Scale sc = ChooseScale(a.crop, side_, TurboScales());
  const int sw = Scaled(hd.width, sc), sh = Scaled(hd.height, sc);
  // Only the rows and columns the crop's bilinear taps read are decoded.
  const Window want = TapWindow(a.crop, hd.width, hd.height, sw, sh, side_);
  Window got;
  int dw = 0, dh = 0;
  s->decoder->DecodeWindow(s->file.data(), s->file.size(), sc, want, &s->rgb, &got, &dw, &dh);
  if (dw != sw || dh != sh)
    throw Error("libjpeg decoded " + std::to_string(dw) + "x" + std::to_string(dh) +
                " where the scale gives " + std::to_string(sw) + "x" + std::to_string(sh));
  s->Mark(kDecode);
  // Resized and normalised row by row straight into the batch: collate has nothing left to do.
  CropResizeNormalize(s->rgb.data(), sw, sh, hd.width, hd.height, a, side_, kImageNetStats, dt,
                      layout, dst, got);
  s->Mark(kAugment);
}

CifarSource::CifarSource(std::shared_ptr<const Cifar10> data) : data_(std::move(data)) {}

void CifarSource::Produce(int64_t i, uint64_t seed, DType dt, Layout layout, void* dst,
                          Scratch* s) const {
  const uint8_t* planes = data_->pixels.data() + size_t(i) * kCifarPixels;
  s->Mark(kRead);
  s->crop.resize(kCifarPixels);
  CifarCropFlip(planes, SampleCifarAugment(seed), s->crop.data());
  s->Mark(kAugment);
  Normalize(s->crop.data(), kCifarSide, kCifarStats, dt, layout, dst);
  s->Mark(kCollate);
}

HostAllocator PlainAllocator() {
  return {[](size_t n) {
            void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
            if (!p) throw Error("out of memory: a batch buffer of " + std::to_string(n) + " bytes");
            return p;
          },
          [](void* p) { std::free(p); }};
}

// ---- StreamOrder --------------------------------------------------------------------------------

StreamOrder::StreamOrder(int64_t size, uint64_t seed) : size_(size), seed_(seed) {
  if (size_ <= 0) throw DataError("the dataset has no samples");
}

const std::vector<int64_t>& StreamOrder::Permutation(int64_t epoch) {
  auto it = perms_.find(epoch);
  if (it != perms_.end()) return it->second;
  while (perms_.size() >= 3) perms_.erase(perms_.begin());
  std::vector<int64_t> p(static_cast<size_t>(size_));
  std::iota(p.begin(), p.end(), 0);
  Rng rng(StreamSeed(seed_ ^ kPermSalt, uint64_t(epoch)));
  for (int64_t i = int64_t(p.size()) - 1; i > 0; --i)  // Fisher-Yates
    std::swap(p[size_t(i)], p[size_t(rng.UniformInt(0, i))]);
  return perms_.emplace(epoch, std::move(p)).first->second;
}

int64_t StreamOrder::SampleAt(int64_t p) { return Permutation(p / size_)[size_t(p % size_)]; }

uint64_t StreamOrder::SeedAt(int64_t p) const { return StreamSeed(seed_ ^ kDrawSalt, uint64_t(p)); }

// ---- Pipeline -----------------------------------------------------------------------------------

Pipeline::Pipeline(std::shared_ptr<const SampleSource> source, PipelineOptions o,
                   HostAllocator alloc)
    : src_(std::move(source)), o_(o), alloc_(std::move(alloc)), order_(src_->size(), o.seed) {
  if (o_.batch <= 0) throw Error("batch size must be positive, not " + std::to_string(o_.batch));
  if (o_.workers <= 0) throw Error("workers must be positive, not " + std::to_string(o_.workers));
  if (o_.depth < 2)
    throw Error("the ring needs at least 2 batches, not " + std::to_string(o_.depth));
  if (o_.dtype != DType::kF32 && o_.dtype != DType::kBF16)
    throw Unsupported("batches are f32 or bf16, not " + std::string(Name(o_.dtype)));
  sample_bytes_ = SampleBytes(src_->side(), o_.dtype);
  RequireHostBytes(double(sample_bytes_) * o_.batch * o_.depth);
  ring_.resize(size_t(o_.depth));
  for (Slot& s : ring_) {
    s.data = alloc_.alloc(sample_bytes_ * size_t(o_.batch));
    s.ok.resize(size_t(o_.batch));
    s.labels.resize(size_t(o_.batch));
    s.samples.resize(size_t(o_.batch));
  }
  ResetRing();
  ResetStats();
}

Pipeline::~Pipeline() {
  Stop();
  for (Slot& s : ring_)
    if (s.data) alloc_.free(s.data);
}

void Pipeline::ResetRing() {
  for (int64_t b = delivered_; b < delivered_ + o_.depth; ++b) {
    Slot& s = ring_[size_t(b % o_.depth)];
    s.seq = b;
    s.remaining = o_.batch;
    s.done = false;
  }
  next_pos_ = delivered_ * o_.batch;
  holding_ = false;
}

void Pipeline::Start() {
  if (!workers_.empty()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = false;
    error_ = nullptr;
  }
  for (int w = 0; w < o_.workers; ++w) workers_.emplace_back([this] { Work(); });
}

void Pipeline::Stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  ready_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  std::lock_guard<std::mutex> lk(mu_);
  ResetRing();
}

int64_t Pipeline::SampleAt(int64_t p) {
  std::lock_guard<std::mutex> lk(order_mu_);
  return order_.SampleAt(p);
}

uint64_t Pipeline::SeedAt(int64_t p) const { return order_.SeedAt(p); }

void Pipeline::Skip(int64_t sample, const std::string& why) {
  skipped_.fetch_add(1);
  if (!o_.log_skips) return;
  std::lock_guard<std::mutex> lk(skip_mu_);
  if (logged_.insert(sample).second)
    std::fprintf(stderr, "dataload: skipped %s: %s\n", src_->name(sample).c_str(), why.c_str());
}

void Pipeline::Work() {
  Scratch scratch;
  while (true) {
    int64_t pos;
    Slot* slot;
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (stop_) return;
      pos = next_pos_++;
      const int64_t b = pos / o_.batch;
      slot = &ring_[size_t(b % o_.depth)];
      work_cv_.wait(lk, [&] { return stop_ || slot->seq == b; });
      if (stop_) return;
    }
    const size_t k = size_t(pos % o_.batch);
    const int64_t cpu0 = ThreadCpuNs();
    int64_t sample = -1;
    bool ok = false;
    try {
      sample = SampleAt(pos);
      scratch.Begin();
      src_->Produce(sample, SeedAt(pos), o_.dtype, o_.layout,
                    static_cast<uint8_t*>(slot->data) + k * sample_bytes_, &scratch);
      ok = true;
    } catch (const Error& e) {
      // Decode failures and unreadable files: the sample is skipped, the run goes on.
      Skip(sample, e.what());
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
      stop_ = true;
      ready_cv_.notify_all();
      work_cv_.notify_all();
      return;
    }
    cpu_ns_.fetch_add(ThreadCpuNs() - cpu0);
    for (int s = 0; s < kStages; ++s) {
      stage_ns_[s].fetch_add(scratch.stage_ns[s]);
      scratch.stage_ns[s] = 0;
    }
    bytes_.fetch_add(scratch.bytes_read);
    scratch.bytes_read = 0;
    if (ok) images_.fetch_add(1);
    std::lock_guard<std::mutex> lk(mu_);
    slot->ok[k] = ok;
    slot->labels[k] = ok ? src_->label(sample) : -1;
    slot->samples[k] = sample;
    if (--slot->remaining == 0) {
      slot->done = true;
      ready_cv_.notify_all();
    }
  }
}

const Batch& Pipeline::Next() {
  std::unique_lock<std::mutex> lk(mu_);
  if (workers_.empty() && !error_) throw Error("Pipeline::Next() before Start()");
  if (holding_) {
    Slot& old = ring_[size_t((delivered_ - 1) % o_.depth)];
    old.seq += o_.depth;
    old.remaining = o_.batch;
    old.done = false;
    holding_ = false;
    work_cv_.notify_all();
  }
  Slot& s = ring_[size_t(delivered_ % o_.depth)];
  ready_cv_.wait(lk, [&] { return s.done || error_ || stop_; });
  if (error_) std::rethrow_exception(error_);
  if (!s.done) throw Error("the pipeline was stopped");
  // Compact: skipped samples leave no hole.
  current_.labels.clear();
  current_.samples.clear();
  current_.positions.clear();
  uint8_t* base = static_cast<uint8_t*>(s.data);
  int64_t filled = 0;
  for (int64_t k = 0; k < o_.batch; ++k) {
    if (!s.ok[size_t(k)]) continue;
    if (filled != k)
      std::memmove(base + size_t(filled) * sample_bytes_, base + size_t(k) * sample_bytes_,
                   sample_bytes_);
    current_.labels.push_back(s.labels[size_t(k)]);
    current_.samples.push_back(s.samples[size_t(k)]);
    current_.positions.push_back(s.seq * o_.batch + k);
    ++filled;
  }
  current_.data = base;
  current_.size = filled;
  current_.seq = s.seq;
  ++delivered_;
  holding_ = true;
  batches_.fetch_add(1);
  return current_;
}

void Pipeline::WaitFull() {
  std::unique_lock<std::mutex> lk(mu_);
  if (workers_.empty()) return;
  ready_cv_.wait(lk, [&] {
    if (error_ || stop_) return true;
    for (const Slot& s : ring_)
      if (!s.done) return false;  // the batch the consumer holds is done too
    return true;
  });
  if (error_) std::rethrow_exception(error_);
}

PipelineStats Pipeline::Stats() const {
  PipelineStats st;
  st.images = images_.load();
  st.skipped = skipped_.load();
  st.batches = batches_.load();
  st.jpeg_bytes = bytes_.load();
  for (int s = 0; s < kStages; ++s) st.stage_s[s] = stage_ns_[s].load() * 1e-9;
  st.worker_cpu_s = cpu_ns_.load() * 1e-9;
  st.wall_s = (NowNs() - stats_t0_ns_.load()) * 1e-9;
  return st;
}

void Pipeline::ResetStats() {
  images_ = 0;
  skipped_ = 0;
  batches_ = 0;
  bytes_ = 0;
  cpu_ns_ = 0;
  for (auto& s : stage_ns_) s = 0;
  stats_t0_ns_ = NowNs();
}

}  // namespace dlb::data
