// A family of problems of one kernel tuned on one device, and the selector made from it
// (ktune/selector.h): the candidates are the best distinct configurations of each problem, each
// measured at every problem (a run of the listed strategy per problem, SessionOptions::listed),
// and the selector's rows are their times there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ktune/problem.h"
#include "ktune/selector.h"
#include "ktune/store.h"
#include "ktune/tuner.h"

namespace ktune {

// One tuned problem of the family: its run's kernel version, device and problem rows.
struct FamilyMember {
  Problem problem;
  std::string key;  // as stored
  std::int64_t kernel_id = 0, device_id = 0, problem_id = 0;
  bool replayed = false;
};

// What a family's next problem is seeded with (SessionOptions::seeds): the best configurations
// of its two nearest tuned members (log2 distance), a rank of each at a time, kFamilySeeds in
// all. Measured against the transfer opening (ktune/transfer.h) on the GPU and on recordings
// (docs/many-sizes.md#measured).
inline constexpr std::size_t kFamilySeeds = 8;
std::vector<std::string> family_seeds(const Store& store, const Problem& next,
                                      const std::vector<FamilyMember>& tuned);

// The member of a finished run.
FamilyMember family_member(const Store& store, std::int64_t run_id);

// The candidates: the best kSelectorPerSize distinct configurations of each member (by their
// latest search trials), at most kSelectorMaxCandidates.
std::vector<std::string> family_candidates(const Store& store,
                                           const std::vector<FamilyMember>& members);

// The selector over the members: each candidate's latest search trial at each member (NaN where
// it has none that is ok), and what it picks at each member left out.
Selector family_selector(const Store& store, const std::vector<FamilyMember>& members,
                         const std::vector<std::string>& candidates);

// A budget for a whole family's tuning runs (`--family-budget-evals`, `--family-budget-time`):
// each run gets an equal share of what the runs before it left (one that stopped early leaves
// more to the rest), within the per-problem budget; a run's time share is at least a tenth of an
// equal split, so a run that overran does not leave the last ones with nothing. The
// cross-measurement is not part of it.
class FamilyBudget {
 public:
  // Error(kUsage) where the evaluations are fewer than the problems, or the seconds not above 0.
  FamilyBudget(std::optional<std::uint64_t> evaluations, std::optional<double> seconds,
               std::size_t problems);
  // The next run's budget: `per_problem` cut to its share.
  Budget next(const Budget& per_problem) const;
  // What a run used.
  void spent(std::uint64_t evaluations, double seconds);

 private:
  std::optional<std::uint64_t> evaluations_;
  std::optional<double> seconds_;
  std::size_t problems_, runs_ = 0;
  std::uint64_t used_evaluations_ = 0;
  double used_seconds_ = 0;
};

}  // namespace ktune
