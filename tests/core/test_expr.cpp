// The expression language: values, operators, functions, and the errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ktune/error.h"
#include "ktune/expr.h"

namespace ktune {
namespace {

// Names a, b, c, s, t bound to 6, 4, 0, "soa", "" unless a test passes its own values.
class ExprTest : public ::testing::Test {
 protected:
  ExprTest() {
    for (const char* n : {"a", "b", "c", "s", "t"}) scope_.add(n);
    values_ = {Value(6), Value(4), Value(0), Value("soa"), Value("")};
  }

  Value ev(const std::string& text) const { return Expr::parse(text, scope_).eval(values_); }

  // The message of the Error that parsing or evaluating text throws ("" if none).
  std::string error_of(const std::string& text) const {
    try {
      (void)ev(text);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error from '" << text << "'";
    return "";
  }

  Scope scope_;
  std::vector<Value> values_;
};

void expect_int(const Value& v, std::int64_t i) {
  ASSERT_TRUE(v.is_int()) << v.to_string();
  EXPECT_EQ(v.as_int(), i);
}

void expect_double(const Value& v, double d) {
  ASSERT_TRUE(v.is_double()) << v.to_string();
  EXPECT_DOUBLE_EQ(v.as_double(), d);
}

TEST(Scope, AddAndFind) {
  Scope s;
  EXPECT_EQ(s.add("x"), 0);
  EXPECT_EQ(s.add("y"), 1);
  EXPECT_EQ(s.add("x"), 0);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.find("y"), 1);
  EXPECT_EQ(s.find("z"), -1);
  EXPECT_EQ(s.name(1), "y");
}

TEST_F(ExprTest, Literals) {
  expect_int(ev("42"), 42);
  expect_int(ev("0x2A"), 42);
  expect_double(ev("1.5"), 1.5);
  expect_double(ev("1e6"), 1e6);
  expect_double(ev(".5"), 0.5);
  EXPECT_EQ(ev("\"soa\""), Value("soa"));
  EXPECT_EQ(ev("'soa'"), Value("soa"));
  EXPECT_EQ(ev("'it\\'s'"), Value("it's"));
  expect_int(ev("True"), 1);
  expect_int(ev("False"), 0);
}

TEST_F(ExprTest, Names) {
  expect_int(ev("a"), 6);
  EXPECT_EQ(ev("s"), Value("soa"));
  expect_int(ev("a * b + c"), 24);
}

TEST_F(ExprTest, ArithmeticFollowsPython) {
  expect_int(ev("1 + 2 * 3"), 7);
  expect_int(ev("(1 + 2) * 3"), 9);
  expect_double(ev("7 / 2"), 3.5);
  expect_double(ev("8 / 2"), 4.0);
  expect_int(ev("7 // 2"), 3);
  expect_int(ev("-7 // 2"), -4);
  expect_int(ev("7 // -2"), -4);
  expect_int(ev("-7 % 3"), 2);
  expect_int(ev("7 % -3"), -2);
  expect_int(ev("a % b"), 2);
  expect_int(ev("-a % b"), 2);
  expect_double(ev("7.5 // 2"), 3.0);
  expect_double(ev("-7.5 // 2"), -4.0);
  expect_double(ev("-7.5 % 2"), 0.5);
  expect_double(ev("7.5 % -2"), -0.5);
  expect_double(ev("a % 4.0"), 2.0);
  expect_int(ev("2 ** 10"), 1024);
  expect_int(ev("2 ** 3 ** 2"), 512);
  expect_int(ev("-2 ** 2"), -4);
  expect_int(ev("(-2) ** 3"), -8);
  expect_double(ev("2 ** -1"), 0.5);
  expect_double(ev("2.0 ** 3"), 8.0);
  expect_double(ev("1 + 2.0"), 3.0);
  expect_int(ev("True + 1"), 2);
  expect_int(ev("+a"), 6);
}

TEST_F(ExprTest, BitOperators) {
  expect_int(ev("6 & 3"), 2);
  expect_int(ev("6 & 3 | 8"), 10);
  expect_int(ev("5 ^ 1"), 4);
  expect_int(ev("~5"), -6);
  expect_int(ev("1 << 2 + 1"), 8);
  expect_int(ev("1 << 10"), 1024);
  expect_int(ev("-16 >> 2"), -4);
  expect_int(ev("1 >> 70"), 0);
  expect_int(ev("-1 >> 70"), -1);
}

TEST_F(ExprTest, Comparisons) {
  expect_int(ev("a < b"), 0);
  expect_int(ev("a >= b"), 1);
  expect_int(ev("1 == 1.0"), 1);
  expect_int(ev("2.5 > 2"), 1);
  expect_int(ev("a != 6"), 0);
  expect_int(ev("s == 'soa'"), 1);
  expect_int(ev("s != \"aos\""), 1);
  expect_int(ev("s == 1"), 0);
  expect_int(ev("s != 1"), 1);
}

TEST_F(ExprTest, ComparisonsChainAsInPython) {
  expect_int(ev("1 < 2 < 3"), 1);
  expect_int(ev("3 > 2 > 1"), 1);
  expect_int(ev("1 < 3 < 2"), 0);
  expect_int(ev("(1 < 3) < 2"), 1);  // the unchained reading differs
  expect_int(ev("2 < a <= 6 != b"), 1);
  expect_int(ev("2 < a <= 5 != b"), 0);
  // muparser would read this as (32 <= a*b) <= 1024, which is true.
  Scope scope;
  scope.add("x");
  scope.add("y");
  const Expr e = Expr::parse("32 <= x*y <= 1024", scope);
  const std::vector<Value> big = {Value(64), Value(32)};
  const std::vector<Value> ok = {Value(32), Value(32)};
  const std::vector<Value> small = {Value(4), Value(4)};
  EXPECT_FALSE(e.eval_bool(big));
  EXPECT_TRUE(e.eval_bool(ok));
  EXPECT_FALSE(e.eval_bool(small));
}

TEST_F(ExprTest, LogicShortCircuits) {
  expect_int(ev("a > 1 and b > 1"), 1);
  expect_int(ev("a > 1 and b > 10"), 0);
  expect_int(ev("c and 1 / c"), 0);  // the division never runs
  expect_int(ev("a or 1 / c"), 1);
  expect_int(ev("c == 0 or a / c > 1"), 1);
  expect_int(ev("2 and 3"), 1);  // booleans, not the operands
  expect_int(ev("0 or 5"), 1);
  expect_int(ev("0 or 0.0"), 0);
  expect_int(ev("not c"), 1);
  expect_int(ev("not a"), 0);
  expect_int(ev("not 1 == 2"), 1);
  expect_int(ev("a > 1 && b > 1 || c"), 1);
  expect_int(ev("!(a > 1)"), 0);
  expect_int(ev("not s"), 0);
  expect_int(ev("not t"), 1);
  expect_int(ev("c or a and b"), 1);  // and binds tighter than or
  expect_int(ev("1 or 0 and 0"), 1);
}

TEST_F(ExprTest, Conditional) {
  expect_int(ev("1 if a > 2 else 2"), 1);
  expect_int(ev("1 if a > 7 else 2"), 2);
  expect_int(ev("1 if c else 2 if b else 3"), 2);
  EXPECT_EQ(ev("'x' if c else 'y'"), Value("y"));
  expect_int(ev("1 / c if c else 0"), 0);
  expect_int(ev("(1 if c else 5) + 1"), 6);
}

TEST_F(ExprTest, Membership) {
  expect_int(ev("a in [1, 2, 6]"), 1);
  expect_int(ev("a in [1, 2, 4]"), 0);
  expect_int(ev("a not in [1, 2, 4]"), 1);
  expect_int(ev("a not in [6]"), 0);
  expect_int(ev("a in [b + 2, 7]"), 1);
  expect_int(ev("a in [6.0]"), 1);
  expect_int(ev("a in []"), 0);
  expect_int(ev("a in [1, 6,]"), 1);
  expect_int(ev("s in ['aos', 'soa']"), 1);
  expect_int(ev("s in [1, 2]"), 0);
  expect_int(ev("'1' in [1]"), 0);
  expect_int(ev("1 < a in [6]"), 1);
  expect_int(ev("not a in [6]"), 0);
}

TEST_F(ExprTest, Functions) {
  expect_double(ev("min(3, 1.5, 2)"), 1.5);
  expect_int(ev("min(a, b)"), 4);
  expect_int(ev("max(1, 2)"), 2);
  expect_int(ev("max(7)"), 7);
  expect_int(ev("abs(-3)"), 3);
  expect_double(ev("abs(-2.5)"), 2.5);
  expect_int(ev("ceil(2.1)"), 3);
  expect_int(ev("ceil(7 / 2)"), 4);
  expect_int(ev("floor(-2.1)"), -3);
  expect_int(ev("floor(5)"), 5);
  expect_int(ev("round(2.5)"), 2);  // half to even
  expect_int(ev("round(3.5)"), 4);
  expect_int(ev("round(-0.6)"), -1);
  expect_double(ev("sqrt(16)"), 4.0);
  expect_double(ev("log2(1024)"), 10.0);
  expect_int(ev("pow(2, 10)"), 1024);
  expect_double(ev("pow(4, 0.5)"), 2.0);
  expect_int(ev("int(3.9)"), 3);
  expect_int(ev("int(-3.9)"), -3);
  expect_double(ev("float(3)"), 3.0);
  expect_int(ev("bool(5)"), 1);
  expect_int(ev("bool(t)"), 0);
  expect_int(ev("div_up(10, 3)"), 4);
  expect_int(ev("div_up(9, 3)"), 3);
  expect_int(ev("div_up(-7, 2)"), -3);
  expect_int(ev("div_up(7, -2)"), -3);
  expect_int(ev("div_up(a * 1000, 256)"), 24);
}

TEST_F(ExprTest, WhitespaceAndNewlines) { expect_int(ev("  a\n  +\tb "), 10); }

TEST_F(ExprTest, DeepExpressionsNeedAHeapStack) {
  std::string text = "a";
  for (int i = 0; i < 40; ++i) text = "a + (" + text + ")";
  expect_int(ev(text), 41 * 6);
}

TEST_F(ExprTest, SlotsUsed) {
  const Expr e = Expr::parse("b + a * a > 0", scope_);
  EXPECT_EQ(e.slots_used(), (std::vector<int>{0, 1}));
  EXPECT_EQ(e.max_slot(), 1);
  EXPECT_FALSE(e.is_constant());
  const Expr k = Expr::parse("2 * 3 + 1", scope_);
  EXPECT_TRUE(k.is_constant());
  EXPECT_EQ(k.max_slot(), -1);
  EXPECT_EQ(k.eval({}).as_int(), 7);
  EXPECT_EQ(k.text(), "2 * 3 + 1");
}

TEST_F(ExprTest, EvalVariants) {
  EXPECT_EQ(Expr::parse("8 / 2", scope_).eval_int(values_), 4);
  EXPECT_EQ(Expr::parse("a + 1", scope_).eval_int(values_), 7);
  EXPECT_EQ(Expr::parse("a", scope_).eval_double(values_), 6.0);
  EXPECT_TRUE(Expr::parse("s", scope_).eval_bool(values_));
  EXPECT_FALSE(Expr::parse("0.0", scope_).eval_bool(values_));
  try {
    (void)Expr::parse("7 / 2", scope_).eval_int(values_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expression '7 / 2': result 3.5 is not an integer");
  }
  EXPECT_THROW((void)Expr::parse("s", scope_).eval_int(values_), Error);
  EXPECT_THROW((void)Expr::parse("s", scope_).eval_double(values_), Error);
}

TEST_F(ExprTest, TooFewSlotsIsAnError) {
  const Expr e = Expr::parse("b + 1", scope_);
  const std::vector<Value> one = {Value(1)};
  try {
    (void)e.eval(one);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kInternal);
    EXPECT_STREQ(err.what(), "expression 'b + 1': needs 2 values, got 1");
  }
}

TEST_F(ExprTest, CopiesAndMovesAreIndependent) {
  Expr copy;
  {
    const Expr original = Expr::parse("s == 'soa' and a > 1", scope_);
    copy = original;
  }
  EXPECT_TRUE(copy.eval_bool(values_));
  Expr moved = std::move(copy);
  EXPECT_TRUE(moved.eval_bool(values_));
  EXPECT_EQ(moved.text(), "s == 'soa' and a > 1");
  const Expr copied(moved);
  EXPECT_EQ(copied.eval(values_).as_int(), 1);
}

TEST(Expr, DefaultExprIsEmpty) {
  const Expr e;
  EXPECT_EQ(e.text(), "");
  EXPECT_TRUE(e.slots_used().empty());
  EXPECT_TRUE(e.is_constant());
  EXPECT_THROW((void)e.eval({}), Error);
}

// Errors ---------------------------------------------------------------------------------------

TEST_F(ExprTest, UnknownNameListsTheKnownOnes) {
  EXPECT_EQ(error_of("a + foo"),
            "expression 'a + foo': column 5: unknown name 'foo'; known: a, b, c, s, t");
  Scope empty;
  try {
    (void)Expr::parse("x", empty);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expression 'x': column 1: unknown name 'x'; no names are defined here");
  }
  EXPECT_EQ(error_of("min + 1"),
            "expression 'min + 1': column 1: unknown name 'min' ('min' is a function: call it "
            "with parentheses)");
}

TEST_F(ExprTest, UnknownFunction) {
  EXPECT_EQ(error_of("cube(a)"),
            "expression 'cube(a)': column 1: unknown function 'cube'; known: abs, bool, ceil, "
            "div_up, float, floor, int, log2, max, min, pow, round, sqrt");
}

TEST_F(ExprTest, SyntaxErrorsGiveTheColumn) {
  Scope scope;
  scope.add("block_size");
  scope.add("tile");
  try {
    (void)Expr::parse("block_size % (tile*tile) = 0", scope);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_STREQ(e.what(),
                 "expression 'block_size % (tile*tile) = 0': column 26: expected an operator, "
                 "found '='; did you mean '=='?");
  }
  EXPECT_EQ(error_of("a b"), "expression 'a b': column 3: expected an operator, found 'b'");
  EXPECT_EQ(error_of("a +"),
            "expression 'a +': column 4: expected an operand, found end of expression");
  EXPECT_EQ(error_of("a + * b"), "expression 'a + * b': column 5: expected an operand, found '*'");
  EXPECT_EQ(error_of("(a + b"),
            "expression '(a + b': column 7: missing ')' to close '(' at column 1");
  EXPECT_EQ(error_of("(a b)"),
            "expression '(a b)': column 4: expected an operator or ')', found 'b'");
  EXPECT_EQ(error_of(""), "expression '': empty expression");
  EXPECT_EQ(error_of("   "), "expression '   ': empty expression");
  EXPECT_EQ(error_of("a $ b"), "expression 'a $ b': column 3: unexpected character '$'");
  EXPECT_EQ(error_of("2a"), "expression '2a': column 1: invalid number literal '2a'");
  EXPECT_EQ(error_of("'abc"), "expression ''abc': column 1: unterminated string");
  EXPECT_EQ(error_of("99999999999999999999"),
            "expression '99999999999999999999': column 1: integer literal "
            "'99999999999999999999' is out of range");
  EXPECT_EQ(error_of("1 if a"),
            "expression '1 if a': column 7: expected 'else' in 'a if condition else b', found "
            "end of expression");
  EXPECT_EQ(error_of("min(a b)"),
            "expression 'min(a b)': column 7: expected ',' or ')' in the call of 'min', found 'b'");
  EXPECT_EQ(error_of("sqrt(1, 2)"),
            "expression 'sqrt(1, 2)': column 1: function 'sqrt' takes 1 argument, got 2");
  EXPECT_EQ(error_of("min()"),
            "expression 'min()': column 1: function 'min' takes at least 1 argument, got 0");
  EXPECT_EQ(error_of("a and"),
            "expression 'a and': column 6: expected an operand, found end of expression");
  EXPECT_EQ(error_of("a < b in [1] < 2"),
            "expression 'a < b in [1] < 2': column 14: a comparison cannot follow 'in [...]'; add "
            "parentheses");
}

TEST_F(ExprTest, MembershipNeedsAListLiteral) {
  EXPECT_EQ(error_of("a in b"),
            "expression 'a in b': column 6: 'in' needs a list literal on its right, e.g. x in [1, "
            "2, 4]; found 'b'");
  EXPECT_EQ(error_of("[1, 2]"),
            "expression '[1, 2]': column 1: a list is only allowed on the right of 'in'");
  EXPECT_EQ(error_of("a in [1 2]"),
            "expression 'a in [1 2]': column 9: expected ',' or ']' in a list, found '2'");
}

TEST_F(ExprTest, DivisionByZero) {
  EXPECT_EQ(error_of("a / c"), "expression 'a / c': column 3: division by zero");
  EXPECT_EQ(error_of("a // c"), "expression 'a // c': column 3: division by zero");
  EXPECT_EQ(error_of("a % c"), "expression 'a % c': column 3: modulo by zero");
  EXPECT_EQ(error_of("1.5 % c"), "expression '1.5 % c': column 5: modulo by zero");
  EXPECT_EQ(error_of("a / 0.0"), "expression 'a / 0.0': column 3: division by zero");
  EXPECT_EQ(error_of("div_up(a, c)"), "expression 'div_up(a, c)': column 1: division by zero");
  EXPECT_EQ(error_of("c ** -1"), "expression 'c ** -1': column 3: zero to a negative power");
  // A constant that fails is not folded away at parse time: it fails when evaluated.
  const Expr e = Expr::parse("1 / 0", scope_);
  EXPECT_THROW((void)e.eval(values_), Error);
}

TEST_F(ExprTest, TypeErrors) {
  EXPECT_EQ(error_of("\"a\" + 1"),
            "expression '\"a\" + 1': column 5: unsupported operand types for '+': string and int");
  EXPECT_EQ(error_of("s * 2.0"),
            "expression 's * 2.0': column 3: unsupported operand types for '*': string and float");
  EXPECT_EQ(error_of("s < 'z'"),
            "expression 's < 'z'': column 3: '<' is not supported between string and string "
            "(strings compare only with ==, != and in)");
  EXPECT_EQ(error_of("1.5 & 1"),
            "expression '1.5 & 1': column 5: unsupported operand types for '&': float and int");
  EXPECT_EQ(error_of("-s"), "expression '-s': column 1: bad operand type for unary '-': string");
  EXPECT_EQ(error_of("~1.5"), "expression '~1.5': column 1: bad operand type for '~': float");
  EXPECT_EQ(error_of("min(s, 1)"),
            "expression 'min(s, 1)': column 1: function 'min' needs a number, got string");
  EXPECT_EQ(error_of("div_up(7.0, 2)"),
            "expression 'div_up(7.0, 2)': column 1: function 'div_up' needs integers, got float");
}

TEST_F(ExprTest, IntegerOverflowIsAnError) {
  EXPECT_EQ(error_of("9223372036854775807 + 1"),
            "expression '9223372036854775807 + 1': column 21: integer overflow");
  EXPECT_EQ(error_of("a * 9223372036854775807"),
            "expression 'a * 9223372036854775807': column 3: integer overflow");
  EXPECT_EQ(error_of("-9223372036854775807 - 2"),
            "expression '-9223372036854775807 - 2': column 22: integer overflow");
  EXPECT_EQ(error_of("2 ** 63"), "expression '2 ** 63': column 3: integer overflow");
  EXPECT_EQ(error_of("1 << 63"), "expression '1 << 63': column 3: integer overflow");
  EXPECT_EQ(error_of("a << -1"), "expression 'a << -1': column 3: negative shift count");
  expect_int(ev("2 ** 62"), std::int64_t{1} << 62);
  expect_int(ev("-(2 ** 62) * 2"), std::numeric_limits<std::int64_t>::min());
}

TEST_F(ExprTest, MathDomainErrors) {
  EXPECT_EQ(error_of("sqrt(-1)"),
            "expression 'sqrt(-1)': column 1: math domain error: sqrt of a negative number");
  EXPECT_EQ(error_of("log2(c)"),
            "expression 'log2(c)': column 1: math domain error: log2 of a number that is not "
            "positive");
  EXPECT_EQ(error_of("int(1e30)"),
            "expression 'int(1e30)': column 1: float out of the 64-bit integer range");
  EXPECT_EQ(error_of("(-8) ** 0.5"),
            "expression '(-8) ** 0.5': column 6: negative number to a fractional power");
  EXPECT_EQ(error_of("10.0 ** 400"), "expression '10.0 ** 400': column 6: float power overflow");
  expect_double(ev("1e308 * 10"), std::numeric_limits<double>::infinity());  // as in Python
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// An int against a float is compared exactly, as Python does, not in double.
TEST_F(ExprTest, IntAgainstFloatComparesExactlyAsPython) {
  expect_int(ev("9007199254740993 == 9007199254740992.0"), 0);
  expect_int(ev("9007199254740993 != 9007199254740992.0"), 1);
  expect_int(ev("9007199254740993 > 9007199254740992.0"), 1);
  expect_int(ev("9007199254740992.0 < 9007199254740993"), 1);
  expect_int(ev("9007199254740992 == 9007199254740992.0"), 1);
  expect_int(ev("3 < 3.5 < 4"), 1);
  expect_int(ev("-3 > -3.5"), 1);
  expect_int(ev("9223372036854775807 < 9223372036854775808.0"), 1);
  expect_int(ev("-9223372036854775807 - 1 == -9223372036854775808.0"), 1);
  EXPECT_TRUE(compare_exact(1, std::numeric_limits<double>::infinity()) < 0);
  EXPECT_TRUE(compare_exact(std::numeric_limits<std::int64_t>::min(),
                            -std::numeric_limits<double>::infinity()) > 0);
  EXPECT_FALSE(compare_exact(1, std::nan("")) == 0);
  EXPECT_FALSE(compare_exact(1, std::nan("")) < 0);
  EXPECT_TRUE(compare_exact(-3, -2.5) < 0);
  EXPECT_TRUE(compare_exact(-2, -2.5) > 0);
  expect_int(ev("9007199254740993 in [9007199254740992.0]"), 0);
  EXPECT_FALSE(Value(std::int64_t{9007199254740993}) == Value(9007199254740992.0));
  EXPECT_TRUE(Value(std::int64_t{9007199254740993}) > Value(9007199254740992.0));
  EXPECT_TRUE(Value(2) == Value(2.0));
  EXPECT_TRUE(Value(2.5) > Value(2));
}

// Whatever the input, parsing is linear and its recursion bounded: what would nest or chain
// past the limits, or is longer than a restriction could sensibly be, is refused by name.
TEST_F(ExprTest, LimitsOnLengthNestingAndChainsAreErrorsNotCrashes) {
  const auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  EXPECT_NE(error_of(repeat("(", 20000) + "1" + repeat(")", 20000)).find("nests more than 256"),
            std::string::npos);
  EXPECT_NE(error_of(repeat("-", 30000) + "1").find("nests more than 256"), std::string::npos);
  EXPECT_NE(error_of(repeat("not ", 10000) + "1").find("nests more than 256"), std::string::npos);
  EXPECT_NE(error_of(repeat("2**", 15000) + "1").find("nests more than 256"), std::string::npos);
  EXPECT_NE(error_of(repeat("1 if a else ", 5000) + "1").find("nests more than 256"),
            std::string::npos);
  EXPECT_NE(error_of(repeat("abs(", 10000) + "1" + repeat(")", 10000)).find("nests more than"),
            std::string::npos);
  std::string chain = "a";
  for (int i = 0; i < 5000; ++i) chain += "+a";
  EXPECT_NE(error_of(chain).find("has more than 256 operations nested or in a row"),
            std::string::npos);
  const std::string huge = "1" + repeat("+1", 5000000);
  const std::string m = error_of(huge);
  EXPECT_NE(m.find("is 10000001 characters long; at most 65536 are allowed"), std::string::npos);
  EXPECT_LT(m.size(), 300u) << "the message quotes a prefix, not the whole input";
  // Within the limits: a long constant chain folds as it is read, a deep but legal one works.
  expect_int(ev("1" + repeat("+1", 20000)), 20001);
  expect_int(ev(repeat("(", 200) + "a" + repeat(")", 200) + repeat(" + a", 200)), 6 * 201);
  expect_int(ev(repeat("-", 200) + "a"), 6);
  // Control characters are shown, with the column.
  EXPECT_NE(error_of(std::string("a > 1\0 + 2", 10)).find("'a > 1\\x00 + 2': column 6"),
            std::string::npos);
}

}  // namespace
}  // namespace ktune
