// A kernel bound to one problem and one device: its search space, and every expression of its
// description (launch geometry, buffer sizes, scalar arguments, metrics) compiled once and
// evaluated per configuration.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/kernel.h"
#include "ktune/space.h"

namespace ktune {

struct LaunchGeometry {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint64_t shared_mem = 0;  // dynamic, bytes
  std::uint64_t threads_per_block() const { return std::uint64_t{block[0]} * block[1] * block[2]; }
};

// A scalar kernel argument, evaluated and converted to its declared type.
struct ScalarArg {
  ElemType type = ElemType::kI32;
  std::array<unsigned char, 8> bytes{};  // little-endian value, elem_size(type) bytes used
};

class KernelInstance {
 public:
  // Builds the space (kernel params + restrictions + device limits) and compiles every
  // expression; throws Error(kInput) naming the field whose expression is broken.
  KernelInstance(const KernelSpec& kernel, Problem problem, DeviceLimits limits);
  ~KernelInstance();
  KernelInstance(KernelInstance&&) noexcept;
  KernelInstance& operator=(KernelInstance&&) noexcept;

  const KernelSpec& kernel() const;
  const Problem& problem() const;
  const DeviceLimits& limits() const;
  const SearchSpace& space() const;
  std::string problem_key() const;

  // These throw Error(kInput) when an expression cannot be evaluated for this config (for
  // example a division by zero); the tuner records that as an invalid trial.
  LaunchGeometry geometry(const Config& config) const;
  std::vector<std::uint64_t> buffer_sizes(const Config& config) const;  // per kernel.buffers
  // Per kernel.args: scalars evaluated; entries for buffer arguments are left empty.
  std::vector<ScalarArg> scalar_args(const Config& config) const;
  double bytes(const Config& config) const;  // NaN when the kernel declares none
  double flops(const Config& config) const;  // NaN when the kernel declares none

  // The preprocessor definitions a config renders to, in declaration order: ("BLOCK_SIZE",
  // "256"), ... and ("KTUNE_LAUNCH_BOUNDS", "__launch_bounds__(256, 2)").
  std::vector<std::pair<std::string, std::string>> defines(const Config& config) const;
  // --maxrregcount=N when the kernel has a maxrregcount parameter and it is non-zero.
  std::vector<std::string> config_options(const Config& config) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Checks every file a buffer is filled from or compared with (file(...) inits, expected files):
// readable, of the buffer's type (.npy) and holding the buffer's element count for the default
// configuration (the first valid one when the default is not). Throws Error(kInput) naming the
// kernel, buffer and file. Nothing to check when the space is empty.
void check_data_files(const KernelInstance& instance);

// Renders one configuration for an architecture ("sm_90") by the one rendering rule
// (ktune/render.h), with the block of its launch geometry.
CompileRequest render(const KernelInstance& instance, const Config& config,
                      const std::string& arch);

}  // namespace ktune
