#include "kernels/cudnn/sdpa.h"

#include <cudnn.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cudnn/attn_graph.h"
#include "kernels/cudnn/backend.h"
#include "kernels/cudnn/check.h"
#include "kernels/cudnn/engines.h"

namespace dlb::cudnn {

struct SdpaState {
  AttnShape shape;
  Handle handle;
  attn::OpGraph graph;
  // The usable configurations (the heuristics' first alone unless the caller asked for all) and
  // the one that runs.
  std::vector<engines::Candidate> candidates;
  size_t chosen = 0;
  std::string form;  // "" or " (unified SDPA operation)"
  const engines::Candidate& Chosen() const { return candidates[chosen]; }
  cuda::DeviceBuffer<uint8_t> workspace;
  cuda::DeviceBuffer<float> stats;
  float scale = 0, neg_inf = 0;
  std::vector<Descriptor> packs;
  std::string label;
};

Support SdpaForward::Supports(const AttnShape& s, DType dt) { return attn::FusedSupport(s, dt); }

namespace {

// The label of the chosen configuration; the graph writes softmax statistics where it has their
// buffer.
void Label(SdpaState& st) {
  st.label = "cuDNN " + VersionText(cudnnGetVersion()) + " fused SDPA fwd" + st.form + ", " +
             engines::EngineName(st.Chosen()) + (st.shape.causal ? ", causal" : "") +
             (st.stats.size() > 0 ? "" : ", no softmax statistics");
}

}  // namespace

SdpaForward::SdpaForward(const AttnShape& shape, DType dt, const Strides& strides,
                         cudaStream_t stream, bool stats, bool candidates)
    : state_(std::make_unique<SdpaState>()) {
  RequireSupported(Supports(shape, dt));
  SdpaState& st = *state_;
  st.shape = shape;
  st.shape.pass = AttnPass::kFwd;
  const size_t version = cudnnGetVersion();
  const attn::Lowering low = attn::LoweringFor(st.shape, AttnPass::kFwd, version);
  st.scale = float(shape.Scale());
  st.neg_inf = low.neg_inf;
  st.handle = MakeHandle();
  DLB_CHECK(cudnnSetStream(st.handle.get(), stream));
  if (stats) st.stats = cuda::DeviceBuffer<float>(size_t(shape.batch * shape.heads * shape.seq));

  size_t free_b = 0, total_b = 0;
  cuda::MemInfo(&free_b, &total_b);
  const int64_t ws_limit =
      static_cast<int64_t>(std::min(engines::kWorkspaceCapBytes, 0.5 * double(free_b)));
  // The heuristics' first usable engine, the inputs' precision kept as the attention family's
  // (kernels/cudnn/attn.cpp); with `candidates`, all of them.
  const auto plan = [&](const char* what) {
    st.candidates = engines::Usable(st.graph.graph.get(), st.handle.get(), candidates, ws_limit,
                                    engines::KeepsInputPrecision, what);
    st.chosen = 0;
  };
  // As cudnn-frontend's automatic choice: the unified SDPA operation where the graph has no mask
  // and the loaded cuDNN has it (9.13.1), else the operation graph its composite node lowers to.
  std::string form;
  bool unified = false;
  if (!shape.causal && attn::UnifiedForwardBuilt() && version >= 91301) {
    try {
      st.graph =
          attn::BuildUnifiedForward(st.handle.get(), st.shape, dt, {strides.q, strides.kv}, stats);
      plan("engine for the unified SDPA forward operation");
      unified = true;
      form = " (unified SDPA operation)";
    } catch (const Error& e) {
      form = std::string(" (not the unified SDPA operation: ") + OneLine(e.what()) + ")";
    }
  }
  if (!unified) {
    st.graph =
        attn::BuildForward(st.handle.get(), st.shape, dt, low, {strides.q, strides.kv}, stats);
    plan("fused attention engine for this forward graph");
  }
  int64_t workspace = 0;
  for (const engines::Candidate& c : st.candidates) workspace = std::max(workspace, c.workspace);
  st.workspace = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(workspace));
  st.form = form;
  Label(st);
}

SdpaForward::~SdpaForward() = default;
SdpaForward::SdpaForward(SdpaForward&&) noexcept = default;
SdpaForward& SdpaForward::operator=(SdpaForward&&) noexcept = default;

int SdpaForward::Bind(void* q, void* k, void* v, void* o) {
  using namespace attn;  // NOLINT: the uids
  SdpaState& st = *state_;
  std::vector<int64_t> uids = {kUidQ, kUidK, kUidV, kUidO, kUidScale};
  std::vector<void*> ptrs = {q, k, v, o, &st.scale};
  if (st.stats.size() > 0) {
    uids.push_back(kUidStats);
    ptrs.push_back(st.stats.get());
  }
  if (st.shape.causal) {
    uids.push_back(kUidNegInf);
    ptrs.push_back(&st.neg_inf);
  }
  Descriptor vp = engines::MakeVariantPack(uids, ptrs, st.workspace.get());
  st.packs.push_back(std::move(vp));
  return int(st.packs.size()) - 1;
}

void SdpaForward::Run(int bound) {
  SdpaState& st = *state_;
  DLB_REQUIRE(bound >= 0 && size_t(bound) < st.packs.size(),
              "SdpaForward::Run: no tensors bound as " + std::to_string(bound));
  DLB_CHECK(
      cudnnBackendExecute(st.handle.get(), st.Chosen().plan.get(), st.packs[size_t(bound)].get()));
}

std::string SdpaForward::label() const { return state_->label; }

int SdpaForward::Candidates() const { return int(state_->candidates.size()); }

void SdpaForward::Choose(int i) {
  SdpaState& st = *state_;
  DLB_REQUIRE(i >= 0 && i < Candidates(),
              "SdpaForward::Choose: no configuration " + std::to_string(i));
  st.chosen = size_t(i);
  Label(st);
}

}  // namespace dlb::cudnn
