#include "kernels/reference/attn.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/error.h"
#include "kernels/common/parallel.h"

namespace dlb {

namespace {

double Dot(const double* a, const double* b, int64_t n) {
  double acc = 0;
  for (int64_t t = 0; t < n; ++t) acc += a[t] * b[t];
  return acc;
}

// rows x cols values of a seeded tensor starting at `base`, as doubles.
std::vector<double> Load(const SeededView& t, int64_t base, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = t[size_t(base + i)];
  return out;
}

}  // namespace

ReferenceAttn::ReferenceAttn(const AttnShape& shape, uint64_t seed, DType dt)
    : shape_(shape),
      q_(TensorSeed(seed, 0), size_t(shape.QElems()), dt),
      k_(TensorSeed(seed, 1), size_t(shape.KvElems()), dt),
      v_(TensorSeed(seed, 2), size_t(shape.KvElems()), dt),
      do_(TensorSeed(seed, 3), size_t(shape.QElems()), dt) {
  DLB_REQUIRE(shape.Valid(), "attention sizes must be positive, heads a multiple of kv_heads");
}

int64_t ReferenceAttn::OutputElems() const {
  return shape_.pass == AttnPass::kFwd ? shape_.QElems() : shape_.QElems() + 2 * shape_.KvElems();
}

ReferenceAttn::Head ReferenceAttn::LoadHead(int64_t b, int64_t h) const {
  const AttnShape& s = shape_;
  const int64_t g = h / (s.heads / s.kv_heads), n = s.seq * s.head_dim;
  const int64_t qbase = (b * s.heads + h) * n, kvbase = (b * s.kv_heads + g) * n;
  return {Load(q_, qbase, n), Load(do_, qbase, n), Load(k_, kvbase, n), Load(v_, kvbase, n)};
}

void ReferenceAttn::Scores(const Head& hd, int64_t i, std::vector<double>* s, double* m,
                           double* l) const {
  const int64_t d = shape_.head_dim, n = Keys(i);
  const double scale = shape_.Scale();
  s->resize(size_t(n));
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    (*s)[size_t(j)] = scale * Dot(&hd.q[size_t(i * d)], &hd.k[size_t(j * d)], d);
    mx = std::max(mx, (*s)[size_t(j)]);
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp((*s)[size_t(j)] - mx);
  *m = mx;
  *l = sum;
}

ReferenceAttn::Row& ReferenceAttn::RowEntry(std::map<int64_t, std::unique_ptr<Row>>* cache,
                                            int64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Row>& e = (*cache)[key];
  if (!e) e = std::make_unique<Row>();
  return *e;
}

const std::vector<double>& ReferenceAttn::ORow(int64_t b, int64_t h, int64_t i) {
  const AttnShape& sh = shape_;
  Row& row = RowEntry(&o_rows_, (b * sh.heads + h) * sh.seq + i);
  std::call_once(row.once, [&] {
    const Head hd = LoadHead(b, h);
    std::vector<double> s;
    double m, l;
    Scores(hd, i, &s, &m, &l);
    const int64_t d = sh.head_dim;
    row.v.assign(size_t(d), 0.0);
    for (size_t j = 0; j < s.size(); ++j) {
      const double p = std::exp(s[j] - m) / l;
      for (int64_t t = 0; t < d; ++t) row.v[size_t(t)] += p * hd.v[j * size_t(d) + size_t(t)];
    }
  });
  return row.v;
}

const std::vector<double>& ReferenceAttn::DqRow(int64_t b, int64_t h, int64_t i) {
  const AttnShape& sh = shape_;
  Row& row = RowEntry(&dq_rows_, (b * sh.heads + h) * sh.seq + i);
  std::call_once(row.once, [&] {
    const Head hd = LoadHead(b, h);
    std::vector<double> s;
    double m, l;
    Scores(hd, i, &s, &m, &l);
    const int64_t d = sh.head_dim;
    const double* doi = &hd.do_[size_t(i * d)];
    // dP_j = dO_i . V_j; delta = sum_j P_j dP_j (= dO_i . O_i); dS_j = P_j (dP_j - delta).
    std::vector<double> p(s.size()), dp(s.size());
    double delta = 0;
    for (size_t j = 0; j < s.size(); ++j) {
      p[j] = std::exp(s[j] - m) / l;
      dp[j] = Dot(doi, &hd.v[j * size_t(d)], d);
      delta += p[j] * dp[j];
    }
    row.v.assign(size_t(d), 0.0);
    for (size_t j = 0; j < s.size(); ++j) {
      const double ds = sh.Scale() * p[j] * (dp[j] - delta);
      for (int64_t t = 0; t < d; ++t) row.v[size_t(t)] += ds * hd.k[j * size_t(d) + size_t(t)];
    }
  });
  return row.v;
}

const ReferenceAttn::Stats& ReferenceAttn::HeadStats(int64_t b, int64_t h, int64_t from) {
  const AttnShape& sh = shape_;
  Stats* st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Stats>& e = stats_[b * sh.heads + h];
    if (!e) {
      e = std::make_unique<Stats>();
      e->from = sh.seq;
      e->m.resize(size_t(sh.seq));
      e->l.resize(size_t(sh.seq));
      e->delta.resize(size_t(sh.seq));
    }
    st = e.get();
  }
  std::lock_guard<std::mutex> lock(st->mu);
  if (from >= st->from) return *st;
  const Head hd = LoadHead(b, h);
  const int64_t d = sh.head_dim;
  // Every row is O(S D): spread them over the cores (the calling thread may be one of the
  // verifier's; the others that need this head wait on its mutex meanwhile).
  const size_t rows = size_t(st->from - from);
  const size_t grain = size_t(std::max<int64_t>(1, 1000000 / std::max<int64_t>(1, 2 * sh.seq * d)));
  ParallelFor(rows, grain, [&](size_t begin, size_t end) {
    std::vector<double> s, o(static_cast<size_t>(d));
    for (size_t r = begin; r < end; ++r) {
      const int64_t i = from + int64_t(r);
      double m, l;
      Scores(hd, i, &s, &m, &l);
      std::fill(o.begin(), o.end(), 0.0);
      for (size_t j = 0; j < s.size(); ++j) {
        const double p = std::exp(s[j] - m) / l;
        for (int64_t t = 0; t < d; ++t) o[size_t(t)] += p * hd.v[j * size_t(d) + size_t(t)];
      }
      st->m[size_t(i)] = m;
      st->l[size_t(i)] = l;
      st->delta[size_t(i)] = Dot(&hd.do_[size_t(i * d)], o.data(), d);
    }
  });
  st->from = from;
  return *st;
}

const std::vector<double>& ReferenceAttn::DkvRow(int64_t b, int64_t g, int64_t j) {
  const AttnShape& sh = shape_;
  Row& row = RowEntry(&dkv_rows_, (b * sh.kv_heads + g) * sh.seq + j);
  std::call_once(row.once, [&] {
    const int64_t group = sh.heads / sh.kv_heads, d = sh.head_dim, first = sh.causal ? j : 0;
    const double scale = sh.Scale();
    const int64_t kvrow = ((b * sh.kv_heads + g) * sh.seq + j) * d;
    const std::vector<double> kj = Load(k_, kvrow, d), vj = Load(v_, kvrow, d);
    // [dK_j | dV_j]: sums over every query head of the group and every row i that sees key j.
    row.v.assign(size_t(2 * d), 0.0);
    for (int64_t r = 0; r < group; ++r) {
      const int64_t h = g * group + r;
      const Stats& st = HeadStats(b, h, first);
      const int64_t qbase = (b * sh.heads + h) * sh.seq * d;
      for (int64_t i = first; i < sh.seq; ++i) {
        const std::vector<double> qi = Load(q_, qbase + i * d, d),
                                  doi = Load(do_, qbase + i * d, d);
        const double p =
            std::exp(scale * Dot(qi.data(), kj.data(), d) - st.m[size_t(i)]) / st.l[size_t(i)];
        const double ds = p * (Dot(doi.data(), vj.data(), d) - st.delta[size_t(i)]);
        for (int64_t t = 0; t < d; ++t) {
          row.v[size_t(t)] += scale * ds * qi[size_t(t)];
          row.v[size_t(d + t)] += p * doi[size_t(t)];
        }
      }
    }
  });
  return row.v;
}

double ReferenceAttn::At(int64_t flat) {
  const AttnShape& s = shape_;
  DLB_REQUIRE(flat >= 0 && flat < OutputElems(), "element outside the attention output");
  const int64_t d = s.head_dim;
  if (flat < s.QElems()) {
    const int64_t t = flat % d, i = flat / d % s.seq, bh = flat / (d * s.seq);
    const int64_t b = bh / s.heads, h = bh % s.heads;
    return (s.pass == AttnPass::kFwd ? ORow(b, h, i) : DqRow(b, h, i))[size_t(t)];
  }
  flat -= s.QElems();
  const int which = flat < s.KvElems() ? 0 : 1;
  flat -= which * s.KvElems();
  const int64_t t = flat % d, j = flat / d % s.seq, bg = flat / (d * s.seq);
  return DkvRow(bg / s.kv_heads, bg % s.kv_heads, j)[size_t(which * d + t)];
}

}  // namespace dlb
