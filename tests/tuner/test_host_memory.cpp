// The GPU worker's host-side work on large buffers (backends/cuda/host_memory.h, compare.h):
// slices cover a range once, copies and fills of many slices match memcpy and memset, a grown
// HostBytes keeps what it had, and the poison scan and the host comparison find an element in
// any slice, at any element size, the lowest index first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "backends/cuda/compare.h"
#include "backends/cuda/host_memory.h"

namespace ktune::worker {
namespace {

TEST(HostMemory, SlicesCoverTheRangeOnceInOrder) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{999}, std::size_t{1} << 20,
                        (std::size_t{1} << 22) + 3}) {
    std::mutex m;
    std::set<std::pair<std::size_t, std::size_t>> ranges;
    std::set<std::size_t> ids;
    const std::size_t count =
        parallel_slices(n, 1000, [&](std::size_t p, std::size_t b, std::size_t e) {
          std::lock_guard lock(m);
          ranges.insert({b, e});
          ids.insert(p);
        });
    EXPECT_EQ(count, ranges.size()) << n;
    EXPECT_LE(count, kMaxSlices);
    EXPECT_EQ(ids.size(), count);
    std::size_t next = 0;
    for (const auto& [b, e] : ranges) {
      EXPECT_EQ(b, next) << n;
      EXPECT_LT(b, e);
      next = e;
    }
    EXPECT_EQ(next, n);
    if (n >= 2000) {
      EXPECT_GE(count, std::min<std::size_t>(2, n / 1000)) << "one slice of " << n;
    }
  }
}

TEST(HostMemory, CopyAndSetOfManySlicesMatchMemcpyAndMemset) {
  const std::size_t bytes = (std::size_t{40} << 20) + 7;  // five slices and a ragged end
  HostBytes src(bytes), dst(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    src[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
  parallel_copy(dst.data(), src.data(), bytes);
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), bytes), 0);
  parallel_set(dst.data() + 5, 0xA5, bytes - 10);
  EXPECT_EQ(dst[4], src[4]);
  EXPECT_EQ(dst[bytes - 5], src[bytes - 5]);
  for (std::size_t i : {std::size_t{5}, std::size_t{8} << 20, bytes / 2, bytes - 6})
    EXPECT_EQ(dst[i], 0xA5) << i;
  EXPECT_EQ(std::count(dst.begin() + 5, dst.end() - 5, 0xA5), static_cast<long>(bytes - 10));
}

TEST(HostMemory, GrownBytesKeepWhatTheyHad) {
  HostBytes b(3, 7);  // a value given is written
  EXPECT_EQ(b, HostBytes({7, 7, 7}));
  b.resize(1 << 20);
  EXPECT_EQ(b[0], 7);
  EXPECT_EQ(b[2], 7);
  b.assign(4, 0);
  EXPECT_EQ(b, HostBytes({0, 0, 0, 0}));
}

// One element of all-`byte` bytes at index `at` of n elements of `elem` bytes; the other bytes
// are 0-6, never a pattern.
HostBytes with_pattern_at(std::size_t n, std::size_t elem, std::size_t at, unsigned char byte) {
  HostBytes d(n * elem);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<unsigned char>(i % 7);
  if (at < n) std::memset(d.data() + at * elem, byte, elem);
  return d;
}

TEST(HostMemory, ThePoisonIsFoundInAnySliceAtAnyElementSize) {
  const std::size_t n = (std::size_t{1} << 23) + 5;  // several slices of 2^22 elements
  for (std::size_t elem : {1, 2, 4, 8}) {
    for (std::size_t at : {std::size_t{0}, std::size_t{1} << 22, n - 1}) {
      const HostBytes d = with_pattern_at(n, elem, at, kPoison);
      EXPECT_TRUE(contains_pattern(d, elem, kPoison)) << elem << " at " << at;
      EXPECT_FALSE(contains_pattern(d, elem, kPoison2)) << elem;
    }
    EXPECT_FALSE(contains_pattern(with_pattern_at(n, elem, n, kPoison), elem, kPoison)) << elem;
  }
  // Bytes of a pattern split over two elements are no element of the pattern.
  HostBytes split(16, 0);
  std::memset(split.data() + 2, kPoison, 4);
  EXPECT_FALSE(contains_pattern(split, 4, kPoison));
  EXPECT_TRUE(contains_pattern(split, 2, kPoison));
  EXPECT_TRUE(contains_pattern(split, 1, kPoison));
  // Odd element sizes, and a tail shorter than an element, which is not an element.
  HostBytes odd(12, 0);
  std::memset(odd.data() + 3, kPoison, 3);
  EXPECT_TRUE(contains_pattern(odd, 3, kPoison));
  EXPECT_FALSE(contains_pattern(odd, 6, kPoison));
  HostBytes tail(10, 0);
  std::memset(tail.data() + 8, kPoison, 2);
  EXPECT_FALSE(contains_pattern(tail, 4, kPoison));
  EXPECT_FALSE(contains_pattern(HostBytes{}, 4, kPoison));
}

TEST(HostMemory, TheHostComparisonGivesTheLowestMismatchOfAllSlices) {
  const std::size_t n = (std::size_t{1} << 22) + 11;
  std::vector<float> want(n), got;
  std::iota(want.begin(), want.end(), 0.0f);
  got = want;
  EXPECT_EQ(compare(ElemType::kF32, got.data(), want.data(), n, 0, 0).count, 0u);
  got[n - 1] = -1;
  got[(std::size_t{1} << 21) + 3] = -2;
  got[(std::size_t{3} << 20) + 1] = std::nanf("");
  const Mismatch m = compare(ElemType::kF32, got.data(), want.data(), n, 0, 0);
  EXPECT_EQ(m.count, 3u);
  EXPECT_EQ(m.first, (std::size_t{1} << 21) + 3);
  EXPECT_EQ(m.got, "-2");
}

}  // namespace
}  // namespace ktune::worker
