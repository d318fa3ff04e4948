// Suggestions for misspelt names (ktune/suggest.h).
#include "ktune/suggest.h"

#include <algorithm>
#include <cctype>

namespace ktune {

namespace {

// Optimal string alignment distance, case-insensitive: insertions, deletions, substitutions
// and transpositions of neighbours each cost 1.
std::size_t distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates) {
  // Too short to guess from (any one-letter name is one edit from 'x'), or too long to be a name.
  if (name.size() < 3 || name.size() > 200) return std::nullopt;
  const std::size_t limit = std::clamp<std::size_t>(name.size() / 3, 1, 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    if (c.size() > 200) continue;
    const std::size_t d = distance(name, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  if (best) return best;
  // Else the one name that starts with it ("genetic" for "genetic_algorithm").
  const auto starts_with = [&](const std::string& c) {
    if (c.size() <= name.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(c[i])) !=
          std::tolower(static_cast<unsigned char>(name[i])))
        return false;
    return true;
  };
  for (const auto& c : candidates) {
    if (!starts_with(c)) continue;
    if (best) return std::nullopt;  // several: no guess
    best = c;
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const auto best = closest_name(name, candidates);
  return best ? "; did you mean '" + *best + "'?" : std::string();
}

}  // namespace ktune
