// Kernel Tuner's differential evolution (diff_evo) on the value indices: a mutant of index
// vectors (DE/best/1, rand/1, best/2, rand/2, current-to-best/1, rand-to-best/1), rounded and
// clipped, crossed (binomial or exponential) with the member it may replace, repaired to the
// nearest valid configuration (constraint_aware), and kept where it is at least as fast. A
// population that has not changed for three generations is replaced by a random one (Kernel
// Tuner then stays random for the rest of its run; here the count starts again).
#include <algorithm>
#include <cmath>

#include "strategies/native/native.h"
#include "strategies/native/sequential.h"

namespace ktune::native {

namespace {

constexpr int kStuckLimit = 20;

class DifferentialEvolution final : public SequentialStrategy {
 public:
  std::string name() const override { return "diff_evo"; }

 protected:
  void read_options(OptionReader& options) override {
    popsize_ = options.count("popsize", 16, 1, 1u << 20);
    times_dimensions_ = options.flag("popsize_times_dimensions", true);
    maxiter_ = options.count("maxiter", UINT32_MAX, 1, UINT64_MAX);
    f_ = options.number("F", 0.7, 0.0, 2.0);
    cr_ = options.number("CR", 0.6, 0.0, 1.0);
    const std::string method = options.choice(
        "method", "best1bin",
        {"best1bin", "rand1bin", "best2bin", "rand2bin", "best1exp", "rand1exp", "best2exp",
         "rand2exp", "currenttobest1bin", "currenttobest1exp", "randtobest1bin", "randtobest1exp"});
    exponential_ = method.ends_with("exp");
    const std::string base = method.substr(0, method.size() - 3);
    mutation_ = base == "currenttobest1" ? Mutation::kCurrentToBest
                : base == "randtobest1"  ? Mutation::kRandToBest
                : base.ends_with('2')    ? Mutation::kTwo
                                         : Mutation::kOne;
    from_best_ = base.starts_with("best");
    constraint_aware_ = options.flag("constraint_aware", true);
  }

  Search search() override {
    const std::size_t n = population_size();
    std::vector<Config> population = random_population(n, /*keep_best=*/true);
    std::vector<double> cost = co_await evaluate(population);
    Config best_x = population[0];
    double best_cost = kFailed;
    for (std::size_t i = 0; i < n; ++i)
      if (cost[i] < best_cost || i == 0) best_cost = cost[i], best_x = population[i];
    int stabilized = 0;
    const std::uint64_t generations = valid_count(maxiter_);  // Kernel Tuner: at most the space
    for (std::uint64_t generation = 0; generation < generations; ++generation) {
      std::vector<Config> trial;
      if (stabilized > 2) {
        trial = random_population(n, /*keep_best=*/false);
        stabilized = 0;
      }
      for (std::size_t i = 0, stuck = 0; trial.size() < n;) {
        Config t = crossover(mutant(population, i, best_x), population[i]);
        if (constraint_aware_) t = repair(std::move(t));
        if (!t.empty() && std::find(trial.begin(), trial.end(), t) == trial.end()) {
          trial.push_back(std::move(t));
          ++i, stuck = 0;
        } else if (++stuck >= kStuckLimit) {
          trial.push_back(random_valid());
          ++i, stuck = 0;
        }
      }
      const std::vector<double> trial_cost = co_await evaluate(trial);
      bool changed = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (!(trial_cost[i] <= cost[i])) continue;
        if (std::find(population.begin(), population.end(), trial[i]) == population.end()) {
          population[i] = trial[i];
          cost[i] = trial_cost[i];
          changed = true;
        }
        if (trial_cost[i] < best_cost) best_cost = trial_cost[i], best_x = trial[i];
      }
      if (!changed) ++stabilized;
    }
  }

 private:
  enum class Mutation { kOne, kTwo, kCurrentToBest, kRandToBest };

  std::size_t population_size() const {
    std::uint64_t n = popsize_;
    if (times_dimensions_) {
      std::uint64_t tunable = 0;
      for (const auto& p : space().params()) tunable += p.values.size() > 1;
      n *= std::max<std::uint64_t>(1, valid_count(tunable));
    }
    return static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 20));
  }

  // Random valid members (or random index vectors without constraint_aware); the first is the
  // best so far, or the warm start's best, where there is one.
  std::vector<Config> random_population(std::size_t n, bool keep_best) {
    std::vector<Config> out;
    if (keep_best && best() && best_value() < kFailed) out.push_back(*best());
    while (out.size() < n) {
      if (constraint_aware_) {
        std::optional<Config> c = random_unseen();
        out.push_back(c ? std::move(*c) : random_valid());
      } else {
        Config c(dimensions());
        for (std::size_t d = 0; d < c.size(); ++d)
          c[d] = static_cast<std::uint32_t>(rng().below(space().params()[d].values.size()));
        out.push_back(std::move(c));
      }
    }
    return out;
  }

  // Distinct random members other than i (with repeats only when there are too few).
  std::vector<std::size_t> draw(std::size_t n, std::size_t i, std::size_t count) {
    std::vector<std::size_t> others;
    for (std::size_t k = 0; k < n; ++k)
      if (k != i) others.push_back(k);
    if (others.empty()) others.push_back(i);
    std::vector<std::size_t> out;
    if (count >= others.size()) {
      for (std::size_t k = 0; k < count; ++k) out.push_back(others[rng().below(others.size())]);
      return out;
    }
    rng().shuffle(others);
    out.assign(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(count));
    return out;
  }

  Config mutant(const std::vector<Config>& pop, std::size_t i, const Config& best_x) {
    const std::size_t dims = dimensions();
    const auto at = [&](std::size_t member, std::size_t d) {
      return static_cast<double>(pop[member][d]);
    };
    std::vector<double> v(dims);
    if (mutation_ == Mutation::kCurrentToBest || mutation_ == Mutation::kRandToBest) {
      std::vector<std::size_t> r = draw(pop.size(), i, 3);
      if (mutation_ == Mutation::kCurrentToBest) r[0] = i;
      for (std::size_t d = 0; d < dims; ++d)
        v[d] = at(r[0], d) + f_ * (best_x[d] - at(r[0], d) + at(r[1], d) - at(r[2], d));
    } else {
      const std::size_t diffs = mutation_ == Mutation::kTwo ? 2 : 1;
      std::vector<std::size_t> r = draw(pop.size(), i, 2 * diffs + (from_best_ ? 0 : 1));
      for (std::size_t d = 0; d < dims; ++d) {
        const double base = from_best_ ? static_cast<double>(best_x[d]) : at(r.back(), d);
        v[d] = diffs == 1 ? base + f_ * (at(r[0], d) - at(r[1], d))
                          : base + f_ * (at(r[0], d) + at(r[1], d) - at(r[2], d) - at(r[3], d));
      }
    }
    Config out(dims);
    for (std::size_t d = 0; d < dims; ++d) {
      const double top = static_cast<double>(space().params()[d].values.size() - 1);
      out[d] = static_cast<std::uint32_t>(std::clamp(std::round(v[d]), 0.0, top));
    }
    return out;
  }

  Config crossover(const Config& donor, Config target) {
    const std::size_t dims = target.size();
    if (dims == 0) return target;
    if (exponential_) {
      const std::size_t start = rng().below(dims);
      for (std::size_t l = 0; l < dims && rng().uniform() < cr_; ++l)
        target[(start + l) % dims] = donor[(start + l) % dims];
      return target;
    }
    std::vector<bool> take(dims);
    bool any = false;
    for (std::size_t d = 0; d < dims; ++d) any |= take[d] = rng().uniform() < cr_;
    if (!any) take[rng().below(dims)] = true;
    for (std::size_t d = 0; d < dims; ++d)
      if (take[d]) target[d] = donor[d];
    return target;
  }

  std::uint64_t popsize_ = 16;
  bool times_dimensions_ = true;
  std::uint64_t maxiter_ = UINT32_MAX;
  double f_ = 0.7, cr_ = 0.6;
  Mutation mutation_ = Mutation::kOne;
  bool from_best_ = true;
  bool exponential_ = false;
  bool constraint_aware_ = true;
};

}  // namespace

std::unique_ptr<Strategy> make_differential_evolution() {
  return std::make_unique<DifferentialEvolution>();
}

}  // namespace ktune::native
