// What names one GPU model, the same for the tuner's device (DeviceInfo), the results database's
// row (DeviceRecord) and the run-time client's device (ClientDevice): each is a DeviceIdentity
// with what it needs besides. Two devices are the same device when their name, architecture,
// multiprocessor count and memory size agree (the database's devices table is unique on those
// four); the compute capability follows from the architecture.
#pragma once

#include <cstdint>
#include <string>

namespace ktune {

struct DeviceIdentity {
  std::string name;  // "NVIDIA H200"
  std::string arch;  // "sm_90"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::int64_t memory_bytes = 0;

  bool same_device(const DeviceIdentity& other) const {
    return name == other.name && arch == other.arch && sm_count == other.sm_count &&
           memory_bytes == other.memory_bytes;
  }
};

}  // namespace ktune
