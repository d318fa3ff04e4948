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
}

}  // namespace ktune
