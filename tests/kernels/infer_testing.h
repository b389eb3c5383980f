// What the inference op tests share (LibTorch's and the GPU step's): the tiny model of
// fixtures/workloads/infer_models.csv (grouped-query, 4 heads over 2 kv heads) and its multi-head
// twin, and the float64 step's logits.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "kernels/common/infer.h"
#include "kernels/reference/infer.h"

namespace dlb::testing {

inline LlamaConfig TinyLlama(bool gqa) {
  LlamaConfig m;
  m.name = gqa ? "tiny" : "tiny_mha";
  m.layers = 2;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = gqa ? 2 : 4;
  m.head_dim = 16;
  m.ffn = 192;
  m.vocab = 256;
  m.rope_theta = 10000;
  return m;
}

// The float64 step of the seeded model whose matrices are in matrices_dt and the rest in rest_dt.
inline Vec Float64Logits(const InferShape& s, uint64_t seed, DType matrices_dt, DType rest_dt) {
  RefCache cache = SeededRefCache(s, seed, rest_dt);
  return RefInferStep(s, SeededRefLlama(s.model, seed, matrices_dt, rest_dt), SeededTokens(seed, s),
                      &cache);
}

// A step's parameters: phase, batch, context (prompt length for prefill), grouped-query or not.
using StepParam = std::tuple<InferPhase, int, int64_t, bool>;

inline std::string StepName(const ::testing::TestParamInfo<StepParam>& info) {
  return std::string(Name(std::get<0>(info.param))) + "_bs" +
         std::to_string(std::get<1>(info.param)) + "_ctx" +
         std::to_string(std::get<2>(info.param)) + (std::get<3>(info.param) ? "_gqa" : "_mha");
}

}  // namespace dlb::testing
