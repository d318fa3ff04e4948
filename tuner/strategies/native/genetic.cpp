// A generational genetic algorithm as Kernel Tuner's: a population of valid configurations,
// parents picked by rank (Beta(1, 2.5) over the population sorted fastest first), crossover,
// and a mutation that replaces a child by a random valid Hamming neighbour. Children that are
// not valid are dropped; children measured before join the next generation from memory. A
// generation is proposed as the loop asks and bred once all of its tells are in.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "strategies/native/common.h"
#include "strategies/native/native.h"

namespace ktune::native {

namespace {

// Generations in a row that bring nothing new before the population is reseeded (keeping the
// best member), and breeding attempts per member before the rest is filled at random.
constexpr int kStaleGenerations = 20;
constexpr int kBreedTriesPerMember = 20;

class Genetic final : public NativeStrategy {
 public:
  std::string name() const override { return "genetic_algorithm"; }

 protected:
  void configure(OptionReader& options) override {
    const std::uint64_t requested = options.count("popsize", 0, 0, 1u << 20);
    generations_ = options.count("maxiter", 0, 0, UINT64_MAX);
    method_ = options.choice("method", "uniform",
                             {"single_point", "two_point", "uniform", "disruptive_uniform"});
    mutation_chance_ = options.count("mutation_chance", 20, 1, 1u << 30);
    elitism_ = options.count("elitism", 5, 0, 1u << 20);
    popsize_ = requested ? requested : kDefaultPopulation;
    population_.clear();
    next_ = 0;
    generation_ = 0;
    stale_ = 0;
    started_ = false;
    sized_ = requested != 0;
  }

  std::vector<Config> propose(std::size_t max_count) override {
    std::vector<Config> out;
    if (!started_) {
      started_ = true;
      if (!sized_) {
        // Kernel Tuner's rule for small spaces: at most half of the valid configurations.
        std::uint64_t valid = 0;
        space().for_each_valid([&](const Config&) { return ++valid < 2 * popsize_; });
        popsize_ = std::max<std::uint64_t>(1, std::min<std::uint64_t>(popsize_, (valid + 1) / 2));
      }
      seed_population(/*keep_best=*/true, /*with_warm=*/true);
    }
    for (int round = 0; round < 4 * kStaleGenerations; ++round) {
      bool fresh = false;
      while (out.size() < max_count && next_ < population_.size()) {
        if (propose_if_new(population_[next_], out)) fresh = true;
        ++next_;
      }
      if (fresh) stale_ = 0;
      if (next_ < population_.size()) return out;
      // Everything is proposed; breed once every member's result is known.
      for (const Config& c : population_)
        if (!known(c)) return out;
      if (!out.empty()) return out;
      if (generations_ && ++generation_ >= generations_) {
        // Kernel Tuner stops here; ktune keeps the budget busy with a fresh population.
        generation_ = 0;
        seed_population(true);
        continue;
      }
      if (++stale_ > kStaleGenerations) {
        stale_ = 0;
        seed_population(true);
        continue;
      }
      breed();
    }
    return out;
  }

  void on_result(const Config&, double) override {}

 private:
  static constexpr std::uint64_t kDefaultPopulation = 30;

  // A random population; with keep_best, the best configuration seen so far joins it, and with
  // with_warm the working warm-start configurations, fastest first.
  void seed_population(bool keep_best, bool with_warm = false) {
    population_.clear();
    next_ = 0;
    std::unordered_set<Config, ConfigHash> members;
    if (keep_best && best() && best_value() < kFailed) {
      population_.push_back(*best());
      members.insert(*best());
    }
    if (with_warm) {
      std::vector<std::pair<double, Config>> warm;
      for (const Config& c : warm_configs())
        if (const auto v = known(c); v && *v < kFailed) warm.emplace_back(*v, c);
      std::stable_sort(warm.begin(), warm.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [v, c] : warm)
        if (population_.size() < popsize_ && members.insert(c).second)
          population_.push_back(std::move(c));
    }
    while (population_.size() < popsize_) {
      std::optional<Config> c = random_unseen();
      if (!c) break;
      if (members.insert(*c).second)
        population_.push_back(std::move(*c));
      else
        break;  // cannot happen for unseen draws, but never spin
    }
    if (population_.empty()) population_.push_back(random_valid());
  }

  void breed() {
    std::vector<std::pair<double, Config>> ranked;
    for (const Config& c : population_) ranked.emplace_back(*known(c), c);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Config> next;
    std::unordered_set<Config, ConfigHash> members;
    const std::size_t target = popsize_;
    const std::size_t tries = target * kBreedTriesPerMember;
    // The fastest members carry over; measured already, they cost no budget.
    for (std::size_t i = 0;
         i < ranked.size() && next.size() < std::min<std::size_t>(elitism_, target); ++i)
      if (ranked[i].first < kFailed && members.insert(ranked[i].second).second)
        next.push_back(ranked[i].second);
    for (std::size_t t = 0; t < tries && next.size() < target; ++t) {
      const auto [a, b] = pick_parents(ranked.size());
      auto children = crossover(ranked[a].second, ranked[b].second);
      for (Config& child : children) {
        mutate(child);
        if (next.size() < target && space().is_valid(child) && members.insert(child).second)
          next.push_back(std::move(child));
      }
    }
    // Crossover of a heavily restricted space rarely gives valid children: fill with mutants
    // of the parents, then with random configurations.
    for (std::size_t t = 0; t < tries && next.size() < target; ++t) {
      const auto [a, b] = pick_parents(ranked.size());
      (void)b;
      if (auto n = random_neighbour(ranked[a].second, Neighbourhood::kHamming))
        if (members.insert(*n).second) next.push_back(std::move(*n));
    }
    while (next.size() < target) {
      std::optional<Config> c = random_unseen();
      if (!c || !members.insert(*c).second) break;
      next.push_back(std::move(*c));
    }
    if (next.empty()) next.push_back(ranked.front().second);
    population_ = std::move(next);
    next_ = 0;
  }

  // Two distinct ranks, biased to the front: Beta(1, 2.5) by inversion.
  std::pair<std::size_t, std::size_t> pick_parents(std::size_t n) {
    const auto draw = [&] {
      const double x = 1.0 - std::pow(1.0 - rng().uniform(), 1.0 / 2.5);
      return std::min(n - 1, static_cast<std::size_t>(x * static_cast<double>(n)));
    };
    const std::size_t a = draw();
    if (n < 2) return {a, a};
    std::size_t b = draw();
    for (int t = 0; t < 100 && b == a; ++t) b = draw();
    if (b == a) b = (a + 1) % n;
    return {a, b};
  }

  std::vector<Config> crossover(const Config& x, const Config& y) {
    const std::size_t d = x.size();
    Config c1 = x, c2 = y;
    if (method_ == "single_point") {
      const std::size_t pos = rng().below(d);
      for (std::size_t i = pos; i < d; ++i) std::swap(c1[i], c2[i]);
    } else if (method_ == "two_point") {
      std::size_t start = 0, end = d;
      if (d >= 5) start = 1, end = d - 1;
      if (end - start >= 2) {
        std::size_t p1 = start + rng().below(end - start), p2 = p1;
        while (p2 == p1) p2 = start + rng().below(end - start);
        if (p1 > p2) std::swap(p1, p2);
        for (std::size_t i = p1; i < p2; ++i) std::swap(c1[i], c2[i]);
      }
    } else if (method_ == "uniform") {
      for (std::size_t i = 0; i < d; ++i)
        if (rng().chance(0.5)) std::swap(c1[i], c2[i]);
    } else {  // disruptive_uniform: swap half of the differing genes
      std::vector<std::size_t> differ;
      for (std::size_t i = 0; i < d; ++i)
        if (x[i] != y[i]) differ.push_back(i);
      rng().shuffle(differ);
      for (std::size_t k = 0; k < (differ.size() + 1) / 2; ++k)
        std::swap(c1[differ[k]], c2[differ[k]]);
    }
    return {std::move(c1), std::move(c2)};
  }

  void mutate(Config& c) {
    if (rng().below(mutation_chance_) != 0) return;
    // Also for an invalid child: its valid neighbours repair it.
    if (auto n = random_neighbour(c, Neighbourhood::kHamming)) c = std::move(*n);
  }

  // Options.
  std::uint64_t popsize_ = kDefaultPopulation;
  std::uint64_t generations_ = 0;
  std::string method_ = "uniform";
  std::uint64_t mutation_chance_ = 20;
  std::uint64_t elitism_ = 5;
  bool sized_ = false;
  // State.
  std::vector<Config> population_;
  std::size_t next_ = 0;
  std::uint64_t generation_ = 0;
  int stale_ = 0;
  bool started_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_genetic_algorithm() { return std::make_unique<Genetic>(); }

}  // namespace ktune::native
