// Speed of the run-time client on a database shaped like a real one (4 devices, 2 kernel
// versions, 30 problem sizes per device, a few thousand trials, the winners' CUBINs):
//   - a repeated query (answered from the client's cache; the goal is under 5 us)
//   - the first query including opening the database (the goal is under 1 ms)
//   - an uncached query on an open client, reading a stored binary, an NVRTC compile
//   - on a GPU: loading the stored binary vs compiling with NVRTC and loading (skipped, with
//     the reason, without a device)
// The reduce template comes from kernels_src/reduce.cu, so the NVRTC figures are the real kernel's.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "ktune/client.h"
#include "ktune/compiler.h"
#include "ktune/store.h"

namespace {

namespace fs = std::filesystem;
using ktune::Client;
using ktune::ClientDevice;

constexpr int kProblems = 30;           // n = 2^10 .. 2^39 per device
constexpr int kExtraTrialsPerRun = 20;  // losing trials beside each winner

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ktune::DeviceRecord device_record(const std::string& name, const std::string& arch, int cc, int sms,
                                  std::int64_t memory) {
  ktune::DeviceRecord d;
  d.name = name;
  d.arch = arch;
  d.cc_major = cc / 10;
  d.cc_minor = cc % 10;
  d.sm_count = sms;
  d.memory_bytes = memory;
  d.l2_bytes = 50 << 20;
  d.driver_version = 13000;
  d.nvrtc_version = ktune::nvrtc_version();
  return d;
}

ktune::KernelRecord reduce_record(const std::string& version) {
  ktune::KernelRecord k;
  k.name = "reduce";
  k.source_hash = "bench-" + version;
  k.space_hash = "space";
  k.source = read_text(fs::path(KTUNE_SOURCE_DIR) / "kernels_src" / "reduce.cu");
  k.entry = "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, int>";
  k.spec_json =
      R"json({"parameters": [{"name": "block_size", "default": "256"}, {"name": "variant", "default": "9"},)json"
      R"json( {"name": "elements_per_thread", "default": "8"}, {"name": "unroll", "default": "1"},)json"
      R"json( {"name": "maxrregcount", "default": "0"}, {"name": "launch_bounds", "default": "0"},)json"
      R"json( {"name": "blocks_per_sm", "default": "0"}],)json"
      R"json( "problem": [{"name": "n", "default": 16777216}],)json"
      R"json( "grid": ["div_up(n, block_size * elements_per_thread)", "1", "1"],)json"
      R"json( "block": ["block_size", "1", "1"], "shared_mem": "max(block_size, 64) * 4",)json"
      R"json( "compile_options": ["-std=c++17"], "source_name": "reduce.cu"})json";
  return k;
}

// The benchmark database, built once per process in a temporary directory.
struct Fixture {
  fs::path dir;
  fs::path db;
  ClientDevice device;              // the database's H200, described by hand
  std::optional<ClientDevice> gpu;  // this machine's GPU, when there is one
  std::string no_gpu_reason;

  Fixture() {
    std::string pattern = (fs::temp_directory_path() / "ktune-bench-client-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = pattern;
    db = dir / "results.db";
    gpu = ClientDevice::find_current(0, &no_gpu_reason);
    device = ClientDevice::describe("NVIDIA H200", "sm_90", 132, 150'000'000'000);
    std::vector<ktune::DeviceRecord> devices = {
        device_record("NVIDIA H200", "sm_90", 90, 132, 150'000'000'000),
        device_record("NVIDIA H100 80GB HBM3", "sm_90", 90, 132, 85'000'000'000),
        device_record("NVIDIA A100-SXM4-80GB", "sm_80", 80, 108, 85'000'000'000),
        device_record("NVIDIA GeForce RTX 4090", "sm_89", 89, 128, 25'000'000'000),
    };
    if (gpu) {
      devices.push_back(device_record(gpu->name, gpu->arch, gpu->cc_major * 10 + gpu->cc_minor,
                                      gpu->sm_count, gpu->memory_bytes));
    }
    ktune::Store store = ktune::Store::open(db);
    for (const std::string version : {"1", "2"}) {
      const std::int64_t kernel = store.upsert_kernel(reduce_record(version));
      for (const auto& d : devices) {
        const std::int64_t device_id = store.upsert_device(d);
        for (int e = 10; e < 10 + kProblems; ++e) {
          const std::int64_t n = std::int64_t{1} << e;
          ktune::ProblemRecord p;
          p.kernel_name = "reduce";
          p.key = "n=" + std::to_string(n);
          p.json = "{\"n\": " + std::to_string(n) + "}";
          ktune::RunRecord run;
          run.kernel_id = kernel;
          run.device_id = device_id;
          run.problem_id = store.upsert_problem(p);
          run.backend = "cuda";
          run.strategy = "random";
          const std::int64_t run_id = store.begin_run(run);
          std::int64_t winner = 0;
          for (int t = 0; t <= kExtraTrialsPerRun; ++t) {
            ktune::TrialRecord trial;
            trial.run_id = run_id;
            trial.kernel_id = kernel;
            trial.device_id = device_id;
            trial.problem_id = run.problem_id;
            const int block = 32 << (t % 6);
            trial.config_key =
                "block_size=" + std::to_string(block) +
                ",variant=9,elements_per_thread=8,unroll=" + std::to_string(1 + t / 6) +
                ",maxrregcount=0,launch_bounds=0,blocks_per_sm=0";
            trial.config_json = R"({"block_size": )" + std::to_string(block) +
                                R"(, "variant": 9, "elements_per_thread": 8, "unroll": )" +
                                std::to_string(1 + t / 6) +
                                R"(, "maxrregcount": 0, "launch_bounds": 0, "blocks_per_sm": 0})";
            trial.time_ms = 0.01 * (1 + t);
            trial.sample_count = 30;
            trial.samples_ms = std::vector<double>(30, trial.time_ms);
            trial.arch = d.arch;
            trial.cubin_hash = "cubin-" + d.arch + "-" + std::to_string(t);
            const std::int64_t id = store.add_trial(trial);
            if (t == 0) winner = id;
          }
          store.set_best(winner);
          store.finish_run(run_id, ktune::RunStatus::kFinished, "{}");
        }
      }
    }
    // A selector over the H200's 30 problems of the newer version (ktune/selector.h): the six
    // block sizes of the trials above as its candidates, measured at every problem.
    {
      ktune::SelectorRecord r;
      r.kernel_name = "reduce";
      r.kernel_id = store.upsert_kernel(reduce_record("2"));
      r.device_id = store.upsert_device(devices.front());
      for (int t = 0; t < 6; ++t) {
        r.selector.candidates.push_back("block_size=" + std::to_string(32 << t) +
                                        ",variant=9,elements_per_thread=8,unroll=1,"
                                        "maxrregcount=0,launch_bounds=0,blocks_per_sm=0");
        r.selector.configs.push_back("{}");
      }
      for (int e = 10; e < 10 + kProblems; ++e) {
        ktune::SelectorRow row;
        row.problem = {{"n", std::int64_t{1} << e}};
        row.key = "n=" + std::to_string(std::int64_t{1} << e);
        for (int t = 0; t < 6; ++t) row.time_ms.push_back(0.01 * (1 + (t + e) % 6));
        r.selector.rows.push_back(std::move(row));
      }
      r.selector.held_out = r.selector.leave_one_out();
      store.add_selector(r);
    }
    // The winners' binary: one real CUBIN of reduce per architecture, compiled now.
    Client client(db, gpu ? *gpu : device);
    const ktune::LookupResult best = client.best("reduce", {{"n", 1 << 24}});
    for (const auto& d : devices) {
      const ktune::CompileResult c = ktune::compile(client.render(*best, d.arch));
      if (!c.ok) throw std::runtime_error("cannot compile reduce for " + d.arch + ": " + c.log);
      store.put_binary("cubin-" + d.arch + "-0", d.arch, c.lowered_name, c.cubin);
    }
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// A query answered from the client's cache (the same kernel and problem asked again).
void BM_RepeatedQuery(benchmark::State& state) {
  Client client(fixture().db, fixture().device);
  const ktune::Problem problem{{"n", std::int64_t{1} << 24}};
  benchmark::DoNotOptimize(client.best("reduce", problem));
  for (auto _ : state) {
    ktune::LookupResult r = client.best("reduce", problem);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_RepeatedQuery);

// Repeated queries over 30 untuned problem sizes (each cached after its first time), which the
// H200's selector answers (the label says so).
void BM_RepeatedQueryThirtyProblems(benchmark::State& state) {
  Client client(fixture().db, fixture().device);
  std::vector<ktune::Problem> problems;
  for (int e = 10; e < 40; ++e) problems.push_back({{"n", (std::int64_t{1} << e) + 1}});
  std::size_t i = 0;
  for (auto _ : state) {
    ktune::LookupResult r = client.best("reduce", problems[i++ % problems.size()]);
    benchmark::DoNotOptimize(r);
  }
  const ktune::LookupResult r = client.best("reduce", problems[1]);
  if (r) state.SetLabel(std::string(ktune::to_string(r->problem_match)));
}
BENCHMARK(BM_RepeatedQueryThirtyProblems);

// Opening the database (read-only, checks) and the first query, as a program's start-up pays.
void BM_FirstQueryWithOpen(benchmark::State& state) {
  for (auto _ : state) {
    auto client = std::make_unique<Client>(fixture().db, fixture().device);
    ktune::LookupResult r = client->best("reduce", {{"n", std::int64_t{1} << 24}});
    benchmark::DoNotOptimize(r);
    state.PauseTiming();  // closing is not part of the start-up
    client.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_FirstQueryWithOpen)->Unit(benchmark::kMicrosecond);

// A query the cache cannot answer, on an open client: the lookup and its SQL (an untuned size:
// the selector's pick, as the label says).
void BM_UncachedQuery(benchmark::State& state) {
  Client client(fixture().db, fixture().device);
  ktune::LookupResult r;
  for (auto _ : state) {
    client.clear_cache();
    r = client.best("reduce", {{"n", (std::int64_t{1} << 24) + 1}});
    benchmark::DoNotOptimize(r);
  }
  if (r) state.SetLabel(std::string(ktune::to_string(r->problem_match)));
}
BENCHMARK(BM_UncachedQuery)->Unit(benchmark::kMicrosecond);

// The winner's CUBIN read from the database (no NVRTC), uncached.
void BM_StoredBinaryRead(benchmark::State& state) {
  Client client(fixture().db, fixture().device);
  const ktune::LookupResult best = client.best("reduce", {{"n", std::int64_t{1} << 24}});
  for (auto _ : state) {
    client.clear_cache();
    auto bin = client.binary(*best);
    if (bin->origin != ktune::KernelOrigin::kStoredBinary)
      state.SkipWithError("not the stored binary");
    benchmark::DoNotOptimize(bin);
  }
}
BENCHMARK(BM_StoredBinaryRead)->Unit(benchmark::kMicrosecond);

// The same kernel compiled from the stored source with NVRTC, as the client does when the
// database keeps no binary that runs on the device (here: the winner's key pointed elsewhere).
void BM_NvrtcCompile(benchmark::State& state) {
  Client client(fixture().db, fixture().device);
  const ktune::LookupResult best = client.best("reduce", {{"n", std::int64_t{1} << 24}});
  auto no_binary = std::make_shared<ktune::BestConfig>(*best);
  no_binary->provenance.binary_key = "no-such-binary";
  for (auto _ : state) {
    client.clear_cache();
    auto bin = client.binary(*no_binary);
    if (bin->origin != ktune::KernelOrigin::kCompiled) state.SkipWithError("not compiled");
    benchmark::DoNotOptimize(bin);
  }
}
BENCHMARK(BM_NvrtcCompile)->Unit(benchmark::kMillisecond)->Iterations(3);

// On the GPU: the stored CUBIN read and loaded (cudaLibraryLoadData + cudaLibraryGetKernel).
void BM_GpuLoadStoredBinary(benchmark::State& state) {
  if (!fixture().gpu) {
    state.SkipWithError(
        ("no CUDA device: " + fixture().no_gpu_reason + "; run on the GPU host").c_str());
    return;
  }
  cudaFree(nullptr);  // the CUDA context exists before timing starts
  Client client(fixture().db, *fixture().gpu);
  const ktune::LookupResult best = client.best("reduce", {{"n", std::int64_t{1} << 24}});
  for (auto _ : state) {
    client.clear_cache();
    auto k = client.load(*best);
    if (k->origin() != ktune::KernelOrigin::kStoredBinary)
      state.SkipWithError("not the stored binary");
    benchmark::DoNotOptimize(k);
  }
}
BENCHMARK(BM_GpuLoadStoredBinary)->Unit(benchmark::kMillisecond);

// On the GPU: the same winner compiled with NVRTC, then loaded.
void BM_GpuLoadCompiledWithNvrtc(benchmark::State& state) {
  if (!fixture().gpu) {
    state.SkipWithError(
        ("no CUDA device: " + fixture().no_gpu_reason + "; run on the GPU host").c_str());
    return;
  }
  cudaFree(nullptr);
  Client client(fixture().db, *fixture().gpu);
  ktune::LookupResult best = client.best("reduce", {{"n", std::int64_t{1} << 24}});
  auto no_binary = std::make_shared<ktune::BestConfig>(*best);
  no_binary->provenance.binary_key = "no-such-binary";
  for (auto _ : state) {
    client.clear_cache();
    auto k = client.load(*no_binary);
    if (k->origin() != ktune::KernelOrigin::kCompiled) state.SkipWithError("not compiled");
    benchmark::DoNotOptimize(k);
  }
}
BENCHMARK(BM_GpuLoadCompiledWithNvrtc)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
