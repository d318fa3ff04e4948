// The early cut-off's rule (MeasureOptions::cutoff, docs/measuring.md#early-cut-off), for every
// backend alike: the GPU worker on the samples it takes, the replay backend on recorded ones.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "ktune/backend.h"

namespace ktune {

// Whether a configuration stops at its first samples (at least
// MeasureOptions::kCutoffSamples): where the fastest of its first kCutoffSamples is above
// `cut_above_ms` (0: never).
inline bool cut_off(const std::vector<double>& first, double cut_above_ms) {
  constexpr auto n = static_cast<std::size_t>(MeasureOptions::kCutoffSamples);
  return cut_above_ms > 0 && first.size() >= n &&
         *std::min_element(first.begin(), first.begin() + n) > cut_above_ms;
}

}  // namespace ktune
