// KernelSpec: everything ktune knows about one tunable kernel, in plain C++ types. Built-in
// kernels, shared-library plugins (ktune/plugin.h) and declarative manifests all end up here.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/device_limits.h"
#include "ktune/plugin.h"
#include "ktune/problem.h"
#include "ktune/render.h"
#include "ktune/space.h"

namespace ktune {

enum class ElemType {
  kI8 = KTUNE_TYPE_I8,
  kU8 = KTUNE_TYPE_U8,
  kI16 = KTUNE_TYPE_I16,
  kU16 = KTUNE_TYPE_U16,
  kI32 = KTUNE_TYPE_I32,
  kU32 = KTUNE_TYPE_U32,
  kI64 = KTUNE_TYPE_I64,
  kU64 = KTUNE_TYPE_U64,
  kF32 = KTUNE_TYPE_F32,
  kF64 = KTUNE_TYPE_F64,
};
// Inline, so that code needing no more of the kernel library (the build's generator of the GPU
// comparison kernels) has them without linking it.
constexpr std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::kI8:
    case ElemType::kU8:
      return 1;
    case ElemType::kI16:
    case ElemType::kU16:
      return 2;
    case ElemType::kI32:
    case ElemType::kU32:
    case ElemType::kF32:
      return 4;
    case ElemType::kI64:
    case ElemType::kU64:
    case ElemType::kF64:
      return 8;
  }
  return 0;
}
constexpr bool is_float(ElemType t) { return t == ElemType::kF32 || t == ElemType::kF64; }
std::string_view to_string(ElemType t);                                // "int32", "float32" ...
std::optional<ElemType> elem_type_from_string(std::string_view name);  // also "int", "float"

enum class BufferRole {
  kInput = KTUNE_BUFFER_INPUT,
  kOutput = KTUNE_BUFFER_OUTPUT,
  kInOut = KTUNE_BUFFER_INOUT,
  kScratch = KTUNE_BUFFER_SCRATCH,
  kConstant = KTUNE_BUFFER_CONSTANT,  // an input in the kernel's __constant__ variable `name`
};
std::string_view to_string(BufferRole r);

struct ProblemParam {
  std::string name;
  std::int64_t default_value = 0;
  std::string description;
};

// The canonical key of a problem of this kernel (ktune/problem.h), in declaration order.
std::string problem_key(const Problem& problem, const std::vector<ProblemParam>& order);

// How a buffer is filled (BufferSpec::init, parsed; docs/plugins.md, "Input data").
struct BufferInit {
  enum class Kind {
    kRandom,     // uniform: random / random(lo, hi) / uniform(lo, hi)
    kIota,       // element i is i
    kValue,      // value(x); "zero" is value(0)
    kNone,       // scratch left as it is
    kNormal,     // normal(mean, stddev)
    kZipf,       // zipf(s) / zipf(s, n): rank k >= 0 with P(k) ~ (k + 1)^-s, k < n
    kChoice,     // choice(v1, v2, ...): each equally likely
    kFile,       // file(PATH): raw binary or .npy
    kGenerator,  // generator / generator(TEXT): the kernel's generate function
  } kind = Kind::kRandom;
  bool has_range = false;  // random(lo, hi); otherwise integers in [-100, 100] ([0, 200]
  double lo = 0, hi = 0;   // unsigned), floats in [-1, 1)
  double value = 0;        // value(x); normal: the mean; zipf: the exponent s
  double spread = 0;       // normal: the standard deviation; zipf: n (0: the type's range)
  std::vector<double> choices;
  std::string text;  // file: the path; generator: the text in parentheses
};

struct BufferSpec {
  std::string name;
  ElemType type = ElemType::kF32;
  BufferRole role = BufferRole::kInput;
  std::string size;  // expression: element count
  std::string init;  // see ktune_buffer_desc::init
  double abs_tol = 0;
  double rel_tol = 0;
  std::string expected;  // outputs: "" (the kernel's reference) or "file(PATH)"
};

struct ArgSpec {
  std::string buffer;  // non-empty: a buffer's device pointer
  std::string value;   // otherwise: scalar expression
  ElemType type = ElemType::kI32;
  bool is_buffer() const { return !buffer.empty(); }
};

struct LaunchSpec {
  std::array<std::string, 3> grid{"1", "1", "1"};
  std::array<std::string, 3> block{"1", "1", "1"};
  std::string shared_mem = "0";
};

struct KernelSpec {
  std::string name;
  std::string description;
  std::string source;
  std::string source_name;
  std::string entry;
  std::vector<std::string> compile_options;
  // Compiled for the architecture-specific target (sm_90a for sm_90): wgmma and the like.
  bool arch_specific = false;
  // How configurations become #defines (ktune/render.h): ktune's rule, or Kernel Tuner's for
  // kernels written for it, with the names its block dimensions go by.
  DefineStyle define_style = DefineStyle::kKtune;
  std::array<std::string, 3> block_names{"block_size_x", "block_size_y", "block_size_z"};
  // Kernel Tuner's `defines` (DefineStyle::kKernelTuner only): the macros defined instead of
  // the grid, block and parameters (KernelText::user_defines).
  std::optional<Defines> user_defines;
  std::vector<Parameter> params;
  std::vector<std::string> restrictions;
  std::vector<ProblemParam> problem;
  LaunchSpec launch;
  std::vector<BufferSpec> buffers;
  std::vector<ArgSpec> args;
  ktune_reference_fn reference = nullptr;
  std::string reference_config;
  // The parameters and restrictions as the kernel declares them, where a job narrowed `params` or
  // added restrictions (apply_job, and the GPU worker's copy of a tuned kernel); empty where
  // `params` and `restrictions` are the declared ones. The reference configuration is one of the
  // declared space, so a job need not keep its values.
  std::vector<Parameter> declared_params;
  std::vector<std::string> declared_restrictions;
  // No output is checked (Kernel Tuner's tune_kernel without an answer): the kernel may then
  // have no output buffer and no reference.
  bool unchecked = false;
  std::string bytes;  // expression or empty
  std::string flops;  // expression or empty
  ktune_run_fn run = nullptr;
  ktune_generate_fn generate = nullptr;  // fills inputs whose init is "generator"
  void* user_data = nullptr;
  std::string origin;  // "builtin", a plugin library path or a manifest path
  // When set, the space holds only these configurations (a recording's own, where no
  // restrictions describe it): rows of values named by `names`. A parameter not named keeps its
  // default; a row with a value the parameter does not have (narrowed by a job) is left out.
  struct ConfigList {
    std::vector<std::string> names;
    std::vector<std::vector<Value>> rows;
  };
  std::shared_ptr<const ConfigList> listed;

  // Parses a buffer's init string; throws Error(kInput) naming the buffer for a bad one.
  static BufferInit parse_init(const BufferSpec& buffer);
  // The file an output's `expected` names; empty when the kernel's reference makes it. Throws
  // Error(kInput) for anything but "" and "file(PATH)".
  static std::string expected_file(const BufferSpec& buffer);
  // Makes the relative paths of file(...) inits and expected files relative to `base` (a
  // manifest's, plugin library's or job file's directory).
  void resolve_data_paths(const std::string& base);
  // The reference configuration as name -> value text; throws Error(kInput) for a malformed one
  // or a name or value the kernel does not have.
  std::map<std::string, std::string> reference_assignments() const;
  // This kernel with its declared parameters and restrictions (itself where none were narrowed).
  KernelSpec declared() const;
  // Keeps the current parameters and restrictions as the declared ones before a job narrows
  // them (once: a second narrowing keeps the first's).
  void remember_declared();

  // Problem with defaults filled in; throws Error(kUsage) for unknown names.
  Problem make_problem(const std::map<std::string, std::int64_t>& given) const;
  // Checks the description for consistency (names, expressions parse, buffers referenced by
  // args exist, a reference is given ...); throws Error(kInput) naming the kernel and the field.
  void validate() const;
};

// The space of a kernel for a problem on a device: the kernel's parameters and restrictions,
// plus the device limits the launch geometry implies (threads per block, block dimensions,
// dynamic shared memory), each as a named restriction.
SearchSpace make_space(const KernelSpec& kernel, const Problem& problem,
                       const DeviceLimits& limits);

}  // namespace ktune
