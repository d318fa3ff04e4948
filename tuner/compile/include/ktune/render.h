// The one rendering rule: how a configuration of a kernel becomes NVRTC input. The tuner renders
// every configuration it compiles with it, and the run-time client renders a stored best with it,
// so both compile the same text with the same options (the same CompileRequest::key).
//
// A configuration's source is a banner comment, one #define per parameter (NAME value, upper
// case; a categorical value is also a flag NAME_VALUE 1), KTUNE_BLOCK_X/Y/Z (the launch block),
// KTUNE_LAUNCH_BOUNDS (__launch_bounds__(threads, N) from a `launch_bounds` parameter N > 0,
// else empty), then `#line 1 "<source_name>"` and the template. Options: the kernel's, then
// --maxrregcount=N from a `maxrregcount` parameter N > 0, --gpu-architecture and the verbose
// ptxas report that CompiledResources reads.
//
// Kernel Tuner's style (DefineStyle::kKernelTuner, for kernels written for Kernel Tuner) defines
// instead what Kernel Tuner prepends: grid_size_x/y/z, the block's names (block_size_x/y/z
// unless renamed), every parameter under its own name, and kernel_tuner 1; or, with the user's
// `defines` (KernelText::user_defines), those alone, each value with every parameter's name in
// it replaced by the parameter's value (Kernel Tuner's replace_param_occurrences). In both, a
// name holding "loop_unroll_factor" is a constexpr int (its `#pragma unroll` dropped at 0).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/value.h"

namespace ktune {

enum class DefineStyle { kKtune, kKernelTuner };

// The parts of a kernel that rendering reads.
struct KernelText {
  std::string name;
  std::string source;       // the template
  std::string source_name;  // for #line and compiler messages
  std::string entry;        // NVRTC name expression
  std::vector<std::string> compile_options;
  DefineStyle define_style = DefineStyle::kKtune;
  // kKernelTuner: the names the block's dimensions are defined under.
  std::array<std::string, 3> block_names{"block_size_x", "block_size_y", "block_size_z"};
  // Kernel Tuner's `defines` where given: (name, value template) in the user's order.
  std::optional<Defines> user_defines;
  // A constant buffer fills a __constant__ variable that the GPU worker finds by its name (a
  // manifest's role = "constant", Kernel Tuner's cmem_args): never batched into namespaces.
  bool constants_by_name = false;
  // Compile for arch_specific_target(arch) (sm_90 -> sm_90a): instructions of one architecture.
  bool arch_specific = false;
};

// The launch geometry a configuration is rendered with.
struct RenderDims {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
};

// A parameter's value in a configuration, in the kernel's declaration order.
using Setting = std::pair<std::string, Value>;

Defines render_defines(const KernelText& kernel, const std::vector<Setting>& settings,
                       const RenderDims& dims);
std::vector<std::string> render_options(const std::vector<Setting>& settings);

// The architecture-specific target of `arch` ("sm_90" -> "sm_90a"; one already specific, or
// older than sm_90, which has none, comes back as it is).
std::string arch_specific_target(const std::string& arch);

// The request for one configuration (`config_key` names it in the banner) for `arch` ("sm_90").
// Where the template allows it (no #include, extern "C" or #pragma once), the request also
// carries what batched compilation needs (CompileRequest::batch_group, body, defines).
CompileRequest render(const KernelText& kernel, const std::vector<Setting>& settings,
                      const RenderDims& dims, const std::string& config_key,
                      const std::string& arch);

}  // namespace ktune
