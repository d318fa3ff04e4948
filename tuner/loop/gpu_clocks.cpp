// GpuClockStats (ktune/tuner.h): the GPU's clocks over a run, from the trials' readings.
#include <fmt/format.h>

#include <algorithm>

#include "ktune/tuner.h"

namespace ktune {

namespace {

// NVML clock event reasons that slow a measurement down: software power cap (0x4), hardware
// slowdown (0x8), software thermal slowdown (0x20), hardware thermal slowdown (0x40), hardware
// power brake (0x80). Idle (0x1), application clocks (0x2) and sync boost (0x10) are not.
constexpr std::uint64_t kSlowdownReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

int lower(int have, int v) { return have < 0 ? v : std::min(have, v); }
int higher(int have, int v) { return have < 0 ? v : std::max(have, v); }

}  // namespace

void GpuClockStats::add(const Measurement& m) {
  if (m.sm_clock_mhz < 0) return;
  ++readings;
  sm_min_mhz = lower(sm_min_mhz, m.sm_clock_mhz);
  sm_max_mhz = higher(sm_max_mhz, m.sm_clock_mhz);
  if (m.max_sm_clock_mhz > 0) sm_limit_mhz = m.max_sm_clock_mhz;
  if (m.temperature_c >= 0) {
    temperature_min_c = lower(temperature_min_c, m.temperature_c);
    temperature_max_c = higher(temperature_max_c, m.temperature_c);
  }
  reasons |= m.clock_reasons;
}

bool GpuClockStats::dropped() const {
  if (readings == 0) return false;
  return sm_min_mhz < 0.95 * sm_max_mhz || (reasons & kSlowdownReasons) != 0;
}

std::string GpuClockStats::describe() const {
  if (readings == 0) return "";
  std::string out = fmt::format("SM {}-{} MHz", sm_min_mhz, sm_max_mhz);
  if (sm_limit_mhz > 0) out += fmt::format(" (max {})", sm_limit_mhz);
  if (temperature_min_c >= 0) out += fmt::format(", {}-{} C", temperature_min_c, temperature_max_c);
  if (reasons & kSlowdownReasons) out += fmt::format(", slowdown reasons 0x{:x}", reasons);
  return out;
}

std::string GpuClockStats::verdict() const {
  if (!dropped()) return "";
  constexpr std::uint64_t kPowerCap = 0x4;
  if ((reasons & kSlowdownReasons) == kPowerCap)
    return "held at the power limit under load: the kernel's sustained clock";
  if (reasons & kSlowdownReasons)
    return "a thermal or hardware slowdown while timing: times may be slow, a re-run is advised";
  return "dropped while timing: times may be slow";
}

nlohmann::json clocks_json(const GpuClockStats& c) {
  return {{"readings", c.readings},
          {"sm_min_mhz", c.sm_min_mhz},
          {"sm_max_mhz", c.sm_max_mhz},
          {"sm_limit_mhz", c.sm_limit_mhz},
          {"temperature_min_c", c.temperature_min_c},
          {"temperature_max_c", c.temperature_max_c},
          {"reasons", c.reasons},
          {"dropped", c.dropped()}};
}

nlohmann::json retime_json(const TuneSummary& s) {
  if (s.finalists.empty()) return nullptr;
  nlohmann::json j = {{"finalists", s.finalists.size()}, {"sustain_seconds", s.sustain_seconds}};
  if (s.retime_clocks.readings > 0) j["gpu_clocks"] = clocks_json(s.retime_clocks);
  return j;
}

GpuClockStats clocks_from_json(const nlohmann::json& j) {
  GpuClockStats c;
  if (!j.is_object()) return c;
  c.readings = j.value("readings", std::uint64_t{0});
  c.sm_min_mhz = j.value("sm_min_mhz", -1);
  c.sm_max_mhz = j.value("sm_max_mhz", -1);
  c.sm_limit_mhz = j.value("sm_limit_mhz", -1);
  c.temperature_min_c = j.value("temperature_min_c", -1);
  c.temperature_max_c = j.value("temperature_max_c", -1);
  c.reasons = j.value("reasons", std::uint64_t{0});
  return c;
}

}  // namespace ktune
