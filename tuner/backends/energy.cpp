// estimate_power (ktune/backend.h): the mean power of a sustained run from NVML's readings.
// Pure, so that the rule is tested without a GPU; the CUDA worker takes the readings.
#include <algorithm>
#include <cmath>

#include "ktune/backend.h"

namespace ktune {

namespace {

constexpr double kMinCounterSpan = 1.0 / 3;  // of the run, between the first and last step

}  // namespace

PowerEstimate estimate_power(const std::vector<EnergySample>& samples, double from_ms,
                             double to_ms) {
  PowerEstimate out;
  if (!(to_ms > from_ms)) {
    out.source = "the run was too short to read its power";
    return out;
  }
  // A step of the counter is seen at the first reading after it; the steps inside the span
  // bound an interval whose energy the counter measured exactly.
  const EnergySample* first = nullptr;
  const EnergySample* last = nullptr;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const EnergySample& s = samples[i];
    if (s.t_ms < from_ms || s.t_ms > to_ms) continue;
    if (s.energy_mj < 0 || samples[i - 1].energy_mj < 0) continue;
    if (s.energy_mj == samples[i - 1].energy_mj) continue;
    if (first == nullptr) first = &s;
    last = &s;
  }
  if (first != nullptr && last != first && last->energy_mj > first->energy_mj &&
      last->t_ms - first->t_ms >= kMinCounterSpan * (to_ms - from_ms)) {
    out.watts =
        static_cast<double>(last->energy_mj - first->energy_mj) / (last->t_ms - first->t_ms);
    out.source = "counter";
    return out;
  }
  // A device with a counter: the counter's reading or none. Its power readings are no
  // substitute: on an H200 they are a one-second average that a short run barely moves (a 300 ms
  // run of reduce at 433 W read 193 W), so a run too short for the counter is run again longer.
  const bool has_counter = std::any_of(samples.begin(), samples.end(),
                                       [](const EnergySample& s) { return s.energy_mj >= 0; });
  if (has_counter) {
    out.source = "the energy counter did not step twice a third of the run apart";
    out.too_short = true;
    return out;
  }
  double sum = 0;
  int n = 0;
  for (const EnergySample& s : samples)
    if (s.t_ms >= from_ms && s.t_ms <= to_ms && s.power_mw > 0) {
      sum += s.power_mw;
      ++n;
    }
  if (n > 0) {
    out.watts = sum / n / 1000;
    out.source = "power";
    return out;
  }
  out.source = "NVML gives no energy counter or power reading for this device";
  return out;
}

}  // namespace ktune
