// bench_train's flags, in a file of their own: bench_train_native links the family's library
// too, and must not pull in the loader-fed and data-parallel steps (LibTorch's) through them.
#include <utility>

#include "benchmarks/train/ddp.h"
#include "benchmarks/train/family.h"
#include "benchmarks/train/loader_fed.h"

namespace dlb::train {

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags = {AutotuneFlag()};
  for (FlagSpec& f : LoaderFedFlags()) flags.push_back(std::move(f));
  for (FlagSpec& f : DdpFlags()) flags.push_back(std::move(f));
  return flags;
}

}  // namespace dlb::train
