// The session (ktune/session.h): a job's start in the order that lets the slow parts overlap,
// and its run.
#include "ktune/session.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "ktune/cuda_backend.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/setup.h"
#include "ktune/trace.h"

namespace ktune {

namespace {

// The database of a session. A run refused before its first trial leaves no run row; when the
// file was created for it and holds no run (another process may have started one meanwhile),
// the file goes too, so a refused run leaves nothing behind.
class SessionDatabase {
 public:
  explicit SessionDatabase(const std::string& path)
      : path_(path), created_(!std::filesystem::exists(path)) {
    try {
      store_.emplace(Store::open(path));
    } catch (const Error&) {
      remove_files();
      throw;
    }
  }
  Store& store() { return *store_; }

  // Called when a run failed: removes what this session created and nothing wrote to.
  void forget_if_unused() noexcept {
    try {
      if (created_ && store_->runs().empty()) {
        store_.reset();
        remove_files();
      }
    } catch (...) {
      // The run's failure is what the caller must see.
    }
  }

 private:
  void remove_files() const {
    if (!created_ || path_.empty()) return;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(path_ + suffix, ec);
  }
  std::string path_;
  bool created_;
  std::optional<Store> store_;
};

// An Optuna study's storage that names nothing, or the results database itself (which Optuna's
// tables or journal lines would go into), is refused before anything is opened.
void check_study_storage(const TuneOptions& options, const std::string& database) {
  const auto it = options.strategy_options.find("study_storage");
  if (it == options.strategy_options.end()) return;
  const std::string& url = it->second;
  if (url.empty())
    throw Error(ErrorKind::kUsage,
                "study storage '': names no storage; leave it out for a study in memory, or give "
                "journal:PATH, redis://HOST:PORT or a database URL such as sqlite:///PATH");
  std::string file;
  for (const char* scheme : {"journal:", "sqlite:///"})
    if (url.rfind(scheme, 0) == 0) file = url.substr(std::strlen(scheme));
  if (file.empty() || database.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path named = fs::weakly_canonical(fs::absolute(file, ec), ec);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const fs::path db = fs::weakly_canonical(fs::absolute(database + suffix, ec), ec);
    if (!ec && named == db)
      throw Error(ErrorKind::kUsage,
                  fmt::format("study storage '{}' names the results database {}: the study must "
                              "be kept in a file of its own",
                              url, database + suffix));
  }
}

unsigned compile_threads_for(std::optional<unsigned> asked) {
  return asked.value_or(0) != 0 ? *asked : std::max(1u, std::thread::hardware_concurrency() - 1);
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  RunClock::time_point origin;
  std::vector<std::pair<const char*, RunClock::time_point>> steps;  // the start, step by step
  std::shared_ptr<CompileCache> cache;
  std::unique_ptr<CompilePool> pool;
  unsigned threads = 0;
  TuningSetup setup;
  std::optional<SessionDatabase> database;
  RunClock::time_point started;  // the end of the start
  std::shared_ptr<Trace> trace;
  bool checks_outputs = false;  // the backend holds the caller's host_check

  void start(const Registry& registry, Impl* previous);

  // SessionOptions::listed: the listed strategy instead of the job's search.
  void list_configs() {
    std::vector<Config> configs;
    for (const std::string& key : options.listed)
      configs.push_back(setup.instance->space().parse_key(key));
    TuneOptions& o = setup.job.options;
    o.budget = Budget{};
    o.budget.evaluations = configs.size();
    o.strategy = "listed";
    o.strategy_chosen.clear();
    o.strategy_options.clear();
    o.warm_start = false;
    o.seeds.clear();
    setup.auto_choice.reset();
    setup.strategy = make_listed_strategy(std::move(configs));
    setup.strategy_text = "listed";
  }

  void step_done(const char* what) { steps.emplace_back(what, RunClock::now()); }

  void start_pool() {
    std::vector<std::string> command;
    if (!options.compile_in_process.value_or(false)) {
      if (options.executable.empty())
        throw Error(ErrorKind::kUsage,
                    "compile processes need the ktune program (SessionOptions::executable)");
      command = {options.executable, "__compile"};
    }
    pool = std::make_unique<CompilePool>(threads, cache, std::move(command));
    step_done("compile processes");
  }

  CudaBackend::Options cuda_options() {
    CudaBackend::Options cuda;
    cuda.device = options.device;
    if (!options.executable.empty()) cuda.worker_command = {options.executable, "__worker"};
    cuda.plugins = options.plugins;
    cuda.cache = cache;
    cuda.host_check = std::move(options.host_check);
    return cuda;
  }

  // The start's steps on the timeline's "run" row, from the origin.
  void draw_start() {
    trace = std::make_shared<Trace>(origin);
    trace->span("run", "start: options, kernel, database, compile processes", origin, started);
    auto begin = origin;
    for (const auto& [what, end] : steps) {
      trace->span("run", what, begin, end);
      begin = end;
    }
  }
};

// Where `previous` (a session of the same series, or null) has what this one needs, it is taken
// over instead of started again: the compile processes (same number, same kind), the CUDA
// backend with its GPU worker and context (same device and program, no caller's check) and the
// database (same file).
void Session::Impl::start(const Registry& registry, Impl* previous) {
  if (!options.compile_threads) options.compile_threads = options.job.compile_threads;
  if (!options.compile_in_process) options.compile_in_process = options.job.compile_in_process;
  if (!options.compile_timeout) options.compile_timeout = options.job.compile_timeout;
  if (options.compile_timeout &&
      !(*options.compile_timeout > 0 && std::isfinite(*options.compile_timeout)))
    throw Error(ErrorKind::kUsage, fmt::format("compile timeout {}: seconds, a positive number",
                                               *options.compile_timeout));
  if (options.compile_threads.value_or(0) > 1024)
    throw Error(ErrorKind::kUsage,
                fmt::format("compile threads {}: at most 1024", *options.compile_threads));
  threads = compile_threads_for(options.compile_threads);
  cache = previous ? previous->cache : std::make_shared<CompileCache>(CompileCache::default_dir());
  TuningJob job = resolve_job(registry, options.job, options.overrides);
  check_study_storage(job.options, options.database);
  step_done("options, kernels, job file");
  if (job.backend == BackendKind::kCuda && options.executable.empty())
    throw Error(ErrorKind::kUsage,
                "tuning on a GPU needs the ktune program, whose __worker is the GPU worker "
                "(SessionOptions::executable)");
  if (previous && previous->pool && previous->threads == threads &&
      previous->options.compile_in_process == options.compile_in_process &&
      previous->options.executable == options.executable)
    pool = std::move(previous->pool);
  std::unique_ptr<CudaBackend> gpu;
  if (previous && previous->setup.cuda && !previous->checks_outputs && !options.host_check &&
      previous->options.device == options.device &&
      previous->options.executable == options.executable &&
      previous->options.plugins == options.plugins) {
    gpu.reset(previous->setup.cuda);
    previous->setup.backend.release();
    previous->setup.cuda = nullptr;
  }
  checks_outputs = static_cast<bool>(options.host_check);
  // The compile processes start before the device query where a driver can be loaded, so that
  // they load and warm NVRTC while this process and the GPU worker initialise CUDA (0.1-0.2 s)
  // rather than after: the first configurations then meet warm processes. The driver stays
  // loaded through the backend's start, which would otherwise load it again.
  std::shared_ptr<void> driver;
  if (job.backend == BackendKind::kCuda && !gpu) driver = load_cuda_driver();
  if (driver && !pool) start_pool();
  setup = set_up_tuning(std::move(job), cuda_options(), std::move(gpu));
  driver.reset();
  setup.job.options.measure.fetch_outputs = options.fetch_outputs;
  setup.job.options.seeds = options.seeds;
  // The caller's own objective (the Python package's, over Kernel Tuner's metrics) over the
  // job's; ktune's own objectives come through JobOverrides::objective instead.
  if (!options.objective.is_time() || options.objective_value) {
    setup.job.options.objective = options.objective;
    setup.job.options.objective_value = options.objective_value;
  }
  if (!options.listed.empty()) list_configs();
  step_done("the device and the kernel's space");
  if (!setup.backend->needs_compilation()) pool.reset();  // fell back to a recording
  if (previous && previous->database && previous->options.database == options.database)
    database = std::move(previous->database), previous->database.reset();
  else
    database.emplace(options.database);
  step_done("database");
  if (setup.backend->needs_compilation() && !pool) start_pool();
  if (pool) pool->set_timeout(CompileTimeout{options.compile_timeout});
  started = RunClock::now();
  if (options.timeline) draw_start();
}

Session::Session(const Registry& registry, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->origin = options.origin.value_or(RunClock::now());
  impl_->options = std::move(options);
  impl_->start(registry, nullptr);
}

Session::Session(const Registry& registry, SessionOptions options, Session&& previous)
    : impl_(std::make_unique<Impl>()) {
  impl_->origin = options.origin.value_or(RunClock::now());
  impl_->options = std::move(options);
  impl_->start(registry, previous.impl_.get());
}

Session::~Session() = default;

const TuningSetup& Session::setup() const { return impl_->setup; }
const KernelInstance& Session::instance() const { return *impl_->setup.instance; }
Backend& Session::backend() const { return *impl_->setup.backend; }
Store& Session::store() { return impl_->database->store(); }
std::string Session::strategy() const { return impl_->setup.strategy_text; }
bool Session::replays() const { return impl_->setup.backend->replays(); }

std::vector<std::string> Session::notes() const {
  const TuningJob& job = impl_->setup.job;
  std::vector<std::string> out;
  if (!job.replay_reason.empty())
    out.push_back(fmt::format(
        "{}; replaying recorded measurements from {}, measured on {}{}", job.replay_reason,
        job.recording->path, job.recording->device_name,
        job.no_gpu ? " (nothing is measured here; --backend cuda insists on a GPU)" : ""));
  out.insert(out.end(), job.notes.begin(), job.notes.end());
  if (impl_->setup.missing)
    out.push_back(fmt::format(
        "warning: {}{} of {}{} valid configurations of {} are not in the recording; they are "
        "answered invalid",
        impl_->setup.valid >= kValidCountLimit ? "at least " : "", impl_->setup.missing,
        impl_->setup.valid >= kValidCountLimit ? "the first " : "", impl_->setup.valid,
        job.kernel.name));
  return out;
}

unsigned Session::compile_threads() const { return impl_->pool ? impl_->threads : 0; }
std::shared_ptr<Trace> Session::timeline() const { return impl_->trace; }

double Session::start_seconds() const {
  return std::chrono::duration<double>(impl_->started - impl_->origin).count();
}

TuneSummary Session::run(RunObserver* observer, const std::atomic<bool>* stop) {
  Impl& s = *impl_;
  std::optional<TraceObserver> drawing;
  RunObservers observers;
  if (s.trace) observers.add(&drawing.emplace(s.trace));
  observers.add(observer);
  try {
    return tune(*s.setup.instance, *s.setup.backend, s.database->store(), *s.setup.strategy,
                s.setup.job.options, s.pool.get(), observers.empty() ? nullptr : &observers, stop);
  } catch (...) {
    s.database->forget_if_unused();
    throw;
  }
}

}  // namespace ktune
