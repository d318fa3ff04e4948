// Value: canonical text, literal parsing, conversions and comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ktune/error.h"
#include "ktune/value.h"

namespace ktune {
namespace {

TEST(Value, ToStringOfIntegers) {
  EXPECT_EQ(Value(42).to_string(), "42");
  EXPECT_EQ(Value(-7).to_string(), "-7");
  EXPECT_EQ(Value(std::numeric_limits<std::int64_t>::min()).to_string(), "-9223372036854775808");
}

TEST(Value, ToStringOfDoublesKeepsThemDoubles) {
  EXPECT_EQ(Value(2.0).to_string(), "2.0");
  EXPECT_EQ(Value(-3.0).to_string(), "-3.0");
  EXPECT_EQ(Value(0.0).to_string(), "0.0");
  EXPECT_EQ(Value(0.1).to_string(), "0.1");
  EXPECT_EQ(Value(1.5).to_string(), "1.5");
  EXPECT_EQ(Value(1e300).to_string(), "1e+300");
  EXPECT_EQ(Value(1e16).to_string(), "1e+16");
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()).to_string(), "inf");
  EXPECT_EQ(Value(-std::numeric_limits<double>::infinity()).to_string(), "-inf");
  EXPECT_NE(Value(std::nan("")).to_string().find("nan"), std::string::npos);
}

TEST(Value, ToStringOfStringsIsVerbatim) {
  EXPECT_EQ(Value("soa").to_string(), "soa");
  EXPECT_EQ(Value(std::string("a b")).to_string(), "a b");
}

TEST(Value, DoublesRoundTripThroughText) {
  for (const double d : {0.1, 1.0 / 3.0, 1e-300, 123456789.125, -2.5e-8, 6.02214076e23}) {
    const Value back = Value::parse(Value(d).to_string());
    ASSERT_TRUE(back.is_double()) << d;
    EXPECT_EQ(back.as_double(), d);
  }
}

TEST(Value, ToLiteralQuotesStrings) {
  EXPECT_EQ(Value(3).to_literal(), "3");
  EXPECT_EQ(Value(2.0).to_literal(), "2.0");
  EXPECT_EQ(Value("soa").to_literal(), "\"soa\"");
  EXPECT_EQ(Value("a\"b\\c").to_literal(), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Value::parse(Value("a\"b\\c").to_literal()), Value("a\"b\\c"));
}

TEST(Value, ParseIntegers) {
  EXPECT_TRUE(Value::parse("42").is_int());
  EXPECT_EQ(Value::parse("42").as_int(), 42);
  EXPECT_EQ(Value::parse("-17").as_int(), -17);
  EXPECT_EQ(Value::parse("+5").as_int(), 5);
  EXPECT_EQ(Value::parse(" 64 ").as_int(), 64);
  EXPECT_EQ(Value::parse("0x2A").as_int(), 42);
  EXPECT_EQ(Value::parse("0X2a").as_int(), 42);
  EXPECT_EQ(Value::parse("-0x10").as_int(), -16);
  EXPECT_EQ(Value::parse("-9223372036854775808").as_int(),
            std::numeric_limits<std::int64_t>::min());
}

TEST(Value, ParseFloats) {
  EXPECT_TRUE(Value::parse("1.5").is_double());
  EXPECT_EQ(Value::parse("1.5").as_double(), 1.5);
  EXPECT_TRUE(Value::parse("2.0").is_double());
  EXPECT_TRUE(Value::parse("1e6").is_double());
  EXPECT_EQ(Value::parse("1e6").as_double(), 1e6);
  EXPECT_EQ(Value::parse("-2.5e-3").as_double(), -2.5e-3);
  EXPECT_EQ(Value::parse("+0.5").as_double(), 0.5);
  // Too large for int64: read as a float rather than rejected.
  EXPECT_TRUE(Value::parse("9223372036854775808").is_double());
}

TEST(Value, ParseStrings) {
  EXPECT_EQ(Value::parse("'soa'"), Value("soa"));
  EXPECT_TRUE(Value::parse("'soa'").is_string());
  EXPECT_EQ(Value::parse("\"a b\"").as_string(), "a b");
  EXPECT_EQ(Value::parse("'42'").as_string(), "42");
  EXPECT_EQ(Value::parse("soa").as_string(), "soa");
  EXPECT_EQ(Value::parse("0x").as_string(), "0x");
  EXPECT_EQ(Value::parse("12abc").as_string(), "12abc");
  EXPECT_EQ(Value::parse("-").as_string(), "-");
  EXPECT_EQ(Value::parse("").as_string(), "");
  EXPECT_EQ(Value::parse("'unbalanced").as_string(), "'unbalanced");
}

TEST(Value, EqualityComparesNumbersByValue) {
  EXPECT_EQ(Value(1), Value(1.0));
  EXPECT_EQ(Value(2.5), Value(2.5));
  EXPECT_NE(Value(1), Value(2));
  EXPECT_NE(Value(1), Value("1"));
  EXPECT_NE(Value("1"), Value(1.0));
  EXPECT_EQ(Value("soa"), Value(std::string("soa")));
  EXPECT_NE(Value("soa"), Value("aos"));
}

TEST(Value, OrderingPutsNumbersBeforeStrings) {
  EXPECT_LT(Value(1), Value(2.5));
  EXPECT_LT(Value(2.5), Value(3));
  EXPECT_LT(Value(1000000), Value("a"));
  EXPECT_GT(Value("a"), Value(5.0));
  EXPECT_LT(Value("aos"), Value("soa"));
  EXPECT_EQ(Value(1) <=> Value(1.0), std::partial_ordering::equivalent);
  EXPECT_EQ(Value(std::nan("")) <=> Value(1), std::partial_ordering::unordered);
}

TEST(Value, Conversions) {
  EXPECT_EQ(Value(7).as_int(), 7);
  EXPECT_EQ(Value(2.0).as_int(), 2);
  EXPECT_EQ(Value(7).as_double(), 7.0);
  EXPECT_EQ(Value("x").as_string(), "x");
  EXPECT_TRUE(Value().is_int());
  EXPECT_TRUE(Value(1.0).is_number());
  EXPECT_FALSE(Value("1").is_number());
}

TEST(Value, ConversionErrors) {
  try {
    (void)Value(2.5).as_int();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_STREQ(e.what(), "value 2.5 is not an integer");
  }
  EXPECT_THROW((void)Value(1e30).as_int(), Error);
  EXPECT_THROW((void)Value(std::nan("")).as_int(), Error);
  try {
    (void)Value("soa").as_double();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "value 'soa' is a string, not a number");
  }
  EXPECT_THROW((void)Value("soa").as_int(), Error);
  try {
    (void)Value(3).as_string();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "value 3 is a number, not a string");
  }
}

}  // namespace
}  // namespace ktune
