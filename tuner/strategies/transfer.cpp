// Transfer from measurements on other devices: the opening that races them (ktune/transfer.h).
#include "ktune/transfer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ktune/error.h"

namespace ktune {

namespace {

// The source's working configurations as configurations of `space`, each with its normalised
// rank (0 the fastest, towards 1 the slowest).
std::unordered_map<Config, double, ConfigHash> normalised_ranks(const SearchSpace& space,
                                                                const TransferSource& source) {
  std::vector<int> column(space.size(), -1);
  for (std::size_t i = 0; i < space.size(); ++i)
    for (std::size_t j = 0; j < source.params.size(); ++j)
      if (source.params[j] == space.params()[i].name) column[i] = static_cast<int>(j);
  std::vector<std::pair<double, Config>> ok;
  for (std::size_t r = 0; r < source.configs.size(); ++r) {
    if (!std::isfinite(source.times[r])) continue;
    Config c(space.size());
    bool fits = true;
    for (std::size_t i = 0; i < c.size() && fits; ++i) {
      const Parameter& p = space.params()[i];
      if (column[i] < 0) {
        c[i] = static_cast<std::uint32_t>(p.default_index);
        continue;
      }
      const auto it = std::find(p.values.begin(), p.values.end(),
                                source.configs[r].at(static_cast<std::size_t>(column[i])));
      fits = it != p.values.end();
      c[i] = static_cast<std::uint32_t>(it - p.values.begin());
    }
    if (fits) ok.emplace_back(source.times[r], std::move(c));
  }
  std::stable_sort(ok.begin(), ok.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::unordered_map<Config, double, ConfigHash> rank;
  for (std::size_t i = 0; i < ok.size(); ++i)
    rank.emplace(ok[i].second, static_cast<double>(i) / static_cast<double>(ok.size()));
  return rank;
}

}  // namespace

// The opening's state (transfer.h): the arms, what each has found, and the race.
struct TransferSearch::State {
  struct Arm {
    std::vector<double> score;       // per universe configuration; lower ranks better
    std::vector<std::size_t> order;  // universe indices by score
    std::size_t next = 0;            // first place in `order` not yet looked at
    std::optional<Config> best;      // its fastest configuration measured here so far
    double best_ms = std::numeric_limits<double>::infinity();
  };
  enum class Phase { kTops, kRace, kLast, kInner };

  StrategyContext context;
  const SearchSpace* space = nullptr;
  std::vector<Config> universe;  // configurations some source measured, valid here, in order
  std::unordered_map<Config, std::size_t, ConfigHash> index;
  std::vector<Arm> arms;
  std::vector<std::size_t> alive;  // arms still racing
  std::uint64_t steps = 1;         // steps each arm left takes in the next round
  std::uint64_t steps_left = 0;    // of the current round
  Phase phase = Phase::kTops;
  std::uint64_t opening = 0;    // evaluations the opening may spend
  std::uint64_t proposed = 0;   // by the opening
  std::size_t outstanding = 0;  // opening proposals not told yet
  std::vector<Config> planned;  // proposals of the current step, not asked yet
  // Configurations the opening proposed, the arms each is credited to, and their outcomes.
  std::unordered_map<Config, std::vector<std::size_t>, ConfigHash> credit;
  std::unordered_map<Config, Outcome, ConfigHash> results;
  std::unordered_set<Config, ConfigHash> answered;  // opening results handed to the inner search

  double score(std::size_t arm, const Config& c) const {
    const auto it = index.find(c);
    return it == index.end() ? 1.0 : arms[arm].score[it->second];
  }
  bool used(const Config& c) const { return credit.count(c) > 0; }

  // The unmeasured configuration within `radius` parameters of `centre` that `arm` ranks best
  // (ties: the smaller configuration).
  std::optional<Config> nearest(std::size_t arm, const Config& centre, int radius) const {
    std::optional<Config> pick;
    double pick_score = 0;
    const auto consider = [&](const Config& c) {
      if (used(c) || !space->is_valid(c)) return;
      const double s = score(arm, c);
      if (!pick || s < pick_score || (s == pick_score && c < *pick)) {
        pick = c;
        pick_score = s;
      }
    };
    const auto& params = space->params();
    Config c = centre;
    for (std::size_t i = 0; i < params.size(); ++i) {
      for (std::uint32_t v = 0; v < params[i].values.size(); ++v) {
        if (v == centre[i]) continue;
        c[i] = v;
        if (radius == 1) {
          consider(c);
        } else {
          for (std::size_t j = i + 1; j < params.size(); ++j)
            for (std::uint32_t w = 0; w < params[j].values.size(); ++w) {
              if (w == centre[j]) continue;
              c[j] = w;
              consider(c);
              c[j] = centre[j];
            }
        }
      }
      c[i] = centre[i];
    }
    return pick;
  }

  bool single_source = false;    // the consensus is the source's own ranking
  std::uint64_t last_steps = 0;  // taken by the last arm standing
  // One step of `arm`: near its best, else its next in rank, else the consensus's next;
  // `rank_first`: its next in rank first.
  std::optional<Config> step(std::size_t arm, bool rank_first = false) {
    if (rank_first)
      if (auto c = next_in_rank(arm)) return c;
    if (arms[arm].best)
      for (int radius : {1, 2})
        if (auto c = nearest(arm, *arms[arm].best, radius)) return c;
    if (auto c = next_in_rank(arm)) return c;
    return next_in_rank(0);
  }

  // The configuration `arm` ranks best among those not measured yet.
  std::optional<Config> next_in_rank(std::size_t arm) {
    Arm& x = arms[arm];
    while (x.next < x.order.size() && used(universe[x.order[x.next]])) ++x.next;
    if (x.next < x.order.size()) return universe[x.order[x.next]];
    return std::nullopt;
  }

  void propose(std::size_t arm, const Config& c) {
    auto [it, fresh] = credit.try_emplace(c);
    it->second.push_back(arm);
    if (fresh) planned.push_back(c);
  }

  // The next step of the race into `planned`; false when the opening has nothing more.
  bool plan() {
    if (phase == Phase::kTops) {
      for (std::size_t a = 0; a < arms.size(); ++a)
        if (!arms[a].order.empty()) propose(a, universe[arms[a].order[0]]);
      phase = Phase::kRace;
      return !planned.empty();
    }
    if (phase == Phase::kRace && steps_left == 0) {
      std::sort(alive.begin(), alive.end(), [&](std::size_t a, std::size_t b) {
        return std::pair(arms[a].best_ms, a) < std::pair(arms[b].best_ms, b);
      });
      alive.resize((alive.size() + 1) / 2);
      if (alive.size() <= 1) {
        phase = Phase::kLast;
      } else {
        steps_left = steps;
        steps *= 2;
      }
    }
    if (phase == Phase::kLast) {
      if (alive.empty()) return false;
      // With one source there is no race: its ranking's next and the climb take turns.
      const bool next_in_rank = single_source && ++last_steps % 2 == 0;
      if (auto c = step(alive[0], next_in_rank)) propose(alive[0], *c);
      return !planned.empty();
    }
    --steps_left;
    for (std::size_t a : alive)
      if (auto c = step(a)) propose(a, *c);
    return !planned.empty();
  }
};

TransferSearch::TransferSearch(Strategy& inner, std::vector<TransferSource> sources,
                               std::size_t opening)
    : inner_(inner), sources_(std::move(sources)), opening_(opening) {}

TransferSearch::~TransferSearch() = default;

std::string TransferSearch::name() const { return inner_.name(); }

void TransferSearch::start(const StrategyContext& context) {
  inner_.start(context);  // checks the inner strategy's options before anything runs
  state_ = std::make_unique<State>();
  State& s = *state_;
  s.context = context;
  s.space = context.space;
  std::vector<std::unordered_map<Config, double, ConfigHash>> ranks;
  for (const auto& source : sources_) ranks.push_back(normalised_ranks(*s.space, source));
  std::set<Config> universe;
  for (const auto& r : ranks)
    for (const auto& [c, _] : r)
      if (s.space->is_valid(c)) universe.insert(c);
  s.universe.assign(universe.begin(), universe.end());
  for (std::size_t i = 0; i < s.universe.size(); ++i) s.index.emplace(s.universe[i], i);
  // Arm 0 ranks by the consensus, arm 1 + k by source k alone.
  s.arms.resize(ranks.size() + 1);
  for (State::Arm& arm : s.arms) arm.score.assign(s.universe.size(), 0);
  for (std::size_t i = 0; i < s.universe.size(); ++i) {
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const auto it = ranks[k].find(s.universe[i]);
      const double r = it == ranks[k].end() ? 1.0 : it->second;
      s.arms[k + 1].score[i] = r;
      s.arms[0].score[i] += r / static_cast<double>(ranks.size());
    }
  }
  for (State::Arm& arm : s.arms) {
    arm.order.resize(s.universe.size());
    for (std::size_t i = 0; i < arm.order.size(); ++i) arm.order[i] = i;
    std::stable_sort(arm.order.begin(), arm.order.end(),
                     [&](std::size_t a, std::size_t b) { return arm.score[a] < arm.score[b]; });
  }
  for (std::size_t a = 0; a < s.arms.size(); ++a) s.alive.push_back(a);
  s.single_source = ranks.size() == 1;
  s.opening = std::min<std::uint64_t>(opening_, context.budget);
  if (s.universe.empty() || s.opening == 0) s.phase = State::Phase::kInner;
}

std::vector<Config> TransferSearch::ask(std::size_t max_count) {
  if (!state_) throw Error(ErrorKind::kInternal, "transfer search: ask() before start()");
  State& s = *state_;
  std::vector<Config> out;
  if (s.phase != State::Phase::kInner) {
    if (s.planned.empty() && s.outstanding == 0 && (s.proposed >= s.opening || !s.plan())) {
      // The opening is over. The inner search starts afresh, with its own first sample and
      // the rest of the budget: seeded with the opening's configurations, a model of the new
      // device stays near the sources' favourites, and a device unlike its sources pays for it
      // later (docs/strategies.md#transfer-between-gpus). What the opening measured is answered
      // below when the inner search proposes it, not measured again.
      StrategyContext inner = s.context;
      if (inner.budget != UINT64_MAX)
        inner.budget = inner.budget > s.proposed ? inner.budget - s.proposed : 0;
      inner_.start(inner);
      s.phase = State::Phase::kInner;
    } else {
      while (out.size() < max_count && !s.planned.empty() && s.proposed < s.opening) {
        out.push_back(s.planned.front());
        s.planned.erase(s.planned.begin());
        ++s.proposed;
        ++s.outstanding;
      }
      if (s.proposed >= s.opening) s.planned.clear();  // the opening's budget is spent
      return out;
    }
  }
  // The inner search: what the opening measured is answered here, once.
  for (int round = 0; round < 64 && out.size() < max_count; ++round) {
    const std::vector<Config> asked = inner_.ask(max_count - out.size());
    if (asked.empty()) break;
    for (const Config& c : asked) {
      const auto it = s.results.find(c);
      if (it != s.results.end() && s.answered.insert(c).second) {
        Outcome o = it->second;
        o.from_cache = true;
        inner_.tell(c, o);
      } else {
        out.push_back(c);
      }
    }
  }
  return out;
}

void TransferSearch::tell(const Config& config, const Outcome& outcome) {
  State& s = *state_;
  if (s.phase == State::Phase::kInner) {
    inner_.tell(config, outcome);
    return;
  }
  if (s.outstanding > 0) --s.outstanding;
  s.results[config] = outcome;
  if (!is_ok(outcome.status) || !std::isfinite(outcome.time_ms)) return;
  for (std::size_t a : s.credit[config]) {
    State::Arm& arm = s.arms[a];
    if (outcome.time_ms < arm.best_ms) {
      arm.best_ms = outcome.time_ms;
      arm.best = config;
    }
  }
}

bool TransferSearch::exhausted() const {
  return state_ && state_->phase == State::Phase::kInner && inner_.exhausted();
}

std::size_t TransferSearch::ask_batch() const { return inner_.ask_batch(); }

bool TransferSearch::fixed_order() const {
  return state_ && state_->phase == State::Phase::kInner && inner_.fixed_order();
}

bool TransferSearch::from_opening(const Config& config) const {
  return state_ && state_->credit.count(config) > 0;
}

}  // namespace ktune
