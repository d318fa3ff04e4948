// `ktune compile`: render and compile one configuration with NVRTC, no GPU needed.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli.h"
#include "ktune/compiler.h"
#include "ktune/error.h"

namespace ktune::cli {

namespace {

po::options_description compile_command_options() {
  po::options_description opts;
  po::options_description own("Configuration");
  own.add_options()("kernel", po::value<std::string>()->required()->value_name("KERNEL"),
                    "kernel name")(
      "set,s", po::value<std::vector<std::string>>()->composing()->value_name("NAME=VALUE"),
      "parameter values, e.g. block_size=256 (repeatable or comma-separated; others default)")(
      "output,o", po::value<std::string>()->value_name("FILE"), "write the CUBIN to this file")(
      "source", "print the rendered source instead of compiling")(
      "no-cache", "compile even if the cache holds the result");
  opts.add(own)
      .add(problem_options())
      .add(target_options())
      .add(plugin_options())
      .add(output_options());
  return opts;
}

nlohmann::json compile_json(const KernelInstance& instance, const Config& config,
                            const std::string& key, const CompileResult& r) {
  const SearchSpace& space = instance.space();
  nlohmann::json j;
  j["kernel"] = instance.kernel().name;
  j["launch"] = geometry_json(instance, config);
  j["config"] = space.to_json(config);
  j["key"] = key;
  j["arch"] = r.arch;
  j["options"] = r.options;
  j["ok"] = r.ok;
  j["error"] = r.error;
  j["log"] = r.log;
  j["compile_ms"] = r.compile_ms;
  j["from_cache"] = r.from_cache;
  j["cubin_bytes"] = r.cubin.size();
  j["lowered_name"] = r.lowered_name;
  j["resources"] = {{"registers", r.resources.registers},
                    {"spill_store_bytes", r.resources.spill_store_bytes},
                    {"spill_load_bytes", r.resources.spill_load_bytes},
                    {"stack_frame_bytes", r.resources.stack_frame_bytes},
                    {"static_shared_bytes", r.resources.static_shared_bytes},
                    {"constant_bytes", r.resources.constant_bytes}};
  return j;
}

void print_compiled(const KernelInstance& instance, const Config& config, const std::string& key,
                    const std::string& arch, const CompileResult& r) {
  std::cout << fmt::format(
      "{}[{}] {}\n  entry      {}\n  options    {}\n  launch     {}\n  cubin      {} bytes\n"
      "  compile    {:.1f} ms{}\n",
      instance.kernel().name, key, arch, r.lowered_name, fmt::join(r.options, " "),
      geometry_text(instance, config), r.cubin.size(), r.compile_ms,
      r.from_cache ? " (from cache)" : "");
  const auto& res = r.resources;
  std::cout << fmt::format(
      "  resources  {} registers, {} B stack, {} B spill stores, {} B spill loads, "
      "{} B static shared\n",
      res.registers, res.stack_frame_bytes, res.spill_store_bytes, res.spill_load_bytes,
      res.static_shared_bytes);
}

void write_cubin(const std::string& path, const CompileResult& r) {
  std::ofstream out(path, std::ios::binary);
  out.write(r.cubin.data(), static_cast<std::streamsize>(r.cubin.size()));
  if (!out) throw Error(ErrorKind::kInput, fmt::format("{}: cannot write the CUBIN", path));
}

}  // namespace

int cmd_compile(const std::vector<std::string>& args) {
  const po::options_description opts = compile_command_options();
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "compile", "KERNEL [--set NAME=VALUE ...] [--arch sm_NN] [options]", opts, pos,
            vm))
    return 0;

  auto registry = make_registry(vm);
  const KernelSpec& kernel = registry->get(vm["kernel"].as<std::string>());
  const Target target = resolve_target(vm, true);
  const auto given = vm.count("problem")
                         ? parse_problem(vm["problem"].as<std::vector<std::string>>())
                         : std::map<std::string, std::int64_t>{};
  KernelInstance instance(kernel, kernel.make_problem(given), target.limits);
  const SearchSpace& space = instance.space();
  const auto sets = vm.count("set")
                        ? parse_assignments(vm["set"].as<std::vector<std::string>>(), "set")
                        : std::map<std::string, std::string>{};
  const Config config = space.from_assignments(sets);
  const std::string key = space.key(config);
  if (auto broken = space.violated(config))
    throw Error(ErrorKind::kUsage,
                fmt::format("{}[{}] {}: invalid configuration: restriction '{}' does not hold",
                            kernel.name, key, target.arch, *broken));

  const CompileRequest request = render(instance, config, target.arch);
  if (vm.count("source")) {
    std::cout << request.source;
    return 0;
  }
  std::shared_ptr<CompileCache> cache;
  if (!vm.count("no-cache")) cache = std::make_shared<CompileCache>(CompileCache::default_dir());
  const CompileResult r = compile_cached(request, cache.get());

  if (json_output(vm))
    print_json(compile_json(instance, config, key, r));
  else if (!r.ok)
    std::cerr << fmt::format("error: {}[{}] {}: compilation failed: {}\noptions: {}\n{}",
                             kernel.name, key, target.arch, r.error, fmt::join(r.options, " "),
                             r.log);
  else if (!vm.count("quiet"))
    print_compiled(instance, config, key, target.arch, r);
  if (r.ok && vm.count("output")) write_cubin(vm["output"].as<std::string>(), r);
  return r.ok ? 0 : exit_code(ErrorKind::kCompile);
}

}  // namespace ktune::cli
