// `ktune merge`: results databases of several hosts (or GPUs) merged into one, which the
// run-time client reads like any other (the rule is docs/database.md, "Merging databases").
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "ktune/error.h"
#include "ktune/store.h"

namespace ktune::cli {

namespace {

nlohmann::json to_json(const std::string& source, const MergeReport& r) {
  return {{"source", source},
          {"devices", r.devices},
          {"kernels", r.kernels},
          {"problems", r.problems},
          {"runs", r.runs},
          {"runs_updated", r.runs_updated},
          {"trials", r.trials},
          {"binaries", r.binaries},
          {"bests", r.bests},
          {"selectors", r.selectors},
          {"ceilings", r.ceilings},
          {"skipped_trials", r.skipped_trials},
          {"skipped_runs", r.skipped_runs}};
}

// What a damaged source held that could not be merged, said even with --quiet.
void warn_skipped(const std::string& source, const MergeReport& r) {
  if (r.skipped_trials == 0 && r.skipped_runs == 0) return;
  std::cerr << fmt::format(
      "warning: {}: not merged: {} trial(s) whose run the source no longer holds, {} run(s) "
      "whose kernel, device or problem it no longer holds (a damaged database)\n",
      source, r.skipped_trials, r.skipped_runs);
}

std::string to_text(const std::string& source, const MergeReport& r) {
  return fmt::format(
             "{}: {} new run(s), {} updated, {} trial(s), {} binary(ies), {} best(s) changed; "
             "{} new device(s), {} kernel version(s), {} problem(s)",
             source, r.runs, r.runs_updated, r.trials, r.binaries, r.bests, r.devices, r.kernels,
             r.problems) +
         (r.selectors ? fmt::format("; {} selector(s)", r.selectors) : std::string()) +
         (r.ceilings ? fmt::format("; ceilings of {} device(s)", r.ceilings) : std::string());
}

}  // namespace

int cmd_merge(const std::vector<std::string>& args) {
  po::options_description opts;
  po::options_description own("Merge");
  own.add_options()("sources", po::value<std::vector<std::string>>()->value_name("DB"),
                    "results databases to merge (never written)")(
      "into,o", po::value<std::string>()->required()->value_name("DB"),
      "the database merged into; created when missing (also -o)");
  opts.add(own).add(output_options());
  po::positional_options_description pos;
  pos.add("sources", -1);
  po::variables_map vm;
  if (parse(args, "merge", "DB [DB ...] --into DB  (or -o DB)", opts, pos, vm)) return 0;
  if (!vm.count("sources"))
    throw Error(ErrorKind::kUsage, "merge: name at least one database to merge");
  const auto sources = vm["sources"].as<std::vector<std::string>>();
  // Every source is checked before anything is written, so a typo merges nothing.
  for (const std::string& s : sources) Store::open(s, Store::Mode::kReadOnly);
  Store into = Store::open(vm["into"].as<std::string>());
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& s : sources) {
    const MergeReport r = into.merge_from(s);
    warn_skipped(s, r);
    if (json_output(vm))
      out.push_back(to_json(s, r));
    else if (!vm.count("quiet"))
      std::cout << to_text(s, r) << "\n";
  }
  if (json_output(vm)) print_json({{"into", vm["into"].as<std::string>()}, {"merged", out}});
  return 0;
}

}  // namespace ktune::cli
