// Output checks of the GPU worker (internal): every element compared with the reference, exact
// for integers and within a tolerance for floats (NaN and Inf never pass), and the poison
// patterns that tell an unwritten element from a computed one.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ktune/kernel.h"

namespace ktune::worker {

// Result of comparing one output buffer with its reference.
struct Mismatch {
  std::size_t count = 0;
  std::size_t first = 0;
  std::string got, expected;
};

// Every element compared, large buffers in slices on up to 16 threads; the first mismatch is
// the lowest index.
Mismatch compare(ElemType type, const void* got, const void* want, std::size_t n, double abs_tol,
                 double rel_tol);

// Whether some element of `data` (elements of `elem` bytes) has every byte equal to `byte`: an
// element equal to the poison would pass unwritten, so such buffers are checked a second time
// with another pattern.
bool contains_pattern(std::span<const unsigned char> data, std::size_t elem, unsigned char byte);

constexpr unsigned char kPoison = 0xFF;  // int -1, float NaN
constexpr unsigned char kPoison2 = 0x5A;

}  // namespace ktune::worker
