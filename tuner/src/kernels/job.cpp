// Job files (TOML): parsing and applying them to a kernel's space.
#include "ktune/job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>

#include "ktune/error.h"
#include "ktune/strategy.h"

namespace ktune {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::kInput, fmt::format("{}: {}", path, what));
}

Value to_value(const std::string& path, const toml::node& n, const std::string& where) {
  if (auto i = n.value_exact<std::int64_t>()) return Value(*i);
  if (auto d = n.value_exact<double>()) return Value(*d);
  if (auto s = n.value_exact<std::string>()) return Value(*s);
  fail(path, fmt::format("{}: values must be numbers or strings", where));
}

template <typename T>
std::optional<T> get(const std::string& path, const toml::table* t, const char* section,
                     const char* key) {
  if (t == nullptr) return std::nullopt;
  const toml::node* n = t->get(key);
  if (n == nullptr) return std::nullopt;
  if constexpr (std::is_same_v<T, double>) {
    if (auto v = n->value<double>()) return *v;
  } else {
    if (auto v = n->value_exact<T>()) return *v;
  }
  fail(path, fmt::format("{}.{} has the wrong type", section, key));
}

}  // namespace

JobFile load_job(const std::string& path) {
  JobFile job;
  job.path = path;
  if (!std::filesystem::exists(path)) fail(path, "job file not found");
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail(path, fmt::format("line {}, column {}: {}", e.source().begin.line, e.source().begin.column,
                           e.description()));
  }
  static const char* const kKnown[] = {"kernel",   "problem", "space",  "restrictions",
                                       "strategy", "budget",  "measure"};
  for (const auto& [key, node] : root) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key.str()) == std::end(kKnown))
      fail(path, fmt::format("unknown key '{}' (known: {})", key.str(), fmt::join(kKnown, ", ")));
  }
  if (auto k = get<std::string>(path, &root, "", "kernel")) job.kernel = *k;
  if (const toml::node* p = root.get("problem")) {
    const toml::table* t = p->as_table();
    if (t == nullptr) fail(path, "[problem] must be a table of name = integer");
    for (const auto& [name, v] : *t) {
      auto i = v.value_exact<std::int64_t>();
      if (!i) fail(path, fmt::format("problem.{} must be an integer", name.str()));
      job.problem[std::string(name.str())] = *i;
    }
  }
  if (const toml::node* s = root.get("space")) {
    const toml::table* t = s->as_table();
    if (t == nullptr) fail(path, "[space] must be a table of parameter = [values]");
    // toml++ tables are ordered by key; the kernel's parameter order is kept by apply_job.
    for (const auto& [name, v] : *t) {
      const toml::array* a = v.as_array();
      if (a == nullptr || a->empty())
        fail(path, fmt::format("space.{} must be a non-empty list of values", name.str()));
      std::vector<Value> values;
      for (const auto& e : *a)
        values.push_back(to_value(path, e, fmt::format("space.{}", name.str())));
      job.space.emplace_back(std::string(name.str()), std::move(values));
    }
  }
  if (const toml::node* r = root.get("restrictions")) {
    const toml::array* a = r->as_array();
    if (a == nullptr) fail(path, "restrictions must be a list of expressions");
    for (const auto& e : *a) {
      auto s = e.value<std::string>();
      if (!s) fail(path, "restrictions must be a list of expressions");
      job.restrictions.push_back(*s);
    }
  }
  if (const toml::node* s = root.get("strategy")) {
    const toml::table* t = s->as_table();
    if (t == nullptr) fail(path, "[strategy] must be a table");
    job.strategy = get<std::string>(path, t, "strategy", "name");
    if (job.strategy) {
      const std::vector<std::string> names = strategy_names();
      if (std::find(names.begin(), names.end(), *job.strategy) == names.end())
        fail(path, fmt::format("strategy.name '{}' is not a strategy; known: {}", *job.strategy,
                               fmt::join(names, ", ")));
    }
    if (const toml::node* o = t->get("options")) {
      const toml::table* ot = o->as_table();
      if (ot == nullptr) fail(path, "strategy.options must be a table");
      for (const auto& [k, v] : *ot) {
        std::string text;
        if (auto str = v.value_exact<std::string>())
          text = *str;
        else if (auto i = v.value_exact<std::int64_t>())
          text = std::to_string(*i);
        else if (auto d = v.value_exact<double>())
          text = fmt::format("{}", *d);
        else if (auto b = v.value_exact<bool>())
          text = *b ? "true" : "false";
        else
          fail(path,
               fmt::format("strategy.options.{} must be a string, number or boolean", k.str()));
        job.strategy_options[std::string(k.str())] = text;
      }
    }
  }
  const toml::table* budget = root["budget"].as_table();
  if (auto e = get<std::int64_t>(path, budget, "budget", "evaluations")) {
    if (*e <= 0) fail(path, "budget.evaluations must be positive");
    job.budget_evaluations = static_cast<std::uint64_t>(*e);
  }
  job.budget_seconds = get<double>(path, budget, "budget", "seconds");
  const toml::table* m = root["measure"].as_table();
  if (auto v = get<std::int64_t>(path, m, "measure", "samples")) job.samples = static_cast<int>(*v);
  if (auto v = get<std::int64_t>(path, m, "measure", "warmup")) job.warmup = static_cast<int>(*v);
  if (auto v = get<std::int64_t>(path, m, "measure", "max_samples"))
    job.max_samples = static_cast<int>(*v);
  job.target_spread = get<double>(path, m, "measure", "target_spread");
  job.timeout_seconds = get<double>(path, m, "measure", "timeout");
  job.flush_l2 = get<std::string>(path, m, "measure", "flush_l2");
  return job;
}

KernelSpec apply_job(const KernelSpec& kernel, const JobFile& job) {
  KernelSpec k = kernel;
  for (const auto& [name, values] : job.space) {
    auto it = std::find_if(k.params.begin(), k.params.end(),
                           [&](const Parameter& p) { return p.name == name; });
    if (it == k.params.end()) {
      std::vector<std::string> known;
      for (const auto& p : k.params) known.push_back(p.name);
      throw Error(ErrorKind::kUsage,
                  fmt::format("{}: kernel '{}' has no parameter '{}'; its parameters: {}", job.path,
                              k.name, name, fmt::join(known, ", ")));
    }
    const Value def = it->values[it->default_index];
    it->values = values;
    auto d = std::find(it->values.begin(), it->values.end(), def);
    it->default_index =
        d == it->values.end() ? 0 : static_cast<std::size_t>(d - it->values.begin());
  }
  k.restrictions.insert(k.restrictions.end(), job.restrictions.begin(), job.restrictions.end());
  if (!job.path.empty()) k.origin += " + " + job.path;
  k.validate();
  return k;
}

}  // namespace ktune
