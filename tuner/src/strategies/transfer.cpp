// Consensus ranking of configurations over measurements on other devices (ktune/transfer.h).
#include "ktune/transfer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "ktune/bench_strategies.h"

namespace ktune {

TransferSource transfer_source(const Recording& recording) {
  TransferSource s;
  s.name = recording.device_name.empty() ? recording.path : recording.device_name;
  for (const auto& p : recording.params) s.params.push_back(p.name);
  for (const auto& t : recording.trials) {
    s.configs.push_back(t.values);
    s.times.push_back(t.status == TrialStatus::kOk && std::isfinite(t.time_ms)
                          ? t.time_ms
                          : std::numeric_limits<double>::quiet_NaN());
  }
  return s;
}

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

std::vector<Config> consensus_top(const SearchSpace& space,
                                  const std::vector<TransferSource>& sources, std::size_t count) {
  std::vector<std::unordered_map<Config, double, ConfigHash>> ranks;
  for (const auto& s : sources) ranks.push_back(normalised_ranks(space, s));
  std::map<Config, double> score;  // ordered: ties in enumeration order
  for (const auto& r : ranks)
    for (const auto& [c, _] : r)
      if (!score.count(c) && space.is_valid(c)) score[c] = 0;
  for (auto& [c, total] : score) {
    for (const auto& r : ranks) {
      const auto it = r.find(c);
      total += it == r.end() ? 1.0 : it->second;
    }
  }
  std::vector<std::pair<double, Config>> order;
  for (auto& [c, total] : score) order.emplace_back(total, c);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Every other place goes to the sources' own favourites in turn (the fastest of each source,
  // then the second ...): a new GPU often resembles one of the known GPUs more than their
  // average (an MI250X after four NVIDIA GPUs), and the mean alone would never try its best.
  std::vector<std::vector<std::pair<double, Config>>> own(ranks.size());
  for (std::size_t s = 0; s < ranks.size(); ++s) {
    for (const auto& [c, r] : ranks[s])
      if (score.count(c)) own[s].emplace_back(r, c);
    std::sort(own[s].begin(), own[s].end());
  }
  std::vector<Config> round_robin;
  for (std::size_t i = 0; round_robin.size() < count; ++i) {
    bool any = false;
    for (const auto& list : own)
      if (i < list.size()) {
        any = true;
        round_robin.push_back(list[i].second);
      }
    if (!any) break;
  }
  std::vector<Config> out;
  std::set<Config> taken;
  for (std::size_t i = 0; out.size() < count && (i < order.size() || i < round_robin.size()); ++i) {
    for (const Config* c : {i < order.size() ? &order[i].second : nullptr,
                            i < round_robin.size() ? &round_robin[i] : nullptr})
      if (c != nullptr && out.size() < count && taken.insert(*c).second) out.push_back(*c);
  }
  return out;
}

}  // namespace ktune
