// Summary statistics of timing samples: the median, minimum, mean and spread a trial reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace ktune {

struct SampleStats {
  double median = NAN;
  double min = NAN;
  double mean = NAN;
  double spread = NAN;  // interquartile range / median
};

inline double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

inline SampleStats sample_stats(std::vector<double> samples) {
  SampleStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.median = quantile_sorted(samples, 0.5);
  s.min = samples.front();
  s.mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  s.spread = s.median > 0
                 ? (quantile_sorted(samples, 0.75) - quantile_sorted(samples, 0.25)) / s.median
                 : 0.0;
  return s;
}

}  // namespace ktune
