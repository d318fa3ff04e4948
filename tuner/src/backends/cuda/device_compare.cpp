// Output checks on the GPU (device_compare.h).
#include "backends/cuda/device_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/worker.h"
#include "ktune/compiler.h"
#include "ktune/error.h"

namespace ktune::worker {

namespace {

// One program: exact comparison by element size (integers: equal bits are equal values), and
// the tolerance comparison of fp32 and fp64. Where both buffers are 16-byte aligned the bulk is
// read in 16-byte words (several elements each, so the pass runs at memory speed), the rest one
// element at a time. Each warp counts its differences and the lowest differing index, then adds
// them to the result with one atomic each.
constexpr const char* kSource = R"(
typedef unsigned long long u64;
template <typename T, typename F>
__device__ void count_bad(const T* got, const T* want, u64 n, int aligned, u64* result, F bad) {
  constexpr int K = 16 / sizeof(T);
  union Word { uint4 v; T e[K]; };
  const u64 start = blockIdx.x * (u64)blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
  const u64 words = aligned ? n / K : 0;
  u64 count = 0, first = ~0ull;
  const uint4* g4 = reinterpret_cast<const uint4*>(got);
  const uint4* w4 = reinterpret_cast<const uint4*>(want);
#pragma unroll 2
  for (u64 i = start; i < words; i += stride) {
    Word g, w;
    g.v = __ldcs(g4 + i);
    w.v = __ldcs(w4 + i);
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (bad(g.e[k], w.e[k])) {
        if (count == 0) first = i * K + k;
        ++count;
      }
  }
  for (u64 i = words * K + start; i < n; i += stride) {
    if (bad(got[i], want[i])) {
      if (count == 0) first = i;
      ++count;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    count += __shfl_down_sync(0xffffffffu, count, offset);
    const u64 other = __shfl_down_sync(0xffffffffu, first, offset);
    first = other < first ? other : first;
  }
  if ((threadIdx.x & 31) == 0 && count > 0) {
    atomicAdd(&result[0], count);
    atomicMin(&result[1], first);
  }
}
#define KTUNE_EXACT(NAME, T) \
  extern "C" __global__ void NAME(const T* got, const T* want, u64 n, int aligned, u64* result) { \
    count_bad(got, want, n, aligned, result, [](T g, T w) { return g != w; }); \
  }
KTUNE_EXACT(ktune_compare_exact1, unsigned char)
KTUNE_EXACT(ktune_compare_exact2, unsigned short)
KTUNE_EXACT(ktune_compare_exact4, unsigned int)
KTUNE_EXACT(ktune_compare_exact8, u64)
#define KTUNE_FLOAT(NAME, T) \
  extern "C" __global__ void NAME(const T* got, const T* want, u64 n, int aligned, \
                                  double abs_tol, double rel_tol, u64* result) { \
    count_bad(got, want, n, aligned, result, [=](T g, T w) { \
      const double gd = g, wd = w; \
      return !isfinite(gd) || fabs(gd - wd) > abs_tol + rel_tol * fabs(wd); \
    }); \
  }
KTUNE_FLOAT(ktune_compare_f32, float)
KTUNE_FLOAT(ktune_compare_f64, double)
)";

constexpr const char* kNames[] = {"ktune_compare_exact1", "ktune_compare_exact2",
                                  "ktune_compare_exact4", "ktune_compare_exact8",
                                  "ktune_compare_f32",    "ktune_compare_f64"};

}  // namespace

CompileResult DeviceCompare::compile(const std::string& arch) {
  CompileRequest request;
  request.source = kSource;
  request.source_name = "ktune_compare.cu";
  request.entry = kNames[0];  // the program defines them all; each is found by name
  request.arch = arch;
  request.options = {"-std=c++17", "--gpu-architecture=" + arch};
  CompileCache cache(CompileCache::default_dir());
  return compile_cached(request, &cache);
}

DeviceCompare::DeviceCompare(const std::string& arch, cudaStream_t stream)
    : DeviceCompare(compile(arch), stream) {}

DeviceCompare::DeviceCompare(const CompileResult& compiled, cudaStream_t stream) : stream_(stream) {
  if (!compiled.ok)
    throw Error(ErrorKind::kCompile,
                fmt::format("the GPU comparison kernels do not compile: {}\n{}", compiled.error,
                            compiled.log));
  check(cudaLibraryLoadData(&library_, compiled.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr,
                            0),
        "cudaLibraryLoadData(comparison kernels)");
  for (int i = 0; i < 4; ++i)
    check(cudaLibraryGetKernel(&exact_[i], library_, kNames[i]), kNames[i]);
  check(cudaLibraryGetKernel(&f32_, library_, kNames[4]), kNames[4]);
  check(cudaLibraryGetKernel(&f64_, library_, kNames[5]), kNames[5]);
  check(cudaMalloc(reinterpret_cast<void**>(&result_), 2 * sizeof(unsigned long long)),
        "cudaMalloc(comparison result)");
  int device = 0, sms = 1;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  blocks_ = 8 * sms;  // a few resident blocks per multiprocessor stream the buffers at full speed
}

DeviceCompare::~DeviceCompare() {
  // The worker process releases its context when it exits; nothing here may throw.
  if (result_) cudaFree(result_);
  if (library_) cudaLibraryUnload(library_);
}

DeviceCompare::Summary DeviceCompare::compare(ElemType type, const void* got, const void* want,
                                              std::size_t n, double abs_tol, double rel_tol) {
  check(cudaMemsetAsync(result_, 0, sizeof(unsigned long long), stream_), "comparison reset");
  check(cudaMemsetAsync(result_ + 1, 0xFF, sizeof(unsigned long long), stream_),
        "comparison reset");
  unsigned long long count = n;
  int aligned = (reinterpret_cast<std::uintptr_t>(got) % 16 == 0 &&
                 reinterpret_cast<std::uintptr_t>(want) % 16 == 0)
                    ? 1
                    : 0;
  void* args[7];
  cudaKernel_t kernel = nullptr;
  if (type == ElemType::kF32 || type == ElemType::kF64) {
    kernel = type == ElemType::kF32 ? f32_ : f64_;
    void* a[] = {&got, &want, &count, &aligned, &abs_tol, &rel_tol, &result_};
    std::copy(std::begin(a), std::end(a), args);
  } else {
    const std::size_t size = elem_size(type);
    kernel = exact_[size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3];
    void* a[] = {&got, &want, &count, &aligned, &result_};
    std::copy(std::begin(a), std::end(a), args);
  }
  check(cudaLaunchKernel(static_cast<const void*>(kernel), dim3(blocks_), dim3(256), args, 0,
                         stream_),
        "cudaLaunchKernel(comparison)");
  unsigned long long summary[2] = {0, 0};
  check(cudaMemcpyAsync(summary, result_, sizeof(summary), cudaMemcpyDeviceToHost, stream_),
        "download of the comparison");
  check(cudaStreamSynchronize(stream_), "comparison");
  return {summary[0], summary[1]};
}

}  // namespace ktune::worker
