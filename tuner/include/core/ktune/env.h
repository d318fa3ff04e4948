// Switches of the environment: measured behaviours a run can turn off for A/B comparisons
// (KTUNE_COMPILE_WARMUP, KTUNE_NVRTC_MINIMAL, KTUNE_OUT_OF_ORDER, KTUNE_STAGED_UPLOAD,
// KTUNE_WORKER_EARLY, ...; docs/cli.md).
#pragma once

#include <cstdlib>
#include <string_view>

namespace ktune {

// On unless the variable is set to "0".
inline bool env_switch(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string_view(v) != "0";
}

}  // namespace ktune
