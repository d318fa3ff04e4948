// Tunes a kernel through the library exactly as `ktune tune` does: a ktune::Session resolves the
// job, chooses the backend (the GPU, or without one the recording ktune ships for the job),
// starts the compile processes and opens the database; its run is `ktune tune`'s loop.
//
//   tune_job KERNEL [--budget N] [--db FILE] [--replay RECORDING]
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>

#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/session.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tune_job KERNEL [--budget N] [--db FILE] [--replay RECORDING]\n";
    return 2;
  }
  ktune::SessionOptions options;
  options.overrides.kernel = argv[1];
  options.overrides.strategy = "random";
  options.overrides.budget_evaluations = 50;
  options.database = "results.db";
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--budget") == 0)
      options.overrides.budget_evaluations = std::stoull(argv[i + 1]);
    if (std::strcmp(argv[i], "--db") == 0) options.database = argv[i + 1];
    if (std::strcmp(argv[i], "--replay") == 0) options.overrides.replay = argv[i + 1];
  }
  options.overrides.command_line = "tune_job";
  options.executable = KTUNE_EXECUTABLE;  // its __worker and __compile
  options.compile_threads = 4;
  try {
    ktune::Registry registry;
    ktune::register_builtin_kernels(registry);
    ktune::Session session(registry, std::move(options));
    for (const auto& note : session.notes())
      std::cerr << (note.rfind("warning: ", 0) == 0 ? "" : "note: ") << note << "\n";
    const ktune::TuneSummary summary = session.run();
    const ktune::Backend& backend = session.backend();
    std::cout << session.instance().kernel().name << " [" << session.instance().problem_key()
              << "] on " << backend.device().name << (session.replays() ? " (replayed)" : "")
              << ": " << summary.trials << " trials, run " << summary.run_id << " "
              << ktune::to_string(summary.status) << "\n";
    if (!summary.best) return 1;
    std::cout << "best " << summary.best->config_key << " " << summary.best->time_ms << " ms\n";
    return 0;
  } catch (const ktune::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
