// NVRTC compile time of a small templated kernel (the process's first compile apart from later
// ones), a CUBIN cache hit, CompilePool throughput with 1, 2 and N threads, and the built-in
// reduce kernel's configurations compiled in batches of 1 to 16 per NVRTC program, and a kernel
// that includes toolkit headers compiled by one compile process (with precompiled headers).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "ktune/render.h"

namespace {

constexpr const char* kTemplate = R"(
template <int B, int U>
__global__ void reduce(const float* in, float* out, unsigned n) {
  __shared__ float partial[B];
  float sum = 0;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    unsigned i = (blockIdx.x * U + u) * B + threadIdx.x;
    if (i < n) sum += in[i];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = B / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
)";

// Distinct configs so nothing downstream can reuse an earlier compile.
ktune::CompileRequest request(int index) {
  int block = 32 << (index % 6);
  int unroll = 1 + index / 6;
  ktune::CompileRequest r;
  r.source = "#define BLOCK_SIZE " + std::to_string(block) + "\n#define UNROLL " +
             std::to_string(unroll) + "\n" + kTemplate;
  r.source_name = "reduce.cu";
  r.entry = "reduce<BLOCK_SIZE, UNROLL>";
  r.options = {"--gpu-architecture=sm_90", "-std=c++17", "--ptxas-options=-v"};
  r.arch = "sm_90";
  return r;
}

std::atomic<bool> compiled_before{false};

// The first NVRTC compile pays for loading NVRTC's builtins and warming its state; run alone
// (registered first, one iteration) so that cost is not averaged away.
void BM_FirstCompile(benchmark::State& state) {
  for (auto _ : state) {
    if (compiled_before.exchange(true)) {
      state.SkipWithError("not the first compile of this process");
      break;
    }
    ktune::CompileResult result = ktune::compile(request(0));
    if (!result.ok) state.SkipWithError(result.error.c_str());
  }
}
BENCHMARK(BM_FirstCompile)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Compile(benchmark::State& state) {
  compiled_before = true;
  int index = 0;
  for (auto _ : state) {
    ktune::CompileResult result = ktune::compile(request(index++ % 60));
    if (!result.ok) state.SkipWithError(result.error.c_str());
    benchmark::DoNotOptimize(result.cubin.data());
  }
}
BENCHMARK(BM_Compile)->Unit(benchmark::kMillisecond);

void BM_CacheHit(benchmark::State& state) {
  compiled_before = true;
  auto dir = std::filesystem::temp_directory_path() / "ktune-bench-compile-cache";
  std::filesystem::remove_all(dir);
  ktune::CompileCache cache(dir);
  ktune::CompileRequest r = request(3);
  if (!cache.put(ktune::compile(r))) state.SkipWithError("cannot write the cache");
  for (auto _ : state) {
    std::optional<ktune::CompileResult> hit = cache.get(r);
    if (!hit) state.SkipWithError("cache miss");
    benchmark::DoNotOptimize(hit);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_CacheHit)->Unit(benchmark::kMicrosecond);

// One batch of distinct configs through a pool without a cache: compiles per second.
void BM_PoolThroughput(benchmark::State& state) {
  compiled_before = true;
  constexpr int kBatch = 24;
  for (auto _ : state) {
    ktune::CompilePool pool(static_cast<std::size_t>(state.range(0)), nullptr);
    std::vector<std::shared_future<ktune::CompileResult>> futures;
    for (int i = 0; i < kBatch; ++i) futures.push_back(pool.submit(request(i)));
    for (auto& future : futures) {
      if (!future.get().ok) state.SkipWithError(future.get().error.c_str());
    }
    state.counters["busy_s"] = pool.busy_seconds();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void pool_threads(benchmark::internal::Benchmark* b) {
  std::vector<int> counts = {1, 2,
                             static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int count : counts) b->Arg(count);
}
BENCHMARK(BM_PoolThroughput)->Apply(pool_threads)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same with one compile process per thread (`ktune __compile`), starting the processes
// inside the timed region, as a tuning run does: compiles per second.
void BM_PoolProcesses(benchmark::State& state) {
  compiled_before = true;
  constexpr int kBatch = 96;
  int round = 0;
  for (auto _ : state) {
    ktune::CompilePool pool(static_cast<std::size_t>(state.range(0)), nullptr,
                            {KTUNE_EXE, "__compile"});
    std::vector<std::shared_future<ktune::CompileResult>> futures;
    for (int i = 0; i < kBatch; ++i) {
      // The same 24 kernels as above, each made distinct by a comment, so none is deduplicated.
      ktune::CompileRequest r = request(i % 24);
      r.source = "// copy " + std::to_string(round) + "." + std::to_string(i) + "\n" + r.source;
      futures.push_back(pool.submit(std::move(r)));
    }
    ++round;
    for (auto& future : futures) {
      if (!future.get().ok) state.SkipWithError(future.get().error.c_str());
    }
    state.counters["busy_s"] = pool.busy_seconds();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_PoolProcesses)->Apply(pool_threads)->UseRealTime()->Unit(benchmark::kMillisecond);

// The reduce kernel's 270 configurations of configs/reduce-kt270.toml (n = 2^25), rendered for
// sm_90 as a tuning run renders them, compiled `state.range(0)` to an NVRTC program (one
// namespace per configuration, as the compile pool batches them): milliseconds per
// configuration, the cost batching amortises being the front end's share.
void BM_BatchedReduceCompile(benchmark::State& state) {
  compiled_before = true;
  static const std::vector<ktune::CompileRequest> requests = [] {
    ktune::Registry registry;
    ktune::register_builtin_kernels(registry);
    const ktune::KernelInstance inst(registry.get("reduce"), {{"n", std::int64_t{1} << 25}},
                                     ktune::DeviceLimits::for_arch(90));
    std::vector<ktune::CompileRequest> out;
    for (int variant : {7, 8, 9})
      for (int block : {32, 64, 128, 256, 512, 1024})
        for (int items : {2, 4, 8, 16, 32})
          for (int unroll : {1, 2, 4}) {
            const ktune::Config c =
                inst.space().from_assignments({{"variant", std::to_string(variant)},
                                               {"block_size", std::to_string(block)},
                                               {"elements_per_thread", std::to_string(items)},
                                               {"unroll", std::to_string(unroll)}});
            if (inst.space().is_valid(c)) out.push_back(ktune::render(inst, c, "sm_90"));
          }
    return out;
  }();
  const auto batch = static_cast<std::size_t>(state.range(0));
  std::size_t next = 0, compiled = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::vector<ktune::CompileRequest> group;
    for (std::size_t i = 0; i < batch; ++i) group.push_back(requests[next++ % requests.size()]);
    for (const ktune::CompileResult& r : ktune::compile_batch(group)) {
      if (!r.ok) state.SkipWithError(r.error.c_str());
      benchmark::DoNotOptimize(r.cubin.data());
    }
    compiled += batch;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  state.counters["ms_per_config"] = ms / static_cast<double>(std::max<std::size_t>(compiled, 1));
}
BENCHMARK(BM_BatchedReduceCompile)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Configurations of a kernel that starts with `#include <cuda_fp16.h>` and, with
// state.range(0), <cooperative_groups.h> too, compiled one after another by one compile process,
// as a tuning run's pool thread compiles them: milliseconds per configuration, the process's
// start and its first program left out.
void BM_HeaderKernelProcess(benchmark::State& state) {
  ktune::KernelText k;
  k.name = "scale";
  k.source = std::string("#include <cuda_fp16.h>\n") +
             (state.range(0) ? "#include <cooperative_groups.h>\n" : "") +
             "extern \"C\" __global__ void scale(__half* x, int n) {\n"
             "#pragma unroll UNROLL\n"
             "  for (int j = 0; j < 4; ++j) {\n"
             "    const int i = (blockIdx.x * 4 + j) * BLOCK + threadIdx.x;\n"
             "    if (i < n) x[i] = __hmul(x[i], __float2half(2.0f));\n"
             "  }\n"
             "}\n";
  k.source_name = "scale.cu";
  k.entry = "scale";
  k.compile_options = {"-std=c++17"};
  std::stringstream dirs(KTUNE_CUDA_INCLUDE_DIRS);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    k.compile_options.push_back("-I" + dir);
    // CUDA 13 keeps libcu++ (cuda/std/...), which cooperative_groups.h includes, under cccl/.
    if (std::filesystem::is_directory(dir + "/cccl"))
      k.compile_options.push_back("-I" + dir + "/cccl");
  }
  int round = 0;
  double ms = 0;
  int compiled = 0;
  for (auto _ : state) {
    ktune::CompilePool pool(1, nullptr, {KTUNE_EXE, "__compile"});
    constexpr int kConfigs = 12;
    std::chrono::steady_clock::time_point start;
    for (int i = 0; i < kConfigs; ++i) {
      const int block = 32 << (i % 6), unroll = 1 + i / 6;
      ktune::CompileRequest r =
          ktune::render(k, {{"block", ktune::Value(block)}, {"unroll", ktune::Value(unroll)}},
                        ktune::RenderDims{{1, 1, 1}, {static_cast<std::uint32_t>(block), 1, 1}},
                        "r" + std::to_string(round) + "." + std::to_string(i), "sm_90");
      const ktune::CompileResult result = pool.submit(std::move(r)).get();
      if (!result.ok) state.SkipWithError(result.error.c_str());
      if (i == 0) start = std::chrono::steady_clock::now();
    }
    ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    compiled += kConfigs - 1;
    ++round;
  }
  state.counters["ms_per_config"] = ms / std::max(compiled, 1);
}
BENCHMARK(BM_HeaderKernelProcess)->Arg(0)->Arg(1)->Iterations(2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
