// Kernel Tuner's swarm strategies in its scaled space (sequential.h): particle swarm
// optimisation (pso) and the firefly algorithm. Each iteration's swarm is measured as one
// batch. Kernel Tuner's firefly measures a firefly after each of its moves; here a firefly makes
// all of its moves of an iteration (towards each firefly brighter than it was when the
// iteration began) and the swarm is then measured together, so that the loop can compile and
// measure a whole iteration at once.
#include <algorithm>
#include <cmath>

#include "strategies/native/native.h"
#include "strategies/native/sequential.h"

namespace ktune::native {

namespace {

class Swarm : public SequentialStrategy {
 protected:
  // Positions to start from: the best so far, else the warm start.
  std::vector<Point> known_good() {
    std::vector<Point> out;
    if (best() && best_value() < kFailed) out.push_back(position(*best()));
    if (run_number() == 1)
      for (const Config& c : warm_configs())
        if (const auto v = known(c); v && *v < kFailed) out.push_back(position(c));
    return out;
  }
  // The starting swarm: the best so far and (in the first run) the warm start's working
  // configurations, then random valid configurations (constraint_aware) or random points.
  std::vector<Point> starting_swarm(std::size_t n) {
    std::vector<Point> x = known_good();
    if (x.size() > n) x.resize(n);
    const std::size_t given = x.size();
    while (x.size() < n) x.push_back(random_point());
    if (constraint_aware_)
      for (std::size_t i = given; i < n; ++i)
        if (std::optional<Config> c = random_unseen()) x[i] = position(*c);
    return x;
  }
  std::vector<Config> snapped(const std::vector<Point>& xs) {
    std::vector<Config> out;
    out.reserve(xs.size());
    for (const Point& x : xs) out.push_back(snap(x));
    return out;
  }
  void clip(Point& x) const {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::clamp(x[i], 0.0, upper()[i]);
  }
  // Members (Kernel Tuner's popsize), at most half the valid configurations as it does.
  std::size_t members(std::uint64_t popsize) const {
    const std::uint64_t valid = valid_count(2 * popsize + 2);
    return static_cast<std::size_t>(
        std::max<std::uint64_t>(1, std::min<std::uint64_t>(popsize, (valid + 1) / 2)));
  }

  std::uint64_t popsize_ = 0;
  std::uint64_t maxiter_ = 0;
  bool constraint_aware_ = true;
};

class ParticleSwarm final : public Swarm {
 public:
  std::string name() const override { return "pso"; }

 protected:
  void read_options(OptionReader& options) override {
    popsize_ = options.count("popsize", 50, 1, 1u << 20);
    maxiter_ = options.count("maxiter", 190, 1, UINT32_MAX);
    w_ = options.number("w", 0.5, 0.0, 100.0);
    c1_ = options.number("c1", 3.5, 0.0, 100.0);
    c2_ = options.number("c2", 1.0, 0.0, 100.0);
    constraint_aware_ = options.flag("constraint_aware", true);
  }

  Search search() override {
    const std::size_t n = members(popsize_);
    std::vector<Point> x = starting_swarm(n);
    std::vector<Point> v(n, Point(x[0].size()));
    for (Point& vi : v)
      for (double& d : vi) d = 2 * rng().uniform() - 1;
    std::vector<Point> own_best = x;
    std::vector<double> own_score(n, kFailed);
    Point global = x[0];
    double global_score = kFailed;
    bool global_set = false;
    for (std::uint64_t iteration = 0; iteration < maxiter_; ++iteration) {
      const std::vector<double> scores = co_await evaluate(snapped(x));
      for (std::size_t i = 0; i < n; ++i) {
        if (scores[i] < own_score[i]) own_score[i] = scores[i], own_best[i] = x[i];
        if (!global_set || scores[i] <= global_score)
          global_score = scores[i], global = x[i], global_set = true;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const double r1 = rng().uniform(), r2 = rng().uniform();
        for (std::size_t d = 0; d < x[i].size(); ++d)
          v[i][d] = w_ * v[i][d] + c1_ * r1 * (own_best[i][d] - x[i][d]) +
                    c2_ * r2 * (global[d] - x[i][d]);
        for (std::size_t d = 0; d < x[i].size(); ++d) x[i][d] += v[i][d];
        clip(x[i]);
      }
    }
  }

 private:
  double w_ = 0.5, c1_ = 3.5, c2_ = 1.0;
};

class Firefly final : public Swarm {
 public:
  std::string name() const override { return "firefly_algorithm"; }

 protected:
  void read_options(OptionReader& options) override {
    popsize_ = options.count("popsize", 20, 1, 1u << 20);
    maxiter_ = options.count("maxiter", 100, 1, UINT32_MAX);
    b0_ = options.number("B0", 1.0, 0.0, 100.0);
    gamma_ = options.number("gamma", 1.0, 0.0, 1e6);
    alpha_ = options.number("alpha", 0.2, 0.0, 100.0);
    constraint_aware_ = options.flag("constraint_aware", true);
  }

  Search search() override {
    // Kernel Tuner's firefly does not limit its swarm to half the space, unlike pso.
    const std::size_t n = static_cast<std::size_t>(popsize_);
    std::vector<Point> x = starting_swarm(n);
    std::vector<double> score = co_await evaluate(snapped(x));
    for (std::uint64_t iteration = 0; iteration < maxiter_; ++iteration) {
      // Brighter is faster; a failure is the dimmest.
      const std::vector<double> start = score;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          if (start[j] < start[i]) move_towards(x[i], x[j]);
      score = co_await evaluate(snapped(x));
      // Kernel Tuner sorts the swarm by score after each iteration.
      std::vector<std::size_t> order(n);
      for (std::size_t i = 0; i < n; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
      std::vector<Point> sorted_x;
      std::vector<double> sorted_score;
      for (std::size_t i : order) sorted_x.push_back(x[i]), sorted_score.push_back(score[i]);
      x = std::move(sorted_x);
      score = std::move(sorted_score);
    }
  }

 private:
  void move_towards(Point& xi, const Point& xj) {
    double dist2 = 0;
    for (std::size_t d = 0; d < xi.size(); ++d) dist2 += (xi[d] - xj[d]) * (xi[d] - xj[d]);
    const double beta = b0_ * std::exp(-gamma_ * dist2);
    for (std::size_t d = 0; d < xi.size(); ++d)
      xi[d] += beta * (xj[d] - xi[d]) + alpha_ * (rng().uniform() - 0.5);
    clip(xi);
  }

  double b0_ = 1.0, gamma_ = 1.0, alpha_ = 0.2;
};

}  // namespace

std::unique_ptr<Strategy> make_particle_swarm() { return std::make_unique<ParticleSwarm>(); }
std::unique_ptr<Strategy> make_firefly() { return std::make_unique<Firefly>(); }

}  // namespace ktune::native
