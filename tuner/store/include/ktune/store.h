// The results database (SQLite): devices, kernels, problems, runs, trials and the best
// configuration per (kernel, device, problem). The written contract is docs/database.md;
// in short:
//   - The schema has a version (table ktune_meta) and numbered migrations (db/migrations).
//     Opening migrates an older ktune database forward inside one transaction; a database from
//     a newer ktune, a file that is not a ktune database, or a corrupt file is refused with an
//     Error(kDatabase) and left untouched.
//   - WAL journal; every trial is committed in its own transaction, so a crash or Ctrl-C loses
//     at most the trial in flight.
//   - A trial belongs to a run; its identity for resuming is (kernel, device, problem, config
//     key): the same kernel source and space on the same device and problem.
//   - Only trials with status ok can become a best; set_best refuses any other.
//   - A configuration is claimed (claim) before it is measured, so that concurrent writers
//     never measure one twice; a claim of a process that is gone expires.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/device_identity.h"
#include "ktune/selector.h"
#include "ktune/status.h"

namespace ktune {

// Where a run stands. A run whose process is gone while its row still says running is reported
// as kInterrupted (and closed so on the next read-write open): see Store::runs.
enum class RunStatus { kRunning, kFinished, kInterrupted, kFailed };
std::string_view to_string(RunStatus status);  // "running", "finished", ...
std::optional<RunStatus> run_status_from_string(std::string_view name);

// What a trial was for. Stored as an integer; values never change, new kinds are appended.
enum class TrialKind : int {
  kSearch = 0,     // proposed by the strategy and measured (or replayed) for the search
  kRetime = 1,     // the final interleaved re-timing of the leaders
  kWarmStart = 2,  // proposed by the transfer opening (--warm-start, ktune/transfer.h)
};
std::string_view to_string(TrialKind kind);  // "search", "retime", "warm_start"
std::optional<TrialKind> trial_kind_from_int(int value);

// The process that writes a run, so a reader can tell a live run from one whose process died:
// the host, the kernel's boot id and the process's pid and start time (clock ticks since boot),
// which together never name two processes.
struct ProcessIdentity {
  std::string host;
  std::string boot_id;
  std::int64_t pid = 0;
  std::int64_t start = 0;
  static ProcessIdentity current();
  // False only when the process is known to be gone: on this host and boot, no process with this
  // pid and start time. A run written on another host (or before schema 2) counts as alive.
  bool alive() const;
  // Whether a run of this process, last heard of at `heartbeat_unix`, may still be running: on
  // this host alive(); on another host, where a pid says nothing, a heartbeat younger than
  // Store::run_silence_seconds (or none recorded, before schema 4).
  bool alive(std::int64_t heartbeat_unix) const;
};

// A device row: its identity (DeviceIdentity::same_device is the table's unique key), then what
// the last registration recorded, which does not split a device.
struct DeviceRecord : DeviceIdentity {
  std::int64_t id = 0;
  std::int64_t l2_bytes = 0;
  int driver_version = 0;     // CUDA driver API version, e.g. 13000
  std::string nvrtc_version;  // "13.0"
};

struct KernelRecord {
  std::int64_t id = 0;
  std::string name;
  std::string source_hash;
  std::string space_hash;
  std::string source;  // the template text, so a stored best can be recompiled
  std::string entry;
  std::string spec_json;  // parameters, problem, launch ... as JSON (for reports)
};

struct ProblemRecord {
  std::int64_t id = 0;
  std::string kernel_name;
  std::string key;   // canonical "n=268435456"
  std::string json;  // {"n": 268435456}
};

// What a run ranks its configurations by (schema 10): time (lower is better), or a named value
// computed from each trial (Kernel Tuner's objective over its metrics, "GFLOP/s"), stored with
// the trial (TrialRecord::objective) and by name with the run and its best.
struct Objective {
  std::string name = "time";
  bool higher_is_better = false;
  bool is_time() const { return name == "time"; }
  // "time", "GFLOP/s (higher is better)".
  std::string text() const {
    return is_time() ? name
                     : name + (higher_is_better ? " (higher is better)" : " (lower is better)");
  }
  bool operator==(const Objective&) const = default;
};

struct RunRecord {
  std::int64_t id = 0;
  std::int64_t kernel_id = 0;
  std::int64_t device_id = 0;
  std::int64_t problem_id = 0;
  std::string backend;              // the backend's name: "cuda", "replay" (tests: "fake" ...)
  bool replayed = false;            // measurements replayed from a recording, not measured here
  std::optional<FlushL2> flush_l2;  // nullopt: not recorded (runs before schema 2)
  std::string strategy;             // as asked: "auto", "brute_force", "optuna:tpe" ...
  std::string strategy_chosen;      // what "auto" chose ("bayes"); '' for a named strategy
  std::string strategy_options;     // JSON
  std::string budget;               // JSON: {"evaluations": 200, "seconds": 600}
  RunStatus status = RunStatus::kRunning;
  std::string started_at;  // ISO 8601 UTC, set by the store
  std::string finished_at;
  std::string ktune_version;
  std::string nvrtc_version;
  int driver_version = 0;
  std::string host;  // ProcessIdentity: set by begin_run from the calling process
  std::string boot_id;
  std::int64_t pid = 0;
  std::int64_t process_start = 0;
  std::int64_t heartbeat_unix = 0;  // last sign of life (Unix seconds); 0 before schema 4
  std::string command_line;
  std::uint64_t seed = 0;
  std::string summary;             // JSON written when the run finishes
  std::string objective = "time";  // Objective::name (schema 10)
  bool objective_higher_is_better = false;

  std::string strategy_text() const;
  Objective ranked_by() const {
    return {objective, objective_higher_is_better};
  }  // ktune::strategy_text of the two
};

// A run's strategy for people: "auto (bayes)" for a run of auto, else the strategy's name.
inline std::string strategy_text(const std::string& strategy, const std::string& chosen) {
  return chosen.empty() ? strategy : strategy + " (" + chosen + ")";
}
inline std::string RunRecord::strategy_text() const {
  return ktune::strategy_text(strategy, strategy_chosen);
}

// A re-timing trial ranks by the median of its ranking rounds (schema 5) where it has one, else
// by its time.
inline double retime_ranking_ms(double rank_ms, double time_ms) {
  return std::isfinite(rank_ms) ? rank_ms : time_ms;
}

struct TrialRecord {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::int64_t kernel_id = 0;
  std::int64_t device_id = 0;
  std::int64_t problem_id = 0;
  std::string config_key;   // SearchSpace::key
  std::string config_json;  // {"block_size": 256, ...}
  TrialKind kind = TrialKind::kSearch;
  TrialStatus status = TrialStatus::kOk;
  std::string error;  // short reason for a non-ok status
  // Timing in milliseconds per kernel run; NaN where not measured.
  double time_ms = 0;  // median: what trials are ranked by
  double time_min_ms = 0;
  double time_mean_ms = 0;
  double time_spread = 0;  // relative spread of the samples (IQR / median)
  int sample_count = 0;
  std::vector<double> samples_ms;
  double gbps = 0;    // NaN when the kernel declares no bytes
  double gflops = 0;  // NaN when the kernel declares no flops
  // Resources of the compiled kernel; -1 where unknown.
  int registers = -1;
  int local_bytes = -1;
  int spill_bytes = -1;
  int static_shared_bytes = -1;
  int dynamic_shared_bytes = -1;
  int max_threads_per_block = -1;
  double occupancy = -1;  // active warps / max warps per SM, 0..1
  int l2_flushed = -1;    // 1: L2 flushed before each timed run, 0: not, -1: unknown
  // A re-timing trial: the median of the rounds that ranked the finalists (time_ms is that of
  // the rounds that timed them); NaN for other trials and re-timings before schema 5.
  double rank_ms = std::numeric_limits<double>::quiet_NaN();
  // What the trial is ranked by among re-timings (the tuner's choice of a winner and merge's
  // rule alike): the ranking rounds' median where it has one, else its time.
  double ranking_ms() const { return retime_ranking_ms(rank_ms, time_ms); }
  // The early cut-off stopped its sampling (MeasureOptions::cutoff): its time is the median of
  // the samples it has, far slower than the run's best; never a best, finalist or candidate.
  bool cut = false;
  // Its value of its run's objective where that is not time (schema 10); NaN otherwise, and
  // where it has none.
  double objective = std::numeric_limits<double>::quiet_NaN();
  // The GPU right after the timed samples, read through NVML (schema 10); -1 where not read.
  int sm_clock_mhz = -1;
  int temperature_c = -1;
  // The board's mean power while the configuration ran back to back and the energy of one run
  // (power_w times time_ms), through NVML (schema 11, docs/energy.md); NaN where not
  // measured.
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  // Compilation.
  std::string arch;
  std::string compile_options;  // space-separated
  std::string compile_log;
  std::string cubin_hash;  // CompileRequest::key of the binary (see binaries)
  double compile_ms = 0;
  double eval_ms = 0;  // wall time of the evaluation (GPU side)
  std::string created_at;
};

struct BestRecord {
  std::int64_t kernel_id = 0;
  std::int64_t device_id = 0;
  std::int64_t problem_id = 0;
  std::int64_t trial_id = 0;
  std::string kernel_name;
  std::string problem_key;
  std::string updated_at;
  // The objective it was chosen by, its run's (schema 10; "time" before).
  std::string objective = "time";
  bool objective_higher_is_better = false;
  TrialRecord trial;
  DeviceRecord device;
  KernelRecord kernel;
};

// A selector as stored (ktune/selector.h): made when a family of problems of one kernel was
// tuned on one device.
struct SelectorRecord {
  std::int64_t id = 0;
  std::int64_t kernel_id = 0;
  std::int64_t device_id = 0;
  std::string kernel_name;
  bool replayed = false;  // made from replayed runs
  std::string created_at;
  Selector selector;
};

// A device's measured limits (schema 9, table ceilings): NaN for one not measured.
struct DeviceCeilings {
  double read_gbps = std::numeric_limits<double>::quiet_NaN();   // streaming read
  double copy_gbps = std::numeric_limits<double>::quiet_NaN();   // read + write
  double fma_gflops = std::numeric_limits<double>::quiet_NaN();  // FP32 FMA
  std::string measured_at;                                       // UTC; now when empty
  std::string source;                                            // what measured them
  // The bandwidth a kernel's GB/s is held against: the higher of read and copy (NaN: none).
  double bandwidth_gbps() const;
};

// What Store::merge_from copied: rows new to the database, runs whose status moved on, and the
// bests that changed. Merging the same source again reports zeros everywhere.
struct MergeReport {
  std::int64_t devices = 0;
  std::int64_t kernels = 0;
  std::int64_t problems = 0;
  std::int64_t runs = 0;          // runs new to this database
  std::int64_t runs_updated = 0;  // runs copied before that have since finished or grown
  std::int64_t trials = 0;
  std::int64_t binaries = 0;
  std::int64_t bests = 0;  // best rows set, moved to another trial or removed
  std::int64_t selectors = 0;
  std::int64_t ceilings = 0;  // devices whose ceilings were new or newer
  // What a damaged source holds that cannot be merged, not copied (and reported again by every
  // merge of it): trials whose run the source no longer has, and runs whose kernel, device or
  // problem it no longer has (their trials among skipped_trials).
  std::int64_t skipped_trials = 0;
  std::int64_t skipped_runs = 0;
};

class Store {
 public:
  enum class Mode { kReadWrite, kReadOnly };

  // Opens (and in read-write mode creates and migrates) a database. Throws Error(kDatabase)
  // for a file that is not a ktune database, a newer schema, corruption, or a locked file.
  // busy_timeout is how long any statement waits for another process's lock before it gives
  // up with Error(kDatabase) saying the database is locked.
  static Store open(const std::filesystem::path& path, Mode mode = Mode::kReadWrite,
                    std::chrono::milliseconds busy_timeout = std::chrono::seconds(5));
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  static int latest_schema_version();
  int schema_version() const;
  const std::filesystem::path& path() const;

  // Insert-or-find by identity; return the row id (and refresh provenance fields).
  std::int64_t upsert_device(const DeviceRecord& device);
  std::int64_t upsert_kernel(const KernelRecord& kernel);
  std::int64_t upsert_problem(const ProblemRecord& problem);
  // The row ids those would return, found without writing: nullopt where there is no such row.
  std::optional<std::int64_t> find_device(const DeviceRecord& device) const;
  std::optional<std::int64_t> find_problem(const std::string& kernel_name,
                                           const std::string& key) const;

  // Registers a run of the calling process: sets started_at, status running and the process
  // identity (host, boot id, pid, start time).
  std::int64_t begin_run(const RunRecord& run);
  // The run's process is alive: sets its heartbeat to now. A run closed as interrupted by a
  // reader on another host while its process was silent (stopped, or cut off from the file
  // system) is running again.
  void heartbeat(std::int64_t run_id);
  // How long a running run of another host may stay silent before readers take it for dead.
  // A tuning process beats at least every Store::heartbeat_seconds while it runs.
  static constexpr std::int64_t run_silence_seconds = 600;
  static constexpr std::int64_t heartbeat_seconds = 30;
  // Ends a run: status is kFinished, kInterrupted or kFailed (Error(kInternal) otherwise).
  void finish_run(std::int64_t run_id, RunStatus status, const std::string& summary);
  // Runs as they stand: a run whose row says running but whose process is gone
  // (ProcessIdentity::alive with the run's heartbeat) reads as kInterrupted. A read-write open also
  // writes that down.
  std::optional<RunRecord> run(std::int64_t run_id) const;
  std::vector<RunRecord> runs(std::optional<std::string> kernel_name = std::nullopt) const;

  // One transaction per trial; returns the trial id. The trial's kernel, device and problem
  // must be those of its run (Error(kInternal) otherwise); created_at is set when empty.
  std::int64_t add_trial(const TrialRecord& trial);
  std::vector<TrialRecord> trials_of_run(std::int64_t run_id) const;
  // Every trial for (kernel, device, problem) over all runs, oldest first; with `replayed`, only
  // those of runs whose replayed flag equals it.
  std::vector<TrialRecord> trials_for(std::int64_t kernel_id, std::int64_t device_id,
                                      std::int64_t problem_id,
                                      std::optional<bool> replayed = std::nullopt) const;
  // The `limit` fastest configurations of (kernel, device, problem) among runs whose `replayed`
  // flag is `replayed`, each by its latest search (or warm-start) trial, where that trial is ok
  // with a finite time and not cut (TrialRecord::cut): fastest first (ties by config key). A
  // configuration whose latest trial failed is not among them, whatever its earlier trials gave.
  // Reads only those trials, however many the database holds. With an objective other than
  // time, only the trials of runs with that objective count, ranked by their value of it (best
  // first), where it is a finite number above zero.
  std::vector<TrialRecord> leaders(std::int64_t kernel_id, std::int64_t device_id,
                                   std::int64_t problem_id, bool replayed, std::size_t limit,
                                   const Objective& objective = {}) const;
  // The latest search (or warm-start) trial of that config key for (kernel, device, problem)
  // among runs whose `replayed` flag is `replayed`, if any: what resume and duplicate answers
  // use. Re-timing trials never answer for a search, and replayed measurements never answer
  // for a run that measures (nor the other way round).
  std::optional<TrialRecord> find_trial(std::int64_t kernel_id, std::int64_t device_id,
                                        std::int64_t problem_id, const std::string& config_key,
                                        bool replayed = false) const;

  // What claim() found for a configuration.
  struct Claim {
    enum class State {
      kMeasured,  // a trial answers it: `trial`
      kClaimed,   // no trial, and this store now holds the claim: measure it
      kBusy,      // another live process (or another store) holds the claim: ask again later
    };
    State state = State::kClaimed;
    std::optional<TrialRecord> trial;
  };
  // In one write transaction: the trial find_trial would return, else the configuration's
  // claim for this store (taken over from a holder whose process is gone, or another host's
  // claim older than claim_seconds). A claim ends with the trial that answers it (add_trial) or
  // with release_claims(); concurrent processes that claim before they compile therefore never
  // measure one configuration twice.
  Claim claim(std::int64_t kernel_id, std::int64_t device_id, std::int64_t problem_id,
              const std::string& config_key, bool replayed = false);
  // Drops every claim this store holds (a run's end, finished or not).
  void release_claims();
  // How long a claim of a process on another host is honoured (its process cannot be checked).
  static constexpr std::int64_t claim_seconds = 3600;

  // Records the trial as the best of its (kernel, device, problem), chosen by `objective`
  // (recorded with it); throws Error(kInternal) unless the trial exists, has status ok and a
  // time, and (for another objective than time) a value of it.
  void set_best(std::int64_t trial_id, const Objective& objective = {});
  // Best for a kernel name and problem key on a device (exact device id), over every kernel
  // version: the one set most recently (updated_at) wins; nullopt when none.
  std::optional<BestRecord> best(const std::string& kernel_name, const std::string& problem_key,
                                 std::int64_t device_id) const;
  // Every best row, optionally for one kernel name.
  std::vector<BestRecord> bests(std::optional<std::string> kernel_name = std::nullopt) const;

  // The time-energy Pareto set of (kernel, device, problem) (schema 11): recomputed from the
  // latest trial with an energy of each configuration among runs whose replayed flag is
  // `replayed` (ok, not cut; ktune/energy.h pareto_front), replacing what was stored. Returns
  // how many configurations it holds; none where no trial has an energy (the set is then
  // left as it was).
  std::size_t update_pareto(std::int64_t kernel_id, std::int64_t device_id, std::int64_t problem_id,
                            bool replayed = false);
  // The stored Pareto set's trials among runs whose replayed flag is `replayed` (the set
  // update_pareto made for them), fastest first (empty: none, or a database before schema 11).
  std::vector<TrialRecord> pareto(std::int64_t kernel_id, std::int64_t device_id,
                                  std::int64_t problem_id, bool replayed = false) const;

  // Stores a family's selector; returns its id.
  std::int64_t add_selector(const SelectorRecord& selector);
  // The newest selector of a kernel on a device (any kernel version), nullopt where none (or
  // the database is older than schema 7). Error(kDatabase) for one that does not read.
  std::optional<SelectorRecord> selector(const std::string& kernel_name,
                                         std::int64_t device_id) const;

  // A device's ceilings, replacing what it had; Error(kUsage) for a limit not above 0.
  void set_ceilings(std::int64_t device_id, const DeviceCeilings& ceilings);
  // nullopt where none were measured (or the database predates schema 9).
  std::optional<DeviceCeilings> ceilings(std::int64_t device_id) const;
  std::vector<DeviceRecord> devices() const;
  std::optional<DeviceRecord> device(std::int64_t id) const;
  std::optional<KernelRecord> kernel(std::int64_t id) const;
  std::optional<ProblemRecord> problem(std::int64_t id) const;

  // Compiled binaries of winners, keyed by CompileRequest::key (issue: runtime client).
  void put_binary(const std::string& key, const std::string& arch, const std::string& lowered_name,
                  const std::string& cubin);
  std::optional<std::string> binary(const std::string& key) const;

  // Merges another results database into this one, in one transaction (docs/database.md,
  // "Merging databases"): devices, kernels and problems by identity, runs by their process and
  // start (host, boot id, pid, process start, started_at) with every field kept, the trials a
  // run has beyond those already merged, binaries by key; then the best of every (kernel,
  // device, problem) the source has runs of is recomputed from all trials by the merge rule.
  // Merging the same source twice changes nothing; the order of sources does not change the
  // bests. The source is checked as a read-only open would check it and is never written.
  MergeReport merge_from(const std::filesystem::path& source);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Current time as ISO 8601 UTC with milliseconds ("2026-11-22T10:00:00.123Z").
std::string utc_now();

}  // namespace ktune
