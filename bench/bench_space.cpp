// Search-space enumeration and expression evaluation speed. The figure that matters is
// candidates_per_s: Cartesian-product size / enumeration time, which should stay above 1M/s on
// one core, for pruned spaces and for the worst case where only the last parameter decides.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ktune/expr.h"
#include "ktune/space.h"

namespace {

using ktune::Config;
using ktune::Parameter;
using ktune::SearchSpace;
using ktune::Value;

Parameter param(std::string name, std::vector<Value> values) {
  Parameter p;
  p.name = std::move(name);
  p.values = std::move(values);
  return p;
}

std::vector<Value> ints(std::initializer_list<int> list) {
  return std::vector<Value>(list.begin(), list.end());
}

std::vector<Value> range(int first, int last, int step) {
  std::vector<Value> out;
  for (int i = first; i <= last; i += step) out.emplace_back(i);
  return out;
}

std::vector<Value> powers_of_two(int first, int last) {
  std::vector<Value> out;
  for (int i = first; i <= last; i *= 2) out.emplace_back(i);
  return out;
}

// Kernel Tuner's GEMM example: 82944 Cartesian, 17956 valid.
SearchSpace gemm_space() {
  return SearchSpace(
      {param("MWG", ints({16, 32, 64, 128})), param("NWG", ints({16, 32, 64, 128})),
       param("KWG", ints({32})), param("MDIMC", ints({8, 16, 32})),
       param("NDIMC", ints({8, 16, 32})), param("MDIMA", ints({8, 16, 32})),
       param("NDIMB", ints({8, 16, 32})), param("KWI", ints({2})), param("VWM", ints({1, 2, 4, 8})),
       param("VWN", ints({1, 2, 4, 8})), param("STRM", ints({0})), param("STRN", ints({0})),
       param("SA", ints({0, 1})), param("SB", ints({0, 1})), param("PRECISION", ints({32}))},
      {"KWG % KWI == 0", "MWG % (MDIMC*VWM) == 0", "NWG % (NDIMC*VWN) == 0",
       "MWG % (MDIMA*VWM) == 0", "NWG % (NDIMB*VWN) == 0", "KWG % ((MDIMC*NDIMC)/MDIMA) == 0",
       "KWG % ((MDIMC*NDIMC)/NDIMB) == 0"});
}

// A reduction kernel's space, with the device limit as a constant.
SearchSpace reduction_space() {
  return SearchSpace(
      {param("block_size", powers_of_two(32, 1024)),
       param("elements_per_thread", ints({1, 2, 4, 8, 16, 32})), param("variant", range(1, 7, 1)),
       param("unroll", ints({1, 2, 4, 8})), param("maxrregcount", ints({0, 32, 64, 128})),
       param("launch_bounds", ints({0, 1, 2}))},
      {"variant >= 7 or elements_per_thread <= 2", "variant == 7 or unroll == 1",
       "block_size * elements_per_thread <= 65536", "unroll <= elements_per_thread",
       "block_size <= max_threads_per_block",
       "maxrregcount == 0 or maxrregcount * block_size <= 65536",
       "launch_bounds == 0 or block_size >= 128 * launch_bounds"},
      {{"max_threads_per_block", Value(1024)}});
}

std::vector<Parameter> big_params() {
  return {param("block_size_x", powers_of_two(1, 1024)),
          param("block_size_y", powers_of_two(1, 1024)),
          param("tile_size_x", range(1, 8, 1)),
          param("tile_size_y", range(1, 8, 1)),
          param("unroll", ints({1, 2, 4, 8})),
          param("vector", ints({1, 2, 4})),
          param("use_shmem", ints({0, 1})),
          param("launch_bounds", ints({0, 1, 2})),
          param("loop_order", ints({0, 1, 2})),
          param("padding", ints({0, 1}))};
}

// Restrictions of a 2D stencil-like kernel, loosest first; about 1% of the product is valid.
const std::vector<std::string> kBigRestrictions = {
    "32 <= block_size_x * block_size_y <= 1024",
    "tile_size_x * tile_size_y <= 8",
    "unroll <= tile_size_y",
    "vector <= tile_size_x and tile_size_x % vector == 0",
    "use_shmem == 0 or (block_size_x * tile_size_x + 2) * (block_size_y * tile_size_y + 2) * 4 "
    "<= 48 * 1024",
    "launch_bounds == 0 or block_size_x * block_size_y >= 256 * launch_bounds",
    "loop_order == 0 or tile_size_x * tile_size_y >= 4",
    "padding == 0 or (use_shmem == 1 and block_size_x % 32 != 0)",
};

// (c) several million Cartesian configs, about 1% valid, pruned as early as possible.
SearchSpace big_space() { return SearchSpace(big_params(), kBigRestrictions); }

// (d) the same configs, but every restriction also names the last parameter, so nothing is
// pruned: every candidate is assigned in full and checked at the last level.
SearchSpace big_space_unpruned() {
  std::vector<std::string> restrictions;
  for (const auto& r : kBigRestrictions) restrictions.push_back("padding >= 0 and (" + r + ")");
  return SearchSpace(big_params(), restrictions);
}

void enumerate(benchmark::State& state, SearchSpace (*make)()) {
  const SearchSpace space = make();
  const double cartesian = static_cast<double>(space.cartesian_size());
  std::uint64_t valid = 0;
  for (auto _ : state) {
    std::uint64_t count = 0;
    space.for_each_valid([&](const Config&) {
      ++count;
      return true;
    });
    benchmark::DoNotOptimize(count);
    valid = count;
  }
  state.counters["cartesian"] = cartesian;
  state.counters["valid"] = static_cast<double>(valid);
  state.counters["candidates_per_s"] = benchmark::Counter(
      cartesian * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(enumerate, gemm, gemm_space)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(enumerate, reduction, reduction_space)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(enumerate, big_1pct_valid, big_space)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(enumerate, big_unpruned, big_space_unpruned)->Unit(benchmark::kMillisecond);

// One evaluation of a restriction, for the cost per expression.
void eval(benchmark::State& state, const char* text) {
  ktune::Scope scope;
  for (const char* n : {"MWG", "MDIMC", "NDIMC", "MDIMA", "KWG", "a", "b"}) scope.add(n);
  const std::vector<Value> slots = {Value(64), Value(16), Value(8), Value(16),
                                    Value(32), Value(8),  Value(16)};
  const ktune::Expr e = ktune::Expr::parse(text, scope);
  for (auto _ : state) benchmark::DoNotOptimize(e.eval_bool(slots));
  state.counters["evals_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(eval, modulo, "KWG % ((MDIMC*NDIMC)/MDIMA) == 0");
BENCHMARK_CAPTURE(eval, chained, "32 <= a*b <= 1024");
BENCHMARK_CAPTURE(eval, logic, "a in [1, 2, 4, 8] and (MWG % (MDIMC*a) == 0 or b > 2)");

}  // namespace

BENCHMARK_MAIN();
