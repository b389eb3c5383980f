// GEMM family: fixtures/workloads/gemm_*.csv x {oneDNN (CPU), cuBLAS, cuBLASLt (GPU)} x dtypes
// (x batch sizes for the fully connected layers, whose M is the batch).
#include "fixtures/checks.h"
#include "fixtures/harness.h"
#include "fixtures/main.h"
#include "fixtures/workloads.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/matmul.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/gemm.h"
#endif

namespace dlb {
namespace {

template <class Op>
void Add(const char* device, const char* backend, const GemmWorkload& w, const GemmShape& shape,
         int64_t batch, DType dt) {
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = Opts().seed;
  cfg.threads = Opts().threads;
  cfg.algo = Opts().gemm_algo;
  BenchName name{"gemm", device, backend, w.name, {}};
  if (batch > 0) name.keys.push_back({"bs", std::to_string(batch)});
  name.keys.push_back({"dt", std::string(Name(dt))});
  Register<Op>(name, shape, cfg, {"", dt, w.count, batch, GemmVerifier(shape, cfg)});
}

void RegisterGemm() {
  const std::vector<int> batches =
      BatchSizes({2}, {16, 64, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  const auto cpu_dtypes = DTypes({DType::kF32, DType::kBF16});
  const auto gpu_dtypes =
      DTypes(Opts().tier == Tier::kSmoke
                 ? std::vector<DType>{DType::kF32, DType::kBF16}
                 : std::vector<DType>{DType::kF32, DType::kTF32, DType::kF16, DType::kBF16});
  for (const std::string& file : WorkloadFiles("gemm_")) {
    for (const GemmWorkload& w : LoadGemmWorkloads(file)) {
      if (w.tier > Opts().tier) continue;
      const std::vector<int> ms = w.m_is_batch ? batches : std::vector<int>{0};
      for (int b : ms) {
        GemmShape shape = w.shape;
        if (w.m_is_batch) shape.m = b;
#ifdef DLBENCH_HAVE_ONEDNN
        if (WantDevice(false))
          for (DType dt : cpu_dtypes) Add<onednn::OneDnnMatmul>("cpu", "onednn", w, shape, b, dt);
#endif
#ifdef DLBENCH_HAVE_CUDA
        if (WantDevice(true)) {
          for (DType dt : gpu_dtypes) Add<cublas::CublasGemm>("gpu", "cublas", w, shape, b, dt);
          for (DType dt : gpu_dtypes) Add<cublas::CublasLtGemm>("gpu", "cublaslt", w, shape, b, dt);
        }
#endif
      }
    }
  }
}

}  // namespace
}  // namespace dlb

DLB_BENCH_MAIN(dlb::RegisterGemm)
