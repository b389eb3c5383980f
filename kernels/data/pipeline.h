// The CPU input pipeline: a pool of worker threads turns samples of a source (JPEG files, or
// CIFAR-10 records) into normalised batches in a ring of `depth` host buffers, in order. One
// stream of sample positions runs through the epochs: position p is sample perm_e[p mod N] of
// epoch e = p / N, with a seeded permutation per epoch, so every sample arrives exactly once per
// epoch and every batch is full. The augmentation of position p is drawn from its own stream
// (StreamSeed(seed, p)): the batches do not depend on the number of workers or their timing.
//
// Parallelism is per sample (as DALI's CPU stage, unlike a PyTorch DataLoader worker that makes
// a whole batch): all workers fill the oldest unfinished batch first, so one batch's latency
// shrinks with more workers and the ring needs only a few buffers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/data/augment.h"
#include "kernels/data/dataset.h"
#include "kernels/data/jpeg.h"

namespace dlb::data {

// A sample's stages. augment: crop, resize and flip; for JPEG sources also the normalisation into
// the batch, fused with the resize row by row, so that their collate stays 0. collate: the
// normalisation into the batch where it is a pass of its own (CIFAR-10).
enum Stage { kRead, kDecode, kAugment, kCollate, kStages };
const char* StageName(int stage);  // "read", "decode", "augment", "collate"

// Per-worker scratch space and stage clock, reused for every sample.
struct Scratch {
  std::vector<uint8_t> file, rgb, crop;
  std::unique_ptr<TurboDecoder> decoder;  // made on first use, in the worker's thread
  int64_t stage_ns[kStages] = {};
  int64_t bytes_read = 0;
  int64_t mark_ns = 0;
  void Begin();
  void Mark(Stage s);  // adds the time since the last mark to stage s
};

// Where samples come from and how one becomes a normalised tensor.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual int64_t size() const = 0;
  virtual int label(int64_t i) const = 0;
  virtual std::string name(int64_t i) const = 0;  // for messages: the file, or "record i"
  virtual int side() const = 0;                   // output images are side x side
  // Sample i, augmented by the draws of `seed`, into dst (SampleBytes(side(), dt)). Throws
  // DecodeError (or Error, for a file that cannot be read): the pipeline skips the sample.
  virtual void Produce(int64_t i, uint64_t seed, DType dt, Layout layout, void* dst,
                       Scratch* s) const = 0;
};

// ImageFolder JPEGs: read, libjpeg-turbo decode, at the DCT scale the crop allows, of the part of
// the image the crop reads, RandomResizedCrop + flip to side x side, Normalize with ImageNet's
// statistics.
class JpegFolderSource : public SampleSource {
 public:
  JpegFolderSource(std::shared_ptr<const ImageFolder> folder, int side);
  int64_t size() const override { return int64_t(folder_->files.size()); }
  int label(int64_t i) const override { return folder_->files[size_t(i)].label; }
  std::string name(int64_t i) const override { return folder_->files[size_t(i)].path; }
  int side() const override { return side_; }
  void Produce(int64_t i, uint64_t seed, DType dt, Layout layout, void* dst,
               Scratch* s) const override;
  const ImageFolder& folder() const { return *folder_; }

 private:
  std::shared_ptr<const ImageFolder> folder_;
  int side_;
};

// CIFAR-10 records held in memory: RandomCrop(32, padding 4) + flip, Normalize with CIFAR-10's
// statistics. Nothing to decode.
class CifarSource : public SampleSource {
 public:
  explicit CifarSource(std::shared_ptr<const Cifar10> data);
  int64_t size() const override { return data_->count; }
  int label(int64_t i) const override { return data_->labels[size_t(i)]; }
  std::string name(int64_t i) const override { return "record " + std::to_string(i); }
  int side() const override { return kCifarSide; }
  void Produce(int64_t i, uint64_t seed, DType dt, Layout layout, void* dst,
               Scratch* s) const override;
  const Cifar10& data() const { return *data_; }

 private:
  std::shared_ptr<const Cifar10> data_;
};

// The stream's order: position p is sample perm_e[p mod N] of epoch e = p / N (a Fisher-Yates
// permutation seeded per epoch), and its augmentation draws come from SeedAt(p). The CPU pipeline
// and the GPU one (nvjpeg_loader.h) share it, so both deliver the same samples in the same order
// with the same crops. Not thread-safe: Pipeline locks around it.
class StreamOrder {
 public:
  StreamOrder(int64_t size, uint64_t seed);
  int64_t size() const { return size_; }
  // The source index at stream position p. Keeps the newest few epochs' permutations (positions
  // in flight span at most two).
  int64_t SampleAt(int64_t p);
  uint64_t SeedAt(int64_t p) const;

 private:
  const std::vector<int64_t>& Permutation(int64_t epoch);
  int64_t size_;
  uint64_t seed_;
  std::map<int64_t, std::vector<int64_t>> perms_;
};

// Host memory for the ring's batches: plain (aligned) by default; pinned when a GPU copies from it.
struct HostAllocator {
  std::function<void*(size_t)> alloc;
  std::function<void(void*)> free;
};
HostAllocator PlainAllocator();

struct PipelineOptions {
  int batch = 256;
  int workers = 1;
  int depth = 4;  // batches in the ring: being filled, ready, or held by the consumer
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  uint64_t seed = 42;
  bool log_skips = true;  // one stderr line per skipped file (once per file)
};

struct Batch {
  const void* data = nullptr;  // size samples of SampleBytes(side, dtype), compacted
  int64_t size = 0;            // samples delivered (a skipped one leaves the batch one short)
  int64_t seq = 0;             // batches since the start of the stream
  std::vector<int> labels;
  std::vector<int64_t> samples;    // source index of each
  std::vector<int64_t> positions;  // stream position of each
};

struct PipelineStats {
  int64_t images = 0, skipped = 0, batches = 0;
  int64_t jpeg_bytes = 0;
  double stage_s[kStages] = {};  // summed over the workers
  double worker_cpu_s = 0;       // the workers' CPU time (CLOCK_THREAD_CPUTIME_ID)
  double wall_s = 0;             // since the last ResetStats
};

class Pipeline {
 public:
  Pipeline(std::shared_ptr<const SampleSource> source, PipelineOptions o,
           HostAllocator alloc = PlainAllocator());
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Starts the workers; they fill the ring from the first batch not yet delivered.
  void Start();
  // Stops and joins the workers. Batches not yet delivered are dropped and made again after the
  // next Start(), identical (their positions and draws do not change).
  void Stop();
  bool running() const { return !workers_.empty(); }

  // The next batch, in order, once complete. The previous batch's buffer goes back to the
  // workers: a Batch stays valid only until the next call. Throws what a worker threw that was
  // not a skippable sample error.
  const Batch& Next();
  // Waits until every buffer the workers may fill is complete (the prefetch queue is full).
  void WaitFull();

  PipelineStats Stats() const;
  void ResetStats();

  // The source index at stream position p.
  int64_t SampleAt(int64_t p);
  // The augmentation seed of position p.
  uint64_t SeedAt(int64_t p) const;

  const PipelineOptions& options() const { return o_; }
  const SampleSource& source() const { return *src_; }
  size_t sample_bytes() const { return sample_bytes_; }

 private:
  struct Slot {
    int64_t seq = 0;  // the batch this buffer is for
    int remaining = 0;
    bool done = false;
    void* data = nullptr;
    std::vector<uint8_t> ok;
    std::vector<int> labels;
    std::vector<int64_t> samples;
  };
  void Work();
  void ResetRing();
  void Skip(int64_t sample, const std::string& why);

  std::shared_ptr<const SampleSource> src_;
  PipelineOptions o_;
  HostAllocator alloc_;
  size_t sample_bytes_ = 0;

  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<Slot> ring_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  int64_t next_pos_ = 0;   // the next position a worker takes
  int64_t delivered_ = 0;  // batches handed to the consumer
  bool holding_ = false;   // the consumer holds batch delivered_ - 1
  std::exception_ptr error_;
  Batch current_;

  std::mutex order_mu_;
  StreamOrder order_;

  std::mutex skip_mu_;
  std::set<int64_t> logged_;

  std::atomic<int64_t> images_{0}, skipped_{0}, batches_{0}, bytes_{0}, cpu_ns_{0};
  std::atomic<int64_t> stage_ns_[kStages] = {};
  std::atomic<int64_t> stats_t0_ns_{0};
};

// Nanoseconds of the steady clock.
int64_t NowNs();

}  // namespace dlb::data
