// LibTorch training steps, the training family's ops (kernels/common/op.h's contract): forward,
// cross-entropy, backward and SGD with momentum on seeded inputs already on the device, or the
// forward alone under inference mode; for the transformers (kernels/torch/transformer.h) seeded
// tokens, the cross-entropy of every position's next token, and AdamW. No LibTorch header here, so
// that the family's registration compiles without it: the ops keep their state behind a pointer.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/common/verdict.h"

namespace dlb::libtorch {

enum class Where { kCpu, kGpu };

// One step (or forward) from the seeded weights and batch, copied to the host. Parameters in the
// model's parameters() order, concatenated.
struct StepResult {
  double loss = 0;
  std::vector<float> grads;   // train: the gradients of the step
  std::vector<float> update;  // train: the parameters after the step minus before it
  std::vector<float> logits;  // infer
  size_t head = 0;            // train: the last `head` values of grads/update are the classifier's
};

// One step of `shape` at its batch: on the CPU in float64 when f64 (the reference), else in the
// configuration cfg and shape ask for (f32, TF32 on the GPU, bf16 autocast; NCHW or NHWC), eager.
StepResult OneStep(const TrainShape& shape, const RunConfig& cfg, Where where, bool f64);

// n eager steps on one fixed seeded batch from the seeded weights; the losses, first to last.
std::vector<double> TrainLosses(const TrainShape& shape, const RunConfig& cfg, Where where,
                                int steps);

// The float64 reference of OneStep, computed once per (model, batch, seed, pass) in a process.
const StepResult& ReferenceStep(const TrainShape& shape, const RunConfig& cfg);

// How far a step may be from its reference: the loss (relative), and the gradients, the update
// and the logits (relative L2 over all parameters).
struct StepTolerances {
  double loss = 0, grads = 0;  // grads: also the update and the logits; +inf: reported, not gated
  double head = 0;             // the classifier's gradients alone; 0: not compared apart
  double update = 0;           // the update's, where it differs from the gradients'; 0: grads
};

// Compares a step with its reference; one verdict with the part nearest its tolerance.
Verdict CompareSteps(const StepResult& got, const StepResult& ref, bool train,
                     const StepTolerances& tol, const std::string& what);

// Relative L2 error ||got - ref|| / ||ref||, accumulated in double; +inf on a size mismatch.
double RelL2(const std::vector<float>& got, const std::vector<float>& ref);

// The tolerance of a step against its float64 reference, by dtype (kernels/torch/step.cpp says
// why).
StepTolerances StepTolerance(const TrainShape& shape, const RunConfig& cfg, Where where);

// The tolerance between two GPU steps that run the same kernels on the same data from the same
// state, in the case's dtype (a graph replay and the eager step; n GPUs and one).
StepTolerances SameStepTolerance(const TrainShape& shape, const RunConfig& cfg);

// Multiply-adds x 2 of one sample's forward through the model's conv and linear layers.
double ForwardFlopsPerSample(const TrainShape& shape);

std::string TorchVersion();
bool TorchHasCuda();
int TorchThreads();
void SetTorchThreads(int threads);  // LibTorch's intra-op threads; <= 0 leaves its default

// The batch the float64 check runs at: at most this many of the case's samples (a float64 step
// of VGG-16 at batch 256 would take minutes; two samples exercise every kernel the case does).
inline constexpr int64_t kVerifyBatch = 2;
// A transformer's float64 check runs its tiny configuration (kernels/torch/transformer.h: the
// same code at 2 layers, d 64, 4 heads, vocab 256) at kVerifyBatch and this sequence length.
inline constexpr int64_t kVerifySeq = 32;
// That shape for a transformer case; dlb::Error for any other model.
TrainShape TinyShape(const TrainShape& shape);

struct Engine;  // the model, its inputs and optimizer state (step.cpp)

// On the CPU: LibTorch's CPU path (oneDNN for convolutions), --dlb_threads threads.
class TorchStepCpu {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "libtorch";
  static Support Supports(const TrainShape& shape, const RunConfig& cfg);
  TorchStepCpu(const TrainShape& shape, const RunConfig& cfg);
  ~TorchStepCpu();
  void Run();
  Verdict Verify();
  void MeasurePhases();
  std::vector<std::pair<std::string, double>> Counters() const;
  Cost cost() const;
  std::string label() const;
  double tokens_per_step() const;  // batch x seq for a transformer, else 0

 private:
  std::unique_ptr<Engine> e_;
};

#ifdef DLBENCH_HAVE_TORCH_CUDA
// On the GPU: cuDNN and cuBLAS through LibTorch, eager from C++ or the whole step in a CUDA graph
// (static inputs, warm-up on a side stream, grads set to None before capture, one replay a Run()).
class TorchStepGpu {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "libtorch";
  static Support Supports(const TrainShape& shape, const RunConfig& cfg);
  TorchStepGpu(const TrainShape& shape, const RunConfig& cfg);
  ~TorchStepGpu();
  void Run();
  Verdict Verify();
  void MeasurePhases();
  std::vector<std::pair<std::string, double>> Counters() const;
  Cost cost() const;
  std::string label() const;
  double tokens_per_step() const;  // batch x seq for a transformer, else 0
  StreamRef stream() const;

  // The static batch every Run() reads (what a graph replay reads): a data pipeline feeding the
  // step copies into these on stream() before Run(). images: batch x C x H x W in the case's
  // layout (NHWC memory for fmt:nhwc) of images_dtype(); labels: batch int64 class indices.
  void* images() const;
  size_t image_bytes() const;
  DType images_dtype() const;
  void* labels() const;
  // The loss of the last step (synchronises): a fed step checks that real images train too.
  double last_loss() const;

 private:
  struct Gpu;  // stream, graph, events (step_cuda.cpp)
  std::unique_ptr<Engine> e_;
  std::unique_ptr<Gpu> g_;
};
#endif

}  // namespace dlb::libtorch
