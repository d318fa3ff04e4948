// libFuzzer target: buffer data files (file(PATH), docs/plugins.md): any bytes as a .npy or raw
// file, inspected for each element type; one that fits a buffer of its element count (up to 2^20
// elements) is read into it.
#include <vector>

#include "fuzz_common.h"
#include "ktune/data_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  const std::string path = fuzz::write_input("fuzz.npy", data, size);
  for (const ElemType type : {ElemType::kF32, ElemType::kU8, ElemType::kI64, ElemType::kF64}) {
    fuzz::refusals_allowed([&] {
      const DataFile f = inspect_data_file(path, type, "buffer fuzz");
      if (f.elements > (1u << 20)) return;
      std::vector<unsigned char> out(f.elements * elem_size(type));
      read_data_file(path, type, f.elements, out.data(), "buffer fuzz");
    });
  }
  return 0;
}
