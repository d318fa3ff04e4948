// The device's own limits, measured in the same call as the peer table (README.md, "Ceilings"):
// the streaming-read bandwidth, the read+write (copy) bandwidth and the FP32 FMA peak.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ktune::peers {

// One limit: the best of its candidates, each the median of its round medians.
struct CeilingFigure {
  double rate = 0;   // GB/s or GFLOP/s
  std::string best;  // the candidate that reached it, e.g. "grid 1056 x block 512"
  std::vector<std::pair<std::string, double>> candidates;  // every candidate's rate
};

struct Ceilings {
  CeilingFigure read;  // GB/s read
  CeilingFigure copy;  // GB/s read + written
  CeilingFigure fma;   // GFLOP/s
};

// Measures the three limits on the current device (`sm_count` multiprocessors): `rounds` rounds
// of every candidate, `samples` timed runs each after 3 warm-up runs. Throws Error(kDevice).
Ceilings measure_ceilings(int sm_count, int rounds, int samples);

// The streaming-read bandwidth over a buffer of `bytes` (a multiple of 16), measured as the read
// ceiling is: what reading that much costs once, launch and ramp-up included, for the cases whose
// input is far smaller than the 1 GiB of the ceiling.
CeilingFigure measure_read(int sm_count, std::size_t bytes, int rounds, int samples);

nlohmann::ordered_json to_json(const Ceilings& c);

}  // namespace ktune::peers
