// The expression language: a lexer, a recursive-descent parser to a small tree, constant folding,
// and a compiler to flat stack bytecode that evaluates without allocating.
#include "ktune/expr.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>

#include "ktune/error.h"
#include "ktune/suggest.h"

namespace ktune {

int Scope::add(std::string_view name) {
  if (const int slot = find(name); slot >= 0) return slot;
  names_.emplace_back(name);
  return static_cast<int>(names_.size()) - 1;
}

int Scope::find(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

// clang-format off
enum class Op : std::uint8_t {
  kLoadSlot,     // arg: slot
  kLoadConst,    // arg: index into consts
  kAdd, kSub, kMul, kTrueDiv, kFloorDiv, kMod, kPow,
  kBitAnd, kBitOr, kBitXor, kShl, kShr,
  kLt, kLe, kGt, kGe, kEq, kNe,
  kNeg, kPos, kInvert, kNot, kToBool,
  kChain,        // aux: comparison; compares the top two; false: leaves 0 and jumps to arg,
                 // true: leaves the right operand for the next comparison
  kAndJump,      // top falsy: replace with 0 and jump to arg; else pop
  kOrJump,       // top truthy: replace with 1 and jump to arg; else pop
  kJumpIfFalse,  // pops; jumps to arg when falsy
  kJump,
  kIn, kNotIn,   // arg: list length; pops the list and the needle, pushes 0/1
  kCall,         // aux: Fn; arg: argument count
};

enum class Fn : std::uint8_t {
  kAbs, kBool, kCeil, kDivUp, kFloat, kFloor, kInt, kLog2, kMax, kMin, kPow, kRound, kSqrt,
};
// clang-format on

struct FnInfo {
  std::string_view name;
  Fn fn;
  int min_args;
  int max_args;  // -1: any number
};

// Alphabetical, as listed in "unknown function" messages.
constexpr std::array<FnInfo, 13> kFunctions = {{
    {"abs", Fn::kAbs, 1, 1},
    {"bool", Fn::kBool, 1, 1},
    {"ceil", Fn::kCeil, 1, 1},
    {"div_up", Fn::kDivUp, 2, 2},
    {"float", Fn::kFloat, 1, 1},
    {"floor", Fn::kFloor, 1, 1},
    {"int", Fn::kInt, 1, 1},
    {"log2", Fn::kLog2, 1, 1},
    {"max", Fn::kMax, 1, -1},
    {"min", Fn::kMin, 1, -1},
    {"pow", Fn::kPow, 2, 2},
    {"round", Fn::kRound, 1, 1},
    {"sqrt", Fn::kSqrt, 1, 1},
}};

std::string_view fn_name(Fn fn) {
  for (const auto& f : kFunctions)
    if (f.fn == fn) return f.name;
  return "?";
}

std::string_view op_symbol(Op op) {
  switch (op) {
    case Op::kAdd:
      return "+";
    case Op::kSub:
      return "-";
    case Op::kMul:
      return "*";
    case Op::kTrueDiv:
      return "/";
    case Op::kFloorDiv:
      return "//";
    case Op::kMod:
      return "%";
    case Op::kPow:
      return "**";
    case Op::kBitAnd:
      return "&";
    case Op::kBitOr:
      return "|";
    case Op::kBitXor:
      return "^";
    case Op::kShl:
      return "<<";
    case Op::kShr:
      return ">>";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
    case Op::kNeg:
      return "-";
    case Op::kPos:
      return "+";
    case Op::kInvert:
      return "~";
    case Op::kIn:
      return "in";
    case Op::kNotIn:
      return "not in";
    default:
      return "?";
  }
}

struct Instr {
  Op op;
  std::uint8_t aux;
  std::int32_t arg;
};

// A value on the evaluation stack. Strings point into the slots or the constants, which outlive
// one evaluation, so nothing is copied or allocated.
struct Cell {
  enum Tag : std::uint8_t { kInt, kDouble, kString };
  Tag tag;
  union {
    std::int64_t i;
    double d;
    const std::string* s;
  };
};

inline Cell int_cell(std::int64_t i) {
  Cell c;
  c.tag = Cell::kInt;
  c.i = i;
  return c;
}

inline Cell double_cell(double d) {
  Cell c;
  c.tag = Cell::kDouble;
  c.d = d;
  return c;
}

inline void load(Cell& c, const Value& v) {
  const auto& var = v.variant();
  switch (var.index()) {
    case 0:
      c.tag = Cell::kInt;
      c.i = *std::get_if<0>(&var);
      break;
    case 1:
      c.tag = Cell::kDouble;
      c.d = *std::get_if<1>(&var);
      break;
    default:
      c.tag = Cell::kString;
      c.s = std::get_if<2>(&var);
      break;
  }
}

inline double to_double(const Cell& c) {
  return c.tag == Cell::kInt ? static_cast<double>(c.i) : c.d;
}

inline bool truthy(const Cell& c) {
  switch (c.tag) {
    case Cell::kInt:
      return c.i != 0;
    case Cell::kDouble:
      return c.d != 0.0;  // NaN is truthy, as in Python
    default:
      return !c.s->empty();
  }
}

std::string_view type_name(const Cell& c) {
  switch (c.tag) {
    case Cell::kInt:
      return "int";
    case Cell::kDouble:
      return "float";
    default:
      return "string";
  }
}

Value to_value(const Cell& c) {
  switch (c.tag) {
    case Cell::kInt:
      return Value(c.i);
    case Cell::kDouble:
      return Value(c.d);
    default:
      return Value(*c.s);
  }
}

}  // namespace

// The compiled form. Named (not anonymous) so that Expr::Impl can derive from it.
namespace expr_detail {
struct Program {
  std::string text;
  std::vector<Instr> code;
  std::vector<int> columns;  // per instruction, for error messages
  std::vector<Value> consts;
  std::vector<int> slots_used;
  int max_slot = -1;
  int max_depth = 0;
};
}  // namespace expr_detail

struct Expr::Impl : expr_detail::Program {};

namespace {

using Impl = expr_detail::Program;

// The expression as an error message quotes it: at most 80 characters, control characters
// (a NUL, say) shown as \xNN, so a message stays one readable line whatever the input.
std::string quoted(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > 80) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

[[noreturn]] void throw_at(const std::string& text, int column, std::string_view detail) {
  std::string message = "expression '" + quoted(text) + "'";
  if (column > 0) message += ": column " + std::to_string(column);
  message += ": ";
  message += detail;
  throw Error(ErrorKind::kInput, message);
}

[[noreturn, gnu::cold, gnu::noinline]] void fail(const Impl& p, std::size_t pc,
                                                 std::string_view detail) {
  throw_at(p.text, p.columns[pc], detail);
}

[[noreturn, gnu::cold, gnu::noinline]] void binary_type_error(const Impl& p, std::size_t pc, Op op,
                                                              const Cell& a, const Cell& b) {
  std::string m = "unsupported operand types for '";
  m += op_symbol(op);
  m += "': ";
  m += type_name(a);
  m += " and ";
  m += type_name(b);
  fail(p, pc, m);
}

[[noreturn, gnu::cold, gnu::noinline]] void overflow(const Impl& p, std::size_t pc) {
  fail(p, pc, "integer overflow");
}

// Python's conversions of a float to an integer: only finite values in range.
std::int64_t to_int_checked(const Impl& p, std::size_t pc, double d) {
  if (std::isnan(d)) fail(p, pc, "cannot convert nan to an integer");
  if (std::isinf(d)) fail(p, pc, "cannot convert infinity to an integer");
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
    fail(p, pc, "float out of the 64-bit integer range");
  return static_cast<std::int64_t>(d);
}

std::int64_t int_floordiv(const Impl& p, std::size_t pc, std::int64_t x, std::int64_t y) {
  if (y == 0) fail(p, pc, "division by zero");
  if (y == -1) {
    if (x == std::numeric_limits<std::int64_t>::min()) overflow(p, pc);
    return -x;
  }
  std::int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  return q;
}

std::int64_t int_mod(const Impl& p, std::size_t pc, std::int64_t x, std::int64_t y) {
  if (y == 0) fail(p, pc, "modulo by zero");
  if (y == -1) return 0;
  std::int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

// CPython's float_divmod.
void float_divmod(double x, double y, double* floordiv, double* mod) {
  double m = std::fmod(x, y);
  double div = (x - m) / y;
  if (m != 0.0) {
    if ((y < 0) != (m < 0)) {
      m += y;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, y);
  }
  double fd;
  if (div != 0.0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, x / y);
  }
  *floordiv = fd;
  *mod = m;
}

Cell power(const Impl& p, std::size_t pc, const Cell& a, const Cell& b) {
  if (a.tag == Cell::kString || b.tag == Cell::kString) binary_type_error(p, pc, Op::kPow, a, b);
  if (a.tag == Cell::kInt && b.tag == Cell::kInt && b.i >= 0) {
    std::int64_t base = a.i;
    std::int64_t e = b.i;
    std::int64_t result = 1;
    if (base == 0 || base == 1) return int_cell(e == 0 ? 1 : base);
    if (base == -1) return int_cell((e & 1) ? -1 : 1);
    while (e != 0) {
      if ((e & 1) && __builtin_mul_overflow(result, base, &result)) overflow(p, pc);
      e >>= 1;
      if (e != 0 && __builtin_mul_overflow(base, base, &base)) overflow(p, pc);
    }
    return int_cell(result);
  }
  const double x = to_double(a);
  const double y = to_double(b);
  if (x == 0.0 && y < 0.0) fail(p, pc, "zero to a negative power");
  if (x < 0.0 && std::isfinite(y) && std::floor(y) != y)
    fail(p, pc, "negative number to a fractional power");
  const double r = std::pow(x, y);
  if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) fail(p, pc, "float power overflow");
  return double_cell(r);
}

// Arithmetic and bit operators on anything but two ints handled inline by the caller.
// Integer arithmetic, exact or an error (overflow, division by zero, a negative shift).
Cell int_binary(const Impl& p, std::size_t pc, Op op, std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  switch (op) {
    case Op::kAdd:
      if (__builtin_add_overflow(x, y, &r)) overflow(p, pc);
      break;
    case Op::kSub:
      if (__builtin_sub_overflow(x, y, &r)) overflow(p, pc);
      break;
    case Op::kMul:
      if (__builtin_mul_overflow(x, y, &r)) overflow(p, pc);
      break;
    case Op::kTrueDiv:
      if (y == 0) fail(p, pc, "division by zero");
      return double_cell(static_cast<double>(x) / static_cast<double>(y));
    case Op::kFloorDiv:
      r = int_floordiv(p, pc, x, y);
      break;
    case Op::kMod:
      r = int_mod(p, pc, x, y);
      break;
    case Op::kBitAnd:
      r = x & y;
      break;
    case Op::kBitOr:
      r = x | y;
      break;
    case Op::kBitXor:
      r = x ^ y;
      break;
    case Op::kShl:
      if (y < 0) fail(p, pc, "negative shift count");
      if (x == 0) break;
      if (y >= 63) overflow(p, pc);
      r = x << y;  // defined for negative x since C++20
      if ((r >> y) != x) overflow(p, pc);
      break;
    case Op::kShr:
      if (y < 0) fail(p, pc, "negative shift count");
      r = y >= 63 ? (x < 0 ? -1 : 0) : (x >> y);
      break;
    default:
      fail(p, pc, "internal error: bad operator");
  }
  return int_cell(r);
}

// Float arithmetic (at least one operand a float), as Python's.
Cell float_binary(const Impl& p, std::size_t pc, Op op, const Cell& a, const Cell& b) {
  const double x = to_double(a);
  const double y = to_double(b);
  switch (op) {
    case Op::kAdd:
      return double_cell(x + y);
    case Op::kSub:
      return double_cell(x - y);
    case Op::kMul:
      return double_cell(x * y);
    case Op::kTrueDiv:
      if (y == 0.0) fail(p, pc, "division by zero");
      return double_cell(x / y);
    case Op::kFloorDiv:
    case Op::kMod: {
      if (y == 0.0) fail(p, pc, op == Op::kMod ? "modulo by zero" : "division by zero");
      double fd, m;
      float_divmod(x, y, &fd, &m);
      return double_cell(op == Op::kMod ? m : fd);
    }
    default:
      binary_type_error(p, pc, op, a, b);  // bit operators need integers
  }
}

void binary_slow(const Impl& p, std::size_t pc, Op op, Cell& a, const Cell& b) {
  if (op == Op::kPow) {
    a = power(p, pc, a, b);
    return;
  }
  if (a.tag == Cell::kString || b.tag == Cell::kString) binary_type_error(p, pc, op, a, b);
  a = a.tag == Cell::kInt && b.tag == Cell::kInt ? int_binary(p, pc, op, a.i, b.i)
                                                 : float_binary(p, pc, op, a, b);
}

[[noreturn, gnu::cold, gnu::noinline]] void compare_type_error(const Impl& p, std::size_t pc, Op op,
                                                               const Cell& a, const Cell& b) {
  std::string m = "'";
  m += op_symbol(op);
  m += "' is not supported between ";
  m += type_name(a);
  m += " and ";
  m += type_name(b);
  m += " (strings compare only with ==, != and in)";
  fail(p, pc, m);
}

// Python's ==: numbers by value, strings by content, a number never equals a string.
// Two numbers compared exactly, as Python does (an int against a float is not compared in
// double: 9007199254740993 != 9007199254740992.0).
inline std::partial_ordering numeric_order(const Cell& a, const Cell& b) {
  if (a.tag == Cell::kInt && b.tag == Cell::kInt) return a.i <=> b.i;
  if (a.tag == Cell::kInt) return compare_exact(a.i, b.d);
  if (b.tag == Cell::kInt) return 0 <=> compare_exact(b.i, a.d);
  return a.d <=> b.d;
}

inline bool equal(const Cell& a, const Cell& b) {
  if (a.tag == Cell::kInt && b.tag == Cell::kInt) return a.i == b.i;
  if (a.tag == Cell::kString || b.tag == Cell::kString) return a.tag == b.tag && *a.s == *b.s;
  return numeric_order(a, b) == 0;
}

inline bool compare(const Impl& p, std::size_t pc, Op op, const Cell& a, const Cell& b) {
  if (op == Op::kEq) return equal(a, b);
  if (op == Op::kNe) return !equal(a, b);
  if (a.tag == Cell::kInt && b.tag == Cell::kInt) {
    switch (op) {
      case Op::kLt:
        return a.i < b.i;
      case Op::kLe:
        return a.i <= b.i;
      case Op::kGt:
        return a.i > b.i;
      default:
        return a.i >= b.i;
    }
  }
  if (a.tag == Cell::kString || b.tag == Cell::kString) compare_type_error(p, pc, op, a, b);
  const std::partial_ordering order = numeric_order(a, b);
  switch (op) {
    case Op::kLt:
      return order < 0;
    case Op::kLe:
      return order <= 0;
    case Op::kGt:
      return order > 0;
    default:
      return order >= 0;
  }
}

[[noreturn, gnu::cold, gnu::noinline]] void argument_type_error(const Impl& p, std::size_t pc,
                                                                Fn fn, const Cell& c,
                                                                std::string_view wanted) {
  std::string m = "function '";
  m += fn_name(fn);
  m += "' needs ";
  m += wanted;
  m += ", got ";
  m += type_name(c);
  fail(p, pc, m);
}

Cell call(const Impl& p, std::size_t pc, Fn fn, const Cell* args, int n) {
  const auto number = [&](int i) -> const Cell& {
    if (args[i].tag == Cell::kString) argument_type_error(p, pc, fn, args[i], "a number");
    return args[i];
  };
  switch (fn) {
    case Fn::kMin:
    case Fn::kMax: {
      std::size_t best = 0;
      number(0);
      for (int i = 1; i < n; ++i) {
        const Cell& c = number(i);
        if (compare(p, pc, fn == Fn::kMin ? Op::kLt : Op::kGt, c, args[best]))
          best = static_cast<std::size_t>(i);
      }
      return args[best];
    }
    case Fn::kAbs: {
      const Cell& c = number(0);
      if (c.tag == Cell::kDouble) return double_cell(std::fabs(c.d));
      if (c.i == std::numeric_limits<std::int64_t>::min()) overflow(p, pc);
      return int_cell(c.i < 0 ? -c.i : c.i);
    }
    case Fn::kCeil:
    case Fn::kFloor:
    case Fn::kRound:
    case Fn::kInt: {
      const Cell& c = number(0);
      if (c.tag == Cell::kInt) return c;
      const double d = fn == Fn::kCeil    ? std::ceil(c.d)
                       : fn == Fn::kFloor ? std::floor(c.d)
                       : fn == Fn::kRound ? std::nearbyint(c.d)  // half to even, as Python
                                          : std::trunc(c.d);
      return int_cell(to_int_checked(p, pc, d));
    }
    case Fn::kSqrt: {
      const double d = to_double(number(0));
      if (d < 0.0) fail(p, pc, "math domain error: sqrt of a negative number");
      return double_cell(std::sqrt(d));
    }
    case Fn::kLog2: {
      const double d = to_double(number(0));
      if (!(d > 0.0)) fail(p, pc, "math domain error: log2 of a number that is not positive");
      return double_cell(std::log2(d));
    }
    case Fn::kPow:
      return power(p, pc, number(0), number(1));
    case Fn::kFloat:
      return double_cell(to_double(number(0)));
    case Fn::kBool:
      return int_cell(truthy(args[0]) ? 1 : 0);
    case Fn::kDivUp: {
      for (int i = 0; i < 2; ++i)
        if (args[i].tag != Cell::kInt) argument_type_error(p, pc, fn, args[i], "integers");
      const std::int64_t x = args[0].i;
      const std::int64_t y = args[1].i;
      if (y == 0) fail(p, pc, "division by zero");
      if (y == -1 && x == std::numeric_limits<std::int64_t>::min()) overflow(p, pc);
      std::int64_t q = x / y;
      if (x % y != 0 && ((x < 0) == (y < 0))) ++q;
      return int_cell(q);
    }
  }
  fail(p, pc, "internal error: bad function");
}

// The interpreter: one dispatch loop, one case per opcode, each a few lines that defer anything
// rare to the cold helpers above. It stays one function on purpose: it runs for every candidate
// configuration of an enumeration (tens of millions a second), and splitting the loop would put
// a call between the operands and the dispatch.
Cell run(const Impl& p, const Value* slots, Cell* stack) {
  Cell* sp = stack - 1;  // the top element
  const Instr* code = p.code.data();
  const std::size_t n = p.code.size();
  for (std::size_t pc = 0; pc < n;) {
    const Instr in = code[pc];
    switch (in.op) {
      case Op::kLoadSlot:
        load(*++sp, slots[in.arg]);
        break;
      case Op::kLoadConst:
        load(*++sp, p.consts[static_cast<std::size_t>(in.arg)]);
        break;
      case Op::kAdd: {
        Cell& a = sp[-1];
        const Cell& b = sp[0];
        --sp;
        if (a.tag == Cell::kInt && b.tag == Cell::kInt) {
          if (__builtin_add_overflow(a.i, b.i, &a.i)) overflow(p, pc);
        } else {
          binary_slow(p, pc, in.op, a, b);
        }
        break;
      }
      case Op::kSub: {
        Cell& a = sp[-1];
        const Cell& b = sp[0];
        --sp;
        if (a.tag == Cell::kInt && b.tag == Cell::kInt) {
          if (__builtin_sub_overflow(a.i, b.i, &a.i)) overflow(p, pc);
        } else {
          binary_slow(p, pc, in.op, a, b);
        }
        break;
      }
      case Op::kMul: {
        Cell& a = sp[-1];
        const Cell& b = sp[0];
        --sp;
        if (a.tag == Cell::kInt && b.tag == Cell::kInt) {
          if (__builtin_mul_overflow(a.i, b.i, &a.i)) overflow(p, pc);
        } else {
          binary_slow(p, pc, in.op, a, b);
        }
        break;
      }
      case Op::kMod: {
        Cell& a = sp[-1];
        const Cell& b = sp[0];
        --sp;
        if (a.tag == Cell::kInt && b.tag == Cell::kInt && b.i > 0) {
          std::int64_t r = a.i % b.i;
          if (r < 0) r += b.i;
          a.i = r;
        } else {
          binary_slow(p, pc, in.op, a, b);
        }
        break;
      }
      case Op::kTrueDiv:
      case Op::kFloorDiv:
      case Op::kPow:
      case Op::kBitAnd:
      case Op::kBitOr:
      case Op::kBitXor:
      case Op::kShl:
      case Op::kShr: {
        Cell& a = sp[-1];
        const Cell& b = sp[0];
        --sp;
        binary_slow(p, pc, in.op, a, b);
        break;
      }
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
      case Op::kEq:
      case Op::kNe: {
        Cell& a = sp[-1];
        const Cell& b = sp[0];
        --sp;
        a = int_cell(compare(p, pc, in.op, a, b) ? 1 : 0);
        break;
      }
      case Op::kNeg:
        if (sp->tag == Cell::kInt) {
          if (sp->i == std::numeric_limits<std::int64_t>::min()) overflow(p, pc);
          sp->i = -sp->i;
        } else if (sp->tag == Cell::kDouble) {
          sp->d = -sp->d;
        } else {
          fail(p, pc, "bad operand type for unary '-': string");
        }
        break;
      case Op::kPos:
        if (sp->tag == Cell::kString) fail(p, pc, "bad operand type for unary '+': string");
        break;
      case Op::kInvert:
        if (sp->tag != Cell::kInt) {
          std::string m = "bad operand type for '~': ";
          m += type_name(*sp);
          fail(p, pc, m);
        }
        sp->i = ~sp->i;
        break;
      case Op::kNot:
        *sp = int_cell(truthy(*sp) ? 0 : 1);
        break;
      case Op::kToBool:
        *sp = int_cell(truthy(*sp) ? 1 : 0);
        break;
      case Op::kChain: {
        const bool r = compare(p, pc, static_cast<Op>(in.aux), sp[-1], sp[0]);
        --sp;
        if (!r) {
          *sp = int_cell(0);
          pc = static_cast<std::size_t>(in.arg);
          continue;
        }
        *sp = sp[1];
        break;
      }
      case Op::kAndJump:
        if (!truthy(*sp)) {
          *sp = int_cell(0);
          pc = static_cast<std::size_t>(in.arg);
          continue;
        }
        --sp;
        break;
      case Op::kOrJump:
        if (truthy(*sp)) {
          *sp = int_cell(1);
          pc = static_cast<std::size_t>(in.arg);
          continue;
        }
        --sp;
        break;
      case Op::kJumpIfFalse: {
        const bool t = truthy(*sp);
        --sp;
        if (!t) {
          pc = static_cast<std::size_t>(in.arg);
          continue;
        }
        break;
      }
      case Op::kJump:
        pc = static_cast<std::size_t>(in.arg);
        continue;
      case Op::kIn:
      case Op::kNotIn: {
        Cell* needle = sp - in.arg;
        bool found = false;
        for (Cell* c = needle + 1; c <= sp && !found; ++c) found = equal(*needle, *c);
        sp = needle;
        *sp = int_cell(found == (in.op == Op::kIn) ? 1 : 0);
        break;
      }
      case Op::kCall: {
        Cell* args = sp - in.arg + 1;
        const Cell r = call(p, pc, static_cast<Fn>(in.aux), args, in.arg);
        sp = args;
        *sp = r;
        break;
      }
    }
    ++pc;
  }
  return *sp;
}

// Runs p with a stack on the machine stack when it is small enough (it almost always is).
template <typename F>
auto with_stack(const Impl& p, F&& f) {
  constexpr int kInlineDepth = 32;
  if (p.max_depth <= kInlineDepth) {
    Cell stack[kInlineDepth];
    return f(stack);
  }
  std::vector<Cell> stack(static_cast<std::size_t>(p.max_depth));
  return f(stack.data());
}

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok : std::uint8_t { kEnd, kInt, kFloat, kString, kName, kPunct };

struct Token {
  Tok type = Tok::kEnd;
  std::string_view text;  // as written (for strings, with the quotes)
  int column = 0;         // 1-based
  Value value;            // numbers and strings
};

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Splits an expression into tokens, one kind of token per method.
class Lexer {
 public:
  explicit Lexer(const std::string& text) : text_(text), n_(text.size()) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      while (i_ < n_ &&
             (text_[i_] == ' ' || text_[i_] == '\t' || text_[i_] == '\n' || text_[i_] == '\r'))
        ++i_;
      Token t;
      t.column = static_cast<int>(i_) + 1;
      if (i_ == n_) {
        tokens.push_back(t);
        return tokens;
      }
      const char c = text_[i_];
      if (is_digit(c) || (c == '.' && i_ + 1 < n_ && is_digit(text_[i_ + 1])))
        number(t);
      else if (c == '"' || c == '\'')
        string(t);
      else if (is_name_start(c))
        name(t);
      else
        punct(t);
      tokens.push_back(std::move(t));
    }
  }

 private:
  [[noreturn]] void error(std::size_t at, const std::string& detail) const {
    throw_at(text_, static_cast<int>(at) + 1, detail);
  }

  // Digits, a fraction and an exponent; true when any of the last two made it a float.
  bool decimal_digits() {
    bool is_float = false;
    while (i_ < n_ && is_digit(text_[i_])) ++i_;
    if (i_ < n_ && text_[i_] == '.') {
      is_float = true;
      ++i_;
      while (i_ < n_ && is_digit(text_[i_])) ++i_;
    }
    if (i_ < n_ && (text_[i_] == 'e' || text_[i_] == 'E')) {
      std::size_t j = i_ + 1;
      if (j < n_ && (text_[j] == '+' || text_[j] == '-')) ++j;
      if (j < n_ && is_digit(text_[j])) {
        is_float = true;
        i_ = j;
        while (i_ < n_ && is_digit(text_[i_])) ++i_;
      }
    }
    return is_float;
  }

  void number(Token& t) {
    const std::size_t start = i_;
    bool is_float = false;
    int base = 10;
    std::size_t digits_start = i_;
    if (text_[i_] == '0' && i_ + 1 < n_ && (text_[i_ + 1] == 'x' || text_[i_ + 1] == 'X')) {
      base = 16;
      i_ += 2;
      digits_start = i_;
      while (i_ < n_ && std::isxdigit(static_cast<unsigned char>(text_[i_]))) ++i_;
      if (i_ == digits_start)
        error(start, "invalid number literal '" + text_.substr(start, 2) + "'");
    } else {
      is_float = decimal_digits();
    }
    if (i_ < n_ && (is_name_char(text_[i_]) || text_[i_] == '.')) {
      std::size_t j = i_;
      while (j < n_ && (is_name_char(text_[j]) || text_[j] == '.')) ++j;
      error(start, "invalid number literal '" + text_.substr(start, j - start) + "'");
    }
    t.text = std::string_view(text_).substr(start, i_ - start);
    if (is_float) {
      double d = 0;
      const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + i_, d);
      if (ec != std::errc() || end != text_.data() + i_)
        error(start, "invalid number literal '" + std::string(t.text) + "'");
      t.type = Tok::kFloat;
      t.value = Value(d);
      return;
    }
    std::uint64_t u = 0;
    const auto [end, ec] = std::from_chars(text_.data() + digits_start, text_.data() + i_, u, base);
    if (ec != std::errc() || end != text_.data() + i_ ||
        u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      error(start, "integer literal '" + std::string(t.text) + "' is out of range");
    t.type = Tok::kInt;
    t.value = Value(static_cast<std::int64_t>(u));
  }

  void string(Token& t) {
    const std::size_t start = i_;
    const char quote = text_[i_++];
    std::string s;
    while (true) {
      if (i_ == n_) error(start, "unterminated string");
      if (text_[i_] == quote) break;
      if (text_[i_] == '\\' && i_ + 1 < n_) {
        ++i_;
        s += text_[i_] == 'n' ? '\n' : text_[i_] == 't' ? '\t' : text_[i_];
      } else {
        s += text_[i_];
      }
      ++i_;
    }
    ++i_;
    t.type = Tok::kString;
    t.text = std::string_view(text_).substr(start, i_ - start);
    t.value = Value(std::move(s));
  }

  void name(Token& t) {
    const std::size_t start = i_;
    while (i_ < n_ && is_name_char(text_[i_])) ++i_;
    t.type = Tok::kName;
    t.text = std::string_view(text_).substr(start, i_ - start);
  }

  void punct(Token& t) {
    static constexpr std::array<std::string_view, 10> kTwo = {
        "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
    static constexpr std::string_view kOne = "+-*/%&|^~<>!()[],=";
    const char c = text_[i_];
    const std::string_view rest = std::string_view(text_).substr(i_);
    std::size_t len = 0;
    for (const auto two : kTwo)
      if (rest.starts_with(two)) len = 2;
    if (len == 0 && kOne.find(c) != std::string_view::npos) len = 1;
    if (len == 0) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7f) {
        static constexpr char kHex[] = "0123456789abcdef";
        error(i_, std::string("unexpected byte 0x") + kHex[u >> 4] + kHex[u & 0xf]);
      }
      error(i_, std::string("unexpected character '") + c + "'");
    }
    i_ += len;
    t.type = Tok::kPunct;
    t.text = rest.substr(0, len);
  }

  const std::string& text_;
  const std::size_t n_;
  std::size_t i_ = 0;
};

std::vector<Token> lex(const std::string& text) { return Lexer(text).run(); }

// ---------------------------------------------------------------------------------------------
// Parser: a tree first (the conditional evaluates its condition before the value written in
// front of it), folded and then compiled to bytecode.

// clang-format off
enum class Kind : std::uint8_t {
  kConst, kName, kUnary, kNot, kBinary, kAnd, kOr, kCond, kCompare, kList, kCall,
};
// clang-format on

// Limits that keep a parse linear and its recursion shallow, whatever the input: a restriction
// is a line of a job file, not a program.
constexpr std::size_t kMaxLength = 65536;  // characters
constexpr int kMaxDepth = 256;             // nesting: parentheses, operators in a row, chains

struct Node {
  Kind kind = Kind::kConst;
  int height = 1;        // of the subtree: compiling recurses this deep
  bool constant = true;  // names nothing, so it has one value whatever the slots hold
  Op op = Op::kAdd;      // kUnary, kBinary
  Fn fn = Fn::kAbs;      // kCall
  int column = 0;        // where an evaluation error points
  int slot = -1;         // kName
  Value value;           // kConst
  std::vector<int> kids;
  std::vector<Op> ops;          // kCompare: ops[i] sits between kids[i] and kids[i + 1]
  std::vector<int> op_columns;  // kCompare
};

class Compiler {
 public:
  Compiler(Impl& out, const std::vector<Node>& nodes) : p_(out), nodes_(nodes) {}

  void compile(int index) {
    const Node& n = nodes_[static_cast<std::size_t>(index)];
    switch (n.kind) {
      case Kind::kConst:
        emit(Op::kLoadConst, 0, constant(n.value), n.column, +1);
        break;
      case Kind::kName:
        emit(Op::kLoadSlot, 0, n.slot, n.column, +1);
        p_.slots_used.push_back(n.slot);
        break;
      case Kind::kUnary:
        compile(n.kids[0]);
        emit(n.op, 0, 0, n.column, 0);
        break;
      case Kind::kNot:
        compile(n.kids[0]);
        emit(Op::kNot, 0, 0, n.column, 0);
        break;
      case Kind::kBinary:
        compile(n.kids[0]);
        compile(n.kids[1]);
        emit(n.op, 0, 0, n.column, -1);
        break;
      case Kind::kAnd:
      case Kind::kOr:
        compile_logic(n);
        break;
      case Kind::kCond:
        compile_conditional(n);
        break;
      case Kind::kCompare:
        compile_comparison(n);
        break;
      case Kind::kCall: {
        for (const int a : n.kids) compile(a);
        const auto count = static_cast<int>(n.kids.size());
        emit(Op::kCall, static_cast<std::uint8_t>(n.fn), count, n.column, 1 - count);
        break;
      }
      case Kind::kList:
        break;  // compiled by its kCompare
    }
  }

  void finish() {
    auto& s = p_.slots_used;
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    p_.max_slot = s.empty() ? -1 : s.back();
  }

 private:
  // The index of a constant in the program's table, added once.
  int constant(const Value& value) {
    auto it = std::find_if(p_.consts.begin(), p_.consts.end(), [&](const Value& v) {
      return v.variant().index() == value.variant().index() && v == value;
    });
    const auto k = static_cast<int>(it - p_.consts.begin());
    if (it == p_.consts.end()) p_.consts.push_back(value);
    return k;
  }

  // a and b and c: each operand but the last jumps to the end when it decides the result.
  void compile_logic(const Node& n) {
    std::vector<std::size_t> jumps;
    for (std::size_t i = 0; i + 1 < n.kids.size(); ++i) {
      compile(n.kids[i]);
      jumps.push_back(p_.code.size());
      emit(n.kind == Kind::kAnd ? Op::kAndJump : Op::kOrJump, 0, 0, n.column, -1);
    }
    compile(n.kids.back());
    emit(Op::kToBool, 0, 0, n.column, 0);
    for (const auto j : jumps) p_.code[j].arg = here();
  }

  // kids: value if true, condition, value if false.
  void compile_conditional(const Node& n) {
    compile(n.kids[1]);
    const std::size_t to_else = p_.code.size();
    emit(Op::kJumpIfFalse, 0, 0, n.column, -1);
    compile(n.kids[0]);
    const std::size_t to_end = p_.code.size();
    emit(Op::kJump, 0, 0, n.column, 0);
    depth_ -= 1;  // the false branch starts from the depth before the true one
    p_.code[to_else].arg = here();
    compile(n.kids[2]);
    p_.code[to_end].arg = here();
  }

  // A chain a < b <= c: each comparison but the last jumps to the end when false; `in` takes
  // its list's elements as operands.
  void compile_comparison(const Node& n) {
    std::vector<std::size_t> jumps;
    compile(n.kids[0]);
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      const Op op = n.ops[i];
      const int right = n.kids[i + 1];
      if (op == Op::kIn || op == Op::kNotIn) {
        const Node& list = nodes_[static_cast<std::size_t>(right)];
        for (const int e : list.kids) compile(e);
        const auto count = static_cast<int>(list.kids.size());
        emit(op, 0, count, n.op_columns[i], -count);
        continue;
      }
      compile(right);
      if (i + 1 == n.ops.size()) {
        emit(op, 0, 0, n.op_columns[i], -1);
      } else {
        jumps.push_back(p_.code.size());
        emit(Op::kChain, static_cast<std::uint8_t>(op), 0, n.op_columns[i], -1);
      }
    }
    for (const auto j : jumps) p_.code[j].arg = here();
  }

  std::int32_t here() const { return static_cast<std::int32_t>(p_.code.size()); }

  void emit(Op op, std::uint8_t aux, std::int32_t arg, int column, int effect) {
    p_.code.push_back(Instr{op, aux, arg});
    p_.columns.push_back(column);
    depth_ += effect;
    p_.max_depth = std::max(p_.max_depth, depth_);
  }

  Impl& p_;
  const std::vector<Node>& nodes_;
  int depth_ = 0;
};

std::string describe(const Token& t) {
  if (t.type == Tok::kEnd) return "end of expression";
  return "'" + std::string(t.text) + "'";
}

bool is_keyword(std::string_view s) {
  return s == "and" || s == "or" || s == "not" || s == "in" || s == "if" || s == "else" ||
         s == "True" || s == "False";
}

class Parser {
 public:
  Parser(const std::string& text, const Scope& scope)
      : text_(text), scope_(scope), tokens_(lex(checked_length(text))) {}

  std::vector<Node>& nodes() { return nodes_; }

  int parse() {
    if (peek().type == Tok::kEnd) throw_at(text_, 0, "empty expression");
    const int root = expr();
    if (peek().type != Tok::kEnd) {
      std::string m = "expected an operator, found " + describe(peek());
      if (peek().text == "=") m += "; did you mean '=='?";
      error(peek(), m);
    }
    return root;
  }

 private:
  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& take() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool at(std::string_view s) const {
    const Token& t = peek();
    return (t.type == Tok::kPunct || t.type == Tok::kName) && t.text == s;
  }
  [[noreturn]] void error(const Token& t, const std::string& detail) const {
    throw_at(text_, t.column, detail);
  }

  static const std::string& checked_length(const std::string& text) {
    if (text.size() > kMaxLength)
      throw_at(text, 0,
               "is " + std::to_string(text.size()) + " characters long; at most " +
                   std::to_string(kMaxLength) + " are allowed");
    return text;
  }

  // Counts the parser's nesting (parentheses, unary operators, 'not', '**', 'if ... else'
  // chains), so that no input recurses without a bound.
  class Nesting {
   public:
    explicit Nesting(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxDepth)
        p_.error(p_.peek(),
                 "nests more than " + std::to_string(kMaxDepth) + " levels deep; simplify it");
    }
    ~Nesting() { --p_.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& p_;
  };

  int add(Node n) {
    n.constant = n.kind != Kind::kName;
    for (const int k : n.kids) {
      const Node& kid = nodes_[static_cast<std::size_t>(k)];
      n.height = std::max(n.height, kid.height + 1);
      n.constant = n.constant && kid.constant;
    }
    if (n.height > kMaxDepth)
      throw_at(text_, n.column,
               "has more than " + std::to_string(kMaxDepth) +
                   " operations nested or in a row; split it (into several restrictions)");
    nodes_.push_back(std::move(n));
    const int index = static_cast<int>(nodes_.size()) - 1;
    fold(index);
    return index;
  }

  // Replaces a constant subtree by its value; one that fails (1/0) stays, to fail when run.
  void fold(int index) {
    const Kind kind = nodes_[static_cast<std::size_t>(index)].kind;
    if (kind == Kind::kConst || kind == Kind::kName || kind == Kind::kList) return;
    if (!nodes_[static_cast<std::size_t>(index)].constant) return;
    Impl tmp;
    tmp.text = text_;
    Compiler c(tmp, nodes_);
    c.compile(index);
    c.finish();
    try {
      Value v = with_stack(tmp, [&](Cell* stack) { return to_value(run(tmp, nullptr, stack)); });
      Node folded;
      folded.kind = Kind::kConst;
      folded.column = nodes_[static_cast<std::size_t>(index)].column;
      folded.value = std::move(v);
      nodes_[static_cast<std::size_t>(index)] = std::move(folded);
    } catch (const Error&) {
    }
  }

  int expr() {
    const Nesting nesting(*this);
    const int value = or_test();
    if (!at("if")) return value;
    Node n;
    n.kind = Kind::kCond;
    n.column = take().column;
    const int cond = or_test();
    if (!at("else"))
      error(peek(), "expected 'else' in 'a if condition else b', found " + describe(peek()));
    take();
    const int other = expr();
    n.kids = {value, cond, other};
    return add(std::move(n));
  }

  int or_test() {
    const int first = and_test();
    if (!at("or") && !at("||")) return first;
    Node n;
    n.kind = Kind::kOr;
    n.column = peek().column;
    n.kids.push_back(first);
    while (at("or") || at("||")) {
      take();
      n.kids.push_back(and_test());
    }
    return add(std::move(n));
  }

  int and_test() {
    const int first = not_test();
    if (!at("and") && !at("&&")) return first;
    Node n;
    n.kind = Kind::kAnd;
    n.column = peek().column;
    n.kids.push_back(first);
    while (at("and") || at("&&")) {
      take();
      n.kids.push_back(not_test());
    }
    return add(std::move(n));
  }

  int not_test() {
    if (!at("not") && !at("!")) return comparison();
    const Nesting nesting(*this);
    Node n;
    n.kind = Kind::kNot;
    n.column = take().column;
    n.kids.push_back(not_test());
    return add(std::move(n));
  }

  std::optional<Op> comparison_op() const {
    const Token& t = peek();
    if (t.type == Tok::kName) {
      if (t.text == "in") return Op::kIn;
      if (t.text == "not" && peek(1).type == Tok::kName && peek(1).text == "in") return Op::kNotIn;
      return std::nullopt;
    }
    if (t.type != Tok::kPunct) return std::nullopt;
    if (t.text == "<") return Op::kLt;
    if (t.text == "<=") return Op::kLe;
    if (t.text == ">") return Op::kGt;
    if (t.text == ">=") return Op::kGe;
    if (t.text == "==") return Op::kEq;
    if (t.text == "!=") return Op::kNe;
    return std::nullopt;
  }

  int comparison() {
    const int first = bit_or();
    if (!comparison_op()) return first;
    Node n;
    n.kind = Kind::kCompare;
    n.kids.push_back(first);
    while (const auto op = comparison_op()) {
      if (!n.ops.empty() && (n.ops.back() == Op::kIn || n.ops.back() == Op::kNotIn))
        error(peek(), "a comparison cannot follow 'in [...]'; add parentheses");
      const Token& t = take();
      if (*op == Op::kNotIn) take();
      n.ops.push_back(*op);
      n.op_columns.push_back(t.column);
      if (*op == Op::kIn || *op == Op::kNotIn) {
        if (!at("["))
          error(peek(), "'" + std::string(op_symbol(*op)) +
                            "' needs a list literal on its right, e.g. x in [1, 2, 4]; found " +
                            describe(peek()));
        n.kids.push_back(list());
      } else {
        n.kids.push_back(bit_or());
      }
    }
    n.column = n.op_columns.front();
    return add(std::move(n));
  }

  int list() {
    Node n;
    n.kind = Kind::kList;
    n.column = take().column;  // '['
    if (!at("]")) {
      while (true) {
        n.kids.push_back(expr());
        if (at("]")) break;
        if (!at(",")) error(peek(), "expected ',' or ']' in a list, found " + describe(peek()));
        take();
        if (at("]")) break;  // a trailing comma
      }
    }
    take();
    return add(std::move(n));
  }

  // Left-associative binary levels, tightest last.
  template <typename Next>
  int binary_level(Next next, std::initializer_list<std::pair<std::string_view, Op>> ops) {
    int left = (this->*next)();
    while (true) {
      const Token& t = peek();
      if (t.type != Tok::kPunct) return left;
      const auto it =
          std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == t.text; });
      if (it == ops.end()) return left;
      Node n;
      n.kind = Kind::kBinary;
      n.op = it->second;
      n.column = take().column;
      const int right = (this->*next)();
      n.kids = {left, right};
      left = add(std::move(n));
    }
  }

  int bit_or() { return binary_level(&Parser::bit_xor, {{"|", Op::kBitOr}}); }
  int bit_xor() { return binary_level(&Parser::bit_and, {{"^", Op::kBitXor}}); }
  int bit_and() { return binary_level(&Parser::shift, {{"&", Op::kBitAnd}}); }
  int shift() { return binary_level(&Parser::arith, {{"<<", Op::kShl}, {">>", Op::kShr}}); }
  int arith() { return binary_level(&Parser::term, {{"+", Op::kAdd}, {"-", Op::kSub}}); }
  int term() {
    return binary_level(
        &Parser::factor,
        {{"*", Op::kMul}, {"/", Op::kTrueDiv}, {"//", Op::kFloorDiv}, {"%", Op::kMod}});
  }

  int factor() {
    const Token& t = peek();
    if (t.type == Tok::kPunct && (t.text == "-" || t.text == "+" || t.text == "~")) {
      const Nesting nesting(*this);
      Node n;
      n.kind = Kind::kUnary;
      n.op = t.text == "-" ? Op::kNeg : t.text == "+" ? Op::kPos : Op::kInvert;
      n.column = take().column;
      n.kids.push_back(factor());
      return add(std::move(n));
    }
    return power();
  }

  int power() {
    const int base = primary();
    if (!at("**")) return base;
    const Nesting nesting(*this);
    Node n;
    n.kind = Kind::kBinary;
    n.op = Op::kPow;
    n.column = take().column;
    const int exponent = factor();  // right-associative; 2 ** -1 is allowed
    n.kids = {base, exponent};
    return add(std::move(n));
  }

  int primary() {
    const Token& t = peek();
    switch (t.type) {
      case Tok::kInt:
      case Tok::kFloat:
      case Tok::kString: {
        Node n;
        n.kind = Kind::kConst;
        n.column = t.column;
        n.value = t.value;
        take();
        return add(std::move(n));
      }
      case Tok::kName:
        return name();
      case Tok::kPunct:
        if (t.text == "(") {
          const Token& open = take();
          const int inner = expr();
          if (peek().type == Tok::kEnd)
            error(peek(), "missing ')' to close '(' at column " + std::to_string(open.column));
          if (!at(")")) error(peek(), "expected an operator or ')', found " + describe(peek()));
          take();
          return inner;
        }
        if (t.text == "[") error(t, "a list is only allowed on the right of 'in'");
        break;
      case Tok::kEnd:
        break;
    }
    error(t, "expected an operand, found " + describe(t));
  }

  int name() {
    const Token& t = take();
    Node n;
    n.column = t.column;
    if (t.text == "True" || t.text == "False") {
      n.kind = Kind::kConst;
      n.value = Value(std::int64_t{t.text == "True" ? 1 : 0});
      return add(std::move(n));
    }
    if (is_keyword(t.text)) error(t, "expected an operand, found " + describe(t));
    if (at("(")) return call(t);
    const int slot = scope_.find(t.text);
    if (slot < 0) {
      std::string m = "unknown name '" + std::string(t.text) + "'";
      const auto fn = std::find_if(kFunctions.begin(), kFunctions.end(),
                                   [&](const FnInfo& f) { return f.name == t.text; });
      if (fn != kFunctions.end()) {
        m += " ('" + std::string(t.text) + "' is a function: call it with parentheses)";
      } else if (scope_.size() == 0) {
        m += "; no names are defined here";
      } else {
        m += did_you_mean(t.text, scope_.names());
        m += "; known: ";
        for (std::size_t i = 0; i < scope_.size(); ++i) {
          if (i > 0) m += ", ";
          m += scope_.names()[i];
        }
      }
      error(t, m);
    }
    n.kind = Kind::kName;
    n.slot = slot;
    return add(std::move(n));
  }

  int call(const Token& name) {
    const auto fn = std::find_if(kFunctions.begin(), kFunctions.end(),
                                 [&](const FnInfo& f) { return f.name == name.text; });
    if (fn == kFunctions.end()) {
      std::string m = "unknown function '" + std::string(name.text) + "'; known: ";
      for (std::size_t i = 0; i < kFunctions.size(); ++i) {
        if (i > 0) m += ", ";
        m += kFunctions[i].name;
      }
      error(name, m);
    }
    Node n;
    n.kind = Kind::kCall;
    n.fn = fn->fn;
    n.column = name.column;
    take();  // '('
    if (!at(")")) {
      while (true) {
        n.kids.push_back(expr());
        if (at(")")) break;
        if (!at(","))
          error(peek(), "expected ',' or ')' in the call of '" + std::string(fn->name) +
                            "', found " + describe(peek()));
        take();
        if (at(")")) break;
      }
    }
    take();
    const auto count = static_cast<int>(n.kids.size());
    if (count < fn->min_args || (fn->max_args >= 0 && count > fn->max_args)) {
      std::string m = "function '" + std::string(fn->name) + "' takes ";
      if (fn->max_args < 0) m += "at least ";
      m += std::to_string(fn->min_args) + (fn->min_args == 1 ? " argument" : " arguments");
      m += ", got " + std::to_string(count);
      error(name, m);
    }
    return add(std::move(n));
  }

  const std::string& text_;
  const Scope& scope_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  std::vector<Node> nodes_;
};

const std::string kEmptyText;
const std::vector<int> kNoSlots;

}  // namespace

Expr::Expr() = default;
Expr::~Expr() = default;
Expr::Expr(const Expr& other)
    : impl_(other.impl_ ? std::make_unique<Impl>(*other.impl_) : nullptr) {}
Expr& Expr::operator=(const Expr& other) {
  if (this != &other) impl_ = other.impl_ ? std::make_unique<Impl>(*other.impl_) : nullptr;
  return *this;
}
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

Expr Expr::parse(std::string_view text, const Scope& scope) {
  Expr e;
  e.impl_ = std::make_unique<Impl>();
  Impl& p = *e.impl_;
  p.text = std::string(text);
  Parser parser(p.text, scope);
  const int root = parser.parse();
  Compiler compiler(p, parser.nodes());
  compiler.compile(root);
  compiler.finish();
  return e;
}

namespace {

const Impl& checked(const Impl* impl, std::span<const Value> slots) {
  if (!impl) throw Error(ErrorKind::kInternal, "evaluating an empty expression");
  if (impl->max_slot >= static_cast<int>(slots.size()))
    throw Error(ErrorKind::kInternal, "expression '" + impl->text + "': needs " +
                                          std::to_string(impl->max_slot + 1) + " values, got " +
                                          std::to_string(slots.size()));
  return *impl;
}

}  // namespace

Value Expr::eval(std::span<const Value> slots) const {
  const expr_detail::Program& p = checked(impl_.get(), slots);
  return with_stack(p, [&](Cell* stack) { return to_value(run(p, slots.data(), stack)); });
}

bool Expr::eval_bool(std::span<const Value> slots) const {
  const expr_detail::Program& p = checked(impl_.get(), slots);
  return with_stack(p, [&](Cell* stack) { return truthy(run(p, slots.data(), stack)); });
}

std::int64_t Expr::eval_int(std::span<const Value> slots) const {
  const Value v = eval(slots);
  if (v.is_int()) return v.as_int();
  if (v.is_double()) {
    const double d = v.as_double();
    if (std::isfinite(d) && std::trunc(d) == d && d >= -9223372036854775808.0 &&
        d < 9223372036854775808.0)
      return static_cast<std::int64_t>(d);
    throw_at(impl_->text, 0, "result " + v.to_string() + " is not an integer");
  }
  throw_at(impl_->text, 0, "result '" + v.as_string() + "' is a string, not an integer");
}

double Expr::eval_double(std::span<const Value> slots) const {
  const Value v = eval(slots);
  if (v.is_string())
    throw_at(impl_->text, 0, "result '" + v.as_string() + "' is a string, not a number");
  return v.as_double();
}

const std::string& Expr::text() const { return impl_ ? impl_->text : kEmptyText; }
const std::vector<int>& Expr::slots_used() const { return impl_ ? impl_->slots_used : kNoSlots; }
int Expr::max_slot() const { return impl_ ? impl_->max_slot : -1; }

}  // namespace ktune
