// Kernel Tuner's strategies over scipy's optimisers, in its scaled space (sequential.h):
// minimize (one local minimisation), basinhopping (local minima joined by random hops,
// Metropolis-accepted) and dual_annealing (scipy's generalised simulated annealing: a Tsallis
// visiting distribution, generalised acceptance, restarts when cold, a local search after each
// improvement). scipy's local methods are two here: the derivative-free ones (Nelder-Mead,
// Powell, COBYLA) run a Nelder-Mead simplex, the gradient ones (L-BFGS-B, BFGS, CG, TNC, SLSQP,
// trust-constr) a projected quasi-Newton descent on forward differences one value apart (eps),
// as Kernel Tuner's eps makes scipy's. A failed configuration counts as ten times the slowest
// time seen, so that the arithmetic stays finite.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "strategies/native/native.h"
#include "strategies/native/sequential.h"

namespace ktune::native {

namespace {

const std::vector<std::string> kLocalMethods = {
    "nelder-mead", "powell", "cg", "bfgs", "l-bfgs-b", "tnc", "cobyla", "slsqp", "trust-constr"};

bool derivative_free(const std::string& method) {
  return method == "nelder-mead" || method == "powell" || method == "cobyla";
}

struct Minimum {
  Point x;
  double f = kFailed;
};

class Minimizer : public SequentialStrategy {
 protected:
  // A nested coroutine: a local minimisation the search co_awaits.
  template <class T>
  struct Task {
    struct promise_type {
      T value;
      std::coroutine_handle<> continuation;
      std::exception_ptr error;
      Task get_return_object() {
        return Task(std::coroutine_handle<promise_type>::from_promise(*this));
      }
      std::suspend_always initial_suspend() noexcept { return {}; }
      auto final_suspend() noexcept {
        struct Resume {
          bool await_ready() noexcept { return false; }
          std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
            return h.promise().continuation;
          }
          void await_resume() noexcept {}
        };
        return Resume{};
      }
      void return_value(T v) { value = std::move(v); }
      void unhandled_exception() { error = std::current_exception(); }
    };
    explicit Task(std::coroutine_handle<promise_type> h) : handle(h) {}
    Task(Task&& o) noexcept : handle(o.handle) { o.handle = {}; }
    Task(const Task&) = delete;
    ~Task() {
      if (handle) handle.destroy();
    }
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> outer) {
      handle.promise().continuation = outer;
      return handle;
    }
    T await_resume() {
      if (handle.promise().error) std::rethrow_exception(handle.promise().error);
      return std::move(handle.promise().value);
    }
    std::coroutine_handle<promise_type> handle;
  };

  void read_local(OptionReader& options, const std::string& fallback) {
    method_ = options.choice("method", fallback, kLocalMethods);
    maxiter_ = options.count("maxiter", 100, 1, UINT32_MAX);
  }

  // Values with failures priced (see the top of the file).
  std::vector<double> priced(const std::vector<double>& values) {
    std::vector<double> out = values;
    for (double v : values)
      if (v < kFailed) slowest_ = std::max(slowest_, v);
    for (double& v : out)
      if (!(v < kFailed)) v = slowest_ > 0 ? 10 * slowest_ : 1e9;
    return out;
  }
  Task<double> f(const Point& x) {
    const std::vector<Point> one(1, x);
    co_return (co_await f_all(one))[0];
  }
  Task<std::vector<double>> f_all(const std::vector<Point>& xs) {
    std::vector<Config> configs;
    for (const Point& x : xs) configs.push_back(snap(x));
    const std::vector<double> v = co_await evaluate(std::move(configs));
    co_return priced(v);
  }
  void clip(Point& x) const {
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = std::clamp(x[i], 0.0, std::nextafter(upper()[i], 0.0));
  }
  // The first run starts from the warm start's best, later runs (and a first run without a
  // warm start) from a random unseen configuration: restarts make a multi-start search.
  Point start_point() {
    if (run_number() == 1 && warm_count() > 0 && best() && best_value() < kFailed)
      return position(*best());
    if (std::optional<Config> c = random_unseen()) return position(*c);
    return random_point();
  }

  // A local minimisation from x0 with at most max_evals evaluations.
  Task<Minimum> local(Point x0, std::uint64_t max_evals) {
    if (derivative_free(method_)) co_return co_await nelder_mead(std::move(x0), max_evals);
    co_return co_await descent(std::move(x0), max_evals);
  }

  std::string method_ = "l-bfgs-b";
  std::uint64_t maxiter_ = 100;

 private:
  Task<Minimum> nelder_mead(Point x0, std::uint64_t max_evals);
  Task<Minimum> descent(Point x0, std::uint64_t max_evals);
  Task<Point> gradient(const Point& x, double fx);

  double slowest_ = 0;
};

template <class T>
using Task = Minimizer::Task<T>;

// Nelder-Mead with scipy's coefficients; the first simplex is two values apart per parameter.
Task<Minimum> Minimizer::nelder_mead(Point x0, std::uint64_t max_evals) {
  const std::size_t n = x0.size();
  clip(x0);
  std::vector<Point> simplex{x0};
  for (std::size_t i = 0; i < n; ++i) {
    Point p = x0;
    p[i] += p[i] + 2 * eps() < upper()[i] ? 2 * eps() : -2 * eps();
    clip(p);
    simplex.push_back(std::move(p));
  }
  std::vector<double> fs = co_await f_all(simplex);
  std::uint64_t evals = simplex.size();
  const auto order = [&] {
    std::vector<std::size_t> idx(simplex.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return fs[a] < fs[b]; });
    std::vector<Point> s;
    std::vector<double> v;
    for (std::size_t i : idx) s.push_back(simplex[i]), v.push_back(fs[i]);
    simplex = std::move(s), fs = std::move(v);
  };
  const auto towards = [&](const Point& c, const Point& w, double t) {
    Point p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = c[i] + t * (w[i] - c[i]);
    clip(p);
    return p;
  };
  while (evals < max_evals) {
    order();
    // Converged: every vertex within half a value of the best, or one time throughout.
    double spread = 0;
    for (const Point& p : simplex)
      for (std::size_t i = 0; i < n; ++i) spread = std::max(spread, std::abs(p[i] - simplex[0][i]));
    if (spread < eps() / 2 || fs.back() == fs.front()) break;
    Point centre(n, 0.0);
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t i = 0; i < n; ++i) centre[i] += simplex[k][i] / static_cast<double>(n);
    const Point xr = towards(centre, simplex[n], -1.0);
    const double fr = co_await f(xr);
    ++evals;
    if (fr < fs[0]) {
      const Point xe = towards(centre, simplex[n], -2.0);
      const double fe = co_await f(xe);
      ++evals;
      if (fe < fr)
        simplex[n] = xe, fs[n] = fe;
      else
        simplex[n] = xr, fs[n] = fr;
    } else if (fr < fs[n - 1]) {
      simplex[n] = xr, fs[n] = fr;
    } else {
      const bool outside = fr < fs[n];
      const Point xc = towards(centre, outside ? xr : simplex[n], 0.5);
      const double fc = co_await f(xc);
      ++evals;
      if (fc <= (outside ? fr : fs[n])) {
        simplex[n] = xc, fs[n] = fc;
      } else {  // shrink towards the best
        std::vector<Point> shrunk;
        for (std::size_t k = 1; k <= n; ++k) shrunk.push_back(towards(simplex[0], simplex[k], 0.5));
        const std::vector<double> fk = co_await f_all(shrunk);
        evals += n;
        for (std::size_t k = 1; k <= n; ++k) simplex[k] = shrunk[k - 1], fs[k] = fk[k - 1];
      }
    }
  }
  order();
  co_return Minimum{simplex[0], fs[0]};
}

// Forward differences one value (eps) apart, backward at the upper bound; one batch.
Task<Point> Minimizer::gradient(const Point& x, double fx) {
  std::vector<Point> probes;
  std::vector<double> step;
  for (std::size_t i = 0; i < x.size(); ++i) {
    Point p = x;
    const double h = x[i] + eps() < upper()[i] ? eps() : -eps();
    p[i] += h;
    clip(p);
    probes.push_back(std::move(p));
    step.push_back(h);
  }
  const std::vector<double> fp = co_await f_all(probes);
  Point g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) g[i] = (fp[i] - fx) / step[i];
  co_return g;
}

// Projected quasi-Newton descent (limited-memory BFGS, ten pairs) with a backtracking line search
// whose first step moves the furthest parameter four values.
Task<Minimum> Minimizer::descent(Point x, std::uint64_t max_evals) {
  constexpr std::size_t kMemory = 10;
  clip(x);
  double fx = co_await f(x);
  Point g = co_await gradient(x, fx);
  std::uint64_t evals = 1 + x.size();
  std::vector<Point> ss, ys;
  const auto dot = [](const Point& a, const Point& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  while (evals < max_evals) {
    // Two-loop recursion: d = -H g.
    Point q = g;
    std::vector<double> alpha(ss.size());
    for (std::size_t k = ss.size(); k-- > 0;) {
      alpha[k] = dot(ss[k], q) / dot(ys[k], ss[k]);
      for (std::size_t i = 0; i < q.size(); ++i) q[i] -= alpha[k] * ys[k][i];
    }
    if (!ss.empty()) {
      const double gamma = dot(ss.back(), ys.back()) / dot(ys.back(), ys.back());
      for (double& v : q) v *= gamma;
    }
    for (std::size_t k = 0; k < ss.size(); ++k) {
      const double beta = dot(ys[k], q) / dot(ys[k], ss[k]);
      for (std::size_t i = 0; i < q.size(); ++i) q[i] += ss[k][i] * (alpha[k] - beta);
    }
    Point d(q.size());
    for (std::size_t i = 0; i < d.size(); ++i) {
      d[i] = -q[i];
      // Projected: no move out through a bound the point sits on.
      if ((x[i] <= 0 && d[i] < 0) || (x[i] >= std::nextafter(upper()[i], 0.0) && d[i] > 0))
        d[i] = 0;
    }
    if (dot(d, g) >= 0) {  // not a descent direction: steepest descent, history dropped
      ss.clear(), ys.clear();
      for (std::size_t i = 0; i < d.size(); ++i) d[i] = -g[i];
    }
    double longest = 0;
    for (double v : d) longest = std::max(longest, std::abs(v));
    if (!(longest > 0)) break;
    double t = 4 * eps() / longest;
    Point next;
    double fnext = fx;
    bool moved = false;
    while (t * longest >= eps() / 2 && evals < max_evals) {
      next = x;
      for (std::size_t i = 0; i < x.size(); ++i) next[i] += t * d[i];
      clip(next);
      fnext = co_await f(next);
      ++evals;
      if (fnext < fx + 1e-4 * t * dot(g, d)) {
        moved = true;
        break;
      }
      t /= 2;
    }
    if (!moved) break;
    const Point gnext = co_await gradient(next, fnext);
    evals += x.size();
    Point s(x.size()), y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) s[i] = next[i] - x[i], y[i] = gnext[i] - g[i];
    if (dot(s, y) > 1e-12) {
      ss.push_back(std::move(s)), ys.push_back(std::move(y));
      if (ss.size() > kMemory) ss.erase(ss.begin()), ys.erase(ys.begin());
    }
    x = std::move(next), fx = fnext, g = gnext;
  }
  co_return Minimum{x, fx};
}

class Minimize final : public Minimizer {
 public:
  std::string name() const override { return "minimize"; }

 protected:
  void read_options(OptionReader& options) override { read_local(options, "l-bfgs-b"); }

  Search search() override { (void)co_await local(start_point(), maxiter_); }
};

class BasinHopping final : public Minimizer {
 public:
  std::string name() const override { return "basinhopping"; }

 protected:
  void read_options(OptionReader& options) override {
    read_local(options, "l-bfgs-b");
    temperature_ = options.number("T", 1.0, 0.0, 1e9);
    niter_ = options.count("niter", 100, 1, UINT32_MAX);
  }

  // scipy's basinhopping: random displacements of stepsize (eps), adapted every 50 hops towards
  // half of them accepted.
  Search search() override {
    Minimum current = co_await local(start_point(), maxiter_);
    double stepsize = eps();
    std::uint64_t accepted = 0;
    for (std::uint64_t hop = 1; hop <= niter_; ++hop) {
      Point x = current.x;
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += stepsize * (2 * rng().uniform() - 1);
      const Minimum next = co_await local(std::move(x), maxiter_);
      const bool accept =
          next.f < current.f ||
          (temperature_ > 0 && rng().uniform() < std::exp(-(next.f - current.f) / temperature_));
      if (accept) current = next, ++accepted;
      if (hop % 50 == 0) {
        stepsize = static_cast<double>(accepted) / 50 > 0.5 ? stepsize / 0.9 : stepsize * 0.9;
        accepted = 0;
      }
    }
  }

 private:
  double temperature_ = 1.0;
  std::uint64_t niter_ = 100;
};

class DualAnnealing final : public Minimizer {
 public:
  std::string name() const override { return "dual_annealing"; }

 protected:
  void read_options(OptionReader& options) override {
    read_local(options, "cobyla");
    initial_temp_ = options.number("initial_temp", 5230.0, 0.01, 5e4);
    restart_ratio_ = options.number("restart_temp_ratio", 2e-5, 1e-12, 1.0 - 1e-12);
    qv_ = options.number("visit", 2.62, 1.0 + 1e-6, 3.0 - 1e-6);
    qa_ = options.number("accept", -5.0, -1e4, -1e-6);
    iterations_ = options.count("iterations", 1000, 1, UINT32_MAX);
  }

  Search search() override;

 private:
  Point visit(const Point& x, std::size_t step, double temperature);
  double visit_fn(double temperature);
  double normal() {
    const double u1 = 1.0 - rng().uniform(), u2 = rng().uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
  std::uint64_t local_evals() const {
    return std::clamp<std::uint64_t>(6 * upper().size(), 100, 1000);
  }

  double initial_temp_ = 5230.0, restart_ratio_ = 2e-5, qv_ = 2.62, qa_ = -5.0;
  std::uint64_t iterations_ = 1000;
};

double DualAnnealing::visit_fn(double temperature) {
  constexpr double kTail = 1e8;
  const double pi = std::numbers::pi;
  const double f2 = std::exp((4.0 - qv_) * std::log(qv_ - 1.0));
  const double f3 = std::exp((2.0 - qv_) * std::log(2.0) / (qv_ - 1.0));
  const double f4 =
      std::sqrt(pi) * f2 / (f3 * (3.0 - qv_)) * std::exp(std::log(temperature) / (qv_ - 1.0));
  const double f5 = 1.0 / (qv_ - 1.0) - 0.5;
  const double f6 = pi * (1.0 - f5) / std::sin(pi * (1.0 - f5)) / std::exp(std::lgamma(2.0 - f5));
  const double sigma = std::exp(-(qv_ - 1.0) * std::log(f6 / f4) / (3.0 - qv_));
  const double den = std::exp((qv_ - 1.0) * std::log(std::abs(normal())) / (3.0 - qv_));
  double v = sigma * normal() / den;
  if (!(v <= kTail)) v = kTail * rng().uniform();
  if (!(v >= -kTail)) v = -kTail * rng().uniform();
  return v;
}

// scipy's visiting step: all coordinates in the first dim steps of a chain, one after.
Point DualAnnealing::visit(const Point& x, std::size_t step, double temperature) {
  Point out = x;
  const std::size_t dim = x.size();
  const auto wrap = [&](std::size_t i) {
    const double range = upper()[i];
    out[i] = std::fmod(std::fmod(out[i], range) + range, range);
    if (out[i] < 1e-10) out[i] += 1e-10;
  };
  if (step < dim) {
    for (std::size_t i = 0; i < dim; ++i) out[i] += visit_fn(temperature), wrap(i);
  } else {
    out[step - dim] += visit_fn(temperature);
    wrap(step - dim);
  }
  return out;
}

Minimizer::Search DualAnnealing::search() {
  const std::size_t dim = upper().size();
  Point current = start_point();
  double energy = co_await f(current);
  Point best_x = current;
  double best_f = energy;
  const double t1 = std::exp((qv_ - 1) * std::log(2.0)) - 1.0;
  for (std::uint64_t i = 0; i < iterations_; ++i) {
    const double t2 = std::exp((qv_ - 1) * std::log(static_cast<double>(i) + 2.0)) - 1.0;
    const double temperature = initial_temp_ * t1 / t2;
    if (temperature < initial_temp_ * restart_ratio_) break;  // cold: a fresh run restarts
    const double step_temperature = temperature / static_cast<double>(i + 1);
    bool improved = i == 0;
    for (std::size_t j = 0; j < 2 * dim; ++j) {
      const Point x = visit(current, j, temperature);
      const double e = co_await f(x);
      if (e < energy) {
        current = x, energy = e;
        if (e < best_f) best_f = e, best_x = x, improved = true;
        continue;
      }
      // Generalised acceptance (qa < 0).
      const double p = 1.0 - (1.0 - qa_) * (e - energy) / step_temperature;
      const double accept = p <= 0 ? 0.0 : std::exp(std::log(p) / (1.0 - qa_));
      if (rng().uniform() <= accept) current = x, energy = e;
    }
    if (improved) {
      const Minimum m = co_await local(best_x, local_evals());
      if (m.f < best_f) best_f = m.f, best_x = m.x, current = m.x, energy = m.f;
    }
  }
}

}  // namespace

std::unique_ptr<Strategy> make_minimize() { return std::make_unique<Minimize>(); }
std::unique_ptr<Strategy> make_basinhopping() { return std::make_unique<BasinHopping>(); }
std::unique_ptr<Strategy> make_dual_annealing() { return std::make_unique<DualAnnealing>(); }

}  // namespace ktune::native
