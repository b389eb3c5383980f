#include "kernels/cuda/kernel_trace.h"

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"

namespace dlb {

inline void Check(CUptiResult status, const char* expr, const char* file, int line) {
  if (status != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(status, &text);
    Fail(file, line, expr, std::string("CUPTI: ") + (text ? text : "unknown error"));
  }
}

namespace cuda {

namespace {

// CUPTI recommends activity buffers of 1 to 10 MB.
constexpr size_t kBufferBytes = size_t(4) << 20;

enum class Kind : uint8_t { kKernel, kMemcpy, kMemset };

// One record, kept while the span is open; names are resolved once per distinct name.
struct Record {
  const char* name;  // CUPTI's kernel name (shared by every record of the kernel); else nullptr
  Kind kind;
  uint8_t copy_kind;
  uint64_t start, end;
};

struct State {
  std::mutex mu;
  bool open = false;   // a span is being recorded
  uint64_t begin = 0;  // CUPTI timestamp at the span's start
  std::vector<Record> records;
  size_t dropped = 0;
  std::unordered_map<const char*, std::string> short_names;
};

State& G() {
  static State* s = new State;  // CUPTI may call back during exit: never destroyed
  return *s;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                              size_t valid) {
  State& g = G();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    CUpti_Activity* rec = nullptr;
    while (g.open && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      Record r{nullptr, Kind::kKernel, 0, 0, 0};
      switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
          r = {k->name, Kind::kKernel, 0, k->start, k->end};
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
          r = {nullptr, Kind::kMemcpy, m->copyKind, m->start, m->end};
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
          r = {nullptr, Kind::kMemset, 0, m->start, m->end};
          break;
        }
        default:
          continue;
      }
      if (r.start >= g.begin && r.end >= r.start) g.records.push_back(r);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
      g.dropped += dropped;
  }
  std::free(buffer);
}

const char* CopyName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    default:
      return "memcpy array";
  }
}

class CuptiRecorder : public trace::Recorder {
 public:
  CuptiRecorder() {
    DLB_CHECK(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
    DLB_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    DLB_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    DLB_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  }

  trace::Source source() const override { return trace::Source::kCupti; }

  // Everything before the span is done and delivered (then dropped) before it opens.
  void Start() override {
    DLB_CHECK(cudaDeviceSynchronize());
    DLB_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    uint64_t now = 0;
    DLB_CHECK(cuptiGetTimestamp(&now));
    State& g = G();
    std::lock_guard<std::mutex> lock(g.mu);
    g.records.clear();
    g.dropped = 0;
    g.begin = now;
    g.open = true;
  }

  std::vector<trace::Activity> Stop() override {
    DLB_CHECK(cudaDeviceSynchronize());
    uint64_t end = 0;
    DLB_CHECK(cuptiGetTimestamp(&end));
    DLB_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    State& g = G();
    std::lock_guard<std::mutex> lock(g.mu);
    g.open = false;
    DLB_REQUIRE(g.dropped == 0, "CUPTI dropped " + std::to_string(g.dropped) +
                                    " activity records: the kernel table would be incomplete");
    // Each record's exposed time over the span's records (one device: the recorder's).
    g.records.erase(std::remove_if(g.records.begin(), g.records.end(),
                                   [end](const Record& r) { return r.end > end; }),
                    g.records.end());
    std::vector<trace::Interval> spans;
    spans.reserve(g.records.size());
    for (const Record& r : g.records) spans.push_back({r.start, r.end});
    const std::vector<uint64_t> exposed = trace::ExposedTimes(spans);
    trace::Tally tally;
    for (size_t i = 0; i < g.records.size(); ++i) {
      const Record& r = g.records[i];
      const double s = double(r.end - r.start) * 1e-9, e = double(exposed[i]) * 1e-9;
      if (r.kind == Kind::kMemcpy) {
        tally.Add(CopyName(r.copy_kind), trace::kKindMemcpy, s, 1, e);
      } else if (r.kind == Kind::kMemset) {
        tally.Add("memset", trace::kKindMemset, s, 1, e);
      } else {
        auto it = g.short_names.find(r.name);
        if (it == g.short_names.end())
          it = g.short_names.emplace(r.name, trace::ShortenKernelName(r.name ? r.name : "?")).first;
        tally.Add(it->second, trace::kKindKernel, s, 1, e);
      }
    }
    g.records.clear();
    g.records.shrink_to_fit();
    return tally.Activities();
  }
};

}  // namespace

std::shared_ptr<trace::Recorder> MakeCuptiRecorder() { return std::make_shared<CuptiRecorder>(); }

}  // namespace cuda
}  // namespace dlb
