// Input data of the GPU worker (inputs.h).
#include "backends/cuda/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>
#include <type_traits>
#include <vector>

#include "ktune/error.h"

namespace ktune::worker {

// Counter-based generator: the value of element i depends only on (seed, buffer, i), so
// inputs are the same in every worker and can be regenerated anywhere.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {

template <typename T>
void fill_typed(T* data, std::size_t begin, std::size_t end, const BufferInit& s,
                std::uint64_t stream) {
  for (std::size_t i = begin; i < end; ++i) {
    switch (s.kind) {
      case BufferInit::Kind::kIota:
        data[i] = static_cast<T>(i);
        break;
      case BufferInit::Kind::kValue:
        data[i] = static_cast<T>(s.value);
        break;
      default: {
        const std::uint64_t r = mix(stream ^ mix(i));
        if constexpr (std::is_floating_point_v<T>) {
          const double u = static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1)
          const double lo = s.has_range ? s.lo : -1.0, hi = s.has_range ? s.hi : 1.0;
          data[i] = static_cast<T>(lo + (hi - lo) * u);
        } else {
          // Integers in [lo, hi], never all zero: the default range is [-100, 100] ([0, 200]
          // for unsigned types).
          const double lo0 = s.has_range ? s.lo : (std::is_signed_v<T> ? -100.0 : 0.0);
          const double hi0 = s.has_range ? s.hi : (std::is_signed_v<T> ? 100.0 : 200.0);
          const auto lo = static_cast<std::int64_t>(std::ceil(lo0));
          const auto span =
              static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(hi0)) - lo + 1);
          data[i] = static_cast<T>(lo + static_cast<std::int64_t>(r % span));
        }
      }
    }
  }
}

}  // namespace

void read_exact(const std::string& path, void* data, std::size_t bytes, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kInput, fmt::format("{}: cannot read '{}'", what, path));
  in.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes));
  if (static_cast<std::size_t>(in.gcount()) != bytes)
    throw Error(ErrorKind::kInput,
                fmt::format("{}: '{}' holds {} bytes, {} needed", what, path, in.gcount(), bytes));
}

void fill(void* data, ElemType type, std::size_t count, const BufferInit& s, std::uint64_t stream) {
  if (s.kind == BufferInit::Kind::kFile) {
    read_exact(s.path, data, count * elem_size(type), "input data");
    return;
  }
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::size_t chunk = std::max<std::size_t>(1 << 20, (count + threads - 1) / threads);
  std::vector<std::thread> pool;
  for (std::size_t begin = 0; begin < count; begin += chunk) {
    const std::size_t end = std::min(count, begin + chunk);
    pool.emplace_back([=] {
      switch (type) {
        case ElemType::kI8:
          fill_typed(static_cast<std::int8_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kU8:
          fill_typed(static_cast<std::uint8_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kI16:
          fill_typed(static_cast<std::int16_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kU16:
          fill_typed(static_cast<std::uint16_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kI32:
          fill_typed(static_cast<std::int32_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kU32:
          fill_typed(static_cast<std::uint32_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kI64:
          fill_typed(static_cast<std::int64_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kU64:
          fill_typed(static_cast<std::uint64_t*>(data), begin, end, s, stream);
          break;
        case ElemType::kF32:
          fill_typed(static_cast<float*>(data), begin, end, s, stream);
          break;
        case ElemType::kF64:
          fill_typed(static_cast<double*>(data), begin, end, s, stream);
          break;
      }
    });
  }
  for (auto& t : pool) t.join();
}

}  // namespace ktune::worker
