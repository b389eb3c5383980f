#include "kernels/cudnn/sdpa.h"

#include <cudnn.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cudnn/attn_graph.h"
#include "kernels/cudnn/check.h"
#include "kernels/cudnn/engines.h"

namespace dlb::cudnn {

namespace {

// The current device's compute capability major number.
int CcMajor() {
  int device = 0, major = 0;
  DLB_CHECK(cudaGetDevice(&device));
  DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major;
}

std::string VersionText(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace

struct SdpaState {
  AttnShape shape;
  Handle handle;
  attn::OpGraph graph;
  engines::Candidate chosen;
  cuda::DeviceBuffer<uint8_t> workspace;
  cuda::DeviceBuffer<float> stats;
  float scale = 0, neg_inf = 0;
  std::vector<Descriptor> packs;
  std::string label;
};

Support SdpaForward::Supports(const AttnShape& s, DType dt) {
  if (!s.Valid()) return Support::No("invalid attention shape");
  if (dt != DType::kBF16 && dt != DType::kF16)
    return Support::No("cuDNN's fused attention takes f16 or bf16 inputs, not " +
                       std::string(Name(dt)));
  if (s.head_dim % 8 != 0)
    return Support::No("cuDNN's fused attention needs head_dim a multiple of 8, not " +
                       std::to_string(s.head_dim));
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  const int major = CcMajor();
  if (major < 8) return Support::No("cuDNN's fused attention needs sm_80 or newer");
  const int64_t max_head_dim = major == 9 ? 256 : 128;
  if (s.head_dim > max_head_dim)
    return Support::No("cuDNN's fused attention takes head_dim up to " +
                       std::to_string(max_head_dim) + " on this GPU, not " +
                       std::to_string(s.head_dim));
  return Support::Yes();
}

SdpaForward::SdpaForward(const AttnShape& shape, DType dt, const Strides& strides,
                         cudaStream_t stream)
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
  st.stats = cuda::DeviceBuffer<float>(size_t(shape.batch * shape.heads * shape.seq));
  st.graph = attn::BuildForward(st.handle.get(), st.shape, dt, low, {strides.q, strides.kv});

  size_t free_b = 0, total_b = 0;
  cuda::MemInfo(&free_b, &total_b);
  const int64_t ws_limit =
      static_cast<int64_t>(std::min(engines::kWorkspaceCapBytes, 0.5 * double(free_b)));
  int proposed = 0;
  bool found = false;
  for (auto mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (engines::Candidate& c : engines::Heuristics(st.graph.graph.get(), mode)) {
      ++proposed;
      // The inputs' precision kept, as the attention family's engines (kernels/cudnn/attn.cpp).
      if (c.numerical.count(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) continue;
      if (!engines::Finalize(c, st.handle.get()) || c.workspace > ws_limit) continue;
      st.chosen = std::move(c);
      found = true;
      break;
    }
    if (found) break;
  }
  if (!found)
    throw Unsupported("no cuDNN fused attention engine for this forward graph (" +
                      std::to_string(proposed) + " proposed, none built within the workspace)");
  st.workspace = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(st.chosen.workspace));
  st.label = "cuDNN " + VersionText(version) + " fused SDPA fwd, " +
             engines::EngineName(st.chosen) + (shape.causal ? ", causal" : "");
}

SdpaForward::~SdpaForward() = default;
SdpaForward::SdpaForward(SdpaForward&&) noexcept = default;
SdpaForward& SdpaForward::operator=(SdpaForward&&) noexcept = default;

int SdpaForward::Bind(void* q, void* k, void* v, void* o) {
  using namespace attn;  // NOLINT: the uids
  SdpaState& st = *state_;
  std::vector<int64_t> uids = {kUidQ, kUidK, kUidV, kUidO, kUidStats, kUidScale};
  std::vector<void*> ptrs = {q, k, v, o, st.stats.get(), &st.scale};
  if (st.shape.causal) {
    uids.push_back(kUidNegInf);
    ptrs.push_back(&st.neg_inf);
  }
  void* ws = st.workspace.get();
  Descriptor vp = MakeDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  engines::Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()),
               uids.data());
  engines::Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
               int64_t(ptrs.size()), ptrs.data());
  engines::Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  DLB_CHECK(cudnnBackendFinalize(vp.get()));
  st.packs.push_back(std::move(vp));
  return int(st.packs.size()) - 1;
}

void SdpaForward::Run(int bound) {
  SdpaState& st = *state_;
  DLB_REQUIRE(bound >= 0 && size_t(bound) < st.packs.size(),
              "SdpaForward::Run: no tensors bound as " + std::to_string(bound));
  DLB_CHECK(
      cudnnBackendExecute(st.handle.get(), st.chosen.plan.get(), st.packs[size_t(bound)].get()));
}

std::string SdpaForward::label() const { return state_->label; }

}  // namespace dlb::cudnn
