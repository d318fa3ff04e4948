// Stored kernel versions: reading a kernel's spec_json, evaluating its launch geometry for a
// configuration and problem, and rendering a configuration into an NVRTC request exactly as the
// tuner does (tuner/src/instance.cpp: KernelInstance::defines, config_options and render; the
// client tests check that both give the same CompileRequest::key).
#include "stored_kernel.h"

#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "ktune/error.h"

namespace ktune::detail {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string json_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

// Slot values: the config's parameters, the problem (missing names from the tuned problem,
// then the kernel's defaults), then the limits.
std::vector<Value> slots(const BestConfig& best, const Problem& problem,
                         const std::vector<Value>& limits) {
  const StoredKernel& k = *best.stored;
  std::vector<Value> v;
  v.reserve(k.params.size() + k.problem.size() + limits.size());
  for (const auto& [name, fallback] : k.params) {
    auto it = best.config.find(name);
    v.push_back(it == best.config.end() ? fallback : it->second);
  }
  for (const auto& [name, fallback] : k.problem) {
    if (auto it = problem.find(name); it != problem.end()) {
      v.emplace_back(it->second);
    } else if (auto tuned = best.problem.find(name); tuned != best.problem.end()) {
      v.emplace_back(tuned->second);
    } else {
      v.emplace_back(fallback);
    }
  }
  v.insert(v.end(), limits.begin(), limits.end());
  return v;
}

}  // namespace

std::optional<std::pair<int, int>> parse_arch(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_") return std::nullopt;
  std::size_t i = 3;
  int cc = 0;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])) && i < 7) {
    cc = cc * 10 + (arch[i] - '0');
    ++i;
  }
  const std::size_t digits = i - 3;
  const bool suffix_ok =
      i == arch.size() || (i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f'));
  if (digits < 2 || !suffix_ok) return std::nullopt;
  return std::make_pair(cc / 10, cc % 10);
}

std::vector<std::pair<std::string, std::int64_t>> limits_for_arch(int cc) {
  std::int64_t optin = 96 * 1024, per_sm = 2048, sms = 80;
  if (cc >= 90) {
    optin = 227 * 1024, per_sm = 2048, sms = 132;
  } else if (cc >= 89) {
    optin = 99 * 1024, per_sm = 1536, sms = 128;
  } else if (cc >= 86) {
    optin = 99 * 1024, per_sm = 1536, sms = 84;
  } else if (cc >= 80) {
    optin = 163 * 1024, per_sm = 2048, sms = 108;
  } else if (cc >= 75) {
    optin = 64 * 1024, per_sm = 1024, sms = 72;
  }
  return {
      {"max_threads_per_block", 1024},
      {"max_threads_per_multiprocessor", per_sm},
      {"max_shared_memory_per_block", 48 * 1024},
      {"max_shared_memory_per_block_optin", optin},
      {"max_registers_per_block", 64 * 1024},
      {"max_block_dim_x", 1024},
      {"max_block_dim_y", 1024},
      {"max_block_dim_z", 64},
      {"max_grid_dim_x", 2147483647},
      {"max_grid_dim_y", 65535},
      {"max_grid_dim_z", 65535},
      {"multiprocessor_count", sms},
      {"warp_size", 32},
      {"compute_capability", cc},
  };
}

std::vector<Value> limit_values(const ClientDevice& device) {
  const auto fallback = limits_for_arch(device.cc_major * 10 + device.cc_minor);
  std::vector<Value> out;
  out.reserve(kLimitNames.size());
  for (std::size_t i = 0; i < kLimitNames.size(); ++i) {
    std::int64_t value = fallback[i].second;
    for (const auto& [name, v] : device.limits) {
      if (name == kLimitNames[i]) value = v;
    }
    out.emplace_back(value);
  }
  return out;
}

std::shared_ptr<const StoredKernel> make_stored_kernel(std::int64_t id, std::string name,
                                                       std::string source, std::string entry,
                                                       const std::string& spec_json,
                                                       const std::string& where) {
  auto k = std::make_shared<StoredKernel>();
  k->id = id;
  k->name = std::move(name);
  k->source = std::move(source);
  k->entry = std::move(entry);
  const std::string context =
      where + ": kernel " + k->name + " (version " + std::to_string(id) + ")";
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(spec_json.empty() ? "{}" : spec_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInput, context + ": unreadable spec_json (" + e.what() + ")");
  }
  try {
    // The tuner's registry names a plugin's source "<kernel>.cu" unless it says otherwise.
    k->source_name = spec.value("source_name", k->name + ".cu");
    for (const auto& o : spec.value("compile_options", nlohmann::json::array()))
      k->compile_options.push_back(o.get<std::string>());
    for (const auto& p : spec.value("parameters", nlohmann::json::array())) {
      const std::string pname = p.at("name").get<std::string>();
      Value fallback;
      if (p.contains("default")) fallback = Value::parse(json_text(p.at("default")));
      k->params.emplace_back(pname, fallback);
      k->scope.add(pname);
    }
    for (const auto& p : spec.value("problem", nlohmann::json::array())) {
      const std::string pname = p.at("name").get<std::string>();
      k->problem.emplace_back(pname, p.value("default", std::int64_t{0}));
      k->scope.add(pname);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInput, context + ": unreadable spec_json (" + e.what() + ")");
  }
  for (const auto name : kLimitNames) k->scope.add(name);
  for (std::size_t i = 0; i < k->params.size(); ++i) {
    if (k->params[i].first == "launch_bounds") k->launch_bounds_param = i;
    if (k->params[i].first == "maxrregcount") k->maxrregcount_param = i;
  }
  const auto expr = [&](const char* field, const nlohmann::json& text, const char* fallback) {
    const std::string t = text.is_null() ? std::string(fallback) : json_text(text);
    try {
      return Expr::parse(t, k->scope);
    } catch (const Error& e) {
      throw Error(ErrorKind::kInput, context + ": " + field + ": " + e.what());
    }
  };
  static constexpr const char* kGrid[3] = {"grid.x", "grid.y", "grid.z"};
  static constexpr const char* kBlock[3] = {"block.x", "block.y", "block.z"};
  const nlohmann::json grid = spec.value("grid", nlohmann::json::array());
  const nlohmann::json block = spec.value("block", nlohmann::json::array());
  for (std::size_t d = 0; d < 3; ++d) {
    k->grid[d] = expr(kGrid[d], d < grid.size() ? grid[d] : nlohmann::json(), "1");
    k->block[d] = expr(kBlock[d], d < block.size() ? block[d] : nlohmann::json(), "1");
  }
  k->shared_mem = expr("shared_mem", spec.value("shared_mem", nlohmann::json()), "0");
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
  const auto value_of = [&](std::size_t i) -> Value {
    auto it = best.config.find(k.params[i].first);
    return it == best.config.end() ? k.params[i].second : it->second;
  };
  CompileRequest r;
  r.source = "// ktune: " + k.name + "[" + best.config_key + "] for " + arch + "\n";
  const auto define = [&](const std::string& name, const std::string& value) {
    r.source += "#define " + name + " " + value + "\n";
  };
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const Value v = value_of(i);
    const std::string macro = upper(k.params[i].first);
    define(macro, v.to_string());
    // A categorical value is also a flag, so `#if LAYOUT_SOA` works in the preprocessor.
    if (v.is_string()) define(macro + "_" + upper(v.as_string()), "1");
  }
  // The block as the tuner saw it: for the problem the winner was tuned for.
  const LaunchShape shape = eval_shape(best, best.problem, limits);
  define("KTUNE_BLOCK_X", std::to_string(shape.block[0]));
  define("KTUNE_BLOCK_Y", std::to_string(shape.block[1]));
  define("KTUNE_BLOCK_Z", std::to_string(shape.block[2]));
  std::string bounds;
  if (k.launch_bounds_param) {
    const std::int64_t min_blocks = value_of(*k.launch_bounds_param).as_int();
    const std::uint64_t threads = std::uint64_t{shape.block[0]} * shape.block[1] * shape.block[2];
    if (min_blocks > 0)
      bounds =
          "__launch_bounds__(" + std::to_string(threads) + ", " + std::to_string(min_blocks) + ")";
  }
  define("KTUNE_LAUNCH_BOUNDS", bounds);
  r.source += "#line 1 \"" + k.source_name + "\"\n";
  r.source += k.source;
  r.source_name = k.source_name;
  r.entry = k.entry;
  r.arch = arch;
  r.options = k.compile_options;
  if (k.maxrregcount_param) {
    const std::int64_t regs = value_of(*k.maxrregcount_param).as_int();
    if (regs > 0) r.options.push_back("--maxrregcount=" + std::to_string(regs));
  }
  r.options.push_back("--gpu-architecture=" + arch);
  r.options.push_back("--ptxas-options=-v");
  return r;
}

}  // namespace ktune::detail
