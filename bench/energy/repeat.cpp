// How repeatable a configuration's energy is (docs/energy.md#measured): one configuration of a
// built-in kernel evaluated again and again on the GPU, each evaluation with its energy run of
// each length asked for; per length, the mean power, the energy per run and its coefficient of
// variation over the repeats. A measurement, not a test: it prints, it never fails on a figure.
//
//   energy_repeat KERNEL PROBLEM [--config KEY] [--energy-ms 100,300,1000] [--repeats 5]
//
// PROBLEM: name=value[,name=value...]; KEY: a configuration key of the kernel's space (default:
// the space's default configuration). One line per length, then the run's device.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/gpu_evaluator.h"
#include "ktune/instance.h"
#include "ktune/problem.h"
#include "ktune/registry.h"

namespace {

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    out.push_back(std::stod(text.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

struct Stats {
  double mean = 0, cv = 0;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.cv = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) / s.mean : 0;
  return s;
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: energy_repeat KERNEL PROBLEM [--config KEY] [--energy-ms A,B,...] "
                 "[--repeats N]\n");
    return 2;
  }
  const std::string kernel = argv[1];
  const auto problem = ktune::parse_problem_key(argv[2]);
  if (!problem) throw ktune::Error(ktune::ErrorKind::kUsage, std::string("bad problem ") + argv[2]);
  std::string key;
  std::vector<double> lengths = {100, 300, 1000};
  int repeats = 5;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--config")
      key = argv[i + 1];
    else if (flag == "--energy-ms")
      lengths = numbers(argv[i + 1]);
    else if (flag == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else
      throw ktune::Error(ktune::ErrorKind::kUsage, "unknown option " + flag);
  }
  ktune::Registry registry;
  ktune::register_builtin_kernels(registry);
  ktune::CompileCache cache(ktune::CompileCache::default_dir());
  std::printf("%-14s %-28s %9s %9s %9s %10s %7s %s\n", "kernel", "problem", "energy_ms", "time_ms",
              "watts", "mJ/run", "cv%", "source");
  for (const double length : lengths) {
    ktune::MeasureOptions m;
    m.energy_ms = length;
    ktune::GpuEvaluator evaluator(registry.get(kernel), *problem, 0, m);
    const ktune::Config config = key.empty() ? evaluator.instance().space().default_config()
                                             : evaluator.instance().space().parse_key(key);
    const ktune::CompileResult compiled = ktune::compile_cached(
        ktune::render(evaluator.instance(), config, evaluator.device().arch), &cache);
    if (!compiled.ok) throw ktune::Error(ktune::ErrorKind::kCompile, compiled.error);
    std::vector<double> joules, watts, times;
    std::string source;
    (void)evaluator.evaluate(config, compiled);  // warm: the first energy run heats the board
    for (int r = 0; r < repeats; ++r) {
      const ktune::Measurement e = evaluator.evaluate(config, compiled);
      if (e.status != ktune::TrialStatus::kOk)
        throw ktune::Error(ktune::ErrorKind::kDevice, e.error);
      source = e.energy_source;
      if (!std::isfinite(e.energy_j)) continue;
      joules.push_back(e.energy_j * 1e3);
      watts.push_back(e.power_w);
      times.push_back(e.time_ms);
    }
    const Stats j = stats(joules), w = stats(watts), t = stats(times);
    std::printf("%-14s %-28s %9.0f %9.4f %9.1f %10.4g %7.2f %s (%zu of %d)\n", kernel.c_str(),
                argv[2], length, t.mean, w.mean, j.mean, 100 * j.cv, source.c_str(), joules.size(),
                repeats);
    std::fflush(stdout);
  }
  std::printf("device: %s\n",
              ktune::GpuEvaluator(registry.get(kernel), *problem, 0, {}).device().name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "energy_repeat: %s\n", e.what());
    return 1;
  }
}
