// What the Optuna tests share: why Optuna cannot run here (empty when it can), and the
// convolution recording they replay.
#pragma once

#include <string>

#include "ktune/error.h"
#include "strategies/optuna/strategy.h"

namespace ktune::test {

// Empty when the embedded Python has Optuna; else why not (a test skips with it).
inline const std::string& optuna_missing() {
  static const std::string reason = [] {
    try {
      const std::string d = optuna::describe_python();
      return d.find(", Optuna ") == std::string::npos ? d : std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

inline const std::string& conv() {
  static const std::string path =
      std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz";
  return path;
}

}  // namespace ktune::test
