#include "kernels/reference/mlp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels/common/error.h"

namespace dlb {

namespace {

using Matrix = std::vector<double>;  // row-major

void CheckInputs(const TrainShape& s, const MlpParams& p, const MlpBatch& b) {
  const std::vector<int64_t>& w = s.widths;
  DLB_REQUIRE(w.size() >= 2, "an MLP needs at least two widths");
  DLB_REQUIRE(s.batch > 0, "batch must be positive");
  const size_t layers = w.size() - 1;
  DLB_REQUIRE(p.weight.size() == layers && p.bias.size() == layers, "one weight and bias a layer");
  for (size_t l = 0; l < layers; ++l) {
    DLB_REQUIRE(int64_t(p.weight[l].size()) == w[l] * w[l + 1], "weight l must be out x in");
    DLB_REQUIRE(int64_t(p.bias[l].size()) == w[l + 1], "bias l must have out values");
  }
  DLB_REQUIRE(int64_t(b.x.size()) == s.batch * w[0], "x must be batch x widths[0]");
  DLB_REQUIRE(int64_t(b.labels.size()) == s.batch, "one label a sample");
  for (int64_t y : b.labels) DLB_REQUIRE(y >= 0 && y < w.back(), "label outside [0, classes)");
}

}  // namespace

MlpStepResult ReferenceMlpStep(const TrainShape& shape, const MlpParams& params,
                               const MlpBatch& batch, MlpMomentum* momentum) {
  CheckInputs(shape, params, batch);
  const std::vector<int64_t>& w = shape.widths;
  const size_t layers = w.size() - 1;
  const int64_t n = shape.batch;

  // act[0] is the input, act[l + 1] the output of layer l (after its ReLU when it has one).
  std::vector<Matrix> act(layers + 1);
  act[0].assign(batch.x.begin(), batch.x.end());
  for (size_t l = 0; l < layers; ++l) {
    const int64_t in = w[l], out = w[l + 1];
    const bool relu = l + 1 < layers;
    act[l + 1].assign(size_t(n * out), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double z = params.bias[l][o];
        for (int64_t k = 0; k < in; ++k)
          z += act[l][i * in + k] * double(params.weight[l][o * in + k]);
        act[l + 1][i * out + o] = relu ? std::max(z, 0.0) : z;
      }
  }

  MlpStepResult r;
  r.logits = act[layers];
  const int64_t classes = w.back();
  // dL/dlogits of the mean cross-entropy: (softmax - onehot) / batch.
  Matrix dz(size_t(n * classes));
  for (int64_t i = 0; i < n; ++i) {
    const double* z = &r.logits[i * classes];
    const double mx = *std::max_element(z, z + classes);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - mx);
    const int64_t y = batch.labels[i];
    r.loss += (std::log(sum) + mx - z[y]) / double(n);
    for (int64_t c = 0; c < classes; ++c)
      dz[i * classes + c] = (std::exp(z[c] - mx) / sum - (c == y ? 1.0 : 0.0)) / double(n);
  }
  if (shape.pass == Pass::kInfer) return r;

  r.grad_weight.resize(layers);
  r.grad_bias.resize(layers);
  for (size_t l = layers; l-- > 0;) {
    const int64_t in = w[l], out = w[l + 1];
    Matrix& gw = r.grad_weight[l];
    Matrix& gb = r.grad_bias[l];
    gw.assign(size_t(out * in), 0.0);
    gb.assign(size_t(out), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        const double g = dz[i * out + o];
        gb[o] += g;
        for (int64_t k = 0; k < in; ++k) gw[o * in + k] += g * act[l][i * in + k];
      }
    if (l == 0) break;
    // Through the layer to its input, then through the ReLU that produced that input: the
    // gradient passes where the ReLU's output is positive.
    Matrix da(size_t(n * in), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        const double g = dz[i * out + o];
        for (int64_t k = 0; k < in; ++k) da[i * in + k] += g * double(params.weight[l][o * in + k]);
      }
    for (size_t e = 0; e < da.size(); ++e)
      if (!(act[l][e] > 0)) da[e] = 0;
    dz = std::move(da);
  }

  MlpMomentum fresh;
  MlpMomentum& buf = momentum ? *momentum : fresh;
  if (buf.weight.empty()) {
    for (size_t l = 0; l < layers; ++l) {
      buf.weight.emplace_back(r.grad_weight[l].size(), 0.0);
      buf.bias.emplace_back(r.grad_bias[l].size(), 0.0);
    }
  }
  DLB_REQUIRE(buf.weight.size() == layers && buf.bias.size() == layers,
              "one momentum buffer a parameter");
  const auto update = [&](const std::vector<float>& p, const std::vector<double>& g,
                          std::vector<double>& b, std::vector<double>* out) {
    DLB_REQUIRE(b.size() == g.size(), "momentum buffer size differs from its parameter's");
    out->resize(p.size());
    for (size_t e = 0; e < p.size(); ++e) {
      b[e] = shape.momentum * b[e] + g[e];
      (*out)[e] = double(p[e]) - shape.lr * b[e];
    }
  };
  r.weight.resize(layers);
  r.bias.resize(layers);
  for (size_t l = 0; l < layers; ++l) {
    update(params.weight[l], r.grad_weight[l], buf.weight[l], &r.weight[l]);
    update(params.bias[l], r.grad_bias[l], buf.bias[l], &r.bias[l]);
  }
  return r;
}

MlpParams UpdatedParams(const MlpStepResult& step) {
  const auto to_float = [](const std::vector<std::vector<double>>& v) {
    std::vector<std::vector<float>> out;
    for (const auto& x : v) out.emplace_back(x.begin(), x.end());
    return out;
  };
  return {to_float(step.weight), to_float(step.bias)};
}

namespace {

template <class T>
double RelL2Of(const std::vector<std::vector<float>>& got, const std::vector<std::vector<T>>& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double err2 = 0, ref2 = 0;
  for (size_t v = 0; v < ref.size(); ++v)
    if (!AddL2(got[v], ref[v], &err2, &ref2)) return std::numeric_limits<double>::infinity();
  return RelL2From(err2, ref2);
}

size_t Count(const std::vector<std::vector<float>>& v) {
  size_t n = 0;
  for (const auto& x : v) n += x.size();
  return n;
}

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

}  // namespace

double RelL2(const std::vector<std::vector<float>>& got,
             const std::vector<std::vector<double>>& ref) {
  return RelL2Of(got, ref);
}
double RelL2(const std::vector<std::vector<float>>& got,
             const std::vector<std::vector<float>>& ref) {
  return RelL2Of(got, ref);
}

Verdict CompareMlpStep(const MlpSnapshot& got, const MlpStepResult& ref, Pass pass,
                       double tolerance, const std::string& what) {
  Verdict v;
  v.disposition = Disposition::kVerified;
  v.metric = "rel_l2";
  v.tolerance = tolerance;
  // Each measure by name; NaN compares false everywhere, so it is mapped to +inf.
  std::vector<std::pair<std::string, double>> measures;
  const auto add = [&measures](const char* name, double e) {
    measures.emplace_back(name, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
  };
  if (pass == Pass::kInfer) {
    add("logits", RelL2({got.logits}, std::vector<std::vector<double>>{ref.logits}));
    v.checked = v.of = got.logits.size();
  } else {
    add("loss", std::abs(got.loss - ref.loss) / std::max(std::abs(ref.loss), 1e-30));
    std::vector<std::vector<float>> gw = got.grad_weight, gp = got.weight;
    gw.insert(gw.end(), got.grad_bias.begin(), got.grad_bias.end());
    gp.insert(gp.end(), got.bias.begin(), got.bias.end());
    std::vector<std::vector<double>> rw = ref.grad_weight, rp = ref.weight;
    rw.insert(rw.end(), ref.grad_bias.begin(), ref.grad_bias.end());
    rp.insert(rp.end(), ref.bias.begin(), ref.bias.end());
    add("grads", RelL2(gw, rw));
    add("weights", RelL2(gp, rp));
    v.checked = v.of = 1 + Count(gw) + Count(gp);
  }
  size_t worst = 0;
  for (size_t i = 1; i < measures.size(); ++i)
    if (measures[i].second > measures[worst].second) worst = i;
  v.error = measures[worst].second;
  v.ok = v.error <= tolerance;
  v.detail = "worst " + measures[worst].first + " rel-L2 " + Sci(v.error) +
             (v.ok ? " <= " : " > ") + Sci(tolerance);
  if (measures.size() > 1) {
    v.detail += " (";
    for (size_t i = 0; i < measures.size(); ++i)
      v.detail += (i ? ", " : "") + measures[i].first + " " + Sci(measures[i].second);
    v.detail += ")";
  }
  v.detail += " vs float64 over " + std::to_string(v.checked) + " values, " + what;
  return v;
}

}  // namespace dlb
