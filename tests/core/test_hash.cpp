// Content hashes: XXH3-128 as hex, and the length-prefixed incremental Hasher.
#include <gtest/gtest.h>

#include "ktune/hash.h"

namespace ktune {
namespace {

TEST(ContentHash, MatchesTheXxh3ReferenceVector) {
  // XXH3_128bits of no bytes (xxHash's own test vector), canonical big-endian form.
  EXPECT_EQ(content_hash(""), "99aa06d3014798d86001c324468d497f");
}

TEST(ContentHash, IsLowerCaseHexOf32Digits) {
  const std::string h = content_hash("__global__ void k() {}");
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(ContentHash, DependsOnEveryByte) {
  EXPECT_EQ(content_hash("abc"), content_hash(std::string("abc")));
  EXPECT_NE(content_hash("abc"), content_hash("abd"));
  EXPECT_NE(content_hash("abc"), content_hash("abc "));
  EXPECT_NE(content_hash(std::string_view("a\0b", 3)), content_hash(std::string_view("a\0c", 3)));
}

TEST(Hasher, SameFieldsSameHash) {
  Hasher a, b;
  a.add("x").add("y");
  b.add("x").add("y");
  EXPECT_EQ(a.hex(), b.hex());
  EXPECT_EQ(a.hex().size(), 32u);
}

TEST(Hasher, FieldBoundariesMatter) {
  Hasher a, b, c;
  a.add("ab").add("c");
  b.add("a").add("bc");
  c.add("abc");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_NE(a.hex(), c.hex());
  EXPECT_NE(b.hex(), c.hex());
}

TEST(Hasher, IsNotTheHashOfTheConcatenation) {
  Hasher h;
  h.add("abc");
  EXPECT_NE(h.hex(), content_hash("abc"));
}

TEST(Hasher, HexDoesNotConsumeTheState) {
  Hasher h;
  h.add("x");
  const std::string first = h.hex();
  EXPECT_EQ(h.hex(), first);
  h.add("y");
  EXPECT_NE(h.hex(), first);
  Hasher empty;
  Hasher empty_field;
  empty_field.add("");
  EXPECT_NE(empty.hex(), empty_field.hex());
}

}  // namespace
}  // namespace ktune
