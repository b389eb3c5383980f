#include "kernels/torch/transformer.h"

#include <cmath>

#include "kernels/common/error.h"
#include "kernels/common/train.h"
#include "kernels/torch/compat.h"

namespace dlb::libtorch {

namespace nn = torch::nn;

namespace {

const std::vector<TransformerConfig>& Configs() {
  static const std::vector<TransformerConfig> all = {
      {"gpt2s", true, 12, 768, 12, 3072, 50304, 1024, 1e-5},
      {"bert_base", false, 12, 768, 12, 3072, 30522, 512, 1e-12},
      {"gpt2_tiny", true, 2, 64, 4, 256, 256, 64, 1e-5},
      {"bert_tiny", false, 2, 64, 4, 256, 256, 64, 1e-12},
  };
  return all;
}

nn::LayerNorm Ln(const TransformerConfig& c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.d}).eps(c.ln_eps));
}

// One block: attention over one fused q/k/v projection (nanoGPT's c_attn; BERT's separate query,
// key and value Linears are the same three products and parameters), its output projection, and
// the MLP. Pre-LN (GPT-2): x + attn(ln1(x)), then x + mlp(ln2(x)). Post-LN (BERT): ln1(x +
// attn(x)), then ln2(x + mlp(x)). The module names are what the initialisation reads: "ln" only
// in LayerNorms, "_proj" only in the residual projections.
// A Linear layer as Python's F.linear runs it: at::linear, whose 3-D input with a bias is one
// GEMM with the bias in its epilogue. The C++ frontend's nn::Linear (F::linear) does a matmul
// and then adds the bias in a broadcast elementwise pass: one more pass over the activations per
// Linear (docs/families/train.md).
torch::Tensor ApplyLinear(const nn::Linear& l, const torch::Tensor& x) {
  return torch::linear(x, l->weight, l->bias);
}

class Block : public nn::Module {
 public:
  explicit Block(const TransformerConfig& c) : c_(c) {
    ln_1_ = register_module("ln_1", Ln(c));
    c_attn_ = register_module("c_attn", nn::Linear(c.d, 3 * c.d));
    attn_proj_ = register_module("attn_proj", nn::Linear(c.d, c.d));
    ln_2_ = register_module("ln_2", Ln(c));
    fc_ = register_module("fc", nn::Linear(c.d, c.ffn));
    mlp_proj_ = register_module("mlp_proj", nn::Linear(c.ffn, c.d));
  }
  torch::Tensor forward(torch::Tensor x) {
    if (c_.causal) {
      x = x + Attention(ln_1_(x));
      return x + Mlp(ln_2_(x));
    }
    x = ln_1_(x + Attention(x));
    return ln_2_(x + Mlp(x));
  }

 private:
  torch::Tensor Attention(const torch::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), h = c_.heads, q = c_.d / c_.heads;
    const std::vector<torch::Tensor> qkv = ApplyLinear(c_attn_, x).split(c_.d, 2);
    auto heads = [&](const torch::Tensor& y) { return y.view({b, t, h, q}).transpose(1, 2); };
    torch::Tensor y = compat::Attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), c_.causal);
    return ApplyLinear(attn_proj_, y.transpose(1, 2).contiguous().view({b, t, c_.d}));
  }
  torch::Tensor Mlp(const torch::Tensor& x) {
    // Exact (erf) GELU: nanoGPT's nn.GELU(), BERT's.
    return ApplyLinear(mlp_proj_, torch::gelu(ApplyLinear(fc_, x)));
  }

  TransformerConfig c_;
  nn::LayerNorm ln_1_{nullptr}, ln_2_{nullptr};
  nn::Linear c_attn_{nullptr}, attn_proj_{nullptr}, fc_{nullptr}, mlp_proj_{nullptr};
};

class Transformer : public Net {
 public:
  explicit Transformer(const TransformerConfig& c) : c_(c) {
    wte_ = register_module("wte", nn::Embedding(c.vocab, c.d));
    wpe_ = register_module("wpe", nn::Embedding(c.max_seq, c.d));
    if (!c.causal) {
      wtt_ = register_module("wtt", nn::Embedding(2, c.d));
      ln_emb_ = register_module("ln_emb", Ln(c));
    }
    for (int64_t l = 0; l < c.layers; ++l)
      blocks_.push_back(register_module("h" + std::to_string(l), std::make_shared<Block>(c)));
    if (c.causal) {
      ln_f_ = register_module("ln_f", Ln(c));
    } else {
      head_dense_ = register_module("head_dense", nn::Linear(c.d, c.d));
      ln_head_ = register_module("ln_head", Ln(c));
      head_bias_ = register_parameter("head_bias", torch::zeros({c.vocab}));
    }
    Init();
  }

  torch::Tensor forward(torch::Tensor idx) override {
    const int64_t t = idx.size(1);
    if (t > c_.max_seq)
      throw Error(c_.name + ": sequence " + std::to_string(t) + " is longer than its " +
                  std::to_string(c_.max_seq) + " positions");
    const torch::Tensor pos =
        torch::arange(t, torch::TensorOptions().dtype(torch::kInt64).device(idx.device()));
    torch::Tensor x = wte_(idx) + wpe_(pos);
    if (!c_.causal) x = ln_emb_(x + wtt_->weight[0]);  // every token of segment 0
    for (auto& b : blocks_) x = b->forward(x);
    if (c_.causal) return torch::linear(ln_f_(x), wte_->weight);
    x = ln_head_(torch::gelu(ApplyLinear(head_dense_, x)));
    return torch::linear(x, wte_->weight, head_bias_);
  }

 private:
  void Init() {
    torch::NoGradGuard no_grad;
    const double proj_std = c_.causal ? 0.02 / std::sqrt(2.0 * double(c_.layers)) : 0.02;
    for (auto& item : named_parameters()) {
      const std::string& name = item.key();
      torch::Tensor& p = item.value();
      if (p.dim() >= 2)
        p.normal_(0.0, name.find("_proj.") != std::string::npos ? proj_std : 0.02);
      else if (name.find("ln") == std::string::npos)
        p.zero_();  // biases; LayerNorms keep their 1 and 0
    }
  }

  TransformerConfig c_;
  nn::Embedding wte_{nullptr}, wpe_{nullptr}, wtt_{nullptr};
  std::vector<std::shared_ptr<Block>> blocks_;
  nn::LayerNorm ln_f_{nullptr}, ln_emb_{nullptr}, ln_head_{nullptr};
  nn::Linear head_dense_{nullptr};
  torch::Tensor head_bias_;
};

}  // namespace

const TransformerConfig* FindTransformer(const std::string& model) {
  for (const TransformerConfig& c : Configs())
    if (c.name == model) return &c;
  return nullptr;
}

bool IsTransformer(const std::string& model) { return FindTransformer(model) != nullptr; }

const TransformerConfig& TinyOf(const TransformerConfig& c) {
  return *FindTransformer(c.causal ? "gpt2_tiny" : "bert_tiny");
}

std::vector<std::string> TransformerNames() {
  std::vector<std::string> out;
  for (const TransformerConfig& c : Configs()) out.push_back(c.name);
  return out;
}

int64_t ParamCount(const TransformerConfig& c) {
  const int64_t d = c.d;
  const int64_t block =
      2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * c.ffn + c.ffn) + (c.ffn * d + d);
  int64_t n = c.vocab * d + c.max_seq * d + c.layers * block;
  if (c.causal) return n + 2 * d;                            // ln_f
  return n + 2 * d + 2 * d + (d * d + d) + 2 * d + c.vocab;  // token types, ln_emb, the head
}

int64_t MatmulParamCount(const TransformerConfig& c) {
  return ParamCount(c) - c.max_seq * c.d - (c.causal ? 0 : 2 * c.d);
}

double TrainFlopsPerToken(const TransformerConfig& c, int64_t seq) {
  return 6.0 * double(MatmulParamCount(c)) + 12.0 * double(c.layers) * double(c.d) * double(seq);
}

std::shared_ptr<Net> MakeTransformer(const TransformerConfig& c, uint64_t seed) {
  if (c.d % c.heads != 0) throw Error(c.name + ": d is not a multiple of the heads");
  torch::manual_seed(seed);
  return std::make_shared<Transformer>(c);
}

torch::Tensor SeededTokens(uint64_t seed, int64_t batch, int64_t seq, int64_t vocab) {
  const std::vector<int64_t> ids = SeededLabels(seed, batch * (seq + 1), vocab);
  return torch::tensor(ids, torch::kInt64).view({batch, seq + 1});
}

}  // namespace dlb::libtorch
