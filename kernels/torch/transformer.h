// The training family's transformers, written with torch::nn after the sources the workload CSV
// cites: GPT-2 small in nanoGPT's layout (Karpathy's nanoGPT model.py: token and learned position
// embeddings, pre-LayerNorm blocks of causal self-attention through one c_attn projection and a
// GELU MLP, a final LayerNorm, the head tied to the token embedding) and a BERT-base-sized encoder
// (post-LayerNorm blocks, bidirectional attention, learned positions, token type 0, the masked-LM
// head's transform and its decoder tied to the word embedding). Dropout is 0 in both, so a step
// is deterministic up to the kernels' sums. tools/peers/pytorch-peer builds the same GPT-2.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/torch/models.h"

namespace dlb::libtorch {

struct TransformerConfig {
  std::string name;
  bool causal = true;  // GPT-2: pre-LN, causal; BERT: post-LN, bidirectional
  int64_t layers = 0, d = 0, heads = 0, ffn = 0, vocab = 0, max_seq = 0;
  double ln_eps = 1e-5;  // nanoGPT's LayerNorm; BERT's is 1e-12
};

// nanoGPT's AdamW (train.py and configure_optimizers): lr 6e-4, betas (0.9, 0.95), eps 1e-8
// (torch's default), weight decay 0.1 on the 2-d parameters (matmul weights, embeddings) and 0 on
// biases and LayerNorms. The step runs at the peak learning rate, no warm-up or schedule.
struct AdamWSettings {
  double lr = 6e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

// The configurations by model name: gpt2s (12 layers, d 768, 12 heads, vocab 50304 as nanoGPT
// pads GPT-2's 50257, 1024 positions), bert_base (12, 768, 12, FFN 3072, vocab 30522, 512
// positions), and their tiny versions gpt2_tiny and bert_tiny (2 layers, d 64, 4 heads, vocab
// 256, 64 positions) that the float64 check runs: the same code at a small width. nullptr for
// any other name.
const TransformerConfig* FindTransformer(const std::string& model);
bool IsTransformer(const std::string& model);
// The tiny configuration of the same architecture (gpt2s -> gpt2_tiny); itself for a tiny one.
const TransformerConfig& TinyOf(const TransformerConfig& c);
// The names FindTransformer knows.
std::vector<std::string> TransformerNames();

// Parameters the model registers, from the configuration alone (the tied head counted once).
int64_t ParamCount(const TransformerConfig& c);
// The parameters the FLOP count multiplies: all of them less the position (and token type)
// embeddings, which are lookups. The token embedding stays: it is the tied head's matmul.
int64_t MatmulParamCount(const TransformerConfig& c);
// Model FLOPs per token of a training step at sequence length `seq`, nanoGPT's estimate_mfu
// (the PaLM paper's appendix B): 6 N + 12 L H Q T, N = MatmulParamCount, L layers, H heads,
// Q = d / H, T = seq. The attention term counts the full T x T score matrix also when causal.
double TrainFlopsPerToken(const TransformerConfig& c, int64_t seq);

// A freshly initialised model on the CPU in f32, LibTorch's CPU generator seeded first: nanoGPT's
// init (every Linear and Embedding weight normal(0, 0.02), biases 0, LayerNorm 1 and 0, and each
// residual projection, c_proj, normal(0, 0.02 / sqrt(2 L))); BERT's the same without the scaled
// projections. forward(tokens: batch x seq int64) returns logits batch x seq x vocab.
std::shared_ptr<Net> MakeTransformer(const TransformerConfig& c, uint64_t seed);

// Seeded token ids in [0, vocab), batch x (seq + 1) int64 on the CPU: the step's input is the
// first seq columns, its targets the last seq (next-token prediction, for BERT's head too).
torch::Tensor SeededTokens(uint64_t seed, int64_t batch, int64_t seq, int64_t vocab);

}  // namespace dlb::libtorch
