"""GPT-2 small (nanoGPT's model.py) and a BERT-base encoder in torch.nn, as
kernels/torch/transformer.h builds them. Imports torch: the transformer steps import this module
when they start."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .transformer import TRANSFORMERS


class Block(nn.Module):
    """nanoGPT's Block (pre-LN: x + attn(ln_1(x)), x + mlp(ln_2(x))), or BERT's post-LN layer."""

    def __init__(self, causal, d, heads, ffn, eps):
        super().__init__()
        self.causal, self.heads = causal, heads
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.fc = nn.Linear(d, ffn)
        self.mlp_proj = nn.Linear(ffn, d)

    def attn(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                           is_causal=self.causal)
        return self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def mlp(self, x):
        return self.mlp_proj(F.gelu(self.fc(x)))  # exact GELU: nanoGPT's nn.GELU()

    def forward(self, x):
        if self.causal:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


class Transformer(nn.Module):
    """GPT-2 small as nanoGPT's model.py (tied head, dropout 0) or BERT-base with its MLM head."""

    def __init__(self, name):
        super().__init__()
        causal, layers, d, heads, ffn, vocab, positions, eps = TRANSFORMERS[name]
        self.causal = causal
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        if not causal:
            self.wtt = nn.Embedding(2, d)
            self.ln_emb = nn.LayerNorm(d, eps=eps)
        self.h = nn.ModuleList(Block(causal, d, heads, ffn, eps) for _ in range(layers))
        if causal:
            self.ln_f = nn.LayerNorm(d, eps=eps)
        else:
            self.head_dense = nn.Linear(d, d)
            self.ln_head = nn.LayerNorm(d, eps=eps)
            self.head_bias = nn.Parameter(torch.zeros(vocab))
        proj_std = 0.02 / math.sqrt(2 * layers) if causal else 0.02
        for pn, p in self.named_parameters():
            if p.dim() >= 2:
                torch.nn.init.normal_(p, 0.0, proj_std if "_proj." in pn else 0.02)
            elif "ln" not in pn:
                torch.nn.init.zeros_(p)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        if not self.causal:
            x = self.ln_emb(x + self.wtt.weight[0])
        for block in self.h:
            x = block(x)
        if self.causal:
            return F.linear(self.ln_f(x), self.wte.weight)
        return F.linear(self.ln_head(F.gelu(self.head_dense(x))), self.wte.weight, self.head_bias)


def flops_per_token(model, seq):
    """nanoGPT's estimate_mfu: 6 N + 12 L H Q T a token, N = the parameters less the position
    (and token type) embeddings, which are lookups; the tied head's matmul is the token
    embedding, counted once."""
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    if not model.causal:
        n -= model.wtt.weight.numel()
    layers, d = len(model.h), model.wpe.weight.size(1)
    return 6 * n + 12 * layers * d * seq
