// The mean power of a sustained run from NVML's readings (estimate_power, ktune/backend.h): the
// rule the GPU worker applies to what it read while a configuration ran for its energy.
#include <gtest/gtest.h>

#include <cmath>

#include "ktune/backend.h"

namespace ktune {
namespace {

// Readings every millisecond of a board at 400 W whose counter steps every 100 ms.
std::vector<EnergySample> stepping_counter(double run_ms, double watts, double step_ms) {
  std::vector<EnergySample> out;
  for (double t = 0; t <= run_ms; t += 1) {
    const double stepped = std::floor(t / step_ms) * step_ms;
    out.push_back(
        {t, static_cast<long long>(1e6 + watts * stepped), static_cast<int>(watts * 1e3)});
  }
  return out;
}

TEST(EstimatePower, ReadsTheCounterBetweenItsFirstAndLastStepInTheRun) {
  const PowerEstimate p = estimate_power(stepping_counter(450, 400, 100), 30, 450);
  EXPECT_EQ(p.source, "counter");
  EXPECT_NEAR(p.watts, 400, 1e-9);
}

TEST(EstimatePower, ARunTooShortForTheCounterGivesNoneAndAsksForALongerRun) {
  // One step inside a run of 90 ms: too few for the counter. Its power readings (a one-second
  // average on an H200) are no substitute.
  PowerEstimate p = estimate_power(stepping_counter(90, 250, 100), 9, 90);
  EXPECT_TRUE(p.too_short);
  EXPECT_TRUE(std::isnan(p.watts));
  EXPECT_NE(p.source.find("did not step twice"), std::string::npos) << p.source;
  // Two steps only 20 ms apart within a run of 300 ms: less than a third of the run.
  std::vector<EnergySample> late = stepping_counter(300, 300, 1000);
  for (std::size_t i = 280; i < late.size(); ++i) late[i].energy_mj += 5;
  late[300].energy_mj += 6;
  p = estimate_power(late, 30, 300);
  EXPECT_TRUE(p.too_short);
  // The same run at twice the length holds the steps.
  p = estimate_power(stepping_counter(600, 250, 100), 60, 600);
  EXPECT_FALSE(p.too_short);
  EXPECT_NEAR(p.watts, 250, 1e-9);
}

TEST(EstimatePower, ADeviceWithoutACounterGivesItsMeanPowerReading) {
  std::vector<EnergySample> readings;
  for (int t = 0; t <= 200; ++t)
    readings.push_back({static_cast<double>(t), -1, t < 100 ? 90000 : 110000});
  const PowerEstimate p = estimate_power(readings, 0, 200);
  EXPECT_EQ(p.source, "power");
  EXPECT_FALSE(p.too_short);
  EXPECT_NEAR(p.watts, 100, 0.2);
}

TEST(EstimatePower, SaysWhyWhereNvmlGivesNothing) {
  std::vector<EnergySample> none(100);
  for (std::size_t i = 0; i < none.size(); ++i) none[i].t_ms = static_cast<double>(i);
  for (EnergySample& s : none) s.energy_mj = -1;
  const PowerEstimate p = estimate_power(none, 10, 99);
  EXPECT_TRUE(std::isnan(p.watts));
  EXPECT_NE(p.source.find("no energy counter"), std::string::npos) << p.source;
  EXPECT_TRUE(std::isnan(estimate_power({}, 5, 5).watts));
}

}  // namespace
}  // namespace ktune
