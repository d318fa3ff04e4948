// ktune_hopper_limits: two limits of a Hopper GPU (sm_90) that bound the TF32 matrix multiply,
// measured on their own (docs/kernels-matmul-hopper.md, "matmul_tf32_wgmma"):
//   - the TF32 tensor-core peak: a loop of wgmma.mma_async m64nNk8 (N = 128, 256) on one block
//     per multiprocessor, the 64-row operand from registers ("RS", as matmul_tf32_wgmma issues
//     it) or from shared memory ("SS"), 1 to 4 warpgroups per block, one group of four products
//     left running while the next is issued; operands are zeros (the rate does not depend on
//     the values);
//   - the L2 read bandwidth: every thread reads 16-byte vectors of a buffer that fits the L2
//     (8 to 32 MiB) 64 times over, through the L2 alone (ld.global.cg), each pass starting at
//     another offset.
// Each figure is the median of 7 event-timed launches after 3 warm-up launches. Needs an sm_90
// device; without one the program says so and exits 2.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

#define LIMITS_CHECK(call)                                                                  \
  do {                                                                                      \
    const cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "ktune_hopper_limits: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

using u64 = unsigned long long;

// A shared-memory descriptor for a 128-byte-swizzled K-major operand at `addr`.
__device__ __forceinline__ u64 descriptor(unsigned addr) {
  return u64((addr & 0x3FFFF) >> 4) | u64(1) << 16 | u64(1024 >> 4) << 32 | u64(1) << 62;
}

#define LIMITS_D8(i)                                                                          \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define LIMITS_REGS_64                                                                    \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, " \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, " \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define LIMITS_REGS_128                                                         \
  LIMITS_REGS_64                                                                \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "    \
  "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, " \
  "%93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, "     \
  "%106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "    \
  "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// The accumulators as asm outputs: 64 (n = 128) or 128 (n = 256).
#define LIMITS_OUT_64                                                                     \
  LIMITS_D8(0), LIMITS_D8(8), LIMITS_D8(16), LIMITS_D8(24), LIMITS_D8(32), LIMITS_D8(40), \
      LIMITS_D8(48), LIMITS_D8(56)
#define LIMITS_OUT_128                                                                      \
  LIMITS_OUT_64, LIMITS_D8(64), LIMITS_D8(72), LIMITS_D8(80), LIMITS_D8(88), LIMITS_D8(96), \
      LIMITS_D8(104), LIMITS_D8(112), LIMITS_D8(120)
#define LIMITS_RS_IN "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)

// d (64 x N, N / 2 accumulators per thread) += a x b, one k = 8 slice.
template <int N, bool Rs>
__device__ __forceinline__ void mma(float* d, const unsigned* a, u64 da, u64 db) {
  if constexpr (N == 128 && Rs) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" LIMITS_REGS_64
                 "}, {%64, %65, %66, %67}, %68, 1, 1, 1;\n"
                 : LIMITS_OUT_64
                 : LIMITS_RS_IN);
  } else if constexpr (N == 128) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" LIMITS_REGS_64
                 "}, %64, %65, 1, 1, 1;\n"
                 : LIMITS_OUT_64
                 : "l"(da), "l"(db));
  } else if constexpr (Rs) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" LIMITS_REGS_128
                 "}, {%128, %129, %130, %131}, %132, 1, 1, 1;\n"
                 : LIMITS_OUT_128
                 : LIMITS_RS_IN);
  } else {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" LIMITS_REGS_128
                 "}, %128, %129, 1, 1, 1;\n"
                 : LIMITS_OUT_128
                 : "l"(da), "l"(db));
  }
}

constexpr int kSmem = 80 * 1024;  // both operands' tiles (64 KiB) after 1024-byte alignment

template <int N, bool Rs>
__global__ void __launch_bounds__(N == 256 ? 256 : 512, 1) tensor_loop(float* out, int iters) {
  extern __shared__ unsigned char smem[];
  const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
  for (unsigned i = threadIdx.x; i < kSmem / 16; i += blockDim.x)
    reinterpret_cast<float4*>(smem)[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();  // the operands are zeros before the tensor cores read them
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
  const unsigned a[4] = {0, 0, 0, 0};
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int s = 0; s < 4; ++s)
      mma<N, Rs>(d, a, descriptor(base + 32 * s), descriptor(base + 32768 + 32 * s));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float sum = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) sum += d[i];
  if (sum != 0.0f) out[threadIdx.x] = sum;  // never: the operands are zero
}

__global__ void l2_read(const float4* __restrict__ p, unsigned n4, int passes, float* out) {
  float sum = 0;
  for (int r = 0; r < passes; ++r) {
    const unsigned offset = (static_cast<unsigned>(r) * 977u) % n4;
#pragma unroll 4
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
      unsigned j = i + offset;
      if (j >= n4) j -= n4;
      const float4 v = __ldcg(p + j);
      sum += v.x + v.y + v.z + v.w;
    }
  }
  if (sum != 0.0f) out[0] = sum;  // never: the buffer is zero
}

// The median of 7 timed launches of `launch` after 3 untimed ones, in ms.
template <typename F>
float median_ms(F&& launch) {
  cudaEvent_t e0, e1;
  LIMITS_CHECK(cudaEventCreate(&e0));
  LIMITS_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> t;
  for (int i = 0; i < 7; ++i) {
    LIMITS_CHECK(cudaEventRecord(e0));
    launch();
    LIMITS_CHECK(cudaEventRecord(e1));
    LIMITS_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    LIMITS_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  LIMITS_CHECK(cudaGetLastError());
  LIMITS_CHECK(cudaEventDestroy(e0));
  LIMITS_CHECK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <int N, bool Rs>
void tensor_row(int warpgroups, int sms, float* out) {
  const auto kernel = tensor_loop<N, Rs>;
  LIMITS_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const int iters = 2000;
  const float ms = median_ms([&] { kernel<<<sms, 128 * warpgroups, kSmem>>>(out, iters); });
  const double flops = 2.0 * 64 * N * 8 * 4 * iters * warpgroups * static_cast<double>(sms);
  std::printf("tensor  %s m64n%dk8  %d warpgroup%s  %7.1f TFLOP/s\n", Rs ? "RS" : "SS", N,
              warpgroups, warpgroups > 1 ? "s" : " ", flops / ms / 1e9);
}

}  // namespace

int main() {
  int device = 0, major = 0, minor = 0, sms = 0, clock_khz = 0, count = 0;
  const cudaError_t found = cudaGetDeviceCount(&count);
  if (found != cudaSuccess || count == 0) {
    std::fprintf(stderr, "ktune_hopper_limits: needs an sm_90 CUDA device, found none (%s)\n",
                 found != cudaSuccess ? cudaGetErrorString(found) : "no device");
    return 2;
  }
  LIMITS_CHECK(cudaGetDevice(&device));
  LIMITS_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  LIMITS_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  LIMITS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  LIMITS_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  cudaDeviceProp prop{};
  LIMITS_CHECK(cudaGetDeviceProperties(&prop, device));
  if (major != 9 || minor != 0) {
    std::fprintf(stderr, "ktune_hopper_limits: needs an sm_90 device (wgmma), this is sm_%d%d\n",
                 major, minor);
    return 2;
  }
  std::printf("%s, %d multiprocessors, %.0f MHz\n", prop.name, sms, clock_khz / 1000.0);
  float* out = nullptr;
  LIMITS_CHECK(cudaMalloc(&out, 4096));
  for (int wg = 1; wg <= 4; ++wg) {
    tensor_row<128, true>(wg, sms, out);
    tensor_row<128, false>(wg, sms, out);
  }
  for (int wg = 1; wg <= 2; ++wg) {
    tensor_row<256, true>(wg, sms, out);
    tensor_row<256, false>(wg, sms, out);
  }
  for (const unsigned mib : {8u, 16u, 24u, 32u}) {
    const std::size_t bytes = std::size_t{mib} << 20;
    float4* buf = nullptr;
    LIMITS_CHECK(cudaMalloc(&buf, bytes));
    LIMITS_CHECK(cudaMemset(buf, 0, bytes));
    const int passes = 64;
    const auto n4 = static_cast<unsigned>(bytes / 16);
    const float ms = median_ms([&] { l2_read<<<4 * sms, 512>>>(buf, n4, passes, out); });
    std::printf("L2 read %2u MiB x %d  4 blocks of 512 per SM  %7.2f TB/s\n", mib, passes,
                static_cast<double>(bytes) * passes / ms / 1e9);
    LIMITS_CHECK(cudaFree(buf));
  }
  LIMITS_CHECK(cudaFree(out));
  return 0;
}
