#include "kernels/torch/step.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/common/memory.h"
#include "kernels/common/shapes.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/engine.h"

namespace dlb::libtorch {

namespace F = torch::nn::functional;

ModelSpec SpecOf(const TrainShape& shape) {
  return {shape.model, shape.channels, shape.image, shape.classes, shape.widths};
}

void RethrowTorchError(const c10::Error& e) {
  std::string msg = e.what_without_backtrace();
  const size_t nl = msg.find('\n');
  if (nl != std::string::npos) msg.resize(nl);
  const bool oom = msg.find("out of memory") != std::string::npos ||
                   msg.find("OutOfMemory") != std::string::npos ||
                   msg.find("not enough memory") != std::string::npos ||
                   msg.find("can't allocate memory") != std::string::npos;
  throw Error((oom ? "out of memory: LibTorch: " : "LibTorch: ") + msg);
}

// ---- Engine -------------------------------------------------------------------------------

Engine::Engine(const TrainShape& s, const RunConfig& c, Where where, bool use_f64, int gpu)
    : shape(s),
      cfg(c),
      device(where == Where::kGpu ? torch::Device(torch::kCUDA, c10::DeviceIndex(gpu))
                                  : torch::Device(torch::kCPU)),
      f64(use_f64) {
  if (shape.batch <= 0) throw Error("batch must be positive");
  tf = FindTransformer(shape.model);
  if (shape.seq > 0 && !tf) {
    std::string known;
    for (const std::string& n : TransformerNames()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown transformer '" + shape.model + "' (known: " + known + ")");
  }
  if (tf) {
    InitTransformer();
    return;
  }
  model = MakeModel(SpecOf(shape), cfg.seed);
  const torch::ScalarType dt = f64 ? torch::kFloat64 : torch::kFloat32;
  model->to(device, dt);
  if (cfg.layout == Layout::kNHWC && shape.image > 0) {
    // Module::to has no memory-format overload: each 4-d parameter is converted in place.
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  if (train())
    model->train();
  else
    model->eval();

  std::vector<int64_t> sizes = {shape.batch};
  for (int64_t d : SampleShape(SpecOf(shape))) sizes.push_back(d);
  double elements = 1;
  for (int64_t d : sizes) elements *= double(d);
  RequireHostBytes(elements * (f64 ? 12 : 4));  // the seeded f32 batch (and its f64 copy)
  torch::Tensor host = torch::empty(sizes, torch::kFloat32);
  SeedStorage(host.data_ptr<float>(), TensorSeed(cfg.seed, 0), size_t(host.numel()), DType::kF32);
  x = host.to(device, dt);
  if (cfg.layout == Layout::kNHWC && shape.image > 0)
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  const std::vector<int64_t> labels = SeededLabels(cfg.seed, shape.batch, shape.classes);
  y = torch::tensor(labels, torch::kInt64).to(device);

  params = model->parameters();
  torch::NoGradGuard no_grad;
  for (auto& p : params) bufs.push_back(torch::zeros_like(p));
}

void Engine::InitTransformer() {
  if (shape.seq <= 0) throw Error(shape.model + ": the sequence length must be positive");
  if (shape.seq > tf->max_seq)
    throw Error(shape.model + ": sequence " + std::to_string(shape.seq) + " exceeds its " +
                std::to_string(tf->max_seq) + " positions");
  if (shape.classes != tf->vocab)
    throw Error(shape.model + ": classes " + std::to_string(shape.classes) +
                " differ from its vocabulary of " + std::to_string(tf->vocab));
  model = MakeTransformer(*tf, cfg.seed);
  const torch::ScalarType dt = f64 ? torch::kFloat64 : torch::kFloat32;
  model->to(device, dt);
  if (train())
    model->train();
  else
    model->eval();
  const torch::Tensor tokens = SeededTokens(cfg.seed, shape.batch, shape.seq, tf->vocab);
  x = tokens.narrow(1, 0, shape.seq).contiguous().to(device);
  y = tokens.narrow(1, 1, shape.seq).contiguous().to(device);
  params = model->parameters();
  const AdamWSettings a;
  compat::AdamWGroup decay, no_decay;
  decay.weight_decay = a.weight_decay;
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    compat::AdamWGroup& g = p.dim() >= 2 ? decay : no_decay;
    g.params.push_back(p);
    g.exp_avg.push_back(torch::zeros_like(p));
    g.exp_avg_sq.push_back(torch::zeros_like(p));
    g.steps.push_back(
        torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device)));
  }
  adamw = {decay, no_decay};
}

void Engine::SetMath() const {
  if (device.is_cuda()) {
    auto& ctx = at::globalContext();
    const bool tf32 = cfg.dtype == DType::kTF32;
    ctx.setAllowTF32CuBLAS(tf32);
    ctx.setAllowTF32CuDNN(tf32);
    // As PyTorch users train, cudnn.benchmark = True; algo "heuristic": cuDNN's first choice.
    ctx.setBenchmarkCuDNN(cfg.algo != Algo::kHeuristic);
  }
}

void Engine::Forward() {
  if (!train()) {
    c10::InferenceMode guard;
    compat::Autocast ac(shape.amp && !f64, device.type());
    logits = model->forward(x);
    return;
  }
  compat::Autocast ac(shape.amp && !f64, device.type());
  loss = Loss(model->forward(x), y);
}

torch::Tensor Engine::Loss(const torch::Tensor& out, const torch::Tensor& target) const {
  return tf ? F::cross_entropy(out.reshape({-1, out.size(-1)}), target.reshape({-1}))
            : F::cross_entropy(out, target);
}

void Engine::Backward() {
  for (auto& p : params) p.mutable_grad().reset();  // zero_grad(set_to_none=True)
  loss.backward();
}

void Engine::Optimize() {
  if (tf) {
    const AdamWSettings a;
    for (compat::AdamWGroup& g : adamw) {
      std::vector<torch::Tensor> grads;
      grads.reserve(g.params.size());
      for (auto& p : g.params) grads.push_back(p.grad());
      compat::AdamWStep(g, grads, a.lr, a.beta1, a.beta2, a.eps);
    }
    return;
  }
  std::vector<torch::Tensor> grads;
  grads.reserve(params.size());
  for (auto& p : params) grads.push_back(p.grad());
  compat::SgdStep(params, grads, bufs, shape.lr, shape.momentum);
}

void Engine::Step() {
  Forward();
  if (train()) {
    Backward();
    Optimize();
  }
}

Engine::State Engine::Save() const {
  torch::NoGradGuard no_grad;
  State s;
  for (const auto& p : params) s.params.push_back(p.detach().clone());
  for (const auto& b : bufs) s.bufs.push_back(b.clone());
  for (const auto& b : model->buffers()) s.buffers.push_back(b.clone());
  for (const auto& g : adamw)
    for (const auto* list : {&g.exp_avg, &g.exp_avg_sq, &g.steps})
      for (const auto& t : *list) s.adamw.push_back(t.clone());
  return s;
}

void Engine::Restore(const State& s) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(s.params[i]);
  for (size_t i = 0; i < bufs.size(); ++i) bufs[i].copy_(s.bufs[i]);
  auto buffers = model->buffers();
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(s.buffers[i]);
  size_t k = 0;
  for (auto& g : adamw)
    for (auto* list : {&g.exp_avg, &g.exp_avg_sq, &g.steps})
      for (auto& t : *list) t.copy_(s.adamw[k++]);
}

namespace {
std::vector<float> Flat(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : ts)
    parts.push_back(t.detach().reshape({-1}).to(torch::kCPU, torch::kFloat32));
  if (parts.empty()) return {};
  torch::Tensor all = torch::cat(parts).contiguous();
  return std::vector<float>(all.data_ptr<float>(), all.data_ptr<float>() + all.numel());
}
}  // namespace

StepResult Engine::Result(const State& before) const {
  torch::NoGradGuard no_grad;
  StepResult r;
  if (!train()) {
    r.logits = Flat({logits});
    return r;
  }
  r.loss = loss.item<double>();
  std::vector<torch::Tensor> grads, update;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& g = params[i].grad();
    grads.push_back(g.defined() ? g : torch::zeros_like(params[i]));
    update.push_back(params[i].detach() - before.params[i]);
  }
  r.grads = Flat(grads);
  r.update = Flat(update);
  // Every model ends in its classifier, a Linear: parameters() ends with its weight and bias.
  const size_t n = params.size();
  if (n >= 2 && params[n - 2].dim() == 2 && params[n - 1].dim() == 1)
    r.head = size_t(params[n - 2].numel() + params[n - 1].numel());
  return r;
}

// ---- Checks -------------------------------------------------------------------------------

StepResult OneStep(const TrainShape& shape, const RunConfig& cfg, Where where, bool f64) {
  return Guarded([&] {
    TrainShape s = shape;
    s.graph = false;
    RunConfig c = cfg;
    if (f64) c.layout = Layout::kNCHW;
    Engine e(s, c, f64 ? Where::kCpu : where, f64);
    const Engine::State before = e.Save();
    e.SetMath();
    e.Step();
    return e.Result(before);
  });
}

std::vector<double> TrainLosses(const TrainShape& shape, const RunConfig& cfg, Where where,
                                int steps) {
  return Guarded([&] {
    TrainShape s = shape;
    s.graph = false;
    s.pass = Pass::kTrain;
    Engine e(s, cfg, where, false);
    std::vector<double> losses;
    for (int i = 0; i < steps; ++i) {
      e.SetMath();
      e.Step();
      losses.push_back(e.loss.item<double>());
    }
    return losses;
  });
}

const StepResult& ReferenceStep(const TrainShape& shape, const RunConfig& cfg) {
  static std::mutex mu;
  static std::map<std::string, StepResult> cache;
  std::ostringstream key;
  key << shape.model << '|' << shape.image << '|' << shape.classes << '|' << shape.batch << '|'
      << shape.seq << '|' << cfg.seed << '|' << Name(shape.pass) << '|' << shape.lr << '|'
      << shape.momentum;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key.str());
  if (it == cache.end()) {
    RunConfig c = cfg;
    c.dtype = DType::kF32;
    TrainShape s = shape;
    s.amp = false;
    it = cache.emplace(key.str(), OneStep(s, c, Where::kCpu, true)).first;
  }
  return it->second;
}

double RelL2(const std::vector<float>& got, const std::vector<float>& ref) {
  double err2 = 0, ref2 = 0;
  return AddL2(got, ref, &err2, &ref2) ? RelL2From(err2, ref2) : INFINITY;
}

Verdict CompareSteps(const StepResult& got, const StepResult& ref, bool train,
                     const StepTolerances& tol, const std::string& what) {
  struct Part {
    const char* name;
    double err;
    size_t n;
    double tolerance;
  };
  std::vector<Part> parts;
  if (train) {
    const double loss_err = std::isfinite(got.loss) ? std::fabs(got.loss - ref.loss) /
                                                          std::max(1e-30, std::fabs(ref.loss))
                                                    : INFINITY;
    parts.push_back({"loss", loss_err, 1, tol.loss});
    parts.push_back({"grads", RelL2(got.grads, ref.grads), ref.grads.size(), tol.grads});
    parts.push_back({"update", RelL2(got.update, ref.update), ref.update.size(),
                     tol.update > 0 ? tol.update : tol.grads});
    if (tol.head > 0) {
      const bool same = got.head == ref.head && ref.head > 0 && ref.head <= ref.grads.size() &&
                        got.grads.size() == ref.grads.size();
      const auto tail = [](const std::vector<float>& v, size_t n) {
        return std::vector<float>(v.end() - std::ptrdiff_t(n), v.end());
      };
      parts.push_back(
          {"classifier grads",
           same ? RelL2(tail(got.grads, ref.head), tail(ref.grads, ref.head)) : INFINITY, ref.head,
           tol.head});
    }
  } else {
    parts.push_back({"logits", RelL2(got.logits, ref.logits), ref.logits.size(), tol.grads});
  }
  Verdict v;
  v.metric = "rel_l2";
  std::ostringstream d;
  d << what << ":";
  // The verdict's error and tolerance are those of the part nearest its tolerance. A part whose
  // error is not finite (NaN, or a size mismatch) fails even where its tolerance is +inf.
  const auto ratio = [](const Part& p) {
    return std::isfinite(p.err) ? p.err / p.tolerance : INFINITY;
  };
  const Part* worst = &parts.front();
  bool ok = true;
  for (const Part& p : parts) {
    char buf[80];
    std::snprintf(buf, sizeof buf, " %s %.2e (tol %.0e)", p.name, p.err, p.tolerance);
    d << buf;
    v.checked += p.n;
    ok = ok && std::isfinite(p.err) && p.err <= p.tolerance;
    if (ratio(p) > ratio(*worst)) worst = &p;
  }
  v.of = v.checked;
  v.error = worst->err;
  v.tolerance = worst->tolerance;
  v.ok = ok;
  v.disposition = Disposition::kVerified;
  v.detail = d.str();
  return v;
}

// Against a float64 step of the same seeded weights and batch, at batch 2 (kernels/torch/step.h):
//   loss: the forward's accuracy. f32 rounds 24-bit mantissas (observed <= 2e-7): 1e-4; TF32
//     products keep 10 bits (2^-11 ~ 5e-4 each, averaging out over a layer): 2e-3; bf16 autocast
//     keeps 8 (observed 2e-5 .. 5e-4): 2e-2.
//   gradients and update: a ReLU zero crossing or a max-pool tie that rounding flips re-routes
//     a unit's gradient, and BatchNorm's backward over 2 samples subtracts nearly equal numbers.
//     f32 on the GPU vs the CPU showed 1e-7 .. 2.3e-2 (ResNet-50, max-pool ties): 5e-2. TF32:
//     9.8e-2 (CIFAR ResNet-18): 0.25. bf16 autocast at batch 2 is far from float64 in every
//     BatchNorm network (0.35 CIFAR ResNet-18, 0.79 DenseNet-121, 1.34 ResNet-50: as far as two
//     unrelated vectors), so its whole gradient is reported, not gated; what is gated is the
//     loss and the classifier's gradients, one matmul from the loss, whose error is the
//     forward's bf16 rounding: measured 2.2e-3 (VGG-16) .. 9.1e-2 (ResNet-50, 2048 features
//     through 50 bf16 layers): 0.25. The graph check and the learning tests carry the rest.
//   A wrong kernel shows loss errors of order 1e-1 and gradient errors of order 1 and above.
// Same kernels on the same data (a graph replay against the eager step, a data-parallel step
// against one GPU's): only cuDNN's non-deterministic reductions (atomics in weight-gradient
// kernels) and the order of sums separate them, a few ulps of the accumulation type (observed
// 5e-6 in f32), more where bf16 rounds the reordered sums.
StepTolerances SameStepTolerance(const TrainShape& shape, const RunConfig& cfg) {
  if (shape.amp) return {1e-3, 0.1};
  if (cfg.dtype == DType::kTF32) return {1e-4, 2e-2};
  return {1e-5, 1e-3};
}

// A transformer's step against float64, at its tiny configuration (TinyShape), relative L2:
//   loss: f32 observed 9e-8 .. 2e-7: 1e-5; bf16 autocast (CPU autocast, GPT) 4e-6, the loss
//     averaging the rounding out: 2e-2, as the CNN steps.
//   gradients: f32 3.4e-7 .. 3.6e-7: 1e-4; bf16 2.5e-2 (every matmul's inputs rounded to 8
//     bits): 0.1.
//   update: AdamW's first update is lr * g / (|g| + eps) (+ the weight decay lr * wd * p), nearly
//     lr * sign(g): an element whose gradient rounding moves across zero, or near eps, flips or
//     shrinks, so the update is further from float64 than the gradients are: f32 2.7e-5 .. 6.3e-5:
//     1e-3; bf16 0.17: 0.5. Unrelated updates (a wrong kernel) are ~1.4 apart, random signs.
StepTolerances TransformerTolerance(const TrainShape& shape) {
  if (shape.amp) return {2e-2, 0.1, 0, 0.5};
  return {1e-5, 1e-4, 0, 1e-3};
}

TrainShape TinyShape(const TrainShape& shape) {
  const TransformerConfig* c = FindTransformer(shape.model);
  if (!c) throw Error("'" + shape.model + "' is not a transformer");
  const TransformerConfig& t = TinyOf(*c);
  TrainShape s = shape;
  s.model = t.name;
  s.classes = t.vocab;
  s.seq = kVerifySeq;
  s.batch = kVerifyBatch;
  s.graph = false;
  return s;
}

StepTolerances StepTolerance(const TrainShape& shape, const RunConfig& cfg, Where where) {
  if (shape.seq > 0) return TransformerTolerance(shape);
  if (shape.amp) return {2e-2, INFINITY, 0.25};
  if (where == Where::kGpu && cfg.dtype == DType::kTF32) return {2e-3, 0.25, 0.25};
  return {1e-4, 5e-2, 5e-2};
}

double ForwardFlopsPerSample(const TrainShape& shape) {
  static std::mutex mu;
  static std::map<std::string, double> cache;
  std::ostringstream key;
  key << shape.model << '|' << shape.image << '|' << shape.classes;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key.str());
  if (it != cache.end()) return it->second;
  double flops = Guarded([&] {
    std::shared_ptr<Net> m = MakeModel(SpecOf(shape), 1);
    m->eval();
    std::vector<int64_t> sizes = {1};
    for (int64_t d : SampleShape(SpecOf(shape))) sizes.push_back(d);
    torch::NoGradGuard no_grad;
    LayerTrace trace;
    m->forward(torch::zeros(sizes));
    double f = 0;
    for (const LayerRecord& r : trace.layers()) {
      if (r.conv) {
        // The multiply-adds done: taps on the zero padding left out (ConvShape::Flops()).
        ConvShape s;
        s.c = r.c, s.h = r.h, s.w = r.w, s.k = r.k, s.r = r.r, s.s = r.s;
        s.stride_h = s.stride_w = r.stride, s.pad_h = s.pad_w = r.pad;
        s.dil_h = s.dil_w = r.dilation, s.groups = r.groups;
        f += s.Flops();
      } else {
        f += 2.0 * double(r.in) * double(r.out);
      }
    }
    return f;
  });
  cache[key.str()] = flops;
  return flops;
}

std::string TorchVersion() { return compat::Version(); }
bool TorchHasCuda() { return torch::cuda::is_available(); }
int TorchThreads() { return at::get_num_threads(); }
void SetTorchThreads(int threads) {
  if (threads > 0) at::set_num_threads(threads);
}

Verdict VerifyAgainstReference(Engine& e, Where where, double* first_loss) {
  TrainShape vs = e.shape;
  vs.graph = false;
  std::string what = "one step at bs " + std::to_string(vs.batch) + " vs float64 CPU";
  if (e.tf) {
    vs = TinyShape(e.shape);
    what = "one step of " + vs.model + " at bs " + std::to_string(vs.batch) + " seq " +
           std::to_string(vs.seq) + " vs float64 CPU";
  } else if (vs.image > 0) {
    vs.batch = std::min(vs.batch, kVerifyBatch);
    what = "one step at bs " + std::to_string(vs.batch) + " vs float64 CPU";
  }
  const StepResult& ref = ReferenceStep(vs, e.cfg);
  const StepResult got = OneStep(vs, e.cfg, where, false);
  Verdict v = CompareSteps(got, ref, e.train(), StepTolerance(vs, e.cfg, where), what);
  if (!v.ok) return v;
  // The case's own first step, at its own batch.
  const Engine::State s = e.Save();
  e.SetMath();
  e.Step();
  const double loss = e.train() ? e.loss.item<double>() : e.logits.abs().max().item<double>();
  e.Restore(s);
  if (first_loss) *first_loss = loss;
  if (!std::isfinite(loss)) {
    v.ok = false;
    v.detail += "; the first step at bs " + std::to_string(e.shape.batch) + " is not finite";
  } else if (e.tf) {
    // An untrained model predicts nearly uniformly: ln(vocab), plus half the variance of its
    // logits (std ~0.5 at d 768 with 0.02-std embeddings: ~0.15). 10% leaves room for that and
    // catches a broken head or a loss over the wrong axis (orders of magnitude off).
    const double uniform = std::log(double(e.tf->vocab));
    char buf[96];
    std::snprintf(buf, sizeof buf, "; first step at bs %lld: loss %.3f (ln vocab %.3f)",
                  static_cast<long long>(e.shape.batch), loss, uniform);
    v.detail += buf;
    if (std::fabs(loss - uniform) > 0.1 * uniform) {
      v.ok = false;
      v.detail += ", more than 10% away";
    }
  }
  return v;
}

// ---- CPU op -------------------------------------------------------------------------------

Support TransformerSupport(const TrainShape& shape) {
  const TransformerConfig* c = FindTransformer(shape.model);
  if (!c) return Support::Yes();
  if (shape.pass != Pass::kTrain) return Support::No("the transformers are timed training only");
  if (shape.seq <= 0 || shape.seq > c->max_seq)
    return Support::No(shape.model + " takes sequences of 1.." + std::to_string(c->max_seq));
  return Support::Yes();
}

Support TorchStepCpu::Supports(const TrainShape& shape, const RunConfig& cfg) {
  if (shape.batch <= 0) return Support::No("batch must be positive");
  if (Support t = TransformerSupport(shape); !t.ok) return t;
  if (shape.graph) return Support::No("CUDA graphs are a GPU feature");
  if (shape.amp) return Support::No("bf16 autocast is timed on the GPU only");
  if (cfg.dtype != DType::kF32) return Support::No("the CPU steps run in f32");
  return Support::Yes();
}

TorchStepCpu::TorchStepCpu(const TrainShape& shape, const RunConfig& cfg) {
  RequireSupported(Supports(shape, cfg));
  ResetPeakRss();
  e_ = Guarded([&] { return std::make_unique<Engine>(shape, cfg, Where::kCpu, false); });
}

TorchStepCpu::~TorchStepCpu() = default;

void TorchStepCpu::Run() {
  Guarded([&] { e_->Step(); });
}

Verdict TorchStepCpu::Verify() {
  return Guarded([&] { return VerifyAgainstReference(*e_, Where::kCpu, nullptr); });
}

void TorchStepCpu::MeasurePhases() {
  ResetPeakRss();  // the peak of the phase steps, not of the float64 verification before them
  Guarded([&] {
    // A transformer step on the CPU takes seconds (LibTorch's BLAS): 3 samples, not 7.
    MeasureEnginePhases(
        *e_, e_->tf ? 3 : 7,
        [] {
          return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
              .count();
        },
        [] {});
  });
}

std::vector<std::pair<std::string, double>> TorchStepCpu::Counters() const {
  auto out = e_->phases.Counters(e_->shape.pass);
  const double peak = PeakRssBytes();
  if (peak > 0) out.push_back({"peak_mem_bytes", peak});
  return out;
}

Cost StepCost(const Engine& e) {
  Cost c;
  c.items = double(e.shape.batch);
  if (e.tf)
    c.flops = TrainFlopsPerToken(*e.tf, e.shape.seq) * double(e.shape.batch * e.shape.seq);
  else
    c.flops = ForwardFlopsPerSample(e.shape) * double(e.shape.batch) * (e.train() ? 3 : 1);
  c.bytes = StepBytes(ParamBytes(e), BatchBytes(e), e.shape.pass, e.tf != nullptr);
  return c;
}

double ParamBytes(const Engine& e) {
  double bytes = 0;
  for (const torch::Tensor& p : e.params) bytes += double(p.numel()) * double(p.element_size());
  return bytes;
}

double BatchBytes(const Engine& e) {
  double bytes = 0;
  for (const torch::Tensor* t : {&e.x, &e.y})
    if (t->defined()) bytes += double(t->numel()) * double(t->element_size());
  return bytes;
}

double TokensPerStep(const Engine& e) { return e.tf ? double(e.shape.batch * e.shape.seq) : 0.0; }

std::string TransformerFlopsNote(const Engine& e) {
  const TransformerConfig& c = *e.tf;
  std::ostringstream o;
  o << "flops = (6 N + 12 L H Q T) a token, nanoGPT's estimate_mfu: N = " << MatmulParamCount(c)
    << " parameters less position embeddings, L " << c.layers << ", H " << c.heads << ", Q "
    << c.d / c.heads << ", T " << e.shape.seq << "; mfu = flop_per_s / the dtype's peak";
  return o.str();
}

Cost TorchStepCpu::cost() const { return StepCost(*e_); }
double TorchStepCpu::tokens_per_step() const { return TokensPerStep(*e_); }

std::string TorchStepCpu::label() const {
  std::ostringstream o;
  if (e_->tf) {
    o << "LibTorch " << TorchVersion() << " CPU, " << at::get_num_threads() << " threads, "
      << compat::AdamWName(false) << ", " << (compat::kTorch2 ? "SDPA" : "softmax(QK^T)V") << "; "
      << TransformerFlopsNote(*e_) << "; peak_mem_bytes = peak RSS";
    return o.str();
  }
  o << "LibTorch " << TorchVersion() << " CPU, " << at::get_num_threads() << " threads, "
    << (e_->train() ? compat::SgdName(false) : "inference mode")
    << "; flops = (conv MACs off the padding + linear MACs) x2 (x3 for a training step); "
       "peak_mem_bytes = peak RSS";
  return o.str();
}

}  // namespace dlb::libtorch
