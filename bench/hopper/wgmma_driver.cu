// A standalone driver for kernels_src/matmul_tf32_wgmma.cu, for trying a change of the kernel on
// a few configurations without a tuning run (docs/kernels-matmul-hopper.md, "matmul_tf32_wgmma":
// the rows measured with it). It includes the kernel's source with the configuration's defines,
// fills A and B with values in [-1, 1), checks every output against a product of TF32-rounded
// inputs on the GPU (|c - ref| <= 1e-2 + 1e-3 |ref|), prints a hash of the output bits (equal
// hashes: bitwise equal outputs across builds) and the median of `runs` event-timed launches after
// 3 warm-up ones. Not built by CMake; on an sm_90 host, for example:
//
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o wgmma_driver bench/hopper/wgmma_driver.cu \
//     -DKERNEL_FILE='"../../kernels_src/matmul_tf32_wgmma.cu"' -DBLOCK_M=128 -DBLOCK_K=32 \
//     -DTILES_N=1 -DWARPGROUPS=4 -DSTAGES=3 -DWAIT_DEPTH=0 -DA_REGISTERS=0 -DCLUSTER_M=1 \
//     -DPRODUCTS_FIRST=1
//   ./wgmma_driver [m n k [runs]]     (default 4096 4096 4096 20)
//
// kernels_src/matmul_tf32_tma.cu likewise, with -DTMA=1, its defines (BLOCK_M, WARPGROUPS,
// STAGES, WAIT_DEPTH, LAG, ROUND_BATCH, CLUSTER_M) and -lcuda: the driver builds the tensor maps
// its run hook would (n and k multiples of 4).
//
// Exit status: 0 when every output verifies, 1 on a CUDA error, 2 on a wrong output.
#include <cuda.h>  // the tensor maps (TMA = 1)
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
#ifndef TMA
#define TMA 0
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

#if TMA
// A 2-D FLOAT32 tensor map of the rows x inner matrix at `p` (row-major), boxes of 32 x
// `box_rows`, 128-byte swizzle, zero fill: as matmul_tf32_tma's run hook builds them.
void encode(wgtma::TensorMap& map, const float* p, int inner, int rows, int box_rows) {
  const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(inner) * 4};
  const cuuint32_t box[2] = {32, cuuint32_t(box_rows)}, unit[2] = {1, 1};
  CUtensorMap m;
  const CUresult r = cuTensorMapEncodeTiled(
      &m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(p), dims, strides, box, unit,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "wgmma_driver: cuTensorMapEncodeTiled: error %d\n", int(r));
    std::exit(1);
  }
  static_assert(sizeof m == sizeof map);
  std::memcpy(&map, &m, sizeof map);
}
#endif

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

  // Both kernels launch whole clusters in m (blocks past m store nothing).
  const unsigned block_rows = CLUSTER_M * ((m + CLUSTER_M * BLOCK_M - 1) / (CLUSTER_M * BLOCK_M));
#if TMA
  // matmul_tf32_tma: the launch geometry of its description and the tensor maps its run hook
  // builds (plugins/builtin/matmul_tf32.cpp).
  const int bn = 64 * WARPGROUPS;
  const dim3 grid((n + bn - 1) / bn, block_rows);
  const dim3 block(128 * (WARPGROUPS + 1));
  const std::size_t smem = 1280 + std::size_t(128) * STAGES * (BLOCK_M + bn);
  wgtma::TensorMap map_a, map_b;
  encode(map_a, a, k, m, BLOCK_M);
  encode(map_b, b, n, k, 32);
  const auto launch = [&] { matmul_tf32_tma<<<grid, block, smem>>>(map_a, map_b, c, m, n, k); };
  DRIVER_CHECK(cudaFuncSetAttribute(matmul_tf32_tma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(smem)));
#else
  // The launch geometry of the built-in kernel's description (plugins/builtin/matmul_tf32.cpp).
  const int bn = 64 * TILES_N * WARPGROUPS;
  const dim3 grid((n + bn - 1) / bn, block_rows);
  const dim3 block(128 * (WARPGROUPS + PRODUCER));
  const std::size_t smem =
      1024 + 128 * (PRODUCER + CLUSTER_M / 2) +
      4 * STAGES * BLOCK_K * (BLOCK_M + bn + 8);  // (B's pad: used in a cluster)
  const auto launch = [&] { matmul_tf32_wgmma<<<grid, block, smem>>>(a, b, c, m, n, k); };
  DRIVER_CHECK(cudaFuncSetAttribute(matmul_tf32_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(smem)));
#endif
  DRIVER_CHECK(cudaMemset(c, 0xFF, std::size_t(m) * n * 4));  // NaNs where nothing is stored
  launch();
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
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> times;
  for (int i = 0; i < runs; ++i) {
    DRIVER_CHECK(cudaEventRecord(e0));
    launch();
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
