// ktune: the command-line program. Dispatches to one command; turns errors into messages and
// exit codes (docs/cli.md).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string_view>

#include "cli.h"
#include "ktune/compiler.h"
#include "ktune/error.h"

namespace ktune::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"list", "list kernels, their parameters and problem parameters", cmd_list},
      {"space", "size of a kernel's search space, valid configurations, a sample", cmd_space},
      {"check", "check a kernel for silent mistakes: empty space, unused parameters, geometry",
       cmd_check},
      {"compile", "compile one configuration with NVRTC; print size, time and resources",
       cmd_compile},
      {"devices", "list CUDA devices", cmd_devices},
      {"tune", "tune a kernel for a problem on a GPU and store the best configuration", cmd_tune},
      {"best", "print the stored best configuration of a kernel for a problem", cmd_best},
      {"export", "write a kernel's trials from the database as a Kernel Tuner cache", cmd_export},
      {"bench-strategies", "score search strategies on recorded spaces (no GPU)",
       cmd_bench_strategies},
      {"merge", "merge results databases of several hosts into one", cmd_merge},
      {"report", "render an HTML or Markdown report of tuning runs from the database", cmd_report},
  };
  return kCommands;
}

namespace {
void print_usage(std::FILE* out) {
  std::fprintf(out,
               "ktune %s: a CUDA kernel autotuner\n\n"
               "usage: ktune COMMAND [options]     (ktune COMMAND --help for its options)\n\n"
               "commands:\n",
               KTUNE_VERSION);
  for (const auto& c : commands()) std::fprintf(out, "  %-18s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nenvironment:\n"
               "  KTUNE_PLUGIN_PATH  ':'-separated plugin libraries, manifests or directories\n"
               "  KTUNE_CACHE_DIR    compiled-kernel cache (default ~/.cache/ktune)\n");
}
}  // namespace

namespace {
// When this process started (static initialisation, before main): `tune --trace` shows what
// came before the run.
const std::chrono::steady_clock::time_point g_started = std::chrono::steady_clock::now();
}  // namespace

std::chrono::steady_clock::time_point started() { return g_started; }

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    std::fprintf(stderr, "\nerror: no command given\n");
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    if (name == "help" && argc > 2) {
      for (const auto& c : commands())
        if (c.name == std::string_view(argv[2])) return c.run({"--help"});
      std::fprintf(stderr, "error: unknown command '%s'\n", argv[2]);
      return 2;
    }
    print_usage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("ktune %s\n", KTUNE_VERSION);
    return 0;
  }
  if (name == "__worker") return cmd_worker(std::vector<std::string>(argv + 2, argv + argc));
  if (name == "__compile") return compile_worker_main();
  for (const auto& c : commands()) {
    if (c.name != name) continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return exit_code(e.kind());
    } catch (const po::error& e) {
      std::fprintf(stderr, "error: %s: %s (see ktune %s --help)\n", argv[1], e.what(), argv[1]);
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: internal: %s\n", e.what());
      return exit_code(ErrorKind::kInternal);
    }
  }
  std::fprintf(stderr, "error: unknown command '%s' (see ktune --help)\n", argv[1]);
  return 2;
}

}  // namespace ktune::cli

int main(int argc, char** argv) { return ktune::cli::main(argc, argv); }
