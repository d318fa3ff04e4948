// The GPU's output checks and input fills as one NVRTC program (internal): its source for the
// element types a worker needs, the request that compiles it, and the CUBINs of the whole
// program that the build compiled for every architecture its NVRTC supports (embedded in the
// binary, so a worker's start does not wait on NVRTC for them). Nothing here needs CUDA's runtime:
// the build's generator of those CUBINs (tuner/backends/tools/embed_compare_cubins.cpp) shares this
// file.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/kernel.h"

namespace ktune::worker::compare_program {

// Which kernels a program holds: comparisons (and poison counts) of outputs of these types,
// fills of inputs of these types.
struct Needs {
  std::vector<ElemType> compared, filled;
  static Needs all();
};

// The program's source for `needs`: each kernel instantiated once, in a fixed order, so equal
// needs give an equal program.
std::string source(const Needs& needs);
// The NVRTC request that compiles source(needs) for `arch` ("sm_90").
CompileRequest request(const std::string& arch, const Needs& needs);

// Kernel names: the comparison of `type` (exact by size for integers, with a tolerance for
// floats), the count of elements of `size` bytes equal to a value, the fill of `type`.
std::string compare_name(ElemType type);
std::string count_name(std::size_t size);
std::string fill_name(ElemType type);
// "i8", "u8", ... "f64": the suffix of a type's fill kernel.
std::string type_tag(ElemType type);

// A CUBIN of source(Needs::all()) that the build compiled for `arch`.
struct EmbeddedCubin {
  std::string_view arch;
  std::string_view cubin;
};
// Defined in the generated compare_cubins.cpp: the CUBINs, and content_hash() of the source and
// NVRTC version they were compiled from (empty where the build could not compile them).
std::span<const EmbeddedCubin> embedded_cubins();
std::string_view embedded_source_hash();
// The key embedded_source_hash() is compared with: the hash of source(Needs::all()) and this
// process's NVRTC version.
std::string source_hash();
// The embedded CUBIN for `arch`, where the build made one from this very source; empty
// otherwise (the caller compiles with NVRTC).
std::string_view embedded_cubin(const std::string& arch);

}  // namespace ktune::worker::compare_program
