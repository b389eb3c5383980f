#include "kernels/common/infer.h"

#include <cmath>

#include "kernels/common/fill.h"
#include "kernels/common/rng.h"

namespace dlb {

double LlamaConfig::LayerMatmulParams() const {
  return double(dim) * double(QDim() + 2 * KvDim()) + double(QDim()) * double(dim) +
         3.0 * double(dim) * double(ffn);
}

double LlamaConfig::StepParams() const {
  return double(layers) * (LayerMatmulParams() + 2.0 * double(dim)) + double(dim) +
         double(vocab) * double(dim);
}

double LlamaConfig::StepMatrixParams() const {
  return double(layers) * LayerMatmulParams() + double(vocab) * double(dim);
}

bool LlamaConfig::Valid() const {
  return layers > 0 && dim > 0 && heads > 0 && kv_heads > 0 && head_dim > 0 && head_dim % 2 == 0 &&
         heads % kv_heads == 0 && ffn > 0 && vocab > 0 && rope_theta > 0 && norm_eps > 0;
}

double InferShape::Flops() const {
  const LlamaConfig& m = model;
  const double tokens = double(batch) * double(NewTokens());
  // Keys seen, summed over a sequence's new tokens: token at position p sees p + 1 keys.
  const double first = double(FirstPos()), n = double(NewTokens());
  const double keys = n * (first + 1) + n * (n - 1) / 2;
  const double attn = 4.0 * double(m.heads) * double(m.head_dim) * keys * double(batch);
  return 2.0 * tokens * m.LayerMatmulParams() * double(m.layers) + attn * double(m.layers) +
         2.0 * double(batch) * double(m.dim) * double(m.vocab);
}

double InferShape::KvReadBytes(DType cache_dt) const {
  return 2.0 * double(model.layers) * double(batch) * double(model.KvDim()) * double(FirstPos()) *
         double(StorageBytes(cache_dt));
}

double InferShape::KvWrittenBytes(DType cache_dt) const {
  return 2.0 * double(model.layers) * double(batch) * double(model.KvDim()) * double(NewTokens()) *
         double(StorageBytes(cache_dt));
}

double InferShape::Bytes(DType matrices_dt, DType rest_dt) const {
  const double tokens = double(batch) * double(NewTokens());
  const double matrices = model.StepMatrixParams(), norms = model.StepParams() - matrices;
  return matrices * double(StorageBytes(matrices_dt)) +
         (norms + tokens * double(model.dim)) * double(StorageBytes(rest_dt)) +
         KvReadBytes(rest_dt) + KvWrittenBytes(rest_dt) + 4.0 * double(batch) * double(model.vocab);
}

int WeightIndex(int layer, LlamaTensor t) {
  return 100 + layer * kLlamaLayerTensors + static_cast<int>(t);
}

float WeightScale(int64_t in) {
  return std::ldexp(1.0f, -int(std::lround(std::log2(std::sqrt(double(in))))));
}

float MatrixScale(int64_t in, DType dt) { return float(StorageScale(dt)) * WeightScale(in); }

std::vector<float> SeededMatrix(uint64_t seed, int index, int64_t rows, int64_t cols, DType dt) {
  std::vector<float> w = SeededValues(TensorSeed(seed, index), size_t(rows * cols), dt);
  const float scale = WeightScale(cols);
  for (float& x : w) x *= scale;
  return w;
}

std::vector<float> SeededNorm(uint64_t seed, int index, int64_t dim, DType dt) {
  std::vector<float> w = SeededValues(TensorSeed(seed, index), size_t(dim), DType::kF32);
  for (float& x : w) x = RoundTo(dt, 1.0f + x / 8);
  return w;
}

std::vector<int64_t> SeededTokens(uint64_t seed, const InferShape& shape) {
  const size_t n = size_t(shape.batch * shape.NewTokens());
  std::vector<int64_t> out(n);
  Rng rng(TensorSeed(seed, kTokensIndex));
  for (int64_t& t : out) t = rng.UniformInt(0, shape.model.vocab - 1);
  return out;
}

uint64_t CacheOffset(const InferShape& shape, int layer, bool value) {
  const uint64_t one = uint64_t(shape.batch * shape.model.KvDim() * shape.ctx);
  return (2 * uint64_t(layer) + (value ? 1 : 0)) * one;
}

std::vector<float> SeededCache(uint64_t seed, const InferShape& shape, int layer, bool value,
                               DType dt) {
  const size_t n = size_t(shape.batch * shape.model.KvDim() * shape.ctx);
  const uint64_t s = TensorSeed(seed, kCacheIndex), off = CacheOffset(shape, layer, value);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = detail::SeededValueAt(s, off + i, dt);
  return out;
}

}  // namespace dlb
