// A standalone driver for kernels_src/matmul_tf32_wgmma.cu, for trying a change of the kernel on
// a few configurations without a tuning run (docs/kernels.md, "matmul_tf32_wgmma": the rows
// measured with it). It includes the kernel's source with the configuration's defines, fills A
// and B with values in [-1, 1), checks every output against a product of TF32-rounded inputs on
// the GPU (|c - ref| <= 1e-2 + 1e-3 |ref|), prints a hash of the output bits (equal hashes:
// bitwise equal outputs across builds) and the median of `runs` event-timed launches after 3
// warm-up ones. Not built by CMake; on an sm_90 host, for example:
//
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o wgmma_driver bench/hopper/wgmma_driver.cu \
//     -DKERNEL_FILE='"../../kernels_src/matmul_tf32_wgmma.cu"' -DBLOCK_M=128 -DBLOCK_K=32 \
//     -DTILES_N=1 -DWARPGROUPS=4 -DSTAGES=3 -DWAIT_DEPTH=0 -DA_REGISTERS=0 -DCLUSTER_M=1 \
//     -DPRODUCTS_FIRST=1
//   ./wgmma_driver [m n k [runs]]     (default 4096 4096 4096 20)
//
// Exit status: 0 when every output verifies, 1 on a CUDA error, 2 on a wrong output.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../kernels_src/wgmma_tf32.cuh"  // what ktune puts before the kernel
#include KERNEL_FILE

#ifndef PRODUCER
#define PRODUCER 0
#endif

namespace {

#define DRIVER_CHECK(call)                                                           \
  do {                                                                               \
    const cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "wgmma_driver: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

__device__ float tf32_nearest(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

// C = A B with each input rounded to TF32, one thread per element, fp32 sums.
__global__ void reference(const float* a, const float* b, float* c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n || row >= m) return;
  float s = 0;
  for (int i = 0; i < k; ++i)
    s += tf32_nearest(a[std::size_t(row) * k + i]) * tf32_nearest(b[std::size_t(i) * n + col]);
  c[std::size_t(row) * n + col] = s;
}

// Values in [-1, 1) from a hash of the index and `seed`.
__global__ void fill(float* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = (x & 0xFFFFFF) / 8388608.0f - 1.0f;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 4096, n = argc > 2 ? std::atoi(argv[2]) : 4096,
            k = argc > 3 ? std::atoi(argv[3]) : 4096, runs = argc > 4 ? std::atoi(argv[4]) : 20;
  if (m < 1 || n < 1 || k < 1 || runs < 1) {
    std::fprintf(stderr, "wgmma_driver: m, n, k and runs must be positive\n");
    return 1;
  }
  float *a, *b, *c, *r;
  DRIVER_CHECK(cudaMalloc(&a, std::size_t(m) * k * 4));
  DRIVER_CHECK(cudaMalloc(&b, std::size_t(k) * n * 4));
  DRIVER_CHECK(cudaMalloc(&c, std::size_t(m) * n * 4));
  DRIVER_CHECK(cudaMalloc(&r, std::size_t(m) * n * 4));
  fill<<<1024, 256>>>(a, std::size_t(m) * k, 1);
  fill<<<1024, 256>>>(b, std::size_t(k) * n, 2);
  reference<<<dim3((n + 255) / 256, m), 256>>>(a, b, r, m, n, k);

  // The launch geometry of the built-in kernel's description (plugins/builtin/matmul_tf32.cpp).
  const int bn = 64 * TILES_N * WARPGROUPS;
  const dim3 grid((n + bn - 1) / bn,
                  CLUSTER_M * ((m + CLUSTER_M * BLOCK_M - 1) / (CLUSTER_M * BLOCK_M)));
  const dim3 block(128 * (WARPGROUPS + PRODUCER));
  const std::size_t smem =
      1024 + 128 * (PRODUCER + CLUSTER_M / 2) +
      4 * STAGES * BLOCK_K * (BLOCK_M + bn + 8);  // (B's pad: used in a cluster)
  DRIVER_CHECK(cudaFuncSetAttribute(matmul_tf32_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(smem)));
  DRIVER_CHECK(cudaMemset(c, 0xFF, std::size_t(m) * n * 4));  // NaNs where nothing is stored
  matmul_tf32_wgmma<<<grid, block, smem>>>(a, b, c, m, n, k);
  DRIVER_CHECK(cudaGetLastError());
  DRIVER_CHECK(cudaDeviceSynchronize());

  std::vector<float> hc(std::size_t(m) * n), hr(hc.size());
  DRIVER_CHECK(cudaMemcpy(hc.data(), c, hc.size() * 4, cudaMemcpyDeviceToHost));
  DRIVER_CHECK(cudaMemcpy(hr.data(), r, hr.size() * 4, cudaMemcpyDeviceToHost));
  std::size_t bad = 0;
  double worst = 0;
  unsigned long long hash = 1469598103934665603ull;  // FNV-1a over the output bits
  for (std::size_t i = 0; i < hc.size(); ++i) {
    const double d = std::fabs(double(hc[i]) - hr[i]);
    if (!(d <= 1e-2 + 1e-3 * std::fabs(hr[i]))) {
      if (bad < 3)
        std::printf("mismatch at (%zu, %zu): %g, expected %g\n", i / n, i % n, hc[i], hr[i]);
      ++bad;
    }
    if (d > worst) worst = d;
    unsigned u;
    std::memcpy(&u, &hc[i], 4);
    hash = (hash ^ u) * 1099511628211ull;
  }

  cudaEvent_t e0, e1;
  DRIVER_CHECK(cudaEventCreate(&e0));
  DRIVER_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) matmul_tf32_wgmma<<<grid, block, smem>>>(a, b, c, m, n, k);
  std::vector<float> times;
  for (int i = 0; i < runs; ++i) {
    DRIVER_CHECK(cudaEventRecord(e0));
    matmul_tf32_wgmma<<<grid, block, smem>>>(a, b, c, m, n, k);
    DRIVER_CHECK(cudaEventRecord(e1));
    DRIVER_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    DRIVER_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  DRIVER_CHECK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf(
      "%dx%dx%d: %s (%zu wrong, largest difference %.2e, hash %016llx), median %.4f ms, "
      "%.1f TFLOP/s\n",
      m, n, k, bad ? "WRONG" : "ok", bad, worst, hash, median, 2.0 * m * n * k / median / 1e9);
  return bad ? 2 : 0;
}
