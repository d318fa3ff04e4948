// Tunes a kernel through the library exactly as `ktune tune` does: the same job resolution
// (resolve_job, set_up_tuning: the GPU, or without one the recording ktune ships for the job),
// the same loop, the same database.
//
//   tune_job KERNEL [--budget N] [--db FILE] [--replay RECORDING]
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/setup.h"
#include "ktune/store.h"
#include "ktune/tuner.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tune_job KERNEL [--budget N] [--db FILE] [--replay RECORDING]\n";
    return 2;
  }
  ktune::JobOverrides overrides;
  overrides.kernel = argv[1];
  overrides.strategy = "random";
  overrides.budget_evaluations = 50;
  std::string db = "results.db";
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--budget") == 0)
      overrides.budget_evaluations = std::stoull(argv[i + 1]);
    if (std::strcmp(argv[i], "--db") == 0) db = argv[i + 1];
    if (std::strcmp(argv[i], "--replay") == 0) overrides.replay = argv[i + 1];
  }
  overrides.command_line = "tune_job";
  try {
    ktune::Registry registry;
    ktune::register_builtin_kernels(registry);
    ktune::CudaBackend::Options cuda;
    cuda.worker_command = {KTUNE_EXECUTABLE, "__worker"};
    ktune::TuningSetup s =
        ktune::set_up_tuning(ktune::resolve_job(registry, ktune::JobFile{}, overrides), cuda);
    for (const auto& note : s.job.notes) std::cerr << "note: " << note << "\n";
    if (!s.job.replay_reason.empty()) std::cerr << "note: " << s.job.replay_reason << "\n";
    std::unique_ptr<ktune::CompilePool> pool;
    if (s.backend->needs_compilation())
      pool = std::make_unique<ktune::CompilePool>(
          4, std::make_shared<ktune::CompileCache>(ktune::CompileCache::default_dir()),
          std::vector<std::string>{KTUNE_EXECUTABLE, "__compile"});
    ktune::Store store = ktune::Store::open(db);
    const ktune::TuneSummary summary =
        ktune::tune(*s.instance, *s.backend, store, *s.strategy, s.job.options, pool.get());
    std::cout << s.instance->kernel().name << " [" << s.instance->problem_key() << "] on "
              << s.backend->device().name << (s.backend->replays() ? " (replayed)" : "") << ": "
              << summary.trials << " trials, run " << summary.run_id << " "
              << ktune::to_string(summary.status) << "\n";
    if (!summary.best) return 1;
    std::cout << "best " << summary.best->config_key << " " << summary.best->time_ms << " ms\n";
    return 0;
  } catch (const ktune::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
