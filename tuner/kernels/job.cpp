// Job files (TOML): parsing, with every key at every level checked against what it may hold,
// and applying them to a kernel's space.
#include "ktune/job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "ktune/error.h"
#include "ktune/input_file.h"
#include "ktune/problem_set.h"
#include "ktune/suggest.h"

namespace ktune {

namespace {

class JobReader {
 public:
  explicit JobReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::kInput, fmt::format("{}: {}", path_, what));
  }

  // Refuses a key the table may not hold, suggesting the closest known one.
  void check_keys(const toml::table& t, const std::string& where,
                  const std::vector<std::string>& known) const {
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      fail(fmt::format("unknown key '{}'{}{} (known: {})", k, where.empty() ? "" : " in " + where,
                       did_you_mean(k, known), fmt::join(known, ", ")));
    }
  }

  // The table under `key`, or null when absent; anything else there is an error.
  const toml::table* table(const toml::table& root, const char* key) const {
    const toml::node* n = root.get(key);
    if (n == nullptr) return nullptr;
    if (const toml::table* t = n->as_table()) return t;
    fail(fmt::format("'{}' must be a table ([{}] ...), not a {}", key, key, type_name(*n)));
  }

  std::optional<std::string> text(const toml::table* t, const std::string& where,
                                  const char* key) const {
    const toml::node* n = t ? t->get(key) : nullptr;
    if (n == nullptr) return std::nullopt;
    if (auto v = n->value_exact<std::string>()) return *v;
    fail(fmt::format("{}{} must be a string, not a {}", where, key, type_name(*n)));
  }

  // An integer in [low, high].
  std::optional<std::int64_t> integer(const toml::table* t, const std::string& where,
                                      const char* key, std::int64_t low, std::int64_t high) const {
    const toml::node* n = t ? t->get(key) : nullptr;
    if (n == nullptr) return std::nullopt;
    const auto v = n->value_exact<std::int64_t>();
    if (!v) fail(fmt::format("{}{} must be an integer, not a {}", where, key, type_name(*n)));
    if (*v < low || *v > high)
      fail(fmt::format("{}{} = {} is out of range: {} to {}", where, key, *v, low, high));
    return *v;
  }

  // A finite number (integer or float) above `low` (or at least it, when inclusive).
  std::optional<double> number(const toml::table* t, const std::string& where, const char* key,
                               double low, bool inclusive) const {
    const toml::node* n = t ? t->get(key) : nullptr;
    if (n == nullptr) return std::nullopt;
    const auto v = n->value<double>();
    if (!v || n->is_boolean())
      fail(fmt::format("{}{} must be a number, not a {}", where, key, type_name(*n)));
    if (!std::isfinite(*v) || *v < low || (!inclusive && *v == low))
      fail(fmt::format("{}{} = {} must be a finite number {} {}", where, key, *v,
                       inclusive ? "of at least" : "above", low));
    return *v;
  }

  static std::string type_name(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::table:
        return "table";
      case toml::node_type::array:
        return "list";
      case toml::node_type::string:
        return "string";
      case toml::node_type::integer:
        return "integer";
      case toml::node_type::floating_point:
        return "float";
      case toml::node_type::boolean:
        return "boolean";
      default:
        return "date or time";
    }
  }

  Value value(const toml::node& n, const std::string& where) const {
    if (auto i = n.value_exact<std::int64_t>()) return Value(*i);
    if (auto d = n.value_exact<double>()) {
      if (!std::isfinite(*d)) fail(fmt::format("{}: values must be finite", where));
      return Value(*d);
    }
    if (auto s = n.value_exact<std::string>()) return Value(*s);
    fail(fmt::format("{}: values must be numbers or strings, not a {}", where, type_name(n)));
  }

 private:
  std::string path_;
};

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

// [problem]: an integer, or several (a list of integers, or a string: a list, a range or an
// expression of the other parameters, ktune/problem_set.h), kept as text for the problem set.
void read_problem(const JobReader& r, const toml::table* t, JobFile& job) {
  if (t == nullptr) return;
  for (const auto& [name, v] : *t) {
    const std::string key(name.str());
    if (const auto i = v.value_exact<std::int64_t>()) {
      job.problem[key] = *i;
    } else if (const auto text = v.value_exact<std::string>()) {
      job.problem_sets[key] = *text;
    } else if (const toml::array* a = v.as_array()) {
      std::string list;
      for (const toml::node& item : *a) {
        const auto i = item.value_exact<std::int64_t>();
        if (!i)
          r.fail(fmt::format("problem.{}: a list holds integers, not a {}", key,
                             JobReader::type_name(item)));
        list += (list.empty() ? "" : ", ") + std::to_string(*i);
      }
      job.problem_sets[key] = "[" + list + "]";
    } else {
      r.fail(fmt::format("problem.{} must be an integer, a list of integers or a string, not a {}",
                         key, JobReader::type_name(v)));
    }
  }
}

void read_space(const JobReader& r, const toml::table* t, JobFile& job) {
  if (t == nullptr) return;
  // toml++ tables are ordered by key; the kernel's parameter order is kept by apply_job.
  for (const auto& [name, v] : *t) {
    const toml::array* a = v.as_array();
    const std::string where = fmt::format("space.{}", name.str());
    if (a == nullptr || a->empty()) r.fail(where + " must be a non-empty list of values");
    std::vector<Value> values;
    for (const auto& e : *a) values.push_back(r.value(e, where));
    job.space.emplace_back(std::string(name.str()), std::move(values));
  }
}

void read_restrictions(const JobReader& r, const toml::node* n, JobFile& job) {
  if (n == nullptr) return;
  const toml::array* a = n->as_array();
  if (a == nullptr) r.fail("restrictions must be a list of expressions");
  for (const auto& e : *a) {
    auto s = e.value_exact<std::string>();
    if (!s) r.fail("restrictions must be a list of expressions (strings)");
    job.restrictions.push_back(*s);
  }
}

// [inputs] / [expected]: buffer name -> text.
void read_buffer_texts(const JobReader& r, const toml::table* t, const char* table,
                       std::map<std::string, std::string>& out) {
  if (t == nullptr) return;
  for (const auto& [name, v] : *t) {
    auto text = v.value_exact<std::string>();
    if (!text)
      r.fail(fmt::format("{}.{} must be a string, not a {}", table, name.str(),
                         JobReader::type_name(v)));
    out[std::string(name.str())] = *text;
  }
}

void read_strategy(const JobReader& r, const toml::table* t, JobFile& job) {
  if (t == nullptr) return;
  r.check_keys(*t, "[strategy]", {"name", "options"});
  job.strategy = r.text(t, "strategy.", "name");  // resolve_job checks the name
  const toml::table* options = r.table(*t, "options");
  if (options == nullptr) return;
  for (const auto& [k, v] : *options) {
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
      r.fail(fmt::format("strategy.options.{} must be a string, number or boolean", k.str()));
    job.strategy_options[std::string(k.str())] = text;
  }
}

void read_budget(const JobReader& r, const toml::table* t, JobFile& job) {
  if (t == nullptr) return;
  r.check_keys(
      *t, "[budget]",
      {"evaluations", "seconds", "stagnation", "ceiling", "family_evaluations", "family_seconds"});
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (auto e = r.integer(t, "budget.", "evaluations", 1, kMax))
    job.budget_evaluations = static_cast<std::uint64_t>(*e);
  job.budget_seconds = r.number(t, "budget.", "seconds", 0, false);
  if (auto e = r.integer(t, "budget.", "stagnation", 0, kMax))
    job.stagnation = static_cast<std::uint64_t>(*e);
  job.stop_at_ceiling = r.number(t, "budget.", "ceiling", 0, false);
  if (job.stop_at_ceiling && *job.stop_at_ceiling > 1)
    r.fail(fmt::format("budget.ceiling = {} must be a fraction of the ceiling, at most 1",
                       *job.stop_at_ceiling));
  if (auto e = r.integer(t, "budget.", "family_evaluations", 1, kMax))
    job.family_budget_evaluations = static_cast<std::uint64_t>(*e);
  job.family_budget_seconds = r.number(t, "budget.", "family_seconds", 0, false);
}

void read_measure(const JobReader& r, const toml::table* t, JobFile& job) {
  if (t == nullptr) return;
  r.check_keys(*t, "[measure]",
               {"samples", "warmup", "max_samples", "target_spread", "timeout", "flush_l2",
                "sustain_ms", "cutoff", "energy_ms", "objective"});
  if (auto v = r.integer(t, "measure.", "samples", 0, kMaxInt)) job.samples = static_cast<int>(*v);
  if (auto v = r.integer(t, "measure.", "warmup", 0, kMaxInt)) job.warmup = static_cast<int>(*v);
  if (auto v = r.integer(t, "measure.", "max_samples", 1, kMaxInt))
    job.max_samples = static_cast<int>(*v);
  job.target_spread = r.number(t, "measure.", "target_spread", 0, true);
  job.timeout_seconds = r.number(t, "measure.", "timeout", 0, false);
  job.flush_l2 = r.text(t, "measure.", "flush_l2");
  job.sustain_ms = r.number(t, "measure.", "sustain_ms", 0, true);
  job.energy_ms = r.number(t, "measure.", "energy_ms", 0, true);
  job.objective = r.text(t, "measure.", "objective");
  if (const toml::node* n = t->get("cutoff")) {
    const auto b = n->value_exact<bool>();
    if (!b)
      r.fail(
          fmt::format("measure.cutoff must be true or false, not a {}", JobReader::type_name(*n)));
    job.cutoff = *b;
  }
}

// [compile]: how many compilations run at once, and where.
void read_compile(const JobReader& r, const toml::table* t, JobFile& job) {
  if (t == nullptr) return;
  r.check_keys(*t, "[compile]", {"threads", "in_process", "timeout"});
  if (auto v = r.integer(t, "compile.", "threads", 1, 1024))
    job.compile_threads = static_cast<unsigned>(*v);
  job.compile_timeout = r.number(t, "compile.", "timeout", 0, false);
  if (const toml::node* n = t->get("in_process")) {
    const auto b = n->value_exact<bool>();
    if (!b)
      r.fail(fmt::format("compile.in_process must be true or false, not a {}",
                         JobReader::type_name(*n)));
    job.compile_in_process = *b;
  }
}

}  // namespace

JobFile load_job(const std::string& path) {
  JobFile job;
  job.path = path;
  const JobReader r(path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) r.fail("job file not found");
  if (std::filesystem::is_directory(path, ec)) r.fail("is a directory, not a job file");
  toml::table root;
  const std::string text = read_input_file(path, "", kMaxTextInputBytes);
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    r.fail(fmt::format("line {}, column {}: {}", e.source().begin.line, e.source().begin.column,
                       e.description()));
  }
  r.check_keys(root, "",
               {"kernel", "effort", "problem", "space", "restrictions", "strategy", "budget",
                "measure", "compile", "inputs", "expected"});
  if (auto k = r.text(&root, "", "kernel")) job.kernel = *k;
  job.effort = r.text(&root, "", "effort");  // resolve_job checks the name
  read_problem(r, r.table(root, "problem"), job);
  read_space(r, r.table(root, "space"), job);
  read_restrictions(r, root.get("restrictions"), job);
  read_strategy(r, r.table(root, "strategy"), job);
  read_budget(r, r.table(root, "budget"), job);
  read_measure(r, r.table(root, "measure"), job);
  read_compile(r, r.table(root, "compile"), job);
  read_buffer_texts(r, r.table(root, "inputs"), "inputs", job.inputs);
  read_buffer_texts(r, r.table(root, "expected"), "expected", job.expected);
  return job;
}

ProblemSet job_problems(const JobFile& job) {
  ProblemSet set;
  for (const auto& [k, v] : job.problem) set.set(k, v);
  for (const auto& [k, text] : job.problem_sets) set.set(k, text, job.path + ": problem");
  return set;
}

Problem job_problem(const JobFile& job, const Problem& overrides) {
  if (job.problem_sets.empty()) {
    Problem given = job.problem;
    for (const auto& [k, v] : overrides) given[k] = v;
    return given;
  }
  ProblemSet set = job_problems(job);
  for (const auto& [k, v] : overrides) set.set(k, v);
  const std::vector<Problem> problems = set.problems();
  if (problems.size() != 1)
    throw Error(ErrorKind::kUsage,
                fmt::format("{}: the job's problem is a family of {} problems; tune them with "
                            "`ktune tune`, or one session each",
                            job.path, problems.size()));
  return problems.front();
}

void apply_inputs(KernelSpec& kernel, const std::map<std::string, std::string>& inputs,
                  const std::map<std::string, std::string>& expected, const std::string& base,
                  const std::string& where) {
  const auto buffer = [&](const std::string& name) -> BufferSpec& {
    auto it = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                           [&](const BufferSpec& b) { return b.name == name; });
    if (it != kernel.buffers.end()) return *it;
    std::vector<std::string> known;
    for (const auto& b : kernel.buffers) known.push_back(b.name);
    throw Error(ErrorKind::kUsage,
                fmt::format("{}: kernel '{}' has no buffer '{}'{}; its buffers: {}", where,
                            kernel.name, name, did_you_mean(name, known),
                            known.empty() ? "(none)" : fmt::format("{}", fmt::join(known, ", "))));
  };
  KernelSpec given;  // only the changed buffers, so that only their paths are rebased
  for (const auto& [name, text] : inputs) {
    BufferSpec b = buffer(name);
    b.init = text;
    given.buffers.push_back(b);
  }
  for (const auto& [name, text] : expected) {
    BufferSpec b = buffer(name);
    b.init = {};
    b.expected = text;
    given.buffers.push_back(b);
  }
  given.resolve_data_paths(base);
  std::size_t i = 0;
  for (const auto& [name, text] : inputs) buffer(name).init = given.buffers[i++].init;
  for (const auto& [name, text] : expected) buffer(name).expected = given.buffers[i++].expected;
}

KernelSpec apply_job(const KernelSpec& kernel, const JobFile& job) {
  KernelSpec k = kernel;
  if (!job.space.empty() || !job.restrictions.empty()) k.remember_declared();
  for (const auto& setting : job.space) {
    // Not a structured binding: clang 14 (the fuzzing build) cannot capture one in a lambda.
    const std::string& name = setting.first;
    const auto& values = setting.second;
    auto it = std::find_if(k.params.begin(), k.params.end(),
                           [&](const Parameter& p) { return p.name == name; });
    if (it == k.params.end()) {
      std::vector<std::string> known;
      for (const auto& p : k.params) known.push_back(p.name);
      throw Error(
          ErrorKind::kUsage,
          fmt::format("{}: kernel '{}' has no parameter '{}'{}; its parameters: {}", job.path,
                      k.name, name, did_you_mean(name, known), fmt::join(known, ", ")));
    }
    const Value def = it->values[it->default_index];
    it->values = values;
    auto d = std::find(it->values.begin(), it->values.end(), def);
    it->default_index =
        d == it->values.end() ? 0 : static_cast<std::size_t>(d - it->values.begin());
  }
  k.restrictions.insert(k.restrictions.end(), job.restrictions.begin(), job.restrictions.end());
  const std::string base =
      job.path.empty() ? "." : std::filesystem::absolute(job.path).parent_path().string();
  apply_inputs(k, job.inputs, job.expected, base, job.path.empty() ? "job" : job.path);
  if (!job.path.empty()) k.origin += " + " + job.path;
  k.validate();
  return k;
}

}  // namespace ktune
