// Time against energy (ktune/energy.h): the Pareto set, and the policies that choose among it
// and how they are written.
#include <gtest/gtest.h>

#include <cmath>

#include "ktune/energy.h"
#include "ktune/error.h"

namespace ktune {
namespace {

TEST(Pareto, KeepsWhatNoOtherBeatsInBothFastestFirst) {
  // (time ms, energy J): 1 is dominated by 0, 4 by 3; 5 has no energy.
  const std::vector<TimeEnergy> points = {{1.0, 0.30}, {1.2, 0.31}, {0.8, 0.40},
                                          {1.5, 0.20}, {1.6, 0.25}, {0.5, NAN}};
  EXPECT_EQ(pareto_front(points), (std::vector<std::size_t>{2, 0, 3}));
  EXPECT_TRUE(pareto_front({}).empty());
  EXPECT_TRUE(pareto_front({{1.0, NAN}, {-1, 0.2}, {1.0, 0}}).empty());
  // Of two equal points one is kept.
  EXPECT_EQ(pareto_front({{1.0, 0.3}, {1.0, 0.3}}).size(), 1u);
}

TEST(EnergyPolicy, ChoosesTheFastestTheLeastEnergyOrTheLeastWithinASlowdown) {
  const std::vector<TimeEnergy> front = {{0.8, 0.40}, {1.0, 0.30}, {1.5, 0.20}};
  EXPECT_EQ(choose(front, EnergyPolicy::parse("fastest")), 0u);
  EXPECT_EQ(choose(front, EnergyPolicy::parse("least-energy")), 2u);
  EXPECT_EQ(choose(front, EnergyPolicy::parse("least-energy-within=25%")), 1u);
  EXPECT_EQ(choose(front, EnergyPolicy::parse("least-energy-within=24")), 0u);
  EXPECT_EQ(choose(front, EnergyPolicy::parse("least-energy-within=100%")), 2u);
  EXPECT_FALSE(choose({{1.0, NAN}}, EnergyPolicy::parse("least-energy")));
  EXPECT_FALSE(choose({}, EnergyPolicy{}));
}

TEST(EnergyPolicy, IsWrittenAsItIsReadAndRefusesWhatItDoesNotKnow) {
  for (const char* text :
       {"fastest", "least-energy", "least-energy-within=5%", "least-energy-within=12.5%"})
    EXPECT_EQ(EnergyPolicy::parse(text).text(), text);
  EXPECT_EQ(EnergyPolicy::parse("least-energy-within=5").within, 0.05);
  for (const char* bad : {"", "slowest", "least-energy-within=", "least-energy-within=-1%",
                          "least-energy-within=5%%", "least-energy-within=x", "Fastest"}) {
    try {
      EnergyPolicy::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find("policy"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ktune
