// Peer library calls for bench/peers/main.cpp (see peers.h).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <string>

#include "peers.h"

namespace ktune::peers {
namespace {

std::string cuda_error(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

std::string blas_error(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")";
}

// Sum of v over the block, for thread 0 (block a multiple of 32, at most 1024 threads).
__device__ int block_sum(int v) {
  __shared__ int warps[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0;
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

__device__ int word_sum(int4 w) { return w.x + w.y + w.z + w.w; }

// Four independent 16-byte loads in flight per thread per step, then the remainder.
__global__ void read_stream_kernel(const int4* __restrict__ in, std::size_t words, int* sink) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int acc = 0;
  for (; i + 3 * stride < words; i += 4 * stride) {
    const int4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    acc += word_sum(a) + word_sum(b) + word_sum(c) + word_sum(d);
  }
  for (; i < words; i += stride) acc += word_sum(in[i]);
  acc = block_sum(acc);
  if (threadIdx.x == 0) sink[blockIdx.x] = acc;
}

__global__ void copy_stream_kernel(int4* __restrict__ out, const int4* __restrict__ in,
                                   std::size_t words) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < words; i += 4 * stride) {
    const int4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    out[i] = a;
    out[i + stride] = b;
    out[i + 2 * stride] = c;
    out[i + 3 * stride] = d;
  }
  for (; i < words; i += stride) out[i] = in[i];
}

// x <- x * a + b with a = 1 - 2^-20, b = 2^-20: every chain stays in [0, 2) and never
// reaches -1, the value that would make a thread write.
__global__ void fma_kernel(float* sink, int iterations, float a, float b) {
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = float(threadIdx.x % 7) * 0.125f + float(c) * 0.01f;
  // 32 steps unrolled: 256 FFMAs to each loop's three counting and branching instructions.
  for (int i = 0; i < iterations; i += 32) {
#pragma unroll
    for (int k = 0; k < 32; ++k) {
#pragma unroll
      for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], a, b);
    }
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) s += x[c];
  if (s == -1.0f) sink[std::size_t(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

std::string launch_error(const char* what) { return cuda_error(cudaGetLastError(), what); }

}  // namespace

std::string read_stream(const void* in, std::size_t bytes, int grid, int block, int* sink) {
  read_stream_kernel<<<grid, block>>>(static_cast<const int4*>(in), bytes / 16, sink);
  return launch_error("read_stream_kernel");
}

std::string copy_stream(void* dst, const void* src, std::size_t bytes, int grid, int block) {
  copy_stream_kernel<<<grid, block>>>(static_cast<int4*>(dst), static_cast<const int4*>(src),
                                      bytes / 16);
  return launch_error("copy_stream_kernel");
}

std::string fma_loop(float* sink, int grid, int block, int iterations) {
  const float step = 1.0f / (1 << 20);
  fma_kernel<<<grid, block>>>(sink, iterations, 1.0f - step, step);
  return launch_error("fma_kernel");
}

double fma_flops(int grid, int block, int iterations) {
  return 2.0 * kFmaChains * double(grid) * double(block) * double(iterations);
}

std::string memcpy_d2d(void* dst, const void* src, std::size_t bytes) {
  return cuda_error(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0),
                    "cudaMemcpyAsync");
}

CubSum::CubSum(const std::int32_t* in, std::int32_t* out, std::int64_t n)
    : in_(in), out_(out), n_(n) {
  error_ = cuda_error(cub::DeviceReduce::Sum(nullptr, temp_bytes_, in_, out_, n_),
                      "cub::DeviceReduce::Sum (size query)");
  if (error_.empty()) error_ = cuda_error(cudaMalloc(&temp_, temp_bytes_), "cudaMalloc (CUB)");
}

CubSum::~CubSum() {
  if (temp_) cudaFree(temp_);
}

std::string CubSum::run() {
  if (!error_.empty()) return error_;
  return cuda_error(cub::DeviceReduce::Sum(temp_, temp_bytes_, in_, out_, n_),
                    "cub::DeviceReduce::Sum");
}

Blas::Blas(bool tf32) {
  cublasHandle_t h = nullptr;
  error_ = blas_error(cublasCreate(&h), "cublasCreate");
  if (!error_.empty()) return;
  handle_ = h;
  error_ =
      blas_error(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH),
                 "cublasSetMathMode");
}

Blas::~Blas() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

std::string Blas::transpose(const float* in, float* out, int rows, int cols) {
  if (!error_.empty()) return error_;
  // Column-major view: `in` is a cols x rows matrix (ld cols), `out` a rows x cols one (ld rows);
  // out = 1 * in^T + 0 * out, with out as B too (allowed in place for op(B) = N, ldb = ldc).
  const float one = 1.0f, zero = 0.0f;
  return blas_error(cublasSgeam(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N,
                                rows, cols, &one, in, cols, &zero, out, rows, out, rows),
                    "cublasSgeam");
}

std::string Blas::sgemm(const float* a, const float* b, float* c, int m, int n, int k) {
  if (!error_.empty()) return error_;
  // Row-major C = A B is column-major C^T = B^T A^T: an n x m result from B^T (n x k, ld n)
  // and A^T (k x m, ld k).
  const float one = 1.0f, zero = 0.0f;
  return blas_error(cublasSgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, n,
                                m, k, &one, b, n, a, k, &zero, c, n),
                    "cublasSgemm");
}

std::string Blas::sgemm_tf32(const float* a, const float* b, float* c, int m, int n, int k) {
  if (!error_.empty()) return error_;
  const float one = 1.0f, zero = 0.0f;  // as sgemm: column-major C^T = B^T A^T
  return blas_error(cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, n,
                                 m, k, &one, b, CUDA_R_32F, n, a, CUDA_R_32F, k, &zero, c,
                                 CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmEx (TF32)");
}

std::string Blas::version() const {
  int v = 0;
  if (!handle_ ||
      cublasGetVersion(static_cast<cublasHandle_t>(handle_), &v) != CUBLAS_STATUS_SUCCESS)
    return "unknown";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

EventTimer::~EventTimer() {
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

std::vector<double> EventTimer::time(const std::function<std::string()>& launch, int count,
                                     std::string& error) {
  while (events_.size() < 2 * static_cast<std::size_t>(count)) {
    cudaEvent_t e = nullptr;
    if (!(error = cuda_error(cudaEventCreate(&e), "cudaEventCreate")).empty()) return {};
    events_.push_back(e);
  }
  const auto event = [&](int i) { return static_cast<cudaEvent_t>(events_[i]); };
  for (int i = 0; i < count; ++i) {
    cudaEventRecord(event(2 * i), 0);
    if (!(error = launch()).empty()) return {};
    cudaEventRecord(event(2 * i + 1), 0);
  }
  if (!(error = cuda_error(cudaEventSynchronize(event(2 * count - 1)), "timed runs")).empty())
    return {};
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    float t = 0;
    if (!(error = cuda_error(cudaEventElapsedTime(&t, event(2 * i), event(2 * i + 1)),
                             "cudaEventElapsedTime"))
             .empty())
      return {};
    ms.push_back(t);
  }
  return ms;
}

std::string last_error() {
  std::string e = cuda_error(cudaGetLastError(), "launch");
  if (e.empty()) e = cuda_error(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return e;
}

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}

void device_free(void* p) {
  if (p) cudaFree(p);
}

bool copy_to_host(void* host, const void* device, std::size_t bytes) {
  return cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
}

}  // namespace ktune::peers
