// The training step fed by a real input pipeline (the data-loading family's) instead of its static
// batch, end to end: kernels/torch/loader_fed_step.h. Where the build has it (LibTorch with CUDA,
// TurboJPEG: DLBENCH_HAVE_TORCH_LOADER_FED); elsewhere these register nothing and add no flag.
#pragma once

#include <vector>

#include "fixtures/harness.h"

namespace dlb::train {

// --dlb_data, --dlb_workers, ... for the loader-fed steps, as the data-loading family has them.
std::vector<FlagSpec> LoaderFedFlags();

// The loader-fed cases of the run (matrix::kLoaderFedModels ...): the case also times the step
// alone and reports starvation. train/gpu/libtorch/<model>/bs:<b>/dt:amp_bf16/fmt:nhwc/pass:train
// /graph:1/loader:<turbojpeg|nvjpeg>/workers:<n>.
void RegisterLoaderFedCases();

}  // namespace dlb::train
