// Output checks on the GPU (device_compare.h).
#include "backends/cuda/device_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>

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
#define KTUNE_FLOAT(NAME, T) \
  extern "C" __global__ void NAME(const T* got, const T* want, u64 n, int aligned, \
                                  double abs_tol, double rel_tol, u64* result) { \
    count_bad(got, want, n, aligned, result, [=](T g, T w) { \
      const double gd = g, wd = w; \
      return !isfinite(gd) || fabs(gd - wd) > abs_tol + rel_tol * fabs(wd); \
    }); \
  }
#define KTUNE_COUNT(NAME, T) \
  extern "C" __global__ void NAME(const T* data, u64 n, T value, int aligned, u64* result) { \
    count_bad(data, data, n, aligned, result, [=](T g, T) { return g == value; }); \
  }
__device__ u64 ktune_mix(u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// The host's fill (inputs.cpp, DeviceFill) element by element: the same integer mixing, the
// same conversions (round to nearest), and lo + width * u without fusing the two operations.
template <typename T, bool kFloat>
__device__ void fill_elems(T* data, u64 n, u64 stream, int kind, double lo, double width,
                           long long int_lo, u64 span, T value) {
  const u64 start = blockIdx.x * (u64)blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = start; i < n; i += stride) {
    T v = value;
    if (kind == 1) {
      v = (T)i;
    } else if (kind >= 2) {
      const u64 r = ktune_mix(stream ^ ktune_mix(i));
      if (kFloat)
        v = (T)__dadd_rn(lo, __dmul_rn(width, (double)(r >> 11) * 0x1.0p-53));
      else
        v = (T)(int_lo + (long long)(r % span));
    }
    data[i] = v;
  }
}
// The program's entry for NVRTC's name lookup, whatever else it holds.
extern "C" __global__ void ktune_compare_entry() {}
#define KTUNE_FILL(NAME, T, F) \
  extern "C" __global__ void NAME(T* data, u64 n, u64 stream, int kind, double lo, double width, \
                                  long long int_lo, u64 span, T value) { \
    fill_elems<T, F>(data, n, stream, kind, lo, width, int_lo, span, value); \
  }
)";

// The unsigned type of each element size, which exact comparisons and counts use.
const char* bits_type(std::size_t size) {
  return size == 1   ? "unsigned char"
         : size == 2 ? "unsigned short"
         : size == 4 ? "unsigned int"
                     : "u64";
}

// The comparison kernel of elements of `type`: exact by size for integers, with a tolerance for
// floats.
std::string compare_name(ElemType type) {
  if (type == ElemType::kF32) return "ktune_compare_f32";
  if (type == ElemType::kF64) return "ktune_compare_f64";
  return fmt::format("ktune_compare_exact{}", elem_size(type));
}

std::string count_name(std::size_t size) { return fmt::format("ktune_count_equal{}", size); }

std::string fill_name(ElemType type) {
  return fmt::format("ktune_fill_{}", DeviceCompare::type_tag(type));
}

// Each element type's fill-kernel suffix and the C type the kernel writes.
struct TypeName {
  ElemType type;
  const char* tag;
  const char* c_type;
};
constexpr TypeName kTypeNames[] = {
    {ElemType::kI8, "i8", "signed char"}, {ElemType::kU8, "u8", "unsigned char"},
    {ElemType::kI16, "i16", "short"},     {ElemType::kU16, "u16", "unsigned short"},
    {ElemType::kI32, "i32", "int"},       {ElemType::kU32, "u32", "unsigned int"},
    {ElemType::kI64, "i64", "long long"}, {ElemType::kU64, "u64", "u64"},
    {ElemType::kF32, "f32", "float"},     {ElemType::kF64, "f64", "double"},
};

const TypeName& type_name(ElemType type) {
  for (const TypeName& n : kTypeNames)
    if (n.type == type) return n;
  throw Error(ErrorKind::kInternal, "no element type " + std::to_string(static_cast<int>(type)));
}

}  // namespace

std::string DeviceCompare::type_tag(ElemType type) { return type_name(type).tag; }

std::string DeviceCompare::source(const Needs& needs) {
  // Each kernel instantiated once, in a fixed order, so equal needs give an equal program (one
  // compile-cache entry).
  std::set<std::string> lines;
  for (ElemType t : needs.compared) {
    if (is_float(t))
      lines.insert(fmt::format("KTUNE_FLOAT({}, {})", compare_name(t),
                               t == ElemType::kF32 ? "float" : "double"));
    else
      lines.insert(fmt::format("KTUNE_EXACT({}, {})", compare_name(t), bits_type(elem_size(t))));
    lines.insert(
        fmt::format("KTUNE_COUNT({}, {})", count_name(elem_size(t)), bits_type(elem_size(t))));
  }
  for (ElemType t : needs.filled)
    lines.insert(fmt::format("KTUNE_FILL({}, {}, {})", fill_name(t), type_name(t).c_type,
                             is_float(t) ? "true" : "false"));
  std::string out = kSource;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

DeviceCompare::Needs DeviceCompare::Needs::all() {
  Needs n;
  for (const TypeName& t : kTypeNames) {
    n.compared.push_back(t.type);
    n.filled.push_back(t.type);
  }
  return n;
}

CompileResult DeviceCompare::compile(const std::string& arch, const Needs& needs) {
  CompileRequest request;
  request.source = source(needs);
  request.source_name = "ktune_compare.cu";
  request.entry = "ktune_compare_entry";  // the other kernels are found by name
  request.arch = arch;
  request.options = {"-std=c++17", "--gpu-architecture=" + arch};
  CompileCache cache(CompileCache::default_dir());
  return compile_cached(request, &cache);
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
