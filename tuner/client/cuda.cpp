// The CUDA side of the client: the current device (static CUDA runtime, which loads the driver
// only when asked, so a machine without one gets a reason instead of a crash), loading a
// kernel binary with cudaLibraryLoadData, and launching it with cudaLaunchKernel.
#include <cuda_runtime_api.h>

#include <chrono>

#include "client/client_impl.h"
#include "ktune/client.h"
#include "ktune/error.h"

namespace ktune {

namespace {

using Clock = std::chrono::steady_clock;

std::string no_device_reason(cudaError_t err) {
  if (err == cudaErrorInsufficientDriver) {
    return "no CUDA driver found (libcuda.so.1 missing or too old for CUDA runtime " +
           std::to_string(CUDART_VERSION / 1000) + "." +
           std::to_string(CUDART_VERSION % 1000 / 10) + ")";
  }
  if (err == cudaErrorNoDevice) return "the CUDA driver reports no device";
  return std::string("cannot query CUDA devices: ") + cudaGetErrorString(err);
}

}  // namespace

std::optional<ClientDevice> ClientDevice::find_current(int ordinal, std::string* problem) {
  const auto none = [&](std::string why) -> std::optional<ClientDevice> {
    if (problem) *problem = std::move(why);
    return std::nullopt;
  };
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return none(no_device_reason(err));
  if (count == 0) return none("the CUDA driver reports no device");
  if (ordinal < 0 || ordinal >= count) {
    return none("device " + std::to_string(ordinal) + " does not exist; this machine has " +
                std::to_string(count) + " CUDA device(s)");
  }
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) {
    return none(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e));
  }
  ClientDevice d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  d.sm_count = p.multiProcessorCount;
  d.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  d.limits = DeviceLimits::from_properties(p);
  return d;
}

ClientDevice ClientDevice::current(int ordinal) {
  std::string problem;
  if (auto d = find_current(ordinal, &problem)) return std::move(*d);
  throw Error(ErrorKind::kDevice, "no CUDA device: " + problem);
}

LoadedKernel::~LoadedKernel() {
  // Errors are ignored: at process exit the runtime may already be gone.
  if (library_) cudaLibraryUnload(static_cast<cudaLibrary_t>(library_));
}

LaunchShape LoadedKernel::shape(const Problem& problem) const {
  return detail::eval_shape(*best_, problem, limits_);
}

void LoadedKernel::launch(const LaunchShape& s, void** args, void* stream) const {
  const auto kernel = static_cast<cudaKernel_t>(kernel_);
  const auto context = [&] { return best_->kernel + "[" + best_->config_key + "]"; };
  // More than 48 KiB of dynamic shared memory needs an opt-in per kernel and device.
  if (s.shared_mem > 48 * 1024) {
    int device = 0;
    cudaGetDevice(&device);
    const cudaError_t e =
        cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(s.shared_mem), device);
    if (e != cudaSuccess) {
      throw Error(ErrorKind::kDevice,
                  context() + ": cannot allow " + std::to_string(s.shared_mem) +
                      " bytes of dynamic shared memory: " + cudaGetErrorString(e));
    }
  }
  const dim3 grid(s.grid[0], s.grid[1], s.grid[2]);
  const dim3 block(s.block[0], s.block[1], s.block[2]);
  const cudaError_t e =
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args,
                       static_cast<std::size_t>(s.shared_mem), static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) {
    throw Error(ErrorKind::kDevice, context() + ": launch failed: " + cudaGetErrorString(e));
  }
}

std::shared_ptr<const LoadedKernel> Client::load(const BestConfig& best) {
  std::shared_ptr<const KernelBinary> bin = binary(best);
  Impl& m = *impl_;
  const std::string key = std::to_string(best.provenance.trial_id) + "|" + bin->key;
  {
    std::lock_guard lock(m.mutex);
    if (auto it = m.loaded.find(key); it != m.loaded.end()) return it->second;
  }
  const std::string context = best.kernel + "[" + best.config_key + "] " + bin->arch;
  const auto t0 = Clock::now();
  std::shared_ptr<LoadedKernel> k(new LoadedKernel());
  k->best_ = std::make_shared<BestConfig>(best);
  k->limits_ = m.limits;
  k->binary_ = *bin;
  cudaLibrary_t library = nullptr;
  cudaError_t e =
      cudaLibraryLoadData(&library, bin->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess) {
    throw Error(ErrorKind::kDevice, context + ": cudaLibraryLoadData: " + cudaGetErrorString(e));
  }
  k->library_ = library;
  cudaKernel_t kernel = nullptr;
  e = cudaLibraryGetKernel(&kernel, library, bin->lowered_name.c_str());
  if (e != cudaSuccess) {
    throw Error(ErrorKind::kDevice, context + ": cudaLibraryGetKernel(" + bin->lowered_name +
                                        "): " + cudaGetErrorString(e));
  }
  k->kernel_ = kernel;
  k->load_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::lock_guard lock(m.mutex);
  return m.loaded.emplace(key, std::move(k)).first->second;
}

}  // namespace ktune
