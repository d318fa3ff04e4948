// sustain_settled (ktune/backend.h): when a sustained load has reached the state it holds the
// GPU in. Shared by the CUDA worker's re-timing and bench/peers.
#include <cmath>

#include "ktune/backend.h"

namespace ktune {

bool sustain_settled(const SustainWindow& before, const SustainWindow& now) {
  bool compared = false;
  for (std::size_t i = 0; i < before.medians.size() && i < now.medians.size(); ++i) {
    const double a = before.medians[i], b = now.medians[i];
    if (!std::isfinite(a) || !std::isfinite(b) || a <= 0) continue;
    if (std::abs(b / a - 1) > 0.005) return false;
    compared = true;
  }
  if (before.sm_clock_mhz > 0 && now.sm_clock_mhz > 0 &&
      now.sm_clock_mhz < 0.99 * before.sm_clock_mhz)
    return false;
  return compared;
}

}  // namespace ktune
