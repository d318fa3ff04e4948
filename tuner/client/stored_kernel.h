// One stored kernel version as the client uses it (internal, not API): its description as the
// tuner stored it (ktune/stored_spec.h), its launch geometry parsed once into ktune::core
// expressions, and its configurations rendered by the tuner's rule (ktune/render.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ktune/client.h"
#include "ktune/expr.h"
#include "ktune/render.h"
#include "ktune/stored_spec.h"
#include "ktune/value.h"

namespace ktune::detail {

struct StoredKernel {
  std::int64_t id = 0;
  KernelText text;  // name, source, source name, entry, compile options
  StoredSpec spec;
  Scope scope;  // params, then problem parameters, then DeviceLimits::fields()
  std::array<Expr, 3> grid, block;
  Expr shared_mem;
};

// Builds a stored kernel from its kernels row; throws Error(kInput) "<where>: kernel reduce
// (version 3): grid.x: ..." for a spec it cannot read.
std::shared_ptr<const StoredKernel> make_stored_kernel(std::int64_t id, std::string name,
                                                       std::string source, std::string entry,
                                                       const std::string& spec_json,
                                                       const std::string& where);

// The limits of a device as expression slot values, in DeviceLimits::fields() order.
std::vector<Value> limit_values(const ClientDevice& device);

// Launch shape of a best for a problem, with the given limits (limit_values).
LaunchShape eval_shape(const BestConfig& best, const Problem& problem,
                       const std::vector<Value>& limits);

// The best rendered for `arch`, with the block it was tuned with (for its own problem).
CompileRequest render_request(const BestConfig& best, const std::string& arch,
                              const std::vector<Value>& limits);

}  // namespace ktune::detail
