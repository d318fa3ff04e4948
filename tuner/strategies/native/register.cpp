// Native strategies: the published winners on GPU tuning spaces (Schoonhoven, van Werkhoven and
// Batenburg, IEEE TEVC 2022), as Kernel Tuner implements them, made ask/tell. Options and
// defaults are documented in docs/strategies-native.md.
#include "strategies/native/native.h"
#include "strategies/registry.h"

namespace ktune {

void add_native_strategies(std::vector<StrategyEntry>& table) {
  using native::LocalSearchKind;
  table.push_back(
      {"genetic_algorithm",
       "genetic algorithm: rank selection, uniform crossover, neighbour mutation, elitism",
       [] { return native::make_genetic_algorithm(); }});
  table.push_back({"bayes",
                   "Bayesian optimisation (Gaussian process, expected improvement), then a "
                   "genetic algorithm from its best",
                   [] { return native::make_bayes(); }});
  table.push_back({"annealing", "simulated annealing over valid neighbours, cooled over the budget",
                   [] { return native::make_annealing(); }});
  table.push_back(
      {"greedy_ils",
       "greedy iterated local search: first-improvement hill climbing, perturbed optima",
       [] { return native::make_local_search(LocalSearchKind::kGreedyIterated); }});
  table.push_back({"mls",
                   "multi-start local search: best-improvement hill climbing, random restarts",
                   [] { return native::make_local_search(LocalSearchKind::kMultiStart); }});
  table.push_back({"greedy_mls",
                   "greedy multi-start local search: first-improvement climbing, random restarts",
                   [] { return native::make_local_search(LocalSearchKind::kGreedyMultiStart); }});
  table.push_back(
      {"ordered_greedy_mls",
       "greedy multi-start local search, neighbours in the order of the parameters",
       [] { return native::make_local_search(LocalSearchKind::kOrderedGreedyMultiStart); }});
  table.push_back({"diff_evo",
                   "differential evolution on the value indices (DE/best/1/bin and the others)",
                   [] { return native::make_differential_evolution(); }});
  table.push_back({"pso", "particle swarm optimisation in Kernel Tuner's scaled space",
                   [] { return native::make_particle_swarm(); }});
  table.push_back({"firefly_algorithm", "firefly algorithm in Kernel Tuner's scaled space",
                   [] { return native::make_firefly(); }});
  table.push_back({"minimize",
                   "a local minimisation (quasi-Newton or Nelder-Mead) from a random start, "
                   "restarted",
                   [] { return native::make_minimize(); }});
  table.push_back({"basinhopping",
                   "basin hopping: local minima joined by random hops, Metropolis-accepted",
                   [] { return native::make_basinhopping(); }});
  table.push_back({"dual_annealing",
                   "dual annealing: generalised simulated annealing with local searches",
                   [] { return native::make_dual_annealing(); }});
}

}  // namespace ktune
