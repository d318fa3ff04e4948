// Host memory of the GPU worker (internal): byte buffers that are not zeroed when they grow, and
// the work on large ones (fills, copies, scans) in slices on up to 16 threads. A 1 GiB input, its
// reference and its upload took 2.4 s of a worker's start on one thread; the pages of a buffer
// are touched first by the threads that fill it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace ktune::worker {

// An allocator whose value-less construct leaves the element uninitialised, so that resize()
// of a vector of bytes costs no pass over the memory.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Bytes whose resize() leaves new elements undefined: whoever grows one writes it.
using HostBytes = std::vector<unsigned char, DefaultInitAllocator<unsigned char>>;

constexpr std::size_t kMaxSlices = 16;

// Calls fn(slice, begin, end) for the slices of [0, n), each at least `min_slice` long, at most
// kMaxSlices (or the machine's threads), on their own threads; a range of one slice runs on the
// caller's. Returns the number of slices.
std::size_t parallel_slices(std::size_t n, std::size_t min_slice,
                            const std::function<void(std::size_t, std::size_t, std::size_t)>& fn);

// memcpy and memset of large buffers, sliced as above.
void parallel_copy(void* dst, const void* src, std::size_t bytes);
void parallel_set(void* dst, unsigned char byte, std::size_t bytes);

}  // namespace ktune::worker
