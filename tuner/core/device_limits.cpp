// DeviceLimits: the named limits, per-generation defaults, and architecture names.
#include "ktune/device_limits.h"

#include <cctype>
#include <string>

#include "ktune/error.h"

namespace ktune {

const std::array<std::pair<std::string_view, DeviceLimits::Field>, 14>& DeviceLimits::fields() {
  static const std::array<std::pair<std::string_view, Field>, 14> kFields{{
      {"max_threads_per_block", &DeviceLimits::max_threads_per_block},
      {"max_threads_per_multiprocessor", &DeviceLimits::max_threads_per_multiprocessor},
      {"max_shared_memory_per_block", &DeviceLimits::max_shared_memory_per_block},
      {"max_shared_memory_per_block_optin", &DeviceLimits::max_shared_memory_per_block_optin},
      {"max_registers_per_block", &DeviceLimits::max_registers_per_block},
      {"max_block_dim_x", &DeviceLimits::max_block_dim_x},
      {"max_block_dim_y", &DeviceLimits::max_block_dim_y},
      {"max_block_dim_z", &DeviceLimits::max_block_dim_z},
      {"max_grid_dim_x", &DeviceLimits::max_grid_dim_x},
      {"max_grid_dim_y", &DeviceLimits::max_grid_dim_y},
      {"max_grid_dim_z", &DeviceLimits::max_grid_dim_z},
      {"multiprocessor_count", &DeviceLimits::multiprocessor_count},
      {"warp_size", &DeviceLimits::warp_size},
      {"compute_capability", &DeviceLimits::compute_capability},
  }};
  return kFields;
}

Constants DeviceLimits::constants() const {
  Constants out;
  out.reserve(fields().size());
  for (const auto& [name, field] : fields())
    out.emplace_back(std::string(name), Value(this->*field));
  return out;
}

bool DeviceLimits::set(std::string_view name, std::int64_t value) {
  for (const auto& [n, field] : fields()) {
    if (n == name) {
      this->*field = value;
      return true;
    }
  }
  return false;
}

DeviceLimits DeviceLimits::for_arch(int cc) {
  DeviceLimits l;
  l.compute_capability = cc;
  if (cc >= 90) {
    l.max_shared_memory_per_block_optin = 227 * 1024;
    l.max_threads_per_multiprocessor = 2048;
    l.multiprocessor_count = 132;
  } else if (cc >= 89) {
    l.max_shared_memory_per_block_optin = 99 * 1024;
    l.max_threads_per_multiprocessor = 1536;
    l.multiprocessor_count = 128;
  } else if (cc >= 86) {
    l.max_shared_memory_per_block_optin = 99 * 1024;
    l.max_threads_per_multiprocessor = 1536;
    l.multiprocessor_count = 84;
  } else if (cc >= 80) {
    l.max_shared_memory_per_block_optin = 163 * 1024;
    l.max_threads_per_multiprocessor = 2048;
    l.multiprocessor_count = 108;
  } else if (cc >= 75) {
    l.max_shared_memory_per_block_optin = 64 * 1024;
    l.max_threads_per_multiprocessor = 1024;
    l.multiprocessor_count = 72;
  } else {
    l.max_shared_memory_per_block_optin = 96 * 1024;
    l.max_threads_per_multiprocessor = 2048;
    l.multiprocessor_count = 80;
  }
  return l;
}

std::optional<std::pair<int, int>> parse_arch(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_") return std::nullopt;
  std::size_t i = 3;
  int cc = 0;
  while (i < arch.size() && i < 7 && std::isdigit(static_cast<unsigned char>(arch[i]))) {
    cc = cc * 10 + (arch[i] - '0');
    ++i;
  }
  const bool suffix_ok =
      i == arch.size() || (i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f'));
  if (i - 3 < 2 || !suffix_ok) return std::nullopt;
  return std::make_pair(cc / 10, cc % 10);
}

int compute_capability_of(std::string_view arch) {
  const auto cc = parse_arch(arch);
  if (!cc)
    throw Error(ErrorKind::kUsage,
                "'" + std::string(arch) + "' is not an architecture; expected sm_NN, e.g. sm_90");
  return cc->first * 10 + cc->second;
}

}  // namespace ktune
