#include "kernels/common/error.h"

#include <gtest/gtest.h>

namespace dlb {
namespace {

// A library's reason of several lines goes into a label or an error line as one.
TEST(OneLine, FoldsLineBreaksIntoSemicolons) {
  EXPECT_EQ(OneLine("no engine: {\"engineId\":0}\nWarning: NOT_SUPPORTED;  \r\n\n  Reason: x\n"),
            "no engine: {\"engineId\":0}; Warning: NOT_SUPPORTED;; Reason: x");
  EXPECT_EQ(OneLine("one line"), "one line");
  EXPECT_EQ(OneLine(" \n \n"), "");
  EXPECT_EQ(OneLine(""), "");
}

}  // namespace
}  // namespace dlb
