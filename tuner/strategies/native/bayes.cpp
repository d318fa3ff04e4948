// Bayesian optimisation over the valid configurations, then a second strategy from its best.
//
// First stage: a Gaussian process on the logarithm of the time. A configuration is a point
// whose coordinates are the positions of its values in their parameters' lists, scaled to
// [0, 1] (a categorical parameter: same value or not). The kernel mixes a Matérn 5/2 kernel of
// the whole distance with the mean of one such kernel per parameter (an additive part, which
// learns what each parameter's values do from few measurements). After a random sample, the
// candidate of largest expected improvement is proposed next, with a margin that grows while
// the search stalls (`xi_stall` per result since the fastest last improved, `stall_cap` at
// most, during the first `stall_until` proposals), so that a search stuck on a plateau looks
// where the model is unsure; after `focus_after` points the
// candidates are those that recombine the values of the fastest configurations, or are Hamming
// neighbours of the fastest few. Proposals whose results are outstanding join the model at
// their predicted value (the "kriging believer"), so the loop may ask ahead. The model is
// updated incrementally: every candidate keeps its column of L^-1 K (L the Cholesky factor of
// the kernel matrix of the points so far), so that adding a point costs one pass over the
// candidates. The kernel's widths and the weight of its additive part start at the options'
// values and are refitted by marginal likelihood once `fit` results are in, and again whenever
// they have grown by half (the model is then rebuilt: one pass over the candidates per point).
//
// Second stage: after `switch` evaluations another native strategy (`then`, the genetic
// algorithm by default) continues with the fastest `elite` configurations as its warm start;
// what the first stage measured is answered from memory, so nothing is proposed twice.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "ktune/error.h"
#include "strategies/native/common.h"
#include "strategies/native/native.h"

namespace ktune::native {

namespace {

constexpr const char* kName = "bayes";
// Variance added to the kernel's diagonal (the recorded times are exact; this keeps the
// Cholesky factor well conditioned).
constexpr double kNugget = 1e-4;
// Doubles kept for the candidates' columns at most (128 MiB): larger pools are sampled down.
constexpr std::uint64_t kColumnLimit = 1u << 24;
// Second-stage proposals answered from memory in one ask() before it returns what it has.
constexpr int kMemoryRounds = 100000;

double normal_pdf(double z) { return 0.3989422804014327 * std::exp(-0.5 * z * z); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z * 0.7071067811865476); }

// a . b over the first n entries, with four sums so that the loop is not one long chain of
// dependent additions (the order is fixed: the result does not depend on the compiler).
double dot(const double* a, const double* b, std::size_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// The first stage: a NativeStrategy, so that it shares the bookkeeping of the others.
class GaussianProcessSearch final : public NativeStrategy {
 public:
  std::string name() const override { return kName; }

  // Read by the two-stage wrapper after start().
  std::uint64_t switch_after() const { return switch_; }
  const std::string& then() const { return then_; }
  std::uint64_t elite() const { return elite_; }
  std::size_t warm() const { return warm_count(); }

 protected:
  void configure(OptionReader& options) override {
    sample_ = options.count("sample", 1, 1, 1u << 20);
    lengthscale_ = options.number("lengthscale", 1.0, 1e-3, 1e3);
    additive_ = options.number("additive", 0.8, 0.0, 1.0);
    add_lengthscale_ = options.number("additive_lengthscale", 0.3, 1e-3, 1e3);
    kernel_ = options.choice("kernel", "matern52", {"matern32", "matern52", "rbf"});
    xi_ = options.number("xi", 0.0, 0.0, 10.0);
    focus_after_ = options.count("focus_after", 100, 0, 1u << 20);
    recombine_ = options.count("recombine", 10, 0, 1u << 20);
    local_ = options.count("local", 3, 0, 1u << 20);
    pool_limit_ = options.count("pool", 1u << 15, 16, 1u << 22);
    switch_ = options.count("switch", 200, 1, 100000);
    then_ = options.choice("then", "genetic_algorithm",
                           {"genetic_algorithm", "greedy_ils", "greedy_mls", "mls", "annealing"});
    elite_ = options.count("elite", 30, 1, 1u << 20);
    fit_ = options.count("fit", 5, 0, 1u << 20);
    fit_range_ = options.count("fit_range", 1, 0, 4);
    fit_each_ = options.flag("fit_each", false);
    xi_stall_ = options.number("xi_stall", 0.1, 0.0, 10.0);
    stall_cap_ = options.number("stall_cap", 1e9, 0.0, 1e9);
    stall_until_ = options.count("stall_until", 50, 0, 1u << 30);
    stall_ = 0;
    next_fit_ = fit_;

    ready_ = false;
    own_ = 0;
    clear_points();
    cand_.clear();
    cand_index_.clear();
    mean_ = std::numeric_limits<double>::quiet_NaN();
    scale_ = 1;
    worst_ = 0;
  }

  std::vector<Config> propose(std::size_t max_count) override {
    if (!ready_) prepare();
    std::vector<Config> out;
    while (out.size() < max_count && configs_.size() < capacity_) {
      std::optional<Config> c;
      double believed = std::numeric_limits<double>::quiet_NaN();
      // The random sample comes on top of a warm start: the model fed on other GPUs'
      // favourites alone would search around them only (every seed the same proposals).
      if (own_ >= sample_ && have_success()) {
        if (const auto pick = best_candidate()) {
          c = cand_[pick->first].config;
          believed = pick->second;
        }
      }
      if (!c) c = random_unseen();
      if (!c) break;
      if (!propose_if_new(*c, out)) {
        if (auto it = cand_index_.find(*c); it != cand_index_.end())
          cand_[it->second].active = false;
        continue;
      }
      add_point(*c, believed, /*told=*/false);
      ++own_;
    }
    return out;
  }

  void on_result(const Config& config, double value) override {
    if (!ready_) prepare();
    const auto it = index_.find(config);
    if (it == index_.end()) {
      // A warm start, or the base class's safety net: learn from it while there is room.
      if (configs_.size() < capacity_) {
        add_point(config, value, /*told=*/true);
        maybe_fit();
      }
      return;
    }
    y_[it->second] = value;
    told_[it->second] = true;
    // The base class has already taken this result into best(): did it improve on the fastest
    // (a warm start's included)?
    stall_ = std::isfinite(value) && best() && *best() == config ? 0 : stall_ + 1;
    refresh();
    maybe_fit();
  }

 private:
  struct Candidate {
    Config config;
    std::vector<double> v;  // L^-1 k(points, config)
    double var = 1.0;       // posterior variance: 1 - |v|^2
    double va = 0, vb = 0;  // v . a, v . b
    bool active = true;     // not proposed yet
  };

  void prepare() {
    ready_ = true;
    capacity_ = switch_ + warm_count() + 1;
    // Per parameter, by the distance between two value positions: the squared scaled distance
    // and the parameter's own kernel.
    const auto& params = space().params();
    d2_table_.assign(params.size(), {});
    tunable_ = 0;
    for (std::size_t p = 0; p < params.size(); ++p) {
      const std::size_t n = params[p].values.size();
      if (n < 2) continue;
      ++tunable_;
      for (std::size_t k = 0; k < n; ++k) {
        const double d = params[p].categorical()
                             ? (k ? 1.0 : 0.0)
                             : static_cast<double>(k) / static_cast<double>(n - 1);
        d2_table_[p].push_back(d * d);
      }
    }
    shape_ = {lengthscale_, additive_, std::vector<double>(params.size(), add_lengthscale_)};
    add_table_ = additive_table(shape_);
    // The candidates: every valid configuration when they fit, else a random sample of them.
    const std::uint64_t limit =
        std::max<std::uint64_t>(16, std::min<std::uint64_t>(pool_limit_, kColumnLimit / capacity_));
    std::vector<Config> pool;
    const std::size_t listed = valid_listed();
    if (listed > 0 && listed <= limit) {
      pool.reserve(listed);
      for (std::size_t i = 0; i < listed; ++i) pool.push_back(valid_at(i));
    } else {
      std::unordered_set<Config, ConfigHash> chosen;
      for (std::uint64_t t = 0; t < 4 * limit && pool.size() < limit; ++t) {
        Config c = random_valid();
        if (chosen.insert(c).second) pool.push_back(std::move(c));
      }
    }
    cand_.clear();
    cand_.reserve(pool.size());
    for (Config& c : pool) {
      Candidate k;
      k.config = std::move(c);
      k.v.reserve(std::min<std::uint64_t>(capacity_, 1024));
      cand_index_.emplace(k.config, cand_.size());
      cand_.push_back(std::move(k));
    }
  }

  double base_kernel(double r2) const {
    if (kernel_ == "rbf") return std::exp(-0.5 * r2);
    const double r = std::sqrt(r2);
    if (kernel_ == "matern32") return (1 + std::sqrt(3.0) * r) * std::exp(-std::sqrt(3.0) * r);
    return (1 + std::sqrt(5.0) * r + 5.0 / 3.0 * r2) * std::exp(-std::sqrt(5.0) * r);
  }

  // The kernel's widths and the weight of its additive part.
  struct Shape {
    double lengthscale = 1, additive = 0;
    // Per parameter, the width of its own kernel in the additive part; 0: "the same value or
    // not" (what one value does says nothing about its neighbours').
    std::vector<double> widths;
    bool operator==(const Shape&) const = default;
  };

  // Per parameter, by the distance between two value positions: that parameter's kernel.
  std::vector<std::vector<double>> additive_table(const Shape& shape) const {
    std::vector<std::vector<double>> table(d2_table_.size());
    for (std::size_t p = 0; p < d2_table_.size(); ++p) {
      const double w = shape.widths[p];
      for (std::size_t k = 0; k < d2_table_[p].size(); ++k)
        table[p].push_back(w > 0 ? base_kernel(d2_table_[p][k] / (w * w)) : (k ? 0.0 : 1.0));
    }
    return table;
  }

  // (1 - additive) k(|x - z| / lengthscale) + additive * mean over the tunable parameters p of
  // k(|x_p - z_p| / additive_lengthscale).
  double kernel(const Config& x, const Config& z, const Shape& shape,
                const std::vector<std::vector<double>>& add_table) const {
    double d2 = 0, add = 0;
    for (std::size_t p = 0; p < x.size(); ++p) {
      if (d2_table_[p].empty()) continue;
      const std::size_t k = x[p] > z[p] ? x[p] - z[p] : z[p] - x[p];
      d2 += d2_table_[p][k];
      add += add_table[p][k];
    }
    const double full = base_kernel(d2 / (shape.lengthscale * shape.lengthscale));
    if (shape.additive <= 0 || tunable_ == 0) return full;
    return (1 - shape.additive) * full + shape.additive * add / static_cast<double>(tunable_);
  }
  double kernel(const Config& x, const Config& z) const { return kernel(x, z, shape_, add_table_); }

  // The log marginal likelihood of the told points' standardised values under `shape`, with
  // the kernel's amplitude at its most likely value: -n/2 log(y' K^-1 y / n) - log det L.
  double log_likelihood(const Shape& shape, const std::vector<std::size_t>& points,
                        const std::vector<double>& y) const {
    const auto table = additive_table(shape);
    const std::size_t n = points.size();
    std::vector<std::vector<double>> l(n);
    std::vector<double> alpha(n);
    double log_det = 0;
    for (std::size_t i = 0; i < n; ++i) {
      l[i].resize(i + 1);
      for (std::size_t j = 0; j < i; ++j)
        l[i][j] = (kernel(configs_[points[i]], configs_[points[j]], shape, table) -
                   dot(l[i].data(), l[j].data(), j)) /
                  l[j][j];
      l[i][i] = std::sqrt(std::max(1.0 + kNugget - dot(l[i].data(), l[i].data(), i), 1e-12));
      alpha[i] = (y[i] - dot(l[i].data(), alpha.data(), i)) / l[i][i];
      log_det += std::log(l[i][i]);
    }
    const double fit =
        std::max(dot(alpha.data(), alpha.data(), n) / static_cast<double>(n), 1e-300);
    return -0.5 * static_cast<double>(n) * std::log(fit) - log_det;
  }

  // Once `fit` points are told, and again whenever they have grown by half: the shape of
  // largest marginal likelihood among the options' widths and whole-distance weight each
  // halved, kept or doubled (2^fit_range at most); with `fit_each`, then each parameter's own
  // width in turn, among those and 0. The model is rebuilt when the shape changes.
  void maybe_fit() {
    if (fit_ == 0 || !have_success()) return;
    std::vector<std::size_t> points;
    for (std::size_t i = 0; i < configs_.size(); ++i)
      if (told_[i]) points.push_back(i);
    if (points.size() < next_fit_) return;
    next_fit_ = std::max<std::uint64_t>(points.size() + 1, points.size() * 3 / 2);
    std::vector<double> y;
    for (const std::size_t i : points) y.push_back((model_value(i) - mean_) / scale_);
    // Factors 1, 1/2, 2, 1/4, 4 ... up to 2^fit_range. The shape in use is the first best, so
    // a tie keeps it.
    std::vector<double> factors = {1.0};
    for (std::uint64_t k = 1; k <= fit_range_; ++k) {
      factors.push_back(std::ldexp(1.0, -static_cast<int>(k)));
      factors.push_back(std::ldexp(1.0, static_cast<int>(k)));
    }
    Shape best = shape_;
    double best_ll = log_likelihood(shape_, points, y);
    const auto consider = [&](const Shape& s) {
      if (s == shape_) return;  // its likelihood is best_ll's start
      const double ll = log_likelihood(s, points, y);
      if (ll > best_ll) {
        best_ll = ll;
        best = s;
      }
    };
    for (const double fl : factors)
      for (const double fa : factors)
        for (const double fw : factors)
          consider({lengthscale_ * fl, 1 - std::min(1.0, (1 - additive_) * fw),
                    std::vector<double>(d2_table_.size(), add_lengthscale_ * fa)});
    if (fit_each_) {
      std::vector<double> widths = {0.0};
      for (const double f : factors) widths.push_back(add_lengthscale_ * f);
      for (std::size_t p = 0; p < d2_table_.size(); ++p) {
        if (d2_table_[p].empty()) continue;
        const Shape base = best;
        for (const double w : widths) {
          if (w == base.widths[p]) continue;
          Shape s = base;
          s.widths[p] = w;
          consider(s);
        }
      }
    }
    if (best == shape_) return;
    shape_ = best;
    add_table_ = additive_table(shape_);
    rebuild();
  }

  // The model without points (the candidates' columns are the caller's to reset).
  void clear_points() {
    configs_.clear();
    y_.clear();
    told_.clear();
    index_.clear();
    chol_.clear();
    a_.clear();
    b_.clear();
  }

  // Every point joins the model again, in the order it joined, under the current shape.
  void rebuild() {
    std::vector<Config> configs = std::move(configs_);
    std::vector<double> y = std::move(y_);
    std::vector<bool> told = std::move(told_);
    clear_points();
    for (Candidate& k : cand_) {
      if (!k.active) continue;
      k.v.clear();
      k.var = 1.0;
      k.va = k.vb = 0;
    }
    for (std::size_t i = 0; i < configs.size(); ++i)
      add_point(configs[i], y[i], told[i], /*update=*/false);
    refresh();
  }

  bool have_success() const { return std::isfinite(mean_); }

  // What point i stands for in the model: its log time when told and working, the slowest
  // working log time when it failed, the believed log time (or the mean) while outstanding.
  double model_value(std::size_t i) const {
    if (told_[i]) return std::isfinite(y_[i]) ? std::log(y_[i]) : worst_;
    return std::isfinite(y_[i]) ? y_[i] : (have_success() ? mean_ : 0.0);
  }

  // Recomputes the standardisation and a = L^-1 y, and updates the candidates' v . a from the
  // first entry of a that changed (in a sequential run, the last one).
  void refresh() {
    double sum = 0, sum2 = 0, worst = -std::numeric_limits<double>::infinity();
    std::size_t ok = 0;
    for (std::size_t i = 0; i < configs_.size(); ++i) {
      if (!told_[i] || !std::isfinite(y_[i])) continue;
      const double l = std::log(y_[i]);
      sum += l;
      sum2 += l * l;
      worst = std::max(worst, l);
      ++ok;
    }
    if (ok == 0) {
      mean_ = std::numeric_limits<double>::quiet_NaN();
      scale_ = 1;
      worst_ = 0;
    } else {
      mean_ = sum / static_cast<double>(ok);
      const double var = sum2 / static_cast<double>(ok) - mean_ * mean_;
      scale_ = var > 1e-12 ? std::sqrt(var) : 1.0;
      worst_ = worst;
    }
    const std::size_t n = configs_.size();
    std::vector<double> a(n);
    for (std::size_t i = 0; i < n; ++i)
      a[i] = (model_value(i) - dot(chol_[i].data(), a.data(), i)) / chol_[i][i];
    std::size_t first = 0;
    while (first < n && a[first] == a_[first]) ++first;
    if (first < n) {
      std::vector<double> delta(n - first);
      for (std::size_t i = first; i < n; ++i) delta[i - first] = a[i] - a_[i];
      for (Candidate& k : cand_)
        if (k.active) k.va += dot(k.v.data() + first, delta.data(), n - first);
    }
    a_ = std::move(a);
  }

  // Appends a point: value is its time when told, its believed log time (or NaN) when not.
  // Without `update`, the standardisation is left for the caller to refresh.
  void add_point(const Config& c, double value, bool told, bool update = true) {
    const std::size_t n = configs_.size();
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = (kernel(c, configs_[i]) - dot(chol_[i].data(), v.data(), i)) / chol_[i][i];
    const double vv = dot(v.data(), v.data(), n);
    const double diag = std::sqrt(std::max(1.0 + kNugget - vv, 1e-12));
    std::vector<double> row = v;
    row.push_back(diag);
    chol_.push_back(std::move(row));
    configs_.push_back(c);
    y_.push_back(value);
    told_.push_back(told);
    index_.emplace(c, n);
    // b = L^-1 1 and a = L^-1 y gain one entry each.
    b_.push_back((1.0 - dot(v.data(), b_.data(), n)) / diag);
    a_.push_back((model_value(n) - dot(v.data(), a_.data(), n)) / diag);
    if (auto it = cand_index_.find(c); it != cand_index_.end()) cand_[it->second].active = false;
    for (Candidate& k : cand_) {
      if (!k.active) continue;
      const double col = (kernel(k.config, c) - dot(k.v.data(), v.data(), n)) / diag;
      k.v.push_back(col);
      k.var -= col * col;
      k.va += col * a_[n];
      k.vb += col * b_[n];
    }
    if (told && update) refresh();
  }

  // Where to look: every candidate, or after focus_after points those made of values of the
  // fastest `recombine` configurations and the Hamming neighbours of the fastest `local`.
  std::vector<std::size_t> focus() const {
    std::vector<std::size_t> subset;
    if (configs_.size() < focus_after_ || (recombine_ == 0 && local_ == 0)) return subset;
    std::vector<std::pair<double, std::size_t>> ranked;
    for (std::size_t i = 0; i < configs_.size(); ++i)
      if (told_[i] && std::isfinite(y_[i])) ranked.emplace_back(y_[i], i);
    std::sort(ranked.begin(), ranked.end());
    std::vector<bool> in(cand_.size(), false);
    if (recombine_ > 0) {
      const std::size_t d = dimensions();
      std::vector<std::vector<bool>> allowed(d);
      for (std::size_t p = 0; p < d; ++p)
        allowed[p].assign(space().params()[p].values.size(), false);
      for (std::size_t r = 0; r < ranked.size() && r < recombine_; ++r)
        for (std::size_t p = 0; p < d; ++p) allowed[p][configs_[ranked[r].second][p]] = true;
      for (std::size_t i = 0; i < cand_.size(); ++i) {
        if (!cand_[i].active) continue;
        bool ok = true;
        for (std::size_t p = 0; p < d && ok; ++p) ok = allowed[p][cand_[i].config[p]];
        in[i] = ok;
      }
    }
    for (std::size_t r = 0; r < ranked.size() && r < local_; ++r)
      for (const Config& c :
           space().neighbours(configs_[ranked[r].second], Neighbourhood::kHamming))
        if (const auto it = cand_index_.find(c);
            it != cand_index_.end() && cand_[it->second].active)
          in[it->second] = true;
    for (std::size_t i = 0; i < cand_.size(); ++i)
      if (in[i]) subset.push_back(i);
    return subset;
  }

  // The candidate of largest expected improvement (ties: the first) and its predicted log time.
  std::optional<std::pair<std::size_t, double>> best_candidate() {
    double best_y = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < configs_.size(); ++i)
      if (told_[i] && std::isfinite(y_[i])) best_y = std::min(best_y, std::log(y_[i]));
    const double f = (best_y - mean_) / scale_;
    // The margin: xi, and while the search stalls early on, xi_stall per stalled result.
    const double xi =
        xi_ +
        (own_ < stall_until_ ? std::min(stall_cap_, xi_stall_ * static_cast<double>(stall_)) : 0.0);
    std::optional<std::pair<std::size_t, double>> pick;
    double best_ei = -1;
    const auto consider = [&](std::size_t i) {
      Candidate& k = cand_[i];
      if (!k.active) return;
      if (seen(k.config)) {  // proposed outside the model (warm start, safety net)
        k.active = false;
        return;
      }
      // mu = v . L^-1 ((y - mean) / scale) = (v . a - mean v . b) / scale
      const double mu = (k.va - mean_ * k.vb) / scale_;
      const double sigma = std::sqrt(std::max(k.var, 1e-12));
      const double gain = f - mu - xi;
      const double z = gain / sigma;
      const double ei = gain * normal_cdf(z) + sigma * normal_pdf(z);
      if (ei > best_ei) {
        best_ei = ei;
        // Believed no faster than the fastest told: beliefs below it would feed on each other.
        pick = {i, std::max(mean_ + scale_ * mu, best_y)};
      }
    };
    const std::vector<std::size_t> subset = focus();
    if (!subset.empty()) {
      for (const std::size_t i : subset) consider(i);
      if (pick) return pick;
    }
    for (std::size_t i = 0; i < cand_.size(); ++i) consider(i);
    return pick;
  }

  // Options.
  std::uint64_t sample_ = 1;
  double lengthscale_ = 1.0;
  double additive_ = 0.8, add_lengthscale_ = 0.3;
  std::string kernel_ = "matern52";
  double xi_ = 0.0;
  std::uint64_t focus_after_ = 100, recombine_ = 10, local_ = 3;
  std::uint64_t pool_limit_ = 1u << 15;
  std::uint64_t switch_ = 200;
  std::string then_ = "genetic_algorithm";
  std::uint64_t elite_ = 30;
  std::uint64_t fit_ = 5, fit_range_ = 1;
  bool fit_each_ = false;
  double xi_stall_ = 0.1, stall_cap_ = 1e9;
  std::uint64_t stall_until_ = 50;
  std::uint64_t stall_ = 0;  // own told results since the fastest improved
  // Model.
  Shape shape_;                 // in use: the options', or the fitted
  std::uint64_t next_fit_ = 0;  // told points at which the shape is fitted next
  bool ready_ = false;
  std::uint64_t capacity_ = 0;  // points the model takes at most
  std::uint64_t own_ = 0;       // points it proposed (the warm start's are not)
  std::vector<std::vector<double>> d2_table_, add_table_;  // add_table_: for shape_
  std::size_t tunable_ = 0;
  std::vector<Config> configs_;  // the points, in the order they joined
  std::vector<double> y_;        // time (told) or believed log time (outstanding)
  std::vector<bool> told_;
  std::unordered_map<Config, std::size_t, ConfigHash> index_;
  std::vector<std::vector<double>> chol_;  // rows of the lower triangular factor L
  std::vector<double> a_, b_;              // L^-1 y, L^-1 1
  double mean_ = std::numeric_limits<double>::quiet_NaN(), scale_ = 1, worst_ = 0;
  std::vector<Candidate> cand_;
  std::unordered_map<Config, std::size_t, ConfigHash> cand_index_;
};

// The two stages. Proposals are passed through; once the first stage has made `switch`
// proposals and all of them are told, the second starts from the fastest, and its proposals of
// configurations measured before are answered from memory.
class TwoStage final : public Strategy {
 public:
  std::string name() const override { return kName; }

  void start(const StrategyContext& context) override {
    context_ = context;
    first_ = std::make_unique<GaussianProcessSearch>();
    first_->start(context);
    second_.reset();
    results_.clear();
    outstanding_ = 0;
    proposed_ = 0;
  }

  std::vector<Config> ask(std::size_t max_count) override {
    if (!first_)
      throw Error(ErrorKind::kInternal, fmt::format("strategy '{}': ask() before start()", kName));
    std::vector<Config> out;
    if (max_count == 0) return out;
    if (!second_) {
      const std::uint64_t limit = first_->switch_after() + first_->warm();
      if (proposed_ < limit) {
        out = first_->ask(
            static_cast<std::size_t>(std::min<std::uint64_t>(max_count, limit - proposed_)));
        for (const Config& c : out) {
          results_.emplace(c, std::nullopt);
          ++outstanding_;
        }
        proposed_ += out.size();
        if (!out.empty() || outstanding_ > 0 || first_->exhausted()) return out;
      }
      if (outstanding_ > 0) return out;  // the second stage starts from all of the first
      start_second();
    }
    for (int round = 0; round < kMemoryRounds && out.size() < max_count; ++round) {
      const std::vector<Config> more = second_->ask(max_count - out.size());
      bool answered = false;
      for (const Config& c : more) {
        const auto it = results_.find(c);
        if (it == results_.end()) {
          results_.emplace(c, std::nullopt);
          ++outstanding_;
          out.push_back(c);
        } else if (it->second) {
          second_->tell(c, *it->second);
          answered = true;
        }  // else outstanding: cannot be, the second stage starts when all is told
      }
      if (!answered) break;
    }
    return out;
  }

  void tell(const Config& config, const Outcome& outcome) override {
    auto it = results_.find(config);
    if (it == results_.end()) it = results_.emplace(config, std::nullopt).first;
    if (it->second) return;  // told twice: keep the first answer
    it->second = outcome;
    if (outstanding_ > 0) --outstanding_;
    if (!second_) {
      first_->tell(config, outcome);
    } else {
      second_->tell(config, outcome);
    }
  }

  bool exhausted() const override {
    return second_ ? second_->exhausted() : first_ && first_->exhausted();
  }

 private:
  void start_second() {
    std::vector<std::pair<double, Config>> ranked;
    for (const auto& [c, o] : results_)
      if (o && is_ok(o->status) && std::isfinite(o->time_ms)) ranked.emplace_back(o->time_ms, c);
    std::sort(ranked.begin(), ranked.end());  // by time, then by configuration: deterministic
    StrategyContext context = context_;
    context.options.clear();
    context.warm_start.clear();
    for (std::size_t i = 0; i < ranked.size() && i < first_->elite(); ++i)
      context.warm_start.push_back(ranked[i].second);
    if (context.budget != UINT64_MAX)
      context.budget = context.budget > proposed_ ? context.budget - proposed_ : 0;
    second_ = make_strategy(first_->then());
    second_->start(context);
  }

  StrategyContext context_;
  std::unique_ptr<GaussianProcessSearch> first_;
  std::unique_ptr<Strategy> second_;
  std::unordered_map<Config, std::optional<Outcome>, ConfigHash> results_;
  std::size_t outstanding_ = 0;
  std::uint64_t proposed_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_bayes() { return std::make_unique<TwoStage>(); }

}  // namespace ktune::native
