// What several analyses build their rows and notes from.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// "a, b, c": every element, empty ones too.
std::string Join(const std::vector<std::string>& v, const std::string& sep);
// The same without the empty elements.
std::string JoinNonEmpty(const std::vector<std::string>& v, const std::string& sep);
// A name's keys but the ones named, as "key:value" in the name's order joined by '/':
// "dt:f32/fmt:nchw" (KeysExcept(n, {}) is every key).
std::string KeysExcept(const BenchName& n, std::initializer_list<std::string_view> skip);
// The keys that make a case's configuration, all but bs and dt: "fmt:nhwc/pass:fwd".
std::string ConfigKeys(const BenchName& n);
// The values of a name's keys, "fmt:nchw/pass:fwd" -> "nchw fwd" (a part without ':' stays whole):
// legends and labels have little room.
std::string ConfigValues(const std::string& keys);
// Columns that say nothing ("-" in every row: a CPU-only run's GPU time, a dtype no case names)
// are left out.
void DropEmptyColumns(Table* t);
// "bs 8": a batch size in a label of the findings and the first screen.
std::string BatchSizeLabel(double bs);
// A time in ns as a cell; "-" when not finite.
Cell TimeCell(double ns);
// "1.23x", marked where a result behind it was not verified or was mistrusted; "-" when unknown.
Cell SpeedupCell(double x, bool doubtful);
// Whether the y values of a chart's series span more than 20x, so that a log axis shows them.
bool WideY(const Chart& chart);
// Seconds as people read an epoch: "6.19 h", "3.66 min", "988 ms"; "-" when not finite.
std::string FormatDuration(double s);
// "1 GiB", "512 KiB": bytes in powers of 1024 (collective sizes are powers of two); "-" when not
// finite.
std::string FormatBytes(double bytes, int significant = 4);
// "760 TFLOP/s", "914 FLOP/s", "12.3 GB/s": an SI prefix joins a unit that starts a rate;
// "12.3 k images/s" keeps the prefix apart from a count.
std::string WithUnit(double v, const std::string& unit);
// The note that names the input files.
std::string InputsNote(const std::vector<std::string>& inputs);

}  // namespace dlb::report
