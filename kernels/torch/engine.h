// The state behind a LibTorch step op (kernels/torch/step.h): the model, its seeded inputs, the
// momentum buffers, and the three phases of a step. Shared by the CPU and GPU ops.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/models.h"
#include "kernels/torch/step.h"
#include "kernels/torch/transformer.h"

namespace dlb::libtorch {

ModelSpec SpecOf(const TrainShape& shape);

// c10::Error (LibTorch's) as dlb::Error with its first line: "out of memory: ..." when the
// allocator ran out, so the harness reports it as such and the sweep goes on.
[[noreturn]] void RethrowTorchError(const c10::Error& e);
template <class Fn>
auto Guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    RethrowTorchError(e);
  }
}

struct Engine {
  // A copy of everything a step changes: parameters, momentum buffers, BatchNorm statistics,
  // AdamW's moments and step counts.
  struct State {
    std::vector<torch::Tensor> params, bufs, buffers, adamw;
  };

  // On the GPU: CUDA device `device` (a data-parallel step has one Engine per GPU).
  Engine(const TrainShape& shape, const RunConfig& cfg, Where where, bool f64, int device = 0);

  bool train() const { return shape.pass == Pass::kTrain; }
  // The process-wide math settings this case wants (TF32 on or off, cuDNN autotuning): set
  // before every eager step and before a capture, since other cases change them.
  void SetMath() const;
  void Forward();  // train: loss; infer: logits (under inference mode)
  // The training loss of the model's output for `target`: cross-entropy over the classes, a
  // transformer's over every position's next token.
  torch::Tensor Loss(const torch::Tensor& out, const torch::Tensor& target) const;
  void Backward();  // grads set to None first, then loss.backward()
  void Optimize();  // the SGD step; a transformer's AdamW step
  void Step();      // Forward, then Backward and Optimize when training

  void InitTransformer();  // the constructor's part for a transformer
  State Save() const;
  void Restore(const State& s);
  // The result of the last step, measured against the state before it.
  StepResult Result(const State& before) const;

  TrainShape shape;
  RunConfig cfg;
  torch::Device device;
  bool f64;
  std::shared_ptr<Net> model;
  std::vector<torch::Tensor> params, bufs;
  // A transformer's configuration (nullptr for the other models) and its AdamW groups, nanoGPT's
  // configure_optimizers: weight decay on the 2-d parameters, none on the rest.
  const TransformerConfig* tf = nullptr;
  std::vector<compat::AdamWGroup> adamw;
  torch::Tensor x, y, loss, logits;
  StepPhases phases;  // MeasurePhases(); not measured until then
};

// What a transformer case cannot run (pass infer, a sequence beyond its positions); Yes for
// every other model.
Support TransformerSupport(const TrainShape& shape);
// The step's cost: images or sequences, and (conv MACs off the padding + linear MACs) x 2 (x 3
// training), or for a transformer nanoGPT's 6 N + 12 L H Q T FLOPs a token x its tokens.
// Bytes: StepBytes (kernels/common/train.h) over the parameters and the batch (SGD with momentum;
// a transformer's AdamW).
Cost StepCost(const Engine& e);
double ParamBytes(const Engine& e);     // the parameters as stored (f32, also under autocast)
double BatchBytes(const Engine& e);     // the step's inputs and labels
double TokensPerStep(const Engine& e);  // batch x seq for a transformer, else 0
std::string TransformerFlopsNote(const Engine& e);  // the FLOP and MFU formula, for the label

// The checks every step op runs before it is timed: one step at kVerifyBatch (the MLP: its own
// batch) against the float64 CPU reference, and the op's own first step at its batch giving a
// finite loss. `first_loss` is that loss.
Verdict VerifyAgainstReference(Engine& e, Where where, double* first_loss);

// Seconds of forward, backward and optimizer of one eager step (median of `samples`), measured
// by `now()` readings after each phase; `sync` waits for the device.
template <class Clock, class Sync>
void MeasureEnginePhases(Engine& e, int samples, Clock now, Sync sync) {
  const Engine::State s = e.Save();
  std::vector<double> f, b, o;
  for (int i = 0; i < samples; ++i) {
    e.SetMath();
    sync();
    const auto t0 = now();
    e.Forward();
    sync();
    const auto t1 = now();
    if (e.train()) {
      e.Backward();
      sync();
    }
    const auto t2 = now();
    if (e.train()) {
      e.Optimize();
      sync();
    }
    const auto t3 = now();
    f.push_back(t1 - t0);
    b.push_back(t2 - t1);
    o.push_back(t3 - t2);
  }
  e.phases = StepPhases::FromSamples(std::move(f), std::move(b), std::move(o));
  e.Restore(s);
}

}  // namespace dlb::libtorch
