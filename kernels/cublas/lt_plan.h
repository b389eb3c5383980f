// The cuBLASLt pieces gemm.h, mlp.h and infer.h plan a matmul with: owned handles, descriptors and
// layouts, typed descriptor attributes, and the algorithms the heuristic ranks.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cublas/check.h"

namespace dlb::cublas {

struct LtHandleDeleter {
  void operator()(cublasLtHandle_t h) const noexcept;
};
struct MatmulDescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const noexcept;
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayout_t l) const noexcept;
};
using LtHandle = std::unique_ptr<cublasLtContext, LtHandleDeleter>;
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, MatmulDescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;

template <class T>
void SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  DLB_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
}

// The layout of a matrix that is rows_of_op x cols_of_op once `op` is applied: cuBLASLt describes
// it as stored, before op (cols_of_op x rows_of_op when op is CUBLAS_OP_T).
Layout MakeLayout(cudaDataType_t type, cublasOperation_t op, int64_t rows_of_op, int64_t cols_of_op,
                  int64_t ld);

// Up to `count` of the heuristic's algorithms, best first, for D = C (the same layout) within
// `workspace_bytes`; empty when cuBLASLt has none for this descriptor and these layouts
// (CUBLAS_STATUS_NOT_SUPPORTED or no result), which is not a failure. Other statuses throw.
std::vector<cublasLtMatmulHeuristicResult_t> HeuristicResults(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, size_t workspace_bytes, int count);

// As HeuristicResults, for callers that cannot fall back: at least one result, or
// dlb::Unsupported(`none`), a line naming the types and the shape.
std::vector<cublasLtMatmulHeuristicResult_t> RequireHeuristicResults(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, size_t workspace_bytes, int count,
    const std::string& none);

// The heuristic's first algorithm, or dlb::Unsupported(`none`).
cublasLtMatmulAlgo_t FirstHeuristicAlgo(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                        cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                        cublasLtMatrixLayout_t c, size_t workspace_bytes,
                                        const std::string& none);

}  // namespace dlb::cublas
