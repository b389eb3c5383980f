#include "benchmarks/train/family.h"

#include <algorithm>
#include <sstream>

#include "benchmarks/train/matrix.h"
#include "fixtures/harness.h"

namespace dlb::train {

namespace {

std::vector<int64_t> ParseWidths(const CsvRow& row) {
  std::vector<int64_t> out;
  std::stringstream in(row.Str("widths"));
  std::string part;
  while (std::getline(in, part, '-')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(part, &used);
      if (used != part.size() || v <= 0) throw std::invalid_argument(part);
      out.push_back(v);
    } catch (const std::exception&) {
      row.Fail("column 'widths': expected positive integers joined by '-', got '" +
               row.Str("widths") + "'");
    }
  }
  return out;
}

// A transformers file (its header has `seq`): name, count, model, vocab, seq, dataset,
// epoch_tokens, tier[, network]. The model must be one kernels/torch/transformer.h builds; the
// vocabulary is checked against it when a case is built.
std::vector<Model> LoadTransformers(const std::string& path) {
  std::vector<Model> out;
  std::vector<std::string> seen;
  for (const auto& row : LoadCsv(
           path, {"name", "count", "model", "vocab", "seq", "dataset", "epoch_tokens", "tier"})) {
    Model m;
    m.basics = ReadBasics(row, &seen);
    m.shape.model = row.Str("model");
    m.shape.classes = row.Int("vocab");
    m.shape.seq = row.Int("seq");
    m.shape.channels = 0;
    m.dataset = row.Str("dataset");
    m.epoch_items = row.Int("epoch_tokens");
    if (m.shape.model.empty()) row.Fail("column 'model' is empty");
    if (m.shape.classes <= 0) row.Fail("vocab must be positive");
    if (m.shape.seq <= 0) row.Fail("seq must be positive");
    if (m.epoch_items <= 0) row.Fail("epoch_tokens must be positive");
    out.push_back(m);
  }
  return out;
}
}  // namespace

std::vector<Model> LoadModels(const std::string& path) {
  {
    const std::vector<CsvRow> rows = LoadCsv(path, {"name"});
    if (!rows.empty() && rows.front().Has("seq")) return LoadTransformers(path);
  }
  std::vector<Model> out;
  std::vector<std::string> seen;
  for (const auto& row : LoadCsv(path, {"name", "count", "model", "image", "classes", "widths",
                                        "dataset", std::string(schema::kEpochItems), "tier"})) {
    Model m;
    m.basics = ReadBasics(row, &seen);
    m.shape.model = row.Str("model");
    m.shape.image = row.Int("image");
    m.shape.classes = row.Int("classes");
    m.dataset = row.Str("dataset");
    m.epoch_items = row.Int(std::string(schema::kEpochItems));
    if (m.shape.model.empty()) row.Fail("column 'model' is empty");
    if (m.shape.classes <= 0) row.Fail("classes must be positive");
    if (m.epoch_items <= 0) row.Fail("epoch_items must be positive");
    if (m.shape.image == 0) {
      m.shape.widths = ParseWidths(row);
      if (m.shape.widths.size() < 2) row.Fail("an MLP needs at least two widths");
      if (m.shape.widths.back() != m.shape.classes) row.Fail("the last width must equal classes");
      m.shape.channels = 0;
    } else if (!row.Str("widths").empty()) {
      row.Fail("widths are for the MLP (image 0) only");
    }
    out.push_back(m);
  }
  return out;
}

std::vector<Model> TierModels() { return TierRows<Model>("train_", dlb::Opts().tier, LoadModels); }

Options& FamilyOptions() {
  static Options o;
  return o;
}

std::vector<int> Batches(const Model& m, bool gpu) {
  const bool at224 = m.shape.image >= 224;
  if (!gpu && m.shape.image > 0)
    return BatchSizes(at224 ? matrix::kCpuImageBatches224 : matrix::kCpuImageBatches);
  return BatchSizes(at224 ? matrix::kGpuBatches224 : matrix::kGpuBatches);
}

std::vector<int> AnyDeviceBatches(const Model& m) {
  std::vector<int> all = Batches(m, true);
  for (int b : Batches(m, false))
    if (!Contains(all, b)) all.push_back(b);
  return all;
}

bool Contains(const std::vector<int>& batches, int b) {
  return std::find(batches.begin(), batches.end(), b) != batches.end();
}

const std::vector<Config>& Configs(bool gpu) {
  return (gpu ? matrix::kGpuConfigs : matrix::kCpuConfigs).Now();
}

// --dlb_autotune: how LibTorch's convolutions pick their cuDNN algorithm. search (and cache, the
// other families' default, which LibTorch keeps in the process only): cudnn.benchmark, as PyTorch
// users train; heuristic: cuDNN's first choice.
FlagSpec AutotuneFlag() {
  return EnumFlag(
      "autotune",
      "cache|search|heuristic: how the LibTorch steps' convolutions pick their cuDNN "
      "algorithm. cache (default) and search: cudnn.benchmark (PyTorch's search, "
      "kept for the process); heuristic: cudnn.benchmark off, cuDNN's first choice",
      {{"cache", Algo::kCache}, {"search", Algo::kSearch}, {"heuristic", Algo::kHeuristic}},
      &FamilyOptions().autotune);
}

RunConfig RunConfigOf(const Config& c) {
  RunConfig cfg;
  cfg.algo = FamilyOptions().autotune == Algo::kHeuristic ? Algo::kHeuristic : Algo::kSearch;
  cfg.dtype = c.dtype;
  cfg.layout = c.layout;
  cfg.seed = dlb::Opts().seed;
  cfg.threads = dlb::Opts().threads;
  return cfg;
}

Config AmpNhwcTrain(bool graph) {
  Config c;
  c.amp = true;
  c.dtype = DType::kBF16;
  c.layout = Layout::kNHWC;
  c.pass = Pass::kTrain;
  c.graph = graph;
  return c;
}

TrainShape ShapeOf(const Model& m, int batch, const Config& c) {
  TrainShape shape = m.shape;
  shape.batch = batch;
  shape.pass = c.pass;
  shape.graph = c.graph;
  shape.amp = c.amp;
  return shape;
}

NameKeys KeysOf(const Model& m, int batch, const Config& c, bool gpu) {
  NameKeys keys = {{key::kBatch, std::to_string(batch)}, {key::kDType, DtName(c)}};
  if (m.shape.image > 0) keys.push_back({key::kLayout, Name(c.layout)});
  keys.push_back({key::kPass, Name(c.pass)});
  if (gpu) keys.push_back({key::kGraph, c.graph ? "1" : "0"});
  return keys;
}

std::vector<TransformerCase> TransformerCases(const Model& m, bool gpu) {
  const bool gpt = m.shape.model.rfind("gpt", 0) == 0;
  const bool tiny = m.shape.model.find("tiny") != std::string::npos;
  auto seq_of = [&m](int64_t s) { return s == matrix::kOwnSeq ? m.shape.seq : s; };
  std::vector<TransformerCase> out;
  Config c;
  c.pass = Pass::kTrain;
  if (!gpu) {
    const std::vector<int64_t>& seqs =
        tiny ? matrix::kCpuTinySeqs.Now()
             : (gpt ? matrix::kCpuGptSeqs : matrix::kCpuOtherSeqs).Now();
    if (seqs.empty()) return out;
    const std::vector<int> batches =
        BatchSizes(tiny ? matrix::kCpuTinyBatches : matrix::kCpuBatches);
    for (int64_t seq : seqs)
      for (int b : batches) out.push_back({b, seq_of(seq), c});
    return out;
  }
  if (tiny) return out;
  c.amp = true;
  c.dtype = DType::kBF16;
  const std::vector<int> batches =
      BatchSizes(gpt ? matrix::kGpuGptBatches : matrix::kGpuOtherBatches);
  const std::vector<bool>& graphs = (gpt ? matrix::kGpuGptGraphs : matrix::kGpuOtherGraphs).Now();
  const int64_t seq = seq_of(matrix::kGpuSeq.Now());
  for (int b : batches)
    for (bool g : graphs) {
      c.graph = g;
      out.push_back({b, seq, c});
    }
  return out;
}

std::string DtName(const Config& c) {
  if (c.amp) return "amp_bf16";
  return c.dtype == DType::kTF32 ? "tf32" : "f32";
}

}  // namespace dlb::train
