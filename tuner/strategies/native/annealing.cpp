// Simulated annealing as Kernel Tuner runs it on tuning spaces: a random valid neighbour of the
// current configuration is accepted if faster, or if slower with probability
// exp(-(relative slowdown) / T); T falls geometrically from T to T_min over the evaluation
// budget. A failed configuration is never moved to once a working one is held. Neighbours
// already measured are judged from memory without spending budget; several neighbours may be
// in flight at once (the loop compiles ahead), each judged against the position when its tell
// arrives.
#include <cmath>

#include "strategies/native/common.h"
#include "strategies/native/native.h"

namespace ktune::native {

namespace {

// Picks of known or in-flight neighbours in a row before the walk restarts from an unseen
// configuration (Kernel Tuner restarts after 100 iterations without a new evaluation).
constexpr int kStuckLimit = 100;

class Annealing final : public NativeStrategy {
 public:
  std::string name() const override { return "annealing"; }

 protected:
  void configure(OptionReader& options) override {
    t_start_ = options.number("T", 1.0, 1e-9, 1e9);
    t_min_ = options.number("T_min", 0.001, 1e-12, t_start_);
    alpha_ = options.number("alpha", 0.995, 1e-6, 1.0 - 1e-9);
    hamming_share_ = options.number("hamming", 0.5, 0.0, 1.0);
    parallel_ = options.count("parallel", 8, 0, 1u << 20);
    sample_ = options.count("sample", 20, 0, UINT32_MAX);
    sampled_ = 0;
    started_ = false;
    schedule_ = options.count("schedule", 0, 0, UINT64_MAX);
    max_iter_ = std::ceil(std::log(t_min_) / std::log(alpha_));
    if (schedule_ == 0)
      schedule_ = budget() < UINT64_MAX ? budget() : static_cast<std::uint64_t>(max_iter_);
    have_current_ = false;
    waiting_.reset();
    cycle_start_ = 0;
  }

  std::vector<Config> propose(std::size_t max_count) override {
    std::vector<Config> out;
    if (sampled_ < sample_) {
      // A random sample first; the walk starts from its best.
      while (sampled_ < sample_ && out.size() < max_count) {
        const auto c = random_unseen();
        if (!c) break;
        propose_if_new(*c, out);
        ++sampled_;
      }
      if (sampled_ < sample_ && out.empty() && outstanding() == 0) sampled_ = sample_;
      return out;
    }
    if (!have_current_ && !started_) {
      if (outstanding() > 0) return out;  // the walk starts from the best of the sample
      started_ = true;
    }
    if (!have_current_) {
      if (waiting_) return out;
      // Start from the best warm-start configuration if one worked, else anywhere.
      if (best() && best_value() < kFailed) {
        set_current(*best(), best_value());
      } else {
        const auto s = random_unseen();
        if (!s) return out;
        propose_if_new(*s, out);
        waiting_ = *s;
        return out;
      }
    }
    const std::size_t cap =
        parallel_ == 0 ? max_count
                       : std::min<std::size_t>(
                             max_count, parallel_ > outstanding() ? parallel_ - outstanding() : 0);
    int stuck = 0;
    while (out.size() < cap) {
      const Config c = neighbour();
      if (const auto v = known(c)) {
        judge(c, *v);  // free: measured before
      } else if (!seen(c)) {
        propose_if_new(c, out);
        stuck = 0;
        continue;
      }
      if (++stuck >= kStuckLimit) {
        const auto s = random_unseen();
        if (!s) break;
        // A fresh start: the walk continues from there once it is told.
        propose_if_new(*s, out);
        have_current_ = false;
        waiting_ = *s;
        break;
      }
    }
    return out;
  }

  void on_result(const Config& config, double value) override {
    if (waiting_ && config == *waiting_) {
      waiting_.reset();
      set_current(config, value);
      return;
    }
    if (have_current_) judge(config, value);
  }

 private:
  void set_current(const Config& c, double value) {
    current_ = c;
    current_value_ = value;
    have_current_ = true;
  }

  double temperature() {
    std::uint64_t done = told_count() - cycle_start_;
    if (done >= schedule_) {
      // Unbounded run past the schedule: heat up again.
      cycle_start_ = told_count();
      done = 0;
    }
    return t_start_ *
           std::pow(alpha_, max_iter_ * static_cast<double>(done) / static_cast<double>(schedule_));
  }

  void judge(const Config& c, double value) {
    if (c == current_) return;
    double p = 0;
    if (current_value_ == kFailed)
      p = 1;  // holding a failure: move anywhere
    else if (value == kFailed)
      p = 0;  // never move onto a failure
    else if (value < current_value_)
      p = 1;
    else
      p = std::exp(((current_value_ - value) / current_value_) / temperature());
    if (p >= 1 || rng().uniform() < p) set_current(c, value);
  }

  // Kernel Tuner's move: mostly a step of at most one position in every parameter at once,
  // sometimes (share `hamming`) a jump to any value of one parameter.
  Config neighbour() {
    if (rng().chance(hamming_share_)) {
      if (auto n = random_neighbour(current_, Neighbourhood::kHamming)) return *n;
    }
    const auto& params = space().params();
    Config c = current_;
    for (int t = 0; t < 32; ++t) {
      bool moved = false;
      for (std::size_t p = 0; p < params.size(); ++p) {
        const std::size_t n = params[p].values.size();
        std::int64_t lo = current_[p] > 0 ? -1 : 0;
        std::int64_t hi = current_[p] + 1 < n ? 1 : 0;
        const std::int64_t step =
            lo + static_cast<std::int64_t>(rng().below(static_cast<std::uint64_t>(hi - lo + 1)));
        c[p] = static_cast<std::uint32_t>(static_cast<std::int64_t>(current_[p]) + step);
        moved = moved || step != 0;
      }
      if (moved && space().is_valid(c)) return c;
    }
    if (auto n = random_neighbour(current_, Neighbourhood::kAdjacent)) return *n;
    if (auto n = random_neighbour(current_, Neighbourhood::kHamming)) return *n;
    return random_valid();
  }

  // Options.
  double t_start_ = 1.0;
  double t_min_ = 0.001;
  double alpha_ = 0.995;
  double hamming_share_ = 0.2;
  std::uint64_t parallel_ = 0;
  std::uint64_t sample_ = 0;
  std::uint64_t sampled_ = 0;
  bool started_ = false;
  std::uint64_t schedule_ = 0;
  double max_iter_ = 0;
  // State.
  bool have_current_ = false;
  Config current_;
  double current_value_ = kFailed;
  std::optional<Config> waiting_;
  std::uint64_t cycle_start_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_annealing() { return std::make_unique<Annealing>(); }

}  // namespace ktune::native
