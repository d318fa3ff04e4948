// The limits of a GPU that search spaces and launch expressions may name, and architecture
// names ("sm_90"). One list of names for the tuner and the run-time client.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "ktune/space.h"

namespace ktune {

struct DeviceLimits {
  std::int64_t max_threads_per_block = 1024;
  std::int64_t max_threads_per_multiprocessor = 2048;
  std::int64_t max_shared_memory_per_block = 48 * 1024;         // without opt-in
  std::int64_t max_shared_memory_per_block_optin = 227 * 1024;  // sm_90
  std::int64_t max_registers_per_block = 64 * 1024;
  std::int64_t max_block_dim_x = 1024, max_block_dim_y = 1024, max_block_dim_z = 64;
  std::int64_t max_grid_dim_x = 2147483647, max_grid_dim_y = 65535, max_grid_dim_z = 65535;
  std::int64_t multiprocessor_count = 132;
  std::int64_t warp_size = 32;
  std::int64_t compute_capability = 90;  // major * 10 + minor

  using Field = std::int64_t DeviceLimits::*;
  // Every limit with the name expressions know it by, in the order of constants().
  static const std::array<std::pair<std::string_view, Field>, 14>& fields();

  // The limits as named constants for expressions ("max_threads_per_block" = 1024 ...).
  Constants constants() const;
  // Sets the limit of that name; false for a name that is not a limit.
  bool set(std::string_view name, std::int64_t value);
  // The limits of a GPU generation (compute capability major * 10 + minor), no GPU needed:
  // the programming guide's table, with the multiprocessor count of the generation's large
  // data-centre part.
  static DeviceLimits for_arch(int compute_capability);
  // The limits of a device from its cudaDeviceProp (a template, so this header needs no CUDA).
  template <typename CudaDeviceProp>
  static DeviceLimits from_properties(const CudaDeviceProp& p);
};

template <typename CudaDeviceProp>
DeviceLimits DeviceLimits::from_properties(const CudaDeviceProp& p) {
  DeviceLimits l;
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
  return l;
}

// "sm_90" -> {9, 0} ("sm_90a" and "sm_100f" too); nullopt for anything that is not sm_NN.
std::optional<std::pair<int, int>> parse_arch(std::string_view arch);
// "sm_90" -> 90; throws Error(kUsage) "'x' is not an architecture; expected sm_NN, e.g. sm_90".
int compute_capability_of(std::string_view arch);

}  // namespace ktune
