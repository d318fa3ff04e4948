// Output checks on the GPU (internal): an output buffer compared with its reference where both
// live, in device memory, by a kernel the build compiled (or NVRTC, once per worker); only a
// summary comes back (how many elements differ and the first that does), so verifying a 1 GiB
// output costs a pass over device memory instead of a download and a host comparison. The semantics
// are the host comparison's (compare.h): integers exact, floats within abs + rel * |expected| with
// NaN and Inf never passing. The same program makes inputs on the GPU (fill) and counts the
// elements of a reference that equal the poison (count_equal), so a reference made on the GPU stays
// there.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/compare_program.h"
#include "backends/cuda/inputs.h"
#include "ktune/compiler.h"
#include "ktune/kernel.h"

namespace ktune::worker {

class DeviceCompare {
 public:
  // Compiles every kernel for the current device's architecture (through the compile cache);
  // throws Error(kCompile) when NVRTC cannot, which leaves the host path to serve.
  DeviceCompare(const std::string& arch, cudaStream_t stream);
  // The same from what compile() returned (compiled on another thread while the context was
  // being created); throws Error(kCompile) when it failed.
  DeviceCompare(const CompileResult& compiled, cudaStream_t stream);
  // Which kernels a program holds (compare_program.h); a worker compiles what its buffers need
  // where it compiles at all.
  using Needs = compare_program::Needs;
  static std::string source(const Needs& needs) { return compare_program::source(needs); }
  // The kernels for `arch`: the build's CUBIN of all of them (compare_program::embedded_cubin),
  // else (an architecture the build made none for) compile_needs(); not loaded. Tests call both
  // without a GPU.
  static CompileResult compile(const std::string& arch, const Needs& needs = Needs::all());
  // NVRTC's compilation of the kernels `needs` names, through the compile cache.
  static CompileResult compile_needs(const std::string& arch, const Needs& needs);
  ~DeviceCompare();
  DeviceCompare(const DeviceCompare&) = delete;
  DeviceCompare& operator=(const DeviceCompare&) = delete;

  struct Summary {
    std::uint64_t count = 0;  // elements that differ
    std::uint64_t first = 0;  // the lowest index that differs (when count > 0)
  };
  // Compares `n` elements of `type` at `got` with `want` (both device pointers) and waits for
  // the answer (16 bytes).
  Summary compare(ElemType type, const void* got, const void* want, std::size_t n, double abs_tol,
                  double rel_tol);
  // How many of the `n` elements of `elem` bytes at `data` (device) equal the first `elem` bytes
  // of value_bits; waits for the answer.
  std::uint64_t count_equal(std::size_t elem, const void* data, std::size_t n,
                            std::uint64_t value_bits);
  // Enqueues the filling of `n` elements of `type` at `data` (device) by rule `f` from random
  // sequence `stream`: the values fill() makes on the host, bit for bit (inputs.h).
  void fill(ElemType type, void* data, std::size_t n, const DeviceFill& f, std::uint64_t stream);

 private:
  cudaStream_t stream_;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t find(const std::string& name);  // by name, found on first use
  std::map<std::string, cudaKernel_t> kernels_;
  unsigned long long* result_ = nullptr;  // device: count, first
  int blocks_ = 1;
};

}  // namespace ktune::worker
