// GpuClockStats: a run's SM clock and temperature range from its trials' readings, and the flag
// for a clock that dropped while trials were timed.
#include <gtest/gtest.h>

#include "ktune/tuner.h"

namespace ktune {
namespace {

Measurement reading(int sm, int temperature, std::uint64_t reasons = 0) {
  Measurement m;
  m.sm_clock_mhz = sm;
  m.max_sm_clock_mhz = 1980;
  m.temperature_c = temperature;
  m.clock_reasons = reasons;
  return m;
}

TEST(GpuClockStats, NoReadingsNoFlagAndNothingToSay) {
  GpuClockStats c;
  c.add(Measurement{});  // a backend without NVML
  EXPECT_EQ(c.readings, 0u);
  EXPECT_FALSE(c.dropped());
  EXPECT_EQ(c.describe(), "");
}

TEST(GpuClockStats, SteadyClocksAreNotFlagged) {
  GpuClockStats c;
  c.add(reading(1980, 35, 0x1));  // idle between trials is normal
  c.add(reading(1965, 41));
  EXPECT_EQ(c.readings, 2u);
  EXPECT_FALSE(c.dropped());
  EXPECT_EQ(c.describe(), "SM 1965-1980 MHz (max 1980), 35-41 C");
  EXPECT_EQ(clocks_json(c)["dropped"], false);
}

TEST(GpuClockStats, AClockDropOfMoreThanFivePercentIsFlagged) {
  GpuClockStats c;
  c.add(reading(1980, 40));
  c.add(reading(1800, 60));
  EXPECT_TRUE(c.dropped());
  EXPECT_EQ(clocks_json(c)["sm_min_mhz"], 1800);
}

TEST(GpuClockStats, AThermalOrPowerSlowdownIsFlaggedEvenAtFullClock) {
  for (std::uint64_t reason : {0x4u, 0x8u, 0x20u, 0x40u, 0x80u}) {
    GpuClockStats c;
    c.add(reading(1980, 80, reason));
    EXPECT_TRUE(c.dropped()) << reason;
    EXPECT_NE(c.describe().find("slowdown reasons"), std::string::npos);
  }
}

}  // namespace
}  // namespace ktune
