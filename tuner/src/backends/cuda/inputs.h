// Input data of the GPU worker (internal): a buffer filled from its init (random, iota, value)
// with a counter-based generator, so element i depends only on (seed, buffer, i) and inputs are
// the same in every worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ktune/kernel.h"

namespace ktune::worker {

// SplitMix64's finaliser: a well-mixed 64-bit value of x.
std::uint64_t mix(std::uint64_t x);

// Fills `count` elements of `type` at `data` as `init` says, on up to 16 threads; `stream`
// selects the random sequence (seed and buffer). file(path) reads the file's first bytes;
// throws Error(kInput) naming the file when it cannot be read or is too short.
void fill(void* data, ElemType type, std::size_t count, const BufferInit& init,
          std::uint64_t stream);

// Reads exactly `bytes` bytes of the file at `path` into `data`; `what` names it in the error.
void read_exact(const std::string& path, void* data, std::size_t bytes, const std::string& what);

}  // namespace ktune::worker
