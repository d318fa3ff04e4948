// The shared machinery of the native strategies (see common.h).
#include "strategies/native/common.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "ktune/error.h"

namespace ktune::native {

namespace {

// Valid configurations kept in memory for uniform sampling; larger spaces are sampled by
// rejection from the Cartesian product.
constexpr std::uint64_t kListLimit = 1u << 19;
// Rejection-sampling attempts before falling back to a pass over the valid space.
constexpr int kRejectionTries = 4096;
constexpr int kListTries = 64;

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

}  // namespace

// ---- options -------------------------------------------------------------------------------

const std::string* OptionReader::find(const std::string& key) {
  known_.push_back(key);
  const auto it = options_.find(key);
  return it == options_.end() ? nullptr : &it->second;
}

void OptionReader::bad(const std::string& key, const std::string& value,
                       const std::string& expected) const {
  throw Error(ErrorKind::kUsage, fmt::format("strategy '{}': option '{}': expected {}, got '{}'",
                                             strategy_, key, expected, value));
}

double OptionReader::number(const std::string& key, double fallback, double low, double high) {
  const std::string* text = find(key);
  if (!text) return fallback;
  const std::string expected = fmt::format("a number in [{}, {}]", low, high);
  double v = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v) || v < low || v > high)
    bad(key, *text, expected);
  return v;
}

std::uint64_t OptionReader::count(const std::string& key, std::uint64_t fallback, std::uint64_t low,
                                  std::uint64_t high) {
  const std::string* text = find(key);
  if (!text) return fallback;
  const std::string expected = fmt::format("a whole number in [{}, {}]", low, high);
  std::uint64_t v = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || ptr != end || v < low || v > high) bad(key, *text, expected);
  return v;
}

bool OptionReader::flag(const std::string& key, bool fallback) {
  const std::string* text = find(key);
  if (!text) return fallback;
  const std::string v = lower(*text);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad(key, *text, "true or false");
}

std::string OptionReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) {
  const std::string* text = find(key);
  if (!text) return fallback;
  const std::string v = lower(*text);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    bad(key, *text, fmt::format("one of {}", fmt::join(allowed, ", ")));
  return v;
}

void OptionReader::finish() const {
  for (const auto& [key, value] : options_) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::vector<std::string> names = known_;
    std::sort(names.begin(), names.end());
    throw Error(ErrorKind::kUsage,
                fmt::format("strategy '{}' has no option '{}'; known: {}", strategy_, key,
                            names.empty() ? std::string("none")
                                          : fmt::format("{}", fmt::join(names, ", "))));
  }
}

// ---- random numbers ------------------------------------------------------------------------

std::uint64_t Random::below(std::uint64_t n) {
  // Rejection of the top partial range keeps the draw exactly uniform.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = engine_();
  while (x >= limit) x = engine_();
  return x % n;
}

double Random::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

// ---- NativeStrategy ------------------------------------------------------------------------

void NativeStrategy::start(const StrategyContext& context) {
  if (context.space == nullptr) throw Error(ErrorKind::kInternal, name() + ": no search space");
  space_ = context.space;
  // Parts of one shared search draw apart (part 0 keeps the seed's own sequence).
  rng_ = Random(context.seed + context.part * 0x9e3779b97f4a7c15ull);
  budget_ = context.budget;
  results_.clear();
  warm_.clear();
  warm_next_ = 0;
  outstanding_ = 0;
  warm_outstanding_ = 0;
  warm_pending_.clear();
  told_ = 0;
  best_config_.reset();
  best_value_ = kFailed;
  valid_total_.reset();
  valid_list_.clear();

  for (const Config& c : context.warm_start)
    if (c.size() == space_->size() && space_->is_valid(c) &&
        std::find(warm_.begin(), warm_.end(), c) == warm_.end())
      warm_.push_back(c);

  OptionReader reader(name(), context.options);
  configure(reader);
  reader.finish();

  // Count the valid space (the loop does the same to size its progress bar) and keep it for
  // sampling when it is small enough. Past the budget and the list limit the exact count no
  // longer matters: the budget ends the run before the space could be exhausted.
  const std::uint64_t stop_after =
      budget_ >= kValidCountLimit ? kValidCountLimit : std::max(budget_ + warm_.size(), kListLimit);
  std::uint64_t count = 0;
  bool complete = true;
  space_->for_each_valid([&](const Config& c) {
    ++count;
    if (count <= kListLimit) valid_list_.insert(valid_list_.end(), c.begin(), c.end());
    if (count > stop_after) {
      complete = false;
      return false;
    }
    return true;
  });
  if (complete) valid_total_ = count;
  if (!complete || count > kListLimit) {
    valid_list_.clear();
    valid_list_.shrink_to_fit();
  }
}

std::vector<Config> NativeStrategy::ask(std::size_t max_count) {
  std::vector<Config> out;
  if (max_count == 0) return out;
  while (out.size() < max_count && warm_next_ < warm_.size()) {
    const Config& c = warm_[warm_next_++];
    if (propose_if_new(c, out)) {
      ++warm_outstanding_;
      warm_pending_.insert(c);
    }
  }
  // The search starts once the warm start has been told, so it can start from the best of it.
  if (warm_next_ < warm_.size() || warm_outstanding_ > 0) return out;
  std::vector<Config> more = propose(max_count - out.size());
  for (auto& c : more) out.push_back(std::move(c));
  if (out.empty() && outstanding_ == 0 && !exhausted()) {
    // The algorithm found nothing to propose although nothing is outstanding: never stall.
    if (auto c = random_unseen()) propose_if_new(*c, out);
  }
  return out;
}

void NativeStrategy::tell(const Config& config, const Outcome& outcome) {
  const double value =
      is_ok(outcome.status) && std::isfinite(outcome.time_ms) ? outcome.time_ms : kFailed;
  auto it = results_.find(config);
  if (it == results_.end()) {
    // Not proposed by this strategy (the contract says it cannot happen); learn from it anyway.
    if (config.size() != space_->size() || !space_->is_valid(config)) return;
    it = results_.emplace(config, Result{}).first;
  } else if (!it->second.told && outstanding_ > 0) {
    --outstanding_;
  }
  if (it->second.told) return;  // told twice: keep the first answer
  it->second.told = true;
  it->second.value = value;
  ++told_;
  if (warm_pending_.erase(config) && warm_outstanding_ > 0) --warm_outstanding_;
  if (!best_config_ || value < best_value_) {
    best_config_ = config;
    best_value_ = value;
  }
  on_result(config, value);
}

bool NativeStrategy::exhausted() const { return valid_total_ && results_.size() >= *valid_total_; }

std::optional<double> NativeStrategy::known(const Config& c) const {
  const auto it = results_.find(c);
  if (it == results_.end() || !it->second.told) return std::nullopt;
  return it->second.value;
}

bool NativeStrategy::propose_if_new(const Config& c, std::vector<Config>& out) {
  if (c.size() != space_->size() || results_.count(c) || !space_->is_valid(c)) return false;
  results_.emplace(c, Result{});
  ++outstanding_;
  out.push_back(c);
  return true;
}

Config NativeStrategy::list_config(std::size_t i) const {
  const std::size_t d = space_->size();
  return Config(valid_list_.begin() + static_cast<std::ptrdiff_t>(i * d),
                valid_list_.begin() + static_cast<std::ptrdiff_t>((i + 1) * d));
}

std::optional<Config> NativeStrategy::random_unseen() {
  if (exhausted()) return std::nullopt;
  const std::size_t d = space_->size();
  if (list_available()) {
    const std::size_t n = valid_list_.size() / d;
    for (int t = 0; t < kListTries; ++t) {
      Config c = list_config(rng_.below(n));
      if (!seen(c)) return c;
    }
    std::vector<std::size_t> unseen;
    for (std::size_t i = 0; i < n; ++i)
      if (!seen(list_config(i))) unseen.push_back(i);
    if (unseen.empty()) return std::nullopt;
    return list_config(unseen[rng_.below(unseen.size())]);
  }
  Config c(d);
  for (int t = 0; t < kRejectionTries; ++t) {
    for (std::size_t p = 0; p < d; ++p)
      c[p] = static_cast<std::uint32_t>(rng_.below(space_->params()[p].values.size()));
    if (!seen(c) && space_->is_valid(c)) return c;
  }
  // Sparse or nearly exhausted: one pass over the valid space, choosing by reservoir sampling.
  std::optional<Config> chosen;
  std::uint64_t candidates = 0;
  space_->for_each_valid([&](const Config& v) {
    if (!seen(v) && rng_.below(++candidates) == 0) chosen = v;
    return true;
  });
  if (!chosen) valid_total_ = results_.size();  // every valid configuration has been seen
  return chosen;
}

Config NativeStrategy::random_valid() {
  const std::size_t d = space_->size();
  if (list_available()) return list_config(rng_.below(valid_list_.size() / d));
  Config c(d);
  for (int t = 0; t < kRejectionTries; ++t) {
    for (std::size_t p = 0; p < d; ++p)
      c[p] = static_cast<std::uint32_t>(rng_.below(space_->params()[p].values.size()));
    if (space_->is_valid(c)) return c;
  }
  std::optional<Config> chosen;
  std::uint64_t candidates = 0;
  space_->for_each_valid([&](const Config& v) {
    if (rng_.below(++candidates) == 0) chosen = v;
    return true;
  });
  if (!chosen)
    throw Error(ErrorKind::kUsage, name() + ": the search space has no valid configuration");
  return *chosen;
}

std::optional<Config> NativeStrategy::random_neighbour(const Config& c, Neighbourhood kind) {
  const std::vector<Config> all = space_->neighbours(c, kind);
  if (all.empty()) return std::nullopt;
  return all[rng_.below(all.size())];
}

}  // namespace ktune::native
