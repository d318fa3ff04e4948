// SearchSpace: validation, pruned depth-first enumeration, config keys and neighbourhoods.
#include "ktune/space.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ktune/error.h"
#include "ktune/hash.h"

namespace ktune {

std::size_t ConfigHash::operator()(const Config& c) const noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint32_t v : c) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  }
  return static_cast<std::size_t>(h);
}
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  const auto start = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!start(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return start(c) || (c >= '0' && c <= '9'); });
}

bool is_keyword(std::string_view s) {
  return s == "and" || s == "or" || s == "not" || s == "in" || s == "if" || s == "else" ||
         s == "True" || s == "False";
}

[[noreturn]] void input_error(const std::string& message) {
  throw Error(ErrorKind::kInput, message);
}

void check_name(const std::string& what, const std::string& name) {
  if (name.empty()) input_error(what + " with an empty name");
  if (!is_identifier(name)) input_error(what + " name '" + name + "' is not an identifier");
  if (is_keyword(name))
    input_error(what + " name '" + name + "' is a keyword of the expression language");
}

std::string join_values(const std::vector<Value>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += values[i].to_string();
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The index of the value that text denotes: a value equal to the parsed literal (so "64", "64.0"
// and "0x40" all find 64), else a string value spelled exactly as text.
std::optional<std::uint32_t> match_value(const Parameter& p, std::string_view text) {
  const Value parsed = Value::parse(text);
  for (std::size_t i = 0; i < p.values.size(); ++i)
    if (p.values[i] == parsed) return static_cast<std::uint32_t>(i);
  for (std::size_t i = 0; i < p.values.size(); ++i)
    if (p.values[i].is_string() && p.values[i].as_string() == text)
      return static_cast<std::uint32_t>(i);
  return std::nullopt;
}

std::string unknown_parameter(const std::vector<Parameter>& params, std::string_view name) {
  std::string m = "unknown parameter '" + std::string(name) + "'; known: ";
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i > 0) m += ", ";
    m += params[i].name;
  }
  return m;
}

std::string not_one_of(const Parameter& p, std::string_view text) {
  return "parameter '" + p.name + "': value " + std::string(text) + " is not one of " +
         join_values(p.values);
}

}  // namespace

bool Parameter::categorical() const {
  return std::any_of(values.begin(), values.end(), [](const Value& v) { return v.is_string(); });
}

SearchSpace::SearchSpace(std::vector<Parameter> params, std::vector<std::string> restrictions,
                         Constants constants)
    : params_(std::move(params)),
      restriction_texts_(std::move(restrictions)),
      constants_(std::move(constants)) {
  for (const auto& p : params_) {
    check_name("parameter", p.name);
    if (scope_.find(p.name) >= 0) input_error("parameter '" + p.name + "' is declared twice");
    scope_.add(p.name);
    if (p.values.empty()) input_error("parameter '" + p.name + "' has no values");
    if (p.values.size() > std::numeric_limits<std::uint32_t>::max())
      input_error("parameter '" + p.name + "' has too many values");
    if (p.default_index >= p.values.size())
      input_error("parameter '" + p.name + "': default index " + std::to_string(p.default_index) +
                  " is out of range (" + std::to_string(p.values.size()) + " values)");
    for (std::size_t i = 0; i < p.values.size(); ++i) {
      const Value& v = p.values[i];
      if (v.is_string() && v.as_string().find(',') != std::string::npos)
        input_error("parameter '" + p.name + "': value '" + v.as_string() +
                    "' contains ',', which separates the parts of config keys");
      for (std::size_t j = 0; j < i; ++j)
        if (p.values[j] == v)
          input_error("parameter '" + p.name + "': value " + v.to_string() + " is listed twice");
    }
  }
  for (const auto& [name, value] : constants_) {
    check_name("constant", name);
    const int slot = scope_.find(name);
    if (slot >= 0 && static_cast<std::size_t>(slot) < params_.size())
      input_error("constant '" + name + "' clashes with a parameter of the same name");
    if (slot >= 0) input_error("constant '" + name + "' is given twice");
    scope_.add(name);
  }

  const auto n = static_cast<int>(params_.size());
  checks_at_.assign(params_.size(), {});
  for (const auto& text : restriction_texts_) {
    Restriction r{Expr::parse(text, scope_), -1};
    for (const int slot : r.expr.slots_used())
      if (slot < n) r.last_param = std::max(r.last_param, slot);
    if (r.last_param >= 0)
      checks_at_[static_cast<std::size_t>(r.last_param)].push_back(
          static_cast<int>(restrictions_.size()));
    restrictions_.push_back(std::move(r));
  }
}

std::size_t SearchSpace::param_index(std::string_view name) const {
  if (const auto i = find_param(name)) return *i;
  throw Error(ErrorKind::kUsage, unknown_parameter(params_, name));
}

std::optional<std::size_t> SearchSpace::find_param(std::string_view name) const {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return i;
  return std::nullopt;
}

std::uint64_t SearchSpace::cartesian_size() const {
  std::uint64_t n = 1;
  for (const auto& p : params_)
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(p.values.size()), &n))
      return std::numeric_limits<std::uint64_t>::max();
  return n;
}

namespace {

// The slot values for a config: parameters, then constants.
std::vector<Value> slot_values(const std::vector<Parameter>& params, const Constants& constants,
                               const Config* config) {
  std::vector<Value> slots;
  slots.reserve(params.size() + constants.size());
  for (std::size_t i = 0; i < params.size(); ++i)
    slots.push_back(config ? params[i].values[(*config)[i]] : Value());
  for (const auto& c : constants) slots.push_back(c.second);
  return slots;
}

void check_config(const std::vector<Parameter>& params, const Config& config) {
  if (config.size() != params.size())
    throw Error(ErrorKind::kInternal, "config has " + std::to_string(config.size()) +
                                          " values, the space has " +
                                          std::to_string(params.size()) + " parameters");
  for (std::size_t i = 0; i < config.size(); ++i)
    if (config[i] >= params[i].values.size())
      throw Error(ErrorKind::kInternal, "config: index " + std::to_string(config[i]) +
                                            " of parameter '" + params[i].name +
                                            "' is out of range (" +
                                            std::to_string(params[i].values.size()) + " values)");
}

}  // namespace

bool SearchSpace::is_valid(const Config& config) const {
  check_config(params_, config);
  const std::vector<Value> slots = slot_values(params_, constants_, &config);
  for (const auto& r : restrictions_) {
    try {
      if (!r.expr.eval_bool(slots)) return false;
    } catch (const Error&) {
      return false;
    }
  }
  return listed(config);
}

std::optional<std::string> SearchSpace::violated(const Config& config) const {
  check_config(params_, config);
  const std::vector<Value> slots = slot_values(params_, constants_, &config);
  for (std::size_t r = 0; r < restrictions_.size(); ++r) {
    const std::string& text = restriction_texts_[r];
    try {
      if (!restrictions_[r].expr.eval_bool(slots)) return text;
    } catch (const Error& e) {
      // The message quotes the expression; keep only what follows, after the text itself.
      std::string detail = e.what();
      const std::string prefix = "expression '" + text + "': ";
      if (detail.starts_with(prefix)) detail.erase(0, prefix.size());
      return text + " (error: " + detail + ")";
    }
  }
  if (!listed(config)) return std::string("not among the listed configurations");
  return std::nullopt;
}

EnumerationStats SearchSpace::for_each_valid(
    const std::function<bool(const Config&)>& visit) const {
  const auto start = std::chrono::steady_clock::now();
  EnumerationStats stats;
  stats.cartesian = cartesian_size();
  const auto finish = [&] {
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats;
  };
  if (members_) {
    // A listed space: the list in order (std::set orders configs as the walk below does).
    for (const Config& c : *members_)
      if (is_valid(c)) {
        ++stats.valid;
        if (!visit(c)) break;
      }
    return finish();
  }
  std::vector<Value> slots = slot_values(params_, constants_, nullptr);
  const auto passes = [&](const std::vector<int>& checks) {
    for (const int r : checks) {
      try {
        if (!restrictions_[static_cast<std::size_t>(r)].expr.eval_bool(slots)) return false;
      } catch (const Error&) {
        return false;
      }
    }
    return true;
  };
  // Restrictions over constants alone hold for every config or for none.
  for (const auto& r : restrictions_) {
    if (r.last_param >= 0) continue;
    try {
      if (!r.expr.eval_bool(slots)) return finish();
    } catch (const Error&) {
      return finish();
    }
  }
  const std::size_t n = params_.size();
  Config config(n, 0);
  if (n == 0) {
    ++stats.valid;
    visit(config);
    return finish();
  }
  std::size_t depth = 0;
  while (true) {
    slots[depth] = params_[depth].values[config[depth]];
    if (passes(checks_at_[depth])) {
      if (depth + 1 < n) {
        config[++depth] = 0;
        continue;
      }
      ++stats.valid;
      if (!visit(config)) return finish();
    }
    // Next sibling, climbing up past exhausted levels.
    while (++config[depth] == params_[depth].values.size()) {
      if (depth == 0) return finish();
      --depth;
    }
  }
}

std::vector<Config> SearchSpace::enumerate() const {
  std::vector<Config> out;
  for_each_valid([&](const Config& c) {
    out.push_back(c);
    return true;
  });
  return out;
}

Config SearchSpace::default_config() const {
  Config c(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i)
    c[i] = static_cast<std::uint32_t>(params_[i].default_index);
  return c;
}

Value SearchSpace::value(const Config& config, std::size_t param) const {
  check_config(params_, config);
  return params_.at(param).values[config[param]];
}

std::vector<Value> SearchSpace::values(const Config& config) const {
  check_config(params_, config);
  std::vector<Value> out;
  out.reserve(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) out.push_back(params_[i].values[config[i]]);
  return out;
}

std::string SearchSpace::key(const Config& config) const {
  check_config(params_, config);
  std::string out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (i > 0) out += ',';
    out += params_[i].name;
    out += '=';
    out += params_[i].values[config[i]].to_string();
  }
  return out;
}

nlohmann::json SearchSpace::to_json(const Config& config) const {
  check_config(params_, config);
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < params_.size(); ++i)
    j[params_[i].name] = ktune::to_json(params_[i].values[config[i]]);
  return j;
}

Config SearchSpace::parse_key(std::string_view key) const {
  const auto fail = [&](const std::string& detail) {
    throw Error(ErrorKind::kUsage, "config key '" + std::string(key) + "': " + detail);
  };
  Config config(params_.size(), 0);
  std::vector<bool> seen(params_.size(), false);
  std::size_t pos = 0;
  while (pos < key.size()) {
    std::size_t end = key.find(',', pos);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view part = key.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos || trim(part.substr(0, eq)).empty())
      fail("part '" + std::string(part) + "' is not name=value");
    const std::string_view name = trim(part.substr(0, eq));
    const std::string_view text = part.substr(eq + 1);
    const auto index = find_param(name);
    if (!index) fail(unknown_parameter(params_, name));
    if (seen[*index]) fail("parameter '" + std::string(name) + "' is given twice");
    seen[*index] = true;
    const auto v = match_value(params_[*index], text);
    if (!v) fail(not_one_of(params_[*index], text));
    config[*index] = *v;
    if (end == key.size()) break;
    if (pos == key.size()) fail("empty part after the last ','");
  }
  std::string missing;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (seen[i]) continue;
    missing += missing.empty() ? "" : ", ";
    missing += params_[i].name;
  }
  if (!missing.empty()) fail("missing " + missing);
  return config;
}

Config SearchSpace::from_assignments(const std::map<std::string, std::string>& assignments) const {
  Config config = default_config();
  for (const auto& [name, text] : assignments) {
    const std::size_t i = param_index(name);
    const auto v = match_value(params_[i], text);
    if (!v) throw Error(ErrorKind::kUsage, not_one_of(params_[i], text));
    config[i] = *v;
  }
  return config;
}

std::vector<Config> SearchSpace::neighbours(const Config& config, Neighbourhood kind) const {
  check_config(params_, config);
  std::vector<Config> out;
  Config candidate = config;
  const auto consider = [&](std::size_t p, std::size_t index) {
    candidate[p] = static_cast<std::uint32_t>(index);
    if (is_valid(candidate)) out.push_back(candidate);
    candidate[p] = config[p];
  };
  for (std::size_t p = 0; p < params_.size(); ++p) {
    const std::size_t current = config[p];
    if (kind == Neighbourhood::kHamming) {
      for (std::size_t i = 0; i < params_[p].values.size(); ++i)
        if (i != current) consider(p, i);
    } else {
      if (current > 0) consider(p, current - 1);
      if (current + 1 < params_[p].values.size()) consider(p, current + 1);
    }
  }
  return out;
}

std::string SearchSpace::hash() const {
  Hasher h;
  h.add("ktune-search-space-1");
  h.add(std::to_string(params_.size()));
  for (const auto& p : params_) {
    h.add(p.name);
    h.add(std::to_string(p.values.size()));
    // The kind too, so the int 1 and the string "1" differ.
    for (const auto& v : p.values)
      h.add((v.is_int() ? "i:" : v.is_double() ? "f:" : "s:") + v.to_string());
    h.add(std::to_string(p.default_index));
  }
  h.add(std::to_string(restriction_texts_.size()));
  for (const auto& r : restriction_texts_) h.add(r);
  if (members_) {
    h.add("listed " + std::to_string(members_->size()));
    for (const Config& c : *members_) h.add(key(c));
  }
  return h.hex();
}

void SearchSpace::restrict_to(const std::vector<Config>& members) {
  auto set = std::make_shared<std::set<Config>>();
  for (const Config& c : members) {
    check_config(params_, c);
    set->insert(c);
  }
  members_ = std::move(set);
}

}  // namespace ktune
