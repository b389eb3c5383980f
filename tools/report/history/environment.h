// What a case was measured on besides its code: the libraries it loaded (libraries_loaded and the
// context's library versions), the GPU driver and the --dlb_* flags that change what is measured.
// A series of a case spans changes of these (series.h keys it by tier and build type only), and
// where a change point, or the newest run's flag, meets one, history check and the site name it
// ("cuDNN 9.14.0 → 9.19.0 at #17") instead of sending it to bisect: the code did not change there.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/report/analyses/libraries.h"

namespace dlb::report::history {

// The --dlb_* flags of the context's command line (the family's own where a merged run kept one)
// that change what a case measures, name -> value ("" for a flag given without one): those that
// make a setup (analyses/setup.h's SetupFlags, one list for the report and the history).
std::map<std::string, std::string> MeasuringFlags(const Context& context,
                                                  const std::string& family);

// What differs between two contexts of one case: "cuDNN 9.14.0 → 9.19.0", "driver 550.54 →
// 560.28", "--dlb_gemm_fp8_accum full → fast" ("-": not there). Empty when nothing does. A side
// that records no libraries (a file written before libraries_loaded) names no library change.
std::vector<std::string> EnvironmentChanges(const Context& before, const Context& after,
                                            const std::string& family);

// "cuDNN 9.14.0 → 9.19.0, driver 550.54 → 560.28 at #17"; "" for no change.
std::string EnvironmentNote(const std::vector<std::string>& changes, size_t run);

}  // namespace dlb::report::history
