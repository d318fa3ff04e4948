// The compile pool's smallest batch: from a group's timed NVRTC programs, the size at which the
// fixed cost per program equals the configurations' own work (detail::ProgramFit).
#include <gtest/gtest.h>

#include "compile/internal.h"

namespace ktune {
namespace {

using detail::ProgramFit;

ProgramFit fit(std::initializer_list<std::pair<std::size_t, double>> programs) {
  ProgramFit f;
  for (const auto& [n, seconds] : programs) f.add(n, seconds);
  return f;
}

TEST(ProgramFit, ALightKernelKeepsThreeConfigurationsPerProgram) {
  // 63 ms per program and 21.5 ms per configuration (the kt270 reduction on the GPU host):
  // ceil(63 / 21.5) = 3.
  EXPECT_EQ(fit({{16, 0.407}, {8, 0.235}, {4, 0.149}, {12, 0.321}}).min_batch(), 3u);
}

TEST(ProgramFit, AHeavyKernelTakesSingleConfigurations) {
  // 20 ms per program, 280 ms per configuration.
  EXPECT_EQ(fit({{1, 0.300}, {2, 0.580}, {4, 1.140}}).min_batch(), 1u);
}

TEST(ProgramFit, TooLittleToGoOnMeansNoMinimum) {
  EXPECT_EQ(ProgramFit().min_batch(), 1u);
  EXPECT_EQ(fit({{16, 0.4}, {4, 0.15}}).min_batch(), 1u) << "two programs";
  EXPECT_EQ(fit({{8, 0.2}, {8, 0.3}, {8, 0.25}}).min_batch(), 1u) << "one size";
  // Times that fall with size (noise): no fixed cost to save.
  EXPECT_EQ(fit({{2, 0.3}, {8, 0.2}, {16, 0.1}}).min_batch(), 1u);
}

TEST(ProgramFit, TheMinimumIsAtMostEight) {
  EXPECT_EQ(fit({{1, 1.001}, {2, 1.002}, {4, 1.004}}).min_batch(), 8u);
}

}  // namespace
}  // namespace ktune
