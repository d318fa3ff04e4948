// `ktune space`: how large a kernel's search space is, how much of it is valid, and a sample.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "cli.h"
#include "ktune/check.h"
#include "ktune/error.h"

namespace ktune::cli {

namespace {

// `ktune space`'s options.
po::options_description space_options() {
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
  return opts;
}

// The space enumerated: its counts (up to kValidCountLimit valid configurations), and a seeded
// sample of --sample valid configurations among those counted.
struct Enumerated {
  EnumerationStats stats;
  bool counted_all = true;
  std::vector<Config> sample;
};

Enumerated enumerate(const SearchSpace& space, const po::variables_map& vm) {
  Enumerated out;
  const std::uint64_t asked = vm["sample"].as<Unsigned>().value;
  if (asked > 1'000'000)
    throw Error(ErrorKind::kUsage,
                fmt::format("--sample {}: at most 1000000 configurations", asked));
  // Reservoir sampling: memory for the sample, not the space.
  std::mt19937_64 rng(vm["seed"].as<Unsigned>().value);
  std::uint64_t seen = 0;
  out.stats = space.for_each_valid([&](const Config& c) {
    ++seen;
    if (out.sample.size() < asked) {
      out.sample.push_back(c);
    } else if (asked > 0) {
      const std::uint64_t slot = std::uniform_int_distribution<std::uint64_t>(0, seen - 1)(rng);
      if (slot < asked) out.sample[slot] = c;
    }
    if (seen < kValidCountLimit) return true;
    out.counted_all = false;
    return false;
  });
  std::sort(out.sample.begin(), out.sample.end());  // in the space's order
  return out;
}

void print_space_json(const KernelInstance& instance, const Target& target, const Enumerated& e) {
  const SearchSpace& space = instance.space();
  const EnumerationStats& stats = e.stats;
  nlohmann::json j;
  j["kernel"] = instance.kernel().name;
  j["problem"] = instance.problem();
  j["target"] = {{"arch", target.arch}, {"note", target.note}};
  j["cartesian"] = stats.cartesian;
  j["valid"] = stats.valid;
  j["valid_counted_all"] = e.counted_all;  // false: valid is a lower bound
  j["enumeration_seconds"] = stats.seconds;
  j["space_hash"] = space.hash();
  j["restrictions"] = space.restrictions();
  j["sample"] = nlohmann::json::array();
  j["sample_launch"] = nlohmann::json::array();  // the launch geometry of each, in order
  for (const auto& c : e.sample) {
    j["sample"].push_back(space.to_json(c));
    j["sample_launch"].push_back(geometry_json(instance, c));
  }
  if (stats.valid == 0) j["empty_because"] = explain_empty_space(space);
  print_json(j);
}

void print_space_text(const KernelInstance& instance, const Target& target, const Enumerated& e) {
  const SearchSpace& space = instance.space();
  const EnumerationStats& stats = e.stats;
  std::cout << fmt::format("kernel      {}\nproblem     {}\ntarget      {}\n",
                           instance.kernel().name, instance.problem_key(), target.note);
  if (e.counted_all)
    std::cout << fmt::format(
        "cartesian   {}\nvalid       {} ({:.2f}%)\nenumerated  in {:.3f} ms ({:.2f} M "
        "candidates/s)\n",
        stats.cartesian, stats.valid,
        stats.cartesian ? 100.0 * double(stats.valid) / double(stats.cartesian) : 0.0,
        stats.seconds * 1e3,
        stats.seconds > 0 ? double(stats.cartesian) / stats.seconds / 1e6 : 0.0);
  else
    std::cout << fmt::format(
        "cartesian   {}\nvalid       at least {} (counting stops there; the sample is of those)\n"
        "enumerated  in {:.3f} ms\n",
        stats.cartesian, stats.valid, stats.seconds * 1e3);
  std::cout << "restrictions (kernel, then device limits):\n";
  for (const auto& r : space.restrictions()) std::cout << "  " << r << "\n";
  if (!e.sample.empty()) {
    std::cout << fmt::format("sample of {}:\n", e.sample.size());
    for (const auto& c : e.sample)
      std::cout << "  " << space.key(c) << "\n      " << geometry_text(instance, c) << "\n";
  }
}

}  // namespace

int cmd_space(const std::vector<std::string>& args) {
  const po::options_description opts = space_options();
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "space", "KERNEL [options]", opts, pos, vm)) return 0;

  auto registry = make_registry(vm);
  const Target target = resolve_target(vm, false);
  const KernelInstance instance = job_instance(vm, *registry, target);
  const Enumerated enumerated = enumerate(instance.space(), vm);
  if (json_output(vm)) {
    print_space_json(instance, target, enumerated);
    return 0;
  }
  print_space_text(instance, target, enumerated);
  if (enumerated.stats.valid > 0) return 0;
  // The text output says why an empty space is empty, and fails.
  std::cerr << "error: " << instance.kernel().name << ": the space is empty\n";
  for (const auto& line : explain_empty_space(instance.space())) std::cerr << "  " << line << "\n";
  return exit_code(ErrorKind::kUsage);
}

}  // namespace ktune::cli
