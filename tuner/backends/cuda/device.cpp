// Device discovery through the static CUDA runtime (which loads libcuda lazily).
#include "ktune/device.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
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
    d.limits = DeviceLimits::from_properties(p);
    q.devices.push_back(std::move(d));
  }
  if (q.devices.empty()) q.problem = "no CUDA device could be queried";
  return q;
}

std::shared_ptr<void> load_cuda_driver() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  return {handle, [](void* h) { ::dlclose(h); }};
}

DeviceInfo require_device(int ordinal) {
  DeviceQuery q = list_devices();
  if (q.devices.empty())
    throw Error(ErrorKind::kDevice,
                fmt::format("no CUDA device: {}; this command needs a GPU", q.problem));
  if (ordinal < 0 || ordinal >= static_cast<int>(q.devices.size()))
    throw Error(ErrorKind::kUsage,
                fmt::format("device {} does not exist; this machine has {} CUDA device(s)", ordinal,
                            q.devices.size()));
  return q.devices[static_cast<std::size_t>(ordinal)];
}

}  // namespace ktune
