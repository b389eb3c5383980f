#include "kernels/common/train.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/common/stats.h"

namespace dlb {

MlpParams SeededMlpParams(uint64_t seed, const std::vector<int64_t>& widths) {
  if (widths.size() < 2) throw Error("an MLP needs at least two widths (input and output)");
  MlpParams p;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    if (in <= 0 || out <= 0) throw Error("MLP widths must be positive");
    const float bound = 1.0f / std::sqrt(float(in));
    std::vector<float> w =
        SeededValues(TensorSeed(seed, 10 + 2 * int(l)), size_t(out * in), DType::kF32);
    std::vector<float> b =
        SeededValues(TensorSeed(seed, 11 + 2 * int(l)), size_t(out), DType::kF32);
    for (float& v : w) v *= bound;
    for (float& v : b) v *= bound;
    p.weight.push_back(std::move(w));
    p.bias.push_back(std::move(b));
  }
  return p;
}

std::vector<int64_t> SeededLabels(uint64_t seed, int64_t batch, int64_t classes) {
  if (classes <= 0) throw Error("classes must be positive");
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  const uint64_t s = TensorSeed(seed, 1);
  for (int64_t i = 0; i < batch; ++i) {
    // [-1, 1) -> [0, classes): 24 random bits, so every class up to 2^24 is reachable.
    const float u = (detail::UnroundedSeededValueAt(s, uint64_t(i)) + 1.0f) * 0.5f;
    labels[size_t(i)] = std::min<int64_t>(classes - 1, int64_t(u * float(classes)));
  }
  return labels;
}

MlpBatch SeededMlpBatch(uint64_t seed, int64_t batch, int64_t features, int64_t classes) {
  MlpBatch b;
  b.x = SeededValues(TensorSeed(seed, 0), size_t(batch * features), DType::kF32);
  b.labels = SeededLabels(seed, batch, classes);
  return b;
}

std::string WidthsText(const std::vector<int64_t>& widths) {
  std::string s;
  for (size_t i = 0; i < widths.size(); ++i) s += (i ? "-" : "") + std::to_string(widths[i]);
  return s;
}

double MlpStepFlops(const std::vector<int64_t>& widths, int64_t batch, Pass pass) {
  double macs = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) macs += double(widths[l]) * double(widths[l + 1]);
  return 2.0 * double(batch) * macs * (pass == Pass::kTrain ? 3 : 1);
}

double RelL2From(double err2, double ref2) {
  if (ref2 == 0) return err2 == 0 ? 0 : INFINITY;
  return std::sqrt(err2 / ref2);
}

double StepBytes(double param_bytes, double batch_bytes, Pass pass, bool adamw) {
  const double passes = pass == Pass::kTrain ? (adamw ? 10 : 8) : 1;
  return passes * param_bytes + batch_bytes;
}

Cost MlpStepCost(const TrainShape& shape) {
  Cost c;
  c.items = double(shape.batch);
  c.flops = MlpStepFlops(shape.widths, shape.batch, shape.pass);
  double params = 0;
  for (size_t l = 0; l + 1 < shape.widths.size(); ++l)
    params += double(shape.widths[l] + 1) * double(shape.widths[l + 1]);
  const double batch = shape.widths.empty() ? 0
                                            : double(shape.batch) * double(shape.widths[0]) * 4 +
                                                  double(shape.batch) * 8;
  c.bytes = StepBytes(params * 4, batch, shape.pass, false);
  return c;
}

StepPhases StepPhases::FromSamples(std::vector<double> fwd, std::vector<double> bwd,
                                   std::vector<double> opt) {
  if (fwd.empty()) throw Error("step phases: no forward samples");
  StepPhases p;
  p.measured = true;
  p.fwd_s = UpperMedian(std::move(fwd));
  p.bwd_s = UpperMedian(std::move(bwd));
  p.opt_s = UpperMedian(std::move(opt));
  return p;
}

std::vector<std::pair<std::string, double>> StepPhases::Counters(Pass pass) const {
  // The names are fixtures/schema/schema.h's kFwdS, kBwdS and kOptS (kernels/ does not include
  // fixtures/).
  std::vector<std::pair<std::string, double>> out;
  if (!measured) return out;
  out.emplace_back("fwd_s", fwd_s);
  if (pass == Pass::kTrain) {
    out.emplace_back("bwd_s", bwd_s);
    out.emplace_back("opt_s", opt_s);
  }
  return out;
}

std::vector<std::pair<std::string, double>> StepPhases::Counters(Pass pass,
                                                                 double peak_mem_bytes) const {
  std::vector<std::pair<std::string, double>> out = Counters(pass);
  out.emplace_back("peak_mem_bytes", peak_mem_bytes);
  return out;
}

}  // namespace dlb
