// The coroutine driver and the scaled space of the sequential strategies (see sequential.h).
#include "strategies/native/sequential.h"

#include <algorithm>
#include <cmath>

namespace ktune::native {

namespace {

// Evaluations in a row answered wholly from memory before the search is taken as circling
// among known configurations and started again.
constexpr std::uint64_t kFreeBatchLimit = 200;
// Runs of the search in one ask() that propose nothing before ask() gives up (the base's
// safety net then proposes an unseen configuration).
constexpr int kBarrenRuns = 8;

}  // namespace

SequentialStrategy::Search& SequentialStrategy::Search::operator=(Search&& other) noexcept {
  if (this != &other) {
    if (handle) handle.destroy();
    handle = other.handle;
    other.handle = {};
  }
  return *this;
}

SequentialStrategy::Evaluation SequentialStrategy::evaluate(std::vector<Config> configs) {
  for (Config& c : configs)
    if (!c.empty() && !space().is_valid(c)) c.clear();
  return {*this, std::move(configs)};
}

bool SequentialStrategy::Evaluation::await_ready() {
  const bool all_known = std::all_of(configs.begin(), configs.end(), [&](const Config& c) {
    return c.empty() || self.known(c).has_value();
  });
  if (all_known && ++self.free_batches_ <= kFreeBatchLimit) return true;
  // Suspend: on configurations to propose, or (all known, past the limit) to be restarted.
  self.waiting_ = configs;
  self.next_ = 0;
  return false;
}

std::vector<double> SequentialStrategy::Evaluation::await_resume() {
  std::vector<double> values;
  values.reserve(configs.size());
  for (const Config& c : configs) {
    const std::optional<double> v = c.empty() ? std::nullopt : self.known(c);
    values.push_back(v ? *v : kFailed);
  }
  return values;
}

void SequentialStrategy::configure(OptionReader& options) {
  read_options(options);
  drop_search();
  waiting_.clear();
  next_ = 0;
  free_batches_ = 0;
  runs_ = 0;
  std::size_t most = 1;
  for (const auto& p : space().params()) most = std::max(most, p.values.size());
  eps_ = 1.0 / static_cast<double>(most);
  upper_.clear();
  for (const auto& p : space().params())
    upper_.push_back(eps_ * static_cast<double>(p.values.size()));
}

bool SequentialStrategy::advance() {
  if (!search_ || search_->handle.done()) {
    if (search_ && search_->handle.promise().error)
      std::rethrow_exception(search_->handle.promise().error);
    drop_search();
    search_.emplace(search());
    ++runs_;
    waiting_.clear();
    free_batches_ = 0;
  }
  const std::coroutine_handle<> next = leaf_ ? leaf_ : search_->handle;
  leaf_ = {};
  next.resume();
  if (search_->handle.done()) {
    if (std::exception_ptr error = search_->handle.promise().error) {
      drop_search();
      std::rethrow_exception(error);
    }
    return false;
  }
  return true;
}

std::vector<Config> SequentialStrategy::propose(std::size_t max_count) {
  std::vector<Config> out;
  int barren = 0;
  while (out.size() < max_count) {
    if (!waiting_.empty()) {
      while (out.size() < max_count && next_ < waiting_.size()) {
        const Config& c = waiting_[next_++];
        if (!c.empty() && propose_if_new(c, out)) free_batches_ = 0;
      }
      if (next_ < waiting_.size()) return out;
      const bool told = std::all_of(waiting_.begin(), waiting_.end(),
                                    [&](const Config& c) { return c.empty() || known(c); });
      if (!told) return out;
      waiting_.clear();
      if (free_batches_ > kFreeBatchLimit) {  // circling among known ones: start again
        drop_search();
        if (out.empty() && ++barren > kBarrenRuns) return out;
      }
    }
    const std::size_t before = out.size();
    if (!advance()) {
      // The run ended; the next starts fresh (the best so far is kept by the algorithms).
      drop_search();
      if (out.size() == before && ++barren > kBarrenRuns) return out;
    }
  }
  return out;
}

Point SequentialStrategy::position(const Config& c) const {
  Point x(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) x[i] = eps_ * (static_cast<double>(c[i]) + 0.5);
  return x;
}

Point SequentialStrategy::random_point() {
  Point x(upper_.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng().uniform() * upper_[i];
  return x;
}

Config SequentialStrategy::snap(const Point& x) {
  Config c(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double n = static_cast<double>(space().params()[i].values.size());
    const double j = std::floor(x[i] / eps_);
    c[i] = static_cast<std::uint32_t>(std::clamp(std::isfinite(j) ? j : 0.0, 0.0, n - 1));
  }
  if (space().is_valid(c)) return c;
  for (Neighbourhood kind : {Neighbourhood::kAdjacent, Neighbourhood::kHamming}) {
    const std::vector<Config> near = space().neighbours(c, kind);
    if (near.empty()) continue;
    const auto distance = [&](const Config& y) {
      double d = 0;
      const Point p = position(y);
      for (std::size_t i = 0; i < p.size(); ++i) d += (p[i] - x[i]) * (p[i] - x[i]);
      return d;
    };
    return *std::min_element(near.begin(), near.end(), [&](const Config& a, const Config& b) {
      return distance(a) < distance(b);
    });
  }
  return {};
}

Config SequentialStrategy::repair(Config c) { return snap(position(c)); }

std::uint64_t SequentialStrategy::valid_count(std::uint64_t limit) const {
  // A space too large to list holds more than 2^19 valid configurations: never walked here.
  const std::size_t listed = valid_listed();
  return listed ? std::min<std::uint64_t>(listed, limit) : limit;
}

}  // namespace ktune::native
