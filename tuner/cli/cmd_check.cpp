// `ktune check`: the checks of ktune/check.h on one kernel (no GPU needed): the space is not
// empty, the reference configuration is in it, geometry fits the device, input files fit their
// buffers, and every parameter changes the generated code or the launch.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "ktune/check.h"
#include "ktune/compiler.h"
#include "ktune/error.h"

namespace ktune::cli {

namespace {

po::options_description check_command_options() {
  po::options_description own("Check");
  own.add_options()("kernel", po::value<std::string>()->value_name("KERNEL"), "kernel name")(
      "config", po::value<std::string>()->value_name("JOB.toml"),
      "job file (configs/*.toml): its space, restrictions, problem and inputs are checked")(
      "no-compile", "skip compiling configurations that differ in one parameter")(
      "no-cache", "compile even if the cache holds the result");
  po::options_description opts;
  opts.add(own)
      .add(problem_options())
      .add(target_options())
      .add(plugin_options())
      .add(output_options());
  return opts;
}

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  const po::options_description opts = check_command_options();
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "check", "KERNEL [--problem NAME=VALUE ...] [--arch sm_NN] [options]", opts, pos,
            vm))
    return 0;
  auto registry = make_registry(vm);
  const Target target = resolve_target(vm, false);
  const KernelInstance instance = job_instance(vm, *registry, target);
  std::shared_ptr<CompileCache> cache;
  if (!vm.count("no-cache")) cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  CheckOptions options;
  options.arch = target.arch;
  options.compile = !vm.count("no-compile");
  options.cache = cache.get();
  const std::vector<CheckFinding> findings = check_kernel(instance, options);
  int warnings = 0, errors = 0;
  for (const auto& f : findings) {
    warnings += f.level == CheckFinding::Level::kWarning;
    errors += f.level == CheckFinding::Level::kError;
  }
  if (json_output(vm)) {
    nlohmann::json j{{"kernel", instance.kernel().name},
                     {"problem", instance.problem()},
                     {"arch", target.arch},
                     {"findings", nlohmann::json::array()}};
    for (const auto& f : findings)
      j["findings"].push_back(
          {{"level", to_string(f.level)}, {"topic", f.topic}, {"message", f.message}});
    print_json(j);
  } else {
    const bool quiet = vm.count("quiet") > 0;
    if (!quiet)
      std::cout << fmt::format("check {} [{}] {}\n", instance.kernel().name, instance.problem_key(),
                               target.note);
    for (const auto& f : findings) {
      if (quiet && f.level != CheckFinding::Level::kError) continue;
      std::cout << fmt::format("  {:<8} {:<28} {}\n", to_string(f.level), f.topic, f.message);
    }
    if (!quiet) std::cout << fmt::format("{} errors, {} warnings\n", errors, warnings);
  }
  return errors > 0 ? 1 : 0;
}

}  // namespace ktune::cli
