// KernelInstance: a kernel bound to a problem and device limits, with its expressions compiled
// once; and render(), which turns one of its configurations into an NVRTC compile request.
#include "ktune/instance.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "ktune/error.h"
#include "ktune/expr.h"
#include "ktune/hash.h"

namespace ktune {

namespace {
std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

ScalarArg to_scalar(const Value& v, ElemType type) {
  ScalarArg out;
  out.type = type;
  const auto put = [&](auto x) { std::memcpy(out.bytes.data(), &x, sizeof(x)); };
  switch (type) {
    case ElemType::kI8: put(static_cast<std::int8_t>(v.as_int())); break;
    case ElemType::kU8: put(static_cast<std::uint8_t>(v.as_int())); break;
    case ElemType::kI16: put(static_cast<std::int16_t>(v.as_int())); break;
    case ElemType::kU16: put(static_cast<std::uint16_t>(v.as_int())); break;
    case ElemType::kI32: put(static_cast<std::int32_t>(v.as_int())); break;
    case ElemType::kU32: put(static_cast<std::uint32_t>(v.as_int())); break;
    case ElemType::kI64: put(static_cast<std::int64_t>(v.as_int())); break;
    case ElemType::kU64: put(static_cast<std::uint64_t>(v.as_int())); break;
    case ElemType::kF32: put(static_cast<float>(v.as_double())); break;
    case ElemType::kF64: put(v.as_double()); break;
  }
  return out;
}
}  // namespace

struct KernelInstance::Impl {
  KernelSpec kernel;
  Problem problem;
  DeviceLimits limits;
  SearchSpace space;
  Scope scope;                  // parameters, then the space's constants: the same slots
  std::vector<Value> constant_values;
  std::array<Expr, 3> grid, block;
  Expr shared_mem;
  std::vector<Expr> buffer_sizes;
  std::vector<Expr> args;       // scalar arguments; empty Expr for buffers
  std::optional<Expr> bytes, flops;
  std::optional<std::size_t> maxrregcount_param, launch_bounds_param;

  Expr parse(const std::string& field, const std::string& text) const {
    try {
      return Expr::parse(text, scope);
    } catch (const Error& e) {
      throw Error(ErrorKind::kInput, fmt::format("kernel '{}': {}: {}", kernel.name, field, e.what()));
    }
  }

  // Slot values for a config: its parameter values followed by the constants.
  std::vector<Value> slots(const Config& config) const {
    std::vector<Value> v = space.values(config);
    v.insert(v.end(), constant_values.begin(), constant_values.end());
    return v;
  }

  [[noreturn]] void eval_failed(const Config& config, const std::string& field,
                                const std::exception& e) const {
    throw Error(ErrorKind::kInput, fmt::format("{}[{}]: {}: {}", kernel.name, space.key(config),
                                               field, e.what()));
  }
};

KernelInstance::KernelInstance(const KernelSpec& kernel, Problem problem, DeviceLimits limits)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.kernel = kernel;
  m.problem = kernel.make_problem(problem);
  m.limits = limits;
  m.space = make_space(m.kernel, m.problem, m.limits);
  for (const auto& p : m.space.params()) m.scope.add(p.name);
  for (const auto& [name, value] : m.space.constants()) {
    m.scope.add(name);
    m.constant_values.push_back(value);
  }
  static constexpr const char* kAxis[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d) {
    m.grid[d] = m.parse(fmt::format("grid.{}", kAxis[d]), kernel.launch.grid[d]);
    m.block[d] = m.parse(fmt::format("block.{}", kAxis[d]), kernel.launch.block[d]);
  }
  m.shared_mem = m.parse("shared_mem", kernel.launch.shared_mem);
  for (const auto& b : kernel.buffers)
    m.buffer_sizes.push_back(m.parse(fmt::format("buffer '{}' size", b.name), b.size));
  for (std::size_t i = 0; i < kernel.args.size(); ++i) {
    const auto& a = kernel.args[i];
    m.args.push_back(a.is_buffer() ? Expr() : m.parse(fmt::format("argument {}", i + 1), a.value));
  }
  if (!kernel.bytes.empty()) m.bytes = m.parse("bytes", kernel.bytes);
  if (!kernel.flops.empty()) m.flops = m.parse("flops", kernel.flops);
  m.maxrregcount_param = m.space.find_param("maxrregcount");
  m.launch_bounds_param = m.space.find_param("launch_bounds");
}

KernelInstance::~KernelInstance() = default;
KernelInstance::KernelInstance(KernelInstance&&) noexcept = default;
KernelInstance& KernelInstance::operator=(KernelInstance&&) noexcept = default;

const KernelSpec& KernelInstance::kernel() const { return impl_->kernel; }
const Problem& KernelInstance::problem() const { return impl_->problem; }
const DeviceLimits& KernelInstance::limits() const { return impl_->limits; }
const SearchSpace& KernelInstance::space() const { return impl_->space; }
std::string KernelInstance::problem_key() const {
  return ktune::problem_key(impl_->problem, impl_->kernel.problem);
}

LaunchGeometry KernelInstance::geometry(const Config& config) const {
  const auto& m = *impl_;
  const auto slots = m.slots(config);
  LaunchGeometry g;
  const auto dim = [&](const Expr& e, const char* field) -> std::uint32_t {
    std::int64_t v = 0;
    try {
      v = e.eval_int(slots);
    } catch (const std::exception& ex) {
      m.eval_failed(config, field, ex);
    }
    if (v < 1 || v > std::numeric_limits<std::uint32_t>::max())
      throw Error(ErrorKind::kInput, fmt::format("{}[{}]: {} is {}, outside 1..2^32-1", m.kernel.name,
                                                 m.space.key(config), field, v));
    return static_cast<std::uint32_t>(v);
  };
  static constexpr const char* kGrid[3] = {"grid.x", "grid.y", "grid.z"};
  static constexpr const char* kBlock[3] = {"block.x", "block.y", "block.z"};
  for (int d = 0; d < 3; ++d) {
    g.grid[d] = dim(m.grid[d], kGrid[d]);
    g.block[d] = dim(m.block[d], kBlock[d]);
  }
  std::int64_t smem = 0;
  try {
    smem = m.shared_mem.eval_int(slots);
  } catch (const std::exception& ex) {
    m.eval_failed(config, "shared_mem", ex);
  }
  if (smem < 0)
    throw Error(ErrorKind::kInput,
                fmt::format("{}[{}]: shared_mem is negative ({})", m.kernel.name, m.space.key(config), smem));
  g.shared_mem = static_cast<std::uint64_t>(smem);
  return g;
}

std::vector<std::uint64_t> KernelInstance::buffer_sizes(const Config& config) const {
  const auto& m = *impl_;
  const auto slots = m.slots(config);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < m.buffer_sizes.size(); ++i) {
    std::int64_t v = 0;
    try {
      v = m.buffer_sizes[i].eval_int(slots);
    } catch (const std::exception& ex) {
      m.eval_failed(config, fmt::format("buffer '{}' size", m.kernel.buffers[i].name), ex);
    }
    if (v < 0)
      throw Error(ErrorKind::kInput, fmt::format("{}[{}]: buffer '{}' size is negative ({})",
                                                 m.kernel.name, m.space.key(config),
                                                 m.kernel.buffers[i].name, v));
    out.push_back(static_cast<std::uint64_t>(v));
  }
  return out;
}

std::vector<ScalarArg> KernelInstance::scalar_args(const Config& config) const {
  const auto& m = *impl_;
  const auto slots = m.slots(config);
  std::vector<ScalarArg> out(m.kernel.args.size());
  for (std::size_t i = 0; i < m.kernel.args.size(); ++i) {
    const auto& a = m.kernel.args[i];
    if (a.is_buffer()) continue;
    try {
      out[i] = to_scalar(m.args[i].eval(slots), a.type);
    } catch (const std::exception& ex) {
      m.eval_failed(config, fmt::format("argument {}", i + 1), ex);
    }
  }
  return out;
}

double KernelInstance::bytes(const Config& config) const {
  const auto& m = *impl_;
  if (!m.bytes) return std::nan("");
  try {
    return m.bytes->eval_double(m.slots(config));
  } catch (const std::exception& ex) {
    m.eval_failed(config, "bytes", ex);
  }
}

double KernelInstance::flops(const Config& config) const {
  const auto& m = *impl_;
  if (!m.flops) return std::nan("");
  try {
    return m.flops->eval_double(m.slots(config));
  } catch (const std::exception& ex) {
    m.eval_failed(config, "flops", ex);
  }
}

std::vector<std::pair<std::string, std::string>> KernelInstance::defines(
    const Config& config) const {
  const auto& m = *impl_;
  std::vector<std::pair<std::string, std::string>> out;
  const auto& params = m.space.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Value v = m.space.value(config, i);
    const std::string macro = upper(params[i].name);
    out.emplace_back(macro, v.to_string());
    // A categorical value is also a flag, so `#if LAYOUT_SOA` works in the preprocessor.
    if (v.is_string()) out.emplace_back(macro + "_" + upper(v.as_string()), "1");
  }
  const LaunchGeometry g = geometry(config);
  out.emplace_back("KTUNE_BLOCK_X", std::to_string(g.block[0]));
  out.emplace_back("KTUNE_BLOCK_Y", std::to_string(g.block[1]));
  out.emplace_back("KTUNE_BLOCK_Z", std::to_string(g.block[2]));
  std::string bounds;
  if (m.launch_bounds_param) {
    const std::int64_t min_blocks = m.space.value(config, *m.launch_bounds_param).as_int();
    if (min_blocks > 0)
      bounds = fmt::format("__launch_bounds__({}, {})", g.threads_per_block(), min_blocks);
  }
  out.emplace_back("KTUNE_LAUNCH_BOUNDS", bounds);
  return out;
}

std::vector<std::string> KernelInstance::config_options(const Config& config) const {
  const auto& m = *impl_;
  std::vector<std::string> out;
  if (m.maxrregcount_param) {
    const std::int64_t regs = m.space.value(config, *m.maxrregcount_param).as_int();
    if (regs > 0) out.push_back(fmt::format("--maxrregcount={}", regs));
  }
  return out;
}

CompileRequest render(const KernelInstance& instance, const Config& config,
                      const std::string& arch) {
  const KernelSpec& k = instance.kernel();
  CompileRequest r;
  r.source = fmt::format("// ktune: {}[{}] for {}\n", k.name, instance.space().key(config), arch);
  for (const auto& [name, value] : instance.defines(config))
    r.source += fmt::format("#define {} {}\n", name, value);
  r.source += fmt::format("#line 1 \"{}\"\n", k.source_name);
  r.source += k.source;
  r.source_name = k.source_name;
  r.entry = k.entry;
  r.arch = arch;
  r.options = k.compile_options;
  for (auto& o : instance.config_options(config)) r.options.push_back(std::move(o));
  r.options.push_back("--gpu-architecture=" + arch);
  r.options.push_back("--ptxas-options=-v");
  // Several configurations can share one NVRTC program, each in its own namespace, unless the
  // template would break there: an #include or #pragma once inside a namespace, or extern "C"
  // names that would clash between the copies.
  const bool batchable = k.source.find("#include") == std::string::npos &&
                         k.source.find("extern \"C\"") == std::string::npos &&
                         k.source.find("#pragma once") == std::string::npos;
  if (batchable) {
    Hasher group;
    group.add(k.source).add(k.source_name).add(r.entry).add(arch);
    for (const auto& o : r.options) group.add(o);
    r.batch_group = group.hex();
    r.body = fmt::format("#line 1 \"{}\"\n", k.source_name) + k.source;
    r.defines = instance.defines(config);
  }
  return r;
}

}  // namespace ktune
