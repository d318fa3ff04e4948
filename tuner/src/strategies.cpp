// The strategy registry and the two baseline strategies: brute force (every valid
// configuration, in enumeration order) and random search (without replacement).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <random>

#include "ktune/error.h"
#include "ktune/strategy.h"
#include "strategy_registry.h"

namespace ktune {

namespace {

// Proposes the warm-start configurations first, then a fixed order of the valid space.
class ListStrategy : public Strategy {
 public:
  void start(const StrategyContext& context) override {
    for (const auto& [key, value] : context.options)
      throw Error(ErrorKind::kUsage, fmt::format("strategy '{}' has no option '{}'", name(), key));
    order_ = context.warm_start;
    std::vector<Config> rest = context.space->enumerate();
    arrange(rest, context.seed);
    for (auto& c : rest)
      if (std::find(context.warm_start.begin(), context.warm_start.end(), c) == context.warm_start.end())
        order_.push_back(std::move(c));
    next_ = 0;
  }
  std::vector<Config> ask(std::size_t max_count) override {
    std::vector<Config> out;
    while (out.size() < max_count && next_ < order_.size()) out.push_back(order_[next_++]);
    return out;
  }
  void tell(const Config&, const Outcome&) override {}
  bool exhausted() const override { return next_ >= order_.size(); }

 protected:
  virtual void arrange(std::vector<Config>& configs, std::uint64_t seed) = 0;

 private:
  std::vector<Config> order_;
  std::size_t next_ = 0;
};

class BruteForce final : public ListStrategy {
 public:
  std::string name() const override { return "brute_force"; }

 protected:
  void arrange(std::vector<Config>&, std::uint64_t) override {}
};

class RandomSearch final : public ListStrategy {
 public:
  std::string name() const override { return "random"; }

 protected:
  void arrange(std::vector<Config>& configs, std::uint64_t seed) override {
    std::mt19937_64 rng(seed);
    std::shuffle(configs.begin(), configs.end(), rng);
  }
};

}  // namespace

void add_basic_strategies(std::vector<StrategyEntry>& table) {
  table.push_back({"brute_force", "every valid configuration, in enumeration order",
                   [] { return std::make_unique<BruteForce>(); }});
  table.push_back({"random", "random search without replacement (seeded)",
                   [] { return std::make_unique<RandomSearch>(); }});
}

const std::vector<StrategyEntry>& strategy_table() {
  static const std::vector<StrategyEntry> kTable = [] {
    std::vector<StrategyEntry> t;
    add_basic_strategies(t);
    add_native_strategies(t);
    add_optuna_strategies(t);
    return t;
  }();
  return kTable;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const auto& e : strategy_table())
    if (name == e.name) return e.make();
  throw Error(ErrorKind::kUsage,
              fmt::format("unknown strategy '{}'; known: {}", name, fmt::join(strategy_names(), ", ")));
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& e : strategy_table()) out.push_back(e.name);
  return out;
}

}  // namespace ktune
