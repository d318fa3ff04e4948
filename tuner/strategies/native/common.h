// What the native strategies share: option parsing with usage errors, a portable seeded random
// source, and NativeStrategy, a base that keeps the ask/tell bookkeeping (warm start first,
// every proposal remembered, outstanding tells counted, exhaustion of the valid space) so that
// each algorithm only decides what to propose next and what to make of a result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ktune/space.h"
#include "ktune/strategy.h"

namespace ktune::native {

// A failed trial: slower than anything measured, so it never wins a comparison.
inline constexpr double kFailed = std::numeric_limits<double>::infinity();

// Reads a strategy's options; every getter marks its key as known, finish() rejects the rest.
// Malformed or out-of-range values and unknown keys are Error(kUsage) naming the option.
class OptionReader {
 public:
  OptionReader(std::string strategy, const std::map<std::string, std::string>& options)
      : strategy_(std::move(strategy)), options_(options) {}
  double number(const std::string& key, double fallback, double low, double high);
  std::uint64_t count(const std::string& key, std::uint64_t fallback, std::uint64_t low,
                      std::uint64_t high);
  bool flag(const std::string& key, bool fallback);
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed);
  void finish() const;

 private:
  const std::string* find(const std::string& key);
  [[noreturn]] void bad(const std::string& key, const std::string& value,
                        const std::string& expected) const;

  std::string strategy_;
  const std::map<std::string, std::string>& options_;
  std::vector<std::string> known_;
};

// std::mt19937_64 with distributions written out here, so that a seed gives the same proposals
// with every standard library (the std:: distributions are implementation-defined).
class Random {
 public:
  explicit Random(std::uint64_t seed = 1) : engine_(seed) {}
  std::uint64_t below(std::uint64_t n);  // uniform in [0, n); n > 0
  double uniform();                      // uniform in [0, 1)
  bool chance(double p) { return uniform() < p; }
  template <class T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

class NativeStrategy : public Strategy {
 public:
  void start(const StrategyContext& context) final;
  std::vector<Config> ask(std::size_t max_count) final;
  void tell(const Config& config, const Outcome& outcome) final;
  bool exhausted() const final;

 protected:
  // Reads the algorithm's options (the reader's finish() is called afterwards) and resets it.
  virtual void configure(OptionReader& options) = 0;
  // Up to max_count configurations never proposed before (use propose_if_new), or none while
  // waiting for tells. With nothing outstanding it must propose something unless every valid
  // configuration has been seen; a safety net in ask() covers it otherwise.
  virtual std::vector<Config> propose(std::size_t max_count) = 0;
  // A told result: time in ms, or kFailed. Also called for configurations the algorithm did not
  // propose itself (warm start, the safety net).
  virtual void on_result(const Config& config, double value) = 0;

  const SearchSpace& space() const { return *space_; }
  Random& rng() { return rng_; }
  std::uint64_t budget() const { return budget_; }
  std::size_t dimensions() const { return space_->size(); }
  // How many warm-start configurations come first (before propose() is asked), and which.
  std::size_t warm_count() const { return warm_.size(); }
  const std::vector<Config>& warm_configs() const { return warm_; }
  // The valid configurations, when they were few enough to keep in memory (at most 2^19): how
  // many, and the i-th in enumeration order. valid_listed() is 0 for a larger space.
  std::size_t valid_listed() const {
    return valid_list_.empty() ? 0 : valid_list_.size() / space_->size();
  }
  Config valid_at(std::size_t i) const { return list_config(i); }

  bool seen(const Config& c) const { return results_.count(c) != 0; }
  // The told value of c; nullopt when c was never proposed or its tell is outstanding.
  std::optional<double> known(const Config& c) const;
  // Records c as proposed and appends it to out; false (and nothing appended) when c was seen.
  bool propose_if_new(const Config& c, std::vector<Config>& out);
  std::size_t outstanding() const { return outstanding_; }
  std::uint64_t told_count() const { return told_; }
  // The best told configuration and its value (kFailed when none succeeded).
  const std::optional<Config>& best() const { return best_config_; }
  double best_value() const { return best_value_; }

  // A uniformly drawn valid configuration not seen yet; nullopt when every one has been seen.
  std::optional<Config> random_unseen();
  // A uniformly drawn valid configuration, seen or not.
  Config random_valid();
  // A random valid neighbour of c (Hamming or adjacent), or nullopt if c has none.
  std::optional<Config> random_neighbour(const Config& c, Neighbourhood kind);

 private:
  struct Result {
    bool told = false;
    double value = kFailed;
  };
  bool list_available() const { return !valid_list_.empty(); }
  Config list_config(std::size_t i) const;

  const SearchSpace* space_ = nullptr;
  Random rng_;
  std::uint64_t budget_ = UINT64_MAX;
  std::unordered_map<Config, Result, ConfigHash> results_;
  std::vector<Config> warm_;
  std::size_t warm_next_ = 0;
  std::size_t outstanding_ = 0;
  std::size_t warm_outstanding_ = 0;
  std::set<Config> warm_pending_;
  std::uint64_t told_ = 0;
  std::optional<Config> best_config_;
  double best_value_ = kFailed;
  // How many valid configurations exist, when it was worth counting them all; else nullopt
  // (more than the budget allows to see).
  std::optional<std::uint64_t> valid_total_;
  // All valid configurations, flat (dimensions() values each), when few enough to keep.
  std::vector<std::uint32_t> valid_list_;
};

}  // namespace ktune::native
