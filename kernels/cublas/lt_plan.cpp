#include "kernels/cublas/lt_plan.h"

#include <algorithm>

namespace dlb::cublas {

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

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const noexcept {
    DLB_CHECK_NOEXCEPT(cublasLtMatmulPreferenceDestroy(p));
  }
};

}  // namespace

Layout MakeLayout(cudaDataType_t type, cublasOperation_t op, int64_t rows_of_op, int64_t cols_of_op,
                  int64_t ld) {
  cublasLtMatrixLayout_t raw = nullptr;
  const bool t = op == CUBLAS_OP_T;
  DLB_CHECK(cublasLtMatrixLayoutCreate(&raw, type, uint64_t(t ? cols_of_op : rows_of_op),
                                       uint64_t(t ? rows_of_op : cols_of_op), ld));
  return Layout(raw);
}

std::vector<cublasLtMatmulHeuristicResult_t> HeuristicResults(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, size_t workspace_bytes, int count) {
  cublasLtMatmulPreference_t raw_pref = nullptr;
  DLB_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter> pref(raw_pref);
  const uint64_t ws = workspace_bytes;
  DLB_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref.get(),
                                                               count, results.data(), &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  DLB_CHECK(status);
  results.resize(size_t(std::max(returned, 0)));
  return results;
}

std::vector<cublasLtMatmulHeuristicResult_t> RequireHeuristicResults(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, size_t workspace_bytes, int count,
    const std::string& none) {
  std::vector<cublasLtMatmulHeuristicResult_t> results =
      HeuristicResults(handle, desc, a, b, c, workspace_bytes, count);
  if (results.empty()) throw Unsupported(none);
  return results;
}

cublasLtMatmulAlgo_t FirstHeuristicAlgo(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                        cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                        cublasLtMatrixLayout_t c, size_t workspace_bytes,
                                        const std::string& none) {
  return RequireHeuristicResults(handle, desc, a, b, c, workspace_bytes, 1, none).front().algo;
}

}  // namespace dlb::cublas
