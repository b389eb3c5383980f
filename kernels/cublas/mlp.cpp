#include "kernels/cublas/mlp.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "kernels/cublas/check.h"
#include "kernels/cublas/lt_plan.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/train_kernels.h"

namespace dlb::cublas {

namespace {

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Against a float64 step from the same f32 parameters.
//   f32 (CUBLAS_COMPUTE_32F): dot products of at most 1000 terms give relative errors of
//     ~sqrt(k) * 2^-24 at worst; an H100 shows 1e-7..2.4e-7 on the gradients and logits, 5e-8 on
//     the loss and the updated weights (batch 1..512). 1e-5 leaves a 25x margin; a wrong layout,
//     mask or bias shows 1e-1 to 1. A ReLU whose input lies within ~1e-8 of zero can flip under
//     rounding and reroute that unit's gradient (a few percent of cases at batch 512): the verdict
//     then fails with "worst grads".
//   tf32: inputs rounded to 10-bit mantissas (2^-11 relative) in every GEMM: ~3e-4 on the logits,
//     and about 3e-4 of the hidden units' ReLU decisions flip, each rerouting its gradient:
//     1000-512-256-2 on an H100 shows gradient errors of 3e-4 (batch 16) to 1.6e-2 (batch 64..512),
//     as an emulation of TF32 rounding predicts. 5e-2 clears that; a wrong kernel still shows an
//     error of order 1.
double StepTolerance(DType dt) { return dt == DType::kTF32 ? 5e-2 : 1e-5; }

// A replay runs the same kernels with the same algorithms on the same data as the eager step, so
// it should equal it bit for bit; the slack only admits an algorithm that reduces in a varying
// order (cuBLASLt's atomics), whose differences stay at f32 rounding.
constexpr double kReplayTolerance = 1e-6;

const char* EpilogueName(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_BIAS:
      return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
      return "RELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
      return "DRELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADB:
      return "BGRADB";
    default:
      return "DEFAULT";
  }
}

// A name listed once, in the order first met.
void NoteOnce(std::vector<std::string>* names, const std::string& name) {
  if (std::find(names->begin(), names->end(), name) == names->end()) names->push_back(name);
}

void RequirePlanned(bool planned, const char* what) {
  if (!planned)
    throw Unsupported(std::string("cuBLASLt has no algorithm for the ") + what + " GEMM");
}

}  // namespace

// One GEMM in cuBLASLt's column-major terms: C (m x n, ldc) = op(A) op(B), A stored m x k (k x m
// when ta = T), B stored k x n (n x k when tb = T).
struct NativeMlpStep::GemmSpec {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const float* bias = nullptr;   // BIAS: read; BGRAD: the bias gradient written
  unsigned char* aux = nullptr;  // the ReLU bit-mask: written by RELU_AUX, read by DRELU
  int64_t aux_ld = 0;
};

bool NativeMlpStep::Plan(const GemmSpec& s, Gemm* g) {
  cublasLtMatmulDesc_t raw = nullptr;
  const cublasComputeType_t compute =
      dtype_ == DType::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DLB_CHECK(cublasLtMatmulDescCreate(&raw, compute, CUDA_R_32F));
  g->desc.reset(raw);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSA, s.ta);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSB, s.tb);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, s.epilogue);
  if (s.bias) SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(s.bias));
  if (s.aux) {
    SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(s.aux));
    SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, s.aux_ld);
  }
  g->a = MakeLayout(CUDA_R_32F, s.ta, s.m, s.k, s.lda);
  g->b = MakeLayout(CUDA_R_32F, s.tb, s.k, s.n, s.ldb);
  g->c = MakeLayout(CUDA_R_32F, CUBLAS_OP_N, s.m, s.n, s.ldc);
  g->a_ptr = s.a;
  g->b_ptr = s.b;
  g->c_ptr = s.c;

  // No algorithm for this epilogue here: the caller falls back.
  const std::vector<cublasLtMatmulHeuristicResult_t> results = HeuristicResults(
      handle_.get(), raw, g->a.get(), g->b.get(), g->c.get(), workspace_.bytes(), 1);
  if (results.empty()) return false;
  g->algo = results.front().algo;
  return true;
}

void NativeMlpStep::Launch(const Gemm& g) {
  const float alpha = 1.0f, beta = 0.0f;
  DLB_CHECK(cublasLtMatmul(handle_.get(), g.desc.get(), &alpha, g.a_ptr, g.a.get(), g.b_ptr,
                           g.b.get(), &beta, g.c_ptr, g.c.get(), g.c_ptr, g.c.get(), &g.algo,
                           workspace_.get(), workspace_.bytes(), stream_.get()));
}

Support NativeMlpStep::Supports(const TrainShape& s, const RunConfig& cfg) {
  if (!s.model.empty() && s.model != "mlp")
    return Support::No("the native step runs the MLP only, not " + s.model);
  if (s.widths.size() < 2) return Support::No("an MLP needs at least two widths");
  for (int64_t w : s.widths)
    if (w <= 0 || w > INT_MAX) return Support::No("MLP widths must be positive and fit an int");
  if (s.batch <= 0 || s.batch > INT_MAX)
    return Support::No("batch must be positive and fit an int");
  if (s.classes > 0 && s.classes != s.widths.back())
    return Support::No("classes differ from the MLP's last width");
  if (s.amp) return Support::No("the native step has no bf16 autocast (f32 or tf32)");
  if (cfg.dtype != DType::kF32 && cfg.dtype != DType::kTF32)
    return Support::No("the native GPU step is f32 or tf32, not " + std::string(Name(cfg.dtype)));
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  if (cfg.dtype == DType::kTF32) {
    int dev = 0, major = 0;
    DLB_CHECK(cudaGetDevice(&dev));
    DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 8) return Support::No("tf32 needs compute capability 8.0+");
  }
  return Support::Yes();
}

NativeMlpStep::NativeMlpStep(const TrainShape& s, const RunConfig& cfg)
    : shape_(s), dtype_(cfg.dtype), seed_(cfg.seed) {
  RequireSupported(Supports(s, cfg));
  stream_ = cuda::MakeStream();
  cublasLtHandle_t raw_handle = nullptr;
  DLB_CHECK(cublasLtCreate(&raw_handle));
  handle_.reset(raw_handle);
  Allocate();
  std::vector<std::string> fwd_names, bwd_names, kernels;
  PlanForward(&fwd_names);
  if (s.pass == Pass::kTrain) PlanBackward(&bwd_names, &kernels);
  for (cuda::Event& e : phase_) e = cuda::MakeEvent();
  WarmUpAndCapture();
  Restore();
  label_ = Label(fwd_names, bwd_names, kernels);
}

void NativeMlpStep::Allocate() {
  const std::vector<int64_t>& w = shape_.widths;
  const size_t layers = w.size() - 1;
  const int64_t n = shape_.batch;
  const bool train = shape_.pass == Pass::kTrain;
  const auto floats = [this](size_t count) {
    allocated_bytes_ += double(count * sizeof(float));
    return cuda::DeviceBuffer<float>(count);
  };

  // Every weight and bias starts 256-byte aligned, as cuBLASLt's fastest kernels want their
  // operands and bias vectors.
  layers_.resize(layers);
  for (size_t l = 0; l < layers; ++l) {
    Layer& L = layers_[l];
    L.in = w[l];
    L.out = w[l + 1];
    L.w = flat_;
    flat_ += RoundUp(size_t(L.in * L.out), 64);
    L.b = flat_;
    flat_ += RoundUp(size_t(L.out), 64);
  }
  seeded_ = SeededMlpParams(seed_, w);
  std::vector<float> flat(flat_, 0.0f);
  for (size_t l = 0; l < layers; ++l) {
    std::copy(seeded_.weight[l].begin(), seeded_.weight[l].end(), flat.begin() + layers_[l].w);
    std::copy(seeded_.bias[l].begin(), seeded_.bias[l].end(), flat.begin() + layers_[l].b);
  }
  params_ = floats(flat_);
  seeded_params_ = floats(flat_);
  if (train) {
    grads_ = floats(flat_);
    momentum_ = floats(flat_);
  }
  const MlpBatch batch = SeededMlpBatch(seed_, n, w.front(), w.back());
  x_ = floats(batch.x.size());
  loss_ = floats(1);
  labels_ = cuda::DeviceBuffer<int32_t>(size_t(n));
  allocated_bytes_ += double(labels_.bytes());
  const std::vector<int32_t> labels(batch.labels.begin(), batch.labels.end());
  DLB_CHECK(cudaMemcpyAsync(seeded_params_.get(), flat.data(), flat_ * sizeof(float),
                            cudaMemcpyHostToDevice, stream_.get()));
  DLB_CHECK(cudaMemcpyAsync(x_.get(), batch.x.data(), batch.x.size() * sizeof(float),
                            cudaMemcpyHostToDevice, stream_.get()));
  DLB_CHECK(cudaMemcpyAsync(labels_.get(), labels.data(), labels.size() * sizeof(int32_t),
                            cudaMemcpyHostToDevice, stream_.get()));
  cuda::Sync(stream_.get());  // the host vectors die at return
  for (size_t l = 0; l < layers; ++l) {
    act_.push_back(floats(size_t(n * w[l + 1])));
    if (train) dz_.push_back(floats(size_t(n * w[l + 1])));
    // The ReLU bit-mask: one bit an element, columns (samples) `ld` bits apart, ld a multiple
    // of 128 as cuBLASLt requires.
    const int64_t ld = int64_t(RoundUp(size_t(w[l + 1]), 128));
    mask_ld_.push_back(ld);
    const bool hidden = l + 1 < layers;
    mask_.emplace_back(train && hidden ? size_t(ld / 8 * n) : 0);
    allocated_bytes_ += double(mask_.back().bytes());
  }
  workspace_ = cuda::DeviceBuffer<unsigned char>(WorkspaceBytes());
  allocated_bytes_ += double(workspace_.bytes());
}

void NativeMlpStep::PlanForward(std::vector<std::string>* fwd_names) {
  const size_t layers = layers_.size();
  const int64_t n = shape_.batch;
  const bool train = shape_.pass == Pass::kTrain;
  for (size_t l = 0; l < layers; ++l) {
    Layer& L = layers_[l];
    const bool hidden = l + 1 < layers;
    const float* input = l == 0 ? x_.get() : act_[l - 1].get();
    // act^T (out x n) = W (out x in: the row-major weight read transposed) . input^T (in x n).
    GemmSpec fwd;
    fwd.ta = CUBLAS_OP_T;
    fwd.m = L.out, fwd.n = n, fwd.k = L.in;
    fwd.a = params_.get() + L.w, fwd.lda = L.in;
    fwd.b = input, fwd.ldb = L.in;
    fwd.c = act_[l].get(), fwd.ldc = L.out;
    fwd.bias = params_.get() + L.b;
    fwd.epilogue = hidden ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    if (hidden && train) {
      GemmSpec aux = fwd;
      aux.epilogue = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
      aux.aux = mask_[l].get();
      aux.aux_ld = mask_ld_[l];
      L.aux = Plan(aux, &L.fwd);
      if (L.aux) NoteOnce(fwd_names, "RELU_AUX_BIAS");
    }
    if (!L.aux) {
      RequirePlanned(Plan(fwd, &L.fwd), "forward");
      NoteOnce(fwd_names, EpilogueName(fwd.epilogue));
    }
  }
}

void NativeMlpStep::PlanBackward(std::vector<std::string>* bwd_names,
                                 std::vector<std::string>* kernels) {
  const size_t layers = layers_.size();
  const int64_t n = shape_.batch;
  for (size_t l = layers; l-- > 0;) {
    Layer& L = layers_[l];
    const bool last = l + 1 == layers;
    const float* input = l == 0 ? x_.get() : act_[l - 1].get();
    // dW^T (in x out) = input^T (in x n) . dz (n x out: dz^T as stored, read transposed).
    GemmSpec wgrad;
    wgrad.tb = CUBLAS_OP_T;
    wgrad.m = L.in, wgrad.n = L.out, wgrad.k = n;
    wgrad.a = input, wgrad.lda = L.in;
    wgrad.b = dz_[l].get(), wgrad.ldb = L.out;
    wgrad.c = grads_.get() + L.w, wgrad.ldc = L.in;
    if (last) {
      // The hidden layers' bias gradients come with the DRELU_BGRAD GEMM below; the last
      // layer's is the batch sum of dz, cuBLASLt's BGRADB (reduction over k = the batch).
      GemmSpec bgrad = wgrad;
      bgrad.epilogue = CUBLASLT_EPILOGUE_BGRADB;
      bgrad.bias = grads_.get() + L.b;
      L.bgradb = Plan(bgrad, &L.wgrad);
      if (L.bgradb)
        NoteOnce(bwd_names, "BGRADB");
      else
        NoteOnce(kernels, "bias-grad");
    }
    if (!L.bgradb) RequirePlanned(Plan(wgrad, &L.wgrad), "weight-gradient");
    if (l == 0) continue;
    // dz_{l-1}^T (in x n) = W^T (in x out: the row-major weight as stored) . dz_l^T (out x n),
    // then the previous layer's ReLU backward and its bias gradient (sum over n).
    const Layer& prev = layers_[l - 1];
    GemmSpec dgrad;
    dgrad.m = L.in, dgrad.n = n, dgrad.k = L.out;
    dgrad.a = params_.get() + L.w, dgrad.lda = L.in;
    dgrad.b = dz_[l].get(), dgrad.ldb = L.out;
    dgrad.c = dz_[l - 1].get(), dgrad.ldc = L.in;
    if (prev.aux) {
      GemmSpec drelu = dgrad;
      drelu.epilogue = CUBLASLT_EPILOGUE_DRELU_BGRAD;
      drelu.aux = mask_[l - 1].get();
      drelu.aux_ld = mask_ld_[l - 1];
      drelu.bias = grads_.get() + prev.b;
      L.drelu = Plan(drelu, &L.dgrad);
    }
    if (L.drelu) {
      NoteOnce(bwd_names, "DRELU_BGRAD");
    } else {
      RequirePlanned(Plan(dgrad, &L.dgrad), "data-gradient");
      NoteOnce(kernels, "ReLU-backward");
      NoteOnce(kernels, "bias-grad");
    }
  }
}

void NativeMlpStep::WarmUpAndCapture() {
  // One eager step first: cuBLASLt and the kernels load their code on first use, which must not
  // happen inside a capture.
  EagerStep();
  cuda::Sync(stream_.get());
  if (shape_.graph) exec_ = cuda::Capture(stream_.get(), [&] { EagerStep(); });
}

std::string NativeMlpStep::Label(const std::vector<std::string>& fwd_names,
                                 const std::vector<std::string>& bwd_names,
                                 const std::vector<std::string>& kernels) const {
  const bool train = shape_.pass == Pass::kTrain;
  std::string fwd_s, bwd_s, kern_s;
  for (const std::string& f : fwd_names) fwd_s += (fwd_s.empty() ? "" : "/") + f;
  for (const std::string& b : bwd_names) bwd_s += (bwd_s.empty() ? "" : "/") + b;
  for (const std::string& k : kernels) kern_s += ", " + k;
  const char* compute = dtype_ == DType::kTF32 ? "32F_FAST_TF32" : "32F";
  return "native mlp " + WidthsText(shape_.widths) + ": cuBLASLt " + fwd_s +
         (train ? (bwd_s.empty() ? "" : ", " + bwd_s) : "") +
         (train ? "; kernels softmax-xent" + kern_s + ", fused SGD" : "") + ", " +
         (shape_.graph ? "graph" : "eager") + ", " + std::string(Name(dtype_)) + " compute " +
         compute +
         "; flops = linear MACs x2 (x3 for a training step); peak_mem_bytes = device "
         "buffers the op allocated";
}

void NativeMlpStep::Forward() {
  for (const Layer& L : layers_) Launch(L.fwd);
}

void NativeMlpStep::Loss() {
  cuda::SoftmaxCrossEntropy(act_.back().get(), labels_.get(), shape_.batch, layers_.back().out,
                            dz_.back().get(), loss_.get(), stream_.get());
}

void NativeMlpStep::Backward() {
  const int64_t n = shape_.batch;
  for (size_t l = layers_.size(); l-- > 0;) {
    const Layer& L = layers_[l];
    Launch(L.wgrad);
    if (l + 1 == layers_.size() && !L.bgradb)
      cuda::ColumnSums(dz_[l].get(), n, L.out, grads_.get() + L.b, stream_.get());
    if (l == 0) break;
    Launch(L.dgrad);
    if (!L.drelu) {
      const Layer& prev = layers_[l - 1];
      cuda::ReluBackward(act_[l - 1].get(), dz_[l - 1].get(), size_t(n * prev.out), stream_.get());
      cuda::ColumnSums(dz_[l - 1].get(), n, prev.out, grads_.get() + prev.b, stream_.get());
    }
  }
}

void NativeMlpStep::Optimize() {
  cuda::SgdMomentum(params_.get(), grads_.get(), momentum_.get(), flat_, float(shape_.lr),
                    float(shape_.momentum), stream_.get());
}

void NativeMlpStep::EagerStep() {
  Forward();
  if (shape_.pass == Pass::kInfer) return;
  Loss();
  Backward();
  Optimize();
}

void NativeMlpStep::Run() {
  if (exec_) {
    DLB_CHECK(cudaGraphLaunch(exec_.get(), stream_.get()));
  } else {
    EagerStep();
  }
}

void NativeMlpStep::Restore() {
  cudaStream_t st = stream_.get();
  DLB_CHECK(cudaMemcpyAsync(params_.get(), seeded_params_.get(), flat_ * sizeof(float),
                            cudaMemcpyDeviceToDevice, st));
  if (shape_.pass == Pass::kTrain) {
    DLB_CHECK(cudaMemsetAsync(momentum_.get(), 0, momentum_.bytes(), st));
    DLB_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), st));
  }
  DLB_CHECK(cudaMemsetAsync(loss_.get(), 0, loss_.bytes(), st));
  cuda::Sync(st);
}

MlpSnapshot NativeMlpStep::Snapshot() const {
  cudaStream_t st = stream_.get();
  const bool train = shape_.pass == Pass::kTrain;
  MlpSnapshot s;
  s.logits = cuda::Download(act_.back().get(), act_.back().size(), DType::kF32, st);
  const std::vector<float> params = cuda::Download(params_.get(), flat_, DType::kF32, st);
  std::vector<float> grads;
  if (train) {
    s.loss = cuda::Download(loss_.get(), 1, DType::kF32, st)[0];
    grads = cuda::Download(grads_.get(), flat_, DType::kF32, st);
  }
  const auto take = [](const std::vector<float>& v, size_t off, int64_t count) {
    return std::vector<float>(v.begin() + off, v.begin() + off + count);
  };
  for (const Layer& L : layers_) {
    s.weight.push_back(take(params, L.w, L.in * L.out));
    s.bias.push_back(take(params, L.b, L.out));
    if (!train) continue;
    s.grad_weight.push_back(take(grads, L.w, L.in * L.out));
    s.grad_bias.push_back(take(grads, L.b, L.out));
  }
  return s;
}

Verdict NativeMlpStep::Verify() {
  const bool train = shape_.pass == Pass::kTrain;
  Restore();
  EagerStep();
  const MlpSnapshot eager1 = Snapshot();
  const MlpBatch batch =
      SeededMlpBatch(seed_, shape_.batch, shape_.widths.front(), shape_.widths.back());
  const MlpStepResult ref = ReferenceMlpStep(shape_, seeded_, batch, nullptr);
  Verdict v =
      CompareMlpStep(eager1, ref, shape_.pass, StepTolerance(dtype_),
                     "one " + std::string(Name(shape_.pass)) + " step of " +
                         WidthsText(shape_.widths) + " at batch " + std::to_string(shape_.batch));
  if (exec_) {
    MlpSnapshot eager2;
    if (train) {
      EagerStep();
      eager2 = Snapshot();
    }
    Restore();
    DLB_CHECK(cudaGraphLaunch(exec_.get(), stream_.get()));
    const MlpSnapshot replay1 = Snapshot();
    std::string wrong;
    const auto check = [&wrong](const char* what, double err) {
      if (!(err <= kReplayTolerance)) wrong += std::string(wrong.empty() ? "" : ", ") + what;
    };
    if (train) {
      DLB_CHECK(cudaGraphLaunch(exec_.get(), stream_.get()));
      const MlpSnapshot replay2 = Snapshot();
      check("replay 1 loss",
            std::abs(replay1.loss - eager1.loss) / std::max(std::abs(eager1.loss), 1e-30));
      check("replay 1 weights", RelL2(replay1.weight, eager1.weight));
      check("replay 1 biases", RelL2(replay1.bias, eager1.bias));
      check("replay 2 weights", RelL2(replay2.weight, eager2.weight));
      check("replay 2 biases", RelL2(replay2.bias, eager2.bias));
      if (!(RelL2(replay2.weight, replay1.weight) > 0))
        wrong += std::string(wrong.empty() ? "" : ", ") + "replay 2 left the weights as they were";
    } else {
      check("replay logits", RelL2({replay1.logits}, {eager1.logits}));
    }
    if (wrong.empty()) {
      v.detail += train ? "; graph replays equal eager steps (loss, weights) and keep updating"
                        : "; a graph replay equals the eager forward";
    } else {
      v.ok = false;
      v.detail += "; graph replay differs from the eager step: " + wrong;
    }
  }
  Restore();
  return v;
}

void NativeMlpStep::MeasurePhases() {
  const bool train = shape_.pass == Pass::kTrain;
  cudaStream_t st = stream_.get();
  const auto ms = [](const cuda::Event& a, const cuda::Event& b) {
    float t = 0;
    DLB_CHECK(cudaEventElapsedTime(&t, a.get(), b.get()));
    return double(t) / 1e3;
  };
  constexpr int kSteps = 5;
  std::vector<double> fwd, bwd, opt;
  for (int i = 0; i < kSteps; ++i) {
    DLB_CHECK(cudaEventRecord(phase_[0].get(), st));
    Forward();
    if (train) Loss();
    DLB_CHECK(cudaEventRecord(phase_[1].get(), st));
    if (train) {
      Backward();
      DLB_CHECK(cudaEventRecord(phase_[2].get(), st));
      Optimize();
      DLB_CHECK(cudaEventRecord(phase_[3].get(), st));
    }
    DLB_CHECK(cudaEventSynchronize(phase_[train ? 3 : 1].get()));
    fwd.push_back(ms(phase_[0], phase_[1]));
    if (train) {
      bwd.push_back(ms(phase_[1], phase_[2]));
      opt.push_back(ms(phase_[2], phase_[3]));
    }
  }
  phases_ = StepPhases::FromSamples(std::move(fwd), std::move(bwd), std::move(opt));
  Restore();
}

std::vector<std::pair<std::string, double>> NativeMlpStep::Counters() const {
  // Device bytes the op allocated (parameters, gradients, momentum, the seeded copy, batch,
  // activations, masks, cuBLASLt workspace), not the device's used memory: what the step needs.
  return phases_.Counters(shape_.pass, allocated_bytes_);
}

Cost NativeMlpStep::cost() const { return MlpStepCost(shape_); }

}  // namespace dlb::cublas
