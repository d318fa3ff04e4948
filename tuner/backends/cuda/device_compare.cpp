// Output checks on the GPU (device_compare.h).
#include "backends/cuda/device_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "backends/cuda/worker.h"
#include "ktune/compiler.h"
#include "ktune/error.h"

namespace ktune::worker {

// Here rather than in compare_program.cpp, which the generator of the embedded CUBINs links
// before they exist. Of the CUBINs of the same major version, the highest minor one not above
// the GPU's (a CUBIN for 8.0 runs on 8.6 and 8.9, not on 9.0).
std::string_view compare_program::embedded_cubin(const std::string& arch) {
  static const bool current = embedded_source_hash() == source_hash();
  const auto number = [](std::string_view a) {
    int n = -1;
    if (a.starts_with("sm_")) std::from_chars(a.data() + 3, a.data() + a.size(), n);
    return n;
  };
  const int want = number(arch);
  if (!current || want < 0) return {};
  std::string_view best;
  int best_number = -1;
  for (const EmbeddedCubin& e : embedded_cubins()) {
    const int have = number(e.arch);
    if (have / 10 == want / 10 && have <= want && have > best_number) {
      best = e.cubin;
      best_number = have;
    }
  }
  return best;
}

using compare_program::compare_name;
using compare_program::count_name;
using compare_program::fill_name;

CompileResult DeviceCompare::compile(const std::string& arch, const Needs& needs) {
  // The build's CUBIN of every kernel for this architecture; NVRTC (the same bytes, compiled by
  // this process) where the build made none for it.
  if (const std::string_view cubin = compare_program::embedded_cubin(arch); !cubin.empty()) {
    CompileResult r;
    r.ok = true;
    r.cubin.assign(cubin);
    r.arch = arch;
    r.lowered_name = "ktune_compare_entry";
    return r;
  }
  return compile_needs(arch, needs);
}

CompileResult DeviceCompare::compile_needs(const std::string& arch, const Needs& needs) {
  CompileCache cache(CompileCache::default_dir());
  return compile_cached(compare_program::request(arch, needs), &cache);
}

DeviceCompare::DeviceCompare(const std::string& arch, cudaStream_t stream)
    : DeviceCompare(compile(arch, Needs::all()), stream) {}

DeviceCompare::DeviceCompare(const CompileResult& compiled, cudaStream_t stream) : stream_(stream) {
  if (!compiled.ok)
    throw Error(ErrorKind::kCompile,
                fmt::format("the GPU comparison kernels do not compile: {}\n{}", compiled.error,
                            compiled.log));
  check(cudaLibraryLoadData(&library_, compiled.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr,
                            0),
        "cudaLibraryLoadData(comparison kernels)");
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

cudaKernel_t DeviceCompare::find(const std::string& name) {
  auto it = kernels_.find(name);
  if (it != kernels_.end()) return it->second;
  cudaKernel_t kernel = nullptr;
  check(cudaLibraryGetKernel(&kernel, library_, name.c_str()), "cudaLibraryGetKernel(comparison)");
  kernels_.emplace(name, kernel);
  return kernel;
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
  const cudaKernel_t kernel = find(compare_name(type));
  if (type == ElemType::kF32 || type == ElemType::kF64) {
    void* a[] = {&got, &want, &count, &aligned, &abs_tol, &rel_tol, &result_};
    std::copy(std::begin(a), std::end(a), args);
  } else {
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

std::uint64_t DeviceCompare::count_equal(std::size_t elem, const void* data, std::size_t n,
                                         std::uint64_t value_bits) {
  check(cudaMemsetAsync(result_, 0, sizeof(unsigned long long), stream_), "count reset");
  check(cudaMemsetAsync(result_ + 1, 0xFF, sizeof(unsigned long long), stream_), "count reset");
  unsigned long long count = n;
  int aligned = reinterpret_cast<std::uintptr_t>(data) % 16 == 0 ? 1 : 0;
  // The value as an element of `elem` bytes, passed by address as the kernel's T argument.
  void* args[] = {&data, &count, &value_bits, &aligned, &result_};
  check(cudaLaunchKernel(static_cast<const void*>(find(count_name(elem))), dim3(blocks_), dim3(256),
                         args, 0, stream_),
        "cudaLaunchKernel(count)");
  unsigned long long summary[2] = {0, 0};
  check(cudaMemcpyAsync(summary, result_, sizeof(summary), cudaMemcpyDeviceToHost, stream_),
        "download of the count");
  check(cudaStreamSynchronize(stream_), "count");
  return summary[0];
}

void DeviceCompare::fill(ElemType type, void* data, std::size_t n, const DeviceFill& f,
                         std::uint64_t stream) {
  const cudaKernel_t kernel = find(fill_name(type));
  unsigned long long count = n, span = f.span;
  unsigned long long seed = stream;
  long long int_lo = f.int_lo;
  int kind = f.kind;
  double lo = f.lo, width = f.width;
  std::uint64_t value = f.value_bits;  // little-endian: its first bytes are the element
  void* args[] = {&data, &count, &seed, &kind, &lo, &width, &int_lo, &span, &value};
  check(cudaLaunchKernel(static_cast<const void*>(kernel), dim3(blocks_), dim3(256), args, 0,
                         stream_),
        "cudaLaunchKernel(fill)");
}

}  // namespace ktune::worker
