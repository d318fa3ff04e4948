// The tuning loop (see ktune/tuner.h): strategy ask/tell, compilation ahead of the backend,
// one stored trial per evaluation, resume from the database, budgets, Ctrl-C, and the final
// interleaved re-timing of the leaders.
#include "ktune/tuner.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <future>
#include <set>

#include "ktune/error.h"
#include "ktune/hash.h"

namespace ktune {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

json config_json(const SearchSpace& space, const Config& config) {
  json j = json::object();
  for (std::size_t i = 0; i < space.size(); ++i) {
    const Value v = space.value(config, i);
    if (v.is_int()) j[space.params()[i].name] = v.as_int();
    else if (v.is_double()) j[space.params()[i].name] = v.as_double();
    else j[space.params()[i].name] = v.as_string();
  }
  return j;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : " ") + s;
  return out;
}

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

struct Pending {
  Config config;
  std::string key;
  std::optional<TrialRecord> cached;
  std::shared_future<CompileResult> compiled;
  bool has_compile = false;
};

}  // namespace

KernelRecord kernel_record(const KernelInstance& instance) {
  const KernelSpec& k = instance.kernel();
  KernelRecord r;
  r.name = k.name;
  Hasher h;
  h.add(k.source).add(k.entry);
  for (const auto& o : k.compile_options) h.add(o);
  r.source_hash = h.hex();
  r.space_hash = instance.space().hash();
  r.source = k.source;
  r.entry = k.entry;
  json spec;
  for (const auto& p : k.params) {
    json values = json::array();
    for (const auto& v : p.values) values.push_back(v.to_string());
    spec["parameters"].push_back({{"name", p.name}, {"values", values}, {"default", p.values[p.default_index].to_string()}});
  }
  for (const auto& p : k.problem) spec["problem"].push_back({{"name", p.name}, {"default", p.default_value}});
  spec["restrictions"] = k.restrictions;
  spec["grid"] = k.launch.grid;
  spec["block"] = k.launch.block;
  spec["shared_mem"] = k.launch.shared_mem;
  spec["bytes"] = k.bytes;
  spec["flops"] = k.flops;
  spec["compile_options"] = k.compile_options;
  spec["source_name"] = k.source_name;
  r.spec_json = spec.dump();
  return r;
}

DeviceRecord device_record(const DeviceInfo& d) {
  DeviceRecord r;
  r.name = d.name;
  r.arch = d.arch;
  r.cc_major = d.cc_major;
  r.cc_minor = d.cc_minor;
  r.sm_count = d.sm_count;
  r.memory_bytes = d.memory_bytes;
  r.l2_bytes = d.l2_bytes;
  r.driver_version = d.driver_version;
  r.nvrtc_version = nvrtc_version();
  return r;
}

TuneSummary tune(const KernelInstance& instance, Backend& backend, Store& store, Strategy& strategy,
                 const TuneOptions& options, CompilePool* pool, const ProgressFn& progress,
                 const std::atomic<bool>* stop) {
  const auto t0 = Clock::now();
  const SearchSpace& space = instance.space();
  const KernelSpec& kernel = instance.kernel();
  const DeviceInfo device = backend.device();
  if (backend.needs_compilation() && pool == nullptr)
    throw Error(ErrorKind::kInternal, "the backend compiles, but no compile pool was given");

  const std::int64_t device_id = store.upsert_device(device_record(device));
  const std::int64_t kernel_id = store.upsert_kernel(kernel_record(instance));
  ProblemRecord problem_row;
  problem_row.kernel_name = kernel.name;
  problem_row.key = instance.problem_key();
  problem_row.json = json(instance.problem()).dump();
  const std::int64_t problem_id = store.upsert_problem(problem_row);

  RunRecord run;
  run.kernel_id = kernel_id;
  run.device_id = device_id;
  run.problem_id = problem_id;
  run.backend = backend.name();
  run.strategy = options.strategy;
  run.strategy_options = json(options.strategy_options).dump();
  json budget;
  if (options.budget.evaluations != std::numeric_limits<std::uint64_t>::max()) budget["evaluations"] = options.budget.evaluations;
  if (std::isfinite(options.budget.seconds)) budget["seconds"] = options.budget.seconds;
  run.budget = budget.is_null() ? "{}" : budget.dump();
  run.ktune_version = KTUNE_VERSION;
  run.nvrtc_version = nvrtc_version();
  run.driver_version = device.driver_version;
  run.host = hostname();
  run.command_line = options.command_line;
  run.seed = options.seed;
  const std::int64_t run_id = store.begin_run(run);

  TuneSummary summary;
  summary.run_id = run_id;
  StrategyContext context;
  context.space = &space;
  context.seed = options.seed;
  context.budget = options.budget.evaluations;
  context.budget_seconds = options.budget.seconds;
  context.options = options.strategy_options;
  if (options.warm_start) {
    for (const BestRecord& b : store.bests(kernel.name)) {
      if (b.device_id == device_id && b.problem_id == problem_id) continue;
      try {
        const Config c = space.parse_key(b.trial.config_key);
        if (space.is_valid(c) &&
            std::find(context.warm_start.begin(), context.warm_start.end(), c) == context.warm_start.end())
          context.warm_start.push_back(c);
      } catch (const Error&) {
        // A best from another version of the space may not exist in this one.
      }
    }
  }
  strategy.start(context);

  const std::size_t lookahead =
      options.lookahead ? options.lookahead : std::max<std::size_t>(8, 4 * (pool ? pool->threads() : 1));
  std::deque<Pending> queue;      // asked; compiling or compiled
  std::deque<Pending> in_flight;  // submitted to the backend, result not yet collected
  const std::size_t depth = std::max<std::size_t>(1, backend.pipeline_depth());
  // The backend is prepared (for the CUDA backend: worker start, inputs, reference) on another
  // thread as soon as the first configuration that must be measured is queued, so it overlaps
  // the first compilations; a run answered wholly from the database never starts it.
  bool prepared = false;
  std::future<void> preparing;
  const auto start_preparing = [&] {
    if (!prepared && !preparing.valid())
      preparing = std::async(std::launch::async, [&] { backend.prepare(instance, options.measure); });
  };
  const auto ensure_prepared = [&] {
    if (prepared) return;
    if (!preparing.valid()) start_preparing();
    preparing.get();
    prepared = true;
  };
  Progress prog;
  prog.total = std::min<std::uint64_t>(options.budget.evaluations, static_cast<std::uint64_t>(space.cartesian_size()));
  std::uint64_t valid_count = 0;
  space.for_each_valid([&](const Config&) { return ++valid_count < prog.total; });
  prog.total = std::min(prog.total, valid_count);
  std::string status = "finished";
  const double compile_busy_start = pool ? pool->busy_seconds() : 0;

  const auto lookup = [&](const std::string& key) -> std::optional<TrialRecord> {
    if (!options.reuse) return std::nullopt;
    return store.find_trial(kernel_id, device_id, problem_id, key);
  };

  // A strategy that only repeats configurations told before would never end a run without a
  // budget; after this many repeats in a row the run ends.
  std::set<std::string> told_keys;
  std::uint64_t repeats = 0;
  const std::uint64_t max_repeats = std::max<std::uint64_t>(1000, 2 * valid_count);

  // Stores a trial (unless it came from the database), tells the strategy, reports progress.
  const auto finish = [&](Pending& p, const Measurement* m, const CompileResult* c) {
    TrialRecord t;
    if (p.cached) {
      t = *p.cached;
      ++summary.from_database;
    } else {
      t.run_id = run_id;
      t.kernel_id = kernel_id;
      t.device_id = device_id;
      t.problem_id = problem_id;
      t.config_key = p.key;
      t.config_json = config_json(space, p.config).dump();
      t.arch = device.arch;
      t.time_ms = t.time_min_ms = t.time_mean_ms = t.time_spread = std::nan("");
      t.gbps = t.gflops = std::nan("");
      if (c) {
        t.compile_options = join(c->options);
        t.compile_log = c->log;
        t.cubin_hash = c->key;
        t.compile_ms = c->compile_ms;
        t.registers = c->resources.registers;
        t.spill_bytes = c->resources.spill_store_bytes;
      }
      t.status = m->status;
      t.error = m->error;
      if (m->status == TrialStatus::kOk) {
        t.time_ms = m->time_ms;
        t.time_min_ms = m->time_min_ms;
        t.time_mean_ms = m->time_mean_ms;
        t.time_spread = m->time_spread;
        t.samples_ms = m->samples_ms;
        t.sample_count = static_cast<int>(m->samples_ms.size());
        const double bytes = instance.bytes(p.config), flops = instance.flops(p.config);
        t.gbps = bytes / (m->time_ms * 1e-3) / 1e9;
        t.gflops = flops / (m->time_ms * 1e-3) / 1e9;
      }
      if (m->registers >= 0) t.registers = m->registers;
      t.local_bytes = m->local_bytes;
      t.static_shared_bytes = m->static_shared_bytes;
      t.dynamic_shared_bytes = m->dynamic_shared_bytes;
      t.max_threads_per_block = m->max_threads_per_block;
      t.occupancy = m->occupancy;
      t.eval_ms = m->eval_ms;
      t.id = store.add_trial(t);
      ++summary.measured;
      for (const auto& [phase, ms] : m->phases_ms) summary.phases_seconds[phase] += ms * 1e-3;
      summary.gpu_seconds += m->gpu_ms * 1e-3;
      summary.timed_seconds += m->timed_ms * 1e-3;
    }
    repeats = told_keys.insert(p.key).second ? 0 : repeats + 1;
    Outcome outcome;
    outcome.status = t.status;
    outcome.time_ms = t.time_ms;
    outcome.from_cache = p.cached.has_value();
    strategy.tell(p.config, outcome);
    ++summary.trials;
    ++summary.by_status[std::string(to_string(t.status))];
    if (t.status == TrialStatus::kOk && (!prog.best_ms || t.time_ms < *prog.best_ms)) {
      prog.best_ms = t.time_ms;
      prog.best_key = t.config_key;
      prog.best_gbps = t.gbps;
    }
    prog.done = summary.trials;
    prog.measured = summary.measured;
    prog.elapsed_seconds = seconds_since(t0);
    if (progress) progress(prog);
  };

  const auto collect = [&] {
    const auto e0 = Clock::now();
    Measurement m = backend.collect();
    summary.backend_seconds += seconds_since(e0);
    Pending p = std::move(in_flight.front());
    in_flight.pop_front();
    const CompileResult* c = p.has_compile ? &p.compiled.get() : nullptr;
    finish(p, &m, c);
  };

  for (;;) {
    const bool stopping = stop && stop->load();
    if (stopping) status = "interrupted";
    if (repeats > max_repeats) break;
    if (stopping || summary.trials + in_flight.size() >= options.budget.evaluations ||
        seconds_since(t0) >= options.budget.seconds) {
      // What is already on the GPU is measured: keep it.
      if (in_flight.empty()) break;
      collect();
      continue;
    }
    // Keep the compile pool ahead of the backend.
    bool starved = strategy.exhausted();  // the strategy proposes nothing more for now
    while (queue.size() < lookahead && !strategy.exhausted()) {
      const std::uint64_t committed = summary.trials + in_flight.size() + queue.size();
      const std::uint64_t left = options.budget.evaluations > committed ? options.budget.evaluations - committed : 0;
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(lookahead - queue.size(), left));
      if (want == 0) break;
      const std::vector<Config> configs = strategy.ask(want);
      if (configs.empty()) {
        starved = true;
        break;
      }
      for (const Config& c : configs) {
        Pending p;
        p.config = c;
        p.key = space.key(c);
        p.cached = lookup(p.key);
        if (!p.cached && space.is_valid(c)) {
          start_preparing();
          if (backend.needs_compilation()) {
            p.compiled = pool->submit(render(instance, c, device.arch));
            p.has_compile = true;
          }
        }
        queue.push_back(std::move(p));
      }
    }
    // Feed the backend up to its pipeline depth; trials that need no backend finish here.
    while (!queue.empty() && in_flight.size() < depth) {
      Pending& p = queue.front();
      // A duplicate proposed earlier in this run may have been measured since it was queued.
      if (!p.cached) p.cached = lookup(p.key);
      if (p.cached) {
        finish(p, nullptr, nullptr);
        queue.pop_front();
        continue;
      }
      if (auto broken = space.violated(p.config)) {
        Measurement m;
        m.status = TrialStatus::kInvalid;
        m.error = fmt::format("strategy proposed an invalid configuration: restriction '{}' does not hold", *broken);
        finish(p, &m, nullptr);
        queue.pop_front();
        continue;
      }
      const CompileResult* c = nullptr;
      if (p.has_compile) {
        // With a measurement in flight, collect it rather than wait for this compilation.
        if (!in_flight.empty() &&
            p.compiled.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
          break;
        const auto wait0 = Clock::now();
        c = &p.compiled.get();
        summary.wait_compile_seconds += seconds_since(wait0);
        if (!c->ok) {
          Measurement m;
          m.status = TrialStatus::kCompileFailed;
          m.error = c->error;
          finish(p, &m, c);
          queue.pop_front();
          continue;
        }
      }
      ensure_prepared();
      const auto e0 = Clock::now();
      backend.submit(p.config, c);
      summary.backend_seconds += seconds_since(e0);
      in_flight.push_back(std::move(p));
      queue.pop_front();
    }
    if (!in_flight.empty()) {
      collect();
    } else if (queue.empty() && (starved || strategy.exhausted())) {
      break;  // nothing outstanding and nothing more to propose
    }
  }
  if (preparing.valid() && !prepared) {
    // Started but never needed (everything came from the database or failed to compile).
    preparing.get();
    prepared = true;
  }

  // The winner comes from every verified trial of this kernel, device and problem (earlier runs
  // included), after re-timing the leaders interleaved so that noise cannot crown one.
  std::map<std::string, TrialRecord> latest;
  for (auto& tr : store.trials_for(kernel_id, device_id, problem_id)) latest[tr.config_key] = std::move(tr);
  std::vector<TrialRecord> ok;
  for (auto& [key, tr] : latest) {
    if (tr.status == TrialStatus::kOk && std::isfinite(tr.time_ms)) ok.push_back(tr);
  }
  std::sort(ok.begin(), ok.end(), [](const TrialRecord& a, const TrialRecord& b) { return a.time_ms < b.time_ms; });
  const bool stopped = status == "interrupted";
  if (!ok.empty()) {
    std::size_t top = std::min<std::size_t>(ok.size(), static_cast<std::size_t>(std::max(options.retime_top, 0)));
    TrialRecord winner = ok.front();
    if (!stopped && top >= 2) {
      std::vector<Config> configs;
      std::vector<CompileResult> compiled(top);
      std::vector<RetimeCandidate> candidates;
      for (std::size_t i = 0; i < top; ++i) {
        configs.push_back(space.parse_key(ok[i].config_key));
        if (backend.needs_compilation()) compiled[i] = pool->submit(render(instance, configs[i], device.arch)).get();
      }
      for (std::size_t i = 0; i < top; ++i)
        candidates.push_back({configs[i], backend.needs_compilation() ? &compiled[i] : nullptr});
      ensure_prepared();
      const std::vector<Measurement> re = backend.retime(candidates, options.retime_rounds);
      for (std::size_t i = 0; i < top && i < re.size(); ++i) {
        summary.gpu_seconds += re[i].gpu_ms * 1e-3;
        TrialRecord r = ok[i];
        r.id = 0;
        r.run_id = run_id;
        r.samples_ms = re[i].samples_ms;
        r.sample_count = static_cast<int>(re[i].samples_ms.size());
        r.time_ms = re[i].time_ms;
        r.time_min_ms = re[i].time_min_ms;
        r.time_mean_ms = re[i].time_mean_ms;
        r.time_spread = re[i].time_spread;
        r.error = "re-timed interleaved with the other finalists";
        const double bytes = instance.bytes(configs[i]), flops = instance.flops(configs[i]);
        r.gbps = bytes / (r.time_ms * 1e-3) / 1e9;
        r.gflops = flops / (r.time_ms * 1e-3) / 1e9;
        r.id = store.add_trial(r);
        summary.finalists.push_back(r);
      }
      std::sort(summary.finalists.begin(), summary.finalists.end(),
                [](const TrialRecord& a, const TrialRecord& b) { return a.time_ms < b.time_ms; });
      if (!summary.finalists.empty()) winner = summary.finalists.front();
    }
    store.set_best(winner.id);
    // Keep the winner's CUBIN, so a client can launch it without compiling.
    if (backend.needs_compilation()) {
      const Config wc = space.parse_key(winner.config_key);
      const CompileResult c = pool->submit(render(instance, wc, device.arch)).get();
      if (c.ok) store.put_binary(c.key, c.arch, c.lowered_name, c.cubin);
    }
    summary.best = winner;
  }

  summary.status = status;
  summary.wall_seconds = seconds_since(t0);
  if (pool) summary.compile_seconds = pool->busy_seconds() - compile_busy_start;
  json s;
  s["trials"] = summary.trials;
  s["measured"] = summary.measured;
  s["from_database"] = summary.from_database;
  s["by_status"] = summary.by_status;
  s["wall_seconds"] = summary.wall_seconds;
  s["gpu_seconds"] = summary.gpu_seconds;
  s["timed_seconds"] = summary.timed_seconds;
  s["compile_seconds"] = summary.compile_seconds;
  s["backend_seconds"] = summary.backend_seconds;
  s["wait_compile_seconds"] = summary.wait_compile_seconds;
  s["phases_seconds"] = summary.phases_seconds;
  if (summary.best) {
    s["best"] = {{"trial_id", summary.best->id}, {"config", summary.best->config_key}, {"time_ms", summary.best->time_ms}};
  }
  store.finish_run(run_id, status, s.dump());
  return summary;
}

}  // namespace ktune
