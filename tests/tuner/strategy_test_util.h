// Helpers of the strategy tests: recorded spaces from tests/data/strategies/, synthetic spaces,
// and a small ask/tell loop that behaves like tune() (a lookahead queue, the budget, asks
// between tells) but can tell out of order and records everything it saw.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ktune/space.h"
#include "ktune/strategy.h"

namespace ktune::test {

// A space with a recorded (or computed) outcome for every valid configuration.
struct RecordedSpace {
  std::string name;
  std::vector<Parameter> params;
  std::vector<std::string> restrictions;
  SearchSpace space;
  std::map<std::string, Outcome> outcomes;  // by values key "32,4,1,..."
  std::string optimum;                      // values key of the fastest configuration

  std::string values_key(const Config& c) const {
    std::string k;
    for (std::size_t i = 0; i < space.size(); ++i)
      k += (i ? "," : "") + space.value(c, i).to_string();
    return k;
  }
  Outcome outcome(const Config& c) const { return outcomes.at(values_key(c)); }
  double optimum_ms() const { return outcomes.at(optimum).time_ms; }
  std::size_t valid_count() const { return outcomes.size(); }
};

inline RecordedSpace load_recorded_space(const std::string& file) {
  const std::string path = std::string(KTUNE_TEST_DATA_DIR) + "/strategies/" + file;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  const nlohmann::json j = nlohmann::json::parse(in);
  RecordedSpace r;
  r.name = file;
  for (const auto& p : j.at("parameters")) {
    Parameter param;
    param.name = p.at("name").get<std::string>();
    for (const auto& v : p.at("values")) param.values.emplace_back(v.get<std::int64_t>());
    r.params.push_back(param);
  }
  r.restrictions = j.at("restrictions").get<std::vector<std::string>>();
  r.space = SearchSpace(r.params, r.restrictions);
  for (const auto& [key, value] : j.at("results").items()) {
    Outcome o;
    if (value.is_string()) {
      o.status = value.get<std::string>() == "CompilationFailedConfig" ? TrialStatus::kCompileFailed
                                                                       : TrialStatus::kLaunchFailed;
    } else {
      o.time_ms = value.get<double>();
    }
    r.outcomes[key] = o;
  }
  r.optimum = j.at("optimum").get<std::string>();
  return r;
}

// A subset of the convolution space on the A100 (tests/data/strategies), loaded once.
inline const RecordedSpace& convolution_subset() {
  static const RecordedSpace r = load_recorded_space("convolution_a100_subset.json");
  return r;
}

// A synthetic space without restrictions: `dims` parameters of `values` integers each; time
// and failure are functions of the configuration.
inline RecordedSpace synthetic_space(
    const std::string& name, std::size_t dims, std::size_t values,
    const std::function<std::optional<double>(const Config&)>& time) {
  RecordedSpace r;
  r.name = name;
  for (std::size_t d = 0; d < dims; ++d) {
    Parameter p;
    p.name = "p" + std::to_string(d);
    for (std::size_t v = 0; v < values; ++v) p.values.emplace_back(static_cast<std::int64_t>(v));
    r.params.push_back(p);
  }
  r.space = SearchSpace(r.params, {});
  double best = INFINITY;
  for (const Config& c : r.space.enumerate()) {
    Outcome o;
    if (const auto t = time(c)) {
      o.time_ms = *t;
      if (*t < best) best = *t, r.optimum = r.values_key(c);
    } else {
      o.status = TrialStatus::kCrashed;
      o.time_ms = 0;  // a failure must never be read as a (very fast) time
    }
    r.outcomes[r.values_key(c)] = o;
  }
  return r;
}

enum class TellOrder { kFifo, kLifo, kShuffled };

struct DriveOptions {
  std::uint64_t seed = 1;
  std::uint64_t budget = 100;
  std::size_t lookahead = 8;
  TellOrder order = TellOrder::kFifo;
  std::map<std::string, std::string> options;
  std::vector<Config> warm_start;
  // Answers instead of the recorded outcomes (for spaces too large to record).
  std::function<Outcome(const Config&)> answer;
};

struct Trace {
  std::vector<Config> asked;  // in proposal order
  std::uint64_t told = 0;
  std::set<Config> distinct;
  std::size_t invalid = 0;     // proposals that are not valid configurations
  std::size_t over_asked = 0;  // asks answered with more than max_count configurations
  bool exhausted = false;
  bool stalled = false;  // nothing proposed, nothing outstanding, not exhausted, budget left
  std::optional<double> best_ms;
  std::string best_key;
};

// Runs `strategy` to the end against `r` the way tune() does.
inline Trace drive(Strategy& strategy, const RecordedSpace& r, const DriveOptions& o) {
  StrategyContext ctx;
  ctx.space = &r.space;
  ctx.seed = o.seed;
  ctx.budget = o.budget;
  ctx.options = o.options;
  ctx.warm_start = o.warm_start;
  strategy.start(ctx);
  Trace t;
  std::vector<Config> queue;
  std::mt19937_64 order_rng(o.seed * 7919 + 13);
  for (;;) {
    if (t.told >= o.budget) break;
    while (queue.size() < o.lookahead && !strategy.exhausted()) {
      const std::uint64_t left = o.budget - t.told;
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(
          o.lookahead - queue.size(), left > queue.size() ? left - queue.size() : 0));
      if (want == 0) break;
      std::vector<Config> cs = strategy.ask(want);
      if (cs.empty()) break;
      if (cs.size() > want) ++t.over_asked;
      for (Config& c : cs) {
        if (c.size() != r.space.size() || !r.space.is_valid(c)) ++t.invalid;
        t.asked.push_back(c);
        t.distinct.insert(c);
        queue.push_back(std::move(c));
      }
    }
    if (queue.empty()) {
      t.exhausted = strategy.exhausted();
      t.stalled = !t.exhausted;
      break;
    }
    std::size_t pick = 0;
    if (o.order == TellOrder::kLifo) pick = queue.size() - 1;
    if (o.order == TellOrder::kShuffled)
      pick = static_cast<std::size_t>(order_rng() % queue.size());
    const Config c = queue[pick];
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(pick));
    Outcome out;
    if (c.size() == r.space.size() && r.space.is_valid(c)) {
      out = o.answer ? o.answer(c) : r.outcome(c);
    } else {
      out.status = TrialStatus::kInvalid;
    }
    strategy.tell(c, out);
    ++t.told;
    if (out.status == TrialStatus::kOk && (!t.best_ms || out.time_ms < *t.best_ms)) {
      t.best_ms = out.time_ms;
      t.best_key = r.values_key(c);
    }
  }
  if (!t.stalled) t.exhausted = strategy.exhausted();
  return t;
}

}  // namespace ktune::test
