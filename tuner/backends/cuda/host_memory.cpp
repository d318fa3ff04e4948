// Host memory of the GPU worker (host_memory.h).
#include "backends/cuda/host_memory.h"

#include <algorithm>
#include <cstring>
#include <thread>

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
