// ktune's CUBINs of `matmul` (fp32, no tensor cores) beside cuBLAS SGEMM, outside ktune: for
// trying a change of the kernel on a few configurations, or profiling one launch of each with
// Nsight Compute, on exactly the machine code ktune would run (docs/kernels-matmul.md, "matmul":
// the measurements made with it). Not built by CMake; on a host with a GPU, for example:
//
//   ktune compile matmul --arch sm_90 --set variant=3,block_m=128,block_n=256,... -o best.cubin
//       (prints the entry's lowered name, the block and the shared memory)
//   nvcc -O3 -std=c++17 -o sgemm_cubins bench/peers/sgemm_cubins.cu -lcublas -lcuda
//   ./sgemm_cubins SIZE RUNS NAME=CUBIN:ENTRY:BLOCK_M:BLOCK_N:THREADS_X:THREADS_Y:SHARED ...
//   ./sgemm_cubins SIZE 0 ...      one launch of each, nothing timed (for ncu -k regex:...)
//
// The product is SIZE^3 (A and B filled with hashed values in [-1, 1), row-major), cuBLAS's
// `cublasSgemm` in pedantic math (no TF32) as the reference: every element of each kernel's C is
// compared with it (|difference| <= 5e-3, the kernel's tolerance; equal elements counted). Then
// three passes, each the median of RUNS event-timed launches (after 3 warm-up ones) of cuBLAS
// and of every kernel in turn, with the ratio cuBLAS time / kernel time.
//
// Exit status: 0 when every output verifies, 1 on a CUDA error or bad arguments, 2 on a wrong
// output.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__global__ void fill(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = (x & 0xffffff) / 8388608.0f - 1.0f;
  }
}

struct Kernel {
  std::string name;
  CUfunction function{};
  unsigned block_m = 0, block_n = 0, threads_x = 0, threads_y = 0, shared = 0;
};

// NAME=CUBIN:ENTRY:BLOCK_M:BLOCK_N:THREADS_X:THREADS_Y:SHARED
bool parse(const std::string& arg, Kernel& k) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos) return false;
  k.name = arg.substr(0, eq);
  std::vector<std::string> f;
  for (size_t at = eq + 1;;) {
    const size_t colon = arg.find(':', at);
    f.push_back(arg.substr(at, colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  if (f.size() != 7) return false;
  CUmodule module;
  if (cuModuleLoad(&module, f[0].c_str()) != CUDA_SUCCESS ||
      cuModuleGetFunction(&k.function, module, f[1].c_str()) != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: cannot load entry %s of %s\n", k.name.c_str(), f[1].c_str(),
                 f[0].c_str());
    std::exit(1);
  }
  k.block_m = std::stoul(f[2]);
  k.block_n = std::stoul(f[3]);
  k.threads_x = std::stoul(f[4]);
  k.threads_y = std::stoul(f[5]);
  k.shared = std::stoul(f[6]);
  cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.shared);
  return k.block_m && k.block_n && k.threads_x && k.threads_y;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SIZE RUNS NAME=CUBIN:ENTRY:BLOCK_M:BLOCK_N:TX:TY:SHARED ...\n",
                 argv[0]);
    return 1;
  }
  unsigned m = std::stoul(argv[1]), n = m, k = m;
  const int runs = std::atoi(argv[2]);
  check(cudaFree(nullptr), "context");
  std::vector<Kernel> kernels(argc - 3);
  for (int i = 3; i < argc; ++i) {
    if (!parse(argv[i], kernels[i - 3])) {
      std::fprintf(stderr, "bad kernel argument: %s\n", argv[i]);
      return 1;
    }
  }
  float *a, *b, *c, *d;
  check(cudaMalloc(&a, 4ull * m * k), "cudaMalloc");
  check(cudaMalloc(&b, 4ull * k * n), "cudaMalloc");
  check(cudaMalloc(&c, 4ull * m * n), "cudaMalloc");
  check(cudaMalloc(&d, 4ull * m * n), "cudaMalloc");
  fill<<<1024, 256>>>(a, size_t(m) * k, 1);
  fill<<<1024, 256>>>(b, size_t(k) * n, 2);
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  const float one = 1, zero = 0;
  // Row-major C = A B is column-major C^T = B^T A^T.
  const auto peer = [&] {
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, d, n);
  };
  const auto launch = [&](const Kernel& x) {
    void* args[] = {&a, &b, &c, &m, &n, &k};
    if (cuLaunchKernel(x.function, (n + x.block_n - 1) / x.block_n, (m + x.block_m - 1) / x.block_m,
                       1, x.threads_x, x.threads_y, 1, x.shared, nullptr, args,
                       nullptr) != CUDA_SUCCESS) {
      std::fprintf(stderr, "%s: launch failed\n", x.name.c_str());
      std::exit(1);
    }
  };
  peer();
  check(cudaDeviceSynchronize(), "cuBLAS");
  if (runs == 0) {  // one launch each, for a profiler
    for (const Kernel& x : kernels) launch(x);
    check(cudaDeviceSynchronize(), "kernels");
    return 0;
  }

  int status = 0;
  std::vector<float> mine(size_t(m) * n), ref(size_t(m) * n);
  check(cudaMemcpy(ref.data(), d, 4ull * m * n, cudaMemcpyDeviceToHost), "copy back");
  for (const Kernel& x : kernels) {
    check(cudaMemset(c, 0xff, 4ull * m * n), "poison");  // NaNs where nothing is written
    launch(x);
    check(cudaDeviceSynchronize(), x.name.c_str());
    check(cudaMemcpy(mine.data(), c, 4ull * m * n, cudaMemcpyDeviceToHost), "copy back");
    double worst = 0;
    size_t differ = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      const double e = std::fabs(double(mine[i]) - ref[i]);
      if (!(e <= worst)) worst = e;  // a NaN stays
      differ += mine[i] != ref[i];
    }
    const bool ok = worst <= 5e-3;
    std::printf("%-12s %u^3: largest difference from cuBLAS %.3g, %zu of %zu elements differ%s\n",
                x.name.c_str(), m, worst, differ, mine.size(), ok ? "" : "  WRONG");
    if (!ok) status = 2;
  }

  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const auto median = [&](auto f) {
    for (int i = 0; i < 3; ++i) f();
    std::vector<float> t;
    for (int i = 0; i < runs; ++i) {
      cudaEventRecord(start);
      f();
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms;
      cudaEventElapsedTime(&ms, start, stop);
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const double flop = 2.0 * m * n * k;
  for (int pass = 0; pass < 3; ++pass) {
    const float tp = median(peer);
    std::printf("pass %d %u^3: cuBLAS %.4f ms (%.1f TFLOP/s)", pass, m, tp, flop / tp * 1e-9);
    for (const Kernel& x : kernels) {
      const float t = median([&] { launch(x); });
      std::printf(" | %s %.4f ms (%.3f)", x.name.c_str(), t, tp / t);
    }
    std::printf("\n");
  }
  check(cudaGetLastError(), "timing");
  return status;
}
