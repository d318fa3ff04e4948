// GpuClockStats: a run's SM clock and temperature range from its trials' readings, and the flag
// for a clock that dropped while trials were timed.
#include <gtest/gtest.h>

#include <cmath>

#include "ktune/backend.h"
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
    EXPECT_FALSE(c.verdict().empty()) << reason;
  }
}

// A kernel held at the power cap (0x4 alone) runs at its sustained clock; that is said as such,
// where a thermal or hardware slowdown or an unexplained drop may have slowed some trials.
TEST(GpuClockStats, ThePowerCapIsTheSustainedStateNotAFault) {
  GpuClockStats cap;
  cap.add(reading(1980, 40));
  cap.add(reading(1770, 55, 0x4 | 0x1));  // idle (0x1) is no slowdown
  EXPECT_EQ(cap.verdict(), "held at the power limit under load: the kernel's sustained clock");
  GpuClockStats thermal;
  thermal.add(reading(1650, 88, 0x4 | 0x20));
  EXPECT_EQ(thermal.verdict(),
            "a thermal or hardware slowdown while timing: times may be slow, a re-run is advised");
  GpuClockStats drop;
  drop.add(reading(1980, 40));
  drop.add(reading(1700, 41));
  EXPECT_EQ(drop.verdict(), "dropped while timing: times may be slow");
  GpuClockStats steady;
  steady.add(reading(1980, 40));
  EXPECT_EQ(steady.verdict(), "");
  EXPECT_EQ(GpuClockStats{}.verdict(), "");
  // The run summary's form reads back.
  const GpuClockStats back = clocks_from_json(clocks_json(cap));
  EXPECT_EQ(back.describe(), cap.describe());
  EXPECT_EQ(back.verdict(), cap.verdict());
}

// The rule that ends a sustained load (MeasureOptions::sustain_ms): every candidate timed in two
// windows within 0.5%, the SM clock under load no more than 1% lower.
TEST(SustainSettled, TimesWithinHalfAPercentAndAClockThatStoppedFalling) {
  const double nan = std::nan("");
  // The first window has nothing before it.
  EXPECT_FALSE(sustain_settled({{nan, nan}, -1}, {{0.50, 0.60}, 1980}));
  // Memory-bound: the clock stays at its highest, the times within 0.5%.
  EXPECT_TRUE(sustain_settled({{0.0361, 0.0365}, 1980}, {{0.0362, 0.0364}, 1980}));
  // One candidate still slowing down (power limit being reached) keeps it going.
  EXPECT_FALSE(sustain_settled({{0.454, 0.470}, 1980}, {{0.456, 0.524}, 1980}));
  // The times settled but the clock is still falling (by more than 1%).
  EXPECT_FALSE(sustain_settled({{0.505, 0.510}, 1800}, {{0.506, 0.511}, 1770}));
  EXPECT_TRUE(sustain_settled({{0.505, 0.510}, 1785}, {{0.506, 0.511}, 1770}));
  // A clock that rose, or was not read, is no reason to go on.
  EXPECT_TRUE(sustain_settled({{0.505}, 1650}, {{0.503}, 1770}));
  EXPECT_TRUE(sustain_settled({{0.505}, -1}, {{0.506}, -1}));
  // A candidate that did not run in one of the windows is not compared; with none compared, the
  // load has not settled.
  EXPECT_TRUE(sustain_settled({{0.50, nan}, -1}, {{0.501, 24.3}, -1}));
  EXPECT_FALSE(sustain_settled({{nan, 24.3}, -1}, {{0.501, nan}, -1}));
  // Faster by more than 0.5% counts as a change too (a clock coming back up).
  EXPECT_FALSE(sustain_settled({{0.6845}, 1410}, {{0.6573}, 1410}));
}

}  // namespace
}  // namespace ktune
