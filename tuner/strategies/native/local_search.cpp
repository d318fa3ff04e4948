// Hill climbing on the valid neighbours of a configuration, as Kernel Tuner's mls, greedy_mls
// and greedy_ils do it, made asynchronous: the neighbourhood of the current configuration is
// proposed in batches as the loop asks; a greedy climb moves as soon as a told neighbour is
// faster, a best-improvement climb once every neighbour has been told. A configuration is
// never proposed twice: what was measured before is used from memory, free of budget.
#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

#include "strategies/native/common.h"
#include "strategies/native/native.h"

namespace ktune::native {

namespace {

// Starts and finished neighbourhoods handled in one ask() before giving up on the current
// plan and restarting from an unseen configuration (guards against cycling among configs
// whose results are all known).
constexpr int kStepsPerAsk = 1000;

class LocalSearch final : public NativeStrategy {
 public:
  explicit LocalSearch(LocalSearchKind kind) : kind_(kind) {}

  std::string name() const override {
    switch (kind_) {
      case LocalSearchKind::kMultiStart:
        return "mls";
      case LocalSearchKind::kGreedyMultiStart:
        return "greedy_mls";
      case LocalSearchKind::kOrderedGreedyMultiStart:
        return "ordered_greedy_mls";
      case LocalSearchKind::kGreedyIterated:
        return "greedy_ils";
    }
    return "local_search";
  }

 protected:
  void configure(OptionReader& options) override {
    neighbourhood_ = options.choice("neighbour", "hamming", {"hamming", "adjacent"}) == "adjacent"
                         ? Neighbourhood::kAdjacent
                         : Neighbourhood::kHamming;
    first_improvement_ = options.flag("restart", kind_ != LocalSearchKind::kMultiStart);
    // Kernel Tuner's randomize: the neighbourhood in a random order, or in the order of the
    // parameters (ordered_greedy_mls's default).
    randomize_ = options.flag("randomize", kind_ != LocalSearchKind::kOrderedGreedyMultiStart);
    sample_ = options.count("sample", 20, 0, UINT32_MAX);
    parallel_ = options.count("parallel", 8, 0, 1u << 20);
    if (iterated()) {
      no_improvement_ = options.count("no_improvement", 5, 1, UINT32_MAX);
      random_walk_ = options.number("random_walk", 0.3, 0.0, 1.0);
      accept_latest_ = options.choice("accept", "better", {"better", "latest"}) == "latest";
    }
    std::size_t tunable = 0;
    for (const auto& p : space().params()) tunable += p.values.size() > 1;
    walk_steps_ = std::max<std::size_t>(
        1, static_cast<std::size_t>(random_walk_ * static_cast<double>(tunable)));

    // A warm start takes the place of the random sample: the first climb starts from its best.
    phase_ = sample_ && warm_count() == 0 ? Phase::kSample : Phase::kNeedStart;
    sampled_ = 0;
    epoch_ = 0;
    proposed_epoch_.clear();
    neighbours_.clear();
    next_ = 0;
    batch_.clear();
    base_.reset();
    since_improvement_ = 0;
    first_start_ = true;
    force_random_ = false;
  }

  std::vector<Config> propose(std::size_t max_count) override {
    std::vector<Config> out;
    if (phase_ == Phase::kSample) {
      // A random sample first; the first climb starts from its best.
      while (sampled_ < sample_ && out.size() < max_count) {
        const std::optional<Config> c = random_unseen();
        if (!c) break;
        propose_if_new(*c, out);
        ++sampled_;
      }
      if (!out.empty() || (sampled_ < sample_ && outstanding() == 0 && exhausted())) return out;
      if (outstanding() > 0) return out;
      phase_ = Phase::kNeedStart;
    }
    for (int step = 0; step < kStepsPerAsk; ++step) {
      if (phase_ == Phase::kWaitStart) return out;
      if (phase_ == Phase::kNeedStart) {
        const std::optional<Config> s = next_start();
        if (!s) return out;  // every valid configuration has been seen
        ++epoch_;
        if (const auto v = known(*s)) {
          climb_from(*s, *v);
          continue;
        }
        if (propose_if_new(*s, out)) proposed_epoch_[*s] = epoch_;
        waiting_ = *s;
        phase_ = Phase::kWaitStart;
        return out;
      }
      // Climbing: walk the shuffled neighbourhood, using what is known, proposing the rest.
      while (out.size() < max_count && next_ < neighbours_.size() &&
             (parallel_ == 0 || outstanding() < parallel_)) {
        const Config c = neighbours_[next_++];
        if (const auto v = known(c)) {
          consider(c, *v);  // may move, which restarts the walk on the new neighbourhood
        } else if (seen(c)) {
          batch_.insert(c);  // proposed earlier, tell outstanding: wait for it
        } else if (propose_if_new(c, out)) {
          proposed_epoch_[c] = epoch_;
          batch_.insert(c);
        }
      }
      if (next_ < neighbours_.size() || !batch_.empty()) return out;  // full, or waiting
      // The whole neighbourhood is told.
      if (!first_improvement_ && best_neighbour_ && best_neighbour_value_ < current_value_) {
        const Config c = *best_neighbour_;
        climb_from(c, best_neighbour_value_);
        continue;
      }
      local_optimum();
    }
    // Cycling among known configurations: start afresh somewhere unseen.
    phase_ = Phase::kNeedStart;
    force_random_ = true;
    return out;
  }

  void on_result(const Config& config, double value) override {
    bool current_climb = false;
    if (const auto it = proposed_epoch_.find(config); it != proposed_epoch_.end()) {
      current_climb = it->second == epoch_;
      proposed_epoch_.erase(it);
    }
    if (phase_ == Phase::kWaitStart) {
      if (config == waiting_) climb_from(config, value);
      return;
    }
    if (phase_ != Phase::kClimb) return;
    const bool member = batch_.erase(config) > 0;
    if (member || current_climb) consider(config, value);
  }

 private:
  enum class Phase { kSample, kNeedStart, kWaitStart, kClimb };

  bool iterated() const { return kind_ == LocalSearchKind::kGreedyIterated; }

  void climb_from(const Config& c, double value) {
    current_ = c;
    current_value_ = value;
    neighbours_ = space().neighbours(c, neighbourhood_);
    if (randomize_) rng().shuffle(neighbours_);
    next_ = 0;
    batch_.clear();
    best_neighbour_.reset();
    best_neighbour_value_ = kFailed;
    phase_ = Phase::kClimb;
  }

  // A told neighbour (or a late tell of this climb): greedy moves at once, best-improvement
  // remembers it for the end of the neighbourhood.
  void consider(const Config& c, double value) {
    if (first_improvement_) {
      if (value < current_value_) climb_from(c, value);
    } else if (value < best_neighbour_value_) {
      best_neighbour_ = c;
      best_neighbour_value_ = value;
    }
  }

  void local_optimum() {
    if (iterated()) {
      if (!base_ || current_value_ < base_value_) {
        base_ = current_;
        base_value_ = current_value_;
        since_improvement_ = 0;
      } else {
        ++since_improvement_;
        if (accept_latest_) base_ = current_;  // Kernel Tuner's walk: perturb the newest optimum
      }
    }
    phase_ = Phase::kNeedStart;
  }

  std::optional<Config> next_start() {
    if (first_start_) {
      first_start_ = false;
      // Start from the best warm-start configuration, if one was measured.
      if (best() && best_value() < kFailed) return *best();
    }
    if (force_random_ || !iterated() || !base_ || since_improvement_ >= no_improvement_) {
      force_random_ = false;
      base_.reset();
      since_improvement_ = 0;
      return random_unseen();
    }
    Config c = *base_;
    for (std::size_t i = 0; i < walk_steps_; ++i)
      if (auto n = random_neighbour(c, Neighbourhood::kHamming)) c = std::move(*n);
    return c;
  }

  const LocalSearchKind kind_;
  bool randomize_ = true;
  // Options.
  Neighbourhood neighbourhood_ = Neighbourhood::kHamming;
  bool first_improvement_ = true;
  std::uint64_t sample_ = 20;
  std::uint64_t parallel_ = 8;
  std::uint64_t no_improvement_ = 5;
  double random_walk_ = 0.3;
  bool accept_latest_ = false;
  std::size_t walk_steps_ = 1;
  // State.
  Phase phase_ = Phase::kNeedStart;
  std::uint64_t sampled_ = 0;
  std::uint64_t epoch_ = 0;  // climb number: late tells of an abandoned climb never move this one
  std::unordered_map<Config, std::uint64_t, ConfigHash> proposed_epoch_;
  Config waiting_;  // the start whose tell is awaited
  Config current_;
  double current_value_ = kFailed;
  std::vector<Config> neighbours_;  // of current_, shuffled unless !randomize_
  std::size_t next_ = 0;
  std::unordered_set<Config, ConfigHash> batch_;  // neighbours of current_ with tells outstanding
  std::optional<Config> best_neighbour_;
  double best_neighbour_value_ = kFailed;
  std::optional<Config> base_;  // iterated search: the accepted local optimum, perturbed next
  double base_value_ = kFailed;
  std::uint64_t since_improvement_ = 0;
  bool first_start_ = true;
  bool force_random_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_local_search(LocalSearchKind kind) {
  return std::make_unique<LocalSearch>(kind);
}

}  // namespace ktune::native
