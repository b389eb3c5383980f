// The GPU's identity in the context: its UUID as nvidia-smi prints it. The text needs no device;
// QueryDevice's reads one where there is one (label gpu: skipped without).
#include "kernels/cuda/device.h"

#include <gtest/gtest.h>

namespace dlb::cuda {
namespace {

TEST(DeviceUuid, TextIsNvidiaSmisAndAllZeroIsNone) {
  // nvidia-smi -L: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-01bb73db-3082-f944-1802-9550f5cb8ecf)".
  const unsigned char h100[16] = {0x01, 0xbb, 0x73, 0xdb, 0x30, 0x82, 0xf9, 0x44,
                                  0x18, 0x02, 0x95, 0x50, 0xf5, 0xcb, 0x8e, 0xcf};
  EXPECT_EQ(UuidText(h100), "GPU-01bb73db-3082-f944-1802-9550f5cb8ecf");
  const unsigned char zero[16] = {};
  EXPECT_EQ(UuidText(zero), "");
}

TEST(DeviceUuid, TheDeviceReportsOne) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string uuid = QueryDevice(0).uuid;
  EXPECT_EQ(uuid.rfind("GPU-", 0), 0u) << uuid;
  EXPECT_EQ(uuid.size(), 40u) << uuid;
}

}  // namespace
}  // namespace dlb::cuda
