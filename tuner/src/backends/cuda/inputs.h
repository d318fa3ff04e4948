// Input data of the GPU worker (internal): a buffer filled from its init, by a distribution
// (random, normal, zipf, choice, iota, value) with a counter-based generator, so element i depends
// only on (seed, buffer, i) and inputs are the same in every worker; from a file; or by the
// kernel's generate function.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace ktune::worker
