// Native strategies (simulated annealing, local searches, genetic algorithm): being written.
#include "strategy_registry.h"

namespace ktune {

void add_native_strategies(std::vector<StrategyEntry>&) {}

}  // namespace ktune
