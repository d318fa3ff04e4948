// Option groups and helpers shared by the ktune commands.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include "cli.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/expr.h"
#include "ktune/job.h"
#include "ktune/problem.h"
#include "ktune/stored_spec.h"

namespace ktune::cli {

bool parse(const std::vector<std::string>& args, const char* command, const char* usage,
           const po::options_description& options,
           const po::positional_options_description& positional, po::variables_map& vm) {
  po::options_description all("");
  all.add_options()("help,h", "show this help");
  all.add(options);
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: ktune " << command << " " << usage << "\n\n" << all << "\n";
    return true;
  }
  po::notify(vm);
  return false;
}

void validate(boost::any& out, const std::vector<std::string>& values, Unsigned*, int) {
  po::validators::check_first_occurrence(out);
  const std::string& text = po::validators::get_single_string(values);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw po::invalid_option_value(text + " (expected a whole number from 0 to 2^64-1)");
  out = Unsigned{v};
}

std::ostream& operator<<(std::ostream& os, const Unsigned& u) { return os << u.value; }

po::options_description plugin_options() {
  po::options_description o("Kernels");
  o.add_options()("plugin", po::value<std::vector<std::string>>()->composing()->value_name("PATH"),
                  "load a plugin: a shared library, a manifest (.toml) or a directory of them "
                  "(repeatable; KTUNE_PLUGIN_PATH adds more)");
  return o;
}

po::options_description problem_options() {
  po::options_description o("Problem");
  o.add_options()("problem,p",
                  po::value<std::vector<std::string>>()->composing()->value_name("NAME=VALUE"),
                  "problem parameters, e.g. n=268435456 or n=2**28 (repeatable or comma-separated;"
                  " others take the kernel's defaults); tune also takes a family: a list "
                  "'n=[2**18,2**20]', a range 'n=2**18..2**28[..FACTOR]', an expression of "
                  "another parameter 'cols=rows'");
  return o;
}

po::options_description device_options() {
  po::options_description o("Device");
  o.add_options()("device", po::value<int>()->default_value(0)->value_name("N"),
                  "the CUDA device of this machine, by ordinal (ktune devices lists them)");
  return o;
}

po::options_description target_options() {
  po::options_description o("Target");
  o.add_options()("device", po::value<int>()->default_value(0)->value_name("N"),
                  "the CUDA device of this machine, by ordinal (ktune devices lists them)")(
      "arch", po::value<std::string>()->value_name("sm_NN"),
      "architecture to compile for, e.g. sm_90, instead of the device's (no GPU needed)");
  return o;
}

po::options_description output_options() {
  po::options_description o("Output");
  o.add_options()("json", "print JSON instead of text")("quiet,q", "print only errors");
  return o;
}

std::unique_ptr<Registry> make_registry(const po::variables_map& vm) {
  auto registry = std::make_unique<Registry>();
  register_builtin_kernels(*registry);
  registry->load_env_path();
  if (vm.count("plugin"))
    for (const auto& p : vm["plugin"].as<std::vector<std::string>>()) registry->load_path(p);
  if (!vm.count("quiet"))
    for (const auto& w : registry->warnings()) std::cerr << "warning: " << w << "\n";
  return registry;
}

namespace {
std::vector<std::string> split_items(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::size_t start = 0;
    while (start <= item.size()) {
      const auto comma = item.find(',', start);
      std::string part =
          item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace

std::pair<std::string, std::string> split_assignment(const std::string& item, const char* option) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
    throw Error(ErrorKind::kUsage, fmt::format("--{} '{}': expected NAME=VALUE", option, item));
  return {item.substr(0, eq), item.substr(eq + 1)};
}

namespace {

// "NAME=TEXT,NAME=TEXT" split at the commas outside brackets and parentheses, so that a list
// ("n=[2**18,2**20]") stays one item.
std::vector<std::string> split_problem_items(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    int depth = 0;
    std::string part;
    for (const char c : item) {
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') --depth;
      if (c == ',' && depth <= 0) {
        if (!part.empty()) out.push_back(part);
        part.clear();
      } else {
        part += c;
      }
    }
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace

void add_problem_items(ProblemSet& set, const std::vector<std::string>& items) {
  for (const auto& item : split_problem_items(items)) {
    auto [name, text] = split_assignment(item, "problem");
    set.set(name, text, "--problem");
  }
}

ProblemSet parse_problem_set(const std::vector<std::string>& items) {
  ProblemSet set;
  add_problem_items(set, items);
  return set;
}

std::map<std::string, std::int64_t> parse_problem(const std::vector<std::string>& items) {
  const std::vector<Problem> problems = parse_problem_set(items).problems();
  if (problems.size() != 1)
    throw Error(ErrorKind::kUsage,
                fmt::format("--problem: {} problems given; several are for `ktune tune`, which "
                            "tunes them as a family, and this command takes one",
                            problems.size()));
  return problems.front();
}

std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* option) {
  std::map<std::string, std::string> out;
  for (const auto& item : split_items(items)) {
    auto [name, value] = split_assignment(item, option);
    out[name] = value;
  }
  return out;
}

Target resolve_target(const po::variables_map& vm, bool need_arch) {
  Target t;
  if (vm.count("arch")) {
    t.arch = vm["arch"].as<std::string>();
    check_arch(t.arch);
    t.limits = DeviceLimits::for_arch(compute_capability_of(t.arch));
    t.note = fmt::format("limits of {} (no device queried)", t.arch);
    return t;
  }
  const int ordinal = vm.count("device") ? vm["device"].as<int>() : 0;
  DeviceQuery q = list_devices();
  if (!q.devices.empty()) {
    if (ordinal < 0 || ordinal >= static_cast<int>(q.devices.size()))
      throw Error(ErrorKind::kUsage, fmt::format("--device {}: this machine has {} CUDA device(s)",
                                                 ordinal, q.devices.size()));
    t.device = q.devices[static_cast<std::size_t>(ordinal)];
    t.arch = t.device->arch;
    t.limits = t.device->limits;
    t.note = fmt::format("device {}: {} ({})", ordinal, t.device->name, t.arch);
    return t;
  }
  if (need_arch)
    throw Error(
        ErrorKind::kDevice,
        fmt::format("no CUDA device ({}); pass --arch sm_NN to compile without a GPU", q.problem));
  t.arch = "sm_90";
  t.limits = DeviceLimits::for_arch(90);
  t.note =
      fmt::format("no CUDA device ({}); assuming sm_90 limits, pass --arch to choose", q.problem);
  return t;
}

bool stored_kernel(const Store& store, const std::string& name) {
  return !store.runs(name).empty() || !store.bests(name).empty();
}

Error unknown_kernel(const std::string& name, const Store& store) {
  std::map<std::string, std::size_t> runs;
  for (const auto& r : store.runs())
    if (auto k = store.kernel(r.kernel_id)) ++runs[k->name];
  for (const auto& b : store.bests()) runs.emplace(b.kernel_name, 0);
  std::string held;
  for (const auto& [kernel, n] : runs)
    held += fmt::format("{}{} ({} run{})", held.empty() ? "" : ", ", kernel, n, n == 1 ? "" : "s");
  return Error(
      ErrorKind::kUsage,
      fmt::format("unknown kernel '{}': not registered and not in {}; it holds {}", excerpt(name),
                  store.path().string(), held.empty() ? "no kernels" : held));
}

KernelSpec query_kernel(const std::string& name, const Registry& registry, const Store& store) {
  if (registry.contains(name)) return registry.get(name);
  // The latest version: that of the latest run, else of the newest best (a database whose runs
  // of the kernel are gone).
  std::optional<KernelRecord> stored;
  std::optional<ProblemRecord> problem;
  const std::vector<RunRecord> runs = store.runs(name);
  if (!runs.empty()) {
    stored = store.kernel(runs.back().kernel_id);
    problem = store.problem(runs.back().problem_id);
  } else {
    for (const auto& b : store.bests(name))
      if (!stored || b.kernel.id > stored->id) {
        stored = b.kernel;
        problem = store.problem(b.problem_id);
      }
  }
  if (!stored) throw unknown_kernel(name, store);
  KernelSpec k;
  k.name = name;
  const StoredSpec spec = StoredSpec::parse(stored->spec_json, "kernel " + name);
  for (const auto& p : spec.problem) k.problem.push_back({p.name, p.default_value, ""});
  if (k.problem.empty() && problem) {
    // A spec without problem parameters: those of the stored problem, in its key's order.
    if (const auto values = parse_problem_key(problem->key)) {
      std::size_t start = 0;
      while (start < problem->key.size()) {
        const std::size_t end = std::min(problem->key.find(',', start), problem->key.size());
        const std::string p = problem->key.substr(start, problem->key.find('=', start) - start);
        k.problem.push_back({p, values->at(p), ""});
        start = end + 1;
      }
    }
  }
  return k;
}

bool json_output(const po::variables_map& vm) { return vm.count("json") > 0; }

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

KernelInstance job_instance(const po::variables_map& vm, const Registry& registry,
                            const Target& target) {
  const JobFile job = vm.count("config") ? load_job(vm["config"].as<std::string>()) : JobFile{};
  const std::string kernel_name = vm.count("kernel") ? vm["kernel"].as<std::string>() : job.kernel;
  if (kernel_name.empty())
    throw Error(ErrorKind::kUsage, "no kernel: name one, or give a job file with --config");
  const KernelSpec kernel = apply_job(registry.get(kernel_name), job);
  const Problem given = job_problem(
      job, vm.count("problem") ? parse_problem(vm["problem"].as<std::vector<std::string>>())
                               : Problem{});
  return KernelInstance(kernel, kernel.make_problem(given), target.limits);
}

std::string geometry_text(const KernelInstance& instance, const Config& config) {
  try {
    const LaunchGeometry g = instance.geometry(config);
    return fmt::format("grid ({})  block ({})  shared {} B", fmt::join(g.grid, ", "),
                       fmt::join(g.block, ", "), g.shared_mem);
  } catch (const Error& e) {
    return fmt::format("geometry: {}", e.what());
  }
}

nlohmann::json geometry_json(const KernelInstance& instance, const Config& config) {
  try {
    const LaunchGeometry g = instance.geometry(config);
    return {{"grid", g.grid}, {"block", g.block}, {"shared_mem", g.shared_mem}};
  } catch (const Error& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace ktune::cli
