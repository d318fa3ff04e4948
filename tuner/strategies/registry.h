// The table behind make_strategy(): each family of strategies adds its entries from its own
// file, so the registry stays explicit (no static constructors) and families stay apart.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ktune/strategy.h"

namespace ktune {

struct StrategyEntry {
  std::string name;     // --strategy value
  std::string summary;  // one line for --help and docs
  std::function<std::unique_ptr<Strategy>()> make;
  StrategyTraits traits;
};

// strategies.cpp: brute_force, random.
void add_basic_strategies(std::vector<StrategyEntry>& table);
// strategies_native.cpp: local searches and evolutionary strategies on the space's neighbours.
void add_native_strategies(std::vector<StrategyEntry>& table);
// optuna_strategies.cpp: Optuna's samplers through embedded CPython.
void add_optuna_strategies(std::vector<StrategyEntry>& table);

const std::vector<StrategyEntry>& strategy_table();

}  // namespace ktune
