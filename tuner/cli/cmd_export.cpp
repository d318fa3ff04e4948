// `ktune export`: writes the trials of one kernel, problem and device from the database in
// another tool's format. Each format is one output flag in kFormats (--kt-cache FILE: Kernel
// Tuner's cache, which the replay backend reads back); a new format is a new entry there.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "ktune/client.h"
#include "ktune/error.h"
#include "ktune/replay.h"
#include "ktune/store.h"

namespace ktune::cli {

namespace {

namespace fs = std::filesystem;

struct ExportFormat {
  const char* flag;
  const char* help;
  // Writes the selection to `path` (a directory: a file of the format's canonical name in it);
  // returns the path written.
  std::string (*write)(const Recording& recording, const std::string& path);
};

std::string write_kt_cache_file(const Recording& r, const std::string& path) {
  std::string out = path;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    out = (fs::path(path) / recording_file_name(r.kernel_name, r.device_name, r.problem_key()))
              .string();
  write_kt_cache(r, out);
  return out;
}

const ExportFormat kFormats[] = {
    {"kt-cache",
     "write a Kernel Tuner cache file (gzip when FILE ends in .gz; a directory: the name a shipped "
     "recording has, <kernel>-<device>-<problem>.json.gz)",
     write_kt_cache_file},
};

po::options_description export_options() {
  po::options_description opts;
  po::options_description own("Export");
  own.add_options()("kernel", po::value<std::string>()->required()->value_name("KERNEL"),
                    "kernel name")("device-name", po::value<std::string>()->value_name("NAME"),
                                   "device name, when the database holds several devices");
  po::options_description formats("Formats (one or more)");
  for (const auto& f : kFormats)
    formats.add_options()(f.flag, po::value<std::string>()->value_name("FILE"), f.help);
  // The best configurations, for programs that want no database at run time (docs/client.md).
  po::options_description bests("Best configurations (every device and problem of the kernel)");
  bests.add_options()("header", po::value<std::string>()->value_name("FILE"),
                      "write a C++ header: the best parameters per device/arch and problem as "
                      "constexpr tables with the measured times, and a lookup()")(
      "best-json", po::value<std::string>()->value_name("FILE"),
      "write the best configurations as JSON");
  opts.add(own)
      .add(formats)
      .add(bests)
      .add(problem_options())
      .add(database_options())
      .add(plugin_options())
      .add(output_options());
  return opts;
}

// Whether an export of the best configurations holds a table for `kernel`: only bests the
// run-time client would answer with are exported (docs/client.md).
bool exports_kernel(const std::string& db, const std::string& kernel) {
  ExportOptions options;
  options.kernel = kernel;
  std::ostringstream out;
  export_json(db, out, options);
  return nlohmann::json::parse(out.str()).at("kernels").contains(kernel);
}

// --header and --best-json; with no format as well (`formats_too` false), the JSON summary.
// The database is read as the run-time client reads it; a kernel that is not registered must be
// one it holds.
void export_bests(const po::variables_map& vm, const Registry& registry, bool formats_too) {
  ExportOptions best;
  best.kernel = vm["kernel"].as<std::string>();
  const std::string db = vm["db"].as<std::string>();
  if (!registry.contains(*best.kernel)) {
    const Store store = Store::open(db, Store::Mode::kReadOnly);
    if (!stored_kernel(store, *best.kernel)) throw unknown_kernel(*best.kernel, store);
  }
  for (const char* flag : {"header", "best-json"}) {
    if (!vm.count(flag)) continue;
    const std::string path = vm[flag].as<std::string>();
    if (std::string_view(flag) == "header")
      export_header_file(db, path, best);
    else
      export_json_file(db, path, best);
    if (!json_output(vm) && !vm.count("quiet"))
      std::cout << fmt::format("wrote the best configurations of {} to {}\n", *best.kernel, path);
  }
  if (!vm.count("quiet") && !exports_kernel(db, *best.kernel))
    std::cerr << fmt::format(
        "note: {} holds no best configuration of {} that answers the run-time client (those of "
        "replayed runs never do), so the export holds none\n",
        db, *best.kernel);
  if (!formats_too && json_output(vm))
    print_json({{"kernel", *best.kernel},
                {"header", vm.count("header") ? vm["header"].as<std::string>() : ""},
                {"best_json", vm.count("best-json") ? vm["best-json"].as<std::string>() : ""}});
}

// The kernel's runs to export: a registered kernel or one the database holds (its problem
// parameters then from the stored spec), else a usage error naming the kernels it holds.
RecordingQuery recording_query(const po::variables_map& vm, const Registry& registry,
                               const Store& store) {
  RecordingQuery query;
  query.kernel = vm["kernel"].as<std::string>();
  const KernelSpec kernel = query_kernel(query.kernel, registry, store);
  if (vm.count("problem")) {
    // The names given must be the kernel's; their values select among what the database holds.
    query.problem = parse_problem(vm["problem"].as<std::vector<std::string>>());
    (void)kernel.make_problem(query.problem);
  }
  if (vm.count("device-name")) query.device = vm["device-name"].as<std::string>();
  return query;
}

void export_formats(const po::variables_map& vm, const Recording& recording) {
  nlohmann::json written = nlohmann::json::array();
  for (const auto& f : kFormats) {
    if (!vm.count(f.flag)) continue;
    const std::string path = f.write(recording, vm[f.flag].as<std::string>());
    written.push_back({{"format", f.flag}, {"path", path}});
    if (!json_output(vm) && !vm.count("quiet"))
      std::cout << fmt::format("wrote {} configurations of {} [{}] on {} ({} ok) to {}\n",
                               recording.trials.size(), recording.kernel_name,
                               recording.problem_key(), recording.device_name,
                               recording.count(TrialStatus::kOk), path);
  }
  if (json_output(vm))
    print_json({{"kernel", recording.kernel_name},
                {"problem", recording.problem_key()},
                {"device", recording.device_name},
                {"configurations", recording.trials.size()},
                {"ok", recording.count(TrialStatus::kOk)},
                {"written", written}});
}

}  // namespace

int cmd_export(const std::vector<std::string>& args) {
  const po::options_description opts = export_options();
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "export",
            "KERNEL --kt-cache FILE | --header FILE | --best-json FILE [--problem NAME=VALUE ...] "
            "[--device-name NAME] [--db DB]",
            opts, pos, vm))
    return 0;
  bool any = false;
  for (const auto& f : kFormats) any = any || vm.count(f.flag) > 0;
  const bool best_outputs = vm.count("header") || vm.count("best-json");
  if (!any && !best_outputs) {
    std::string flags;
    for (const auto& f : kFormats)
      flags += fmt::format("{}--{} FILE", flags.empty() ? "" : ", ", f.flag);
    throw Error(ErrorKind::kUsage,
                fmt::format("export: name an output ({}, --header FILE, --best-json FILE)", flags));
  }
  const auto registry = make_registry(vm);
  if (best_outputs) {
    export_bests(vm, *registry, any);
    if (!any) return 0;
  }

  const std::string db = vm["db"].as<std::string>();
  const RecordingQuery query =
      recording_query(vm, *registry, Store::open(db, Store::Mode::kReadOnly));
  export_formats(vm, read_db_recording(db, query));
  return 0;
}

}  // namespace ktune::cli
