// `ktune tune`: tune one kernel for one problem on one device (or replay recorded measurements of
// one) and store the best configuration; `ktune __worker`: the GPU worker process the CUDA
// backend starts.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "ktune/cuda_backend.h"
#include "ktune/error.h"
#include "ktune/job.h"
#include "ktune/replay.h"
#include "ktune/tuner.h"

namespace ktune::cli {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_interrupt(int) {
  if (g_stop.exchange(true)) {
    // A second Ctrl-C: stop now.
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{:02}:{:02}", s / 60, s % 60);
}

// One progress line on a terminal, redrawn at most ten times a second; nothing in scripts.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void update(const Progress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (p.done < p.total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double rate = p.elapsed_seconds > 0 ? p.done / p.elapsed_seconds : 0;
    const double eta = rate > 0 ? (p.total - p.done) / rate : NAN;
    std::string best = "-";
    if (p.best_ms) {
      best = fmt::format("{:.4g} ms", *p.best_ms);
      if (std::isfinite(p.best_gbps)) best += fmt::format(" ({:.0f} GB/s)", p.best_gbps);
    }
    std::string line = fmt::format("[{}/{}] {:.1f} cfg/s  best {}  ETA {}", p.done, p.total, rate, best,
                                   format_duration(eta));
    std::cerr << "\r" << line << "\x1b[K" << std::flush;
    drawn_ = true;
  }
  void finish() {
    if (drawn_) std::cerr << "\n";
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : p.string();
}

}  // namespace

po::options_description database_options() {
  po::options_description o("Database");
  const char* env = std::getenv("KTUNE_DB");
  o.add_options()("db", po::value<std::string>()->default_value(env && *env ? env : "ktune.db"),
                  "results database (default $KTUNE_DB or ./ktune.db)");
  return o;
}

int cmd_tune(const std::vector<std::string>& args) {
  po::options_description opts;
  po::options_description own("Search");
  own.add_options()("kernel", po::value<std::string>(), "kernel name")(
      "config", po::value<std::string>(), "job file (configs/*.toml): kernel, problem, space, strategy, budget, "
                                          "measurement; options given here win")(
      "strategy", po::value<std::string>()->default_value("auto"),
      "search strategy (ktune tune --help lists them); auto: brute force when no budget is given or "
      "the valid space fits within it, else the best search strategy")(
      "strategy-option", po::value<std::vector<std::string>>()->composing(),
      "strategy option NAME=VALUE (repeatable)")(
      "study-storage", po::value<std::string>()->value_name("URL"),
      "Optuna strategies: keep the study in this storage to continue or share it (journal:PATH, "
      "sqlite:///PATH or another database URL); the same as --strategy-option study_storage=URL")(
      "budget-evals", po::value<std::uint64_t>(), "stop after this many trials")(
      "budget-time", po::value<double>(), "stop after this many seconds")(
      "seed", po::value<std::uint64_t>()->default_value(1), "seed of the strategy and of the input data")(
      "no-reuse", "measure again what the database already holds for this kernel, device and problem")(
      "warm-start", "try first the best configurations stored for this kernel on other devices/problems")(
      "retime-top", po::value<int>()->default_value(5), "finalists re-timed interleaved at the end")(
      "compile-threads", po::value<unsigned>()->default_value(0),
      "parallel NVRTC compilations (0: one per core, less one)")(
      "compile-in-process", "compile on threads of this process instead of compile processes");
  po::options_description replay("Backend");
  replay.add_options()("backend", po::value<std::string>(),
                       "cuda | replay (default: cuda; without a GPU, a recording shipped with ktune "
                       "for this kernel and problem is replayed)")(
      "replay", po::value<std::string>(),
      "recorded measurements to replay: a Kernel Tuner cache (.json, .json.gz) or a ktune database "
      "(implies --backend replay)")(
      "replay-device", po::value<std::string>(),
      "device name of the recording: names a Kernel Tuner cache's device, picks one of a database's");
  po::options_description measure("Measurement");
  measure.add_options()("samples", po::value<int>()->default_value(0),
                        "timed runs per configuration (0: adaptive, until the spread is under "
                        "--target-spread)")(
      "warmup", po::value<int>()->default_value(1), "untimed runs before timing")(
      "target-spread", po::value<double>()->default_value(0.01), "adaptive: stop at this IQR/median")(
      "max-samples", po::value<int>()->default_value(50), "adaptive: at most this many timed runs")(
      "flush-l2", po::value<std::string>()->default_value("auto"), "auto | always | never")(
      "timeout", po::value<double>()->default_value(20), "seconds before a trial is killed (watchdog)");
  opts.add(own).add(replay).add(measure).add(problem_options()).add(target_options()).add(database_options())
      .add(plugin_options()).add(output_options());
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "tune", "KERNEL [--problem NAME=VALUE ...] [options]\n       ktune tune --config JOB.toml [options]",
            opts, pos, vm)) {
    std::cout << "strategies: " << fmt::format("{}", fmt::join(strategy_names(), ", ")) << "\n";
    return 0;
  }

  auto registry = make_registry(vm);
  JobFile job = vm.count("config") ? load_job(vm["config"].as<std::string>()) : JobFile{};
  // The backend: cuda or replay when named; otherwise cuda, or a shipped recording where no GPU
  // (or no kernel source) can serve.
  std::string backend_kind = vm.count("backend") ? vm["backend"].as<std::string>() : "";
  if (!backend_kind.empty() && backend_kind != "cuda" && backend_kind != "replay")
    throw Error(ErrorKind::kUsage, fmt::format("--backend '{}': expected cuda or replay", backend_kind));
  if (vm.count("replay")) {
    if (backend_kind == "cuda") throw Error(ErrorKind::kUsage, "--replay FILE replays; it does not go with --backend cuda");
    backend_kind = "replay";
  }
  if (backend_kind == "replay" && !vm.count("replay"))
    throw Error(ErrorKind::kUsage, "--backend replay needs the recording: --replay FILE");
  const bool explicit_backend = !backend_kind.empty();
  const std::string replay_device = vm.count("replay-device") ? vm["replay-device"].as<std::string>() : "";
  std::map<std::string, std::int64_t> given_problem = job.problem;
  if (vm.count("problem"))
    for (const auto& [k, v] : parse_problem(vm["problem"].as<std::vector<std::string>>())) given_problem[k] = v;

  std::string kernel_name = vm.count("kernel") ? vm["kernel"].as<std::string>() : job.kernel;
  std::shared_ptr<Recording> recording;
  std::string replay_reason;  // why a recording is replayed without --replay (said on stderr)
  const auto load = [&](const std::string& path) {
    RecordingQuery q;
    q.kernel = kernel_name;
    q.problem = given_problem;
    q.device = replay_device;
    recording = std::make_shared<Recording>(read_recording(path, q));
  };
  if (backend_kind == "replay") {
    load(vm["replay"].as<std::string>());
    if (kernel_name.empty()) kernel_name = recording->kernel_name;
  }
  if (kernel_name.empty()) throw Error(ErrorKind::kUsage, "no kernel: name one, or give a job file with --config");

  KernelSpec base;
  bool synthesized = false;
  if (registry->contains(kernel_name)) {
    base = registry->get(kernel_name);
  } else if (recording && recording->kernel_name == kernel_name) {
    base = kernel_from_recording(*recording);
    synthesized = true;
  } else if (!explicit_backend) {
    // A kernel known only from a recording that ships with ktune.
    if (auto shipped = find_shipped_recording(kernel_name, std::nullopt)) {
      load(shipped->string());
      base = kernel_from_recording(*recording);
      synthesized = true;
      backend_kind = "replay";
      replay_reason = fmt::format("{} is known to ktune only from recorded measurements", kernel_name);
    }
  }
  if (!synthesized && base.name.empty()) base = registry->get(kernel_name);  // unknown kernel: usage error
  std::vector<std::string> replay_notes;
  if (synthesized && !vm.count("config")) {
    // A recorded space's restrictions live in a replay job; without one the space is the
    // Cartesian product and whatever the recording lacks is answered invalid.
    if (auto path = replay_job_for(kernel_name)) {
      job = load_job(path->string());
      replay_notes.push_back(fmt::format("restrictions of {} from {}", kernel_name, path->string()));
    } else {
      replay_notes.push_back(fmt::format(
          "warning: no restrictions known for {} (no {}.toml among the replay jobs): the space is the Cartesian "
          "product of the recorded values; configurations missing from the recording are answered invalid",
          kernel_name, kernel_name));
    }
  }
  if (recording && recording->kernel_name != kernel_name)
    throw Error(ErrorKind::kUsage, fmt::format("{} holds measurements of kernel '{}', not '{}'", recording->path,
                                               recording->kernel_name, kernel_name));
  const KernelSpec kernel = apply_job(base, job);
  // Replaying without a problem given: the recorded one.
  const Problem problem =
      kernel.make_problem(recording && given_problem.empty() ? recording->problem : given_problem);

  // A value given on the command line wins over the job file, which wins over the default.
  const auto pick = [&](const char* option, auto from_job) {
    using T = typename decltype(from_job)::value_type;
    return (!vm[option].defaulted() || !from_job) ? vm[option].as<T>() : *from_job;
  };
  TuneOptions options;
  options.strategy = pick("strategy", job.strategy);
  options.strategy_options = job.strategy_options;
  if (vm.count("strategy-option"))
    for (auto& [k, v] : parse_assignments(vm["strategy-option"].as<std::vector<std::string>>(), "strategy-option"))
      options.strategy_options[k] = v;
  if (vm.count("study-storage")) {
    const std::string url = vm["study-storage"].as<std::string>();
    if (options.strategy.rfind("optuna", 0) != 0)
      throw Error(ErrorKind::kUsage,
                  fmt::format("--study-storage is for the Optuna strategies (--strategy optuna:tpe ...), not '{}'",
                              options.strategy));
    if (auto it = options.strategy_options.find("study_storage");
        it != options.strategy_options.end() && it->second != url)
      throw Error(ErrorKind::kUsage, fmt::format("--study-storage '{}' and strategy option study_storage='{}' disagree",
                                                 url, it->second));
    options.strategy_options["study_storage"] = url;
  }
  if (job.budget_evaluations) options.budget.evaluations = *job.budget_evaluations;
  if (job.budget_seconds) options.budget.seconds = *job.budget_seconds;
  if (vm.count("budget-evals")) options.budget.evaluations = vm["budget-evals"].as<std::uint64_t>();
  if (vm.count("budget-time")) options.budget.seconds = vm["budget-time"].as<double>();
  options.seed = vm["seed"].as<std::uint64_t>();
  options.reuse = !vm.count("no-reuse");
  options.warm_start = vm.count("warm-start") > 0;
  options.retime_top = vm["retime-top"].as<int>();
  options.measure.samples = pick("samples", job.samples);
  options.measure.warmup = pick("warmup", job.warmup);
  options.measure.target_spread = pick("target-spread", job.target_spread);
  options.measure.max_samples = pick("max-samples", job.max_samples);
  const std::string flush = pick("flush-l2", job.flush_l2);
  options.measure.timeout_seconds = pick("timeout", job.timeout_seconds);
  options.measure.seed = options.seed;
  if (auto mode = flush_l2_from_string(flush)) options.measure.flush_l2 = *mode;
  else throw Error(ErrorKind::kUsage, fmt::format("--flush-l2 '{}': expected auto, always or never", flush));
  if (options.measure.samples < 0 || options.measure.warmup < 0 || options.measure.max_samples < 1)
    throw Error(ErrorKind::kUsage, "--samples, --warmup and --max-samples must not be negative");
  for (std::size_t i = 0; i < args.size(); ++i) options.command_line += (i ? " " : "") + args[i];
  options.command_line = "ktune tune " + options.command_line;
  auto strategy = make_strategy(options.strategy);

  // The GPU is checked before the database is touched, so a machine without one changes nothing.
  CudaBackend::Options bo;
  bo.device = vm["device"].as<int>();
  bo.worker_command = {self_executable(), "__worker"};
  if (vm.count("plugin")) bo.plugins = vm["plugin"].as<std::vector<std::string>>();
  bo.cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  if (vm.count("arch"))
    throw Error(ErrorKind::kUsage, "--arch is for compiling without a GPU; tuning runs on the device's own architecture");
  const std::string key_of_problem = problem_key(problem, kernel.problem);
  std::unique_ptr<Backend> backend;
  CudaBackend* cuda = nullptr;
  bool cuda_missing = false;
  if (backend_kind != "replay") {
    try {
      auto c = std::make_unique<CudaBackend>(bo);
      cuda = c.get();
      backend = std::move(c);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kDevice || explicit_backend) throw;
      // No GPU: replay what ktune ships for this kernel and problem, if anything.
      auto shipped = find_shipped_recording(kernel.name, key_of_problem);
      if (!shipped) {
        std::string dirs;
        for (const auto& d : recording_dirs()) dirs += (dirs.empty() ? "" : ", ") + d.string();
        throw Error(ErrorKind::kDevice, fmt::format("{}; no recording of {} [{}] ships with ktune to replay instead "
                                                    "(looked in {})",
                                                    e.what(), kernel.name, key_of_problem, dirs));
      }
      load(shipped->string());
      backend_kind = "replay";
      replay_reason = e.what();
      cuda_missing = true;
    }
  }
  if (backend_kind == "replay") {
    if (recording->kernel_name != kernel.name)
      throw Error(ErrorKind::kUsage, fmt::format("{} holds measurements of kernel '{}', not '{}'", recording->path,
                                                 recording->kernel_name, kernel.name));
    if (recording->problem_key() != key_of_problem)
      throw Error(ErrorKind::kUsage, fmt::format("{} holds measurements of {} for [{}], not [{}]; pass --problem to match",
                                                 recording->path, kernel.name, recording->problem_key(),
                                                 key_of_problem));
    backend = std::make_unique<ReplayBackend>(recording);
  }
  KernelInstance instance(kernel, problem, backend->device().limits);
  // auto decides by the budget and the size of the space; the run records what it chose.
  std::string strategy_text = options.strategy;
  std::string auto_chose;
  if (options.strategy == "auto") {
    const AutoChoice choice =
        choose_auto_strategy(instance.space(), options.budget.evaluations, options.budget.seconds);
    auto_chose = choice.strategy;
    strategy_text = fmt::format("auto ({}: {})", choice.strategy, choice.reason);
    options.strategy = fmt::format("auto ({})", choice.strategy);
  }
  if (backend_kind == "replay") {
    // Said whatever the output options: a replayed result is not a measurement on this machine.
    if (!replay_reason.empty())
      std::cerr << fmt::format("note: {}; replaying recorded measurements from {}, measured on {}{}\n",
                               replay_reason, recording->path, recording->device_name,
                               cuda_missing ? " (nothing is measured here; --backend cuda insists on a GPU)" : "");
    for (const auto& n : recording->notes) std::cerr << "note: " << n << "\n";
    for (const auto& n : replay_notes) std::cerr << (n.rfind("warning: ", 0) == 0 ? "" : "note: ") << n << "\n";
    auto& replay = static_cast<ReplayBackend&>(*backend);
    std::uint64_t valid = 0;
    instance.space().for_each_valid([&](const Config&) { return ++valid, true; });
    if (const std::uint64_t missing = replay.missing(instance.space()))
      std::cerr << fmt::format("warning: {} of {} valid configurations of {} are not in the recording; they are "
                               "answered invalid\n",
                               missing, valid, kernel.name);
  }
  Store store = Store::open(vm["db"].as<std::string>());
  unsigned threads = vm["compile-threads"].as<unsigned>();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency() - 1);
  std::vector<std::string> compile_command;
  if (!vm.count("compile-in-process")) compile_command = {self_executable(), "__compile"};
  std::unique_ptr<CompilePool> pool;
  if (backend->needs_compilation()) pool = std::make_unique<CompilePool>(threads, bo.cache, compile_command);

  const bool quiet = vm.count("quiet") > 0;
  ProgressLine line(!quiet && !json_output(vm) && ::isatty(STDERR_FILENO));
  if (!quiet && !json_output(vm)) {
    if (cuda)
      std::cerr << fmt::format("tuning {} [{}] on {} ({}), strategy {}, {} compile threads, database {}\n",
                               kernel.name, instance.problem_key(), backend->device().name, backend->device().arch,
                               strategy_text, threads, store.path().string());
    else
      std::cerr << fmt::format("replaying {} [{}] as measured on {} ({}), strategy {}, database {}\n", kernel.name,
                               instance.problem_key(), backend->device().name, recording->path, strategy_text,
                               store.path().string());
  }
  std::signal(SIGINT, on_interrupt);
  const TuneSummary s = tune(instance, *backend, store, *strategy, options, pool.get(),
                             [&](const Progress& p) { line.update(p); }, &g_stop);
  std::signal(SIGINT, SIG_DFL);
  line.finish();

  const double rate = s.wall_seconds > 0 ? s.trials / s.wall_seconds : 0;
  if (json_output(vm)) {
    nlohmann::json j;
    j["run_id"] = s.run_id;
    j["status"] = to_string(s.status);
    j["trials"] = s.trials;
    j["measured"] = s.measured;
    j["from_database"] = s.from_database;
    j["by_status"] = s.by_status;
    j["wall_seconds"] = s.wall_seconds;
    j["configs_per_second"] = rate;
    j["gpu_seconds"] = s.gpu_seconds;
    j["timed_seconds"] = s.timed_seconds;
    j["gpu_share"] = s.wall_seconds > 0 ? s.gpu_seconds / s.wall_seconds : 0;
    j["timed_share"] = s.wall_seconds > 0 ? s.timed_seconds / s.wall_seconds : 0;
    j["compile_seconds"] = s.compile_seconds;
    j["wait_compile_seconds"] = s.wait_compile_seconds;
    j["backend_seconds"] = s.backend_seconds;
    j["phases_seconds"] = s.phases_seconds;
    j["strategy"] = options.strategy;
    if (!auto_chose.empty()) j["strategy_chosen"] = auto_chose;
    j["backend"] = backend->name();
    if (cuda) j["worker_starts"] = cuda->worker_starts();
    if (recording) j["recording"] = {{"path", recording->path}, {"device", recording->device_name}};
    if (s.best) {
      j["best"] = {{"config", nlohmann::json::parse(s.best->config_json)}, {"key", s.best->config_key},
                   {"time_ms", s.best->time_ms}, {"gbps", s.best->gbps}, {"trial_id", s.best->id}};
    }
    for (const auto& f : s.finalists) j["finalists"].push_back({{"key", f.config_key}, {"time_ms", f.time_ms}, {"gbps", f.gbps}});
    print_json(j);
  } else if (!quiet) {
    std::cout << fmt::format("run {} {}: {} trials ({} measured, {} from the database) in {:.1f} s, {:.1f} configs/s\n",
                             s.run_id, to_string(s.status), s.trials, s.measured, s.from_database, s.wall_seconds, rate);
    std::string statuses;
    for (const auto& [name, n] : s.by_status) statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", n, name);
    std::cout << "  outcomes   " << statuses << "\n";
    if (cuda)
      std::cout << fmt::format("  GPU busy   {:.1f} s ({:.0f}% of wall; timed samples {:.0f}%); compiling {:.1f} s on {} threads\n",
                               s.gpu_seconds, 100 * s.gpu_seconds / std::max(s.wall_seconds, 1e-9),
                               100 * s.timed_seconds / std::max(s.wall_seconds, 1e-9), s.compile_seconds, threads);
    else
      std::cout << fmt::format("  replayed   from {}, measured on {}\n", recording->path, recording->device_name);
    if (s.best) {
      std::cout << fmt::format("  best       {}\n             {:.4f} ms median", s.best->config_key, s.best->time_ms);
      if (std::isfinite(s.best->gbps)) std::cout << fmt::format(", {:.1f} GB/s", s.best->gbps);
      std::cout << "\n";
    } else {
      std::cout << "  best       none: no configuration ran and verified\n";
    }
  }
  if (s.status == RunStatus::kInterrupted) return 130;
  return s.best ? 0 : 1;
}

int cmd_worker(const std::vector<std::string>&) { return cuda_worker_main(); }

}  // namespace ktune::cli
