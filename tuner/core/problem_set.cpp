// Problem sets (ktune/problem_set.h): values, lists, geometric ranges and derived parameters,
// their grid, and the order in which a family is tuned.
#include "ktune/problem_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "ktune/error.h"
#include "ktune/expr.h"

namespace ktune {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// `text` split at `sep` where it is outside brackets, parentheses and quotes.
std::vector<std::string_view> split_top(std::string_view text, std::string_view sep) {
  std::vector<std::string_view> out;
  int depth = 0;
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      --depth;
    } else if (depth == 0 && text.substr(i, sep.size()) == sep) {
      out.push_back(text.substr(start, i - start));
      i += sep.size() - 1;
      start = i + 1;
    }
  }
  out.push_back(text.substr(start));
  return out;
}

[[noreturn]] void refuse(const std::string& where, const std::string& name,
                         const std::string& what) {
  throw Error(ErrorKind::kUsage, fmt::format("{} {}: {}", where, name, what));
}

// An integer, or a double with an integral value that a 64-bit integer holds.
std::int64_t integral(const Value& v, const std::string& where, const std::string& name) {
  const bool ok = v.is_int() || (v.is_double() && std::isfinite(v.as_double()) &&
                                 std::floor(v.as_double()) == v.as_double() &&
                                 std::abs(v.as_double()) < 9223372036854775808.0);
  if (!ok) refuse(where, name, fmt::format("{} is not a 64-bit integer", v.to_string()));
  return v.as_int();
}

std::int64_t constant(std::string_view text, const std::string& where, const std::string& name) {
  const std::string t(trim(text));
  if (t.empty()) refuse(where, name, "a value is missing");
  Value v;
  try {
    v = Expr::parse(t, Scope{}).eval({});
  } catch (const Error& e) {
    refuse(where, name, e.what());
  }
  return integral(v, where, name);
}

// a..b or a..b..f: a, a*f, a*f^2, ... up to b.
std::vector<std::int64_t> geometric(const std::vector<std::string_view>& parts,
                                    const std::string& where, const std::string& name) {
  const std::int64_t from = constant(parts[0], where, name);
  const std::int64_t to = constant(parts[1], where, name);
  const std::int64_t factor = parts.size() == 3 ? constant(parts[2], where, name) : 2;
  if (from < 1) refuse(where, name, fmt::format("a range starts at 1 or more, not {}", from));
  if (to < from) refuse(where, name, fmt::format("the range {}..{} does not increase", from, to));
  if (factor < 2) refuse(where, name, fmt::format("a range's factor is 2 or more, not {}", factor));
  std::vector<std::int64_t> out;
  for (std::int64_t v = from;;) {
    out.push_back(v);
    if (v > to / factor) break;
    v *= factor;
    if (v > to) break;
  }
  return out;
}

double log2_of(std::int64_t v) {
  return std::log2(static_cast<double>(std::max<std::int64_t>(v, 1)));
}

double distance(const Problem& a, const Problem& b) {
  double d = 0;
  for (const auto& [name, value] : a) {
    const auto it = b.find(name);
    const double x = log2_of(value) - (it == b.end() ? 0.0 : log2_of(it->second));
    d += x * x;
  }
  return std::sqrt(d);
}

}  // namespace

void ProblemSet::set(const std::string& name, const std::string& text, const std::string& where) {
  Param p;
  p.where = where;
  const std::string_view t = trim(text);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
    const std::string_view inner = trim(t.substr(1, t.size() - 2));
    if (inner.empty()) refuse(where, name, "an empty list");
    for (const std::string_view item : split_top(inner, ","))
      p.values.push_back(constant(item, where, name));
  } else if (const auto parts = split_top(t, ".."); parts.size() > 1) {
    if (parts.size() > 3)
      refuse(where, name, fmt::format("'{}': expected FROM..TO or FROM..TO..FACTOR", t));
    p.values = geometric(parts, where, name);
  } else {
    try {
      p.values.push_back(integral(Expr::parse(std::string(t), Scope{}).eval({}), where, name));
    } catch (const Error&) {
      // Not a constant: an expression of the other parameters, checked by problems().
      if (t.empty()) refuse(where, name, "a value is missing");
      p.expression = std::string(t);
    }
  }
  if (p.values.size() > kMaxProblems)
    refuse(where, name, fmt::format("{} values, more than {}", p.values.size(), kMaxProblems));
  params_[name] = std::move(p);
}

void ProblemSet::set(const std::string& name, std::int64_t value) {
  Param p;
  p.values = {value};
  params_[name] = std::move(p);
}

std::vector<Problem> ProblemSet::problems() const {
  std::vector<std::string> given, derived;
  for (const auto& [name, p] : params_) (p.expression.empty() ? given : derived).push_back(name);
  std::size_t count = 1;
  for (const auto& name : given) {
    count *= params_.at(name).values.size();
    if (count > kMaxProblems)
      throw Error(ErrorKind::kUsage,
                  fmt::format("the problems' grid holds more than {} problems", kMaxProblems));
  }
  Scope scope;
  for (const auto& name : given) scope.add(name);
  std::vector<std::pair<std::string, Expr>> formulas;
  for (const auto& name : derived) {
    const Param& p = params_.at(name);
    try {
      formulas.emplace_back(name, Expr::parse(p.expression, scope));
    } catch (const Error& e) {
      refuse(p.where, name, e.what());
    }
  }
  std::vector<Problem> out;
  std::vector<std::size_t> at(given.size(), 0);
  std::vector<Value> slots(given.size());
  for (std::size_t n = 0; n < count; ++n) {
    Problem problem;
    for (std::size_t i = 0; i < given.size(); ++i) {
      problem[given[i]] = params_.at(given[i]).values[at[i]];
      slots[i] = Value(problem[given[i]]);
    }
    for (const auto& [name, formula] : formulas) {
      try {
        problem[name] = integral(formula.eval(slots), params_.at(name).where, name);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kUsage) throw;
        refuse(params_.at(name).where, name, e.what());
      }
    }
    out.push_back(std::move(problem));
    for (std::size_t i = given.size(); i-- > 0;) {  // the last parameter varies fastest
      if (++at[i] < params_.at(given[i]).values.size()) break;
      at[i] = 0;
    }
  }
  return out;
}

std::size_t nearest_problem(const Problem& problem, const std::vector<Problem>& tuned) {
  std::size_t best = tuned.size();
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    const double d = distance(problem, tuned[i]);
    if (d < best_d) best_d = d, best = i;
  }
  return best;
}

std::vector<std::size_t> family_order(const std::vector<Problem>& problems) {
  std::vector<std::size_t> order;
  if (problems.empty()) return order;
  // The medoid first: the least total distance to the others.
  std::size_t first = 0;
  double least = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < problems.size(); ++i) {
    double total = 0;
    for (const Problem& q : problems) total += distance(problems[i], q);
    if (total < least) least = total, first = i;
  }
  std::vector<bool> done(problems.size(), false);
  std::vector<double> gap(problems.size(), std::numeric_limits<double>::infinity());
  for (std::size_t next = first; next < problems.size();) {
    order.push_back(next);
    done[next] = true;
    std::size_t pick = problems.size();
    for (std::size_t i = 0; i < problems.size(); ++i) {
      if (done[i]) continue;
      gap[i] = std::min(gap[i], distance(problems[i], problems[next]));
      if (pick == problems.size() || gap[i] < gap[pick]) pick = i;
    }
    next = pick;
  }
  return order;
}

}  // namespace ktune
