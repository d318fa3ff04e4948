// A tuning session: one job, resolved and started the way `ktune tune` starts it, then run. The
// command line, the Python package and programs linking ktune all tune through a Session, so
// they resolve a job, choose a backend, start compile processes, open the database and choose
// the strategy alike.
//
//   ktune::Registry registry;
//   ktune::register_builtin_kernels(registry);
//   ktune::SessionOptions options;
//   options.overrides.kernel = "reduce";
//   options.overrides.problem = {{"n", 1 << 24}};
//   options.executable = "/usr/bin/ktune";  // its __worker and __compile
//   ktune::Session session(registry, std::move(options));
//   const ktune::TuneSummary summary = session.run();
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/job.h"
#include "ktune/observer.h"
#include "ktune/run_summary.h"
#include "ktune/store.h"

namespace ktune {

class Registry;      // ktune/registry.h
class Trace;         // the timeline, ktune/trace.h
struct TuningSetup;  // what the session resolved, ktune/setup.h (in the source tree)

struct SessionOptions {
  JobFile job;             // a job file (load_job), or none
  JobOverrides overrides;  // what a command line puts over the job file
  std::string database = "ktune.db";
  // The ktune program: the CUDA backend's GPU worker is its `__worker`, the compile processes
  // are its `__compile`. Needed where the job runs on a GPU.
  std::string executable;
  int device = 0;                    // the GPU, by this machine's ordinal
  std::vector<std::string> plugins;  // plugin paths the GPU worker loads (as the registry did)
  // Parallel compilations, and on threads of this process instead of compile processes: given
  // here they win over the job file's [compile]; neither: one per core, less one, in processes.
  std::optional<unsigned> compile_threads;
  std::optional<bool> compile_in_process;
  // Seconds one configuration's compilation may take in a compile process (CompileTimeout,
  // ktune/compiler.h); given here it wins over the job file's; neither: adaptive.
  std::optional<double> compile_timeout;
  // The caller's check of each configuration's outputs (CudaBackend::Options::host_check) and
  // the buffers it is given (MeasureOptions::fetch_outputs).
  std::function<std::optional<std::string>(const std::map<std::string, std::string>&)> host_check;
  std::vector<std::string> fetch_outputs;
  // What the run ranks configurations by, and each trial's value of it where that is not time
  // (TuneOptions::objective, objective_value): Kernel Tuner's objective over its metrics.
  Objective objective;
  std::function<double(const TrialRecord&)> objective_value;
  // Config keys to measure instead of searching: the run proposes exactly these (those valid
  // for its problem; one already measured there is answered from the database), with no other
  // budget. A family's cross-measurement (ktune/family.h).
  std::vector<std::string> listed;
  // Config keys the search proposes first (TuneOptions::seeds): a family's neighbours' best.
  std::vector<std::string> seeds;
  // Keep a timeline of the start and the run (timeline()), with times from `origin` (default:
  // when the session is made; the command line gives the process's start).
  bool timeline = false;
  std::optional<RunClock::time_point> origin;
};

class Session {
 public:
  // Resolves the job (Error(kUsage) or Error(kInput) for what is wrong with it), starts the
  // compile processes before the device query where a CUDA driver loads (so they warm NVRTC
  // while CUDA initialises), chooses the backend (Error(kDevice) where a GPU is needed and
  // missing: without a GPU and without an explicit backend, the recording of the same job that
  // ships with ktune is replayed instead: setup().job says why), and opens the database
  // (Error(kDatabase)). Nothing is written before run() but a database file that did not exist.
  Session(const Registry& registry, SessionOptions options);
  // The next session of a series (a family's next problem): where it runs where `previous` ran,
  // it takes over `previous`'s compile processes (same number and kind), its GPU worker with its
  // CUDA context (same device and program, and neither session checks outputs itself:
  // SessionOptions::host_check) and its open database (same file), instead of starting its own:
  // on an H200 that saves most of a second per run. `previous` is left without them and may
  // only be destroyed.
  Session(const Registry& registry, SessionOptions options, Session&& previous);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The resolved job, the kernel instance, the backend, the strategy (ktune/setup.h, which the
  // front ends in ktune's tree read; a program uses the accessors below).
  const TuningSetup& setup() const;
  const KernelInstance& instance() const;
  Backend& backend() const;
  std::string strategy() const;  // "random", or "auto (bayes: <why>)"
  bool replays() const;          // a recording is replayed: nothing is measured here
  // What to tell the user before the run (why a recording is replayed, what it lacks), one line
  // each, warnings starting with "warning: ".
  std::vector<std::string> notes() const;
  Store& store();
  unsigned compile_threads() const;         // the compile pool's processes or threads; 0: none
  double start_seconds() const;             // from the origin to the end of the start
  std::shared_ptr<Trace> timeline() const;  // null unless SessionOptions::timeline

  // Runs the job once (ktune/tuner.h). A run refused before its first trial leaves no run row,
  // and a database file the session created and no run wrote is removed again.
  TuneSummary run(RunObserver* observer = nullptr, const std::atomic<bool>* stop = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
