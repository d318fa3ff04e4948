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

// Allocations of at least this many bytes are mappings of their own, asked to be backed by huge
// pages (2 MiB on x86-64): the first touch of a 1 GiB input in 4 KiB pages is 262,144 page faults,
// most of what made copy's inputs and reference take 0.6 s of the worker's start.
// KTUNE_HUGE_PAGES=0 keeps the mappings but asks for no huge pages.
constexpr std::size_t kLargeAllocation = std::size_t{32} << 20;
void* allocate_large(std::size_t bytes);  // throws std::bad_alloc
void free_large(void* p, std::size_t bytes) noexcept;

// An allocator whose value-less construct leaves the element uninitialised, so that resize()
// of a vector of bytes costs no pass over the memory; large blocks come from allocate_large.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n * sizeof(T) >= kLargeAllocation) return static_cast<T*>(allocate_large(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kLargeAllocation) return free_large(p, n * sizeof(T));
    std::allocator<T>::deallocate(p, n);
  }
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
