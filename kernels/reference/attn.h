// Float64 scaled-dot-product attention on the seeded inputs of an AttnShape (kernels/common/
// shapes.h), computed per sampled element rather than whole: a long sequence is verified at a few
// positions without an S x S matrix. A forward element O[b][h][i][:] needs query row i's softmax
// over the keys (O(S D)); a dQ row the same plus dP and its row sum; a dK/dV row j of kv head g the
// column j of P and dS of every query head that reads g, which needs each such head's row
// statistics (max, sum, rowsum(dO * O)) over every row that sees key j, O(S D) a row, computed once
// per (batch, head) and row: causal attention's last keys need only the last rows (cheap at any
// length), its first keys and non-causal attention every row, O(S^2 D) per head.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/fill.h"
#include "kernels/common/shapes.h"

namespace dlb {

// Float64 attention on the seeded inputs of `shape` rounded to `dt`: the pass's output element
// `flat` (fwd: O; bwd: dQ, then dK, then dV, each in logical order, concatenated).
// At() may be called from several threads at once; what a call computes is cached per row (O, dQ),
// per kv row (dK and dV together) and per (batch, head) (the row statistics).
class ReferenceAttn {
 public:
  ReferenceAttn(const AttnShape& shape, uint64_t seed, DType dt);
  int64_t OutputElems() const;  // fwd: QElems(); bwd: QElems() + 2 * KvElems()
  double At(int64_t flat);      // computes (and caches) what it needs, per (batch, head)

 private:
  struct Row {  // a row of D values, computed once
    std::once_flag once;
    std::vector<double> v;
  };
  struct Stats {  // per query row i of one (batch, head): max, sum of exp, rowsum(dO * O)
    std::mutex mu;
    int64_t from = 0;  // rows [from, seq) are computed
    std::vector<double> m, l, delta;
  };
  // One (batch, head)'s inputs, read from the seeded streams.
  struct Head {
    std::vector<double> q, do_;  // seq x head_dim of query head h
    std::vector<double> k, v;    // seq x head_dim of its kv head
  };
  Head LoadHead(int64_t b, int64_t h) const;
  // Scaled, masked scores of query row i: s[j] for j < Keys(i), and the softmax's max and sum.
  int64_t Keys(int64_t i) const { return shape_.causal ? i + 1 : shape_.seq; }
  void Scores(const Head& hd, int64_t i, std::vector<double>* s, double* m, double* l) const;
  Row& RowEntry(std::map<int64_t, std::unique_ptr<Row>>* cache, int64_t key);
  const std::vector<double>& ORow(int64_t b, int64_t h, int64_t i);
  const std::vector<double>& DqRow(int64_t b, int64_t h, int64_t i);
  // The statistics of (b, h) with at least rows [from, seq) computed.
  const Stats& HeadStats(int64_t b, int64_t h, int64_t from);
  // Row j of kv head g of dK and of dV, side by side (2 x head_dim): one pass computes both.
  const std::vector<double>& DkvRow(int64_t b, int64_t g, int64_t j);

  AttnShape shape_;
  SeededView q_, k_, v_, do_;
  std::mutex mu_;  // guards the maps; each entry is filled under its own once_flag
  std::map<int64_t, std::unique_ptr<Row>> o_rows_, dq_rows_, dkv_rows_;
  std::map<int64_t, std::unique_ptr<Stats>> stats_;
};

}  // namespace dlb
