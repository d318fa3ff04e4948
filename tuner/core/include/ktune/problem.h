// A problem: values of a kernel's problem parameters ({n: 268435456}), and its canonical key
// ("n=268435456,m=4"), the one text by which the tuner, the database and the client name it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

using Problem = std::map<std::string, std::int64_t>;

// "name=value" joined by ',' in the order of `names` (a name the problem lacks is left out);
// without names, in the problem's own (alphabetical) order.
std::string problem_key(const Problem& problem, const std::vector<std::string>& names);
std::string problem_key(const Problem& problem);
// Reads a key back; nullopt for anything but comma-separated name=integer with distinct names.
std::optional<Problem> parse_problem_key(std::string_view key);

}  // namespace ktune
