// Buffer contents from files (ktune/data_file.h).
#include "ktune/data_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ktune/error.h"
#include "ktune/input_file.h"

namespace ktune {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& why) {
  throw Error(ErrorKind::kInput, fmt::format("{}: file '{}': {}", what, path, why));
}

// The value after 'key': in the header dict, up to the next top-level comma or brace.
std::string dict_value(const std::string& header, const std::string& key) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) return {};
  auto pos = header.find(':', k);
  if (pos == std::string::npos) return {};
  ++pos;
  int depth = 0;
  std::string out;
  for (; pos < header.size(); ++pos) {
    const char c = header[pos];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    if (c != ' ' && c != '\'') out += c;
  }
  return out;
}

std::vector<std::uint64_t> parse_shape(const std::string& text, const std::string& what,
                                       const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    fail(what, path, fmt::format(".npy header: bad shape '{}'", text));
  std::vector<std::uint64_t> shape;
  std::size_t pos = 1;
  while (pos < text.size() - 1) {
    const auto comma = std::min(text.find(',', pos), text.size() - 1);
    const std::string item = text.substr(pos, comma - pos);
    if (!item.empty()) {
      if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 18)
        fail(what, path, fmt::format(".npy header: bad shape '{}'", text));
      shape.push_back(std::stoull(item));
    }
    pos = comma + 1;
  }
  return shape;
}

DataFile parse_npy(std::ifstream& in, const std::string& path, const std::string& what) {
  char version[2];
  if (!in.read(version, 2)) fail(what, path, "truncated .npy header");
  std::uint32_t header_len = 0;
  unsigned char len[4] = {};
  const int len_bytes = version[0] == 1 ? 2 : 4;
  if (version[0] < 1 || version[0] > 3) fail(what, path, ".npy version not 1, 2 or 3");
  if (!in.read(reinterpret_cast<char*>(len), len_bytes)) fail(what, path, "truncated .npy header");
  for (int i = len_bytes - 1; i >= 0; --i) header_len = header_len * 256 + len[i];
  if (header_len > (1u << 20)) fail(what, path, ".npy header too long");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(what, path, "truncated .npy header");
  DataFile f;
  f.npy = true;
  f.data_offset = 6 + 2 + len_bytes + header_len;
  f.dtype = dict_value(header, "descr");
  if (f.dtype.empty()) fail(what, path, ".npy header has no 'descr'");
  f.shape = parse_shape(dict_value(header, "shape"), what, path);
  if (dict_value(header, "fortran_order") == "True" && f.shape.size() > 1)
    fail(what, path,
         "a Fortran-order array; save it in C order (numpy.ascontiguousarray) so elements are "
         "in the order the buffer has them");
  f.elements = 1;
  for (auto d : f.shape)
    if (__builtin_mul_overflow(f.elements, d, &f.elements))
      fail(what, path,
           fmt::format(".npy header: shape ({}) holds more than 2^64 elements",
                       fmt::join(f.shape, ", ")));
  return f;
}

}  // namespace

std::string npy_dtype(ElemType type) {
  const char order =
      elem_size(type) == 1 ? '|' : (std::endian::native == std::endian::little ? '<' : '>');
  const char kind = is_float(type) ? 'f'
                    : (type == ElemType::kI8 || type == ElemType::kI16 || type == ElemType::kI32 ||
                       type == ElemType::kI64)
                        ? 'i'
                        : 'u';
  return fmt::format("{}{}{}", order, kind, elem_size(type));
}

DataFile inspect_data_file(const std::string& path, ElemType type, const std::string& what) {
  std::error_code ec;
  check_input_file(path, what + ": file", std::numeric_limits<std::uint64_t>::max());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(what, path, "cannot be read");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(what, path, ec.message());
  char magic[6] = {};
  if (in.read(magic, 6) && std::memcmp(magic, "\x93NUMPY", 6) == 0) {
    DataFile f = parse_npy(in, path, what);
    if (size < f.data_offset) fail(what, path, "truncated .npy file");
    return f;
  }
  DataFile f;
  const std::size_t esize = elem_size(type);
  if (size % esize != 0)
    fail(what, path,
         fmt::format("{} bytes is not a whole number of {} elements ({} bytes each)", size,
                     to_string(type), esize));
  f.elements = size / esize;
  f.shape = {f.elements};
  return f;
}

DataFile check_data_file(const std::string& path, ElemType type, std::size_t count,
                         const std::string& what) {
  const DataFile f = inspect_data_file(path, type, what);
  if (f.npy) {
    std::string want = npy_dtype(type);
    std::string have = f.dtype;
    // One-byte types carry no byte order: "|u1", "<u1" and "u1" are the same.
    if (elem_size(type) == 1 && have.size() == 3 && (have[0] == '<' || have[0] == '>'))
      have[0] = '|';
    if (have != want)
      fail(what, path,
           fmt::format("holds dtype '{}' but the buffer is {} ('{}')", f.dtype, to_string(type),
                       want));
  }
  if (f.elements != count)
    fail(what, path,
         fmt::format("holds {} elements{} but the buffer has {}", f.elements,
                     f.npy ? fmt::format(" (shape ({}))", fmt::join(f.shape, ", ")) : "", count));
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (f.npy && size < f.data_offset + f.elements * elem_size(type))
    fail(what, path, "truncated .npy file: fewer bytes than its shape needs");
  return f;
}

void read_data_file(const std::string& path, ElemType type, std::size_t count, void* out,
                    const std::string& what) {
  const DataFile f = check_data_file(path, type, count, what);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(f.data_offset));
  if (!in.read(static_cast<char*>(out), static_cast<std::streamsize>(count * elem_size(type))))
    fail(what, path, "read failed");
}

}  // namespace ktune
