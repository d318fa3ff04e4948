// The comparison and fill program's source (compare_program.h).
#include "backends/cuda/compare_program.h"

#include <fmt/format.h>

#include <set>

#include "ktune/error.h"
#include "ktune/hash.h"

namespace ktune::worker::compare_program {

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

// The unsigned type of each element size, which exact comparisons and counts use.
const char* bits_type(std::size_t size) {
  return size == 1   ? "unsigned char"
         : size == 2 ? "unsigned short"
         : size == 4 ? "unsigned int"
                     : "u64";
}

}  // namespace

std::string type_tag(ElemType type) { return type_name(type).tag; }

std::string compare_name(ElemType type) {
  if (type == ElemType::kF32) return "ktune_compare_f32";
  if (type == ElemType::kF64) return "ktune_compare_f64";
  return fmt::format("ktune_compare_exact{}", elem_size(type));
}

std::string count_name(std::size_t size) { return fmt::format("ktune_count_equal{}", size); }

std::string fill_name(ElemType type) { return fmt::format("ktune_fill_{}", type_tag(type)); }

Needs Needs::all() {
  Needs n;
  for (const TypeName& t : kTypeNames) {
    n.compared.push_back(t.type);
    n.filled.push_back(t.type);
  }
  return n;
}

std::string source(const Needs& needs) {
  std::set<std::string> lines;
  for (ElemType t : needs.compared) {
    if (is_float(t))
      lines.insert(fmt::format("KTUNE_FLOAT({}, {})", compare_name(t), type_name(t).c_type));
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

CompileRequest request(const std::string& arch, const Needs& needs) {
  CompileRequest r;
  r.source = source(needs);
  r.source_name = "ktune_compare.cu";
  r.entry = "ktune_compare_entry";  // the other kernels are found by name
  r.arch = arch;
  r.options = {"-std=c++17", "--gpu-architecture=" + arch};
  return r;
}

std::string source_hash() { return Hasher().add(source(Needs::all())).add(nvrtc_version()).hex(); }

}  // namespace ktune::worker::compare_program
