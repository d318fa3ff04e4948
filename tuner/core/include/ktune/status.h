// The one outcome enum of ktune: every trial ends in exactly one TrialStatus. The integer values
// are stored in the results database and exported, so they never change; new statuses are
// appended. And the L2 flush mode a trial is measured with, which its run records.
#pragma once

#include <optional>
#include <string_view>

namespace ktune {

enum class TrialStatus : int {
  kOk = 0,                 // compiled, ran, verified, timed
  kInvalid = 1,            // rejected before compiling (restriction, launch geometry, device limit)
  kCompileFailed = 2,      // NVRTC rejected the rendered source
  kLaunchFailed = 3,       // the launch itself returned an error (bad geometry, argument size ...)
  kResourcesExceeded = 4,  // registers / shared memory / threads do not fit the device
  kWrongResult = 5,        // ran, but the output differs from the reference (or holds NaN/Inf)
  kTimeout = 6,            // did not finish before the watchdog fired; the worker was restarted
  kCrashed = 7,            // faulted (illegal address, trap ...); the worker was restarted
};

inline constexpr int kTrialStatusCount = 8;

// Stable lower-case names ("ok", "compile_failed" ...), used in the CLI, JSON and reports.
std::string_view to_string(TrialStatus status);
std::optional<TrialStatus> trial_status_from_string(std::string_view name);
std::optional<TrialStatus> trial_status_from_int(int value);

// A failure that says nothing about the configuration's speed; strategies treat all non-ok
// statuses as failed trials, never as fake times.
constexpr bool is_ok(TrialStatus s) { return s == TrialStatus::kOk; }

// Whether the GPU's L2 cache is flushed before each timed launch (MeasureOptions::flush_l2; a
// run's flush_l2 column).
enum class FlushL2 { kAuto, kAlways, kNever };
std::string_view to_string(FlushL2 mode);  // "auto", "always", "never"
std::optional<FlushL2> flush_l2_from_string(std::string_view name);

}  // namespace ktune
