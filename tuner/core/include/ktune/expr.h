// The safe expression language of restrictions, launch geometry, buffer sizes and metrics.
// Python-like, parsed once and evaluated many times, never handed to a Python interpreter.
//
//   literals     42  0x2A  1.5  1e6  "soa" 'soa'  True False
//   names        parameters, problem parameters, device limits (see Scope)
//   arithmetic   + - * / (true division)  // (floor division)  % (Python modulo)  ** (power)
//   bits         & | ^ ~ << >>
//   comparison   < <= > >= == !=, chained as in Python: 32 <= a*b <= 1024
//   logic        and or not (also && || !), short-circuit; a if cond else b
//   membership   x in [1, 2, 4]   x not in [..]
//   functions    min max abs ceil floor round sqrt log2 pow int float bool
//                div_up(a, b)  (ceiling division of integers)
//
// Integers stay 64-bit integers; '/' and functions like sqrt give doubles. Strings compare only
// with == != and in. Errors (unknown name, syntax, division by zero, type mismatch) throw
// ktune::Error whose message quotes the expression and the position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/value.h"

namespace ktune {

// The names an expression may use, each bound to a slot of the value array passed to eval().
class Scope {
 public:
  // Adds a name and returns its slot; adding a name twice returns the first slot.
  int add(std::string_view name);
  // The slot of a name, or -1.
  int find(std::string_view name) const;
  std::size_t size() const { return names_.size(); }
  const std::string& name(int slot) const { return names_.at(static_cast<std::size_t>(slot)); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

class Expr {
 public:
  Expr();
  ~Expr();
  Expr(const Expr&);
  Expr& operator=(const Expr&);
  Expr(Expr&&) noexcept;
  Expr& operator=(Expr&&) noexcept;

  // Parses text against scope; unknown names are an error that lists the known ones.
  static Expr parse(std::string_view text, const Scope& scope);

  // Evaluates with slots[i] bound to scope name i; slots must cover every slot this expression
  // uses (max_slot() < slots.size()).
  Value eval(std::span<const Value> slots) const;
  bool eval_bool(std::span<const Value> slots) const;         // truthiness, as in Python
  std::int64_t eval_int(std::span<const Value> slots) const;  // integral result or error
  double eval_double(std::span<const Value> slots) const;

  const std::string& text() const;
  // Slots referenced, sorted ascending, without duplicates.
  const std::vector<int>& slots_used() const;
  int max_slot() const;  // -1 for a constant expression
  bool is_constant() const { return max_slot() < 0; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
