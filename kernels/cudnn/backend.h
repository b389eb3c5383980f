// What the ops on cuDNN's backend graph API (the convolutions, the attention) write alike: a
// tensor descriptor, the label of the engine configuration chosen, and the workspace sizes in it.
// Internal to kernels/cudnn.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <string>

#include "kernels/cudnn/check.h"
#include "kernels/cudnn/engines.h"

namespace dlb::cudnn::engines {

// A finalized tensor descriptor: 16-byte aligned, `dims` and `strides` of rank 4. A virtual one
// lives only inside the graph; a by-value one is a scalar the variant pack passes by address.
Descriptor TensorDescriptor(int64_t uid, const std::array<int64_t, 4>& dims,
                            const std::array<int64_t, 4>& strides, cudnnDataType_t type,
                            bool is_virtual = false, bool by_value = false);

// "engine 12 {k2=3} [tensor_core] from heur_a#0": the engine, its knobs, `notes` (the op's
// choice of the numerical and behaviour notes worth naming, space-separated; none: no brackets),
// and which heuristic proposed it at which rank.
std::string EngineLabel(const Candidate& c, const std::string& notes);

// "12.50MiB".
std::string Mib(double bytes);

}  // namespace dlb::cudnn::engines
