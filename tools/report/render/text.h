// Text helpers the renderers share (internal to render/).
#pragma once

#include <string>

namespace dlb::report {

// snprintf of one number.
std::string Printf(const char* fmt, double v);
// &, <, > and " as HTML entities (element text and attribute values alike).
std::string HtmlEscape(const std::string& s);

}  // namespace dlb::report
