// Search spaces: tunable parameters with their value lists, restrictions over parameters,
// problem parameters and device limits, and the valid configurations they leave.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/expr.h"
#include "ktune/value.h"

namespace ktune {

struct Parameter {
  std::string name;
  std::vector<Value> values;      // in the order given; "adjacent" means next in this list
  std::size_t default_index = 0;  // index into values
  std::string description;

  bool categorical() const;  // any value is a string
};

// A configuration: one index into Parameter::values per parameter, in declaration order.
using Config = std::vector<std::uint32_t>;

// For unordered containers of configurations.
struct ConfigHash {
  std::size_t operator()(const Config& c) const noexcept;
};

// Named constants visible to restrictions: problem parameters (n = 268435456) and device
// limits (max_threads_per_block = 1024 ...).
using Constants = std::vector<std::pair<std::string, Value>>;

enum class Neighbourhood {
  kHamming,   // every config that differs in exactly one parameter (any other value)
  kAdjacent,  // differs in one parameter, moved to the previous or next value in its list
};

// How many valid configurations a count goes to before it stops: `ktune space`, a replay's
// count of the recorded space and the progress of a run without an evaluation budget say "at
// least" this many past it (a space of 64 two-valued parameters would never finish counting).
inline constexpr std::uint64_t kValidCountLimit = std::uint64_t{1} << 26;

// Counts from one enumeration, for benchmarks and `ktune space`.
struct EnumerationStats {
  std::uint64_t cartesian = 0;  // size of the Cartesian product
  std::uint64_t valid = 0;
  double seconds = 0;
};

class SearchSpace {
 public:
  SearchSpace() = default;
  // Throws Error(kInput) for duplicate/empty parameters, an empty value list, a default out of
  // range, or a restriction that does not parse or names something unknown.
  SearchSpace(std::vector<Parameter> params, std::vector<std::string> restrictions,
              Constants constants = {});

  const std::vector<Parameter>& params() const { return params_; }
  const std::vector<std::string>& restrictions() const { return restriction_texts_; }
  const Constants& constants() const { return constants_; }
  std::size_t size() const { return params_.size(); }

  // Index of a parameter; throws Error(kUsage) "unknown parameter 'x' of ...; known: a, b".
  std::size_t param_index(std::string_view name) const;
  std::optional<std::size_t> find_param(std::string_view name) const;

  std::uint64_t cartesian_size() const;  // saturates at UINT64_MAX

  bool is_valid(const Config& config) const;
  // The text of the first restriction the config violates; nullopt if valid. A restriction
  // whose evaluation fails (say, a division by zero) counts as violated; its text is then
  // followed by the cause: "a % b == 0 (error: column 3: modulo by zero)".
  std::optional<std::string> violated(const Config& config) const;

  // Visits the valid configs in lexicographic order of value indices; return false to stop.
  // Restrictions are checked as soon as every parameter they name is assigned, so whole
  // subtrees of the Cartesian product are pruned at once.
  EnumerationStats for_each_valid(const std::function<bool(const Config&)>& visit) const;
  std::vector<Config> enumerate() const;

  Config default_config() const;
  Value value(const Config& config, std::size_t param) const;
  std::vector<Value> values(const Config& config) const;

  // Canonical key: "name=value" in declaration order joined by ','; the same config always has
  // the same key, and parse_key(key(c)) == c.
  std::string key(const Config& config) const;
  Config parse_key(std::string_view key) const;  // throws Error(kUsage) naming the bad part
  // The config as a JSON object {"name": value, ...} (to_json of each Value).
  nlohmann::json to_json(const Config& config) const;
  // Builds a config from name=value assignments; unassigned parameters take their default.
  // Throws Error(kUsage) for an unknown parameter or a value not in its list.
  Config from_assignments(const std::map<std::string, std::string>& assignments) const;

  // Valid neighbours of config (config itself excluded), in a deterministic order.
  std::vector<Config> neighbours(const Config& config, Neighbourhood kind) const;

  // Hash of parameter names, value lists and restriction texts (not of the constants): two
  // spaces with the same hash hold the same configurations for the same problem and device.
  std::string hash() const;

  // Narrows the space to an explicit list of configurations (a recording's, where no
  // restrictions describe it): a config is then valid only if it passes the restrictions and is
  // listed. Configs with the wrong number of values are refused (Error kInput); the list is part
  // of hash(). An empty list is allowed: the space then holds nothing.
  void restrict_to(const std::vector<Config>& members);
  bool listed_only() const { return members_ != nullptr; }

 private:
  struct Restriction {
    Expr expr;
    int last_param = -1;  // highest parameter index the restriction names; -1: constants only
  };
  std::vector<Parameter> params_;
  std::vector<std::string> restriction_texts_;
  Constants constants_;
  Scope scope_;  // slots: parameters first, then constants
  std::vector<Restriction> restrictions_;
  std::vector<std::vector<int>> checks_at_;  // restriction indices to check once param i is set
  std::shared_ptr<const std::set<Config>> members_;  // null: every config passing restrictions
  bool listed(const Config& config) const { return !members_ || members_->count(config) > 0; }
};

}  // namespace ktune
