// The inference steps this build has: oneDNN's when it is built. The one place the family names
// its backends' build options; registration only visits the lists.
#pragma once

#include "fixtures/case/op_list.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/infer.h"
#endif

namespace dlb::infer {

#ifdef DLBENCH_HAVE_ONEDNN
using CpuOps = OpList<onednn::OneDnnInfer>;
#else
using CpuOps = OpList<>;
#endif

using GpuOps = OpList<>;

using Ops = decltype(CpuOps{} + GpuOps{});

}  // namespace dlb::infer
