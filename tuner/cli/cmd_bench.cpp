// `ktune bench-strategies`: runs search strategies many times on recorded spaces and reports how
// close each gets to the optimum per budget and its score against calculated random search
// (docs/replay.md#comparing-strategies-ktune-bench-strategies).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "ktune/bench_strategies.h"
#include "ktune/error.h"
#include "ktune/transfer.h"

namespace ktune::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

po::options_description bench_options() {
  po::options_description opts;
  po::options_description own("Benchmark");
  own.add_options()(
      "strategies", po::value<std::string>()->required()->value_name("NAMES"),
      "comma-separated strategy names, or 'all' (ktune bench-strategies --help lists them)")(
      "replay",
      po::value<std::vector<std::string>>()->multitoken()->composing()->value_name("FILE..."),
      "recordings to run on: Kernel Tuner caches or ktune databases (repeatable, or several after "
      "one --replay)")("seeds", po::value<Unsigned>()->default_value(Unsigned{50})->value_name("N"),
                       "runs per strategy and space, seeds 1, 2, ...")(
      "first-seed", po::value<Unsigned>()->default_value(Unsigned{1})->value_name("N"),
      "seed of the first run")(
      "budgets",
      po::value<std::string>()->default_value("25,50,100,200,400")->value_name("N,N,..."),
      "evaluation budgets the fraction of the optimum is reported at")(
      "stagnation", po::value<std::string>()->value_name("N,N,..."),
      "also score each run as the stagnation stop would have ended it: after N evaluations "
      "without an improvement beyond the noise (the stagnation stop of ktune tune), at each "
      "budget")("strategy-option",
                po::value<std::vector<std::string>>()->composing()->value_name("NAME=VALUE"),
                "option NAME=VALUE given to every strategy (repeatable)")(
      "cutoff", po::value<double>()->default_value(0.96, "0.96")->value_name("X"),
      "score up to the budget where random search is expected to come this far from the median to "
      "the optimum")("batch", po::value<Unsigned>()->default_value(Unsigned{1})->value_name("N"),
                     "configurations asked for at a time")(
      "output,o", po::value<std::string>()->value_name("FILE"),
      "also write the results as JSON to FILE")(
      "objective", po::value<std::string>()->default_value("time")->value_name("NAME"),
      "time | energy | edp: what the strategies minimise, from the recordings' times or their "
      "recorded energies (Kernel Tuner's nvml_energy)")(
      "transfer", po::value<std::size_t>()->implicit_value(kTransferTopK)->value_name("K"),
      "leave one GPU out: open each run with K evaluations of the transfer from the other "
      "recordings of its kernel, then the strategy (K as `tune --warm-start` takes it when not "
      "given)");
  opts.add(own).add(plugin_options()).add(output_options());
  return opts;
}

// A list of positive integers, as --budgets and --stagnation take them.
std::vector<std::uint64_t> read_counts_list(const std::string& text, const char* option) {
  std::vector<std::uint64_t> out;
  for (const auto& b : split_list(text)) {
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(b, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != b.size() || v == 0 || b[0] == '-')
      throw Error(ErrorKind::kUsage,
                  fmt::format("--{}: '{}' is not a positive integer", option, b));
    out.push_back(v);
  }
  return out;
}

// --seeds, --first-seed, --batch and --cutoff, range-checked: a run count that wrapped around
// (-1) would never end.
void read_counts(const po::variables_map& vm, BenchOptions& options) {
  constexpr std::uint64_t kMaxSeeds = 1'000'000, kMaxBatch = 1'000'000;
  options.seeds = vm["seeds"].as<Unsigned>().value;
  if (options.seeds == 0 || options.seeds > kMaxSeeds)
    throw Error(ErrorKind::kUsage,
                fmt::format("--seeds {}: expected 1 to {} runs", options.seeds, kMaxSeeds));
  options.first_seed = vm["first-seed"].as<Unsigned>().value;
  const std::uint64_t batch = vm["batch"].as<Unsigned>().value;
  if (batch == 0 || batch > kMaxBatch)
    throw Error(ErrorKind::kUsage,
                fmt::format("--batch {}: expected 1 to {} configurations", batch, kMaxBatch));
  options.batch = static_cast<std::size_t>(batch);
  options.cutoff = vm["cutoff"].as<double>();
  if (!(options.cutoff > 0 && options.cutoff <= 1))
    throw Error(ErrorKind::kUsage,
                fmt::format("--cutoff {}: expected a fraction above 0, at most 1", options.cutoff));
}

BenchOptions read_bench_options(const po::variables_map& vm, bool quiet) {
  BenchOptions options;
  options.strategies = vm["strategies"].as<std::string>() == "all"
                           ? strategy_names()
                           : split_list(vm["strategies"].as<std::string>());
  if (options.strategies.empty())
    throw Error(ErrorKind::kUsage, "bench-strategies: --strategies names none");
  for (const auto& name : options.strategies) (void)make_strategy(name);
  options.budgets = read_counts_list(vm["budgets"].as<std::string>(), "budgets");
  if (vm.count("stagnation"))
    options.stagnation = read_counts_list(vm["stagnation"].as<std::string>(), "stagnation");
  if (const std::string o = vm["objective"].as<std::string>();
      o != "time" && o != "energy" && o != "edp")
    throw Error(ErrorKind::kUsage,
                fmt::format("--objective '{}': expected time, energy or edp", o));
  read_counts(vm, options);
  if (vm.count("strategy-option"))
    options.strategy_options =
        parse_assignments(vm["strategy-option"].as<std::vector<std::string>>(), "strategy-option");
  if (!quiet && !json_output(vm))
    options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  return options;
}

std::string space_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".gz", ".json", ".db"})
    if (name.size() > std::strlen(ext) &&
        name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0)
      name.resize(name.size() - std::strlen(ext));
  return name;
}

// The recordings as spaces, each named by its file name without the extensions, and as
// transfer sources (same order). A recording that cannot be read or made a space is reported
// and left out (`failed`).
struct Spaces {
  std::vector<BenchSpace> spaces;
  std::vector<TransferSource> sources;
  std::vector<SpaceFailure> failed;
};

// "error: SPACE: ERROR (space left out)", printed even with -q (only errors).
void report_failure(const SpaceFailure& f) {
  std::cerr << fmt::format("error: {}: {} (space left out)\n", f.space, f.error);
}

Spaces read_spaces(const po::variables_map& vm, bool quiet) {
  auto registry = make_registry(vm);
  Spaces out;
  for (const auto& path : vm["replay"].as<std::vector<std::string>>()) {
    try {
      const Recording recording = read_recording(path);
      BenchSpace space = bench_space_from_recording(recording, registry.get(), space_name(path),
                                                    vm["objective"].as<std::string>());
      TransferSource source = transfer_source(recording);
      out.spaces.push_back(std::move(space));
      out.sources.push_back(std::move(source));
    } catch (const std::exception& e) {
      // One bad recording must not cost the benchmark of the others.
      out.failed.push_back({space_name(path), e.what()});
      report_failure(out.failed.back());
      continue;
    }
    if (!quiet && !json_output(vm))
      for (const auto& n : out.spaces.back().notes)
        std::cerr << (n.rfind("warning: ", 0) == 0 ? "" : "note: ") << n << "\n";
  }
  return out;
}

// Leave one GPU out: each space's runs open with a transfer from the other recordings of its
// kernel (TransferSearch, k evaluations), and the space is named after them; a space whose
// kernel has no other recording is left out.
std::vector<BenchSpace> transfer_spaces(Spaces in, std::size_t k, bool verbose) {
  std::vector<BenchSpace> out;
  // Kernels and names first: each space is moved out below.
  std::vector<std::string> kernels, spaces;
  for (const BenchSpace& s : in.spaces) {
    kernels.push_back(s.kernel);
    spaces.push_back(s.name);
  }
  for (std::size_t t = 0; t < in.spaces.size(); ++t) {
    std::vector<TransferSource> from;
    std::vector<std::string> names;
    for (std::size_t s = 0; s < in.spaces.size(); ++s)
      if (s != t && kernels[s] == kernels[t]) {
        from.push_back(in.sources[s]);
        names.push_back(spaces[s]);
      }
    BenchSpace space = std::move(in.spaces[t]);
    if (from.empty()) {
      if (verbose)
        std::cerr << fmt::format("note: {}: no other recording of {} to transfer from (left out)\n",
                                 space.name, space.kernel);
      continue;
    }
    space.name = fmt::format("{} <- {}", space.name, fmt::join(names, "+"));
    space.transfer = std::move(from);
    space.transfer_opening = k;
    out.push_back(std::move(space));
  }
  return out;
}

void write_results(const po::variables_map& vm, const BenchReport& report, bool quiet) {
  const std::string json = bench_report_json(report);
  if (vm.count("output")) {
    const std::string out = vm["output"].as<std::string>();
    std::ofstream f(out, std::ios::trunc);
    f << json << "\n";
    f.close();
    if (!f) throw Error(ErrorKind::kInput, fmt::format("{}: cannot write the JSON results", out));
  }
  if (json_output(vm))
    std::cout << json << "\n";
  else if (!quiet)
    std::cout << format_bench_report(report);
}

}  // namespace

int cmd_bench_strategies(const std::vector<std::string>& args) {
  const po::options_description opts = bench_options();
  po::positional_options_description pos;
  pos.add("replay", -1);
  po::variables_map vm;
  if (parse(args, "bench-strategies",
            "--strategies a,b,... --replay FILE... [--seeds 50] [--budgets 25,50,100,200,400] "
            "[-o FILE] [--json]",
            opts, pos, vm)) {
    std::cout << "strategies: " << fmt::format("{}", fmt::join(strategy_names(), ", ")) << "\n";
    return 0;
  }
  if (!vm.count("replay"))
    throw Error(ErrorKind::kUsage, "bench-strategies: give the recordings with --replay FILE...");
  const bool quiet = vm.count("quiet") > 0;
  const BenchOptions options = read_bench_options(vm, quiet);
  Spaces read = read_spaces(vm, quiet);
  std::vector<SpaceFailure> failed = std::move(read.failed);
  const std::size_t recordings = vm["replay"].as<std::vector<std::string>>().size();
  if (read.spaces.empty())
    throw Error(ErrorKind::kInput, "bench-strategies: none of the recordings could be read");
  const std::size_t unread = failed.size();
  std::vector<BenchSpace> spaces =
      vm.count("transfer")
          ? transfer_spaces(std::move(read), vm["transfer"].as<std::size_t>(), !quiet)
          : std::move(read.spaces);
  if (spaces.empty() && failed.size() == unread)
    throw Error(ErrorKind::kUsage,
                "bench-strategies --transfer: no kernel has two recordings to transfer between");
  if (spaces.empty())
    throw Error(ErrorKind::kInput, "bench-strategies --transfer: no space could be warm-started");
  BenchReport report = bench_strategies(spaces, options);
  for (const auto& f : report.failed) report_failure(f);
  failed.insert(failed.end(), report.failed.begin(), report.failed.end());
  report.failed = failed;
  write_results(vm, report, quiet);
  if (failed.empty()) return 0;
  if (!quiet)
    std::cerr << fmt::format("warning: {} of {} recordings left out (see the errors above)\n",
                             failed.size(), recordings);
  return 1;  // the other spaces were benchmarked; none at all is an error above
}

}  // namespace ktune::cli
