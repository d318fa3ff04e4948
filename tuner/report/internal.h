// Internal pieces shared by the report renderers: number and time formatting, escaping, and the
// inline-SVG plots of the HTML report (svg.cpp). Not installed, not API.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/report.h"

namespace ktune::report_detail {

// name -> value text of a trial's configuration (config_json, else parsed from config_key).
std::vector<std::pair<std::string, std::string>> config_values(const TrialRecord& t);

// A unit for a set of times, so one table column or axis uses one unit.
struct TimeUnit {
  double per_ms = 1;  // multiply milliseconds by this
  const char* name = "ms";
};
TimeUnit time_unit_for(double typical_ms);
std::string format_time(double ms, const TimeUnit& unit,
                        int significant = 4);                // "0.1523", "-" for NaN
std::string format_time_auto(double ms);                     // value with its own unit: "152.3 µs"
std::string format_number(double v, int significant = 3);    // "%g"-like, no exponent below 1e6
std::string format_duration(double seconds);                 // "4.2 s", "12 min 05 s", "2 h 03 min"
std::string format_percent(double share, int decimals = 1);  // 0.423 -> "42.3%"
std::string format_driver(int version);                      // 13000 -> "13.0"
std::string format_bytes(std::int64_t bytes);                // "80 GiB", "50 MiB"
std::string html_escape(std::string_view text);
std::string md_escape(std::string_view text);  // for table cells: | and newlines

// --- SVG plots (svg.cpp). Each returns one <svg class="plot"> element. ---

struct Series {
  std::string label;
  std::string color;
  std::vector<std::pair<double, double>> steps;   // best-so-far (x, time ms), drawn as a step line
  std::vector<std::pair<double, double>> points;  // every ok evaluation (x, time ms), faint dots
  double x_end = 0;                               // where the step line ends (last evaluation)
};

struct AxisSpec {
  std::string label;     // "evaluations", "wall time since run start"
  bool seconds = false;  // x is seconds: pick s / min / h for the ticks
  bool log = false;      // log scale (runs of very different lengths side by side)
};

std::string svg_convergence(const std::string& title, const std::vector<Series>& series,
                            const AxisSpec& x, int max_points);
// Box (quartiles, median, whiskers at min/max) and jittered strip of times per value. lo/hi: the
// time range shared by every parameter's plot, so they compare at a glance.
std::string svg_effect(const ParameterEffect& effect, double lo_ms, double hi_ms, int max_points);
std::string svg_importance(const std::vector<ParameterEffect>& effects, double explained);
std::string svg_status(const std::map<TrialStatus, std::size_t>& by_status);
// Each configuration's time against its energy per run, the Pareto set joined by a line.
std::string svg_pareto(const std::string& title, const std::vector<TrialRecord>& all,
                       const std::vector<TrialRecord>& front);
// A family (ReportFamily): the best time at each tuned size, and the selector's pick at each
// size left out against that size's best (a dashed line at 0.97); two <svg> elements.
std::string svg_family(const ReportFamily& family);
std::string status_color(TrialStatus s);
std::string series_color(std::size_t i);

}  // namespace ktune::report_detail
