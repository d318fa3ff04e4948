// CUDA devices as ktune sees them. The CUDA runtime is linked statically and loads the driver
// only when first asked, so a machine without a GPU or driver runs every command that needs
// none, and list_devices() says plainly why there is no device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/device_identity.h"
#include "ktune/kernel.h"

namespace ktune {

// A CUDA device of this machine: what identifies it (ktune/device_identity.h) and what the tuner
// reads besides.
struct DeviceInfo : DeviceIdentity {
  int ordinal = 0;
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

// The CUDA driver (libcuda.so.1) loaded and held while the result lives; null where it cannot be
// loaded (no driver: nothing that needs the GPU can start). Work that only pays off on a GPU
// (the GPU worker's and the compile processes' early start) is started only where it is not
// null, and the holder keeps the driver loaded until the runtime's own first call loads it.
std::shared_ptr<void> load_cuda_driver();

}  // namespace ktune
