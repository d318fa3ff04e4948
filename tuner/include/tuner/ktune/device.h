// CUDA devices as ktune sees them. The CUDA runtime is linked statically and loads the driver
// only when first asked, so a machine without a GPU or driver runs every command that needs
// none, and list_devices() says plainly why there is no device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ktune/kernel.h"

namespace ktune {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string arch;  // "sm_90"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  int driver_version = 0;  // 13000 for CUDA 13.0
  int runtime_version = 0;
  std::string uuid;
  DeviceLimits limits;
};

struct DeviceQuery {
  std::vector<DeviceInfo> devices;
  std::string problem;  // why there are none: "no CUDA driver (libcuda) found" ...
};

// Never throws: a missing driver or device is reported in DeviceQuery::problem.
DeviceQuery list_devices();

// The device to tune on; throws Error(kDevice) "no CUDA device: ..." or for a bad ordinal.
DeviceInfo require_device(int ordinal);

}  // namespace ktune
