// The stagnation stop: a search ends once a number of evaluations in a row brought no
// improvement beyond the measurement's noise (docs/effort.md#the-stagnation-stop). The tuning
// loop and `ktune bench-strategies` apply this one rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ktune {

// An improvement counts once a time is below the time of the last counted improvement by more
// than this fraction, or by more than the relative spread (IQR / median) of either measurement
// where that is larger: the adaptive measurement stops at a spread of 1% (target_spread), so a
// smaller step is not told apart from noise.
inline constexpr double kStagnationNoiseFloor = 0.01;

class StagnationWatch {
 public:
  // window 0: never stagnant.
  explicit StagnationWatch(std::uint64_t window = 0) : window_(window) {}

  // One evaluation told: its time when it is ok (NaN otherwise), with its samples' spread.
  // Evaluations before the first ok one do not count: there is nothing to improve on yet.
  void tell(double time_ms, double spread = 0) {
    const bool ok = std::isfinite(time_ms) && time_ms > 0;
    if (ok && std::isnan(anchor_ms_)) {
      anchor_ms_ = time_ms;
      anchor_spread_ = spread;
      since_ = 0;
      return;
    }
    if (std::isnan(anchor_ms_)) return;
    const double noise =
        std::max({kStagnationNoiseFloor, finite_or_zero(spread), finite_or_zero(anchor_spread_)});
    if (ok && time_ms < anchor_ms_ * (1 - noise)) {
      anchor_ms_ = time_ms;
      anchor_spread_ = spread;
      since_ = 0;
    } else {
      ++since_;
    }
  }

  bool stagnant() const { return window_ > 0 && since_ >= window_; }
  std::uint64_t window() const { return window_; }
  // Evaluations since the last counted improvement.
  std::uint64_t since() const { return since_; }
  // The time of the last counted improvement (NaN before the first ok evaluation).
  double anchor_ms() const { return anchor_ms_; }

 private:
  static double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }
  std::uint64_t window_ = 0;
  std::uint64_t since_ = 0;
  double anchor_ms_ = std::numeric_limits<double>::quiet_NaN();
  double anchor_spread_ = 0;
};

}  // namespace ktune
