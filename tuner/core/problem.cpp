// Canonical problem keys: formatting and parsing.
#include "ktune/problem.h"

#include <charconv>

namespace ktune {

namespace {
void append(std::string& key, const std::string& name, std::int64_t value) {
  if (!key.empty()) key += ',';
  key += name;
  key += '=';
  key += std::to_string(value);
}
}  // namespace

std::string problem_key(const Problem& problem, const std::vector<std::string>& names) {
  std::string key;
  for (const auto& name : names)
    if (auto it = problem.find(name); it != problem.end()) append(key, name, it->second);
  return key;
}

std::string problem_key(const Problem& problem) {
  std::string key;
  for (const auto& [name, value] : problem) append(key, name, value);
  return key;
}

std::optional<Problem> parse_problem_key(std::string_view key) {
  Problem p;
  while (!key.empty()) {
    const std::size_t comma = key.find(',');
    const std::string_view item = key.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    std::int64_t value = 0;
    const char* begin = item.data() + eq + 1;
    const char* end = item.data() + item.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
    if (!p.emplace(std::string(item.substr(0, eq)), value).second) return std::nullopt;
    key = comma == std::string_view::npos ? std::string_view() : key.substr(comma + 1);
  }
  return p;
}

}  // namespace ktune
