#include "kernels/data/device_sink.h"

namespace dlb::data {

std::unique_ptr<DeviceSink> MakeDeviceSink(size_t, std::string* why) {
  *why = "built without CUDA";
  return nullptr;
}

}  // namespace dlb::data
