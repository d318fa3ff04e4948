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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/observer.h"
#include "ktune/setup.h"
#include "ktune/store.h"
#include "ktune/trace.h"
#include "ktune/tuner.h"

namespace ktune {

struct SessionOptions {
  JobFile job;             // a job file (load_job), or none
  JobOverrides overrides;  // what a command line puts over the job file
  std::string database = "ktune.db";
  // The ktune program: the CUDA backend's GPU worker is its `__worker`, the compile processes
  // are its `__compile`. Needed where the job runs on a GPU.
  std::string executable;
  int device = 0;                    // the GPU, by this machine's ordinal
  std::vector<std::string> plugins;  // plugin paths the GPU worker loads (as the registry did)
  unsigned compile_threads = 0;      // parallel compilations; 0: one per core, less one
  bool compile_in_process = false;   // on threads of this process instead of compile processes
  // The caller's check of each configuration's outputs (CudaBackend::Options::host_check) and
  // the buffers it is given (MeasureOptions::fetch_outputs).
  decltype(CudaBackend::Options::host_check) host_check;
  std::vector<std::string> fetch_outputs;
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
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const TuningSetup& setup() const;  // the resolved job, the kernel instance, the backend
  const KernelInstance& instance() const;
  Backend& backend() const;
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
