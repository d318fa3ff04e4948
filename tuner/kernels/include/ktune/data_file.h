// Buffer contents from files: raw binary (the buffer's elements, native byte order, nothing else)
// or NumPy .npy (C order; its dtype and element count are checked against the buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/kernel.h"

namespace ktune {

struct DataFile {
  bool npy = false;
  std::string dtype;                 // npy: the descr ("<f4"); raw: empty
  std::vector<std::uint64_t> shape;  // npy: the shape; raw: {elements}
  std::uint64_t elements = 0;        // raw: file size / element size of the buffer's type
  std::uint64_t data_offset = 0;     // where the elements start
};

// Reads a file's header (a .npy file is recognised by its magic, whatever its name). Throws
// Error(kInput) naming `what` (e.g. "buffer 'x'") and the path for a file that cannot be read,
// a malformed .npy header, or a raw file whose size is not a multiple of the element size.
DataFile inspect_data_file(const std::string& path, ElemType type, const std::string& what);

// Checks that the file holds exactly `count` elements of `type`; throws Error(kInput) saying
// what the file holds and what the buffer needs.
DataFile check_data_file(const std::string& path, ElemType type, std::size_t count,
                         const std::string& what);

// Reads `count` elements of `type` into `out`, after check_data_file.
void read_data_file(const std::string& path, ElemType type, std::size_t count, void* out,
                    const std::string& what);

// The .npy descr of a type ("<f4", "|u1" ...).
std::string npy_dtype(ElemType type);

}  // namespace ktune
