// SearchSpace: validation, enumeration checked against brute force on Kernel Tuner's spaces,
// keys, assignments, neighbourhoods and hashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "ktune/error.h"
#include "ktune/space.h"

namespace ktune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Parameter param(std::string name, std::vector<Value> values, std::size_t default_index = 0) {
  Parameter p;
  p.name = std::move(name);
  p.values = std::move(values);
  p.default_index = default_index;
  return p;
}

std::vector<Value> ints(std::initializer_list<int> list) {
  return std::vector<Value>(list.begin(), list.end());
}

std::vector<Value> range(int first, int last, int step) {
  std::vector<Value> out;
  for (int i = first; i <= last; i += step) out.emplace_back(i);
  return out;
}

// Kernel Tuner's GEMM example (CLBlast's xgemm parameters).
SearchSpace gemm_space() {
  return SearchSpace(
      {param("MWG", ints({16, 32, 64, 128})), param("NWG", ints({16, 32, 64, 128})),
       param("KWG", ints({32})), param("MDIMC", ints({8, 16, 32})),
       param("NDIMC", ints({8, 16, 32})), param("MDIMA", ints({8, 16, 32})),
       param("NDIMB", ints({8, 16, 32})), param("KWI", ints({2})), param("VWM", ints({1, 2, 4, 8})),
       param("VWN", ints({1, 2, 4, 8})), param("STRM", ints({0})), param("STRN", ints({0})),
       param("SA", ints({0, 1})), param("SB", ints({0, 1})), param("PRECISION", ints({32}))},
      {"KWG % KWI == 0", "MWG % (MDIMC*VWM) == 0", "NWG % (NDIMC*VWN) == 0",
       "MWG % (MDIMA*VWM) == 0", "NWG % (NDIMB*VWN) == 0", "KWG % ((MDIMC*NDIMC)/MDIMA) == 0",
       "KWG % ((MDIMC*NDIMC)/NDIMB) == 0"});
}

// Kernel Tuner's convolution example.
SearchSpace convolution_space() {
  return SearchSpace(
      {param("block_size_x", range(16, 256, 16)), param("block_size_y", ints({1, 2, 4, 8, 16})),
       param("tile_size_x", ints({1, 2, 3, 4})), param("tile_size_y", ints({1, 2, 3, 4})),
       param("read_only", ints({0, 1})), param("use_padding", ints({0, 1})),
       param("use_shmem", ints({0, 1})), param("use_cmem", ints({1})),
       param("filter_height", ints({15})), param("filter_width", ints({15}))},
      {"use_padding==0 or block_size_x % 32 != 0", "block_size_x*block_size_y <= 1024",
       "use_padding==0 or use_shmem != 0",
       "use_shmem == 0 or (block_size_x*tile_size_x + filter_width-1) * "
       "(block_size_y*tile_size_y + filter_height-1) < 12*1024"});
}

// Kernel Tuner's dedispersion example.
SearchSpace dedispersion_space() {
  return SearchSpace(
      {param("block_size_x", ints({1, 2, 4, 8, 16, 32})), param("block_size_y", range(32, 256, 8)),
       param("block_size_z", ints({1})), param("tile_size_x", ints({1, 2, 3, 4})),
       param("tile_size_y", range(1, 8, 1)), param("tile_stride_x", ints({0, 1})),
       param("tile_stride_y", ints({0, 1})), param("loop_unroll_factor_channel", ints({0}))},
      {"32 <= block_size_x*block_size_y <= 1024", "tile_size_x > 1 or tile_stride_x == 0",
       "tile_size_y > 1 or tile_stride_y == 0"});
}

// Every config of the Cartesian product that is_valid accepts, in lexicographic order.
std::vector<Config> brute_force(const SearchSpace& space) {
  std::vector<Config> out;
  Config c(space.size(), 0);
  while (true) {
    if (space.is_valid(c)) out.push_back(c);
    std::size_t i = space.size();
    while (i > 0) {
      --i;
      if (++c[i] < space.params()[i].values.size()) break;
      c[i] = 0;
      if (i == 0) return out;
    }
    if (space.size() == 0) return out;
  }
}

std::string error_of(const std::function<void()>& f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(SearchSpace, GemmHas17956ValidConfigs) {
  const SearchSpace space = gemm_space();
  EXPECT_EQ(space.cartesian_size(), 82944u);
  const auto configs = space.enumerate();
  EXPECT_EQ(configs.size(), 17956u);
  EXPECT_EQ(configs, brute_force(space));
  const EnumerationStats stats = space.for_each_valid([](const Config&) { return true; });
  EXPECT_EQ(stats.cartesian, 82944u);
  EXPECT_EQ(stats.valid, 17956u);
  EXPECT_GE(stats.seconds, 0.0);
}

TEST(SearchSpace, ConvolutionHas4362ValidConfigs) {
  const SearchSpace space = convolution_space();
  EXPECT_EQ(space.cartesian_size(), 10240u);
  const auto configs = space.enumerate();
  EXPECT_EQ(configs.size(), 4362u);
  EXPECT_EQ(configs, brute_force(space));
}

TEST(SearchSpace, DedispersionHas11130ValidConfigs) {
  const SearchSpace space = dedispersion_space();
  EXPECT_EQ(space.cartesian_size(), 22272u);
  const auto configs = space.enumerate();
  EXPECT_EQ(configs.size(), 11130u);
  EXPECT_EQ(configs, brute_force(space));
}

TEST(SearchSpace, EnumerationIsLexicographic) {
  const auto configs = gemm_space().enumerate();
  EXPECT_TRUE(std::is_sorted(configs.begin(), configs.end()));
  EXPECT_EQ(std::adjacent_find(configs.begin(), configs.end()), configs.end());
}

TEST(SearchSpace, VisitorCanStop) {
  const SearchSpace space = gemm_space();
  int seen = 0;
  const auto stats = space.for_each_valid([&](const Config&) { return ++seen < 3; });
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(stats.valid, 3u);
}

TEST(SearchSpace, ConstantRestrictions) {
  const auto make = [](int n) {
    return SearchSpace({param("a", ints({1, 2, 4})), param("b", ints({1, 2}))},
                       {"n >= 1024", "a * b <= n / 256"}, {{"n", Value(n)}});
  };
  EXPECT_TRUE(make(512).enumerate().empty());
  EXPECT_EQ(make(512).violated({0, 0}), "n >= 1024");
  EXPECT_EQ(make(1024).enumerate().size(), 5u);  // a*b <= 4
  EXPECT_EQ(make(4096).enumerate().size(), 6u);
}

TEST(SearchSpace, FailingRestrictionCountsAsViolated) {
  const SearchSpace space({param("a", ints({4, 6})), param("b", ints({0, 2, 4}))},
                          {"a > 0", "a % b == 0"});
  EXPECT_FALSE(space.is_valid({0, 0}));
  EXPECT_EQ(space.violated({0, 0}), "a % b == 0 (error: column 3: modulo by zero)");
  EXPECT_TRUE(space.is_valid({0, 1}));
  EXPECT_EQ(space.violated({0, 1}), std::nullopt);
  EXPECT_EQ(space.violated({1, 2}), "a % b == 0");
  EXPECT_THAT(space.enumerate(), ElementsAre(Config{0, 1}, Config{0, 2}, Config{1, 1}));
}

TEST(SearchSpace, ViolatedNamesTheFirstRestriction) {
  const SearchSpace space = convolution_space();
  Config c = space.default_config();  // block_size_x 16, block_size_y 1 ...
  c[0] = 15;                          // block_size_x 256
  c[1] = 4;                           // block_size_y 16
  EXPECT_EQ(space.violated(c), "block_size_x*block_size_y <= 1024");
}

TEST(SearchSpace, StringParameters) {
  const SearchSpace space({param("layout", {Value("soa"), Value("aos")}), param("n", ints({1, 2}))},
                          {"layout == 'soa' or n == 1"});
  EXPECT_TRUE(space.params()[0].categorical());
  EXPECT_FALSE(space.params()[1].categorical());
  EXPECT_EQ(space.enumerate().size(), 3u);
  EXPECT_EQ(space.key({1, 0}), "layout=aos,n=1");
  EXPECT_EQ(space.parse_key("layout=aos,n=1"), (Config{1, 0}));
}

TEST(SearchSpace, ValidationErrors) {
  const auto build = [](std::vector<Parameter> p, std::vector<std::string> r = {},
                        Constants c = {}) { return [=] { SearchSpace s(p, r, c); }; };
  EXPECT_EQ(error_of(build({param("a", ints({1})), param("a", ints({2}))}), ErrorKind::kInput),
            "parameter 'a' is declared twice");
  EXPECT_EQ(error_of(build({param("", ints({1}))}), ErrorKind::kInput),
            "parameter with an empty name");
  EXPECT_EQ(error_of(build({param("block-size", ints({1}))}), ErrorKind::kInput),
            "parameter name 'block-size' is not an identifier");
  EXPECT_EQ(error_of(build({param("2x", ints({1}))}), ErrorKind::kInput),
            "parameter name '2x' is not an identifier");
  EXPECT_EQ(error_of(build({param("in", ints({1}))}), ErrorKind::kInput),
            "parameter name 'in' is a keyword of the expression language");
  EXPECT_EQ(error_of(build({param("a", {})}), ErrorKind::kInput), "parameter 'a' has no values");
  EXPECT_EQ(error_of(build({param("a", ints({1, 2}), 2)}), ErrorKind::kInput),
            "parameter 'a': default index 2 is out of range (2 values)");
  EXPECT_EQ(error_of(build({param("a", {Value(1), Value(2), Value(1.0)})}), ErrorKind::kInput),
            "parameter 'a': value 1.0 is listed twice");
  EXPECT_EQ(error_of(build({param("a", {Value("x,y")})}), ErrorKind::kInput),
            "parameter 'a': value 'x,y' contains ',', which separates the parts of config keys");
  EXPECT_EQ(error_of(build({param("a", ints({1}))}, {}, {{"a", Value(3)}}), ErrorKind::kInput),
            "constant 'a' clashes with a parameter of the same name");
  EXPECT_EQ(error_of(build({param("a", ints({1}))}, {}, {{"n", Value(3)}, {"n", Value(4)}}),
                     ErrorKind::kInput),
            "constant 'n' is given twice");
  EXPECT_EQ(
      error_of(build({param("a", ints({1})), param("b", ints({1}))}, {"a < x"}, {{"n", Value(3)}}),
               ErrorKind::kInput),
      "expression 'a < x': column 5: unknown name 'x'; known: a, b, n");
  EXPECT_EQ(error_of(build({param("a", ints({1}))}, {"a ="}), ErrorKind::kInput),
            "expression 'a =': column 3: expected an operator, found '='; did you mean '=='?");
}

TEST(SearchSpace, ConfigShapeIsChecked) {
  const SearchSpace space = gemm_space();
  EXPECT_EQ(error_of(
                [&] {
                  (void)space.is_valid({0, 0});
                },
                ErrorKind::kInternal),
            "config has 2 values, the space has 15 parameters");
  Config c = space.default_config();
  c[0] = 4;
  EXPECT_EQ(error_of([&] { (void)space.key(c); }, ErrorKind::kInternal),
            "config: index 4 of parameter 'MWG' is out of range (4 values)");
}

TEST(SearchSpace, ParamLookup) {
  const SearchSpace space = dedispersion_space();
  EXPECT_EQ(space.param_index("tile_size_x"), 3u);
  EXPECT_EQ(space.find_param("tile_size_y"), 4u);
  EXPECT_EQ(space.find_param("nope"), std::nullopt);
  EXPECT_EQ(error_of([&] { (void)space.param_index("nope"); }, ErrorKind::kUsage),
            "unknown parameter 'nope'; known: block_size_x, block_size_y, block_size_z, "
            "tile_size_x, tile_size_y, tile_stride_x, tile_stride_y, loop_unroll_factor_channel");
}

TEST(SearchSpace, CartesianSizeSaturates) {
  std::vector<Parameter> params;
  for (int i = 0; i < 10; ++i) params.push_back(param("p" + std::to_string(i), range(1, 100, 1)));
  const SearchSpace space(params, {});
  EXPECT_EQ(space.cartesian_size(), std::numeric_limits<std::uint64_t>::max());
}

TEST(SearchSpace, EmptySpaceHasOneEmptyConfig) {
  const SearchSpace space;
  EXPECT_EQ(space.cartesian_size(), 1u);
  EXPECT_THAT(space.enumerate(), ElementsAre(Config{}));
  EXPECT_EQ(space.key({}), "");
  EXPECT_EQ(space.parse_key(""), Config{});
}

TEST(SearchSpace, ValuesAndDefaults) {
  const SearchSpace space({param("a", ints({1, 2, 4}), 2), param("f", {Value(0.5), Value(2.0)})},
                          {});
  EXPECT_EQ(space.default_config(), (Config{2, 0}));
  EXPECT_EQ(space.value({1, 1}, 1), Value(2.0));
  EXPECT_THAT(space.values({1, 1}), ElementsAre(Value(2), Value(2.0)));
}

TEST(SearchSpace, KeyIsCanonical) {
  const SearchSpace space({param("a", ints({32, 64})), param("f", {Value(0.5), Value(2.0)}),
                           param("layout", {Value("soa"), Value("aos")})},
                          {});
  EXPECT_EQ(space.key({1, 1, 0}), "a=64,f=2.0,layout=soa");
  EXPECT_EQ(space.parse_key("a=64,f=2.0,layout=soa"), (Config{1, 1, 0}));
  EXPECT_EQ(space.parse_key("layout=soa,a=64,f=2"), (Config{1, 1, 0}));  // any order, any spelling
  EXPECT_EQ(space.parse_key("a=0x40,f=2.0,layout='soa'"), (Config{1, 1, 0}));
}

TEST(SearchSpace, KeyRoundTripsForEveryConfig) {
  const SearchSpace space = gemm_space();
  for (const Config& c : space.enumerate()) ASSERT_EQ(space.parse_key(space.key(c)), c);
  const Config c = space.enumerate().front();
  EXPECT_EQ(space.key(c),
            "MWG=16,NWG=16,KWG=32,MDIMC=8,NDIMC=8,MDIMA=8,NDIMB=8,KWI=2,VWM=1,VWN=1,STRM=0,"
            "STRN=0,SA=0,SB=0,PRECISION=32");
}

TEST(SearchSpace, BadKeys) {
  const SearchSpace space({param("a", ints({32, 64})), param("b", ints({1, 2}))}, {});
  const auto bad = [&](const std::string& key) {
    return error_of([&] { (void)space.parse_key(key); }, ErrorKind::kUsage);
  };
  EXPECT_EQ(bad("a=32,c=1"), "config key 'a=32,c=1': unknown parameter 'c'; known: a, b");
  EXPECT_EQ(bad("a=32"), "config key 'a=32': missing b");
  EXPECT_EQ(bad(""), "config key '': missing a, b");
  EXPECT_EQ(bad("a=48,b=1"), "config key 'a=48,b=1': parameter 'a': value 48 is not one of 32, 64");
  EXPECT_EQ(bad("a=32,b"), "config key 'a=32,b': part 'b' is not name=value");
  EXPECT_EQ(bad("a=32,=1"), "config key 'a=32,=1': part '=1' is not name=value");
  EXPECT_EQ(bad("a=32,b=1,"), "config key 'a=32,b=1,': empty part after the last ','");
  EXPECT_EQ(bad("a=32,a=64,b=1"), "config key 'a=32,a=64,b=1': parameter 'a' is given twice");
}

TEST(SearchSpace, FromAssignments) {
  const SearchSpace space(
      {param("block_size", ints({32, 64, 128}), 1),
       param("layout", {Value("soa"), Value("aos"), Value("7")}), param("c", ints({1, 2}))},
      {});
  EXPECT_EQ(space.from_assignments({}), (Config{1, 0, 0}));
  EXPECT_EQ(space.from_assignments({{"block_size", "128"}, {"c", "2"}}), (Config{2, 0, 1}));
  EXPECT_EQ(space.from_assignments({{"block_size", "0x20"}}), (Config{0, 0, 0}));
  EXPECT_EQ(space.from_assignments({{"block_size", "128.0"}}), (Config{2, 0, 0}));
  EXPECT_EQ(space.from_assignments({{"layout", "aos"}}), (Config{1, 1, 0}));
  EXPECT_EQ(space.from_assignments({{"layout", "'aos'"}}), (Config{1, 1, 0}));
  EXPECT_EQ(space.from_assignments({{"layout", "7"}}), (Config{1, 2, 0}));  // the bare text
  EXPECT_EQ(error_of(
                [&] {
                  (void)space.from_assignments({{"x", "1"}});
                },
                ErrorKind::kUsage),
            "unknown parameter 'x'; known: block_size, layout, c");
  EXPECT_EQ(error_of(
                [&] {
                  (void)space.from_assignments({{"block_size", "300"}});
                },
                ErrorKind::kUsage),
            "parameter 'block_size': value 300 is not one of 32, 64, 128");
  EXPECT_EQ(error_of(
                [&] {
                  (void)space.from_assignments({{"layout", "xyz"}});
                },
                ErrorKind::kUsage),
            "parameter 'layout': value xyz is not one of soa, aos, 7");
}

TEST(SearchSpace, Neighbours) {
  const SearchSpace space({param("a", ints({1, 2, 3, 4})), param("b", ints({1, 2, 3}))},
                          {"a + b <= 5"});
  // a=2, b=2
  EXPECT_THAT(space.neighbours({1, 1}, Neighbourhood::kHamming),
              ElementsAre(Config{0, 1}, Config{2, 1}, Config{1, 0}, Config{1, 2}));
  EXPECT_THAT(space.neighbours({1, 1}, Neighbourhood::kAdjacent),
              ElementsAre(Config{0, 1}, Config{2, 1}, Config{1, 0}, Config{1, 2}));
  // a=1, b=1: a may go to 2, 3, 4 (Hamming) but only to 2 (adjacent).
  EXPECT_THAT(space.neighbours({0, 0}, Neighbourhood::kHamming),
              ElementsAre(Config{1, 0}, Config{2, 0}, Config{3, 0}, Config{0, 1}, Config{0, 2}));
  EXPECT_THAT(space.neighbours({0, 0}, Neighbourhood::kAdjacent),
              ElementsAre(Config{1, 0}, Config{0, 1}));
  // a=3, b=2: a=4 breaks the restriction; b=3 too.
  EXPECT_THAT(space.neighbours({2, 1}, Neighbourhood::kHamming),
              ElementsAre(Config{0, 1}, Config{1, 1}, Config{2, 0}));
}

TEST(SearchSpace, NeighboursAreValidAndDistinct) {
  const SearchSpace space = gemm_space();
  const Config c = space.enumerate()[1234];
  for (const auto kind : {Neighbourhood::kHamming, Neighbourhood::kAdjacent}) {
    const auto ns = space.neighbours(c, kind);
    EXPECT_FALSE(ns.empty());
    for (const Config& n : ns) {
      EXPECT_TRUE(space.is_valid(n));
      int differing = 0;
      for (std::size_t i = 0; i < c.size(); ++i) {
        if (n[i] == c[i]) continue;
        ++differing;
        if (kind == Neighbourhood::kAdjacent) {
          EXPECT_EQ(std::max(n[i], c[i]) - std::min(n[i], c[i]), 1u);
        }
      }
      EXPECT_EQ(differing, 1);
    }
  }
}

TEST(SearchSpace, Hash) {
  const auto make = [](std::vector<Value> a_values, std::string restriction, std::size_t def,
                       std::string description, Constants constants) {
    Parameter a = param("a", std::move(a_values), def);
    a.description = std::move(description);
    return SearchSpace({a, param("b", ints({1, 2}))}, {std::move(restriction)},
                       std::move(constants));
  };
  const std::string h = make(ints({1, 2}), "a <= b", 0, "", {}).hash();
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(h, make(ints({1, 2}), "a <= b", 0, "", {}).hash());
  EXPECT_EQ(h, make(ints({1, 2}), "a <= b", 0, "the a", {}).hash());            // not the docs
  EXPECT_EQ(h, make(ints({1, 2}), "a <= b", 0, "", {{"n", Value(5)}}).hash());  // nor constants
  EXPECT_NE(h, make(ints({1, 3}), "a <= b", 0, "", {}).hash());
  EXPECT_NE(h, make(ints({1, 2}), "a < b", 0, "", {}).hash());
  EXPECT_NE(h, make(ints({1, 2}), "a <= b", 1, "", {}).hash());
  EXPECT_NE(h, make({Value(1), Value("2")}, "a <= b", 0, "", {}).hash());
  EXPECT_NE(h, make({Value(1), Value(2.0)}, "a <= b", 0, "", {}).hash());
  EXPECT_NE(gemm_space().hash(), convolution_space().hash());
}

}  // namespace
}  // namespace ktune
