// `ktune report`: an offline report of tuning runs from the results database, as one
// self-contained HTML page or as Markdown; `--t4 FILE` exports one run in the T4 format (to
// move under `ktune export` once that command exists).
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli.h"
#include "ktune/error.h"
#include "ktune/report.h"
#include "ktune/store.h"
#include "ktune/t4.h"

namespace ktune::cli {

namespace {

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorKind::kUsage, fmt::format("{}: cannot write", path));
  out << text;
  out.close();
  if (!out) throw Error(ErrorKind::kUsage, fmt::format("{}: write failed", path));
}

po::options_description report_command_options() {
  po::options_description opts;
  po::options_description own("Report");
  own.add_options()("kernel", po::value<std::string>()->value_name("KERNEL"),
                    "only runs of this kernel")(
      "run", po::value<std::vector<std::int64_t>>()->composing()->value_name("ID"),
      "only these runs (repeatable)")(
      "device-name", po::value<std::string>()->value_name("NAME"),
      "only runs on this device: a name (or part of one) or an arch (sm_90)")(
      "output,o", po::value<std::string>()->value_name("FILE"),
      "write the report here (default: stdout)")(
      "format", po::value<std::string>()->value_name("FORMAT"), "html (default), md or json")(
      "top", po::value<int>()->default_value(10)->value_name("N"),
      "configurations in the top table")("title", po::value<std::string>()->value_name("TEXT"),
                                         "title of the report")(
      "t4", po::value<std::string>()->value_name("FILE"),
      "also (or only) export the selected run in the T4 results format to FILE")(
      "t4-metadata", po::value<std::string>()->value_name("FILE"),
      "write the T4 metadata document of the selected run to FILE");
  opts.add(own).add(problem_options()).add(database_options()).add(output_options());
  return opts;
}

ReportSelection read_selection(const po::variables_map& vm) {
  ReportSelection sel;
  if (vm.count("kernel")) sel.kernel = vm["kernel"].as<std::string>();
  if (vm.count("run")) sel.runs = vm["run"].as<std::vector<std::int64_t>>();
  if (vm.count("device-name")) sel.device = vm["device-name"].as<std::string>();
  if (vm.count("problem"))
    sel.problem = parse_problem(vm["problem"].as<std::vector<std::string>>());
  return sel;
}

// html, md or json: --format, else --json, else by the output file's extension.
std::string report_format(const po::variables_map& vm, const std::string& output) {
  std::string format = vm.count("format") ? vm["format"].as<std::string>() : "";
  if (format.empty()) {
    const bool md = output.size() > 3 && (output.ends_with(".md") || output.ends_with(".markdown"));
    format = md ? "md" : "html";
  }
  if (format == "markdown") format = "md";
  if (json_output(vm)) {
    if (vm.count("format") && format != "json")
      throw Error(ErrorKind::kUsage, fmt::format("--json and --format {} disagree", format));
    format = "json";
  }
  if (format != "html" && format != "md" && format != "json")
    throw Error(ErrorKind::kUsage, fmt::format("--format '{}': expected html, md or json", format));
  return format;
}

// --t4 and --t4-metadata, of the one run the selection must name.
void export_t4(const po::variables_map& vm, const Store& store, const ReportSelection& sel) {
  const std::vector<std::int64_t> runs = select_runs(store, sel);
  if (runs.size() != 1) {
    std::string ids;
    for (const auto id : runs) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    throw Error(ErrorKind::kUsage,
                fmt::format("--t4 exports one run, and {} runs match ({}); pick one with --run ID",
                            runs.size(), ids));
  }
  if (vm.count("t4")) write_output(vm["t4"].as<std::string>(), t4_results(store, runs.front()));
  if (vm.count("t4-metadata"))
    write_output(vm["t4-metadata"].as<std::string>(), t4_metadata(store, runs.front()));
}

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  const po::options_description opts = report_command_options();
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  if (parse(args, "report",
            "[KERNEL] [--run ID ...] [--device-name NAME] [--problem ...] [--db DB] [-o "
            "report.html] [--format md]",
            opts, pos, vm))
    return 0;

  const ReportSelection sel = read_selection(vm);
  const std::string output = vm.count("output") ? vm["output"].as<std::string>() : "";
  const std::string format = report_format(vm, output);
  const bool t4 = vm.count("t4") || vm.count("t4-metadata");
  const bool render = !t4 || vm.count("output") || vm.count("format");
  const int top = vm["top"].as<int>();
  if (top < 0) throw Error(ErrorKind::kUsage, "--top must not be negative");

  const std::string db = vm["db"].as<std::string>();
  Store store = Store::open(db, Store::Mode::kReadOnly);

  if (t4) export_t4(vm, store, sel);
  if (!render) return 0;

  ReportOptions options;
  options.database = db;
  options.top = top;
  if (vm.count("title")) options.title = vm["title"].as<std::string>();
  options.command_line = "ktune report";
  for (const auto& a : args) options.command_line += " " + a;
  const Report report = build_report(store, sel, options);
  const bool to_stdout = output.empty() || output == "-";
  if (to_stdout && vm.count("quiet")) return 0;  // -q: only errors
  write_output(output, format == "md"     ? render_markdown(report)
                       : format == "json" ? render_json(report)
                                          : render_html(report));
  if (!to_stdout && !vm.count("quiet")) {
    std::size_t runs = 0;
    for (const auto& s : report.studies) runs += s.runs.size();
    std::cerr << fmt::format("wrote {} ({} run{}, {} trials)\n", output, runs, runs == 1 ? "" : "s",
                             report.trials);
  }
  return 0;
}

}  // namespace ktune::cli
