#include "kernels/onednn/fastest_matmul.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/cpu.h"
#include "kernels/onednn/context.h"

namespace dlb::onednn {

namespace {

using memory = dnnl::memory;

// A candidate being timed: zero-filled operands in its layouts, its weights in copies enough to
// span twice the last-level cache (at most 64), used in turn, so that a matrix larger than the
// caches streams from memory as a step's does, and one that fits them stays there as a small
// model's whole step does.
struct TimedImpl {
  MatmulImpl impl;
  std::vector<memory> weights;
  memory src, dst, scratch;
  std::vector<std::unordered_map<int, memory>> args;  // one set a copy
  size_t next = 0;
};

TimedImpl ToTime(MatmulImpl impl) {
  TimedImpl t;
  const auto zeroed = [](const memory::desc& md) {
    memory m(md, Engine());
    std::memset(m.get_data_handle(), 0, md.get_size());
    return m;
  };
  const size_t bytes = std::max<size_t>(impl.weights.get_size(), 1);
  const size_t copies =
      std::clamp<size_t>((2 * LastLevelCacheBytes() + bytes - 1) / bytes, size_t{1}, size_t{64});
  t.src = zeroed(impl.src);
  t.dst = zeroed(impl.dst);
  t.scratch = memory(memory::desc({int64_t(std::max<size_t>(impl.scratch, 1))},
                                  memory::data_type::u8, memory::format_tag::a),
                     Engine());
  for (size_t i = 0; i < copies; ++i) {
    t.weights.push_back(zeroed(impl.weights));
    t.args.push_back({{DNNL_ARG_SRC, t.src},
                      {DNNL_ARG_WEIGHTS, t.weights.back()},
                      {DNNL_ARG_DST, t.dst},
                      {DNNL_ARG_SCRATCHPAD, t.scratch}});
  }
  t.impl = std::move(impl);
  return t;
}

}  // namespace

MatmulImpl Built(const dnnl::matmul::primitive_desc& pd) {
  return {pd.impl_info_str(), dnnl::matmul(pd), pd.src_desc(),
          pd.weights_desc(),  pd.dst_desc(),    pd.scratchpad_desc().get_size()};
}

// The fastest of every implementation oneDNN offers for a matmul (reference ones aside, unless
// they are all it offers), each timed on single products after a warm-up (the fastest of at least
// 3 runs and 5 ms, the two best timed again), under the caller's thread count: at one token a
// step its first choice is not always its fastest (AMX brgemm streamed a 1B-class model's weights
// at 16-17 GB/s where AVX-512 bf16's read 21-22 on one Sapphire Rapids host with oneDNN 2.6, and
// its tile set-up costs a tiny model's products microseconds). `offered` gets how many there were.
MatmulImpl FastestMatmul(const memory::desc& src, const memory::desc& wei, const memory::desc& dst,
                         const dnnl::primitive_attr& attr, int* offered) {
  std::vector<MatmulImpl> all;
  ForEachMatmulImpl(src, wei, dst, attr, [&](const dnnl::matmul::primitive_desc& pd) {
    all.push_back(Built(pd));
    return true;
  });
  std::vector<MatmulImpl> impls;
  for (MatmulImpl& m : all)
    if (m.name.rfind("ref", 0) != 0) impls.push_back(std::move(m));
  if (impls.empty()) impls.push_back(std::move(all.front()));
  *offered = int(impls.size());
  if (impls.size() == 1) return std::move(impls.front());
  autotune::Policy policy;
  policy.warmup_runs = 1;
  policy.score = autotune::Policy::Score::kMinOfRuns;
  policy.budget_ms = 5;
  policy.min_runs = 3;
  policy.max_runs = 200;
  policy.retime_top = 2;
  policy.retime_budget_ms = 5;
  policy.retime_min_runs = 3;
  policy.retime_max_runs = 200;
  autotune::Tuner<TimedImpl> tuner(policy, [](TimedImpl& c, int runs) {
    return autotune::TimeOnHost(runs, [&] {
      c.impl.prim.execute(Stream(), c.args[c.next++ % c.args.size()]);
      Stream().wait();
    });
  });
  for (MatmulImpl& m : impls) {
    std::string name = m.name;
    tuner.Offer(std::move(name), ToTime(std::move(m)));
  }
  return std::move(tuner.Finish().impl);
}

}  // namespace dlb::onednn
