// The convolution family's own code: its workload rows (fixtures/workloads/conv_*.csv, one file per
// network), its flag (--dlb_autotune, alias --dlb_conv_algo) and the autotune cache's place, its
// verifier (the float64 reference convolution of each pass) and how one case is added.
// benchmarks/conv.cpp only declares which cases exist.
#pragma once

#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::conv {

struct Workload {
  WorkloadBasics basics;
  ConvShape shape;  // n = 1: the batch size comes from the tier
};
// One conv_*.csv file; a malformed row or an impossible convolution throws "file:line: ...".
std::vector<Workload> LoadWorkloads(const std::string& path);
// Every conv_*.csv of the workloads folder, rows above the tier left out.
std::vector<Workload> TierWorkloads();

// The family's own flags (the run's are dlb::Opts()).
struct FamilyOptionValues {
  Algo algo = Algo::kCache;  // --dlb_autotune (RunConfig::algo)
};
const FamilyOptionValues& FamilyOptions();
// --dlb_autotune, and --dlb_conv_algo as its alias.
std::vector<FlagSpec> Flags();

// The float64 reference convolution of the pass at sampled output positions.
VerifyFn Verifier(const ConvShape& shape, const RunConfig& cfg, ConvPass pass);

// The layout a framework uses for the dtype: NCHW for 32-bit, NHWC (channels-last) for 16-bit.
Layout NaturalLayout(DType dt);

// The pass of an op type: the template argument of OneDnnConv<pass>, CudnnConv<pass>.
template <class Op>
struct PassOf;
template <template <ConvPass> class OpT, ConvPass P>
struct PassOf<OpT<P>> {
  static constexpr ConvPass value = P;
};

// Registers one case: conv/<device>/<backend>/<workload>/bs:/dt:/fmt:/pass:, the pass from the op.
template <class Op>
void Add(const Workload& w, int batch, DType dt, Layout layout) {
  ConvShape shape = w.shape;
  shape.n = batch;
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.layout = layout;
  cfg.seed = dlb::Opts().seed;
  cfg.threads = dlb::Opts().threads;
  cfg.algo = FamilyOptions().algo;
  if (cfg.algo == Algo::kCache) UseAutotuneCache();
  NameKeys keys = {{key::kBatch, std::to_string(batch)},
                   {key::kDType, std::string(Name(dt))},
                   {key::kLayout, Name(layout)},
                   {key::kPass, Name(PassOf<Op>::value)}};
  Register<Op>("conv", w.basics, std::move(keys), shape, cfg,
               CaseInfo::Of(w.basics, dt, batch, Verifier(shape, cfg, PassOf<Op>::value)));
}

}  // namespace dlb::conv
