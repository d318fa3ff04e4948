// `ktune best`: the stored best configuration of a kernel for a problem, on this GPU, on an
// architecture, or on every device the database knows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "ktune/energy.h"
#include "ktune/error.h"
#include "ktune/store.h"

namespace ktune::cli {

namespace {

// The devices a query covers, and how the output names them.
struct Scope {
  std::string name;
  std::vector<DeviceRecord> devices;
};

// This machine's GPU if it has one (--device picks which), else every device in the database.
Scope machine_scope(const po::variables_map& vm, const Store& store) {
  Scope scope;
  DeviceQuery q = list_devices();
  const int ordinal = vm["device"].as<int>();
  if (!q.devices.empty() && !vm["device"].defaulted() &&
      (ordinal < 0 || ordinal >= static_cast<int>(q.devices.size())))
    throw Error(ErrorKind::kUsage, fmt::format("--device {}: this machine has {} CUDA device(s)",
                                               ordinal, q.devices.size()));
  if (!q.devices.empty() && ordinal >= 0 && ordinal < static_cast<int>(q.devices.size())) {
    const DeviceInfo& here = q.devices[static_cast<std::size_t>(ordinal)];
    for (const auto& d : store.devices())
      if (d.name == here.name && d.arch == here.arch && d.sm_count == here.sm_count &&
          d.memory_bytes == here.memory_bytes)
        scope.devices.push_back(d);
    scope.name = fmt::format("device {} ({})", ordinal, here.name);
  } else {
    scope.devices = store.devices();
    scope.name = "any device";
  }
  return scope;
}

// Which devices: --arch names an architecture; otherwise those of machine_scope.
Scope query_scope(const po::variables_map& vm, const Store& store) {
  if (!vm.count("arch")) return machine_scope(vm, store);
  Scope scope;
  const std::string arch = vm["arch"].as<std::string>();
  compute_capability_of(arch);
  for (const auto& d : store.devices())
    if (d.arch == arch) scope.devices.push_back(d);
  scope.name = "architecture " + arch;
  return scope;
}

// Where the run of a best stands; a run whose process is gone reads as interrupted.
std::string run_status(const Store& store, std::int64_t run_id) {
  const auto run = store.run(run_id);
  return run ? std::string(to_string(run->status)) : "unknown";
}

// A best with its problem's time-energy Pareto set, and the policy's choice among it.
struct Found {
  BestRecord best;  // best.trial: the policy's choice
  std::vector<TrialRecord> pareto;
  std::string policy_note;  // why the policy could not choose (no energies)
};

Found with_policy(const Store& store, BestRecord b, const EnergyPolicy& policy) {
  Found f;
  const auto run = store.run(b.trial.run_id);
  f.pareto = store.pareto(b.kernel_id, b.device_id, b.problem_id, run && run->replayed);
  if (!policy.fastest()) {
    std::vector<TimeEnergy> points;
    for (const TrialRecord& t : f.pareto) points.push_back({t.time_ms, t.energy_j});
    if (const auto pick = choose(points, policy)) {
      b.trial = f.pareto[*pick];
      b.trial_id = b.trial.id;
    } else {
      f.policy_note = "no energy was measured for this problem: the fastest";
    }
  }
  f.best = std::move(b);
  return f;
}

nlohmann::json real_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

// A selector's answer for a device without a best of the problem asked.
struct Picked {
  DeviceRecord device;
  SelectorRecord record;
  std::size_t candidate = 0;
  std::size_t row = 0;  // the family's problem nearest to the one asked where it was measured
};

std::optional<Picked> selector_pick(const Store& store, const std::string& kernel,
                                    const Problem& problem, const DeviceRecord& device) {
  auto record = store.selector(kernel, device.id);
  if (!record || !record->selector.covers(problem)) return std::nullopt;
  Picked p;
  p.device = device;
  p.candidate = record->selector.pick(problem);
  p.row = record->selector.nearest_row(problem, p.candidate);
  if (p.row >= record->selector.rows.size()) return std::nullopt;
  p.record = std::move(*record);
  return p;
}

nlohmann::json picked_json(const Picked& p) {
  const Selector& s = p.record.selector;
  const std::string& config = s.configs[p.candidate];
  nlohmann::json j = {
      {"device", p.device.name},
      {"arch", p.device.arch},
      {"match", "selector"},
      {"config", nlohmann::json::parse(config.empty() ? "{}" : config, nullptr, false)},
      {"key", s.candidates[p.candidate]},
      {"measured_at", s.rows[p.row].key},
      {"time_ms", s.rows[p.row].time_ms[p.candidate]},
      {"selector",
       {{"id", p.record.id},
        {"method", s.method},
        {"problems", s.rows.size()},
        {"candidates", s.candidates.size()},
        {"replayed", p.record.replayed},
        {"created_at", p.record.created_at}}}};
  if (!s.held_out.empty()) {
    j["selector"]["held_out_mean"] = s.held_out_mean();
    j["selector"]["held_out_worst"] = s.held_out_worst();
  }
  return j;
}

void print_best_json(const Store& store, const std::string& kernel, const std::string& key,
                     const std::string& scope, const std::vector<Found>& found,
                     const std::vector<Picked>& picked, const EnergyPolicy& policy) {
  nlohmann::json out;
  out["kernel"] = kernel;
  out["problem"] = key;
  out["scope"] = scope;
  out["policy"] = policy.text();
  out["results"] = nlohmann::json::array();
  for (const Found& f : found) {
    const BestRecord& b = f.best;
    nlohmann::json pareto = nlohmann::json::array();
    for (const TrialRecord& t : f.pareto)
      pareto.push_back({{"key", t.config_key},
                        {"time_ms", t.time_ms},
                        {"energy_j", t.energy_j},
                        {"power_w", real_or_null(t.power_w)},
                        {"trial_id", t.id}});
    out["results"].push_back(
        {{"device", b.device.name},
         {"arch", b.device.arch},
         {"match", "exact"},
         {"config",
          nlohmann::json::parse(b.trial.config_json.empty() ? "{}" : b.trial.config_json)},
         {"key", b.trial.config_key},
         {"time_ms", b.trial.time_ms},
         {"gbps", std::isfinite(b.trial.gbps) ? nlohmann::json(b.trial.gbps) : nlohmann::json()},
         {"samples", b.trial.sample_count},
         {"spread", b.trial.time_spread},
         {"run_id", b.trial.run_id},
         {"run_status", run_status(store, b.trial.run_id)},
         {"trial_id", b.trial_id},
         {"updated_at", b.updated_at},
         {"source_hash", b.kernel.source_hash},
         {"objective", b.objective},
         {"objective_higher_is_better", b.objective_higher_is_better},
         {"objective_value",
          std::isfinite(b.trial.objective) ? nlohmann::json(b.trial.objective) : nlohmann::json()},
         {"energy_j", real_or_null(b.trial.energy_j)},
         {"power_w", real_or_null(b.trial.power_w)},
         {"pareto", pareto}});
    if (!f.policy_note.empty()) out["results"].back()["policy_note"] = f.policy_note;
  }
  for (const Picked& p : picked) out["results"].push_back(picked_json(p));
  print_json(out);
}

void print_best_text(const Store& store, const std::string& kernel, const std::string& key,
                     const std::vector<Found>& found, const EnergyPolicy& policy) {
  for (const Found& f : found) {
    const BestRecord& b = f.best;
    std::cout << fmt::format(
        "{} [{}] on {} ({})\n  {}\n  {:.4f} ms median of {} runs (spread {:.2f}%)", kernel, key,
        b.device.name, b.device.arch, b.trial.config_key, b.trial.time_ms, b.trial.sample_count,
        100 * b.trial.time_spread);
    if (std::isfinite(b.trial.gbps)) std::cout << fmt::format(", {:.1f} GB/s", b.trial.gbps);
    if (std::isfinite(b.trial.energy_j))
      std::cout << fmt::format(", {:.4g} mJ per run at {:.0f} W", b.trial.energy_j * 1e3,
                               b.trial.power_w);
    if (!policy.fastest())
      std::cout << "\n  policy " << policy.text()
                << (f.policy_note.empty() ? "" : " (" + f.policy_note + ")");
    if (b.objective != "time")
      std::cout << fmt::format("\n  chosen by {}: {:.6g}",
                               Objective{b.objective, b.objective_higher_is_better}.text(),
                               b.trial.objective);
    std::cout << fmt::format("\n  run {} ({}), trial {}, {}\n", b.trial.run_id,
                             run_status(store, b.trial.run_id), b.trial_id, b.updated_at);
    if (f.pareto.empty()) continue;
    std::cout << fmt::format("  time-energy Pareto set, {} configuration{}:\n", f.pareto.size(),
                             f.pareto.size() == 1 ? "" : "s");
    for (const TrialRecord& t : f.pareto)
      std::cout << fmt::format("    {:10.4f} ms {:10.4g} mJ  {}{}\n", t.time_ms, t.energy_j * 1e3,
                               t.config_key, t.id == b.trial_id ? "  <-" : "");
  }
}

// What the kernel's families cover on the scope's devices, for a problem none of them holds:
// "; its family on NVIDIA H200 covers n=262144..4194304 (the run-time client answers the nearest
// tuned problem beyond it)" (that last only for a measured family), or "" without a family.
std::string family_ranges(const Store& store, const std::string& kernel, const Scope& scope) {
  std::string out;
  bool measured = false;
  for (const DeviceRecord& d : scope.devices) {
    const auto record = store.selector(kernel, d.id);
    if (!record || record->selector.rows.empty()) continue;
    measured = measured || !record->replayed;
    std::string range;
    for (const auto& [name, lo_hi] : record->selector.range())
      range += fmt::format("{}{}={}", range.empty() ? "" : ",", name,
                           lo_hi.first == lo_hi.second
                               ? std::to_string(lo_hi.first)
                               : fmt::format("{}..{}", lo_hi.first, lo_hi.second));
    out += fmt::format("; its family on {} covers {}", d.name, range);
  }
  if (measured) out += " (the run-time client answers the nearest tuned problem beyond it)";
  return out;
}

void print_picked_text(const std::string& kernel, const std::string& key, const Picked& p) {
  const Selector& s = p.record.selector;
  std::cout << fmt::format(
      "{} [{}] on {} ({}): not tuned; the selector of the {} tuned problems picks\n  {}\n"
      "  {:.4f} ms measured at [{}]\n  selector {} ({}{}), {} candidates",
      kernel, key, p.device.name, p.device.arch, s.rows.size(), s.candidates[p.candidate],
      s.rows[p.row].time_ms[p.candidate], s.rows[p.row].key, p.record.id, s.method,
      p.record.replayed ? ", from replayed runs" : "", s.candidates.size());
  if (!s.held_out.empty())
    std::cout << fmt::format(
        "; each tuned problem left out, its pick reached {:.3f} of the best on average, "
        "{:.3f} at worst",
        s.held_out_mean(), s.held_out_worst());
  std::cout << "\n";
}

}  // namespace

int cmd_best(const std::vector<std::string>& args) {
  po::options_description opts;
  po::options_description own("Query");
  own.add_options()("kernel", po::value<std::string>()->required()->value_name("KERNEL"),
                    "kernel name")(
      "policy", po::value<std::string>()->default_value("fastest")->value_name("POLICY"),
      "fastest | least-energy | least-energy-within=PCT%: which configuration of the problem's "
      "time-energy Pareto set answers, where energy was measured");
  opts.add(own)
      .add(problem_options())
      .add(target_options())
      .add(database_options())
      .add(plugin_options())
      .add(output_options());
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "best", "KERNEL [--problem NAME=VALUE ...] [--device N | --arch sm_NN] [options]",
            opts, pos, vm))
    return 0;
  auto registry = make_registry(vm);
  const std::string db = vm["db"].as<std::string>();
  if (!registry->contains(vm["kernel"].as<std::string>()) && !std::filesystem::exists(db))
    (void)registry->get(vm["kernel"].as<std::string>());  // the unknown-kernel error, no database
  const EnergyPolicy policy = EnergyPolicy::parse(vm["policy"].as<std::string>());
  Store store = Store::open(db, Store::Mode::kReadOnly);
  const KernelSpec kernel = query_kernel(vm["kernel"].as<std::string>(), *registry, store);
  const auto given = vm.count("problem")
                         ? parse_problem(vm["problem"].as<std::vector<std::string>>())
                         : std::map<std::string, std::int64_t>{};
  const std::string key = problem_key(kernel.make_problem(given), kernel.problem);

  const Scope scope = query_scope(vm, store);
  std::vector<Found> found;
  std::vector<Picked> picked;  // devices without a best of the problem, whose selector answers
  const Problem problem = kernel.make_problem(given);
  for (const auto& d : scope.devices) {
    if (auto b = store.best(kernel.name, key, d.id))
      found.push_back(with_policy(store, std::move(*b), policy));
    else if (auto p = selector_pick(store, kernel.name, problem, d))
      picked.push_back(std::move(*p));
  }

  if (json_output(vm)) {
    print_best_json(store, kernel.name, key, scope.name, found, picked, policy);
  } else {
    print_best_text(store, kernel.name, key, found, policy);
    for (const Picked& p : picked) print_picked_text(kernel.name, key, p);
  }
  if (found.empty() && picked.empty()) {
    if (!json_output(vm))
      std::cerr << fmt::format("no best configuration of {} for [{}] on {} in {}{}\n", kernel.name,
                               key, scope.name, db, family_ranges(store, kernel.name, scope));
    return 1;
  }
  return 0;
}

}  // namespace ktune::cli
