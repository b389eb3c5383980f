#include <cuda_runtime.h>
#include <library_types.h>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "kernels/common/dtype.h"
#include "kernels/common/rng.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/handles.h"
#include "kernels/data/augment.h"
#include "kernels/data/augment_kernel.h"
#include "kernels/data/dataset.h"
#include "kernels/data/jpeg.h"
#include "kernels/data/nvjpeg_check.h"
#include "kernels/data/nvjpeg_loader.h"
#include "kernels/data/pipeline.h"

namespace dlb::data {

namespace {

constexpr size_t kArenaAlign = 256;
size_t AlignUp(size_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

}  // namespace

// ---- NvJpegLoader ------------------------------------------------------------------------------

struct NvJpegLoader::Impl {
  // One image of a batch as the readers leave it.
  struct FileItem {
    int64_t pos = 0, sample = 0;
    uint64_t seed = 0;
    std::vector<uint8_t> bytes;
    int w = 0, h = 0;
    bool ok = false;  // read and parsed; false after a failed decode too
    bool hw = false;  // the hardware decoder takes it (nvjpegDecodeBatchedSupported)
    std::string why;  // why it is skipped
    Augment aug;
    size_t offset = 0;  // of its decoded pixels in the arena
  };
  // The files of one batch. Two of them: the readers fill one while the GPU decodes the other.
  struct FileBatch {
    int64_t seq = -1;  // the batch they are for; -1: none
    std::vector<FileItem> items;
    int claimed = 0, done = 0;  // under mu
  };

  Impl(const LoaderShape& s, const RunConfig& c);
  ~Impl() { Stop(); }

  void Start();
  void Stop();
  void Post(int64_t seq);
  FileBatch& Await(int64_t seq);
  void ReaderLoop(int r);
  void Fetch(FileItem* it, nvjpegJpegStream_t js);
  void RunBatch();
  void DecodeBatched(FileBatch& fb);
  bool DecodeOne(FileItem* it);
  nvjpegImage_t ImageOf(const FileItem& it) const;
  void Skip(const FileItem& it);
  void ResetStats();
  Verdict Verify();
  std::vector<float> SampleOnHost(int64_t k) const;

  LoaderShape shape;
  RunConfig cfg;
  std::shared_ptr<const ImageFolder> folder;
  StreamOrder order;
  size_t sample_bytes = 0;
  Affine affine;

  // Device side. Members are destroyed in reverse: states and streams before their handle.
  cuda::Stream stream;
  cuda::Event ev_start, ev_decoded, ev_done;
  NvJpegHandle handle;
  bool hardware = false;
  unsigned hw_engines = 0, hw_cores = 0;
  std::string backend_why;  // why the hardware decoder is not used
  std::string version;
  NvJpegState state_batched;  // nvjpegDecodeBatched
  NvJpegState state_single;   // nvjpegDecode: what the hardware decoder does not take
  std::vector<NvJpegStream> reader_streams;
  cuda::DeviceBuffer<uint8_t> arena;  // decoded images of one batch
  cuda::DeviceBuffer<uint8_t> output;
  cuda::PinnedBuffer<SampleDesc> descs_host;
  cuda::DeviceBuffer<SampleDesc> descs_dev;

  // Per-batch scratch, reserved once: Run() allocates nothing in the steady state.
  std::vector<const unsigned char*> batched_data;
  std::vector<size_t> batched_lengths;
  std::vector<nvjpegImage_t> batched_images;
  std::vector<FileItem*> batched_items;

  // Readers.
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::vector<std::thread> readers;
  bool stop = false;
  std::exception_ptr error;  // what a reader threw that no file explains (Await rethrows it)
  FileBatch* job = nullptr;  // the batch the readers are filling
  FileBatch files[2];

  // Delivery.
  int64_t delivered = 0;  // batches delivered since construction
  DeviceBatch current;
  const FileBatch* current_files = nullptr;
  std::vector<int> current_items;  // index in current_files->items of each delivered sample
  std::set<int64_t> logged;

  // Statistics since the last ResetStats: readers add to the atomics.
  std::atomic<int64_t> read_ns{0}, parse_ns{0}, bytes{0};
  double decode_s = 0, augment_s = 0;
  int64_t images = 0, hw_images = 0, skipped = 0;
  std::vector<double> latency_s;
  int64_t stats_t0_ns = 0;
};

NvJpegLoader::Impl::Impl(const LoaderShape& s, const RunConfig& c)
    : shape(s),
      cfg(c),
      folder(CachedImageFolder(s.dir)),
      order(int64_t(folder->files.size()), c.seed),
      sample_bytes(SampleBytes(s.side, c.dtype)),
      affine(AffineOf(kImageNetStats)),
      stream(cuda::MakeStream()),
      ev_start(cuda::MakeEvent()),
      ev_decoded(cuda::MakeEvent()),
      ev_done(cuda::MakeEvent()) {
  // The hardware decoder where the GPU has one. nvjpegCreateEx succeeds with the hardware backend
  // only where the driver and GPU support it (ARCH_MISMATCH elsewhere); a GPU without engines
  // would run the hybrid kernels under the hardware name, so the engine count decides too.
  nvjpegHandle_t h = nullptr;
  const nvjpegStatus_t hw =
      nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &h);
  if (hw == NVJPEG_STATUS_SUCCESS) {
    handle.reset(h);
    const nvjpegStatus_t info = nvjpegGetHardwareDecoderInfo(h, &hw_engines, &hw_cores);
    hardware = info == NVJPEG_STATUS_SUCCESS && hw_engines > 0;
    if (!hardware) {
      backend_why = info == NVJPEG_STATUS_SUCCESS
                        ? "no hardware JPEG engine"
                        : std::string("nvjpegGetHardwareDecoderInfo: ") + NvJpegStatusName(info);
      handle.reset();
      hw_engines = hw_cores = 0;
    }
  } else {
    backend_why = std::string("hardware backend: ") + NvJpegStatusName(hw);
  }
  if (!hardware) {
    h = nullptr;
    DLB_CHECK(
        nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &h));
    handle.reset(h);
  }
  version = NvJpegVersion();
  state_batched = MakeState(handle.get());
  state_single = MakeState(handle.get());
  for (int r = 0; r < shape.workers; ++r) reader_streams.push_back(MakeJpegStream(handle.get()));

  output = cuda::DeviceBuffer<uint8_t>(sample_bytes * size_t(shape.batch));
  descs_host = cuda::PinnedBuffer<SampleDesc>(size_t(shape.batch));
  descs_dev = cuda::DeviceBuffer<SampleDesc>(size_t(shape.batch));
  batched_data.reserve(size_t(shape.batch));
  batched_lengths.reserve(size_t(shape.batch));
  batched_images.reserve(size_t(shape.batch));
  batched_items.reserve(size_t(shape.batch));
  current_items.reserve(size_t(shape.batch));
  current.labels.reserve(size_t(shape.batch));
  current.samples.reserve(size_t(shape.batch));
  current.positions.reserve(size_t(shape.batch));
  for (FileBatch& fb : files) fb.items.resize(size_t(shape.batch));
  ResetStats();
}

void NvJpegLoader::Impl::Start() {
  if (!readers.empty()) return;
  {
    std::lock_guard<std::mutex> lk(mu);
    stop = false;
    error = nullptr;
  }
  for (int r = 0; r < shape.workers; ++r) readers.emplace_back([this, r] { ReaderLoop(r); });
  Post(delivered);
}

void NvJpegLoader::Impl::Stop() {
  {
    std::lock_guard<std::mutex> lk(mu);
    stop = true;
  }
  work_cv.notify_all();
  done_cv.notify_all();
  for (std::thread& t : readers) t.join();
  readers.clear();
  std::lock_guard<std::mutex> lk(mu);
  job = nullptr;
  for (FileBatch& fb : files) fb.seq = -1;  // fetched again, identical, after the next Start()
  current_files = nullptr;
}

// Hands batch `seq` to the readers. Its slot's previous batch (seq - 2) was decoded and
// synchronised by an earlier Run(), so its buffers are free.
void NvJpegLoader::Impl::Post(int64_t seq) {
  FileBatch& fb = files[size_t(seq % 2)];
  for (int k = 0; k < shape.batch; ++k) {
    FileItem& it = fb.items[size_t(k)];
    it.pos = seq * shape.batch + k;
    it.sample = order.SampleAt(it.pos);
    it.seed = order.SeedAt(it.pos);
  }
  std::lock_guard<std::mutex> lk(mu);
  fb.seq = seq;
  fb.claimed = fb.done = 0;
  job = &fb;
  work_cv.notify_all();
}

NvJpegLoader::Impl::FileBatch& NvJpegLoader::Impl::Await(int64_t seq) {
  if (readers.empty()) throw Error("NvJpegLoader::Run() before Start()");
  FileBatch& fb = files[size_t(seq % 2)];
  if (fb.seq != seq) Post(seq);
  std::unique_lock<std::mutex> lk(mu);
  done_cv.wait(lk, [&] { return stop || fb.done == shape.batch; });
  if (error) std::rethrow_exception(error);
  if (fb.done != shape.batch) throw Error("the loader was stopped");
  return fb;
}

void NvJpegLoader::Impl::ReaderLoop(int r) {
  nvjpegJpegStream_t js = reader_streams[size_t(r)].get();
  while (true) {
    FileBatch* fb = nullptr;
    int k = 0;
    {
      std::unique_lock<std::mutex> lk(mu);
      work_cv.wait(lk, [&] { return stop || (job && job->claimed < shape.batch); });
      if (stop) return;
      fb = job;
      k = fb->claimed++;
    }
    try {
      Fetch(&fb->items[size_t(k)], js);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu);
      if (!error) error = std::current_exception();
      stop = true;
      done_cv.notify_all();
      work_cv.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lk(mu);
    if (++fb->done == shape.batch) {
      job = nullptr;
      done_cv.notify_all();
    }
  }
}

// Reads one file and parses what the decode needs on the host: the size (for the arena and the
// crop draws) and whether the hardware decoder takes it.
void NvJpegLoader::Impl::Fetch(FileItem* it, nvjpegJpegStream_t js) {
  it->ok = it->hw = false;
  it->why.clear();
  const int64_t t0 = NowNs();
  try {
    ReadFile(folder->files[size_t(it->sample)].path, &it->bytes);
  } catch (const Error& e) {
    it->why = e.what();
    read_ns += NowNs() - t0;
    return;
  }
  const int64_t t1 = NowNs();
  read_ns += t1 - t0;
  bytes += int64_t(it->bytes.size());
  const unsigned char* data = it->bytes.data();
  const size_t size = it->bytes.size();
  int comps = 0;
  nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
  int ws[NVJPEG_MAX_COMPONENT] = {}, hs[NVJPEG_MAX_COMPONENT] = {};
  nvjpegStatus_t st = NVJPEG_STATUS_SUCCESS;
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
    it->why = "not a JPEG (no start-of-image marker)";
  } else if (!HasEndOfImage(data, size)) {
    // nvJPEG (its hardware engine in particular) decodes a cut-off scan without an error, leaving
    // the rest of the image grey: skip the files the CPU pipeline skips (kernels/data/jpeg.h).
    it->why = "truncated (no end-of-image marker after the last scan)";
  } else if ((st = nvjpegGetImageInfo(handle.get(), data, size, &comps, &css, ws, hs)) !=
             NVJPEG_STATUS_SUCCESS) {
    it->why = std::string("not a readable JPEG header (nvjpegGetImageInfo: ") +
              NvJpegStatusName(st) + ")";
  } else if (ws[0] <= 0 || hs[0] <= 0) {
    it->why = "JPEG header gives an empty image";
  } else {
    it->w = ws[0];
    it->h = hs[0];
    it->aug = SampleAugment(it->w, it->h, it->seed);
    it->ok = true;
    // A header the stream parser rejects, or a "no", sends the file to nvjpegDecode, which
    // decides whether it can be decoded at all.
    int unsupported = 1;
    if (hardware &&
        nvjpegJpegStreamParseHeader(handle.get(), data, size, js) == NVJPEG_STATUS_SUCCESS &&
        nvjpegDecodeBatchedSupported(handle.get(), js, &unsupported) == NVJPEG_STATUS_SUCCESS)
      it->hw = unsupported == 0;
  }
  parse_ns += NowNs() - t1;
}

nvjpegImage_t NvJpegLoader::Impl::ImageOf(const FileItem& it) const {
  nvjpegImage_t img{};
  img.channel[0] = arena.get() + it.offset;
  img.pitch[0] = size_t(it.w) * 3;
  return img;
}

bool NvJpegLoader::Impl::DecodeOne(FileItem* it) {
  nvjpegImage_t img = ImageOf(*it);
  const nvjpegStatus_t st = nvjpegDecode(handle.get(), state_single.get(), it->bytes.data(),
                                         it->bytes.size(), NVJPEG_OUTPUT_RGBI, &img, stream.get());
  if (st == NVJPEG_STATUS_SUCCESS) return true;
  if (!IsFileError(st)) DLB_CHECK(st);
  it->ok = false;
  it->why = std::string("nvjpegDecode: ") + NvJpegStatusName(st);
  return false;
}

// The batched decode of every file the batched path takes: with the hardware backend those the
// engine supports, else all (the GPU-hybrid backend decodes Huffman on the GPU in large batches).
void NvJpegLoader::Impl::DecodeBatched(FileBatch& fb) {
  batched_data.clear();
  batched_lengths.clear();
  batched_images.clear();
  batched_items.clear();
  for (FileItem& it : fb.items) {
    if (!it.ok || (hardware && !it.hw)) continue;
    batched_data.push_back(it.bytes.data());
    batched_lengths.push_back(it.bytes.size());
    batched_images.push_back(ImageOf(it));
    batched_items.push_back(&it);
  }
  const int n = int(batched_items.size());
  if (n == 0) return;
  // Initialised per batch: the count changes with the files the engine turns down and skips,
  // and it resets a state a failed batch left behind. One CPU thread: this one.
  DLB_CHECK(
      nvjpegDecodeBatchedInitialize(handle.get(), state_batched.get(), n, 1, NVJPEG_OUTPUT_RGBI));
  const nvjpegStatus_t st =
      nvjpegDecodeBatched(handle.get(), state_batched.get(), batched_data.data(),
                          batched_lengths.data(), batched_images.data(), stream.get());
  if (st == NVJPEG_STATUS_SUCCESS) {
    if (hardware) hw_images += n;
    return;
  }
  if (!IsFileError(st)) DLB_CHECK(st);
  // One bad file fails the whole call: decode each alone, which finds it and keeps the others.
  for (FileItem* it : batched_items) DecodeOne(it);
}

void NvJpegLoader::Impl::Skip(const FileItem& it) {
  ++skipped;
  if (logged.insert(it.sample).second)
    std::fprintf(stderr, "dataload: skipped %s: %s\n",
                 folder->files[size_t(it.sample)].path.c_str(), it.why.c_str());
}

void NvJpegLoader::Impl::RunBatch() {
  const int64_t seq = delivered;
  FileBatch& fb = Await(seq);
  Post(seq + 1);  // the readers fetch the next batch while the GPU decodes this one

  // Arena layout. It grows only when a batch needs more than every batch before it, with room
  // to spare: the warm-up takes it to its steady size. The stream is idle (the last Run()
  // synchronised), so the old buffer can go.
  size_t need = 0;
  for (FileItem& it : fb.items) {
    if (!it.ok) continue;
    it.offset = need;
    need += AlignUp(size_t(it.w) * size_t(it.h) * 3);
  }
  if (need > arena.size()) {
    arena = cuda::DeviceBuffer<uint8_t>();
    arena = cuda::DeviceBuffer<uint8_t>(AlignUp(need + need / 4));
  }

  DLB_CHECK(cudaEventRecord(ev_start.get(), stream.get()));
  DecodeBatched(fb);
  if (hardware)
    for (FileItem& it : fb.items)
      if (it.ok && !it.hw) DecodeOne(&it);
  DLB_CHECK(cudaEventRecord(ev_decoded.get(), stream.get()));

  current.labels.clear();
  current.samples.clear();
  current.positions.clear();
  current_items.clear();
  int n = 0;
  for (size_t k = 0; k < fb.items.size(); ++k) {
    const FileItem& it = fb.items[k];
    if (!it.ok) {
      Skip(it);
      continue;
    }
    descs_host.get()[n] = {it.offset,     it.w,          it.h,          it.aug.crop.x,
                           it.aug.crop.y, it.aug.crop.w, it.aug.crop.h, it.aug.flip ? 1 : 0};
    current.labels.push_back(folder->files[size_t(it.sample)].label);
    current.samples.push_back(it.sample);
    current.positions.push_back(it.pos);
    current_items.push_back(int(k));
    ++n;
  }
  if (n > 0) {
    DLB_CHECK(cudaMemcpyAsync(descs_dev.get(), descs_host.get(), sizeof(SampleDesc) * size_t(n),
                              cudaMemcpyHostToDevice, stream.get()));
    const bool bf16 = cfg.dtype == DType::kBF16, nhwc = cfg.layout == Layout::kNHWC;
    LaunchCropResizeNormalize(arena.get(), descs_dev.get(), n, shape.side, affine, bf16, nhwc,
                              output.get(), stream.get());
  }
  DLB_CHECK(cudaEventRecord(ev_done.get(), stream.get()));
  DLB_CHECK(cudaStreamSynchronize(stream.get()));
  float decode_ms = 0, augment_ms = 0;
  DLB_CHECK(cudaEventElapsedTime(&decode_ms, ev_start.get(), ev_decoded.get()));
  DLB_CHECK(cudaEventElapsedTime(&augment_ms, ev_decoded.get(), ev_done.get()));
  decode_s += decode_ms * 1e-3;
  augment_s += augment_ms * 1e-3;
  images += n;

  current.data = output.get();
  current.size = n;
  current.seq = seq;
  current_files = &fb;
  ++delivered;
}

void NvJpegLoader::Impl::ResetStats() {
  read_ns = 0;
  parse_ns = 0;
  bytes = 0;
  decode_s = augment_s = 0;
  images = hw_images = skipped = 0;
  latency_s.clear();
  stats_t0_ns = NowNs();
}

std::vector<float> NvJpegLoader::Impl::SampleOnHost(int64_t k) const {
  if (k < 0 || k >= current.size)
    throw Error("sample " + std::to_string(k) + " is not in the batch");
  std::vector<uint8_t> raw(sample_bytes);
  DLB_CHECK(cudaMemcpy(raw.data(), output.get() + size_t(k) * sample_bytes, sample_bytes,
                       cudaMemcpyDeviceToHost));
  const size_t n = size_t(3) * shape.side * shape.side;
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = cfg.dtype == DType::kBF16
                 ? Bf16ToFloat(reinterpret_cast<const uint16_t*>(raw.data())[i])
                 : reinterpret_cast<const float*>(raw.data())[i];
  return out;
}

// Two checks on the first, middle and last samples of one batch:
//  1. the kernel: its output against CropResize + Normalize on the host, applied to the pixels
//     nvJPEG decoded (copied back from the arena). The kernel repeats the host arithmetic, so the
//     error is 0 in practice; one 8-bit step (plus bf16 rounding) is allowed, as for the CPU
//     pipeline against its float64 reference. A wrong crop, flip or layout is off by tens of steps.
//  2. the decoder: the output, mapped back to 8-bit values, against TurboJPEG's decode of the same
//     file at 1/1 with the same crop and flip (the CPU pipeline's code), by PSNR. nvJPEG's IDCT
//     and chroma upsampling are not libjpeg's (accurate integer IDCT, "fancy" triangular
//     upsampling): they differ by a level or two on most pixels, more along sharp colour edges of
//     4:2:0 images, which is 35-45 dB on photographs. kMinPsnrDb = 30 dB (RMS error of 8 levels)
//     still rejects every geometric or colour mistake, which falls below 20 dB (a one-pixel shift
//     of a photograph's crop is about 25 dB, swapped channels or a missed flip lower). The
//     threshold is to be confirmed on the GPU host; the detail line reports the measured PSNR.
Verdict NvJpegLoader::Impl::Verify() {
  Verdict v;
  v.metric = "psnr_db";
  v.tolerance = kMinPsnrDb;
  RunBatch();
  const int64_t first = current.seq * shape.batch;
  int64_t prev = first - 1;
  for (int64_t k = 0; k < current.size; ++k) {
    const int64_t p = current.positions[size_t(k)];
    if (p <= prev || p >= first + shape.batch || order.SampleAt(p) != current.samples[size_t(k)] ||
        folder->files[size_t(current.samples[size_t(k)])].label != current.labels[size_t(k)]) {
      v.detail = "sample " + std::to_string(k) + " of batch " + std::to_string(current.seq) +
                 " is not the stream's (position " + std::to_string(p) + ")";
      return v;
    }
    prev = p;
  }
  if (current.size == 0) {
    v.detail = "the first batch has no decodable image";
    return v;
  }
  const int side = shape.side;
  const size_t plane = size_t(side) * side, n = 3 * plane;
  const bool nhwc = cfg.layout == Layout::kNHWC;
  // The kernel blends in float, the host's CropResize in fixed point: a value on a rounding
  // boundary may land on either 8-bit neighbour. In bf16 both sides are rounded.
  const double kernel_tol = PixelTolerance(cfg.dtype, 2);
  std::vector<int64_t> picks = {0, current.size / 2, current.size - 1};
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  std::vector<uint8_t> decoded, crop(n), turbo_rgb, turbo_crop(n);
  std::vector<float> want(n);
  TurboDecoder turbo;
  double worst_psnr = std::numeric_limits<double>::infinity(), kernel_err = 0;
  for (int64_t k : picks) {
    const FileItem& it = current_files->items[size_t(current_items[size_t(k)])];
    const std::vector<float> got = SampleOnHost(k);
    // 1. The kernel against the host code on nvJPEG's own pixels.
    decoded.resize(size_t(it.w) * it.h * 3);
    DLB_CHECK(cudaMemcpy(decoded.data(), arena.get() + it.offset, decoded.size(),
                         cudaMemcpyDeviceToHost));
    CropResize(decoded.data(), it.w, it.h, it.w, it.h, it.aug, side, crop.data());
    if (cfg.dtype == DType::kBF16) {
      std::vector<uint16_t> b(n);
      Normalize(crop.data(), side, kImageNetStats, cfg.dtype, cfg.layout, b.data());
      for (size_t i = 0; i < n; ++i) want[i] = Bf16ToFloat(b[i]);
    } else {
      Normalize(crop.data(), side, kImageNetStats, cfg.dtype, cfg.layout, want.data());
    }
    for (size_t i = 0; i < n; ++i) {
      const double e = std::abs(double(got[i]) - double(want[i]));
      if (!(e <= kernel_err)) kernel_err = std::isnan(e) ? INFINITY : e;
    }
    // 2. The decoder against TurboJPEG, on 8-bit values.
    int tw = 0, th = 0;
    turbo.Decode(it.bytes.data(), it.bytes.size(), {1, 1}, &turbo_rgb, &tw, &th);
    if (tw != it.w || th != it.h) {
      v.detail = folder->files[size_t(it.sample)].path + ": nvJPEG decodes " +
                 std::to_string(it.w) + "x" + std::to_string(it.h) + ", TurboJPEG " +
                 std::to_string(tw) + "x" + std::to_string(th);
      return v;
    }
    CropResize(turbo_rgb.data(), tw, th, tw, th, it.aug, side, turbo_crop.data());
    double se = 0;
    for (size_t px = 0; px < plane; ++px) {
      for (int c = 0; c < 3; ++c) {
        const float g = got[nhwc ? px * 3 + c : c * plane + px];
        const double level = (double(g) - affine.bias[c]) / affine.scale[c];
        const double d = level - turbo_crop[px * 3 + c];
        se += d * d;
      }
    }
    const double mse = se / double(n);
    const double psnr = mse > 0 ? 10.0 * std::log10(255.0 * 255.0 / mse) : 99.0;
    worst_psnr = std::min(worst_psnr, std::isnan(psnr) ? -INFINITY : psnr);
  }
  v.error = worst_psnr;
  v.checked = picks.size() * n;
  v.of = size_t(current.size) * n;
  const bool psnr_ok = worst_psnr >= kMinPsnrDb, kernel_ok = kernel_err <= kernel_tol;
  v.ok = psnr_ok && kernel_ok;
  v.disposition = v.ok ? Disposition::kVerified : Disposition::kNotVerified;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "PSNR %.1f dB %s %.0f dB (worst of %zu samples) vs TurboJPEG 1/1 + host crop; "
                "kernel max |error| %.3g %s %.3g vs host CropResize + Normalize of nvJPEG's pixels",
                worst_psnr, psnr_ok ? ">=" : "<", kMinPsnrDb, picks.size(), kernel_err,
                kernel_ok ? "<=" : ">", kernel_tol);
  v.detail = buf;
  return v;
}

// ---- The public face -------------------------------------------------------------------------

Support NvJpegLoader::Supports(const LoaderShape& s, const RunConfig& cfg) {
  if (cfg.dtype != DType::kF32 && cfg.dtype != DType::kBF16)
    return Support::No("batches are f32 or bf16, not " + std::string(Name(cfg.dtype)));
  if (s.batch <= 0 || s.workers <= 0) return Support::No("batch size and workers must be positive");
  if (s.batch > 65535) return Support::No("a batch holds at most 65535 images (one grid row each)");
  if (s.side <= 0) return Support::No("the output side must be positive");
  return Support::Yes();
}

NvJpegLoader::NvJpegLoader(const LoaderShape& s, const RunConfig& cfg) {
  RequireSupported(Supports(s, cfg));
  impl_ = std::make_unique<Impl>(s, cfg);
}

NvJpegLoader::~NvJpegLoader() = default;

void NvJpegLoader::Start() { impl_->Start(); }
void NvJpegLoader::Stop() { impl_->Stop(); }

void NvJpegLoader::WarmUp() {
  // nvJPEG's internal buffers, the hardware engines and the arena reach their steady state over
  // the first batches.
  for (int i = 0; i < 3; ++i) impl_->RunBatch();
  impl_->ResetStats();
}

void NvJpegLoader::Run() {
  const int64_t t0 = NowNs();
  impl_->RunBatch();
  impl_->latency_s.push_back((NowNs() - t0) * 1e-9);
}

Verdict NvJpegLoader::Verify() { return impl_->Verify(); }

Cost NvJpegLoader::cost() const {
  Cost c;
  c.items = impl_->shape.batch;
  c.bytes = impl_->folder->MeanBytes() * impl_->shape.batch;
  return c;
}

std::string NvJpegLoader::label() const {
  const Impl& m = *impl_;
  std::string l = "nvJPEG " + m.version;
  if (m.hardware)
    l += " hardware decoder, " + std::to_string(m.hw_engines) + " engine" +
         (m.hw_engines == 1 ? "" : "s");
  else
    l += " GPU hybrid (" + m.backend_why + ")";
  l += ", batched decode at full size, RandomResizedCrop " + std::to_string(m.shape.side) +
       " + flip on the GPU, " + std::to_string(m.shape.workers) + " reader" +
       (m.shape.workers == 1 ? "" : "s");
  return l;
}

std::vector<std::pair<std::string, double>> NvJpegLoader::Counters() const {
  const Impl& m = *impl_;
  std::vector<std::pair<std::string, double>> c;
  const double wall = std::max(1e-9, (NowNs() - m.stats_t0_ns) * 1e-9);
  const double decoded = double(std::max<int64_t>(1, m.images));
  const double fetched = double(std::max<int64_t>(1, m.images + m.skipped));
  c.emplace_back("jpeg_bytes_per_s", double(m.bytes.load()) / wall);
  c.emplace_back("read_us_per_item", m.read_ns.load() * 1e-3 / fetched);
  c.emplace_back("parse_us_per_item", m.parse_ns.load() * 1e-3 / fetched);
  c.emplace_back("decode_us_per_item", m.decode_s * 1e6 / decoded);
  c.emplace_back("augment_us_per_item", m.augment_s * 1e6 / decoded);
  c.emplace_back("hw_fraction", double(m.hw_images) / decoded);
  c.emplace_back("hw_engines", double(m.hw_engines));
  c.emplace_back("skipped_images", double(m.skipped));
  c.emplace_back("workers", double(m.shape.workers));
  c.emplace_back("latency_p50_ms", Percentile(m.latency_s, 50) * 1e3);
  c.emplace_back("latency_p99_ms", Percentile(m.latency_s, 99) * 1e3);
  c.emplace_back("latency_max_ms", Percentile(m.latency_s, 100) * 1e3);
  return c;
}

StreamRef NvJpegLoader::stream() const { return impl_->stream.get(); }
const NvJpegLoader::DeviceBatch& NvJpegLoader::batch() const { return impl_->current; }
std::vector<float> NvJpegLoader::SampleOnHost(int64_t k) const { return impl_->SampleOnHost(k); }
bool NvJpegLoader::hardware() const { return impl_->hardware; }
int NvJpegLoader::hw_engines() const { return int(impl_->hw_engines); }
int64_t NvJpegLoader::skipped() const { return impl_->skipped; }
StreamOrder& NvJpegLoader::order() { return impl_->order; }

}  // namespace dlb::data
