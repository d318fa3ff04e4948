// Factories of the native strategies; register.cpp puts them in the registry table.
#pragma once

#include <memory>

#include "ktune/strategy.h"

namespace ktune::native {

// Local searches on the space's valid neighbours (native_local_search.cpp).
enum class LocalSearchKind {
  kMultiStart,        // "mls": best-improvement hill climbing from random starts
  kGreedyMultiStart,  // "greedy_mls": first-improvement hill climbing from random starts
  kGreedyIterated,    // "greedy_ils": first-improvement hill climbing, perturbed local optima
  kOrderedGreedyMultiStart,  // "ordered_greedy_mls": greedy_mls, neighbours in parameter order
};
std::unique_ptr<Strategy> make_local_search(LocalSearchKind kind);
// Simulated annealing (native_annealing.cpp).
std::unique_ptr<Strategy> make_annealing();
// Genetic algorithm (native_genetic.cpp).
std::unique_ptr<Strategy> make_genetic_algorithm();
// Bayesian optimisation, then another native strategy from its best (bayes.cpp).
std::unique_ptr<Strategy> make_bayes();
// Kernel Tuner's sequential searches, run as coroutines (sequential.h): particle swarm and
// firefly (swarm.cpp), differential evolution (diff_evo.cpp), and scipy's minimize,
// basinhopping and dual_annealing (minimizers.cpp).
std::unique_ptr<Strategy> make_particle_swarm();
std::unique_ptr<Strategy> make_firefly();
std::unique_ptr<Strategy> make_differential_evolution();
std::unique_ptr<Strategy> make_minimize();
std::unique_ptr<Strategy> make_basinhopping();
std::unique_ptr<Strategy> make_dual_annealing();

}  // namespace ktune::native
