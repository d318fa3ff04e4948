// Input data of the GPU worker (inputs.h).
#include "backends/cuda/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/host_memory.h"
#include "ktune/data_file.h"
#include "ktune/error.h"

namespace ktune::worker {

// Counter-based generator: the value of element i depends only on (seed, buffer, i), so
// inputs are the same in every worker and can be regenerated anywhere.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {

// A uniform double in [0, 1) from 53 bits of r.
double unit(std::uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

// The k-th random word of element i: distributions that need more than one draw per element
// (normal, zipf's rejection) take them from this sequence.
std::uint64_t draw(std::uint64_t stream, std::size_t i, std::uint64_t k) {
  return mix(stream ^ mix(i) ^ mix(k * 0x632be59bd9b4e019ull));
}

template <typename T>
T clamp_to(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (std::isnan(v)) return T{0};
    return static_cast<T>(std::clamp(std::round(v), lo, hi));
  }
}

// Zipf over ranks 1..n by rejection-inversion (Hoermann and Derflinger 1996, as in Apache
// Commons' RejectionInversionZipfSampler): O(1) per element for any n and exponent s > 0.
class Zipf {
 public:
  Zipf(double s, double n) : s_(s), n_(n) {
    h_x1_ = big_h(1.5) - 1.0;
    h_n_ = big_h(n_ + 0.5);
    cut_ = 2.0 - big_h_inverse(big_h(2.5) - h(2.0));
  }
  double sample(std::uint64_t stream, std::size_t i) const {
    for (std::uint64_t k = 0;; ++k) {
      const double u = h_n_ + unit(draw(stream, i, k)) * (h_x1_ - h_n_);
      const double x = big_h_inverse(u);
      const double r = std::clamp(std::floor(x + 0.5), 1.0, n_);
      if (r - x <= cut_ || u >= big_h(r + 0.5) - h(r)) return r;
    }
  }

 private:
  static double log1p_over(double x) {  // log(1 + x) / x
    return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
  }
  static double expm1_over(double x) {  // (exp(x) - 1) / x
    return std::abs(x) > 1e-8 ? std::expm1(x) / x
                              : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
  }
  double h(double x) const { return std::exp(-s_ * std::log(x)); }
  double big_h(double x) const {
    const double lx = std::log(x);
    return expm1_over((1.0 - s_) * lx) * lx;
  }
  double big_h_inverse(double x) const {
    double t = x * (1.0 - s_);
    if (t < -1.0) t = -1.0;
    return std::exp(log1p_over(t) * x);
  }
  double s_, n_, h_x1_ = 0, h_n_ = 0, cut_ = 0;
};

// The largest rank zipf(s) without n may give in T (kept below 2^53 so ranks stay exact).
template <typename T>
double type_span() {
  if constexpr (std::is_floating_point_v<T>)
    return 0x1p53;
  else
    return std::min(0x1p53, static_cast<double>(std::numeric_limits<T>::max()) + 1.0);
}

// The range of a random integer buffer: lo + r % span. Integers in [lo, hi], never all zero: the
// default range is [-100, 100] ([0, 200] for unsigned types).
struct IntRange {
  std::int64_t lo;
  std::uint64_t span;
};

IntRange int_range(const BufferInit& s, bool is_signed) {
  const double lo0 = s.has_range ? s.lo : (is_signed ? -100.0 : 0.0);
  const double hi0 = s.has_range ? s.hi : (is_signed ? 100.0 : 200.0);
  const auto lo = static_cast<std::int64_t>(std::ceil(lo0));
  return {lo, static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(hi0)) - lo + 1)};
}

// Floats in [lo, lo + width): the default range is [-1, 1).
std::pair<double, double> float_range(const BufferInit& s) {
  const double lo = s.has_range ? s.lo : -1.0, hi = s.has_range ? s.hi : 1.0;
  return {lo, hi - lo};
}

template <typename T>
T random_value(const BufferInit& s, std::uint64_t r) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto [lo, width] = float_range(s);
    return static_cast<T>(lo + width * unit(r));
  } else {
    const IntRange range = int_range(s, std::is_signed_v<T>);
    return static_cast<T>(range.lo + static_cast<std::int64_t>(r % range.span));
  }
}

template <typename T>
T normal_value(const BufferInit& s, std::uint64_t stream, std::size_t i) {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const double u1 = 1.0 - unit(draw(stream, i, 0)), u2 = unit(draw(stream, i, 1));
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return clamp_to<T>(s.value + s.spread * z);
}

template <typename T>
void fill_typed(T* data, std::size_t begin, std::size_t end, const BufferInit& s,
                std::uint64_t stream) {
  std::optional<Zipf> zipf;
  if (s.kind == BufferInit::Kind::kZipf)
    zipf.emplace(s.value, s.spread > 0 ? std::min(s.spread, type_span<T>()) : type_span<T>());
  for (std::size_t i = begin; i < end; ++i) {
    switch (s.kind) {
      case BufferInit::Kind::kIota:
        data[i] = static_cast<T>(i);
        break;
      case BufferInit::Kind::kValue:
        data[i] = static_cast<T>(s.value);
        break;
      case BufferInit::Kind::kNormal:
        data[i] = normal_value<T>(s, stream, i);
        break;
      case BufferInit::Kind::kZipf:
        data[i] = clamp_to<T>(zipf->sample(stream, i) - 1.0);  // ranks from 0
        break;
      case BufferInit::Kind::kChoice:
        data[i] = clamp_to<T>(s.choices[mix(stream ^ mix(i)) % s.choices.size()]);
        break;
      default:
        data[i] = random_value<T>(s, mix(stream ^ mix(i)));
    }
  }
}

}  // namespace

void fill(void* data, ElemType type, std::size_t count, const BufferInit& s, std::uint64_t stream) {
  parallel_slices(count, std::size_t{1} << 20,
                  [&](std::size_t, std::size_t begin, std::size_t end) {
                    switch (type) {
                      case ElemType::kI8:
                        fill_typed(static_cast<std::int8_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kU8:
                        fill_typed(static_cast<std::uint8_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kI16:
                        fill_typed(static_cast<std::int16_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kU16:
                        fill_typed(static_cast<std::uint16_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kI32:
                        fill_typed(static_cast<std::int32_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kU32:
                        fill_typed(static_cast<std::uint32_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kI64:
                        fill_typed(static_cast<std::int64_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kU64:
                        fill_typed(static_cast<std::uint64_t*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kF32:
                        fill_typed(static_cast<float*>(data), begin, end, s, stream);
                        break;
                      case ElemType::kF64:
                        fill_typed(static_cast<double*>(data), begin, end, s, stream);
                        break;
                    }
                  });
}

namespace {

void generate(void* data, const BufferSpec& spec, const BufferInit& init, std::size_t count,
              std::uint64_t stream, const KernelSpec& kernel, const Problem& problem) {
  if (kernel.generate == nullptr)
    throw Error(ErrorKind::kInput,
                fmt::format("{}: buffer '{}': init '{}' but the kernel has no generate function",
                            kernel.name, spec.name, spec.init));
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  std::vector<std::int64_t> values;
  for (const auto& [n, v] : problem) {
    names.push_back(n);
    values.push_back(v);
  }
  for (const auto& n : names) name_ptrs.push_back(n.c_str());
  const ktune_generate_ctx ctx{sizeof(ktune_generate_ctx),
                               names.size(),
                               name_ptrs.data(),
                               values.data(),
                               spec.name.c_str(),
                               static_cast<int>(spec.type),
                               count,
                               data,
                               stream,
                               init.text.c_str(),
                               kernel.user_data};
  char error[1024] = {0};
  if (kernel.generate(&ctx, error, sizeof(error)) != 0)
    throw Error(ErrorKind::kInput,
                fmt::format("{}: buffer '{}': generate failed: {}", kernel.name, spec.name, error));
}

}  // namespace

void fill_input(void* data, const BufferSpec& spec, const BufferInit& init, std::size_t count,
                std::uint64_t stream, const KernelSpec& kernel, const Problem& problem) {
  switch (init.kind) {
    case BufferInit::Kind::kFile:
      read_data_file(init.text, spec.type, count, data,
                     fmt::format("{}: buffer '{}'", kernel.name, spec.name));
      return;
    case BufferInit::Kind::kGenerator:
      generate(data, spec, init, count, stream, kernel, problem);
      return;
    default:
      fill(data, spec.type, count, init, stream);
  }
}

std::optional<DeviceFill> device_fill(ElemType type, const BufferInit& init) {
  DeviceFill f;
  switch (init.kind) {
    case BufferInit::Kind::kValue: {
      // The element as the host converts it, whatever the type.
      f.kind = DeviceFill::kValue;
      fill(&f.value_bits, type, 1, init, 0);
      return f;
    }
    case BufferInit::Kind::kIota:
      f.kind = DeviceFill::kIota;
      return f;
    case BufferInit::Kind::kRandom:
      if (is_float(type)) {
        f.kind = DeviceFill::kRandomFloat;
        std::tie(f.lo, f.width) = float_range(init);
      } else {
        f.kind = DeviceFill::kRandomInteger;
        const bool is_signed = type == ElemType::kI8 || type == ElemType::kI16 ||
                               type == ElemType::kI32 || type == ElemType::kI64;
        const IntRange range = int_range(init, is_signed);
        f.int_lo = range.lo;
        f.span = range.span;
      }
      return f;
    default:
      return std::nullopt;  // normal and zipf (libm), choice, files, generators: the host's
  }
}

}  // namespace ktune::worker
