// Factories of the native strategies; strategies_native.cpp puts them in the registry table.
#pragma once

#include <memory>

#include "ktune/strategy.h"

namespace ktune::native {

// Local searches on the space's valid neighbours (native_local_search.cpp).
enum class LocalSearchKind {
  kMultiStart,        // "mls": best-improvement hill climbing from random starts
  kGreedyMultiStart,  // "greedy_mls": first-improvement hill climbing from random starts
  kGreedyIterated,    // "greedy_ils": first-improvement hill climbing, perturbed local optima
};
std::unique_ptr<Strategy> make_local_search(LocalSearchKind kind);
// Simulated annealing (native_annealing.cpp).
std::unique_ptr<Strategy> make_annealing();
// Genetic algorithm (native_genetic.cpp).
std::unique_ptr<Strategy> make_genetic_algorithm();
// Bayesian optimisation, then another native strategy from its best (bayes.cpp).
std::unique_ptr<Strategy> make_bayes();

}  // namespace ktune::native
