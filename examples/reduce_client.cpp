// Uses a tuned kernel at run time with ktune::client alone: asks the results database for the
// best `reduce` configuration for this GPU and problem, gets its kernel (the stored CUBIN, or the
// stored source compiled with NVRTC), and sums random integers on the GPU with one launch per
// level, as ktune's own run hook for reduce does; then checks the sum against the CPU's.
//
//   reduce_client RESULTS_DB [N] [CACHE_DIR]
//
// Exit codes: 0 the sum is right, 1 it is wrong, 2 usage or database error, 3 no stored best
// fits this GPU, 77 no CUDA device (the example needs one).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "ktune/client.h"
#include "ktune/error.h"

namespace {

constexpr int kNoDevice = 77;

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw ktune::Error(ktune::ErrorKind::kDevice, std::string(what) + ": " + cudaGetErrorString(e));
}

// Sums n int32 values at `in` with the loaded kernel: each launch reduces its input to one
// partial sum per block; the partial sums are reduced again until one block is left. `partial`
// holds two halves the levels alternate between (the second starts 16-byte aligned, as the
// vector-load variant needs).
std::int32_t gpu_sum(const ktune::LoadedKernel& kernel, const std::int32_t* in, std::int64_t n0,
                     std::int32_t* partial, std::int32_t* out) {
  const std::int64_t tile =
      kernel.best().value("block_size") * kernel.best().value("elements_per_thread");
  const std::int64_t second = (div_up(n0, tile) + 3) / 4 * 4;
  std::int32_t* halves[2] = {partial, partial + second};
  const void* src = in;
  std::int64_t n = n0;
  // Step 10 sums everything in one launch (its last block writes `out`); `partial` is its
  // scratch, unused by the other steps.
  const bool one_pass = kernel.best().value("variant") == 10;
  void* scratch = partial;
  for (int level = 0;; ++level) {
    // Grid, block and shared memory from the stored launch expressions, for this level's n.
    const ktune::LaunchShape shape = kernel.shape({{"n", n}});
    void* dst = shape.grid[0] == 1 || one_pass ? static_cast<void*>(out) : halves[level % 2];
    unsigned n_arg = static_cast<unsigned>(n);
    void* args[] = {&src, &dst, &n_arg, &scratch};
    kernel.launch(shape, args);
    if (shape.grid[0] == 1 || one_pass) break;
    src = dst;
    n = shape.grid[0];
  }
  std::int32_t result = 0;
  check(cudaMemcpy(&result, out, sizeof result, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return result;
}

// What the database answered: the stored best, how the lookup found it, and its measurement.
void print_best(const ktune::ClientDevice& device, const ktune::BestConfig& best, std::int64_t n,
                double query_us) {
  std::printf("device:      %s (%s, %d SMs)\n", device.name.c_str(), device.arch.c_str(),
              device.sm_count);
  std::printf("best:        reduce[%s] for n=%lld (query %.1f us)\n", best.config_key.c_str(),
              static_cast<long long>(n), query_us);
  std::printf("lookup:      %s\n", best.describe().c_str());
  std::printf(
      "measured:    %.4f ms median of %d runs (spread %.2f%%) on %s, %s; run %lld, trial %lld, "
      "%s\n",
      best.measurement.time_ms, best.measurement.sample_count, 100 * best.measurement.time_spread,
      best.provenance.device_name.c_str(), best.problem_key.c_str(),
      static_cast<long long>(best.provenance.run_id),
      static_cast<long long>(best.provenance.trial_id), best.provenance.measured_at.c_str());
}

// Where the kernel came from (stored CUBIN or NVRTC) and what getting and loading it cost.
void print_kernel(const ktune::LoadedKernel& kernel) {
  std::printf("kernel:      %s in %.2f ms, loaded in %.2f ms%s%s\n",
              std::string(ktune::to_string(kernel.origin())).c_str(), kernel.binary().obtain_ms,
              kernel.load_ms(), kernel.binary().reason.empty() ? "" : "; ",
              kernel.binary().reason.c_str());
}

// n random integers, and their sum as the CPU makes it in `expected`.
std::vector<std::int32_t> random_input(std::int64_t n, std::uint32_t& expected) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<std::int32_t> dist(-1000, 1000);
  std::vector<std::int32_t> host(static_cast<std::size_t>(n));
  expected = 0;  // int32 additions wrap around on the GPU too
  for (auto& x : host) {
    x = dist(rng);
    expected += static_cast<std::uint32_t>(x);
  }
  return host;
}

// The GPU memory of a reduction: the input, the partial sums of its levels, the result.
struct DeviceBuffers {
  std::int32_t* in = nullptr;
  std::int32_t* partial = nullptr;
  std::int32_t* out = nullptr;
};

// Allocates the buffers for the best configuration's tile and uploads the input.
DeviceBuffers upload(const std::vector<std::int32_t>& host, const ktune::BestConfig& best) {
  const std::int64_t n = static_cast<std::int64_t>(host.size());
  const std::int64_t tile = best.value("block_size") * best.value("elements_per_thread");
  const std::size_t partial_count =
      static_cast<std::size_t>(div_up(n, tile) + div_up(div_up(n, tile), tile) + 4);
  DeviceBuffers b;
  check(cudaMalloc(reinterpret_cast<void**>(&b.in), host.size() * sizeof(std::int32_t)),
        "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&b.partial), partial_count * sizeof(std::int32_t)),
        "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&b.out), sizeof(std::int32_t)), "cudaMalloc");
  check(cudaMemcpy(b.in, host.data(), host.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  return b;
}

void free_buffers(const DeviceBuffers& b) {
  cudaFree(b.in);
  cudaFree(b.partial);
  cudaFree(b.out);
}

// Sums the input once as a warm-up, then `reps` times between two events; returns the
// milliseconds of the `reps` sums, the last sum in `sum`.
float time_sums(const ktune::LoadedKernel& kernel, const DeviceBuffers& b, std::int64_t n, int reps,
                std::int32_t& sum) {
  sum = gpu_sum(kernel, b.in, n, b.partial, b.out);  // also the warm-up
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) sum = gpu_sum(kernel, b.in, n, b.partial, b.out);
  check(cudaEventRecord(stop), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  return ms;
}

int run(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s RESULTS_DB [N] [CACHE_DIR]\n", argv[0]);
    return 2;
  }
  const std::int64_t n = argc > 2 ? std::strtoll(argv[2], nullptr, 0) : std::int64_t{1} << 24;
  if (n < 1 || n > (std::int64_t{1} << 31)) {
    std::fprintf(stderr, "error: N must be in 1..2^31\n");
    return 2;
  }
  std::string problem;
  const auto device = ktune::ClientDevice::find_current(0, &problem);
  if (!device) {
    std::printf("no CUDA device: %s; this example needs a GPU\n", problem.c_str());
    return kNoDevice;
  }
  ktune::ClientOptions options;
  if (argc > 3) options.cache_dir = argv[3];
  ktune::Client client(argv[1], *device, options);

  // 1. The best configuration for this GPU and problem (or why there is none).
  const auto t0 = std::chrono::steady_clock::now();
  const ktune::LookupResult best = client.best("reduce", {{"n", n}});
  const double query_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (!best) {
    std::printf("%s\n", best.message.c_str());
    return 3;
  }
  print_best(*device, *best, n, query_us);

  // 2. Its kernel: the stored CUBIN, or the stored source compiled with NVRTC.
  const auto kernel = client.load(*best);
  print_kernel(*kernel);

  // 3. Sum random integers on the GPU, check the sum against the CPU's, and time it.
  std::uint32_t expected = 0;
  const std::vector<std::int32_t> host = random_input(n, expected);
  const DeviceBuffers buffers = upload(host, *best);
  const int reps = 20;
  std::int32_t sum = 0;
  const float ms = time_sums(*kernel, buffers, n, reps, sum);
  free_buffers(buffers);

  const bool ok = sum == static_cast<std::int32_t>(expected);
  std::printf("sum:         %d on the GPU, %d on the CPU: %s\n", sum,
              static_cast<std::int32_t>(expected), ok ? "ok" : "WRONG");
  std::printf(
      "time:        %.4f ms per reduction here (all levels, with the copy of the result), %.1f "
      "GB/s\n",
      ms / reps, 4.0 * static_cast<double>(n) / (ms / reps * 1e-3) / 1e9);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ktune::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.kind() == ktune::ErrorKind::kDevice ? 1 : 2;
  }
}
