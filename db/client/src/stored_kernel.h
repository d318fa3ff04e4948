// One stored kernel version as the client uses it (internal, not API): its source and entry,
// its parameters and problem parameters in declaration order, and its launch geometry parsed
// once into ktune::core expressions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/client.h"
#include "ktune/expr.h"
#include "ktune/value.h"

namespace ktune::detail {

// The device limits launch expressions may name, in the tuner's order (DeviceLimits::constants
// in ktune/kernel.h; a test checks that both agree).
inline constexpr std::array<std::string_view, 14> kLimitNames = {
    "max_threads_per_block",
    "max_threads_per_multiprocessor",
    "max_shared_memory_per_block",
    "max_shared_memory_per_block_optin",
    "max_registers_per_block",
    "max_block_dim_x",
    "max_block_dim_y",
    "max_block_dim_z",
    "max_grid_dim_x",
    "max_grid_dim_y",
    "max_grid_dim_z",
    "multiprocessor_count",
    "warp_size",
    "compute_capability",
};

// Limits of a GPU generation without a GPU, as DeviceLimits::for_arch gives them.
std::vector<std::pair<std::string, std::int64_t>> limits_for_arch(int compute_capability);

struct StoredKernel {
  std::int64_t id = 0;
  std::string name;
  std::string source;
  std::string source_name;
  std::string entry;
  std::vector<std::string> compile_options;
  std::vector<std::pair<std::string, Value>> params;          // name, default value
  std::vector<std::pair<std::string, std::int64_t>> problem;  // name, default value
  Scope scope;  // params, then problem parameters, then kLimitNames
  std::array<Expr, 3> grid, block;
  Expr shared_mem;
  std::optional<std::size_t> launch_bounds_param, maxrregcount_param;
};

// Builds a stored kernel from its kernels row; throws Error(kInput) "<where>: kernel reduce
// (version 3): grid.x: ..." for a spec it cannot read.
std::shared_ptr<const StoredKernel> make_stored_kernel(std::int64_t id, std::string name,
                                                       std::string source, std::string entry,
                                                       const std::string& spec_json,
                                                       const std::string& where);

// The limits of a device as slot values in kLimitNames order (a limit the device does not
// name takes its generation's value).
std::vector<Value> limit_values(const ClientDevice& device);

// Launch shape of a best for a problem, with the given limits (kLimitNames order).
LaunchShape eval_shape(const BestConfig& best, const Problem& problem,
                       const std::vector<Value>& limits);

// The tuner's rendering of a configuration (tuner/src/instance.cpp render()).
CompileRequest render_request(const BestConfig& best, const std::string& arch,
                              const std::vector<Value>& limits);

// Compute capability of "sm_90" / "sm_90a" as {9, 0}; nullopt for anything else.
std::optional<std::pair<int, int>> parse_arch(std::string_view arch);

}  // namespace ktune::detail
