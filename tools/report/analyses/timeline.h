// summary --trace: the device monitor's trace drawn as the timeline nvtop shows (SM clock, power,
// temperature, utilisation against time, each case marked where it begins).
#pragma once

#include "tools/report/read/trace.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// Per case (in the order the trace first meets it): its samples, span, median SM clock, mean
// power, highest temperature, mean utilisation and the throttle reasons seen; then one chart per
// quantity over time (HTML draws them), each case's start marked.
Section TraceSection(const Trace& trace);

}  // namespace dlb::report
