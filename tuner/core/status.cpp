// Names of TrialStatus and FlushL2 values, the one place they are spelled.
#include "ktune/status.h"

#include <array>

namespace ktune {
namespace {
constexpr std::array<std::string_view, kTrialStatusCount> kNames = {
    "ok",           "invalid", "compile_failed", "launch_failed", "resources_exceeded",
    "wrong_result", "timeout", "crashed",
};
}  // namespace

std::string_view to_string(TrialStatus status) {
  const int i = static_cast<int>(status);
  return (i >= 0 && i < kTrialStatusCount) ? kNames[static_cast<std::size_t>(i)] : "unknown";
}

std::optional<TrialStatus> trial_status_from_string(std::string_view name) {
  for (int i = 0; i < kTrialStatusCount; ++i) {
    if (kNames[static_cast<std::size_t>(i)] == name) return static_cast<TrialStatus>(i);
  }
  return std::nullopt;
}

std::optional<TrialStatus> trial_status_from_int(int value) {
  if (value < 0 || value >= kTrialStatusCount) return std::nullopt;
  return static_cast<TrialStatus>(value);
}

namespace {
constexpr std::array<std::string_view, 3> kFlushNames = {"auto", "always", "never"};
}  // namespace

std::string_view to_string(FlushL2 mode) {
  const auto i = static_cast<std::size_t>(mode);
  return i < kFlushNames.size() ? kFlushNames[i] : "unknown";
}

std::optional<FlushL2> flush_l2_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kFlushNames.size(); ++i)
    if (kFlushNames[i] == name) return static_cast<FlushL2>(i);
  return std::nullopt;
}

}  // namespace ktune
