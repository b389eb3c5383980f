#include "kernels/cudnn/attn_graph.h"

#include <limits>
#include <string>
#include <utility>

#include "kernels/common/error.h"
#include "kernels/cuda/device.h"
#include "kernels/cudnn/backend.h"
#include "kernels/cudnn/engines.h"

namespace dlb::cudnn::attn {

using engines::Set;

Dims Contiguous(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

Storage ContiguousStorage(const AttnShape& s) {
  return {Contiguous({s.batch, s.heads, s.seq, s.head_dim}),
          Contiguous({s.batch, s.kv_heads, s.KvSeq(), s.head_dim})};
}

Support FusedSupport(const AttnShape& s, DType dt) {
  if (!s.Valid()) return Support::No("invalid attention shape");
  if (dt != DType::kBF16 && dt != DType::kF16)
    return Support::No("cuDNN's fused attention takes f16 or bf16 inputs, not " +
                       std::string(Name(dt)));
  if (s.head_dim % 8 != 0)
    return Support::No("cuDNN's fused attention needs head_dim a multiple of 8, not " +
                       std::to_string(s.head_dim));
  if (s.KvSeq() != s.seq && (s.causal || s.pass != AttnPass::kFwd))
    return Support::No("queries over a different number of keys (" + std::to_string(s.seq) +
                       " over " + std::to_string(s.KvSeq()) +
                       ") only in a forward without a causal mask (the graphs' mask is "
                       "top-left)");
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  const DeviceProps d = CurrentDevice();
  if (d.major < 8)
    return Support::No("cuDNN's fused attention needs sm_80 or newer, this GPU is sm_" +
                       std::to_string(d.major) + std::to_string(d.minor));
  const int64_t max_head_dim = d.major == 9 ? 256 : 128;
  if (s.head_dim > max_head_dim)
    return Support::No("cuDNN's fused attention takes head_dim up to " +
                       std::to_string(max_head_dim) + " on sm_" + std::to_string(d.major) +
                       "x, not " + std::to_string(s.head_dim));
  return Support::Yes();
}

Lowering LoweringFor(const AttnShape& s, AttnPass pass, size_t v) {
  Lowering l;
  l.padding_workaround = pass == AttnPass::kBwd && s.seq % 128 != 0 && v <= 91500;
  l.repad_after_stats = l.padding_workaround && v >= 90000 && v < 91000;
  l.zero_dq_accum = v < 90600;
  l.neg_inf =
      v < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
  return l;
}

namespace {

cudnnDataType_t IoType(DType dt) {
  return dt == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

// Builds one operation graph: tensors and operations in the order the frontend creates them.
class Builder {
 public:
  explicit Builder(cudnnHandle_t handle) : handle_(handle) {}

  void* Tensor(int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type,
               bool is_virtual = false, bool by_value = false) {
    Descriptor t = engines::TensorDescriptor(uid, dims, strides, type, is_virtual, by_value);
    return Keep(std::move(t));
  }
  // A graph-internal tensor: float unless said otherwise, as the frontend's intermediate type.
  void* Virtual(const Dims& dims, const Dims& strides, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return Tensor(next_virtual_++, dims, strides, type, true);
  }
  void* Scalar(int64_t uid) {
    return Tensor(uid, {1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, false, true);
  }

  // y = mode(x[, b[, t]]). GEN_INDEX takes an axis; binary select is y = t ? x : b.
  void Pointwise(cudnnPointwiseMode_t mode, void* x, void* b, void* t, void* y,
                 cudnnDataType_t math = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Descriptor pw = MakeDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    Set(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    Set(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      Set(pw.get(), CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    DLB_CHECK(cudnnBackendFinalize(pw.get()));
    Descriptor op = MakeDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    void* pwd = pw.get();
    const float alpha = 1.0f;
    Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &pwd);
    Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b)
      Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t)
      Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha);
    Set(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha);
    DLB_CHECK(cudnnBackendFinalize(op.get()));
    Keep(std::move(pw));
    AddOp(std::move(op));
  }

  // c = a x b over the last two dims, batched (and broadcast) over the first two. The overrides
  // are the padding workaround's actual sequence lengths (nullptr: none).
  void Matmul(void* a, void* b, void* c, void* m = nullptr, void* n = nullptr, void* k = nullptr) {
    Descriptor mm = MakeDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    Set(mm.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &math);
    DLB_CHECK(cudnnBackendFinalize(mm.get()));
    Descriptor op = MakeDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    void* mmd = mm.get();
    Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
    Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mmd);
    if (m)
      Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &m);
    if (n)
      Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &n);
    if (k)
      Set(op.get(), CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &k);
    DLB_CHECK(cudnnBackendFinalize(op.get()));
    Keep(std::move(mm));
    AddOp(std::move(op));
  }

#if CUDNN_VERSION >= 91301
  // O = softmax(scale Q K^T) V as one operation (cuDNN 9.13.1's unified SDPA forward): Q and O
  // (B, H, S, D), K and V (B, G, S_kv, D) as stored; stats nullptr for none.
  void Sdpa(void* q, void* k, void* v, void* o, void* stats, void* scale) {
    Descriptor op = MakeDescriptor(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    Set(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q);
    Set(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k);
    Set(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
    Set(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
    if (stats)
      Set(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
          &stats);
    Set(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &scale);
    DLB_CHECK(cudnnBackendFinalize(op.get()));
    AddOp(std::move(op));
  }
#endif

  // y = reduce(x) over the dims where y has extent 1.
  void Reduction(cudnnReduceTensorOp_t how, void* x, void* y) {
    Descriptor red = MakeDescriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    Set(red.get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &math);
    Set(red.get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
    DLB_CHECK(cudnnBackendFinalize(red.get()));
    Descriptor op = MakeDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    void* rd = red.get();
    Set(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    Set(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    Set(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    DLB_CHECK(cudnnBackendFinalize(op.get()));
    Keep(std::move(red));
    AddOp(std::move(op));
  }

  // y is x seen with other dims/strides (a transpose, for the engine's operand order).
  void Reshape(void* x, void* y) {
    Descriptor op = MakeDescriptor(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    Set(op.get(), CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    Set(op.get(), CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    DLB_CHECK(cudnnBackendFinalize(op.get()));
    AddOp(std::move(op));
  }

  OpGraph Finish() {
    OpGraph g;
    g.graph = MakeDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Set(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        int64_t(ops_.size()), ops_.data());
    Set(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
    DLB_CHECK(cudnnBackendFinalize(g.graph.get()));
    g.keep = std::move(keep_);
    return g;
  }

 private:
  void* Keep(Descriptor d) {
    keep_.push_back(std::move(d));
    return keep_.back().get();
  }
  void AddOp(Descriptor op) { ops_.push_back(Keep(std::move(op))); }

  cudnnHandle_t handle_;
  std::vector<Descriptor> keep_;
  std::vector<void*> ops_;
  int64_t next_virtual_ = kFirstVirtual;
};

// The tensors both graphs read, in (B, H, S, D) storage; K (and V for the backward) is described
// transposed, (B, G, D, S), as the backend's attention pattern takes it.
struct Inputs {
  Dims q, kv, scores,
      row;  // logical dims: Q/O/dO, K/V, scores (B, H, S, S), row stats (B, H, S, 1)
  Dims scores_strides, row_strides, kt, kt_strides;
  void *Q = nullptr, *KT = nullptr, *scale = nullptr, *neg_inf = nullptr;
};

Inputs MakeInputs(Builder& g, const AttnShape& s, DType dt, const Storage& storage) {
  Inputs in;
  const int64_t b = s.batch, h = s.heads, kvh = s.kv_heads, n = s.seq, nk = s.KvSeq(),
                d = s.head_dim;
  in.q = {b, h, n, d};
  in.kv = {b, kvh, nk, d};
  in.scores = {b, h, n, nk};
  in.scores_strides = Contiguous(in.scores);
  in.row = {b, h, n, 1};
  in.row_strides = {h * n, n, 1, 1};
  const Dims kv_strides = storage.kv;
  in.kt = {b, kvh, d, nk};
  in.kt_strides = {kv_strides[0], kv_strides[1], kv_strides[3], kv_strides[2]};
  in.Q = g.Tensor(kUidQ, in.q, storage.q, IoType(dt));
  in.KT = g.Tensor(kUidK, in.kt, in.kt_strides, IoType(dt));
  in.scale = g.Scalar(kUidScale);
  return in;
}

// Scores where a causal query i sees keys 0..i; the others become neg_inf (top-left diagonal,
// row >= col, the frontend's right bound 0).
void* CausalMask(Builder& g, const Inputs& in, void* scores) {
  void* row = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_INT32);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, row, CUDNN_DATA_FLOAT, 2);
  void* col = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_INT32);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, col, CUDNN_DATA_FLOAT, 3);
  void* keep = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_BOOLEAN);
  g.Pointwise(CUDNN_POINTWISE_CMP_GE, row, col, nullptr, keep, CUDNN_DATA_BOOLEAN);
  void* out = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, in.neg_inf, keep, out);
  return out;
}

// The padding mask with every sequence at full length (row < seq_q and col < seq_kv): masks
// nothing, but is what cuDNN <= 9.15's backward needs to be right when s_kv % 128 != 0.
void* PaddingMask(Builder& g, const Inputs& in, void* scores, void* seq_q, void* seq_kv) {
  void* row = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_INT32);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, row, CUDNN_DATA_INT32, 2);
  void* col = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_INT32);
  g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, col, CUDNN_DATA_INT32, 3);
  void* row_in = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_BOOLEAN);
  g.Pointwise(CUDNN_POINTWISE_CMP_LT, row, seq_q, nullptr, row_in, CUDNN_DATA_BOOLEAN);
  void* col_in = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_BOOLEAN);
  g.Pointwise(CUDNN_POINTWISE_CMP_LT, col, seq_kv, nullptr, col_in, CUDNN_DATA_BOOLEAN);
  void* both = g.Virtual(in.scores, in.scores_strides, CUDNN_DATA_BOOLEAN);
  g.Pointwise(CUDNN_POINTWISE_LOGICAL_AND, row_in, col_in, nullptr, both, CUDNN_DATA_BOOLEAN);
  void* out = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, in.neg_inf, both, out);
  return out;
}

}  // namespace

OpGraph BuildForward(cudnnHandle_t handle, const AttnShape& s, DType dt, const Lowering& low) {
  return BuildForward(handle, s, dt, low, ContiguousStorage(s), true);
}

OpGraph BuildForward(cudnnHandle_t handle, const AttnShape& s, DType dt, const Lowering& low,
                     const Storage& storage, bool stats) {
  (void)low;
  Builder g(handle);
  Inputs in = MakeInputs(g, s, dt, storage);
  void* V = g.Tensor(kUidV, in.kv, storage.kv, IoType(dt));

  // scores = scale * Q K^T [causal mask]
  void* qk = g.Virtual(in.scores, in.scores_strides);
  g.Matmul(in.Q, in.KT, qk);
  void* scaled = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_MUL, qk, in.scale, nullptr, scaled);
  void* scores = scaled;
  if (s.causal) {
    in.neg_inf = g.Scalar(kUidNegInf);
    scores = CausalMask(g, in, scaled);
  }

  // softmax as max, sub, exp, sum, div; Stats = max + log(sum)
  void* max = g.Virtual(in.row, in.row_strides);
  g.Reduction(CUDNN_REDUCE_TENSOR_MAX, scores, max);
  void* centered = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_SUB, scores, max, nullptr, centered);
  void* e = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_EXP, centered, nullptr, nullptr, e);
  void* sum = g.Virtual(in.row, in.row_strides);
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  if (stats) {
    void* log_sum = g.Virtual(in.row, in.row_strides);
    g.Pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, nullptr, log_sum);
    void* lse = g.Tensor(kUidStats, in.row, in.row_strides, CUDNN_DATA_FLOAT);
    g.Pointwise(CUDNN_POINTWISE_ADD, max, log_sum, nullptr, lse);
  }
  // P is handed to the second matmul in the inputs' type, as the backend requires.
  void* p = g.Virtual(in.scores, in.scores_strides, IoType(dt));
  g.Pointwise(CUDNN_POINTWISE_DIV, e, sum, nullptr, p);

  void* O = g.Tensor(kUidO, in.q, storage.q, IoType(dt));
  g.Matmul(p, V, O);
  return g.Finish();
}

bool UnifiedForwardBuilt() {
#if CUDNN_VERSION >= 91301
  return true;
#else
  return false;
#endif
}

OpGraph BuildUnifiedForward(cudnnHandle_t handle, const AttnShape& s, DType dt,
                            const Storage& storage, bool stats) {
  DLB_REQUIRE(!s.causal, "the unified SDPA operation is built here without a mask");
#if CUDNN_VERSION >= 91301
  Builder g(handle);
  const int64_t b = s.batch, h = s.heads, n = s.seq;
  const Dims q = {b, h, n, s.head_dim}, kv = {b, s.kv_heads, s.KvSeq(), s.head_dim};
  void* Q = g.Tensor(kUidQ, q, storage.q, IoType(dt));
  void* K = g.Tensor(kUidK, kv, storage.kv, IoType(dt));
  void* V = g.Tensor(kUidV, kv, storage.kv, IoType(dt));
  void* O = g.Tensor(kUidO, q, storage.q, IoType(dt));
  void* lse =
      stats ? g.Tensor(kUidStats, {b, h, n, 1}, {h * n, n, 1, 1}, CUDNN_DATA_FLOAT) : nullptr;
  g.Sdpa(Q, K, V, O, lse, g.Scalar(kUidScale));
  return g.Finish();
#else
  (void)handle, (void)s, (void)dt, (void)storage, (void)stats;
  throw Unsupported("the unified SDPA operation needs cuDNN 9.13.1 or newer at build time");
#endif
}

OpGraph BuildBackward(cudnnHandle_t handle, const AttnShape& s, DType dt, const Lowering& low) {
  DLB_REQUIRE(s.KvSeq() == s.seq, "the attention backward graph is self-attention only");
  Builder g(handle);
  Inputs in = MakeInputs(g, s, dt, ContiguousStorage(s));
  const int64_t b = s.batch, h = s.heads, n = s.seq, d = s.head_dim;
  const bool grouped = s.kv_heads != s.heads;
  void* VT = g.Tensor(kUidV, in.kt, in.kt_strides, IoType(dt));
  void* O = g.Tensor(kUidO, in.q, Contiguous(in.q), IoType(dt));
  void* dO = g.Tensor(kUidDO, in.q, Contiguous(in.q), IoType(dt));
  void* stats = g.Tensor(kUidStats, in.row, in.row_strides, CUDNN_DATA_FLOAT);
  void* one = g.Scalar(kUidOne);
  if (s.causal || low.padding_workaround) in.neg_inf = g.Scalar(kUidNegInf);
  void *seq_q = nullptr, *seq_kv = nullptr;
  if (low.padding_workaround) {
    seq_q = g.Tensor(kUidSeqQ, {b, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_INT32);
    seq_kv = g.Tensor(kUidSeqKv, {b, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_INT32);
  }

  // softmax_sum = rowsum(dO * O) (times the dropout scale, 1 here), kept in memory
  void* dO_O = g.Virtual(in.q, {h * n * d, n * d, h * d, 1});
  g.Pointwise(CUDNN_POINTWISE_MUL, dO, O, nullptr, dO_O);
  void* row_sum = g.Virtual(in.row, in.row_strides);
  g.Reduction(CUDNN_REDUCE_TENSOR_ADD, dO_O, row_sum);
  void* softmax_sum = g.Tensor(kUidSoftmaxSum, in.row, in.row_strides, CUDNN_DATA_FLOAT);
  g.Pointwise(CUDNN_POINTWISE_MUL, row_sum, one, nullptr, softmax_sum);

  // P = exp(scale * Q K^T [padding] - Stats [causal mask]), recomputed from the statistics
  void* qk = g.Virtual(in.scores, in.scores_strides);
  g.Matmul(in.Q, in.KT, qk, seq_q, seq_kv);
  void* scores = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_MUL, qk, in.scale, nullptr, scores);
  if (low.padding_workaround) scores = PaddingMask(g, in, scores, seq_q, seq_kv);
  void* centered = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_SUB, scores, stats, nullptr, centered);
  if (low.repad_after_stats) centered = PaddingMask(g, in, centered, seq_q, seq_kv);
  if (s.causal) centered = CausalMask(g, in, centered);
  void* p = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_EXP, centered, nullptr, nullptr, p);

  // The transposed views the dK and dV matmuls read, in the inputs' type.
  const Dims transposed_strides = {h * n * n, n * n, 1, n};
  const Dims kv_grad = Contiguous(in.kv);
  // dK or dV = A^T-view x B; with grouped heads the per-query-head product is summed over the
  // heads that share a K/V head.
  const auto grad_of = [&](void* a_t, void* bmat, int64_t uid) {
    void* out = g.Tensor(uid, in.kv, kv_grad, IoType(dt));
    if (!grouped) {
      g.Matmul(a_t, bmat, out, seq_kv, nullptr, seq_q);
      return;
    }
    void* full = g.Virtual(in.q, Contiguous(in.q), IoType(dt));
    g.Matmul(a_t, bmat, full, seq_kv, nullptr, seq_q);
    g.Reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
  };

  // dV = P^T dO
  void* p_t = g.Virtual(in.scores, transposed_strides, IoType(dt));
  g.Reshape(p, p_t);
  grad_of(p_t, dO, kUidDV);

  // dS = scale * P * (dO V^T - softmax_sum)
  void* dp = g.Virtual(in.scores, in.scores_strides);
  g.Matmul(dO, VT, dp, seq_q, seq_kv);
  void* dp_centered = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_SUB, dp, softmax_sum, nullptr, dp_centered);
  void* dp_p = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_MUL, dp_centered, p, nullptr, dp_p);
  void* ds = g.Virtual(in.scores, in.scores_strides);
  g.Pointwise(CUDNN_POINTWISE_MUL, dp_p, in.scale, nullptr, ds);

  // dK = dS^T Q
  void* ds_t = g.Virtual(in.scores, transposed_strides, IoType(dt));
  g.Reshape(ds, ds_t);
  grad_of(ds_t, in.Q, kUidDK);

  // dQ = dS K, accumulated in float in memory, then converted
  const Dims k_strides = {in.kt_strides[0], in.kt_strides[1], in.kt_strides[3], in.kt_strides[2]};
  void* k = g.Virtual(in.kv, k_strides);
  g.Reshape(in.KT, k);
  void* dq_accum = g.Tensor(kUidDQAccum, in.q, Contiguous(in.q), CUDNN_DATA_FLOAT);
  g.Matmul(ds, k, dq_accum, seq_q, nullptr, seq_kv);
  void* dQ = g.Tensor(kUidDQ, in.q, Contiguous(in.q), IoType(dt));
  g.Pointwise(CUDNN_POINTWISE_IDENTITY, dq_accum, nullptr, nullptr, dQ);
  return g.Finish();
}

}  // namespace dlb::cudnn::attn
