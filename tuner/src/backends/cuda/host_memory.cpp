// Host memory of the GPU worker (host_memory.h).
#include "backends/cuda/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>

#include "ktune/env.h"

namespace ktune::worker {

std::size_t parallel_slices(std::size_t n, std::size_t min_slice,
                            const std::function<void(std::size_t, std::size_t, std::size_t)>& fn) {
  const std::size_t threads =
      std::max(1u, std::min<unsigned>(kMaxSlices, std::thread::hardware_concurrency()));
  const std::size_t slice = std::max<std::size_t>({min_slice, 1, (n + threads - 1) / threads});
  const std::size_t count = n == 0 ? 0 : (n + slice - 1) / slice;
  if (count <= 1) {
    if (count == 1) fn(0, 0, n);
    return count;
  }
  std::vector<std::thread> pool;
  pool.reserve(count);
  for (std::size_t p = 0; p < count; ++p)
    pool.emplace_back([&fn, p, slice, n] { fn(p, p * slice, std::min(n, (p + 1) * slice)); });
  for (auto& t : pool) t.join();
  return count;
}

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
std::size_t round_up(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

// A mapping of whole huge pages at a huge-page boundary: one huge page more is mapped and the
// unaligned head and tail are given back, so free_large unmaps exactly what it was given.
void* allocate_large(std::size_t bytes) {
  const std::size_t size = round_up(bytes);
  void* raw =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) munmap(raw, aligned - base);
  const std::uintptr_t end = base + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  void* p = reinterpret_cast<void*>(aligned);
  static const bool huge = env_switch("KTUNE_HUGE_PAGES");
  if (huge) madvise(p, size, MADV_HUGEPAGE);  // advice: without it (or THP off) 4 KiB pages
  return p;
}

void free_large(void* p, std::size_t bytes) noexcept { munmap(p, round_up(bytes)); }

namespace {
constexpr std::size_t kByteSlice = std::size_t{8} << 20;  // below 8 MiB a thread costs more
}  // namespace

void parallel_copy(void* dst, const void* src, std::size_t bytes) {
  parallel_slices(bytes, kByteSlice, [&](std::size_t, std::size_t begin, std::size_t end) {
    std::memcpy(static_cast<unsigned char*>(dst) + begin,
                static_cast<const unsigned char*>(src) + begin, end - begin);
  });
}

void parallel_set(void* dst, unsigned char byte, std::size_t bytes) {
  parallel_slices(bytes, kByteSlice, [&](std::size_t, std::size_t begin, std::size_t end) {
    std::memset(static_cast<unsigned char*>(dst) + begin, byte, end - begin);
  });
}

}  // namespace ktune::worker
