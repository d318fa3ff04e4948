// The run hooks of the GPU worker: what a plugin's run function (ktune_run_ctx) calls to launch,
// find buffers, values and globals, and reach the CUDA runtime the worker links.
#include <cstring>

#include "backends/cuda/worker.h"

namespace ktune::worker {

int Worker::hook_launch(const ktune_run_ctx* ctx, void* kernel, const unsigned grid[3],
                        const unsigned block[3], std::size_t shared_mem, void** args) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  const void* k = kernel ? kernel : static_cast<const void*>(self->current_->kernel);
  return static_cast<int>(cudaLaunchKernel(k, dim3(grid[0], grid[1], grid[2]),
                                           dim3(block[0], block[1], block[2]), args, shared_mem,
                                           static_cast<cudaStream_t>(ctx->stream)));
}

void* Worker::hook_buffer(const ktune_run_ctx* ctx, const char* name, std::size_t* count) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  for (const auto& b : self->buffers_) {
    if (b.spec.name == name) {
      if (count) *count = b.count;
      return b.device;
    }
  }
  if (count) *count = 0;
  return nullptr;
}

std::int64_t Worker::hook_value(const ktune_run_ctx* ctx, const char* name, int* found) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  if (found) *found = 0;
  const auto& problem = self->instance_->problem();
  if (auto it = problem.find(name); it != problem.end()) {
    if (found) *found = 1;
    return it->second;
  }
  // The launched configuration's space: the reference configuration's may be the declared one.
  const KernelInstance& instance =
      self->current_->instance ? *self->current_->instance : *self->instance_;
  const SearchSpace& space = instance.space();
  if (auto p = space.find_param(name)) {
    const Value v = space.value(self->current_->config, *p);
    if (v.is_number()) {
      if (found) *found = 1;
      return v.is_int() ? v.as_int() : static_cast<std::int64_t>(v.as_double());
    }
  }
  return 0;
}

void* Worker::hook_global(const ktune_run_ctx* ctx, const char* name, std::size_t* bytes) {
  const auto* self = static_cast<const Worker*>(ctx->internal);
  void* address = nullptr;
  std::size_t size = 0;
  if (cudaLibraryGetGlobal(&address, &size, self->current_->library, name) != cudaSuccess) {
    cudaGetLastError();
    address = nullptr;
    size = 0;
  }
  if (bytes) *bytes = size;
  return address;
}

void* Worker::hook_cuda_function(const char* name) {
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry kTable[] = {
      {"cudaMemcpyAsync", reinterpret_cast<void*>(&cudaMemcpyAsync)},
      {"cudaMemsetAsync", reinterpret_cast<void*>(&cudaMemsetAsync)},
      {"cudaMemcpy", reinterpret_cast<void*>(&cudaMemcpy)},
      {"cudaMalloc", reinterpret_cast<void*>(&cudaMalloc)},
      {"cudaFree", reinterpret_cast<void*>(&cudaFree)},
      {"cudaMallocHost",
       reinterpret_cast<void*>(static_cast<cudaError_t (*)(void**, size_t)>(&cudaMallocHost))},
      {"cudaFreeHost", reinterpret_cast<void*>(&cudaFreeHost)},
      {"cudaStreamCreate", reinterpret_cast<void*>(&cudaStreamCreate)},
      {"cudaStreamCreateWithFlags", reinterpret_cast<void*>(&cudaStreamCreateWithFlags)},
      {"cudaStreamDestroy", reinterpret_cast<void*>(&cudaStreamDestroy)},
      {"cudaStreamSynchronize", reinterpret_cast<void*>(&cudaStreamSynchronize)},
      {"cudaStreamWaitEvent", reinterpret_cast<void*>(&cudaStreamWaitEvent)},
      {"cudaEventCreate",
       reinterpret_cast<void*>(static_cast<cudaError_t (*)(cudaEvent_t*)>(&cudaEventCreate))},
      {"cudaEventCreateWithFlags", reinterpret_cast<void*>(&cudaEventCreateWithFlags)},
      {"cudaEventRecord", reinterpret_cast<void*>(&cudaEventRecord)},
      {"cudaEventSynchronize", reinterpret_cast<void*>(&cudaEventSynchronize)},
      {"cudaEventDestroy", reinterpret_cast<void*>(&cudaEventDestroy)},
      {"cudaLaunchKernel",
       reinterpret_cast<void*>(
           static_cast<cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t)>(
               &cudaLaunchKernel))},
      {"cudaGetLastError", reinterpret_cast<void*>(&cudaGetLastError)},
      {"cudaDeviceSynchronize", reinterpret_cast<void*>(&cudaDeviceSynchronize)},
  };
  for (const auto& e : kTable)
    if (std::strcmp(e.name, name) == 0) return e.fn;
  // A CUDA driver function (cuTensorMapEncodeTiled, ...): the driver's own entry point, in its
  // CUDA 12.0 form, so that a plugin links no driver library either.
  if (std::strncmp(name, "cu", 2) == 0 && std::strncmp(name, "cuda", 4) != 0) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      return fn;
    cudaGetLastError();
  }
  return nullptr;
}

}  // namespace ktune::worker
