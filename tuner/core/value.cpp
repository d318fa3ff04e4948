// Value: conversions, canonical text, literal parsing and comparison of parameter values.
#include "ktune/value.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "ktune/error.h"

namespace ktune {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// An optionally signed decimal or 0x-hexadecimal integer that fills all of text.
std::optional<std::int64_t> parse_int(std::string_view text) {
  bool negative = false;
  std::string_view s = text;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  std::uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (negative) {
    if (magnitude > kMax + 1) return std::nullopt;
    return static_cast<std::int64_t>(0 - magnitude);  // well defined for INT64_MIN
  }
  if (magnitude > kMax) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

std::optional<double> parse_double(std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+') return std::nullopt;
  double d = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return d;
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      switch (c) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        default:
          out += c;
          break;  // \\ \' \" and anything else stand for themselves
      }
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::int64_t Value::as_int() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return *i;
  if (const auto* d = std::get_if<double>(&v_)) {
    // 2^63 is exactly representable; the range is [-2^63, 2^63).
    if (std::isfinite(*d) && std::trunc(*d) == *d && *d >= -9223372036854775808.0 &&
        *d < 9223372036854775808.0)
      return static_cast<std::int64_t>(*d);
    throw Error(ErrorKind::kInput, "value " + to_string() + " is not an integer");
  }
  throw Error(ErrorKind::kInput, "value '" + as_string() + "' is a string, not an integer");
}

double Value::as_double() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  throw Error(ErrorKind::kInput, "value '" + as_string() + "' is a string, not a number");
}

const std::string& Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return *s;
  throw Error(ErrorKind::kInput, "value " + to_string() + " is a number, not a string");
}

std::string Value::to_string() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v_)) {
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *d);
    std::string out(buf, ec == std::errc() ? end : buf);
    if (out.find_first_of(".en") == std::string::npos) out += ".0";  // "n": inf and nan
    return out;
  }
  return std::get<std::string>(v_);
}

std::string Value::to_literal() const {
  if (!is_string()) return to_string();
  std::string out = "\"";
  for (const char c : std::get<std::string>(v_)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
        break;
    }
  }
  return out + "\"";
}

Value Value::parse(std::string_view text) {
  const std::string_view s = trim(text);
  if (const auto i = parse_int(s)) return Value(*i);
  if (const auto d = parse_double(s)) return Value(*d);
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return Value(unescape(s.substr(1, s.size() - 2)));
  return Value(std::string(s));
}

std::partial_ordering compare_exact(std::int64_t i, double d) {
  if (std::isnan(d)) return std::partial_ordering::unordered;
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63) return std::partial_ordering::less;
  if (d < -kTwo63) return std::partial_ordering::greater;
  const double floor = std::floor(d);
  const auto f = static_cast<std::int64_t>(floor);  // exact: |floor| < 2^63
  if (i != f) return i < f ? std::partial_ordering::less : std::partial_ordering::greater;
  return floor == d ? std::partial_ordering::equivalent : std::partial_ordering::less;
}

namespace {
// Numbers of any kind, exactly.
std::partial_ordering compare_numbers(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return a.as_int() <=> b.as_int();
  if (a.is_int()) return compare_exact(a.as_int(), b.as_double());
  if (b.is_int()) return 0 <=> compare_exact(b.as_int(), a.as_double());
  return a.as_double() <=> b.as_double();
}
}  // namespace

bool operator==(const Value& a, const Value& b) {
  const auto& x = a.v_;
  const auto& y = b.v_;
  if (x.index() == 0 && y.index() == 0) return std::get<0>(x) == std::get<0>(y);
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.is_string() && b.is_string()) return std::get<2>(x) == std::get<2>(y);
  return false;
}

std::partial_ordering operator<=>(const Value& a, const Value& b) {
  const auto& x = a.v_;
  const auto& y = b.v_;
  if (x.index() == 0 && y.index() == 0) return std::get<0>(x) <=> std::get<0>(y);
  if (a.is_number() && b.is_number()) return compare_numbers(a, b);
  if (a.is_string() && b.is_string()) return std::get<2>(x).compare(std::get<2>(y)) <=> 0;
  return a.is_number() ? std::partial_ordering::less : std::partial_ordering::greater;
}

nlohmann::json to_json(const Value& value) {
  if (value.is_int()) return value.as_int();
  if (value.is_double()) return value.as_double();
  return value.as_string();
}

Value value_from_json(const nlohmann::json& j) {
  if (j.is_number_integer()) return Value(j.get<std::int64_t>());
  if (j.is_number_float()) return Value(j.get<double>());
  if (j.is_boolean()) return Value(std::int64_t{j.get<bool>() ? 1 : 0});
  if (j.is_string()) return Value(j.get<std::string>());
  return Value(j.dump());
}

}  // namespace ktune
