// The GPU inference step's plans, made when a case is built: each cuBLASLt GEMM's algorithm and
// each weight-streaming product's layout (timed over every layer's weights), and the attention
// (cuDNN's fused SDPA, the suite's kernel or the kernel fused with the rotary append, decode's
// timed after each layer's qkv product).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/cublas/check.h"
#include "kernels/cublas/infer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/gemv.h"

namespace dlb::cublas {

namespace {

// The label's words on the split-key decode attention kernel.
std::string KernelAttentionWords(const cuda::AttnSplit& split) {
  return "a split-key tensor-core kernel, all query heads of a kv head a block (" +
         std::to_string(split.splits) + " chunks of " + std::to_string(split.chunk) + " keys)";
}
// And on the kernel fused with the rotary append.
std::string FusedAttentionWords(const cuda::AttnSplit& split) {
  return "the rotary append and a split-key tensor-core kernel in one programmatic dependent "
         "launch, all query heads of a kv head a block (" +
         std::to_string(split.splits) + " chunks of " + std::to_string(split.chunk) +
         " keys, a thread-block cluster merging them in shared memory)";
}

// Each option's pass, captured in a CUDA graph (null: passed over), timed in interleaved rounds
// rather than one option after another, so that a drift of the card's clock does not decide
// between close options: a warm-up round of one launch each, then three of three, each option's
// best. Milliseconds a pass; 1e300 for a null.
std::vector<double> TimeInterleaved(cudaStream_t st, const std::vector<cuda::GraphExec>& passes) {
  cuda::EventTimer events;
  std::vector<double> best(passes.size(), 1e300);
  for (int round = 0; round < 4; ++round)
    for (size_t c = 0; c < passes.size(); ++c) {
      if (!passes[c]) continue;
      const autotune::Sample t = events.TimeLaunches(
          st, round == 0 ? 1 : 3, [&] { DLB_CHECK(cudaGraphLaunch(passes[c].get(), st)); });
      if (round > 0) best[c] = std::min(best[c], t.ms);
    }
  return best;
}

// NativeInfer::Gemms()' products as the label names them.
constexpr const char* kProductNames[] = {"qkv", "o", "gate/up", "down", "LM head"};

// A product's layout as the label writes it: weight rows a warp / a block / loads in flight, the
// slices a row where it is split over warps, whether a round's loads go out before the round
// before is summed, the registers a thread where the layout sets them, and with e4m3 weights
// whether they are widened to f32 (otherwise summed in f16 pairs: GemvFp8E4m3).
std::string LayoutWords(int layout, bool fp8) {
  const cuda::GemvLayout& l = cuda::kGemvLayouts[layout];
  std::string notes;
  if (fp8 && l.wide != 0) notes = "weights widened to f32";
  if (l.k_split > 1)
    notes += (notes.empty() ? "" : ", ") + std::string("rows in ") + std::to_string(l.k_split) +
             " slices";
  if (l.pipelined != 0) notes += std::string(notes.empty() ? "" : ", ") + "pipelined";
  if (l.max_regs > 0)
    notes += (notes.empty() ? "" : ", ") + std::to_string(l.max_regs) + " registers";
  return std::to_string(l.rows_per_warp) + "/" + std::to_string(l.rows_per_block) + "/" +
         std::to_string(l.loads) + (notes.empty() ? "" : " (" + notes + ")");
}

}  // namespace

std::string NativeInfer::PlanAttention(bool paged, DecodeAttention choice) {
  // Prefill's cuDNN's fused SDPA where it has an engine, decode's the fastest of it,
  // the kernel and the kernel fused with the rotary append, the paged cache's the kernel.
  const LlamaConfig& m = shape_.model;
  std::string attention = KernelAttentionWords(split_);
  if (paged) {
    attention += " (cuDNN's fused SDPA is bound to a contiguous cache here)";
  } else if (shape_.phase == InferPhase::kDecode) {
    attention = PlanDecodeAttention(choice);
  } else {
    AttnShape as;
    as.batch = shape_.batch;
    as.heads = m.heads;
    as.kv_heads = m.kv_heads;
    as.seq = shape_.NewTokens();
    as.head_dim = m.head_dim;
    as.causal = true;
    const std::string why = PlanSdpa(as, true);
    if (why.empty()) {
      attention = sdpa_->label();
      attn_sdpa_ = true;
    } else {
      attention += " (cuDNN's fused SDPA: " + why + ")";
    }
  }
  return attention;
}

std::string NativeInfer::PlanSdpa(const AttnShape& as, bool stats, bool candidates) {
  const Support ok = cudnn::SdpaForward::Supports(as, DType::kBF16);
  if (!ok.ok) return ok.why;
  const LlamaConfig& m = shape_.model;
  const int64_t n = shape_.NewTokens(), QD = m.QDim(), D = m.head_dim, G = m.kv_heads,
                cap = shape_.CacheLen();
  try {
    // q rows of token x head x head_dim (the logical (B, H, n, D) strided); the cache's
    // capacity-strided positions.
    const cudnn::SdpaForward::Strides strides{{n * QD, D, QD, 1}, {G * cap * D, cap * D, D, 1}};
    sdpa_ = std::make_unique<cudnn::SdpaForward>(as, DType::kBF16, strides, stream_.get(), stats,
                                                 candidates);
    for (size_t l = 0; l < layers_.size(); ++l) {
      uint16_t* k = cache_.get() + 2 * int64_t(l) * layer_kv_;
      sdpa_->Bind(q_.get(), k, k + layer_kv_, attn_out_.get());
    }
  } catch (const Unsupported& e) {
    sdpa_.reset();
    return OneLine(e.what());
  }
  return "";
}

std::string NativeInfer::PlanDecodeAttention(DecodeAttention choice) {
  const LlamaConfig& m = shape_.model;
  const int64_t n = shape_.NewTokens();
  const std::string kernel = KernelAttentionWords(split_);
  if (choice == DecodeAttention::kKernel) return kernel;
  const std::string why_not_fused = WhyNotFused();
  if (why_not_fused.empty()) rope_split_ = cuda::ChooseRopeAttnSplit(attn_);
  const std::string fused = FusedAttentionWords(rope_split_);
  if (choice == DecodeAttention::kFused) {
    rope_attn_ = why_not_fused.empty();
    return rope_attn_ ? fused : kernel + " (the fused kernel: " + why_not_fused + ")";
  }
  // The step's one query a sequence over every cached position (its own included): no mask.
  AttnShape as;
  as.batch = shape_.batch;
  as.heads = m.heads;
  as.kv_heads = m.kv_heads;
  as.seq = n;
  as.kv_seq = shape_.FirstPos() + n;
  as.head_dim = m.head_dim;
  as.causal = n > 1;
  const bool fastest = choice == DecodeAttention::kFastest;
  const std::string why = PlanSdpa(as, false, fastest);
  if (!why.empty() && !why_not_fused.empty())
    return kernel + " (cuDNN's fused SDPA: " + why + "; the fused kernel: " + why_not_fused + ")";
  if (!fastest) {
    attn_sdpa_ = why.empty();
    return attn_sdpa_ ? sdpa_->label() : kernel + " (cuDNN's fused SDPA: " + why + ")";
  }
  StreamRef st = stream_.get();

  // The kernel (option 0), each of cuDNN's usable engine configurations (option 1 + i) and the
  // fused kernel (the last), each after its layer's qkv product (the kernel it overlaps in a step)
  // with the rotary append, over every layer's weights and cache in turn (as a step reads them: no
  // layer's still in L2 when its turn comes again), each pass captured in a CUDA graph as the step
  // runs it (cuDNN's execute call costs host time that a graph's replay does not), timed in
  // interleaved rounds (TimeInterleaved); inputs of zeros (each step writes them, none has run
  // yet). A configuration that fails to run is passed over.
  DLB_CHECK(cudaMemsetAsync(h_.get(), 0, h_.bytes(), st));
  if (fused_) DLB_CHECK(cudaMemsetAsync(ss_.get(), 0, ss_.bytes(), st));
  const int configs = why.empty() ? sdpa_->Candidates() : 0;
  const int fused_option = why_not_fused.empty() ? 1 + configs : -1;
  const int options = 1 + configs + (fused_option > 0 ? 1 : 0);
  std::vector<cuda::GraphExec> passes(static_cast<size_t>(options));
  for (int c = 0; c < options; ++c) {
    attn_sdpa_ = c > 0 && c <= configs;
    rope_attn_ = c == fused_option;
    if (attn_sdpa_) sdpa_->Choose(c - 1);
    const auto pass = [&] {
      for (size_t l = 0; l < layers_.size(); ++l) {
        if (fused_)
          FusedProduct(0, l);
        else
          Launch(g_qkv_, layers_[l].wqkv.get(), h_.get(), qkv_.get(), false);
        RopeAndAttention(l);
      }
    };
    try {
      pass();  // eager first: the libraries load their code outside the capture
      cuda::Sync(st);
      passes[size_t(c)] = cuda::Capture(st, pass);
    } catch (const Error&) {
      if (c == 0) throw;  // the suite's own kernel must run
      cudaGetLastError();
    }
  }
  const std::vector<double> best = TimeInterleaved(st, passes);  // ms a pass over the layers
  const auto cudnn_end = best.begin() + 1 + configs;
  const int cudnn_best =
      configs > 0 ? 1 + int(std::min_element(best.begin() + 1, cudnn_end) - (best.begin() + 1))
                  : -1;
  const int usable = int(std::count_if(passes.begin() + 1, passes.begin() + 1 + configs,
                                       [](const cuda::GraphExec& g) { return bool(g); }));
  const int chosen = int(std::min_element(best.begin(), best.end()) - best.begin());
  attn_sdpa_ = chosen > 0 && chosen <= configs;
  rope_attn_ = chosen == fused_option;
  if (usable > 0) sdpa_->Choose(cudnn_best - 1);
  const std::string cudnn = usable > 0 ? sdpa_->label() : "";
  if (!attn_sdpa_) sdpa_.reset();
  const double layers = double(layers_.size());
  const auto us = [&](double ms) { return std::to_string(int(std::lround(1e3 * ms / layers))); };
  std::string times =
      "timed with each layer's qkv product and the rotary append in a CUDA graph when built: ";
  if (usable > 0) {
    // Where the search moved off the heuristics' first configuration (option 1), its time too.
    const std::string of =
        configs == 1 ? "cuDNN's"
        : cudnn_best == 1 || !passes[1]
            ? "the fastest of cuDNN's " + std::to_string(usable) + " engine configurations"
            : "the fastest of cuDNN's " + std::to_string(usable) +
                  " engine configurations (its heuristics' first " + us(best[1]) + " us)";
    times += us(best[size_t(cudnn_best)]) + " us a layer for " + of + ", ";
  } else {
    times += "cuDNN's fused SDPA " + (why.empty() ? std::string("failed to run") : why) + "; ";
  }
  times += us(best[0]) + " us for the kernel's, ";
  times += fused_option > 0 ? us(best[size_t(fused_option)]) + " us for the fused kernel's"
                            : "no fused kernel: " + why_not_fused;
  const std::string& words = attn_sdpa_ ? cudnn : rope_attn_ ? fused : kernel;
  return words + " (the fastest, " + times + ")";
}

std::string NativeInfer::TuneGemms() {
  const std::array<Gemm*, kGemms> gemms = Gemms();
  if (std::all_of(gemms.begin(), gemms.end(), [](const Gemm* g) { return g->gemv; })) return "";
  StreamRef st = stream_.get();
  // Inputs of zeros (each step writes them; none has run yet); the outputs are scratch until the
  // first step writes them.
  DLB_CHECK(cudaMemsetAsync(h_.get(), 0, h_.bytes(), st));
  DLB_CHECK(cudaMemsetAsync(attn_out_.get(), 0, attn_out_.bytes(), st));
  DLB_CHECK(cudaMemsetAsync(act_.get(), 0, act_.bytes(), st));
  DLB_CHECK(cudaMemsetAsync(last_.get(), 0, last_.bytes(), st));
  // One GEMM over every layer's weights in turn, as a step reads them (no layer's still in L2).
  const auto pass = [&](const Gemm& g) {
    if (g.slot == 4) return Launch(g, lm_head_.get(), last_.get(), logits_.get(), false);
    for (const Layer& y : layers_) {
      if (g.slot == 0) Launch(g, y.wqkv.get(), h_.get(), qkv_.get(), false);
      if (g.slot == 1) Launch(g, y.wo.get(), attn_out_.get(), x_.get(), true);
      if (g.slot == 2) Launch(g, y.w13.get(), h_.get(), gu_.get(), false);
      if (g.slot == 3) Launch(g, y.w2.get(), act_.get(), x_.get(), true);
    }
  };
  // Each of the heuristic's first algorithms over one pass: a warm-up pass, then the best of
  // two; one that fails to launch is passed over.
  autotune::Policy policy;
  policy.warmup_runs = 1;
  policy.score = autotune::Policy::Score::kMinOfRuns;
  policy.min_runs = 2;
  policy.max_runs = 2;
  cuda::EventTimer events;
  int offered = 0, moved = 0;
  for (Gemm* g : gemms) {
    if (g->gemv) continue;
    const std::vector<cublasLtMatmulHeuristicResult_t> found =
        HeuristicResults(handle_.get(), g->desc.get(), g->a.get(), g->b.get(), g->c.get(),
                         workspace_.bytes(), kGemmCandidates);
    offered = std::max(offered, int(found.size()));
    if (found.empty()) {
      g->algo = FirstHeuristicAlgo(handle_.get(), g->desc.get(), g->a.get(), g->b.get(), g->c.get(),
                                   workspace_.bytes(), "no cuBLASLt algorithm here");
      continue;
    }
    autotune::Tuner<size_t> tuner(policy, [&](size_t& i, int runs) {
      g->algo = found[i].algo;
      try {
        return events.TimeLaunches(st, runs, [&] { pass(*g); });
      } catch (const Error&) {
        cudaGetLastError();  // the failed launch's error, not the next call's
        throw;
      }
    });
    for (size_t i = 0; i < found.size(); ++i) tuner.Offer(std::to_string(i), i);
    size_t chosen = 0;
    try {
      chosen = tuner.Finish();
    } catch (const Error&) {  // every algorithm failed to launch: the heuristic's first
    }
    g->algo = found[chosen].algo;
    moved += chosen != 0;
  }
  return "; each GEMM's algorithm the fastest of cuBLASLt's first " + std::to_string(offered) +
         ", timed over every layer's weights when built (" + std::to_string(moved) +
         " not the heuristic's first)";
}

std::string NativeInfer::TuneGemv(ProductLayouts layouts) {
  if (!fused_) return "";
  if (layouts == ProductLayouts::kDefault)
    return "; each product at its format's default layout, as told (" +
           LayoutWords(cuda::GemvDefaultLayout(Weights()), fp8_) + ")";
  StreamRef st = stream_.get();
  // Inputs of zeros (each step writes them; none has run yet); the outputs are scratch until the
  // first step writes them.
  DLB_CHECK(cudaMemsetAsync(h_.get(), 0, h_.bytes(), st));
  DLB_CHECK(cudaMemsetAsync(attn_out_.get(), 0, attn_out_.bytes(), st));
  DLB_CHECK(cudaMemsetAsync(act_.get(), 0, act_.bytes(), st));
  DLB_CHECK(cudaMemsetAsync(ss_.get(), 0, ss_.bytes(), st));
  const std::array<Gemm*, kGemms> gemms = Gemms();
  std::string chosen;
  int layouts_timed = 0;
  for (int c = 0; c < cuda::kGemvLayoutCount; ++c)
    layouts_timed += fp8_ || cuda::kGemvLayouts[c].wide == 0 ? 1 : 0;
  for (int slot = 0; slot < kGemms; ++slot) {
    Gemm& g = *gemms[slot];
    // Each layout over every layer's weights in turn (the LM head's once), as a step reads them,
    // with the step's fusion, each pass in a CUDA graph.
    std::vector<cuda::GraphExec> passes(static_cast<size_t>(cuda::kGemvLayoutCount));
    for (int c = 0; c < cuda::kGemvLayoutCount; ++c) {
      if (!fp8_ && cuda::kGemvLayouts[c].wide != 0) continue;  // bf16's twin of another layout
      g.layout = c;
      const auto pass = [&] {
        if (slot == 4) return FusedProduct(slot, layers_.size());
        for (size_t l = 0; l < layers_.size(); ++l) FusedProduct(slot, l);
      };
      pass();  // eager first: the kernel loads outside the capture
      cuda::Sync(st);
      passes[size_t(c)] = cuda::Capture(st, pass);
    }
    const std::vector<double> best = TimeInterleaved(st, passes);
    g.layout = int(std::min_element(best.begin(), best.end()) - best.begin());
    gemv_pass_ms_[size_t(slot)] = best;
    chosen += std::string(slot == 0 ? "" : ", ") + kProductNames[slot] + " " +
              LayoutWords(g.layout, fp8_);
  }
  return "; each product's layout (weight rows a warp / a block / loads in flight a lane; the "
         "slices a row, pipelining and registers a thread where it sets them) the fastest of " +
         std::to_string(layouts_timed) +
         ", timed over every layer's weights when built: " + chosen + " (the format's default " +
         LayoutWords(cuda::GemvDefaultLayout(Weights()), fp8_) + ")";
}

std::string NativeInfer::TuneGemvInStep() {
  if (!fused_ || gemv_pass_ms_[0].empty()) return "";
  StreamRef st = stream_.get();
  const std::array<Gemm*, kGemms> gemms = Gemms();
  std::string kept;
  int moved = 0;
  for (int slot = 0; slot < kGemms; ++slot) {
    const std::vector<double>& ms = gemv_pass_ms_[size_t(slot)];
    std::vector<int> order(ms.size());
    for (size_t c = 0; c < order.size(); ++c) order[c] = int(c);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return ms[size_t(a)] < ms[size_t(b)]; });
    std::vector<int> candidates;
    const auto offer = [&](int c) {
      if (ms[size_t(c)] < 1e299 &&
          std::find(candidates.begin(), candidates.end(), c) == candidates.end())
        candidates.push_back(c);
    };
    for (int i = 0; i < kGemvStepCandidates && i < int(order.size()); ++i) offer(order[size_t(i)]);
    for (int wide = 0; wide < 2 && fp8_; ++wide)  // the fastest of each e4m3 arithmetic
      for (int c : order)
        if ((cuda::kGemvLayouts[c].wide != 0) == (wide != 0) && ms[size_t(c)] < 1e299) {
          offer(c);
          break;
        }
    Gemm& g = *gemms[slot];
    const int before = g.layout;
    std::vector<cuda::GraphExec> passes(candidates.size());
    for (size_t o = 0; o < candidates.size(); ++o) {
      g.layout = candidates[o];
      Step();  // eager first: the kernel loads outside the capture
      cuda::Sync(st);
      passes[o] = cuda::Capture(st, [&] { Step(); });
    }
    const std::vector<double> best = TimeInterleaved(st, passes);
    g.layout = candidates[size_t(std::min_element(best.begin(), best.end()) - best.begin())];
    moved += g.layout != before ? 1 : 0;
    kept += std::string(slot == 0 ? "" : ", ") + kProductNames[slot] + " " +
            LayoutWords(g.layout, fp8_);
  }
  return "; then each product's " + std::to_string(kGemvStepCandidates) + " fastest layouts" +
         (fp8_ ? std::string(" and the fastest of each arithmetic") : "") +
         " timed in the whole step (" + std::to_string(moved) +
         " moved), the fastest kept: " + kept;
}

std::array<int, NativeInfer::kGemms> NativeInfer::Layouts() {
  std::array<int, kGemms> out{};
  const std::array<Gemm*, kGemms> gemms = Gemms();
  for (size_t slot = 0; slot < out.size(); ++slot) out[slot] = gemms[slot]->layout;
  return out;
}

void NativeInfer::SetLayouts(const std::array<int, kGemms>& layouts) {
  const std::array<Gemm*, kGemms> gemms = Gemms();
  for (size_t slot = 0; slot < layouts.size(); ++slot) gemms[slot]->layout = layouts[slot];
}

std::string NativeInfer::ChooseCarveout(ProductLayouts layouts) {
  const bool tune = layouts == ProductLayouts::kFastest;
  if (!fused_ || !rope_attn_) return tune ? TuneGemvInStep() : "";
  StreamRef st = stream_.get();
  const std::array<int, kGemms> chain = Layouts();
  // Each split with its own layouts: a product's fastest layout moves with the split (its blocks
  // start beside the attention's, or after them).
  const std::array<int, 2> options = {-1, cuda::RopeAttentionCarveout(attn_)};
  std::array<std::array<int, kGemms>, 2> kept{};
  std::array<std::string, 2> words;
  std::vector<cuda::GraphExec> passes(options.size());
  for (size_t o = 0; o < options.size(); ++o) {
    carveout_ = options[o];
    SetLayouts(chain);
    if (tune) words[o] = TuneGemvInStep();
    kept[o] = Layouts();
    Step();  // eager first, as the other plans
    cuda::Sync(st);
    passes[o] = cuda::Capture(st, [&] { Step(); });
  }
  const std::vector<double> ms = TimeInterleaved(st, passes);
  const size_t chosen = ms[1] < ms[0] ? 1 : 0;
  carveout_ = options[chosen];
  SetLayouts(kept[chosen]);
  char times[96];
  std::snprintf(times, sizeof times, "%.3f ms a step against %.3f", ms[chosen], ms[1 - chosen]);
  const std::string split = "a shared-memory split of " + std::to_string(options[1]) +
                            "% of the on-chip memory, the smallest of the GPU's that holds an "
                            "attention block";
  return words[chosen] +
         (chosen == 1 ? "; every product and the attention asking for " + split +
                            " (no multiprocessor then drains to change its split between them): " +
                            times + " at the driver's"
                      : "; the driver's shared-memory split kept: " + std::string(times) +
                            " asking every product and the attention for " + split) +
         (tune ? ", each split's layouts chosen in the whole step as above" : "") +
         ", timed in the whole step";
}

}  // namespace dlb::cublas
