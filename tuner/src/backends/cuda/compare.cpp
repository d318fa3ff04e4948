// Output checks of the GPU worker (compare.h).
#include "backends/cuda/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <type_traits>

namespace ktune::worker {

namespace {

template <typename T>
Mismatch compare_typed(const T* got, const T* want, std::size_t n, double abs_tol, double rel_tol) {
  Mismatch m;
  for (std::size_t i = 0; i < n; ++i) {
    bool bad;
    if constexpr (std::is_floating_point_v<T>) {
      // NaN and Inf never pass, even where the reference has them.
      bad = !std::isfinite(got[i]) ||
            std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])) >
                abs_tol + rel_tol * std::fabs(static_cast<double>(want[i]));
    } else {
      bad = got[i] != want[i];
    }
    if (bad) {
      if (m.count++ == 0) {
        m.first = i;
        m.got = fmt::format("{}", got[i]);
        m.expected = fmt::format("{}", want[i]);
      }
    }
  }
  return m;
}

Mismatch compare_range(ElemType type, const void* got, const void* want, std::size_t begin,
                       std::size_t end, double abs_tol, double rel_tol) {
  const std::size_t n = end - begin;
  switch (type) {
#define KTUNE_COMPARE(KIND, T)                                                                    \
  case ElemType::KIND:                                                                            \
    return compare_typed(static_cast<const T*>(got) + begin, static_cast<const T*>(want) + begin, \
                         n, abs_tol, rel_tol);
    KTUNE_COMPARE(kI8, std::int8_t)
    KTUNE_COMPARE(kU8, std::uint8_t)
    KTUNE_COMPARE(kI16, std::int16_t)
    KTUNE_COMPARE(kU16, std::uint16_t)
    KTUNE_COMPARE(kI32, std::int32_t)
    KTUNE_COMPARE(kU32, std::uint32_t)
    KTUNE_COMPARE(kI64, std::int64_t)
    KTUNE_COMPARE(kU64, std::uint64_t)
    KTUNE_COMPARE(kF32, float)
    KTUNE_COMPARE(kF64, double)
#undef KTUNE_COMPARE
  }
  return {};
}

}  // namespace

// Every element is compared; large buffers in slices on up to 16 threads (a 2^28-element output
// is checked in tens of milliseconds, not a second). The first mismatch is the lowest index.
Mismatch compare(ElemType type, const void* got, const void* want, std::size_t n, double abs_tol,
                 double rel_tol) {
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::size_t slice = std::max<std::size_t>(1 << 20, (n + threads - 1) / threads);
  if (n <= slice) return compare_range(type, got, want, 0, n, abs_tol, rel_tol);
  std::vector<Mismatch> parts((n + slice - 1) / slice);
  std::vector<std::thread> pool;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    pool.emplace_back([&, p] {
      const std::size_t begin = p * slice;
      parts[p] =
          compare_range(type, got, want, begin, std::min(n, begin + slice), abs_tol, rel_tol);
      parts[p].first += begin;
    });
  }
  for (auto& t : pool) t.join();
  Mismatch m;
  for (auto& part : parts) {
    if (part.count == 0) continue;
    if (m.count == 0) {
      m.first = part.first;
      m.got = std::move(part.got);
      m.expected = std::move(part.expected);
    }
    m.count += part.count;
  }
  return m;
}

bool contains_pattern(const std::vector<unsigned char>& data, std::size_t elem,
                      unsigned char byte) {
  for (std::size_t i = 0; i + elem <= data.size(); i += elem) {
    bool all = true;
    for (std::size_t k = 0; k < elem && all; ++k) all = data[i + k] == byte;
    if (all) return true;
  }
  return false;
}

}  // namespace ktune::worker
