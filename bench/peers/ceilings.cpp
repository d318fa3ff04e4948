// Measured ceilings (ceilings.h): the kernels of peers.cu timed with CUDA events, as the peers
// are (3 warm-up runs, medians of `samples`, `rounds` rounds), best candidate kept.
#include "ceilings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>

#include "ktune/error.h"
#include "peers.h"

namespace ktune::peers {
namespace {

struct Candidate {
  std::string name;
  std::function<std::string()> launch;
  double work = 0;  // bytes or FLOPs per launch
};

void check(const std::string& error) {
  if (!error.empty()) throw Error(ErrorKind::kDevice, error);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

double time_once(const Candidate& c, EventTimer& timer, int samples) {
  for (int w = 0; w < 3; ++w) check(c.launch());
  check(last_error());
  std::string error;
  const std::vector<double> ms = timer.time(c.launch, samples, error);
  check(error);
  return median_of(ms);
}

// Rounds over all candidates (so each sees the GPU as warm as the others); a candidate's rate
// is its work over the median of its round medians, in G units per second.
CeilingFigure best_of(const std::vector<Candidate>& candidates, int rounds, int samples) {
  EventTimer timer;
  std::vector<std::vector<double>> round_ms(candidates.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < candidates.size(); ++i)
      round_ms[i].push_back(time_once(candidates[i], timer, samples));
  CeilingFigure f;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const double rate = candidates[i].work / (median_of(round_ms[i]) * 1e6);
    f.candidates.emplace_back(candidates[i].name, rate);
    if (rate > f.rate) {
      f.rate = rate;
      f.best = candidates[i].name;
    }
  }
  return f;
}

struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes) : p(device_alloc(bytes), device_free) {
    if (!p) throw Error(ErrorKind::kDevice, fmt::format("cudaMalloc of {} bytes failed", bytes));
  }
  void* get() const { return p.get(); }
  std::shared_ptr<void> p;
};

// Grid sizes of 1, 2 and 4 waves of full occupancy for blocks of 256, 512 and 1024 threads.
template <typename Launch>
std::vector<Candidate> stream_candidates(int sm_count, double work, Launch launch) {
  std::vector<Candidate> out;
  for (int block : {256, 512, 1024}) {
    for (int waves : {1, 2, 4}) {
      const int grid = sm_count * (2048 / block) * waves;
      out.push_back({fmt::format("grid {} x block {}", grid, block),
                     [=] { return launch(grid, block); }, work});
    }
  }
  return out;
}

// The largest grid of stream_candidates and of the FMA loop, in blocks of up to 1024 threads.
std::size_t sink_bytes(int sm_count) {
  return std::size_t(sm_count) * 8 * 4 * 1024 * sizeof(float);
}

CeilingFigure read_of(const void* in, std::size_t bytes, int* sink, int sm_count, int rounds,
                      int samples) {
  return best_of(stream_candidates(sm_count, double(bytes),
                                   [=](int grid, int block) {
                                     return read_stream(in, bytes, grid, block, sink);
                                   }),
                 rounds, samples);
}

}  // namespace

CeilingFigure measure_read(int sm_count, std::size_t bytes, int rounds, int samples) {
  DeviceBuffer in(bytes), sink(sink_bytes(sm_count));
  return read_of(in.get(), bytes, static_cast<int*>(sink.get()), sm_count, rounds, samples);
}

Ceilings measure_ceilings(int sm_count, int rounds, int samples) {
  // 1 GiB each way: far past the L2, as large as the largest case's input.
  const std::size_t bytes = std::size_t{1} << 30;
  DeviceBuffer in(bytes), out(bytes), sink(sink_bytes(sm_count));
  Ceilings c;
  c.read = read_of(in.get(), bytes, static_cast<int*>(sink.get()), sm_count, rounds, samples);
  std::vector<Candidate> copies = stream_candidates(
      sm_count, 2.0 * double(bytes),
      [&](int grid, int block) { return copy_stream(out.get(), in.get(), bytes, grid, block); });
  copies.push_back({"cudaMemcpy D2D", [&] { return memcpy_d2d(out.get(), in.get(), bytes); },
                    2.0 * double(bytes)});
  c.copy = best_of(copies, rounds, samples);
  // About 1-4 ms a launch at 60 TFLOP/s: far above the launch overhead.
  const int iterations = 8192;
  std::vector<Candidate> fmas;
  for (int block : {256, 1024}) {
    for (int waves : {1, 4}) {
      const int grid = sm_count * (2048 / block) * waves;
      fmas.push_back({fmt::format("grid {} x block {}", grid, block),
                      [=, &sink] {
                        return fma_loop(static_cast<float*>(sink.get()), grid, block, iterations);
                      },
                      fma_flops(grid, block, iterations)});
    }
  }
  c.fma = best_of(fmas, rounds, samples);
  return c;
}

nlohmann::ordered_json to_json(const Ceilings& c) {
  const auto figure = [](const CeilingFigure& f, const char* unit) {
    nlohmann::ordered_json j;
    j["rate"] = f.rate;
    j["unit"] = unit;
    j["best"] = f.best;
    nlohmann::ordered_json all = nlohmann::ordered_json::object();
    for (const auto& [name, rate] : f.candidates) all[name] = rate;
    j["candidates"] = all;
    return j;
  };
  nlohmann::ordered_json j;
  j["read"] = figure(c.read, "GB/s");
  j["copy"] = figure(c.copy, "GB/s");
  j["fma_fp32"] = figure(c.fma, "GFLOP/s");
  return j;
}

}  // namespace ktune::peers
