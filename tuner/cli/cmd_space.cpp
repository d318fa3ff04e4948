// `ktune space`: how large a kernel's search space is, how much of it is valid, and a sample.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "cli.h"
#include "ktune/check.h"
#include "ktune/error.h"

namespace ktune::cli {

int cmd_space(const std::vector<std::string>& args) {
  po::options_description opts;
  po::options_description own("Space");
  own.add_options()("kernel", po::value<std::string>()->value_name("KERNEL"), "kernel name")(
      "config", po::value<std::string>()->value_name("JOB.toml"),
      "job file (configs/*.toml) narrowing the space")(
      "sample", po::value<Unsigned>()->default_value(Unsigned{10})->value_name("N"),
      "number of valid configurations to show")(
      "seed", po::value<Unsigned>()->default_value(Unsigned{1})->value_name("N"),
      "seed of the sample");
  opts.add(own)
      .add(problem_options())
      .add(target_options())
      .add(plugin_options())
      .add(output_options());
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "space", "KERNEL [options]", opts, pos, vm)) return 0;

  auto registry = make_registry(vm);
  const Target target = resolve_target(vm, false);
  const KernelInstance instance = job_instance(vm, *registry, target);
  const KernelSpec& kernel = instance.kernel();
  const SearchSpace& space = instance.space();

  std::vector<Config> valid;
  const EnumerationStats stats = space.for_each_valid([&](const Config& c) {
    valid.push_back(c);
    return true;
  });
  const std::uint64_t asked = vm["sample"].as<Unsigned>().value;
  if (asked > 1'000'000)
    throw Error(ErrorKind::kUsage,
                fmt::format("--sample {}: at most 1000000 configurations", asked));
  const int want = static_cast<int>(asked);
  std::vector<Config> sample;
  std::mt19937_64 rng(vm["seed"].as<Unsigned>().value);
  std::sample(valid.begin(), valid.end(), std::back_inserter(sample),
              std::min<std::size_t>(static_cast<std::size_t>(want), valid.size()), rng);

  if (json_output(vm)) {
    nlohmann::json j;
    j["kernel"] = kernel.name;
    j["problem"] = instance.problem();
    j["target"] = {{"arch", target.arch}, {"note", target.note}};
    j["cartesian"] = stats.cartesian;
    j["valid"] = stats.valid;
    j["enumeration_seconds"] = stats.seconds;
    j["space_hash"] = space.hash();
    j["restrictions"] = space.restrictions();
    j["sample"] = nlohmann::json::array();
    j["sample_launch"] = nlohmann::json::array();  // the launch geometry of each, in order
    for (const auto& c : sample) {
      j["sample"].push_back(space.to_json(c));
      j["sample_launch"].push_back(geometry_json(instance, c));
    }
    if (stats.valid == 0) j["empty_because"] = explain_empty_space(space);
    print_json(j);
    return 0;
  }
  std::cout << fmt::format("kernel      {}\nproblem     {}\ntarget      {}\n", kernel.name,
                           instance.problem_key(), target.note);
  std::cout << fmt::format(
      "cartesian   {}\nvalid       {} ({:.2f}%)\nenumerated  in {:.3f} ms ({:.2f} M "
      "candidates/s)\n",
      stats.cartesian, stats.valid,
      stats.cartesian ? 100.0 * double(stats.valid) / double(stats.cartesian) : 0.0,
      stats.seconds * 1e3, stats.seconds > 0 ? double(stats.cartesian) / stats.seconds / 1e6 : 0.0);
  std::cout << "restrictions (kernel, then device limits):\n";
  for (const auto& r : space.restrictions()) std::cout << "  " << r << "\n";
  if (!sample.empty()) {
    std::cout << fmt::format("sample of {}:\n", sample.size());
    for (const auto& c : sample)
      std::cout << "  " << space.key(c) << "\n      " << geometry_text(instance, c) << "\n";
  }
  if (stats.valid > 0) return 0;
  std::cerr << "error: " << kernel.name << ": the space is empty\n";
  for (const auto& line : explain_empty_space(space)) std::cerr << "  " << line << "\n";
  return exit_code(ErrorKind::kUsage);
}

}  // namespace ktune::cli
