// From a job to a run (ktune/setup.h): merging a job file with overrides, choosing the kernel
// and the backend, falling back to a shipped recording where no GPU can serve, and choosing the
// strategy of "auto".
#include "ktune/setup.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ktune/effort.h"
#include "ktune/error.h"
#include "ktune/objectives.h"
#include "ktune/suggest.h"
#include "ktune/transfer.h"

namespace ktune {

namespace {

// --backend and --replay: which backend was asked for, if any.
std::optional<BackendKind> requested_backend(const JobOverrides& o) {
  std::optional<BackendKind> kind;
  if (o.backend) {
    if (*o.backend == "cuda")
      kind = BackendKind::kCuda;
    else if (*o.backend == "replay")
      kind = BackendKind::kReplay;
    else
      throw Error(ErrorKind::kUsage,
                  fmt::format("--backend '{}': expected cuda or replay", *o.backend));
  }
  if (o.replay) {
    if (kind == BackendKind::kCuda)
      throw Error(ErrorKind::kUsage, "--replay FILE replays; it does not go with --backend cuda");
    kind = BackendKind::kReplay;
  }
  if (kind == BackendKind::kReplay && !o.replay)
    throw Error(ErrorKind::kUsage, "--backend replay needs the recording: --replay FILE");
  return kind;
}

std::shared_ptr<Recording> load_recording(const std::string& path, const std::string& kernel,
                                          const Problem& problem, const std::string& device) {
  RecordingQuery q;
  q.kernel = kernel;
  q.problem = problem;
  q.device = device;
  auto recording = std::make_shared<Recording>(read_recording(path, q));
  if (recording->trials.empty())
    throw Error(ErrorKind::kInput,
                fmt::format("{}: the recording holds no measurements: nothing to replay", path));
  return recording;
}

// A value given as an override wins over the job file's, which wins over the default.
template <typename T>
T pick(const std::optional<T>& given, const std::optional<T>& from_job, T fallback) {
  return given ? *given : from_job ? *from_job : fallback;
}

// Every number of a run within what it can mean: finite, positive where it must be.
void check_ranges(const TuneOptions& o) {
  const auto refuse = [](const std::string& what) { throw Error(ErrorKind::kUsage, what); };
  const MeasureOptions& m = o.measure;
  if (o.budget.evaluations == 0) refuse("--budget-evals 0: a run needs at least one evaluation");
  if (std::isnan(o.budget.seconds) || o.budget.seconds <= 0)
    refuse(fmt::format("--budget-time {}: expected a number of seconds above 0", o.budget.seconds));
  if (m.samples < 0) refuse(fmt::format("--samples {}: must not be negative", m.samples));
  if (m.warmup < 0) refuse(fmt::format("--warmup {}: must not be negative", m.warmup));
  if (m.max_samples < 1) refuse(fmt::format("--max-samples {}: at least 1", m.max_samples));
  if (!std::isfinite(m.target_spread) || m.target_spread < 0)
    refuse(
        fmt::format("--target-spread {}: expected a finite number of at least 0", m.target_spread));
  if (!std::isfinite(m.timeout_seconds) || m.timeout_seconds <= 0)
    refuse(fmt::format("--timeout {}: expected a finite number of seconds above 0",
                       m.timeout_seconds));
  if (!std::isfinite(m.sustain_ms) || m.sustain_ms < 0 || m.sustain_ms > 60000)
    refuse(fmt::format("--sustain {}: expected milliseconds from 0 to 60000", m.sustain_ms));
  if (!std::isfinite(m.energy_ms) || m.energy_ms < 0 || m.energy_ms > 60000)
    refuse(fmt::format("--energy-ms {}: expected milliseconds from 0 to 60000", m.energy_ms));
  if (!std::isnan(o.stop_at_ceiling) && !(o.stop_at_ceiling > 0 && o.stop_at_ceiling <= 1))
    refuse(
        fmt::format("--stop-at-ceiling {}: expected a fraction of the ceiling above 0, at most 1",
                    o.stop_at_ceiling));
  if (o.retime_top < 0) refuse(fmt::format("--retime-top {}: must not be negative", o.retime_top));
}

// --effort over the job file's effort, else the default level.
const EffortLevel& job_effort(const JobFile& job, const JobOverrides& o) {
  if (o.effort) return effort_level(*o.effort, "--effort");
  if (job.effort) return effort_level(*job.effort, job.path + ": effort", ErrorKind::kInput);
  return effort_level(kDefaultEffort);
}

// The budget, the stagnation stop and the stop at the ceiling. The effort level fills in the
// budget of a search that has none: a strategy named by the user runs as asked.
void set_budget(const JobFile& job, const JobOverrides& o, const EffortLevel& effort,
                TuneOptions& options) {
  if (job.budget_evaluations) options.budget.evaluations = *job.budget_evaluations;
  if (job.budget_seconds) options.budget.seconds = *job.budget_seconds;
  if (o.budget_evaluations) options.budget.evaluations = *o.budget_evaluations;
  if (o.budget_seconds) options.budget.seconds = *o.budget_seconds;
  const bool budget_given =
      job.budget_evaluations || job.budget_seconds || o.budget_evaluations || o.budget_seconds;
  if (options.strategy == "auto" && !budget_given) {
    options.budget.evaluations = effort.evaluations;
    options.budget.stagnation = effort.stagnation;
    options.budget_from_effort = options.stagnation_from_effort = true;
  }
  if (o.stagnation || job.stagnation) {
    options.budget.stagnation = pick(o.stagnation, job.stagnation, std::uint64_t{0});
    options.stagnation_from_effort = false;
  }
  if (o.stop_at_ceiling || job.stop_at_ceiling)
    options.stop_at_ceiling = pick(o.stop_at_ceiling, job.stop_at_ceiling, 1.0);
}

// The strategy, budget and measurement of a job with its overrides, checked.
TuneOptions tune_options(const JobFile& job, const JobOverrides& o) {
  if (job.strategy) {
    const std::vector<std::string> names = strategy_names();
    if (std::find(names.begin(), names.end(), *job.strategy) == names.end())
      throw Error(
          ErrorKind::kInput,
          fmt::format("{}: strategy.name '{}' is not a strategy{}; known: {}", job.path,
                      *job.strategy, did_you_mean(*job.strategy, names), fmt::join(names, ", ")));
  }
  TuneOptions options;
  options.strategy = pick<std::string>(o.strategy, job.strategy, "auto");
  options.strategy_options = job.strategy_options;
  for (const auto& [k, v] : o.strategy_options) options.strategy_options[k] = v;
  if (o.study_storage) {
    // The native strategies keep their state (population, temperature, neighbourhood) in the
    // process; only an Optuna study lives in a storage that other processes can share.
    if (!strategy_traits(options.strategy).shares_study)
      throw Error(ErrorKind::kUsage,
                  fmt::format("--study-storage is for the strategies whose study several processes "
                              "can share: {}; not '{}', which keeps its state in the process",
                              fmt::join(strategies_sharing_a_study(), ", "), options.strategy));
    if (auto it = options.strategy_options.find("study_storage");
        it != options.strategy_options.end() && it->second != *o.study_storage)
      throw Error(
          ErrorKind::kUsage,
          fmt::format("--study-storage '{}' and strategy option study_storage='{}' disagree",
                      *o.study_storage, it->second));
    options.strategy_options["study_storage"] = *o.study_storage;
  }
  const EffortLevel& effort = job_effort(job, o);
  options.effort = effort.name;
  set_budget(job, o, effort, options);
  options.seed = o.seed;
  options.reuse = o.reuse;
  options.warm_start = o.warm_start || !o.warm_start_from.empty();
  options.retime_top = o.retime_top.value_or(effort.retime_top);
  options.part = o.part;
  options.parts = o.parts;
  MeasureOptions& m = options.measure;
  m.samples = pick(o.samples, job.samples, m.samples);
  m.warmup = pick(o.warmup, job.warmup, m.warmup);
  m.max_samples = pick(o.max_samples, job.max_samples, effort.max_samples);
  m.target_spread = pick(o.target_spread, job.target_spread, effort.target_spread);
  m.timeout_seconds = pick(o.timeout_seconds, job.timeout_seconds, m.timeout_seconds);
  m.sustain_ms = pick(o.sustain_ms, job.sustain_ms, m.sustain_ms);
  m.cutoff = pick(o.cutoff, job.cutoff, m.cutoff);
  m.seed = o.seed;
  const std::string flush = pick<std::string>(o.flush_l2, job.flush_l2, "auto");
  if (auto mode = flush_l2_from_string(flush))
    m.flush_l2 = *mode;
  else
    throw Error(ErrorKind::kUsage,
                fmt::format("--flush-l2 '{}': expected auto, always or never", flush));
  if (o.verify) {
    if (*o.verify != "device" && *o.verify != "host")
      throw Error(ErrorKind::kUsage,
                  fmt::format("--verify '{}': expected device or host", *o.verify));
    m.verify_on_device = *o.verify == "device";
  }
  const BuiltinObjective objective =
      o.objective ? builtin_objective(*o.objective, "--objective")
      : job.objective
          ? builtin_objective(*job.objective, job.path + ": measure.objective", ErrorKind::kInput)
          : builtin_objective("time", "objective");
  options.objective = objective.objective;
  options.objective_value = objective.value;
  m.energy_ms = pick(o.energy_ms, job.energy_ms,
                     objective.needs_energy ? MeasureOptions::kDefaultEnergyMs : 0.0);
  if (objective.needs_energy && m.energy_ms <= 0)
    throw Error(ErrorKind::kUsage, fmt::format("--objective {} needs energy, but --energy-ms is 0",
                                               objective.objective.name));
  check_ranges(options);
  options.command_line = o.command_line;
  return options;
}

}  // namespace

TuningJob resolve_job(const Registry& registry, const JobFile& job_file, const JobOverrides& o) {
  TuningJob t;
  JobFile job = job_file;
  const std::optional<BackendKind> requested = requested_backend(o);
  t.explicit_backend = requested.has_value();
  t.backend = requested.value_or(BackendKind::kCuda);
  Problem given = job_problem(job, o.problem);

  std::string kernel_name = o.kernel.empty() ? job.kernel : o.kernel;
  if (t.backend == BackendKind::kReplay) {
    t.recording = load_recording(*o.replay, kernel_name, given, o.replay_device);
    if (kernel_name.empty()) kernel_name = t.recording->kernel_name;
  }
  if (kernel_name.empty())
    throw Error(ErrorKind::kUsage, "no kernel: name one, or give a job file with --config");

  // The kernel: registered; else synthesized from the recording given or, without an explicit
  // backend, from one that ships with ktune.
  std::optional<KernelSpec> base;
  if (registry.contains(kernel_name)) {
    base = registry.get(kernel_name);
  } else if (!t.recording && !t.explicit_backend) {
    if (auto shipped = find_shipped_recording(kernel_name, std::nullopt)) {
      t.recording = load_recording(shipped->string(), kernel_name, given, o.replay_device);
      t.backend = BackendKind::kReplay;
      t.replay_reason =
          fmt::format("{} is known to ktune only from recorded measurements", kernel_name);
    }
  }
  if (t.recording && t.recording->kernel_name != kernel_name)
    throw Error(ErrorKind::kUsage,
                fmt::format("{} holds measurements of kernel '{}', not '{}'", t.recording->path,
                            t.recording->kernel_name, kernel_name));
  if (!base && t.recording) {
    base = job_file.path.empty() ? recorded_kernel(*t.recording, t.notes)
                                 : kernel_from_recording(*t.recording);
  }
  if (!base) base = registry.get(kernel_name);  // unknown kernel: a usage error naming the known
  // A registered kernel replayed from a recording made before it gained a parameter: that
  // parameter stays at its default.
  t.kernel = apply_job(*base, job);
  if (t.recording && registry.contains(kernel_name))
    fit_to_recording(t.kernel, *t.recording, t.notes);
  if (!o.inputs.empty() || !o.expected.empty()) {
    apply_inputs(t.kernel, o.inputs, o.expected, ".", "--input/--expected");
    t.kernel.validate();
  }
  // Replaying without a problem given: the recorded one.
  t.problem = t.kernel.make_problem(t.recording && given.empty() ? t.recording->problem : given);
  t.options = tune_options(job, o);
  for (const auto& path : o.warm_start_from) {
    RecordingQuery q;
    q.kernel = t.kernel.name;
    const Recording r = read_recording(path, q);
    if (r.kernel_name != t.kernel.name)
      throw Error(
          ErrorKind::kUsage,
          fmt::format("--warm-start-from {}: it holds measurements of kernel '{}', not '{}'", path,
                      r.kernel_name, t.kernel.name));
    t.options.transfer.push_back(transfer_source(r));
  }
  if (o.replay_delay_ms) {
    const double ms = *o.replay_delay_ms;
    if (!std::isfinite(ms) || ms < 0 || ms > 600'000)
      throw Error(ErrorKind::kUsage,
                  fmt::format("--replay-delay {}: expected milliseconds from 0 to 600000", ms));
    if (t.explicit_backend && t.backend != BackendKind::kReplay)
      throw Error(ErrorKind::kUsage, "--replay-delay is for the replay backend (--replay FILE)");
    t.replay_delay_ms = ms;
  }
  return t;
}

namespace {

// Without a GPU and without an explicit backend: the recording of the same kernel and problem
// that ships with ktune, said on the way.
void fall_back_to_shipped_recording(TuningJob& job, const Error& no_gpu) {
  const std::string key = problem_key(job.problem, job.kernel.problem);
  auto shipped = find_shipped_recording(job.kernel.name, key);
  if (!shipped) {
    std::string dirs;
    for (const auto& d : recording_dirs()) dirs += (dirs.empty() ? "" : ", ") + d.string();
    throw Error(ErrorKind::kDevice,
                fmt::format("{}; no recording of {} [{}] ships with ktune to replay instead "
                            "(looked in {})",
                            no_gpu.what(), job.kernel.name, key, dirs));
  }
  job.recording = load_recording(shipped->string(), job.kernel.name, job.problem, "");
  fit_to_recording(job.kernel, *job.recording, job.notes);
  job.backend = BackendKind::kReplay;
  job.replay_reason = no_gpu.what();
  job.no_gpu = true;
}

}  // namespace

TuningSetup set_up_tuning(TuningJob job, CudaBackend::Options cuda,
                          std::unique_ptr<CudaBackend> gpu) {
  TuningSetup s;
  s.strategy = make_strategy(job.options.strategy);  // an unknown name before any device error
  if (job.backend == BackendKind::kCuda && gpu) {
    s.cuda = gpu.get();
    s.backend = std::move(gpu);
  } else if (job.backend == BackendKind::kCuda) {
    // The GPU is checked before anything is written, so a machine without one changes nothing.
    try {
      auto c = std::make_unique<CudaBackend>(std::move(cuda));
      s.cuda = c.get();
      s.backend = std::move(c);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kDevice || job.explicit_backend) throw;
      fall_back_to_shipped_recording(job, e);
    }
  }
  if (job.backend == BackendKind::kReplay) {
    const Recording& r = *job.recording;
    if (r.kernel_name != job.kernel.name)
      throw Error(ErrorKind::kUsage, fmt::format("{} holds measurements of kernel '{}', not '{}'",
                                                 r.path, r.kernel_name, job.kernel.name));
    const std::string key = problem_key(job.problem, job.kernel.problem);
    if (r.problem_key() != key)
      throw Error(ErrorKind::kUsage,
                  fmt::format("{} holds measurements of {} for [{}], not [{}]; pass --problem to "
                              "match",
                              r.path, job.kernel.name, r.problem_key(), key));
    job.notes.insert(job.notes.begin(), r.notes.begin(), r.notes.end());
    auto replay = std::make_unique<ReplayBackend>(job.recording);
    replay->set_delay(job.replay_delay_ms);
    s.backend = std::move(replay);
  } else if (job.replay_delay_ms > 0) {
    throw Error(ErrorKind::kUsage, "--replay-delay is for the replay backend (--replay FILE)");
  }
  s.instance =
      std::make_unique<KernelInstance>(job.kernel, job.problem, s.backend->device().limits);
  if (job.backend == BackendKind::kCuda) check_data_files(*s.instance);  // before any GPU work
  // auto decides here, once, by the budget and the size of the space: the strategy it chose is
  // the one that runs, and the run records both (runs.strategy, runs.strategy_chosen).
  TuneOptions& options = job.options;
  s.strategy_text = options.strategy;
  if (options.strategy == "auto") {
    check_auto_options(options.strategy_options);
    s.auto_choice = choose_auto_strategy(s.instance->space(), options.budget.evaluations,
                                         options.budget.seconds);
    if (options.budget_from_effort) {
      // Where every configuration fits within the effort's budget, each is measured: the
      // stagnation stop is for searches.
      if (s.auto_choice->strategy != kAutoSearchStrategy && options.stagnation_from_effort)
        options.budget.stagnation = 0;
      s.auto_choice->reason += fmt::format(" (the {} effort's budget", options.effort);
      if (options.budget.stagnation > 0)
        s.auto_choice->reason +=
            fmt::format(", ending after {} evaluations without an improvement beyond the noise",
                        options.budget.stagnation);
      s.auto_choice->reason += ")";
    }
    s.strategy_text = fmt::format("auto ({}: {})", s.auto_choice->strategy, s.auto_choice->reason);
    options.strategy_chosen = s.auto_choice->strategy;
    s.strategy = make_strategy(options.strategy_chosen);
  }
  if (job.backend == BackendKind::kReplay) {
    s.instance->space().for_each_valid([&](const Config&) { return ++s.valid < kValidCountLimit; });
    s.missing = static_cast<ReplayBackend&>(*s.backend).missing(s.instance->space());
  }
  s.job = std::move(job);
  return s;
}

}  // namespace ktune
