// A parameter or problem value: an integer, a floating-point number or a categorical string.
// Ordinal parameters use numbers; categorical ones strings (e.g. layout = "soa").
#pragma once

#include <compare>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ktune {

// Preprocessor macros as (name, text), in the order they are defined.
using Defines = std::vector<std::pair<std::string, std::string>>;

class Value {
 public:
  Value() : v_(std::int64_t{0}) {}
  Value(std::int64_t i) : v_(i) {}              // NOLINT(google-explicit-constructor)
  Value(int i) : v_(std::int64_t{i}) {}         // NOLINT(google-explicit-constructor)
  Value(double d) : v_(d) {}                    // NOLINT(google-explicit-constructor)
  Value(std::string s) : v_(std::move(s)) {}    // NOLINT(google-explicit-constructor)
  Value(const char* s) : v_(std::string(s)) {}  // NOLINT(google-explicit-constructor)

  bool is_int() const { return std::holds_alternative<std::int64_t>(v_); }
  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return !is_string(); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }

  std::int64_t as_int() const;           // throws Error unless an integer (or an integral double)
  double as_double() const;              // throws Error for strings
  const std::string& as_string() const;  // throws Error unless a string

  // Canonical text: integers in decimal, doubles in the shortest form that reads back exactly
  // (always with a '.' or exponent, so 2.0 stays a double), strings as they are. Used in
  // config keys, #defines and the database.
  std::string to_string() const;
  // As a literal in an expression or JSON-like text: strings quoted.
  std::string to_literal() const;

  // Reads a literal: an integer, a float, or a string (quoted, or bare if it is not a number).
  static Value parse(std::string_view text);

  // Numbers compare by value (1 == 1.0); a number sorts before any string.
  friend bool operator==(const Value& a, const Value& b);
  friend std::partial_ordering operator<=>(const Value& a, const Value& b);

  const std::variant<std::int64_t, double, std::string>& variant() const { return v_; }

 private:
  std::variant<std::int64_t, double, std::string> v_;
};

// An integer against a float exactly, as Python compares them: 2^53 + 1 > 2^53 as a float,
// although both are the same double. NaN is unordered.
std::partial_ordering compare_exact(std::int64_t i, double d);

// As JSON: a number or a string. From JSON: integers, floats and strings as they are, booleans
// as 0/1, anything else as its JSON text (a string).
nlohmann::json to_json(const Value& value);
Value value_from_json(const nlohmann::json& j);

}  // namespace ktune
