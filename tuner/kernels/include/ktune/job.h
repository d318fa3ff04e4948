// Tuning jobs from files (configs/*.toml): which kernel, which problem, a narrowed or widened
// search space, the strategy, budget and measurement settings, and what a command line (or any
// program) puts over them. The resolution of a job into a run is in ktune/setup.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ktune/kernel.h"
#include "ktune/problem_set.h"

namespace ktune {

struct JobFile {
  std::string path;
  std::string kernel;  // may be empty: the command line names it
  std::map<std::string, std::int64_t> problem;
  // [problem] parameters given several values, or an expression of the others, as text
  // (ktune/problem_set.h): "[262144, 1048576]", "2**18..2**28", "rows". The job is then a family.
  std::map<std::string, std::string> problem_sets;
  std::vector<std::pair<std::string, std::vector<Value>>> space;  // parameter -> its values
  std::vector<std::string> restrictions;                          // added to the kernel's
  std::optional<std::string> strategy;
  std::map<std::string, std::string> strategy_options;
  // effort = "quick" | "default" | "thorough" (ktune/effort.h; resolve_job checks the name)
  std::optional<std::string> effort;
  std::optional<std::uint64_t> budget_evaluations;
  std::optional<double> budget_seconds;
  std::optional<std::uint64_t> stagnation;  // [budget] stagnation (0: no stagnation stop)
  std::optional<double> stop_at_ceiling;    // [budget] ceiling (a fraction, above 0, at most 1)
  // [budget] family_evaluations / family_seconds: a family's tuning runs together
  // (FamilyBudget, ktune/family.h)
  std::optional<std::uint64_t> family_budget_evaluations;
  std::optional<double> family_budget_seconds;
  // [measure]
  std::optional<int> samples, warmup, max_samples;
  std::optional<double> target_spread, timeout_seconds, sustain_ms;
  std::optional<std::string> flush_l2;
  std::optional<bool> cutoff;  // the early cut-off (MeasureOptions::cutoff)
  // energy_ms (MeasureOptions::energy_ms) and objective = "time" | "energy" | "edp"
  // (ktune/objectives.h; resolve_job checks the name)
  std::optional<double> energy_ms;
  std::optional<std::string> objective;
  // [compile]: parallel compilations (1-1024; none: one per core, less one), and whether they
  // run on threads of the tuner instead of compile processes
  std::optional<unsigned> compile_threads;
  std::optional<bool> compile_in_process;
  // [compile] timeout: seconds one configuration's compilation may take (CompileTimeout; none:
  // adaptive)
  std::optional<double> compile_timeout;
  // [inputs] BUFFER = "INIT" and [expected] BUFFER = "file(PATH)"; relative paths are relative
  // to the job file's directory
  std::map<std::string, std::string> inputs, expected;
};

// What overrides a job file; an empty field leaves the job file's value (or the default).
struct JobOverrides {
  std::string kernel;
  std::map<std::string, std::int64_t> problem;          // merged over the job's
  std::map<std::string, std::string> inputs, expected;  // per buffer, over the job's (paths
                                                        // relative to the working directory)
  std::optional<std::string> strategy;                  // "auto" is the default
  std::map<std::string, std::string> strategy_options;  // merged over the job's
  std::optional<std::string> study_storage;             // Optuna strategies: study_storage option
  std::optional<std::string> effort;                    // --effort
  std::optional<std::uint64_t> budget_evaluations;
  std::optional<double> budget_seconds;
  std::optional<std::uint64_t> stagnation;  // --budget-stagnation
  std::optional<double> stop_at_ceiling;    // --stop-at-ceiling
  std::uint64_t seed = 1;
  bool reuse = true;
  bool warm_start = false;
  std::vector<std::string> warm_start_from;  // recordings of the kernel on other GPUs
  std::uint32_t part = 0, parts = 1;         // --part I/K: part = I - 1
  std::optional<int> retime_top;             // the effort level's where not given
  std::optional<int> samples, warmup, max_samples;
  std::optional<double> target_spread, timeout_seconds, sustain_ms;
  std::optional<std::string> flush_l2;
  std::optional<bool> cutoff;             // --no-cutoff: false
  std::optional<double> energy_ms;        // --energy-ms
  std::optional<std::string> objective;   // --objective
  std::optional<std::string> verify;      // "device" | "host"
  std::optional<std::string> backend;     // "cuda" | "replay"
  std::optional<std::string> replay;      // a recording: implies the replay backend
  std::string replay_device;              // names the recording's device
  std::optional<double> replay_delay_ms;  // replay: simulated evaluation time per trial
  std::string command_line;               // provenance
};

// Reads a job file; throws Error(kInput) naming the file and the field for anything malformed.
// The strategy's name is checked where the job is resolved (ktune/setup.h), which knows them.
JobFile load_job(const std::string& path);

// The job file's problem with `overrides` over it, by name. A job whose problem is a family
// (problem_sets) must be narrowed to one problem by the overrides, as `ktune tune` does for each
// problem of a family: Error(kUsage) naming the file otherwise.
Problem job_problem(const JobFile& job, const Problem& overrides = {});
// Every problem of the job file's family (one where it names single values), the overrides'
// values over it (a value, or a set's text: "--problem"'s ProblemSet).
ProblemSet job_problems(const JobFile& job);

// Replaces buffers' init (`inputs`) and expected contents (`expected`), file paths taken relative
// to `base`; throws Error(kUsage) naming `where` for a buffer the kernel does not have, and
// Error(kInput) for an init or expected text that does not parse.
void apply_inputs(KernelSpec& kernel, const std::map<std::string, std::string>& inputs,
                  const std::map<std::string, std::string>& expected, const std::string& base,
                  const std::string& where);

// The kernel with the job's value lists, extra restrictions and inputs. Throws Error(kUsage) for a
// parameter the kernel does not have. A default that is no longer among the values becomes the
// first value.
KernelSpec apply_job(const KernelSpec& kernel, const JobFile& job);

}  // namespace ktune
