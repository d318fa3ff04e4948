// "Did you mean": the known name closest to a misspelt one, for error messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

// The candidate within a small edit distance of `name` (Damerau-Levenshtein: a third of the
// name's length, at least 1, at most 3), the closest first; else the one candidate that starts
// with the name; nullopt when there is none of either, or the name is shorter than 3 characters.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates);
// "; did you mean 'seconds'?" or "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace ktune
