#include "ktune/family.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ktune/error.h"
#include "ktune/problem_set.h"

namespace ktune {

FamilyMember family_member(const Store& store, std::int64_t run_id) {
  const auto run = store.run(run_id);
  if (!run) throw Error(ErrorKind::kInternal, "family: no run " + std::to_string(run_id));
  FamilyMember m;
  m.kernel_id = run->kernel_id;
  m.device_id = run->device_id;
  m.problem_id = run->problem_id;
  m.replayed = run->replayed;
  const auto problem = store.problem(run->problem_id);
  if (!problem) throw Error(ErrorKind::kInternal, "family: run without its problem");
  m.key = problem->key;
  if (auto p = parse_problem_key(problem->key)) m.problem = std::move(*p);
  return m;
}

std::vector<std::string> family_candidates(const Store& store,
                                           const std::vector<FamilyMember>& members) {
  std::vector<std::vector<std::string>> ranked;
  for (const FamilyMember& m : members) {
    std::vector<std::string> keys;
    for (const TrialRecord& t :
         store.leaders(m.kernel_id, m.device_id, m.problem_id, m.replayed, kSelectorPerSize))
      keys.push_back(t.config_key);
    ranked.push_back(std::move(keys));
  }
  return selector_candidates(ranked);
}

std::vector<std::string> family_seeds(const Store& store, const Problem& next,
                                      const std::vector<FamilyMember>& tuned) {
  std::vector<const FamilyMember*> left;  // the members not taken yet, with their problems
  std::vector<Problem> problems;
  for (const FamilyMember& m : tuned)
    if (m.kernel_id != 0) left.push_back(&m), problems.push_back(m.problem);
  std::vector<std::vector<std::string>> ranked;
  for (int k = 0; k < 2 && !left.empty(); ++k) {
    const std::size_t i = nearest_problem(next, problems);
    if (i >= left.size()) break;
    const FamilyMember& m = *left[i];
    std::vector<std::string> keys;
    for (const TrialRecord& t :
         store.leaders(m.kernel_id, m.device_id, m.problem_id, m.replayed, kFamilySeeds))
      keys.push_back(t.config_key);
    ranked.push_back(std::move(keys));
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
    problems.erase(problems.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return selector_candidates(ranked, kFamilySeeds, kFamilySeeds);
}

Selector family_selector(const Store& store, const std::vector<FamilyMember>& members,
                         const std::vector<std::string>& candidates) {
  Selector s;
  s.candidates = candidates;
  s.configs.assign(candidates.size(), "{}");
  for (const FamilyMember& m : members) {
    SelectorRow row;
    row.problem = m.problem;
    row.key = m.key;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const auto t =
          store.find_trial(m.kernel_id, m.device_id, m.problem_id, candidates[c], m.replayed);
      const bool ok = t && is_ok(t->status) && std::isfinite(t->time_ms) && t->time_ms > 0;
      row.time_ms.push_back(ok ? t->time_ms : std::numeric_limits<double>::quiet_NaN());
      if (t && s.configs[c] == "{}") s.configs[c] = t->config_json;
    }
    s.rows.push_back(std::move(row));
  }
  s.held_out = s.leave_one_out();
  return s;
}

FamilyBudget::FamilyBudget(std::optional<std::uint64_t> evaluations, std::optional<double> seconds,
                           std::size_t problems)
    : evaluations_(evaluations), seconds_(seconds), problems_(std::max<std::size_t>(problems, 1)) {
  if (evaluations && *evaluations < problems)
    throw Error(ErrorKind::kUsage,
                fmt::format("--family-budget-evals {}: a family of {} problems needs at least one "
                            "evaluation per problem",
                            *evaluations, problems));
  if (seconds && !(std::isfinite(*seconds) && *seconds > 0))
    throw Error(
        ErrorKind::kUsage,
        fmt::format("--family-budget-time {}: expected a number of seconds above 0", *seconds));
}

Budget FamilyBudget::next(const Budget& per_problem) const {
  Budget b = per_problem;
  const std::size_t left_runs = problems_ > runs_ ? problems_ - runs_ : 1;
  if (evaluations_) {
    const std::uint64_t left =
        *evaluations_ > used_evaluations_ ? *evaluations_ - used_evaluations_ : 0;
    b.evaluations = std::min(b.evaluations, std::max<std::uint64_t>(left / left_runs, 1));
  }
  if (seconds_) {
    const double floor = *seconds_ / (10.0 * static_cast<double>(problems_));
    const double left = std::max(*seconds_ - used_seconds_, 0.0);
    b.seconds = std::min(b.seconds, std::max(left / static_cast<double>(left_runs), floor));
  }
  return b;
}

void FamilyBudget::spent(std::uint64_t evaluations, double seconds) {
  ++runs_;
  used_evaluations_ += evaluations;
  used_seconds_ += seconds;
}

}  // namespace ktune
