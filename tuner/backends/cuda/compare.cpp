// Output checks of the GPU worker (compare.h).
#include "backends/cuda/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cuda/host_memory.h"

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
  std::vector<Mismatch> parts(kMaxSlices);
  const std::size_t count = parallel_slices(
      n, std::size_t{1} << 20, [&](std::size_t p, std::size_t begin, std::size_t end) {
        parts[p] = compare_range(type, got, want, begin, end, abs_tol, rel_tol);
        parts[p].first += begin;
      });
  parts.resize(count);
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

namespace {

template <typename Word>
bool contains_word(const unsigned char* data, std::size_t n, unsigned char byte) {
  Word pattern;
  std::memset(&pattern, byte, sizeof(Word));
  std::atomic<bool> found{false};
  parallel_slices(n, std::size_t{1} << 22, [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end && !found.load(std::memory_order_relaxed);) {
      const std::size_t stop = std::min(end, i + 4096);  // look at `found` every 4096 elements
      bool hit = false;
      for (; i < stop; ++i) {
        Word w;
        std::memcpy(&w, data + i * sizeof(Word), sizeof(Word));
        hit |= w == pattern;
      }
      if (hit) found = true;
    }
  });
  return found;
}

}  // namespace

bool contains_pattern(std::span<const unsigned char> data, std::size_t elem, unsigned char byte) {
  if (elem == 0) return false;
  const std::size_t n = data.size() / elem;
  switch (elem) {
    case 1:
      return contains_word<std::uint8_t>(data.data(), n, byte);
    case 2:
      return contains_word<std::uint16_t>(data.data(), n, byte);
    case 4:
      return contains_word<std::uint32_t>(data.data(), n, byte);
    case 8:
      return contains_word<std::uint64_t>(data.data(), n, byte);
    default:
      for (std::size_t i = 0; i < n; ++i)
        if (std::all_of(data.begin() + i * elem, data.begin() + (i + 1) * elem,
                        [byte](unsigned char c) { return c == byte; }))
          return true;
      return false;
  }
}

}  // namespace ktune::worker
