// KernelInstance: a kernel bound to a problem and device limits, with its expressions compiled
// once; and render(), which turns one of its configurations into an NVRTC compile request.
#include "ktune/instance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "ktune/data_file.h"
#include "ktune/error.h"
#include "ktune/expr.h"
#include "ktune/render.h"

namespace ktune {

namespace {
ScalarArg to_scalar(const Value& v, ElemType type) {
  ScalarArg out;
  out.type = type;
  const auto put = [&](auto x) { std::memcpy(out.bytes.data(), &x, sizeof(x)); };
  switch (type) {
    case ElemType::kI8:
      put(static_cast<std::int8_t>(v.as_int()));
      break;
    case ElemType::kU8:
      put(static_cast<std::uint8_t>(v.as_int()));
      break;
    case ElemType::kI16:
      put(static_cast<std::int16_t>(v.as_int()));
      break;
    case ElemType::kU16:
      put(static_cast<std::uint16_t>(v.as_int()));
      break;
    case ElemType::kI32:
      put(static_cast<std::int32_t>(v.as_int()));
      break;
    case ElemType::kU32:
      put(static_cast<std::uint32_t>(v.as_int()));
      break;
    case ElemType::kI64:
      put(static_cast<std::int64_t>(v.as_int()));
      break;
    case ElemType::kU64:
      put(static_cast<std::uint64_t>(v.as_int()));
      break;
    case ElemType::kF32:
      put(static_cast<float>(v.as_double()));
      break;
    case ElemType::kF64:
      put(v.as_double());
      break;
  }
  return out;
}
}  // namespace

struct KernelInstance::Impl {
  KernelSpec kernel;
  Problem problem;
  DeviceLimits limits;
  SearchSpace space;
  Scope scope;  // parameters, then the space's constants: the same slots
  std::vector<Value> constant_values;
  std::array<Expr, 3> grid, block;
  Expr shared_mem;
  std::vector<Expr> buffer_sizes;
  std::vector<Expr> args;  // scalar arguments; empty Expr for buffers
  std::optional<Expr> bytes, flops;

  Expr parse(const std::string& field, const std::string& text) const {
    try {
      return Expr::parse(text, scope);
    } catch (const Error& e) {
      throw Error(ErrorKind::kInput,
                  fmt::format("kernel '{}': {}: {}", kernel.name, field, e.what()));
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
    throw Error(ErrorKind::kInput,
                fmt::format("{}[{}]: {}: {}", kernel.name, space.key(config), field, e.what()));
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
      throw Error(ErrorKind::kInput, fmt::format("{}[{}]: {} is {}, outside 1..2^32-1",
                                                 m.kernel.name, m.space.key(config), field, v));
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
    throw Error(ErrorKind::kInput, fmt::format("{}[{}]: shared_mem is negative ({})", m.kernel.name,
                                               m.space.key(config), smem));
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
      throw Error(ErrorKind::kInput,
                  fmt::format("{}[{}]: buffer '{}' size is negative ({})", m.kernel.name,
                              m.space.key(config), m.kernel.buffers[i].name, v));
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

namespace {
// What rendering reads of a kernel.
KernelText kernel_text(const KernelSpec& k) {
  KernelText t;
  t.name = k.name;
  t.source = k.source;
  t.source_name = k.source_name;
  t.entry = k.entry;
  t.compile_options = k.compile_options;
  t.define_style = k.define_style;
  t.block_names = k.block_names;
  t.user_defines = k.user_defines;
  t.arch_specific = k.arch_specific;
  t.constants_by_name = std::any_of(k.buffers.begin(), k.buffers.end(), [](const BufferSpec& b) {
    return b.role == BufferRole::kConstant;
  });
  return t;
}

std::vector<Setting> settings(const SearchSpace& space, const Config& config) {
  std::vector<Setting> out;
  for (std::size_t i = 0; i < space.size(); ++i)
    out.emplace_back(space.params()[i].name, space.value(config, i));
  return out;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> KernelInstance::defines(
    const Config& config) const {
  const LaunchGeometry g = geometry(config);
  return render_defines(kernel_text(kernel()), settings(impl_->space, config), {g.grid, g.block});
}

std::vector<std::string> KernelInstance::config_options(const Config& config) const {
  return render_options(settings(impl_->space, config));
}

void check_data_files(const KernelInstance& instance) {
  const SearchSpace& space = instance.space();
  std::optional<Config> probe;
  if (space.is_valid(space.default_config()))
    probe = space.default_config();
  else
    space.for_each_valid([&](const Config& c) { return probe = c, false; });
  if (!probe) return;
  const KernelSpec& k = instance.kernel();
  const auto sizes = instance.buffer_sizes(*probe);
  for (std::size_t i = 0; i < k.buffers.size(); ++i) {
    const BufferSpec& b = k.buffers[i];
    const BufferInit init = KernelSpec::parse_init(b);
    if (init.kind == BufferInit::Kind::kFile)
      (void)check_data_file(init.text, b.type, sizes[i],
                            fmt::format("{}: buffer '{}'", k.name, b.name));
    if (const std::string path = KernelSpec::expected_file(b); !path.empty())
      (void)check_data_file(path, b.type, sizes[i],
                            fmt::format("{}: expected '{}'", k.name, b.name));
  }
}

CompileRequest render(const KernelInstance& instance, const Config& config,
                      const std::string& arch) {
  const LaunchGeometry g = instance.geometry(config);
  return render(kernel_text(instance.kernel()), settings(instance.space(), config),
                {g.grid, g.block}, instance.space().key(config), arch);
}

}  // namespace ktune
