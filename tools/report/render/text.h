// Text helpers the renderers share (internal to render/).
#pragma once

#include <string>

namespace dlb::report {

// snprintf of one number.
std::string Printf(const char* fmt, double v);
// &, <, > and " as HTML entities (element text and attribute values alike).
std::string HtmlEscape(const std::string& s);
// A note's Markdown as HTML: escaped, with `code` and **strong** turned into their elements (the
// only Markdown the notes use), so that no Markdown syntax shows in an HTML report.
std::string HtmlInline(const std::string& md);

}  // namespace dlb::report
