// The nested objects of dlbench's result fields, "roofline" and "kernels" (fixtures/schema/
// schema.h), read from the value the reader captured under them. A malformed one never fails the
// file: it is left out, and one line in ResultFields::ignored says why, for the report to show.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "tools/report/read/entry.h"

namespace dlb::report::read {

// Whether the reader captures the value of this key of the "dlbench" object.
bool IsResultObject(std::string_view key);
// Reads `value` (the whole value of `key`, any JSON type; `truncated`: nested deeper than the
// reader keeps) into `out`.
void ReadResultObject(std::string_view key, const nlohmann::json& value, bool truncated,
                      ResultFields* out);

}  // namespace dlb::report::read
