// The stagnation stop's rule (ktune/stagnation.h): what counts as an improvement, and when a run
// has gone long enough without one.
#include <gtest/gtest.h>

#include <cmath>

#include "ktune/stagnation.h"

namespace ktune {
namespace {

TEST(Stagnation, OnlyImprovementsBeyondTheNoiseResetTheCount) {
  StagnationWatch w(3);
  const double nan = std::nan("");
  w.tell(nan);  // nothing to improve on yet: failures before the first time do not count
  w.tell(nan);
  EXPECT_EQ(w.since(), 0u);
  EXPECT_TRUE(std::isnan(w.anchor_ms()));
  w.tell(10.0);
  EXPECT_DOUBLE_EQ(w.anchor_ms(), 10.0);
  w.tell(9.95);  // 0.5% faster: inside the noise floor of 1%
  w.tell(nan);   // a failure
  EXPECT_EQ(w.since(), 2u);
  EXPECT_FALSE(w.stagnant());
  w.tell(9.80);  // 2% below the anchor: an improvement
  EXPECT_EQ(w.since(), 0u);
  EXPECT_DOUBLE_EQ(w.anchor_ms(), 9.80);
  // Small steps add up against the anchor: 0.6% and then 1.2% below it.
  w.tell(9.74);
  EXPECT_EQ(w.since(), 1u);
  w.tell(9.68);
  EXPECT_EQ(w.since(), 0u);
  for (int i = 0; i < 3; ++i) w.tell(20.0);
  EXPECT_TRUE(w.stagnant());
}

TEST(Stagnation, ANoisyMeasurementWidensWhatCountsAsNoise) {
  StagnationWatch w(1);
  w.tell(10.0, 0.05);  // a best with a 5% spread
  w.tell(9.7, 0.0);    // 3% faster: inside that best's spread
  EXPECT_TRUE(w.stagnant());
  StagnationWatch v(1);
  v.tell(10.0);
  v.tell(9.7, 0.04);  // 3% faster, but this measurement's spread is 4%
  EXPECT_TRUE(v.stagnant());
  StagnationWatch u(1);
  u.tell(10.0, 0.02);
  u.tell(9.7, 0.02);  // 3% against a spread of 2%: an improvement
  EXPECT_FALSE(u.stagnant());
}

TEST(Stagnation, AWindowOfZeroNeverStops) {
  StagnationWatch w(0);
  w.tell(1.0);
  for (int i = 0; i < 1000; ++i) w.tell(2.0);
  EXPECT_EQ(w.since(), 1000u);
  EXPECT_FALSE(w.stagnant());
}

}  // namespace
}  // namespace ktune
