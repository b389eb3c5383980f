#include "kernels/reference/infer.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/fill.h"

namespace dlb {

namespace {

Vec ToDouble(const std::vector<float>& x) { return {x.begin(), x.end()}; }

}  // namespace

Vec RefRmsNorm(const Vec& x, const Vec& w, double eps) {
  const size_t dim = w.size(), rows = x.size() / dim;
  Vec y(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (size_t i = 0; i < dim; ++i) ss += x[r * dim + i] * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / double(dim) + eps);
    for (size_t i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * inv * w[i];
  }
  return y;
}

void RefRope(Vec* x, const std::vector<int64_t>& pos, int64_t heads, int64_t head_dim,
             double theta) {
  const int64_t half = head_dim / 2;
  for (size_t r = 0; r < pos.size(); ++r)
    for (int64_t h = 0; h < heads; ++h) {
      double* row = x->data() + (int64_t(r) * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(pos[r]) * std::pow(theta, -2.0 * double(i) / double(head_dim));
        const double c = std::cos(angle), s = std::sin(angle), a = row[i], b = row[i + half];
        row[i] = a * c - b * s;
        row[i + half] = b * c + a * s;
      }
    }
}

Vec RefLinear(const Vec& x, const Vec& w, int64_t in, int64_t out) {
  const int64_t rows = int64_t(x.size()) / in;
  Vec y(size_t(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[o * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

Vec RefSwiGlu(const Vec& x, const Vec& w1, const Vec& w3, const Vec& w2, int64_t dim, int64_t ffn) {
  Vec g = RefLinear(x, w1, dim, ffn);
  const Vec u = RefLinear(x, w3, dim, ffn);
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return RefLinear(g, w2, ffn, dim);
}

Vec RefGqaAttention(const Vec& q, const std::vector<int64_t>& pos, const Vec& k, const Vec& v,
                    int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t keys) {
  const int64_t group = heads / kv_heads, D = head_dim;
  const double scale = 1.0 / std::sqrt(double(D));
  Vec o(q.size(), 0.0);
  for (size_t t = 0; t < pos.size(); ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const double* qr = q.data() + (int64_t(t) * heads + h) * D;
      const double* kh = k.data() + (h / group) * keys * D;
      const double* vh = v.data() + (h / group) * keys * D;
      const int64_t seen = pos[t] + 1;
      Vec s(static_cast<size_t>(seen));
      double mx = -INFINITY;
      for (int64_t j = 0; j < seen; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qr[d] * kh[j * D + d];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - mx));
      double* orow = o.data() + (int64_t(t) * heads + h) * D;
      for (int64_t j = 0; j < seen; ++j)
        for (int64_t d = 0; d < D; ++d) orow[d] += s[j] / sum * vh[j * D + d];
    }
  return o;
}

RefLlama SeededRefLlama(const LlamaConfig& m, uint64_t seed, DType dt) {
  return SeededRefLlama(m, seed, dt, dt);
}

RefLlama SeededRefLlama(const LlamaConfig& m, uint64_t seed, DType matrices_dt, DType rest_dt) {
  RefLlama w;
  const auto mat = [&](int index, int64_t rows, int64_t cols) {
    return ToDouble(SeededMatrix(seed, index, rows, cols, matrices_dt));
  };
  const auto norm = [&](int index) { return ToDouble(SeededNorm(seed, index, m.dim, rest_dt)); };
  for (int l = 0; l < int(m.layers); ++l) {
    const auto at = [l](LlamaTensor t) { return WeightIndex(l, t); };
    RefLlama::Layer y;
    y.attn_norm = norm(at(LlamaTensor::kAttnNorm));
    y.wq = mat(at(LlamaTensor::kWq), m.QDim(), m.dim);
    y.wk = mat(at(LlamaTensor::kWk), m.KvDim(), m.dim);
    y.wv = mat(at(LlamaTensor::kWv), m.KvDim(), m.dim);
    y.wo = mat(at(LlamaTensor::kWo), m.dim, m.QDim());
    y.ffn_norm = norm(at(LlamaTensor::kFfnNorm));
    y.w1 = mat(at(LlamaTensor::kW1), m.ffn, m.dim);
    y.w3 = mat(at(LlamaTensor::kW3), m.ffn, m.dim);
    y.w2 = mat(at(LlamaTensor::kW2), m.dim, m.ffn);
    w.layers.push_back(std::move(y));
  }
  w.embed = ToDouble(SeededValues(TensorSeed(seed, kEmbedIndex), size_t(m.vocab * m.dim), rest_dt));
  w.final_norm = norm(kFinalNormIndex);
  w.lm_head = mat(kLmHeadIndex, m.vocab, m.dim);
  return w;
}

RefCache SeededRefCache(const InferShape& s, uint64_t seed, DType cache_dt) {
  const LlamaConfig& m = s.model;
  RefCache c;
  c.capacity = s.CacheLen();
  const int64_t D = m.head_dim, cap = c.capacity;
  for (int l = 0; l < int(m.layers); ++l)
    for (bool value : {false, true}) {
      Vec whole(size_t(s.batch * m.kv_heads * cap * D), 0.0);
      if (s.phase == InferPhase::kDecode) {
        const std::vector<float> prefix = SeededCache(seed, s, l, value, cache_dt);
        for (int64_t bh = 0; bh < s.batch * m.kv_heads; ++bh)
          for (int64_t p = 0; p < s.ctx; ++p)
            for (int64_t d = 0; d < D; ++d)
              whole[(bh * cap + p) * D + d] = prefix[(bh * s.ctx + p) * D + d];
      }
      (value ? c.v : c.k).push_back(std::move(whole));
    }
  return c;
}

Vec RefInferStep(const InferShape& s, const RefLlama& w, const std::vector<int64_t>& tokens,
                 RefCache* cache) {
  const LlamaConfig& m = s.model;
  const int64_t n = s.NewTokens(), D = m.head_dim, cap = cache->capacity, dim = m.dim;
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) pos[t] = s.FirstPos() + t;
  Vec logits;
  for (int64_t b = 0; b < s.batch; ++b) {
    Vec x(size_t(n * dim));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < dim; ++i) x[t * dim + i] = w.embed[tokens[b * n + t] * dim + i];
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const RefLlama::Layer& y = w.layers[l];
      const Vec h = RefRmsNorm(x, y.attn_norm, m.norm_eps);
      Vec q = RefLinear(h, y.wq, dim, m.QDim());
      Vec k = RefLinear(h, y.wk, dim, m.KvDim());
      const Vec v = RefLinear(h, y.wv, dim, m.KvDim());
      RefRope(&q, pos, m.heads, D, m.rope_theta);
      RefRope(&k, pos, m.kv_heads, D, m.rope_theta);
      // This sequence's cache, kv_heads x cap x D, with the new positions written in.
      const size_t base = size_t(b * m.kv_heads * cap * D);
      Vec& kc = cache->k[l];
      Vec& vc = cache->v[l];
      for (int64_t t = 0; t < n; ++t)
        for (int64_t g = 0; g < m.kv_heads; ++g)
          for (int64_t d = 0; d < D; ++d) {
            kc[base + (g * cap + pos[t]) * D + d] = k[(t * m.kv_heads + g) * D + d];
            vc[base + (g * cap + pos[t]) * D + d] = v[(t * m.kv_heads + g) * D + d];
          }
      const Vec ks(kc.begin() + long(base), kc.begin() + long(base) + m.kv_heads * cap * D);
      const Vec vs(vc.begin() + long(base), vc.begin() + long(base) + m.kv_heads * cap * D);
      const Vec a = RefGqaAttention(q, pos, ks, vs, m.heads, m.kv_heads, D, cap);
      const Vec o = RefLinear(a, y.wo, m.QDim(), dim);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      const Vec f = RefSwiGlu(RefRmsNorm(x, y.ffn_norm, m.norm_eps), y.w1, y.w3, y.w2, dim, m.ffn);
      for (size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    }
    const Vec last(x.end() - dim, x.end());
    const Vec out = RefLinear(RefRmsNorm(last, w.final_norm, m.norm_eps), w.lm_head, dim, m.vocab);
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

}  // namespace dlb
