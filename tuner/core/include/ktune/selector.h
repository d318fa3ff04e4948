// The run-time choice over problem sizes: a family of tuned problems, the candidate
// configurations measured at each of them (the cross-measurement), and the rule that picks a
// candidate for a problem that was not tuned.
//
// The rule ("local-linear"): for each candidate, its log performance at each tuned problem
// (the fastest candidate's time there over its own) is fitted by a line in the log2 of the
// problem parameters that vary across the family, weighted by a Gaussian of the log2 distance to
// the problem asked (width kSelectorWidth); the candidate whose line is highest there is the
// pick. A candidate not valid or not measured at a tuned problem counts as 1000x slower there.
// Chosen over the nearest tuned problem's best, a distance-weighted mean and a one-split tree by
// leaving one size out of recordings at six sizes (docs/many-sizes.md#measured).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/problem.h"

namespace ktune {

inline constexpr double kSelectorWidth = 1.0;       // log2 units
inline constexpr std::size_t kSelectorPerSize = 8;  // the best distinct configurations of each size
inline constexpr std::size_t kSelectorMaxCandidates = 64;

// One tuned problem and each candidate's measured time there (NaN: not valid, or failed). The
// trials themselves are found by problem and config key (ids differ between merged databases).
struct SelectorRow {
  Problem problem;
  std::string key;  // the problem's key as the database stores it (the kernel's order)
  std::vector<double> time_ms;
};

// What the rule picks at one tuned problem when that problem is left out of the family, and how
// fast the pick is there against the fastest candidate (1: the best).
struct HeldOutPick {
  std::string problem_key;
  std::size_t pick = 0;
  double performance = 0;
};

struct Selector {
  std::string method = "local-linear";
  double width = kSelectorWidth;
  std::vector<std::string> candidates;  // config keys
  std::vector<std::string> configs;     // their config_json
  std::vector<SelectorRow> rows;
  std::vector<HeldOutPick> held_out;  // leave_one_out() when it was made

  // The parameters that vary across the rows (by name), and each parameter's least and
  // greatest value over the rows (equal for one that does not vary).
  std::vector<std::string> varying() const;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> range() const;
  // Whether `problem` is within the family: every parameter within range(), and no other
  // parameter. Needs two rows or more.
  bool covers(const Problem& problem) const;
  // The candidate for `problem` (an index into candidates).
  std::size_t pick(const Problem& problem) const;
  // The row nearest to `problem` (log2 distance) where `candidate` was measured, if any
  // (rows.size() where none): the measurement an answer shows.
  std::size_t nearest_row(const Problem& problem, std::size_t candidate) const;
  // Each row left out in turn and picked for from the others.
  std::vector<HeldOutPick> leave_one_out() const;
  double held_out_mean() const;   // of held_out; NaN when empty
  double held_out_worst() const;  // least of held_out; NaN when empty

  nlohmann::json to_json() const;
  // Error(kInput) naming `where` for a document that is not a selector.
  static Selector from_json(const nlohmann::json& j, const std::string& where);
  // from_json of a text, Error(kInput) as well for one that is not JSON.
  static Selector parse(std::string_view text, const std::string& where);
};

// The candidates of a family: the best `per_size` distinct configurations of each problem
// (`ranked[i]`: its config keys, fastest first), at most `max_total`, taken a rank at a time
// across the problems so each keeps its best ones.
std::vector<std::string> selector_candidates(const std::vector<std::vector<std::string>>& ranked,
                                             std::size_t per_size = kSelectorPerSize,
                                             std::size_t max_total = kSelectorMaxCandidates);

}  // namespace ktune
