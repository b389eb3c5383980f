#include "kernels/cublas/gemm.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/fill.h"
#include "kernels/cublas/check.h"
#include "kernels/cuda/device.h"

namespace dlb::cublas {

void HandleDeleter::operator()(cublasHandle_t h) const noexcept {
  DLB_CHECK_NOEXCEPT(cublasDestroy(h));
}
void LtHandleDeleter::operator()(cublasLtHandle_t h) const noexcept {
  DLB_CHECK_NOEXCEPT(cublasLtDestroy(h));
}
void MatmulDescDeleter::operator()(cublasLtMatmulDesc_t d) const noexcept {
  DLB_CHECK_NOEXCEPT(cublasLtMatmulDescDestroy(d));
}
void LayoutDeleter::operator()(cublasLtMatrixLayout_t l) const noexcept {
  DLB_CHECK_NOEXCEPT(cublasLtMatrixLayoutDestroy(l));
}

namespace {

cudaDataType_t DataType(DType dt) {
  switch (dt) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;  // f32 and tf32 store f32
  }
}

cublasComputeType_t ComputeType(DType dt) {
  return dt == DType::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

const char* ComputeName(DType dt) { return dt == DType::kTF32 ? "32F_FAST_TF32" : "32F"; }

std::string Bytes(size_t bytes) {
  char buf[32];
  if (bytes >= (size_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%g MiB", bytes / 1048576.0);
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%g KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  return buf;
}

// What both ops need: a device, sizes cuBLAS's int arguments hold, tensor cores for 16-bit/tf32.
Support CommonSupport(const GemmShape& s, DType dt) {
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return Support::No("empty GEMM");
  if (s.m > INT_MAX || s.n > INT_MAX || s.k > INT_MAX)
    return Support::No("a GEMM dimension exceeds cuBLAS's int range");
  if (dt != DType::kF32) {
    int dev = 0, major = 0;
    DLB_CHECK(cudaGetDevice(&dev));
    DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 8 && dt != DType::kF16)
      return Support::No(std::string(Name(dt)) + " needs compute capability 8.0+");
  }
  return Support::Yes();
}

// Row-major C = op(A) op(B) as column-major C^T = op(B)^T op(A)^T (cuBLAS m = n, n = m): cuBLAS's
// first operand is our B, read transposed when tb, its second is our A.
struct ColumnMajor {
  cublasOperation_t op_first, op_second;
  int64_t ld_first, ld_second, ld_c;
};
ColumnMajor MapRowMajor(const GemmShape& s) {
  return {s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, s.ta ? CUBLAS_OP_T : CUBLAS_OP_N, s.tb ? s.k : s.n,
          s.ta ? s.m : s.k, s.n};
}

// cublasLtMatmulTile_t ids up to 35 as "RxC"; later ids (Hopper's 320x128 is 248) by number, which
// cublasLt.h's enum resolves.
std::string TileName(uint32_t id) {
  static const char* kNames[] = {"undefined", "8x8",     "8x16",    "16x8",   "8x32",   "16x16",
                                 "32x8",      "8x64",    "16x32",   "32x16",  "64x8",   "32x32",
                                 "32x64",     "64x32",   "32x128",  "64x64",  "128x32", "64x128",
                                 "128x64",    "64x256",  "128x128", "256x64", "64x512", "128x256",
                                 "256x128",   "512x64",  "64x96",   "96x64",  "96x128", "128x160",
                                 "160x128",   "192x128", "128x192", "128x96", "32x256", "256x32"};
  if (id < sizeof kNames / sizeof kNames[0]) return kNames[id];
  return "id " + std::to_string(id);
}

template <class T>
T AlgoAttr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  size_t written = 0;
  DLB_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written));
  return value;
}

std::string AlgoName(const cublasLtMatmulAlgo_t& algo) {
  auto id = AlgoAttr<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  auto tile = AlgoAttr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  auto stages = AlgoAttr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  auto splitk = AlgoAttr<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  auto swizzle = AlgoAttr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  auto cluster = AlgoAttr<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return "algo " + std::to_string(id) + " tile " + TileName(tile) + " stages " +
         std::to_string(stages) + " splitk " + std::to_string(std::max<int32_t>(splitk, 1)) +
         " swizzle " + std::to_string(swizzle) + " cluster " + std::to_string(cluster);
}

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const noexcept {
    DLB_CHECK_NOEXCEPT(cublasLtMatmulPreferenceDestroy(p));
  }
};

// Throws dlb::Unsupported when the case is, before any buffer is allocated.
const GemmShape& Supported(const Support& support, const GemmShape& s) {
  RequireSupported(support);
  return s;
}

Layout MakeLayout(cudaDataType_t type, cublasOperation_t op, int64_t rows_of_op, int64_t cols_of_op,
                  int64_t ld) {
  cublasLtMatrixLayout_t raw = nullptr;
  // The layout describes the matrix as stored, before op.
  bool t = op == CUBLAS_OP_T;
  DLB_CHECK(cublasLtMatrixLayoutCreate(&raw, type, t ? cols_of_op : rows_of_op,
                                       t ? rows_of_op : cols_of_op, ld));
  return Layout(raw);
}

}  // namespace

size_t WorkspaceBytes() {
  int dev = 0, major = 0, minor = 0;
  DLB_CHECK(cudaGetDevice(&dev));
  DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  DLB_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  return major == 9 && minor == 0 ? size_t{32} << 20 : (size_t{4} << 20) + (size_t{128} << 10);
}

GemmBuffers::GemmBuffers(const GemmShape& s, const RunConfig& cfg)
    : shape_(s),
      dtype_(cfg.dtype),
      stream_(cuda::MakeStream()),
      a_(size_t(s.m * s.k) * StorageBytes(cfg.dtype)),
      b_(size_t(s.k * s.n) * StorageBytes(cfg.dtype)),
      c_(size_t(s.m * s.n) * StorageBytes(cfg.dtype)) {
  cuda::Upload(a_.get(), SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), dtype_), dtype_,
               stream());
  cuda::Upload(b_.get(), SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), dtype_), dtype_,
               stream());
  cuda::Poison(c_.get(), size_t(s.m * s.n), dtype_, stream());
  cuda::Sync(stream());
}

HostTensor GemmBuffers::Output() const {
  // Column-major C^T with ld n is row-major C: no reordering needed.
  return {{shape_.m, shape_.n},
          cuda::Download(c_.get(), size_t(shape_.m * shape_.n), dtype_, stream())};
}

Cost GemmBuffers::cost() const {
  const GemmShape& s = shape_;
  double elems = double(s.m) * double(s.k) + double(s.k) * double(s.n) + double(s.m) * double(s.n);
  return {s.Flops(), elems * double(StorageBytes(dtype_)), 0};
}

// ---- cublasGemmEx -------------------------------------------------------------------------------

Support CublasGemm::Supports(const GemmShape& s, const RunConfig& cfg) {
  return CommonSupport(s, cfg.dtype);
}

CublasGemm::CublasGemm(const GemmShape& s, const RunConfig& cfg)
    : buffers_(Supported(Supports(s, cfg), s), cfg), workspace_(WorkspaceBytes()) {
  cublasHandle_t raw = nullptr;
  DLB_CHECK(cublasCreate(&raw));
  handle_.reset(raw);
  DLB_CHECK(cublasSetStream(handle_.get(), stream()));
  // An explicit workspace keeps cuBLAS from allocating one on the stream during Run().
  DLB_CHECK(cublasSetWorkspace(handle_.get(), workspace_.get(), workspace_.bytes()));
  // The compute type alone decides TF32; the default math mode never downgrades 32F.
  DLB_CHECK(cublasSetMathMode(handle_.get(), CUBLAS_DEFAULT_MATH));
}

void CublasGemm::Run() {
  const GemmShape& s = buffers_.shape();
  const DType dt = buffers_.dtype();
  const ColumnMajor cm = MapRowMajor(s);
  const float alpha = 1.0f, beta = 0.0f;
  DLB_CHECK(cublasGemmEx(handle_.get(), cm.op_first, cm.op_second, int(s.n), int(s.m), int(s.k),
                         &alpha, buffers_.b(), DataType(dt), int(cm.ld_first), buffers_.a(),
                         DataType(dt), int(cm.ld_second), &beta, buffers_.c(), DataType(dt),
                         int(cm.ld_c), ComputeType(dt), CUBLAS_GEMM_DEFAULT));
}

std::string CublasGemm::label() const {
  return "cublasGemmEx CUBLAS_GEMM_DEFAULT compute " + std::string(ComputeName(buffers_.dtype())) +
         " workspace " + Bytes(workspace_.bytes()) + " " + std::string(Name(buffers_.dtype()));
}

// ---- cublasLtMatmul -----------------------------------------------------------------------------

Support CublasLtGemm::Supports(const GemmShape& s, const RunConfig& cfg) {
  if (cfg.algo != "heuristic" && cfg.algo != "search")
    return Support::No("algo " + cfg.algo + " (heuristic|search)");
  return CommonSupport(s, cfg.dtype);
}

CublasLtGemm::CublasLtGemm(const GemmShape& s, const RunConfig& cfg)
    : buffers_(Supported(Supports(s, cfg), s), cfg), workspace_(WorkspaceBytes()) {
  const DType dt = cfg.dtype;
  const ColumnMajor cm = MapRowMajor(s);

  cublasLtHandle_t raw_handle = nullptr;
  DLB_CHECK(cublasLtCreate(&raw_handle));
  handle_.reset(raw_handle);

  cublasLtMatmulDesc_t raw_desc = nullptr;
  DLB_CHECK(cublasLtMatmulDescCreate(&raw_desc, ComputeType(dt), CUDA_R_32F));
  desc_.reset(raw_desc);
  DLB_CHECK(cublasLtMatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSA, &cm.op_first,
                                           sizeof cm.op_first));
  DLB_CHECK(cublasLtMatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSB, &cm.op_second,
                                           sizeof cm.op_second));
  a_layout_ = MakeLayout(DataType(dt), cm.op_first, s.n, s.k, cm.ld_first);
  b_layout_ = MakeLayout(DataType(dt), cm.op_second, s.k, s.m, cm.ld_second);
  c_layout_ = MakeLayout(DataType(dt), CUBLAS_OP_N, s.n, s.m, cm.ld_c);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  DLB_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter> pref(raw_pref);
  const uint64_t ws = workspace_.bytes();
  DLB_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));

  const bool search = cfg.algo == "search";
  std::vector<cublasLtMatmulHeuristicResult_t> results(search ? 8 : 1);
  int returned = 0;
  // NOT_SUPPORTED: cuBLASLt has no algorithm for this combination, which is not a failure.
  const cublasStatus_t heuristic_status = cublasLtMatmulAlgoGetHeuristic(
      handle_.get(), desc_.get(), a_layout_.get(), b_layout_.get(), c_layout_.get(),
      c_layout_.get(), pref.get(), int(results.size()), results.data(), &returned);
  if (heuristic_status != CUBLAS_STATUS_NOT_SUPPORTED) DLB_CHECK(heuristic_status);
  if (heuristic_status == CUBLAS_STATUS_NOT_SUPPORTED || returned <= 0)
    throw Unsupported("cublasLtMatmulAlgoGetHeuristic found no algorithm for " +
                      std::string(Name(dt)) + " " + std::to_string(s.m) + "x" +
                      std::to_string(s.n) + "x" + std::to_string(s.k));
  results.resize(size_t(returned));

  // search: a warm-up launch and one timed batch of 3 each: enough to rank kernels that differ by
  // more than 1%.
  autotune::Policy policy;
  policy.warmup_runs = 1;
  policy.score = autotune::Policy::Score::kMeanOfBatch;
  policy.min_runs = policy.max_runs = 3;
  cuda::EventTimer events;
  autotune::Tuner<size_t> tuner(policy, [&](size_t i, int runs) {
    algo_ = results[i].algo;
    return events.TimeLaunches(stream(), runs, [&] { Run(); });
  });
  for (size_t i = 0; i < results.size(); ++i) tuner.Offer("#" + std::to_string(i), i);
  const size_t chosen = tuner.Finish();
  const autotune::Report& found = tuner.report();
  std::string how = "heuristic #0";
  if (found.offered > 1) {
    how = "search best of " + std::to_string(found.usable()) + " heuristic results: #" +
          std::to_string(chosen) +
          (found.failed ? " (" + std::to_string(found.failed) + " failed to run)" : "");
    // Timing wrote C: poison again so verification still proves the chosen Run() writes it.
    cuda::Poison(buffers_.c(), size_t(s.m * s.n), dt, stream());
    cuda::Sync(stream());
  }
  algo_ = results[chosen].algo;
  label_ = "cublasLtMatmul " + how + " (" + AlgoName(algo_) + ") compute " + ComputeName(dt) +
           " workspace " + Bytes(workspace_.bytes()) + " (needs " +
           Bytes(results[chosen].workspaceSize) + ") " + std::string(Name(dt));
}

void CublasLtGemm::Run() {
  const float alpha = 1.0f, beta = 0.0f;
  DLB_CHECK(cublasLtMatmul(handle_.get(), desc_.get(), &alpha, buffers_.b(), a_layout_.get(),
                           buffers_.a(), b_layout_.get(), &beta, buffers_.c(), c_layout_.get(),
                           buffers_.c(), c_layout_.get(), &algo_, workspace_.get(),
                           workspace_.bytes(), stream()));
}

}  // namespace dlb::cublas
