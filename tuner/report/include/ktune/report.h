// Offline search reports: what a tuning session did, read back from the results database and
// drawn as one self-contained HTML page (inline SVG plots, no network) or summarised as
// Markdown. build_report() selects runs and does the analysis; the renderers only format it.
// What each section shows and how parameter importance is estimated: docs/reports.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ktune/status.h"
#include "ktune/store.h"

namespace ktune {

// Which runs a report covers. Every field narrows the selection; empty means "any".
struct ReportSelection {
  std::optional<std::string> kernel;            // kernel name
  std::vector<std::int64_t> runs;               // run ids
  std::optional<std::string> device;            // device name (case-insensitive substring) or arch
  std::map<std::string, std::int64_t> problem;  // problem values the run's problem must have
};

struct ReportOptions {
  std::string title = "ktune search report";
  std::string database;      // the database as the user named it (shown, not opened)
  std::string command_line;  // how the report was asked for (provenance)
  std::string generated_at;  // ISO 8601; empty: utc_now()
  int top = 10;              // configurations in the top table
  int failure_examples = 8;  // trials shown (with their logs) per failure reason
  int max_points = 4000;     // scatter points drawn per plot before thinning (HTML)
};

// The tuner's final interleaved re-timing of the leaders (TrialKind::kRetime), not a search
// evaluation.
bool is_retimed(const TrialRecord& trial);

// One run and its trials.
struct ReportRun {
  RunRecord run;
  DeviceRecord device;
  KernelRecord kernel;
  ProblemRecord problem;
  std::vector<TrialRecord> search;   // search evaluations, in the order they were stored
  std::vector<double> elapsed_s;     // per search trial: seconds from the run's start (NaN unknown)
  std::vector<TrialRecord> retimed;  // the final interleaved re-timing, fastest first
  double duration_s = 0;             // finished_at (else the last trial) minus started_at
  // The GPU's clocks under load (NVML) from the run's summary: the search's and the final
  // re-timing's after its sustained load, e.g. "search SM 1965-1980 MHz (max 1980), 35-53 C;
  // re-timed after 0.51 s of sustained load at SM 1770-1770 MHz ..."; "" where none were read.
  std::string clocks;
  std::map<TrialStatus, std::size_t> by_status;  // over `search`
  // Improvements of the best-so-far: (evaluation index into `search`, best time).
  std::vector<std::pair<std::size_t, double>> improvements;
  // First evaluation (1-based) whose best-so-far is within 10% / 1% of the run's final best
  // search time; 0 when the run has no ok trial.
  std::size_t evals_to_10pct = 0;
  std::size_t evals_to_1pct = 0;
  std::string label;  // "#3 random (NVIDIA H100)", the legend of its line
};

// Times observed for one value of one parameter (ok trials; distinct configurations).
struct ValueEffect {
  std::string value;
  std::size_t trials = 0;        // distinct configurations with this value, any status
  std::size_t failed = 0;        // of which not ok
  std::vector<double> times_ms;  // ok times, ascending
  double min_ms = 0, q1_ms = 0, median_ms = 0, q3_ms = 0, max_ms = 0;  // NaN without ok times
  double mean_log = 0;  // mean of ln(time) over the ok times
};

struct ParameterEffect {
  std::string name;
  std::vector<ValueEffect> values;  // in the kernel's declared order
  // Share of the variance of ln(time) explained by this parameter's per-value means (the
  // correlation ratio eta^2, a first-order fANOVA estimate), 0..1.
  double importance = 0;
  std::string best_value;  // value with the lowest median time
};

struct TopConfig {
  TrialRecord trial;                 // its latest ok search measurement
  std::size_t rank = 0;              // 1-based, by search time among distinct configurations
  std::optional<double> retimed_ms;  // its time in the final re-timing, if it was a finalist
  bool is_best = false;              // the stored best of this kernel, device and problem
};

struct FailureGroup {
  TrialStatus status = TrialStatus::kOk;
  std::string reason;  // first line of the error (or of the compile log)
  std::size_t count = 0;
  std::vector<TrialRecord> examples;  // the first few, with error and compile log
};

// The pooled analysis of one device's runs within a study.
struct DeviceAnalysis {
  DeviceRecord device;
  std::vector<std::int64_t> run_ids;
  std::vector<std::string> params;  // parameter names in declaration order
  std::size_t evaluations = 0;      // search trials over the runs
  std::size_t distinct = 0;         // distinct configurations measured
  std::size_t distinct_ok = 0;
  std::map<TrialStatus, std::size_t> by_status;  // over every search trial
  std::vector<ParameterEffect> effects;          // most important first
  // R^2 of all main effects fitted together (an additive model of ln(time), by backfitting);
  // 1 - explained is interactions between parameters and noise. Where parameters are
  // correlated (restrictions, a guided sample) the importances overlap and add up to more.
  double explained = 0;
  std::vector<TopConfig> top;
  std::vector<TrialRecord> finalists;  // re-timing of the latest run that re-timed, fastest first
  std::vector<FailureGroup> failures;  // largest first
  std::optional<TrialRecord> best;     // stored best, else the fastest ok trial
  bool best_is_stored = false;
  // Time against energy (docs/energy.md), where trials have an energy: each configuration's
  // latest trial with one (a re-timing over a search trial), and the stored Pareto set,
  // fastest first.
  std::vector<TrialRecord> with_energy;
  std::vector<TrialRecord> pareto;
  // Whether `trial` is the stored best itself (a finalist the re-timing ranked fastest need not
  // have the fastest time).
  bool is_stored_best(const TrialRecord& trial) const {
    return best_is_stored && best && best->id == trial.id;
  }
};

// The best configuration per device and how each device's best runs elsewhere: built from
// every run of the study in the database, whatever the selection, when it spans 2+ devices.
struct CrossDevice {
  std::vector<DeviceRecord> devices;
  std::vector<TrialRecord> best;  // per device
  std::vector<bool> best_is_stored;
  // time_ms[i][j]: the time of device i's best configuration on device j (latest ok trial of
  // that configuration there), if device j measured it.
  std::vector<std::vector<std::optional<double>>> time_ms;
};

// One kernel and problem: its selected runs, per-device analysis, cross-device comparison.
struct ReportStudy {
  std::string kernel_name;
  std::string problem_key;
  std::vector<ReportRun> runs;  // by run id
  std::vector<DeviceAnalysis> devices;
  std::optional<CrossDevice> cross;
  std::vector<KernelRecord> kernels;  // versions (source/space hash) among the runs
};

// A family of problems tuned on one device and its selector (ktune/selector.h): per tuned
// problem, the fastest candidate's time there and the selector's pick with that problem left
// out, and how fast the pick is there.
struct ReportFamily {
  std::string kernel_name;
  DeviceRecord device;
  SelectorRecord selector;
  struct Row {
    std::string problem_key;
    double size = 0;                  // the problem's first varying parameter (the plot's x)
    double best_ms = 0;               // the fastest candidate there (NaN: none ran)
    std::string best_key;             // its config key
    std::string held_out_key;         // the pick with this problem left out ('' below 3 problems)
    double held_out_performance = 0;  // best_ms over the pick's time there (NaN: none)
  };
  std::string size_name;  // the first parameter that varies across the family
  std::vector<Row> rows;  // by size
};

struct Report {
  ReportOptions options;
  std::string generated_at;
  std::vector<ReportStudy> studies;    // by kernel name, then problem key
  std::vector<ReportFamily> families;  // of the selected runs' kernels and devices
  std::size_t trials = 0;              // trials of the selected runs
};

// Reads the selected runs and analyses them. Throws Error(kUsage) when nothing matches,
// naming what the database does hold.
Report build_report(const Store& store, const ReportSelection& selection,
                    const ReportOptions& options = {});

std::string render_html(const Report& report);
std::string render_markdown(const Report& report);
// The analysis as JSON: per study its runs (status, evaluations, convergence) and per device the
// best, the parameters' importance, the top configurations and the failures.
std::string render_json(const Report& report);

// Run ids the selection matches, oldest first (for `--t4`, which exports one run).
std::vector<std::int64_t> select_runs(const Store& store, const ReportSelection& selection);

// Seconds since the Unix epoch of an ISO 8601 UTC time ("2026-11-22T10:00:00.123Z").
std::optional<double> parse_utc(const std::string& iso);

}  // namespace ktune
