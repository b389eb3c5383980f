// The training family's tier matrix as data: the batches, configurations, sequence lengths,
// models and GPU counts each tier times. Where a rule is per model row (224-px models train at
// smaller batches, GPT and BERT take different batches), the matrix holds each list and the
// family's code picks by the row's property. --dlb_batch_sizes replaces the batch lists read
// through BatchSizes (not the loader-fed and data-parallel steps' fixed batches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/train.h"

namespace dlb::train {

// One configuration of a step: dtype (amp: bf16 autocast), layout, pass, graph.
struct Config {
  DType dtype = DType::kF32;
  bool amp = false;
  Layout layout = Layout::kNCHW;
  Pass pass = Pass::kTrain;
  bool graph = false;
};

namespace matrix {

// Every dtype x layout x pass x graph, in that order of nesting; bf16 is amp (autocast).
inline std::vector<Config> Every(const std::vector<DType>& dtypes,
                                 const std::vector<Layout>& layouts,
                                 const std::vector<Pass>& passes, const std::vector<bool>& graphs) {
  std::vector<Config> out;
  for (DType dt : dtypes)
    for (Layout l : layouts)
      for (Pass p : passes)
        for (bool g : graphs) out.push_back({dt, dt == DType::kBF16, l, p, g});
  return out;
}

// ---- The CNN and MLP steps (train_models.csv) ----

inline const std::vector<int> kEveryBatch = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
// Batches on the GPU: smoke 2; default 16..256, 16..128 for the 224-px models; full 1..512.
inline const PerTier<std::vector<int>> kGpuBatches{{2}, {16, 32, 64, 128, 256}, kEveryBatch};
inline const PerTier<std::vector<int>> kGpuBatches224{{2}, {16, 32, 64, 128}, kEveryBatch};
// Batches on the CPU: what a CPU trains with, 16, 32, 64 by default (16 and 32 for the 224-px
// models); the MLP, cheap at any batch, takes the GPU's.
inline const PerTier<std::vector<int>> kCpuImageBatches{{2}, {16, 32, 64}, kEveryBatch};
inline const PerTier<std::vector<int>> kCpuImageBatches224{{2}, {16, 32}, kEveryBatch};

// Configurations:
//   CPU  smoke/default: f32 NCHW train and infer; full: also NHWC.
//   GPU  smoke: f32 NCHW train eager and graph, amp_bf16 NHWC train graph;
//        default: {f32 NCHW, amp_bf16 NHWC} train x {eager, graph}, and infer in a graph;
//        full: {f32, tf32, amp_bf16} x {NCHW, NHWC} x {train, infer} x {eager, graph}.
inline const PerTier<std::vector<Config>> kCpuConfigs{
    Every({DType::kF32}, {Layout::kNCHW}, {Pass::kTrain, Pass::kInfer}, {false}),
    Every({DType::kF32}, {Layout::kNCHW}, {Pass::kTrain, Pass::kInfer}, {false}),
    Every({DType::kF32}, {Layout::kNCHW, Layout::kNHWC}, {Pass::kTrain, Pass::kInfer}, {false}),
};
inline const PerTier<std::vector<Config>> kGpuConfigs{
    {
        {DType::kF32, false, Layout::kNCHW, Pass::kTrain, false},
        {DType::kF32, false, Layout::kNCHW, Pass::kTrain, true},
        {DType::kBF16, true, Layout::kNHWC, Pass::kTrain, true},
    },
    {
        {DType::kF32, false, Layout::kNCHW, Pass::kTrain, false},
        {DType::kBF16, true, Layout::kNHWC, Pass::kTrain, false},
        {DType::kF32, false, Layout::kNCHW, Pass::kTrain, true},
        {DType::kBF16, true, Layout::kNHWC, Pass::kTrain, true},
        {DType::kF32, false, Layout::kNCHW, Pass::kInfer, true},
        {DType::kBF16, true, Layout::kNHWC, Pass::kInfer, true},
    },
    Every({DType::kF32, DType::kTF32, DType::kBF16}, {Layout::kNCHW, Layout::kNHWC},
          {Pass::kTrain, Pass::kInfer}, {false, true}),
};

// ---- The transformers (train_transformers.csv) ----
// The CPU's matmuls go through LibTorch's BLAS, on Debian's build the reference BLAS (a GPT-2
// small step is ~0.3 s a token and ~1 s of AdamW on 2 cores), so the CPU's short tiers take the
// tiny configuration (gpt2_tiny) and GPT-2 small at a few tokens. A sequence length of
// kOwnSeq is the model's own (the CSV's seq).
inline constexpr int64_t kOwnSeq = 0;

// CPU, f32: the tiny GPT bs 2 at seq 32 (smoke), bs 2, 8 at seq 64 (default), bs 1..8 at seq 64
// (full).
inline const PerTier<std::vector<int>> kCpuTinyBatches{{2}, {2, 8}, {1, 2, 4, 8}};
inline const PerTier<std::vector<int64_t>> kCpuTinySeqs{{32}, {64}, {64}};
// CPU, the others: none at smoke; GPT-2 bs 1 at seq 8 by default (BERT none); full bs 1..8 at
// seq 128 and the model's own.
inline const PerTier<std::vector<int>> kCpuBatches{{1}, {1}, {1, 2, 4, 8}};
inline const PerTier<std::vector<int64_t>> kCpuGptSeqs{{}, {8}, {128, kOwnSeq}};
inline const PerTier<std::vector<int64_t>> kCpuOtherSeqs{{}, {}, {128, kOwnSeq}};

// GPU, amp_bf16 (no tiny model): smoke bs 2 at seq 128, eager and graphed; default GPT-2 bs 8, 16
// eager and graphed, BERT bs 16, 32 graphed; full GPT-2 bs 4..32, BERT 8..64, eager and graphed,
// at the model's own sequence length.
inline const PerTier<std::vector<int>> kGpuGptBatches{{2}, {8, 16}, {4, 8, 16, 32}};
inline const PerTier<std::vector<int>> kGpuOtherBatches{{2}, {16, 32}, {8, 16, 32, 64}};
inline const PerTier<std::vector<bool>> kGpuGptGraphs{{false, true}, {false, true}, {false, true}};
inline const PerTier<std::vector<bool>> kGpuOtherGraphs{{false, true}, {true}, {false, true}};
inline const PerTier<int64_t> kGpuSeq{128, kOwnSeq, kOwnSeq};

// ---- The step fed by an input pipeline (kernels/torch/loader_fed_step.h) ----
// None at smoke; default ResNet-18 at 224, fed by the CPU pipeline on every core and by nvJPEG;
// full: also the cat/dog CNN at 128, and 1, 2, 4, ... workers. Batches per model row.
inline const PerTier<std::vector<std::string>> kLoaderFedModels{
    {}, {"resnet18"}, {"resnet18", "catdog128"}};
inline const PerTier<bool> kLoaderFedEveryWorkerCount{false, false, true};
// The generated dataset: the full tier's larger one.
inline const PerTier<bool> kLoaderFedFullDataset{false, false, true};
inline constexpr int kLoaderFedResNet18Batch = 256;
inline constexpr int kLoaderFedOtherBatch = 64;

// ---- The data-parallel step (kernels/torch/ddp_step.h) ----
// None at smoke; default ResNet-18 at 224, 64 and 256 images per GPU, amp_bf16 NHWC, and GPT-2
// small at its 1024 tokens, 8 sequences per GPU, amp_bf16, each in a CUDA graph; full: also
// ResNet-50, BERT-base, GPT-2 at 16 per GPU, and eager.
inline const PerTier<std::vector<std::string>> kDdpModels{
    {}, {"resnet18", "gpt2s"}, {"resnet18", "resnet50", "gpt2s", "bert_base"}};
inline const PerTier<std::vector<int>> kDdpBatches{{}, {64, 256}, {64, 256}};
inline const PerTier<std::vector<int>> kDdpTransformerBatches{{}, {8}, {8, 16}};
inline const PerTier<std::vector<bool>> kDdpGraphs{{}, {true}, {true, false}};
// GPU counts: default every local GPU (at least 2); full 2, 4, 8, ... up to every local GPU, and
// every GPU.
inline const PerTier<bool> kDdpGpuSweep{false, false, true};

}  // namespace matrix
}  // namespace dlb::train
