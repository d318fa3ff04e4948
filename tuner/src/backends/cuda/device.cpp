// Device discovery through the static CUDA runtime (which loads libcuda lazily).
#include "ktune/device.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cctype>

#include "ktune/error.h"

namespace ktune {

namespace {
std::string uuid_text(const cudaUUID_t& u) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    out += fmt::format("{:02x}", static_cast<unsigned char>(u.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) out += '-';
  }
  return out;
}
}  // namespace

DeviceQuery list_devices() {
  DeviceQuery q;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (err == cudaErrorInsufficientDriver)
      q.problem = "no CUDA driver found (libcuda.so.1 missing or too old for CUDA runtime " +
                  std::to_string(CUDART_VERSION / 1000) + "." +
                  std::to_string(CUDART_VERSION % 1000 / 10) + ")";
    else if (err == cudaErrorNoDevice)
      q.problem = "the CUDA driver reports no device";
    else
      q.problem = fmt::format("cannot query CUDA devices: {}", cudaGetErrorString(err));
    return q;
  }
  if (count == 0) {
    q.problem = "the CUDA driver reports no device";
    return q;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.ordinal = i;
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.arch = fmt::format("sm_{}{}", p.major, p.minor);
    d.sm_count = p.multiProcessorCount;
    d.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
    d.l2_bytes = p.l2CacheSize;
    d.driver_version = driver;
    d.runtime_version = runtime;
    d.uuid = uuid_text(p.uuid);
    auto& l = d.limits;
    l.compute_capability = p.major * 10 + p.minor;
    l.max_threads_per_block = p.maxThreadsPerBlock;
    l.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    l.max_shared_memory_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock);
    l.max_shared_memory_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlockOptin);
    l.max_registers_per_block = p.regsPerBlock;
    l.max_block_dim_x = p.maxThreadsDim[0];
    l.max_block_dim_y = p.maxThreadsDim[1];
    l.max_block_dim_z = p.maxThreadsDim[2];
    l.max_grid_dim_x = p.maxGridSize[0];
    l.max_grid_dim_y = p.maxGridSize[1];
    l.max_grid_dim_z = p.maxGridSize[2];
    l.multiprocessor_count = p.multiProcessorCount;
    l.warp_size = p.warpSize;
    q.devices.push_back(std::move(d));
  }
  if (q.devices.empty()) q.problem = "no CUDA device could be queried";
  return q;
}

DeviceInfo require_device(int ordinal) {
  DeviceQuery q = list_devices();
  if (q.devices.empty())
    throw Error(ErrorKind::kDevice, fmt::format("no CUDA device: {}; this command needs a GPU", q.problem));
  if (ordinal < 0 || ordinal >= static_cast<int>(q.devices.size()))
    throw Error(ErrorKind::kUsage, fmt::format("device {} does not exist; this machine has {} CUDA device(s)",
                                               ordinal, q.devices.size()));
  return q.devices[static_cast<std::size_t>(ordinal)];
}

int compute_capability_of(const std::string& arch) {
  std::string digits;
  if (arch.rfind("sm_", 0) == 0) {
    for (std::size_t i = 3; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i)
      digits += arch[i];
  }
  const std::size_t consumed = 3 + digits.size();
  const bool suffix_ok = consumed == arch.size() || (consumed + 1 == arch.size() && (arch.back() == 'a' || arch.back() == 'f'));
  if (digits.size() < 2 || !suffix_ok)
    throw Error(ErrorKind::kUsage, fmt::format("'{}' is not an architecture; expected sm_NN, e.g. sm_90", arch));
  return std::stoi(digits);
}

}  // namespace ktune
