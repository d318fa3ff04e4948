// Names of TrialStatus values, the one place they are spelled.
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

}  // namespace ktune
