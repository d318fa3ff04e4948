// The peer libraries ktune's kernels are compared with (bench/peers/README.md): thin wrappers,
// compiled by nvcc (CUB is a header library of device code), called from the C++20 driver.
// Every function enqueues on the legacy default stream and returns a CUDA error string, or an
// empty string on success.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ktune::peers {

// cudaMemcpyAsync device to device of `bytes`.
std::string memcpy_d2d(void* dst, const void* src, std::size_t bytes);

// CUB DeviceReduce::Sum over n int32 values into *out (device); keeps its temporary storage.
class CubSum {
 public:
  CubSum(const std::int32_t* in, std::int32_t* out, std::int64_t n);
  ~CubSum();
  CubSum(const CubSum&) = delete;
  CubSum& operator=(const CubSum&) = delete;
  std::string run();
  const std::string& error() const { return error_; }

 private:
  const std::int32_t* in_;
  std::int32_t* out_;
  std::int64_t n_;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
  std::string error_;
};

// cuBLAS, one handle; math mode pedantic (no TF32, no tensor-core shortcuts for fp32), or
// with `tf32` the default math mode, for sgemm_tf32.
class Blas {
 public:
  explicit Blas(bool tf32 = false);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  const std::string& error() const { return error_; }
  // out (cols x rows, row-major) = transpose of in (rows x cols, row-major): cublasSgeam.
  std::string transpose(const float* in, float* out, int rows, int cols);
  // c (m x n) = a (m x k) b (k x n), all row-major: cublasSgemm computing c^T = b^T a^T.
  std::string sgemm(const float* a, const float* b, float* c, int m, int n, int k);
  // The same product on the tensor cores in TF32 with fp32 accumulation: cublasGemmEx with
  // CUBLAS_COMPUTE_32F_FAST_TF32 (needs a handle made with tf32).
  std::string sgemm_tf32(const float* a, const float* b, float* c, int m, int n, int k);
  std::string version() const;

 private:
  void* handle_ = nullptr;
  std::string error_;
};

// Timing on the legacy default stream with CUDA events, the way ktune's worker times a kernel:
// the runs are queued back to back, each between its own pair of events, and waited for once,
// so no sample contains the time the CPU took to submit its launch (a few microseconds, which a
// wait after every run would leave inside each short sample while the GPU idles).
class EventTimer {
 public:
  EventTimer() = default;
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  // Milliseconds of each of `count` runs of `launch` (which returns an error string, empty on
  // success); empty with `error` set on a launch's error or a CUDA error.
  std::vector<double> time(const std::function<std::string()>& launch, int count,
                           std::string& error);

 private:
  std::vector<void*> events_;
};

// The device's own limits (bench/peers/README.md, "Ceilings"): kernels of peers.cu, each
// enqueued on the legacy default stream with the grid and block given.
// Streaming read: a grid-stride sum of the 16-byte words of `bytes` at `in` (bytes a multiple
// of 16), each block writing its sum once to sink[blockIdx.x] (sink holds `grid` ints).
std::string read_stream(const void* in, std::size_t bytes, int grid, int block, int* sink);
// Streaming copy: a grid-stride copy of the 16-byte words of `bytes` (a multiple of 16).
std::string copy_stream(void* dst, const void* src, std::size_t bytes, int grid, int block);
// Register-only FP32 FMA loop: every thread runs `iterations` (a multiple of 32) steps of
// kFmaChains independent fmaf chains; sink (grid * block floats) is written only by a thread whose
// result is a value the chains never reach, so nothing is optimised away. FLOPs: fma_flops(grid,
// block, iterations).
constexpr int kFmaChains = 8;
std::string fma_loop(float* sink, int grid, int block, int iterations);
double fma_flops(int grid, int block, int iterations);

std::string last_error();  // cudaGetLastError + cudaDeviceSynchronize, as a string ("" if none)
void* device_alloc(std::size_t bytes);  // nullptr on failure
void device_free(void* p);
bool copy_to_host(void* host, const void* device, std::size_t bytes);

}  // namespace ktune::peers
