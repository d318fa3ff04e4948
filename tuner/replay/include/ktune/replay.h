// Recorded measurements and the replay backend. A recording is every measured configuration of
// one kernel, problem and device: a Kernel Tuner cache file (.json or .json.gz, the format of
// the autotuning community's brute-forced spaces) or the trials of a ktune database. The replay
// backend answers evaluate() from a recording, so strategies, the tuning loop, reports and the
// CLI run without a GPU. docs/replay.md describes the formats and how recordings are found.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ktune/backend.h"
#include "ktune/job.h"
#include "ktune/kernel.h"
#include "ktune/registry.h"
#include "ktune/store.h"
#include "ktune/transfer.h"

namespace ktune {

// One recorded configuration.
struct RecordedTrial {
  std::vector<Value> values;  // one per Recording::params entry, in that order
  TrialStatus status = TrialStatus::kOk;
  std::string error;               // Kernel Tuner's failure string ("RuntimeFailedConfig") ...
  std::vector<double> samples_ms;  // Kernel Tuner's `times`
  // Statistics of samples_ms; time_ms (the median, ktune's statistic) is what ranks trials.
  // NaN for a failed trial.
  double time_ms = 0;
  double time_min_ms = 0;
  double time_mean_ms = 0;
  double time_spread = 0;
  double recorded_ms = 0;  // the recording's own figure: Kernel Tuner's `time` (a mean)
  bool cut = false;        // its sampling was cut early (TrialRecord::cut): "ktune_cut" in a cache
  // Energy per run (J) and mean power (W) where recorded: Kernel Tuner's NVMLObserver keys
  // "nvml_energy" and "nvml_power" in a cache; NaN where not.
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double compile_ms = 0;
  double eval_ms = 0;  // what the original run spent on this configuration, all in
};

struct Recording {
  std::string path;
  std::string format;  // "kt-cache" | "ktune-db"
  std::string kernel_name;
  std::vector<Parameter> params;  // Kernel Tuner's tune_params, in tune_params_keys order
  std::vector<ProblemParam> problem_params;  // names in order, the recorded values as defaults
  Problem problem;
  bool scalar_problem_size = false;  // Kernel Tuner's problem_size was a number, not a list
  std::string objective = "time";
  // The device it was measured on. arch is "sm_NN" when the recording says so or the name is a
  // known GPU, else empty; cc_major/cc_minor follow it (0 when unknown).
  std::string device_name;
  std::string arch;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::int64_t memory_bytes = 0;
  // ktune's identity of the kernel version, when ktune made the recording.
  std::string source_hash;
  std::string space_hash;
  std::vector<RecordedTrial> trials;
  std::vector<std::string> notes;  // things a user should hear about the file (stderr)

  // The trial of a configuration given as values in params order; nullptr when not recorded.
  const RecordedTrial* find(const std::vector<Value>& values) const;
  const RecordedTrial* optimum() const;  // the fastest ok trial; nullptr when none
  std::size_t count(TrialStatus status) const;
  // Builds the lookup index; the readers call it, and so must code that edits trials.
  void reindex();
  // "name=value,..." of the problem in problem_params order.
  std::string problem_key() const;

 private:
  std::unordered_map<std::string, std::size_t> index_;
};

// The text a value is matched by (integral doubles as integers, so 2 and 2.0 match), joined by
// ',' in order: the key of a configuration in a recording.
std::string recording_key(const std::vector<Value>& values);

// Which recording of a ktune database to read; empty fields match anything, and more than one
// match of (device, problem) is an Error(kUsage) listing them.
struct RecordingQuery {
  std::string kernel;
  std::map<std::string, std::int64_t> problem;  // entries that must equal the recorded ones
  std::string device;                           // device name
};

// Reads a Kernel Tuner cache file, gzip-compressed or not. device_name replaces the file's
// (needed when the file's is empty; without it an empty name becomes the file's stem). Throws
// Error(kInput) naming the file for a missing or unreadable file, bad gzip, bad JSON, or JSON
// that is not a Kernel Tuner cache.
Recording read_kt_cache(const std::string& path, const std::string& device_name = "");
// The same from text (already decompressed); `origin` names it in messages.
Recording parse_kt_cache(std::string_view text, const std::string& origin,
                         const std::string& device_name = "");
// Every trial of one (kernel, device, problem) of a ktune database, the latest per
// configuration. Throws Error(kUsage) when nothing or more than one identity matches.
Recording read_db_recording(const std::string& path, const RecordingQuery& query);
// Either, by the file's first bytes (an SQLite header means a ktune database).
Recording read_recording(const std::string& path, const RecordingQuery& query = {});

// Writes a recording as a Kernel Tuner cache (gzip when the path ends in ".gz"). ktune's own
// details (named problem, device, exact statuses) go to a "ktune" key and per-entry
// "ktune_status"/"ktune_error" fields that Kernel Tuner ignores, so read_kt_cache gives back
// what was written. Throws Error(kInput) when the file cannot be written.
void write_kt_cache(const Recording& recording, const std::string& path);
std::string kt_cache_text(const Recording& recording);

// Reads a file, gunzipping it when it starts with the gzip magic; Error(kInput) on failure.
std::string read_maybe_gzip(const std::string& path);
void write_maybe_gzip(const std::string& path, const std::string& text);

// A kernel known only from a recording: its parameters, its problem as problem parameters, a
// placeholder source and a no-op reference, so that it validates and spans a search space; it
// cannot be compiled. It has no restrictions: see replay_job_for().
KernelSpec kernel_from_recording(const Recording& recording);
// kernel_from_recording() with the restrictions of the kernel's shipped replay job; where the
// job does not fit the recording (it names parameters the recording lacks, say a recording of
// an older version of the kernel), the recorded configurations define the space
// (KernelSpec::listed). Says which in `notes`.
KernelSpec recorded_kernel(const Recording& recording, std::vector<std::string>& notes);

// Arch ("sm_80") of a GPU known by name, or empty.
std::string arch_from_device_name(std::string_view name);

// Where shipped data lives: $KTUNE_RECORDINGS (':'-separated) or the installed
// share/ktune/recordings next to the binary (lib/ktune/recordings in a wheel), else the source
// tree's db/recordings. Likewise the
// replay jobs (configs/replay) that hold the restrictions of known recorded spaces.
std::vector<std::filesystem::path> recording_dirs();
std::vector<std::filesystem::path> replay_job_dirs();
// The ktune program whose installed data (<prefix>/share/ktune beside <prefix>/bin/ktune) these
// look for, instead of the running executable's: for an engine inside another program, such as
// the Python package's inside python3.
void use_shipped_data_of(const std::filesystem::path& program);
// The canonical file name of a shipped recording: <kernel>-<device>-<problem key>.json.gz, the
// device name with characters other than letters, digits and ._=,+ replaced by '_'.
std::string recording_file_name(const std::string& kernel, const std::string& device,
                                const std::string& problem_key);
// A shipped recording of a kernel (for a problem key when given). Where several match (one
// kernel and problem measured on several GPUs), the one with the most configurations, which
// covers the most of today's space; on a tie the first in name order. The first directory of
// recording_dirs() with a match wins.
std::optional<std::filesystem::path> find_shipped_recording(
    const std::string& kernel, const std::optional<std::string>& problem_key);
// configs/replay/<kernel>.toml from replay_job_dirs(), if any.
std::optional<std::filesystem::path> replay_job_for(const std::string& kernel);

// The parameters a registered kernel gained after `recording` was made, each pinned to its
// default (the value that keeps the kernel as it was measured), as a job narrowing the space;
// `notes` says which.
JobFile pin_unrecorded_params(const KernelSpec& known, const Recording& recording,
                              std::vector<std::string>& notes);
// A registered kernel (its space perhaps narrowed by a job) fitted to a recording made before it
// gained a parameter: those parameters pinned as above, and the recorded ones kept to the values
// the recording holds (values added since were never measured). A recording with every
// parameter leaves the kernel as it is: configurations it lacks are answered invalid.
void fit_to_recording(KernelSpec& kernel, const Recording& recording,
                      std::vector<std::string>& notes);

// How to replay a recording on its own: the kernel of that name from the registry (may be
// null) with each parameter narrowed to its recorded values, else the synthesized kernel with
// the restrictions of `job` or of its shipped replay job; the recorded problem; and device
// limits of the recorded architecture.
struct ReplayTarget {
  KernelSpec kernel;
  Problem problem;
  DeviceLimits limits;
  std::vector<std::string> notes;  // where the restrictions came from, warnings
};
ReplayTarget replay_target(const Recording& recording, const Registry* registry,
                           const JobFile* job = nullptr);
DeviceLimits recording_limits(const Recording& recording);

// Answers from a recording. The device it reports is the recording's, with arch "replay" and
// neither multiprocessors nor memory, so replayed trials are stored under a device of their own
// and never mix with trials measured on a GPU.
class ReplayBackend final : public Backend {
 public:
  explicit ReplayBackend(std::shared_ptr<const Recording> recording);

  std::string name() const override { return "replay"; }
  bool replays() const override { return true; }
  // The recorded device, with the architecture of its recording ("sm_90"; "" where unknown).
  DeviceInfo device() const override;
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance& instance, const MeasureOptions& options) override;
  // A configuration missing from the recording is invalid, error "not in the recording". The
  // recorded status and timings are replayed; the recorded error text is not (it may describe
  // the recording itself, say a re-timing), only "replayed: recorded as <status>".
  Measurement evaluate(const Config& config, const CompileResult* compiled) override;
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates,
                                  int rounds) override;

  // Maps the space's parameters to the recording's (prepare() does it); throws Error(kInput)
  // when the recording has a parameter the space lacks or the space varies one the recording
  // lacks. The space must outlive the backend's use of it.
  void bind(const SearchSpace& space);
  const RecordedTrial* find(const Config& config) const;  // after bind()
  // Valid configurations of the bound space that the recording lacks.
  std::uint64_t missing(const SearchSpace& space);
  const Recording& recording() const { return *recording_; }
  // A simulated evaluation time: every evaluation takes this long, as a measurement would, so
  // that runs of several workers can be timed on the CPU (ktune tune --replay-delay).
  // evaluate() waits it out. With a delay, submit() and collect() behave as the GPU backend
  // does: a simulated device works through the submitted evaluations one after another, each
  // taking the delay from when the device is free, while the tuning loop stores, tells and asks
  // (pipeline depth 2); collect() waits until the oldest is done.
  void set_delay(double milliseconds) { delay_ms_ = milliseconds; }
  std::size_t pipeline_depth() const override { return delay_ms_ > 0 ? 2 : 1; }
  void submit(const Config& config, const CompileResult* compiled) override;
  Measurement collect() override;
  // The early cut-off on the recorded samples: a configuration whose first
  // MeasureOptions::kCutoffSamples recorded samples are all above `ms` is answered with those
  // alone, cut (never in a re-timing).
  void set_cutoff(double ms) override { cut_above_ms_ = ms > 0 ? ms : 0; }

 private:
  using Clock = std::chrono::steady_clock;
  // evaluate() without the delay; `recorded`: the recording has it (only those take the delay).
  Measurement look_up(const Config& config, bool& recorded, bool may_cut = true) const;

  std::shared_ptr<const Recording> recording_;
  double delay_ms_ = 0;
  double cut_above_ms_ = 0;
  Clock::time_point device_free_;  // when the simulated device finishes what it was given
  std::deque<std::pair<Clock::time_point, Measurement>> submitted_;
  const SearchSpace* space_ = nullptr;
  std::vector<std::size_t> columns_;  // space parameter index per recording parameter
};

// Kernel Tuner's name for a failed objective, what its caches and output files hold in place of
// a time ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig"); "" for ok.
const char* kernel_tuner_error(TrialStatus status);

// A recording as a source of the transfer opening (--warm-start-from, ktune/transfer.h).
TransferSource transfer_source(const Recording& recording);

}  // namespace ktune
