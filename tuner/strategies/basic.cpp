// The strategy registry, the two baseline strategies: brute force (every valid configuration,
// in enumeration order) and random search (without replacement), and `auto`, which runs one of
// them or the best search strategy depending on the budget and the size of the space.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ktune/error.h"
#include "ktune/strategy.h"
#include "strategies/registry.h"

namespace ktune {

namespace {

// Part I of K (0-based `part`) of an order: its stripe first (positions I, I + K, I + 2K, ...),
// then the other parts' stripes, I + 1 first. The parts first measure disjoint shares; a part
// that finishes early goes on into the others', where the database answers what they measured
// and it takes what they have not reached. Stripes rather than blocks: an enumeration order
// puts costly configurations together (brute force of reduce: the first half of the order
// takes 1.7 times the GPU time of the second), and stripes give every part its share of them.
std::vector<Config> part_order(std::vector<Config> order, std::uint32_t part, std::uint32_t parts) {
  std::vector<Config> out;
  out.reserve(order.size());
  for (std::uint32_t j = 0; j < parts; ++j)
    for (std::size_t i = (part + j) % parts; i < order.size(); i += parts)
      out.push_back(std::move(order[i]));
  return out;
}

// Proposes the warm-start configurations first, then a fixed order of the valid space.
class ListStrategy : public Strategy {
 public:
  void start(const StrategyContext& context) override {
    for (const auto& [key, value] : context.options)
      throw Error(ErrorKind::kUsage, fmt::format("strategy '{}' has no option '{}'", name(), key));
    order_ = make_order(context);
    next_ = 0;
  }
  std::vector<Config> ask(std::size_t max_count) override {
    std::vector<Config> out;
    while (out.size() < max_count && next_ < order_.size()) out.push_back(order_[next_++]);
    return out;
  }
  void tell(const Config&, const Outcome&) override {}
  bool exhausted() const override { return next_ >= order_.size(); }
  bool fixed_order() const override { return true; }

 protected:
  // The order of the proposals: the warm start, then the valid space arranged.
  virtual std::vector<Config> make_order(const StrategyContext& context) {
    std::vector<Config> order = context.warm_start;
    std::vector<Config> rest = context.space->enumerate();
    arrange(rest, context.seed);
    if (context.parts > 1) rest = part_order(std::move(rest), context.part, context.parts);
    for (auto& c : rest)
      if (std::find(context.warm_start.begin(), context.warm_start.end(), c) ==
          context.warm_start.end())
        order.push_back(std::move(c));
    return order;
  }
  virtual void arrange(std::vector<Config>&, std::uint64_t) {}

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

// Decides in start() (choose_auto_strategy) and hands every call to the strategy it chose.
class AutoStrategy final : public Strategy {
 public:
  std::string name() const override { return "auto"; }
  void start(const StrategyContext& context) override {
    check_auto_options(context.options);
    choice_ = choose_auto_strategy(*context.space, context.budget, context.budget_seconds);
    inner_ = make_strategy(choice_.strategy);
    inner_->start(context);
  }
  std::vector<Config> ask(std::size_t max_count) override {
    if (!inner_) throw Error(ErrorKind::kInternal, "strategy 'auto': ask() before start()");
    return inner_->ask(max_count);
  }
  void tell(const Config& config, const Outcome& outcome) override {
    if (inner_) inner_->tell(config, outcome);
  }
  bool exhausted() const override { return inner_ && inner_->exhausted(); }
  bool fixed_order() const override { return inner_ && inner_->fixed_order(); }
  std::size_t ask_batch() const override { return inner_ ? inner_->ask_batch() : 1; }

 private:
  AutoChoice choice_;
  std::unique_ptr<Strategy> inner_;
};

}  // namespace

void check_auto_options(const std::map<std::string, std::string>& options) {
  // Options belong to one strategy; which one runs depends on the budget, so an option would be
  // silently dropped or refused depending on the run. Naming the strategy is clearer.
  for (const auto& [key, value] : options)
    throw Error(
        ErrorKind::kUsage,
        fmt::format("strategy 'auto' has no option '{}': it takes no options; name the strategy "
                    "to configure it (e.g. --strategy {} --strategy-option {}={})",
                    key, kAutoSearchStrategy, key, value));
}

AutoChoice choose_auto_strategy(const SearchSpace& space, std::uint64_t budget_evaluations,
                                double budget_seconds) {
  const bool has_evaluations = budget_evaluations != UINT64_MAX;
  const bool has_time = std::isfinite(budget_seconds);
  if (!has_evaluations && !has_time)
    return {"brute_force", "no budget: every valid configuration is measured"};
  if (!has_evaluations)
    // How many evaluations fit in the time is not known before the run; a search finds good
    // configurations early, brute force's enumeration order knows nothing of speed.
    return {kAutoSearchStrategy,
            fmt::format("a time budget of {:g} s and no evaluation budget", budget_seconds)};
  // Count the valid configurations only as far as the budget needs.
  std::uint64_t valid = 0;
  space.for_each_valid([&](const Config&) { return ++valid <= budget_evaluations; });
  // Every configuration will be measured; random search without replacement measures them all
  // too, in a seeded random order, so a run cut short (Ctrl-C, --budget-time) holds a fair
  // sample rather than one corner of the enumeration.
  if (valid <= budget_evaluations)
    return {
        "random",
        fmt::format("all {} valid configurations fit within the budget of {} evaluations: each is "
                    "measured, in a seeded random order",
                    valid, budget_evaluations)};
  return {kAutoSearchStrategy,
          fmt::format("a budget of {} evaluations, fewer than the space's valid configurations",
                      budget_evaluations)};
}

std::unique_ptr<Strategy> make_listed_strategy(std::vector<Config> configs) {
  class Listed final : public ListStrategy {
   public:
    explicit Listed(std::vector<Config> c) : given_(std::move(c)) {}
    std::string name() const override { return "listed"; }

   protected:
    std::vector<Config> make_order(const StrategyContext& context) override {
      std::vector<Config> order;
      for (const Config& c : given_)
        if (context.space->is_valid(c) && std::find(order.begin(), order.end(), c) == order.end())
          order.push_back(c);
      return order;
    }

   private:
    std::vector<Config> given_;
  };
  return std::make_unique<Listed>(std::move(configs));
}

void add_basic_strategies(std::vector<StrategyEntry>& table) {
  table.push_back(
      {"auto",
       "brute force without a budget, every valid configuration in random order when they fit "
       "within it, else " +
           std::string(kAutoSearchStrategy),
       [] { return std::make_unique<AutoStrategy>(); }});
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
  throw Error(ErrorKind::kUsage, fmt::format("unknown strategy '{}'; known: {}", name,
                                             fmt::join(strategy_names(), ", ")));
}

StrategyTraits strategy_traits(const std::string& name) {
  for (const auto& e : strategy_table())
    if (name == e.name) return e.traits;
  throw Error(ErrorKind::kUsage, fmt::format("unknown strategy '{}'; known: {}", name,
                                             fmt::join(strategy_names(), ", ")));
}

std::vector<std::string> strategies_sharing_a_study() {
  std::vector<std::string> out;
  for (const auto& e : strategy_table())
    if (e.traits.shares_study) out.push_back(e.name);
  return out;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& e : strategy_table()) out.push_back(e.name);
  return out;
}

}  // namespace ktune
