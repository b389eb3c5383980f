// The default CPU thread count, the physical cores this process may run on, and the load on them.
#include "kernels/common/cpu.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <string>

namespace dlb {
namespace {

TEST(Cpu, TheDefaultThreadsAreThePhysicalCoresTheProcessMayRunOn) {
  const CpuInfo& cpu = HostCpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(AllowedCpus(), CPU_COUNT(&set));
  EXPECT_GE(AllowedPhysicalCores(), 1);
  EXPECT_LE(AllowedPhysicalCores(), cpu.physical);
  EXPECT_LE(AllowedPhysicalCores(), AllowedCpus());
  // Every online CPU allowed: all the machine's cores, and nothing to explain.
  if (AllowedCpus() == cpu.logical) {
    EXPECT_EQ(AllowedPhysicalCores(), cpu.physical);
    EXPECT_EQ(AllowedPhysicalCoresWhy(), "physical cores");
  } else if (AllowedPhysicalCores() < cpu.physical) {
    EXPECT_EQ(AllowedPhysicalCoresWhy(), "physical cores in the CPU affinity");
  }
}

// The load on the CPUs this process may run on, in CPUs: between none and all of them.
TEST(Cpu, BusyAllowedCpusIsAShareOfTheAllowedCpus) {
  const double busy = BusyAllowedCpus(0.05);
  ASSERT_GE(busy, 0.0) << "/proc/stat unreadable";
  EXPECT_LE(busy, AllowedCpus() + 1e-9);
}

}  // namespace
}  // namespace dlb
