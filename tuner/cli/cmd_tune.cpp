// `ktune tune`: tune one kernel for one problem on one device (or replay recorded measurements of
// one) and store the best configuration; `ktune __worker`: the GPU worker process the CUDA
// backend starts. The job's resolution is the library's (ktune/setup.h); this file maps options
// to it and prints.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "cli.h"
#include "ktune/compiler.h"
#include "ktune/cuda_backend.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/job.h"
#include "ktune/replay.h"
#include "ktune/session.h"
#include "ktune/setup.h"
#include "ktune/trace.h"

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

// Progress on stderr: on a terminal one line redrawn at most ten times a second; elsewhere (a
// log, a job scheduler, `tee`) a plain line every two seconds, without control codes.
class ProgressLine final : public RunObserver {
 public:
  enum class Mode { kOff, kTerminal, kLines };
  explicit ProgressLine(Mode mode) : mode_(mode) {}
  void progress(const Progress& p) override {
    if (mode_ == Mode::kOff) return;
    if (!p.phase.empty()) {  // once per phase: what the run does after its search
      if (p.phase == phase_) return;
      phase_ = p.phase;
      show(fmt::format("[{}/{}] {}", p.done, p.total, p.phase));
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto every =
        mode_ == Mode::kTerminal ? std::chrono::milliseconds(100) : std::chrono::milliseconds(2000);
    if (p.done < p.total && now - last_ < every) return;
    if (mode_ == Mode::kLines && p.done >= p.total && drawn_) return;  // the summary follows
    last_ = now;
    const double rate = p.elapsed_seconds > 0 ? p.done / p.elapsed_seconds : 0;
    const double eta = rate > 0 ? (p.total - p.done) / rate : NAN;
    std::string best = "-";
    if (p.best_ms) {
      best = fmt::format("{:.4g} ms", *p.best_ms);
      if (std::isfinite(p.best_gbps)) best += fmt::format(" ({:.0f} GB/s)", p.best_gbps);
    }
    show(fmt::format("[{}/{}] {:.1f} cfg/s  best {}  ETA {}", p.done, p.total, rate, best,
                     format_duration(eta)));
  }
  void finish() {
    if (drawn_ && mode_ == Mode::kTerminal) std::cerr << "\n";
  }

 private:
  void show(const std::string& line) {
    if (mode_ == Mode::kTerminal)
      std::cerr << "\r" << line << "\x1b[K" << std::flush;
    else
      std::cerr << "progress " << line << "\n" << std::flush;
    drawn_ = true;
  }

  Mode mode_;
  std::string phase_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

ProgressLine::Mode progress_mode(const po::variables_map& vm) {
  const std::string mode = vm["progress"].as<std::string>();
  if (mode != "auto" && mode != "always" && mode != "never")
    throw Error(ErrorKind::kUsage,
                fmt::format("--progress '{}': expected auto, always or never", mode));
  if (mode == "never" || vm.count("quiet") || json_output(vm)) return ProgressLine::Mode::kOff;
  return ::isatty(STDERR_FILENO) ? ProgressLine::Mode::kTerminal : ProgressLine::Mode::kLines;
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : p.string();
}

// The search: the kernel or job, the strategy and its budget, reuse and warm starts, the
// finalists, compilation, the devices or part of a shared search, progress and the timeline.
po::options_description search_options() {
  po::options_description own("Search");
  own.add_options()("kernel", po::value<std::string>()->value_name("KERNEL"), "kernel name")(
      "config", po::value<std::string>()->value_name("JOB.toml"),
      "job file (configs/*.toml): kernel, problem, space, strategy, budget, measurement; options "
      "given here win")(
      "strategy", po::value<std::string>()->value_name("NAME"),
      "search strategy (listed below); default auto: brute force when no budget is given or the "
      "valid space fits within it, else the best search strategy")(
      "strategy-option",
      po::value<std::vector<std::string>>()->composing()->value_name("NAME=VALUE"),
      "strategy option (repeatable)")(
      "study-storage", po::value<std::string>()->value_name("URL"),
      "Optuna strategies: keep the study in this storage to continue or share it (journal:PATH, "
      "redis://HOST:PORT, sqlite:///PATH or another database URL); the same as "
      "--strategy-option study_storage=URL")("budget-evals", po::value<Unsigned>()->value_name("N"),
                                             "stop after this many trials")(
      "budget-time", po::value<double>()->value_name("SECONDS"), "stop after this many seconds")(
      "effort", po::value<std::string>()->value_name("LEVEL"),
      "quick | default | thorough: the budget and stagnation stop of a search without a budget "
      "of its own, and how carefully each configuration is timed, where not given "
      "(docs/effort.md; default: default)")(
      "stop-at-ceiling", po::value<double>()->value_name("FRACTION"),
      "stop once the best reaches this fraction of the device's measured ceiling: its FLOP/s "
      "against the FP32 FMA peak, its GB/s against the bandwidth (stored by bench/peers "
      "--store-ceilings; docs/effort.md)")(
      "budget-stagnation", po::value<Unsigned>()->value_name("N"),
      "stop after N trials in a row without an improvement beyond the noise (0: never; the "
      "effort level's where it sets the budget)")(
      "family-budget-evals", po::value<Unsigned>()->value_name("N"),
      "for a family of problems: trials of all its tuning runs together, each run an equal "
      "share of what the runs before it left (the cross-measurement comes on top)")(
      "family-budget-time", po::value<double>()->value_name("SECONDS"),
      "for a family of problems: seconds of all its tuning runs together, shared as "
      "--family-budget-evals")("seed",
                               po::value<Unsigned>()->default_value(Unsigned{1})->value_name("N"),
                               "seed of the strategy and of the input data")(
      "no-reuse",
      "measure again what the database already holds for this kernel, device and problem")(
      "no-selector",
      "for a family of problems: tune each, but measure no candidates across them and make no "
      "selector (ktune best answers only the tuned problems)")(
      "warm-start",
      "open the search with a transfer from this kernel's trials stored for other "
      "devices/problems")(
      "warm-start-from", po::value<std::vector<std::string>>()->composing()->value_name("FILE"),
      "also rank by this recording of the kernel on another GPU (Kernel Tuner cache or ktune "
      "database; repeatable; implies --warm-start)")(
      "retime-top", po::value<int>()->value_name("N"),
      "finalists re-timed interleaved at the end (default: the effort level's, 5 for default)")(
      "compile-threads", po::value<Unsigned>()->default_value(Unsigned{0})->value_name("N"),
      "parallel NVRTC compilations (0: one per core, less one)")(
      "compile-in-process", "compile on threads of this process instead of compile processes")(
      "compile-timeout", po::value<double>()->value_name("S"),
      "seconds one configuration's compilation may take before its compile process is killed "
      "and the trial fails (default: adaptive, 5 x the 0.9 quantile of the run's compile times, "
      "at least 30 s)")(
      "devices", po::value<std::string>()->value_name("all|N,N,..."),
      "tune on several GPUs of this host at once: one worker process per device; the workers "
      "of one device model share the search (docs/scale-out.md)")(
      "part", po::value<std::string>()->value_name("I/K"),
      "this process is part I of K sharing one search through the results database: brute "
      "force and random search take every K-th configuration of their order from the I-th "
      "first, a search strategy is seeded apart (what --devices gives each worker)")(
      "progress", po::value<std::string>()->default_value("auto")->value_name("WHEN"),
      "auto | always | never: a progress line on stderr (redrawn on a terminal, one line every "
      "2 s elsewhere)")(
      "trace", po::value<std::string>()->value_name("FILE.json"),
      "write the run's timeline there (compile batches, the GPU's trials, the loop's waits) in "
      "the Trace Event Format, for Perfetto or chrome://tracing; with --devices one file per "
      "device, FILE.gpuN.json");
  return own;
}

// The backend: the GPU, or a recording to replay.
po::options_description backend_options() {
  po::options_description backend("Backend");
  backend.add_options()("backend", po::value<std::string>()->value_name("NAME"),
                        "cuda | replay (default: cuda; without a GPU, a recording shipped with "
                        "ktune for this kernel and problem is replayed)")(
      "replay", po::value<std::vector<std::string>>()->composing()->value_name("FILE"),
      "recorded measurements to replay: a Kernel Tuner cache (.json, .json.gz) or a ktune "
      "database (implies --backend replay); for a family of problems, one per problem "
      "(repeatable)")(
      "replay-device", po::value<std::string>()->value_name("NAME"),
      "device name of the recording: names a Kernel Tuner cache's device, picks one of a "
      "database's")("replay-delay", po::value<double>()->value_name("MS"),
                    "replay: wait this long per evaluation, a simulated measurement time (to time "
                    "several workers on one study without a GPU)");
  return backend;
}

// The measurement: samples, warm-up, L2 flushes, verification, the watchdog, sustained load.
po::options_description measurement_options() {
  po::options_description measure("Measurement");
  measure.add_options()("samples", po::value<int>()->value_name("N"),
                        "timed runs per configuration (default 0: adaptive, until the spread is "
                        "under --target-spread)")("warmup", po::value<int>()->value_name("N"),
                                                  "untimed runs before timing (default 1)")(
      "target-spread", po::value<double>()->value_name("X"),
      "adaptive: stop at this IQR/median (default 0.01)")(
      "max-samples", po::value<int>()->value_name("N"),
      "adaptive: at most this many timed runs (default 50)")(
      "flush-l2", po::value<std::string>()->value_name("WHEN"),
      "auto | always | never (default auto)")(
      "verify", po::value<std::string>()->value_name("WHERE"),
      "device | host: compare outputs with the reference on the GPU (default), or download them")(
      "timeout", po::value<double>()->value_name("SECONDS"),
      "seconds before a trial is killed (watchdog; default 20)")(
      "sustain", po::value<double>()->value_name("MS"),
      "GPU milliseconds the finalists run back to back before their re-timing, and again while "
      "their times or the SM clock under load still change (at most 20 times; default 100, 0: "
      "none)")(
      "energy-ms", po::value<double>()->value_name("MS"),
      "measure each configuration's energy: after its timed samples it runs back to back for this "
      "many GPU milliseconds while NVML's energy counter is read (default 0: no energy; 300 with "
      "--objective energy or edp)")(
      "objective", po::value<std::string>()->value_name("NAME"),
      "time | energy | edp: what configurations are ranked by (default time; energy and edp, the "
      "energy-delay product, measure energy)")(
      "no-cutoff",
      "time every configuration fully: no early cut-off of those whose first samples are already "
      "far slower than the best (for exact data)");
  return measure;
}

// The input data: how input buffers are filled and where expected outputs come from.
po::options_description input_data_options() {
  po::options_description data("Input data");
  data.add_options()(
      "input", po::value<std::vector<std::string>>()->composing()->value_name("BUFFER=INIT"),
      "fill an input buffer: random(lo, hi), uniform(lo, hi), normal(mean, stddev), zipf(s), "
      "zipf(s, n), choice(v, ...), iota, value(x), file(PATH) (raw or .npy) or generator "
      "(repeatable)")(
      "expected",
      po::value<std::vector<std::string>>()->composing()->value_name("BUFFER=file(PATH)"),
      "take an output's expected contents from a file (raw or .npy) (repeatable)");
  return data;
}

// `ktune tune`'s options: its own groups, then those it shares with other commands.
po::options_description tune_options() {
  po::options_description all;
  all.add(search_options())
      .add(input_data_options())
      .add(backend_options())
      .add(measurement_options())
      .add(problem_options())
      .add(device_options())
      .add(database_options())
      .add(plugin_options())
      .add(output_options());
  return all;
}

template <typename T>
std::optional<T> optional_value(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? std::optional<T>(vm[name].as<T>()) : std::nullopt;
}

// --part I/K, 1 <= I <= K: returns (I - 1, K).
std::pair<std::uint32_t, std::uint32_t> parse_part(const std::string& text) {
  unsigned i = 0, k = 0;
  char slash = 0, extra = 0;
  std::istringstream in(text);
  if (!(in >> i >> slash >> k) || slash != '/' || in >> extra || i < 1 || k < 1 || i > k ||
      k > 1u << 20)
    throw Error(ErrorKind::kUsage,
                fmt::format("--part '{}': expected I/K with 1 <= I <= K, such as 1/2", text));
  return {i - 1, k};
}

// The command line's overrides of the job, but the problem, which the caller gives: one, or each
// of a family's.
JobOverrides overrides_from(const po::variables_map& vm, const std::vector<std::string>& args) {
  JobOverrides o;
  if (vm.count("kernel")) o.kernel = vm["kernel"].as<std::string>();
  // One buffer per option: an init's arguments hold commas.
  for (const char* option : {"input", "expected"}) {
    if (!vm.count(option)) continue;
    auto& out = std::string_view(option) == "input" ? o.inputs : o.expected;
    for (const auto& item : vm[option].as<std::vector<std::string>>()) {
      auto [name, text] = split_assignment(item, option);
      out[name] = text;
    }
  }
  o.strategy = optional_value<std::string>(vm, "strategy");
  if (vm.count("strategy-option"))
    o.strategy_options =
        parse_assignments(vm["strategy-option"].as<std::vector<std::string>>(), "strategy-option");
  o.study_storage = optional_value<std::string>(vm, "study-storage");
  if (vm.count("budget-evals")) o.budget_evaluations = vm["budget-evals"].as<Unsigned>().value;
  o.budget_seconds = optional_value<double>(vm, "budget-time");
  o.effort = optional_value<std::string>(vm, "effort");
  o.stop_at_ceiling = optional_value<double>(vm, "stop-at-ceiling");
  if (vm.count("budget-stagnation")) o.stagnation = vm["budget-stagnation"].as<Unsigned>().value;
  o.seed = vm["seed"].as<Unsigned>().value;
  o.reuse = !vm.count("no-reuse");
  o.warm_start = vm.count("warm-start") > 0;
  if (vm.count("warm-start-from"))
    o.warm_start_from = vm["warm-start-from"].as<std::vector<std::string>>();
  o.retime_top = optional_value<int>(vm, "retime-top");
  if (vm.count("part")) std::tie(o.part, o.parts) = parse_part(vm["part"].as<std::string>());
  o.samples = optional_value<int>(vm, "samples");
  o.warmup = optional_value<int>(vm, "warmup");
  o.max_samples = optional_value<int>(vm, "max-samples");
  o.target_spread = optional_value<double>(vm, "target-spread");
  o.timeout_seconds = optional_value<double>(vm, "timeout");
  o.sustain_ms = optional_value<double>(vm, "sustain");
  o.energy_ms = optional_value<double>(vm, "energy-ms");
  o.objective = optional_value<std::string>(vm, "objective");
  if (vm.count("no-cutoff")) o.cutoff = false;
  o.flush_l2 = optional_value<std::string>(vm, "flush-l2");
  o.verify = optional_value<std::string>(vm, "verify");
  o.backend = optional_value<std::string>(vm, "backend");
  // Several recordings are a family's, one per problem (tune_family picks them).
  if (vm.count("replay") && vm["replay"].as<std::vector<std::string>>().size() == 1)
    o.replay = vm["replay"].as<std::vector<std::string>>().front();
  if (vm.count("replay-device")) o.replay_device = vm["replay-device"].as<std::string>();
  o.replay_delay_ms = optional_value<double>(vm, "replay-delay");
  o.command_line = "ktune tune";
  for (const auto& a : args) o.command_line += " " + a;
  return o;
}

// What is said before the run when it is about replaying, whatever the output options (a
// replayed result is not a measurement on this machine); with -q (`quiet`), which prints only
// errors, the warnings alone.
void print_notes(const Session& session, bool quiet) {
  for (const std::string& n : session.notes()) {
    const bool warning = n.rfind("warning: ", 0) == 0;
    if (warning || !quiet) std::cerr << (warning ? "" : "note: ") << n << "\n";
  }
}

// The run's summary (ktune/tuner.h) with what the session chose: the strategy, the backend, the
// compile processes (0 where the run compiles nothing), the recording, and the start's seconds.
nlohmann::json tune_json(const TuneSummary& s, const Session& session) {
  const TuningSetup& setup = session.setup();
  nlohmann::json j = summary_json(s);
  j["start_seconds"] = session.start_seconds();
  j["compile_threads"] = session.compile_threads();
  j["strategy"] = setup.job.options.strategy;
  j["effort"] = setup.job.options.effort;
  if (setup.auto_choice) j["strategy_chosen"] = setup.auto_choice->strategy;
  j["backend"] = setup.backend->name();
  if (setup.cuda) j["worker_starts"] = setup.cuda->worker_starts();
  if (setup.job.recording)
    j["recording"] = {{"path", setup.job.recording->path},
                      {"device", setup.job.recording->device_name}};
  return j;
}

// --stop-at-ceiling: where the best stands against the device's ceiling, or why it could not be
// held against one.
void print_ceiling(const TuneSummary& s) {
  const TuneSummary::Ceiling& c = s.ceiling;
  if (std::isnan(c.wanted)) return;
  if (!c.stored)
    std::cout << "  ceiling    none stored for this device (bench/peers --store-ceilings measures "
                 "them): the run went on to its budget\n";
  else if (!c.declared)
    std::cout << "  ceiling    the kernel declares neither bytes nor FLOPs: nothing to hold "
                 "against the device's ceilings\n";
  else
    std::cout << fmt::format(
        "  ceiling    best at {:.3f} of the device's ceiling{}\n", c.fraction,
        c.reached ? fmt::format(": at or above {:g}, the search stopped", c.wanted) : "");
}

void print_summary(const TuneSummary& s, const TuningSetup& setup, unsigned threads) {
  const double rate = s.wall_seconds > 0 ? s.trials / s.wall_seconds : 0;
  std::cout << fmt::format(
      "run {} {}: {} trials ({} measured{}, {} from the database) in {:.1f} s, {:.1f} configs/s\n",
      s.run_id, to_string(s.status), s.trials, s.measured,
      s.cut ? fmt::format(", {} of them cut early", s.cut) : "", s.from_database, s.wall_seconds,
      rate);
  std::string statuses;
  for (const auto& [name, n] : s.by_status)
    statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", n, name);
  std::cout << "  outcomes   " << statuses << "\n";
  print_ceiling(s);
  if (!s.energy_missing.empty())
    std::cout << "  energy     not read for every configuration: " << s.energy_missing << "\n";
  if (s.stagnated)
    std::cout << fmt::format(
        "  stopped    {} trials in a row without an improvement beyond the noise (the stagnation "
        "stop; --budget-stagnation)\n",
        setup.job.options.budget.stagnation);
  if (setup.cuda)
    std::cout << fmt::format(
        "  GPU busy   {:.1f} s ({:.0f}% of wall; timed samples {:.0f}%); compiling {:.1f} s on {} "
        "threads\n",
        s.gpu_seconds, 100 * s.gpu_seconds / std::max(s.wall_seconds, 1e-9),
        100 * s.timed_seconds / std::max(s.wall_seconds, 1e-9), s.compile_seconds, threads);
  if (s.clocks.readings > 0) {
    const std::string verdict = s.clocks.verdict();
    std::cout << fmt::format("  GPU clocks {}{}\n", s.clocks.describe(),
                             verdict.empty() ? "" : "  (" + verdict + ")");
  }
  if (setup.cuda && !s.finalists.empty()) {
    std::cout << fmt::format("  re-timed   {} finalists after {:.2f} s of sustained load",
                             s.finalists.size(), s.sustain_seconds);
    if (s.retime_clocks.readings > 0) std::cout << ", " << s.retime_clocks.describe();
    std::cout << "\n";
  }
  if (!setup.cuda)
    std::cout << fmt::format("  replayed   from {}, measured on {}\n", setup.job.recording->path,
                             setup.job.recording->device_name);
  if (s.best) {
    std::cout << fmt::format("  best       {}\n             {:.4f} ms median", s.best->config_key,
                             s.best->time_ms);
    if (std::isfinite(s.best->gbps)) std::cout << fmt::format(", {:.1f} GB/s", s.best->gbps);
    if (std::isfinite(s.best->energy_j))
      std::cout << fmt::format(", {:.4g} mJ at {:.0f} W", s.best->energy_j * 1e3, s.best->power_w);
    if (!setup.job.options.objective.is_time())
      std::cout << fmt::format("; ranked by {}", setup.job.options.objective.text());
    std::cout << "\n";
    if (s.pareto > 0)
      std::cout << fmt::format(
          "  pareto     {} configuration{} no other beats in both time and energy (ktune best "
          "--policy)\n",
          s.pareto, s.pareto == 1 ? "" : "s");
  } else {
    std::cout << "  best       none: no configuration ran and verified\n";
  }
}

// --trace FILE: refused before the run where its folder does not exist.
std::optional<std::filesystem::path> checked_trace_path(const po::variables_map& vm) {
  if (!vm.count("trace")) return std::nullopt;
  const std::filesystem::path path = vm["trace"].as<std::string>();
  if (path.empty() || path.filename().empty())
    throw Error(ErrorKind::kUsage, "--trace: expected a file name, such as run.trace.json");
  const std::filesystem::path folder =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    throw Error(ErrorKind::kUsage, fmt::format("--trace {}: the folder {} does not exist",
                                               path.string(), folder.string()));
  return path;
}

// What `ktune tune`'s options give the session.
SessionOptions session_options(const po::variables_map& vm, const std::vector<std::string>& args,
                               const JobFile& job, bool timeline) {
  SessionOptions o;
  o.job = job;
  o.overrides = overrides_from(vm, args);
  o.database = vm["db"].as<std::string>();
  o.executable = self_executable();
  o.device = vm["device"].as<int>();
  if (vm.count("plugin")) o.plugins = vm["plugin"].as<std::vector<std::string>>();
  // Given, they win over the job file's [compile].
  if (!vm["compile-threads"].defaulted()) {
    const std::uint64_t threads = vm["compile-threads"].as<Unsigned>().value;
    if (threads > 1024)
      throw Error(ErrorKind::kUsage,
                  fmt::format("--compile-threads {}: at most 1024 compile threads", threads));
    o.compile_threads = static_cast<unsigned>(threads);
  }
  if (vm.count("compile-in-process")) o.compile_in_process = true;
  o.compile_timeout = optional_value<double>(vm, "compile-timeout");
  if (o.compile_timeout && !(*o.compile_timeout > 0 && std::isfinite(*o.compile_timeout)))
    throw Error(ErrorKind::kUsage, fmt::format("--compile-timeout {}: seconds, a positive number",
                                               *o.compile_timeout));
  o.timeline = timeline;
  // From the process's start: what ktune did before the run (options, the kernel, the database,
  // starting the compile processes) is on the timeline too.
  o.origin = started();
  return o;
}

void print_header(Session& session) {
  const TuningSetup& setup = session.setup();
  const KernelInstance& instance = session.instance();
  const DeviceInfo device = session.backend().device();
  if (setup.cuda)
    std::cerr << fmt::format(
        "tuning {} [{}] on {} ({}), strategy {}, {} compile threads, database {}\n",
        instance.kernel().name, instance.problem_key(), device.name, device.arch,
        setup.strategy_text, session.compile_threads(), session.store().path().string());
  else
    std::cerr << fmt::format("replaying {} [{}] as measured on {} ({}), strategy {}, database {}\n",
                             instance.kernel().name, instance.problem_key(), device.name,
                             setup.job.recording->path, setup.strategy_text,
                             session.store().path().string());
}

// Runs the session with a progress line, Ctrl-C (the caller's handler) ending it after the trial
// in flight. On a failure the handler goes, the line ends and `failed` (may be empty) runs before
// the error is rethrown.
TuneSummary run_session(Session& session, ProgressLine::Mode progress,
                        const std::function<void()>& failed = {}) {
  ProgressLine line(progress);
  try {
    TuneSummary s = session.run(&line, &g_stop);
    line.finish();
    return s;
  } catch (...) {
    std::signal(SIGINT, SIG_DFL);
    line.finish();
    if (failed) failed();
    throw;
  }
}

// The problems to tune: the job file's (a value, or a family) with --problem's over them by name.
std::vector<Problem> problems_of(const po::variables_map& vm, const JobFile& job) {
  ProblemSet set = job_problems(job);
  if (vm.count("problem")) add_problem_items(set, vm["problem"].as<std::vector<std::string>>());
  return set.problems();
}

// For each problem of a family, the recording of --replay whose problem it is (compared on the
// family's parameters, so a recording's defaults such as a filter size need not be named).
std::vector<std::string> recordings_for(const po::variables_map& vm, const std::string& kernel,
                                        const std::vector<Problem>& problems) {
  std::vector<std::string> out(problems.size());
  if (!vm.count("replay")) return out;
  std::vector<std::pair<std::string, Problem>> recorded;
  for (const auto& path : vm["replay"].as<std::vector<std::string>>()) {
    RecordingQuery q;
    q.kernel = kernel;
    recorded.emplace_back(path, read_recording(path, q).problem);
  }
  for (std::size_t i = 0; i < problems.size(); ++i) {
    for (const auto& [path, problem] : recorded) {
      bool same = true;
      for (const auto& [name, value] : problems[i]) {
        const auto it = problem.find(name);
        same = same && it != problem.end() && it->second == value;
      }
      if (same) out[i] = path;
    }
    if (out[i].empty())
      throw Error(ErrorKind::kUsage,
                  fmt::format("--replay: none of the {} recordings holds the problem [{}]",
                              recorded.size(), problem_key(problems[i])));
  }
  return out;
}

// The family's table: each problem's line (`lines`, in tuning order) with its best as stored now
// (a candidate of another problem, measured there by the cross-measurement, may have won over
// `tuned`, the best of its own run).
void print_family_bests(const Store& store, const std::string& kernel,
                        const std::vector<FamilyMember>& members,
                        const std::vector<std::string>& tuned,
                        const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (i < members.size() && !tuned[i].empty())
      if (const auto b = store.best(kernel, members[i].key, members[i].device_id))
        line +=
            fmt::format("{:.4g} ms  {}{}", b->trial.time_ms, b->trial.config_key,
                        b->trial.config_key != tuned[i] ? "  (another problem's candidate)" : "");
    std::cout << line << "\n";
  }
}

// After a family's runs (`members`, in `order`): each candidate measured at each problem (the
// runs continue `session`'s series), then the selector made and stored. Its summary for the JSON
// output (null when Ctrl-C ended a cross-measurement: no selector is made); lines for people on
// stderr.
nlohmann::json make_family_selector(
    const po::variables_map& vm, const std::vector<std::string>& args, const Registry& registry,
    const JobFile& job, const std::vector<Problem>& problems, const std::vector<std::size_t>& order,
    const std::vector<std::string>& recordings, const std::string& kernel,
    const std::vector<FamilyMember>& members, std::unique_ptr<Session>& session,
    ProgressLine::Mode progress, bool talk) {
  const std::vector<std::string> candidates = family_candidates(session->store(), members);
  for (std::size_t n = 0; n < order.size(); ++n) {
    const std::size_t i = order[n];
    SessionOptions options = session_options(vm, args, job, false);
    options.overrides.problem = problems[i];
    options.overrides.warm_start = false;
    if (!recordings[i].empty()) options.overrides.replay = recordings[i];
    options.listed = candidates;
    options.origin.reset();
    session = std::make_unique<Session>(registry, std::move(options), std::move(*session));
    if (talk)
      std::cerr << fmt::format("cross-measurement {}/{}: {} candidates at [{}]\n", n + 1,
                               order.size(), candidates.size(), session->instance().problem_key());
    const TuneSummary s = run_session(*session, progress);
    if (s.status == RunStatus::kInterrupted) return nullptr;
  }
  Store& store = session->store();
  SelectorRecord record;
  record.selector = family_selector(store, members, candidates);
  record.kernel_name = kernel;
  record.kernel_id = members.front().kernel_id;
  record.device_id = members.front().device_id;
  record.replayed = members.front().replayed;
  const std::int64_t id = store.add_selector(record);
  const Selector& sel = record.selector;
  nlohmann::json j = {{"id", id},
                      {"method", sel.method},
                      {"problems", sel.rows.size()},
                      {"candidates", sel.candidates.size()}};
  if (!sel.held_out.empty()) {
    j["held_out_mean"] = sel.held_out_mean();
    j["held_out_worst"] = sel.held_out_worst();
  }
  return j;
}

// --family-budget-evals / --family-budget-time over the job file's [budget] family_*.
FamilyBudget family_budget(const po::variables_map& vm, const JobFile& job, std::size_t problems) {
  std::optional<std::uint64_t> evaluations = job.family_budget_evaluations;
  if (vm.count("family-budget-evals")) evaluations = vm["family-budget-evals"].as<Unsigned>().value;
  std::optional<double> seconds = job.family_budget_seconds;
  if (vm.count("family-budget-time")) seconds = vm["family-budget-time"].as<double>();
  return FamilyBudget(evaluations, seconds, problems);
}

// The per-problem budget a family's runs start from: --budget-evals / --budget-time, else the
// job file's.
Budget per_problem_budget(const po::variables_map& vm, const JobFile& job) {
  Budget b;
  if (job.budget_evaluations) b.evaluations = *job.budget_evaluations;
  if (job.budget_seconds) b.seconds = *job.budget_seconds;
  if (vm.count("budget-evals")) b.evaluations = vm["budget-evals"].as<Unsigned>().value;
  if (vm.count("budget-time")) b.seconds = vm["budget-time"].as<double>();
  return b;
}

// The family table's last line: the selector's candidates and its held-out figures.
void print_selector_line(const nlohmann::json& selector) {
  std::cout << fmt::format("selector: {} candidates measured at each of the {} problems",
                           selector["candidates"].get<std::size_t>(),
                           selector["problems"].get<std::size_t>());
  if (selector.contains("held_out_mean"))
    std::cout << fmt::format(
        "; each problem left out, its pick there reaches {:.3f} of the best on average, "
        "{:.3f} at worst",
        selector["held_out_mean"].get<double>(), selector["held_out_worst"].get<double>());
  std::cout << "\n";
}

// A family's tuning run of `problem`: its recording, its share of the family's budget, and no
// re-timing where the cross-measurement (`cross`) re-times. Each session after the first times
// its own start, not the process's.
SessionOptions family_run_options(const po::variables_map& vm, const std::vector<std::string>& args,
                                  const JobFile& job, const Problem& problem,
                                  const std::string& recording, const Budget& per_problem,
                                  const Budget& share, bool cross, bool first) {
  SessionOptions options = session_options(vm, args, job, false);
  options.overrides.problem = problem;
  if (!recording.empty()) options.overrides.replay = recording;
  if (share.evaluations != per_problem.evaluations)
    options.overrides.budget_evaluations = share.evaluations;
  if (share.seconds != per_problem.seconds) options.overrides.budget_seconds = share.seconds;
  if (cross) options.overrides.retime_top = 0;
  if (!first) options.origin.reset();
  return options;
}

// `ktune tune` over several problems, as a family: in family_order, each problem after the first
// seeded with the best configurations of its nearest tuned neighbours (family_seeds), one run each;
// then, unless --no-selector, the family's candidates measured at every problem and its selector
// stored; progress and a line per problem, then the family's table (or one JSON object, "family").
// The runs are one series of sessions (one set of compile processes, one GPU worker and context,
// one database), and where the cross-measurement follows, a problem's finalists are re-timed
// once, at its cross-measurement, not after its tuning run as well.
int tune_family(const po::variables_map& vm, const std::vector<std::string>& args,
                const Registry& registry, const JobFile& job, const std::vector<Problem>& problems,
                ProgressLine::Mode progress) {
  if (vm.count("trace"))
    throw Error(ErrorKind::kUsage, "--trace takes one problem; a family of problems writes none");
  const std::vector<std::size_t> order = family_order(problems);
  const std::string kernel = vm.count("kernel") ? vm["kernel"].as<std::string>() : job.kernel;
  const std::vector<std::string> recordings = recordings_for(vm, kernel, problems);
  FamilyBudget budget = family_budget(vm, job, problems.size());
  const Budget per_problem = per_problem_budget(vm, job);
  const bool quiet = vm.count("quiet") > 0, json = json_output(vm);
  const bool cross = !vm.count("no-selector");
  nlohmann::json summaries = nlohmann::json::array();
  std::vector<std::string> lines;
  std::vector<FamilyMember> members;  // the runs so far, in order
  std::vector<std::string> tuned;     // each run's best
  std::string kernel_name;            // as the runs stored it
  std::unique_ptr<Session> session;   // the series' latest
  int code = 0;
  std::signal(SIGINT, on_interrupt);
  for (std::size_t n = 0; n < order.size(); ++n) {
    const std::size_t i = order[n];
    SessionOptions options =
        family_run_options(vm, args, job, problems[i], recordings[i], per_problem,
                           budget.next(per_problem), cross, !session);
    if (session) {
      options.seeds = family_seeds(session->store(), problems[i], members);
      session = std::make_unique<Session>(registry, std::move(options), std::move(*session));
    } else {
      session = std::make_unique<Session>(registry, std::move(options));
    }
    print_notes(*session, quiet);
    if (!quiet && !json) {
      std::cerr << fmt::format("family {}/{}: ", n + 1, order.size());
      print_header(*session);
    }
    const TuneSummary s = run_session(*session, progress);
    budget.spent(s.trials, s.wall_seconds);
    nlohmann::json j = tune_json(s, *session);
    j["problem"] = session->instance().problem_key();
    summaries.push_back(std::move(j));
    // A run refused before its first trial has no row: a member without ids, which seeds none.
    members.push_back(s.run_id ? family_member(session->store(), s.run_id) : FamilyMember{});
    kernel_name = session->instance().kernel().name;
    tuned.push_back(s.best ? s.best->config_key : std::string());
    lines.push_back(fmt::format("  {:<28} {:>6} trials  {}",
                                "[" + session->instance().problem_key() + "]", s.trials,
                                s.best ? "" : "no configuration ran and verified"));
    if (!s.best) code = 1;
    if (s.status == RunStatus::kInterrupted) {
      code = 130;
      break;
    }
  }
  nlohmann::json selector;
  if (code == 0 && !vm.count("no-selector")) {
    selector = make_family_selector(vm, args, registry, job, problems, order, recordings,
                                    kernel_name, members, session, progress, !quiet && !json);
    if (selector.is_null()) code = 130;
  }
  std::signal(SIGINT, SIG_DFL);
  if (json) {
    nlohmann::json out = {{"family", std::move(summaries)}};
    if (!selector.is_null()) out["selector"] = selector;
    print_json(out);
  } else if (!quiet) {
    std::cout << fmt::format("family of {} problems of {}, tuned in this order{}:\n", order.size(),
                             kernel.empty() ? "the job's kernel" : kernel,
                             code == 130 ? " (interrupted)" : "");
    print_family_bests(session->store(), kernel_name, members, tuned, lines);
    if (!selector.is_null()) print_selector_line(selector);
  }
  return code;
}

}  // namespace

po::options_description database_options() {
  po::options_description o("Database");
  const char* env = std::getenv("KTUNE_DB");
  o.add_options()(
      "db",
      po::value<std::string>()->default_value(env && *env ? env : "ktune.db")->value_name("FILE"),
      "results database (default $KTUNE_DB or ./ktune.db)");
  return o;
}

int cmd_tune(const std::vector<std::string>& args) {
  const po::options_description opts = tune_options();
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "tune",
            "KERNEL [--problem NAME=VALUE ...] [options]\n       ktune tune --config JOB.toml "
            "[options]",
            opts, pos, vm)) {
    std::cout << "strategies: " << fmt::format("{}", fmt::join(strategy_names(), ", ")) << "\n";
    return 0;
  }
  // Checked here, before --devices starts its workers (each writes FILE.gpuN.json beside it).
  const std::optional<std::filesystem::path> trace_path = checked_trace_path(vm);
  if (vm.count("devices")) return tune_on_devices(args, vm, self_executable());
  const ProgressLine::Mode progress = progress_mode(vm);
  auto registry = make_registry(vm);
  const JobFile job = vm.count("config") ? load_job(vm["config"].as<std::string>()) : JobFile{};
  const std::vector<Problem> problems = problems_of(vm, job);
  if (problems.size() > 1) return tune_family(vm, args, *registry, job, problems, progress);
  if (vm.count("family-budget-evals") || vm.count("family-budget-time") ||
      job.family_budget_evaluations || job.family_budget_seconds)
    throw Error(ErrorKind::kUsage,
                "a family budget (--family-budget-evals, --family-budget-time, [budget] "
                "family_evaluations / family_seconds) is for a family of problems; this tunes one "
                "(--budget-evals, --budget-time)");
  if (vm.count("replay") && vm["replay"].as<std::vector<std::string>>().size() > 1)
    throw Error(ErrorKind::kUsage,
                "--replay given several times: several recordings are for a family of problems, "
                "one each (--problem with a list or a range)");
  SessionOptions options = session_options(vm, args, job, trace_path.has_value());
  if (vm.count("problem"))
    options.overrides.problem = parse_problem(vm["problem"].as<std::vector<std::string>>());
  Session session(*registry, std::move(options));
  print_notes(session, vm.count("quiet") > 0);
  const bool quiet = vm.count("quiet") > 0;
  if (!quiet && !json_output(vm)) print_header(session);
  std::signal(SIGINT, on_interrupt);
  const auto write_trace = [&] {
    if (!trace_path) return;
    session.timeline()->write(*trace_path);
    if (!quiet && !json_output(vm))
      std::cerr << fmt::format("timeline written to {}\n", trace_path->string());
  };
  // What the run did until it failed is what explains the failure.
  const TuneSummary s = run_session(session, progress, [&] {
    try {
      write_trace();
    } catch (const Error& e) {
      std::cerr << "warning: " << e.what() << "\n";
    }
  });
  std::signal(SIGINT, SIG_DFL);
  write_trace();
  if (json_output(vm))
    print_json(tune_json(s, session));
  else if (!quiet)
    print_summary(s, session.setup(), session.compile_threads());
  if (s.status == RunStatus::kInterrupted) return 130;
  return s.best ? 0 : 1;
}

// `ktune __worker [--device N]`, started by the CUDA backend (not a user's command).
int cmd_worker(const std::vector<std::string>& args) {
  int device = -1;  // none given, or not a device number: the context waits for the init message
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--device") continue;
    const std::string& text = args[i + 1];
    int n = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size() && n >= 0) device = n;
  }
  return cuda_worker_main(device);
}

}  // namespace ktune::cli
