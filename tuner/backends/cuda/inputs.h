// Input data of the GPU worker (internal): a buffer filled from its init, by a distribution
// (random, normal, zipf, choice, iota, value) with a counter-based generator, so element i depends
// only on (seed, buffer, i) and inputs are the same in every worker; from a file; or by the
// kernel's generate function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ktune/kernel.h"

namespace ktune::worker {

// SplitMix64's finaliser: a well-mixed 64-bit value of x.
std::uint64_t mix(std::uint64_t x);

// Fills `count` elements of `type` at `data` as `init` says, on up to 16 threads; `stream`
// selects the random sequence (seed and buffer).
void fill(void* data, ElemType type, std::size_t count, const BufferInit& init,
          std::uint64_t stream);

// Fills an input buffer as its init says: a distribution (fill), a file or the kernel's
// generate function. Throws Error(kInput) naming the kernel and buffer.
void fill_input(void* data, const BufferSpec& spec, const BufferInit& init, std::size_t count,
                std::uint64_t stream, const KernelSpec& kernel, const Problem& problem);

// How the GPU makes an input the way fill() makes it on the host, bit for bit: for the kinds
// whose every step is integer arithmetic or one correctly rounded operation (random and uniform,
// iota, value). The GPU's kernel (DeviceCompare::fill) computes element i as
//   kValue:         the bytes of value_bits
//   kIota:          (T) i
//   kRandomFloat:   (T) (lo + width * u), u = (mix(stream ^ mix(i)) >> 11) * 2^-53, unfused
//   kRandomInteger: (T) (int_lo + (mix(stream ^ mix(i)) % span))
struct DeviceFill {
  enum Kind { kValue = 0, kIota = 1, kRandomFloat = 2, kRandomInteger = 3 };
  int kind = kValue;
  double lo = 0, width = 0;
  std::int64_t int_lo = 0;
  std::uint64_t span = 1;
  std::uint64_t value_bits = 0;  // kValue: the element (its first elem_size bytes)
};

// The rule for `init` in `type`, or nullopt where only the host makes it (normal and zipf use
// libm, whose results the GPU's need not match; choice; files; generate functions).
std::optional<DeviceFill> device_fill(ElemType type, const BufferInit& init);

}  // namespace ktune::worker
