// A .npy file as NumPy writes it, for tests of file inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace ktune::test {

// A .npy file as NumPy writes it (format 1.0, header padded to 64 bytes): `descr` such as
// "<f4", `shape` such as "(2, 3)".
inline void write_npy(const std::filesystem::path& path, const std::string& descr,
                      const std::string& shape, const void* data, std::size_t bytes,
                      bool fortran = false) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

}  // namespace ktune::test
