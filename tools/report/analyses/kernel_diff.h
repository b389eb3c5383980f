// Kernel diffs: which kernels (copies, oneDNN primitives) of a case appeared, vanished, grew or
// shrank between two kernel tables, and how much of the case's change in time each accounts for.
// compare and history check show them under the cases they flag.
#pragma once

#include <string>
#include <vector>

#include "tools/report/read/entry.h"
#include "tools/report/render/document.h"

namespace dlb::report {

enum class KernelChangeKind { kAppeared, kVanished, kGrew, kShrank, kSame };
const char* KernelChangeName(KernelChangeKind k);

struct KernelChange {
  std::string name, kind;  // kind: the table's (kernel, memcpy, memset, primitive)
  KernelChangeKind change = KernelChangeKind::kSame;
  double base_s = 0, new_s = 0;  // seconds per Run(): total_s / runs (0 where absent)
  // Launches (executions) per Run() on each side (0 where absent): a kernel that now runs 16 times
  // where it ran once says more than its time does.
  double base_launches = 0, new_launches = 0;
  double delta_s = 0;            // new_s - base_s
  double of_case = 0;            // delta_s / the case's change in seconds per Run(); NaN if none
};

struct KernelDiff {
  double case_delta_s = 0;  // the case's change: new - base median time per Run(), in seconds
  // Every kernel of either table, by |delta_s|, largest first.
  std::vector<KernelChange> changes;
  double kernels_delta_s = 0;  // sum of every delta_s: the change the tables account for
  double explained = 0;        // kernels_delta_s / case_delta_s; NaN when the case did not change
};

// A kernel whose time per Run() moved by less than this share of its larger side is "same".
inline constexpr double kKernelSame = 0.05;

// Rows with the same name and kind (the tables key by name; a kind keeps a copy and a kernel of
// one name apart) are summed. base_ns, new_ns: the case's median time per Run() on each side.
KernelDiff DiffKernels(const KernelTable& base, const KernelTable& now, double base_ns,
                       double new_ns);

// "+a 61%, -b 30%, ↑c 9% (launches 1 → 16) (kernels: 98% of the change)": the `top` largest
// changes that are not "same", each with its share of the case's change and, where its launches
// per Run() changed, both counts, for one cell of a table.
std::string KernelDiffSummary(const KernelDiff& diff, size_t top = 3);
// The diff as a table for the details under a flagged case: the `top` largest changes (not "same"),
// then one row for the rest and one for the total.
Table KernelDiffTable(const KernelDiff& diff, const std::string& title, size_t top = 8);

}  // namespace dlb::report
