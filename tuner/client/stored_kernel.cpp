// Stored kernel versions: reading a kernel's spec (the one format, StoredSpec), evaluating its
// launch geometry for a configuration and problem, and rendering a configuration by the one
// rendering rule the tuner uses (ktune/render.h).
#include "client/stored_kernel.h"

#include <limits>

#include "ktune/error.h"

namespace ktune::detail {

namespace {

// A parameter's value in the best: its tuned value, else the kernel's default.
Value value_of(const BestConfig& best, const StoredSpec::Param& p) {
  auto it = best.config.find(p.name);
  return it == best.config.end() ? p.default_value : it->second;
}

// Slot values: the config's parameters, the problem (missing names from the tuned problem,
// then the kernel's defaults), then the limits.
std::vector<Value> slots(const BestConfig& best, const Problem& problem,
                         const std::vector<Value>& limits) {
  const StoredSpec& spec = best.stored->spec;
  std::vector<Value> v;
  v.reserve(spec.params.size() + spec.problem.size() + limits.size());
  for (const auto& p : spec.params) v.push_back(value_of(best, p));
  for (const auto& p : spec.problem) {
    if (auto it = problem.find(p.name); it != problem.end()) {
      v.emplace_back(it->second);
    } else if (auto tuned = best.problem.find(p.name); tuned != best.problem.end()) {
      v.emplace_back(tuned->second);
    } else {
      v.emplace_back(p.default_value);
    }
  }
  v.insert(v.end(), limits.begin(), limits.end());
  return v;
}

}  // namespace

std::vector<Value> limit_values(const ClientDevice& device) {
  std::vector<Value> out;
  for (const auto& [name, value] : device.limits.constants()) out.push_back(value);
  return out;
}

std::shared_ptr<const StoredKernel> make_stored_kernel(std::int64_t id, std::string name,
                                                       std::string source, std::string entry,
                                                       const std::string& spec_json,
                                                       const std::string& where) {
  auto k = std::make_shared<StoredKernel>();
  k->id = id;
  const std::string context = where + ": kernel " + name + " (version " + std::to_string(id) + ")";
  k->spec = StoredSpec::parse(spec_json, context);
  k->text.name = std::move(name);
  k->text.source = std::move(source);
  k->text.entry = std::move(entry);
  k->text.compile_options = k->spec.compile_options;
  k->text.arch_specific = k->spec.arch_specific;
  if (k->spec.defines == "kernel_tuner") {
    k->text.define_style = DefineStyle::kKernelTuner;
    k->text.block_names = k->spec.block_names;
    k->text.user_defines = k->spec.user_defines;
  }
  // The tuner's registry names a plugin's source "<kernel>.cu" unless it says otherwise.
  k->text.source_name = k->spec.source_name.empty() ? k->text.name + ".cu" : k->spec.source_name;
  for (const auto& p : k->spec.params) k->scope.add(p.name);
  for (const auto& p : k->spec.problem) k->scope.add(p.name);
  for (const auto& [limit, field] : DeviceLimits::fields()) k->scope.add(std::string(limit));
  const auto expr = [&](const char* field, const std::string& text) {
    try {
      return Expr::parse(text, k->scope);
    } catch (const Error& e) {
      throw Error(ErrorKind::kInput, context + ": " + field + ": " + e.what());
    }
  };
  static constexpr const char* kGrid[3] = {"grid.x", "grid.y", "grid.z"};
  static constexpr const char* kBlock[3] = {"block.x", "block.y", "block.z"};
  for (std::size_t d = 0; d < 3; ++d) {
    k->grid[d] = expr(kGrid[d], k->spec.grid[d]);
    k->block[d] = expr(kBlock[d], k->spec.block[d]);
  }
  k->shared_mem = expr("shared_mem", k->spec.shared_mem);
  return k;
}

LaunchShape eval_shape(const BestConfig& best, const Problem& problem,
                       const std::vector<Value>& limits) {
  const StoredKernel& k = *best.stored;
  const std::vector<Value> v = slots(best, problem, limits);
  const auto fail = [&](const char* field, const std::string& what) -> Error {
    return Error(ErrorKind::kInput,
                 best.kernel + "[" + best.config_key + "]: " + field + ": " + what);
  };
  const auto dim = [&](const Expr& e, const char* field) -> std::uint32_t {
    std::int64_t x = 0;
    try {
      x = e.eval_int(v);
    } catch (const std::exception& ex) {
      throw fail(field, ex.what());
    }
    if (x < 1 || x > std::numeric_limits<std::uint32_t>::max())
      throw fail(field, "is " + std::to_string(x) + ", outside 1..2^32-1");
    return static_cast<std::uint32_t>(x);
  };
  static constexpr const char* kGrid[3] = {"grid.x", "grid.y", "grid.z"};
  static constexpr const char* kBlock[3] = {"block.x", "block.y", "block.z"};
  LaunchShape s;
  for (int d = 0; d < 3; ++d) {
    s.grid[d] = dim(k.grid[d], kGrid[d]);
    s.block[d] = dim(k.block[d], kBlock[d]);
  }
  std::int64_t smem = 0;
  try {
    smem = k.shared_mem.eval_int(v);
  } catch (const std::exception& ex) {
    throw fail("shared_mem", ex.what());
  }
  if (smem < 0) throw fail("shared_mem", "is negative (" + std::to_string(smem) + ")");
  s.shared_mem = static_cast<std::uint64_t>(smem);
  return s;
}

CompileRequest render_request(const BestConfig& best, const std::string& arch,
                              const std::vector<Value>& limits) {
  const StoredKernel& k = *best.stored;
  std::vector<Setting> settings;
  for (const auto& p : k.spec.params) settings.emplace_back(p.name, value_of(best, p));
  // The block as the tuner saw it: for the problem the winner was tuned for.
  const LaunchShape shape = eval_shape(best, best.problem, limits);
  const RenderDims dims{{shape.grid[0], shape.grid[1], shape.grid[2]},
                        {shape.block[0], shape.block[1], shape.block[2]}};
  return render(k.text, settings, dims, best.config_key, arch);
}

}  // namespace ktune::detail
