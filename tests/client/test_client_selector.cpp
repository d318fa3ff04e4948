// The client's answer for a problem that was not tuned but lies within a tuned family: the
// family's selector (ktune/selector.h) after the exact problem and before the nearest one, with
// the trial that measured its pick, and only for measured (not replayed) families.
#include <gtest/gtest.h>

#include "client_test_util.h"

namespace ktune::test {
namespace {

constexpr const char* kSmall = R"({"block_size": 64, "variant": 9, "elements_per_thread": 2})";
constexpr const char* kSmallKey = "block_size=64,variant=9,elements_per_thread=2";
constexpr const char* kLarge = R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})";
constexpr const char* kLargeKey = "block_size=512,variant=9,elements_per_thread=8";

class ClientSelector : public ClientTest {
 protected:
  // A family n = 2^20, 2^22, 2^24, 2^26 on the H200: the small configuration is the faster at
  // the two small sizes, the large one at the two large ones; both measured at every size.
  void write_family(bool replayed) {
    Store store = Store::open(db_path_);
    const std::int64_t kernel = store.upsert_kernel(reduce_record());
    Selector s;
    s.candidates = {kSmallKey, kLargeKey};
    s.configs = {kSmall, kLarge};
    for (int e : {20, 22, 24, 26}) {
      const Problem p = {{"n", std::int64_t{1} << e}};
      const bool small_wins = e <= 22;
      const double t_small = small_wins ? 0.01 * e : 0.03 * e, t_large = 0.02 * e;
      BestSpec b;
      b.kernel_id = kernel;
      b.device = h200();
      b.problem = p;
      b.replayed = replayed;
      // The faster last, so it is the best row.
      for (bool small : {!small_wins, small_wins}) {
        b.config_json = small ? kSmall : kLarge;
        b.config_key = small ? kSmallKey : kLargeKey;
        b.time_ms = small ? t_small : t_large;
        add_best(store, b);
      }
      SelectorRow row;
      row.problem = p;
      row.key = problem_key(p);
      row.time_ms = {t_small, t_large};
      s.rows.push_back(row);
    }
    s.held_out = s.leave_one_out();
    SelectorRecord r;
    r.selector = s;
    r.kernel_name = "reduce";
    r.kernel_id = kernel;
    r.device_id = store.upsert_device(h200());
    r.replayed = replayed;
    store.add_selector(r);
  }
};

TEST_F(ClientSelector, AnUntunedProblemWithinTheFamilyIsTheSelectorsPick) {
  write_family(false);
  Client client(db_path_, client_device(h200()));
  const LookupResult small = client.best("reduce", {{"n", 1 << 21}});
  ASSERT_TRUE(small) << small.message;
  EXPECT_EQ(small->problem_match, ProblemMatch::kSelector);
  EXPECT_EQ(small->config_key, kSmallKey);
  EXPECT_EQ(small->problem_key, "n=1048576");  // its trial at the nearest tuned problem
  EXPECT_EQ(small->query.at("n"), 1 << 21);
  EXPECT_EQ(small->selector.problems, 4u);
  EXPECT_EQ(small->selector.candidates, 2u);
  EXPECT_DOUBLE_EQ(small->measurement.time_ms, 0.2);
  EXPECT_NE(small->describe().find("selector (one of 2 candidates over 4 tuned problems, held "
                                   "out"),
            std::string::npos)
      << small->describe();

  const LookupResult large = client.best("reduce", {{"n", 3 << 24}});
  ASSERT_TRUE(large) << large.message;
  EXPECT_EQ(large->problem_match, ProblemMatch::kSelector);
  EXPECT_EQ(large->config_key, kLargeKey);
  EXPECT_EQ(large->problem_key, "n=67108864");
  EXPECT_EQ(large->value("block_size"), 512);
}

TEST_F(ClientSelector, TheExactProblemComesFirstAndOutsideTheRangeTheNearest) {
  write_family(false);
  Client client(db_path_, client_device(h200()));
  const LookupResult exact = client.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->problem_match, ProblemMatch::kExact);
  EXPECT_EQ(exact->config_key, kLargeKey);
  const LookupResult beyond = client.best("reduce", {{"n", 1 << 28}});
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond->problem_match, ProblemMatch::kNearest);
  EXPECT_EQ(beyond->problem_key, "n=67108864");
  LookupOptions no_selector;
  no_selector.selector = false;
  const LookupResult nearest = client.best("reduce", {{"n", 3 << 22}}, no_selector);
  ASSERT_TRUE(nearest);
  EXPECT_EQ(nearest->problem_match, ProblemMatch::kNearest);
  EXPECT_EQ(client.best("reduce", {{"n", 3 << 22}})->problem_match, ProblemMatch::kSelector);
}

TEST_F(ClientSelector, AnotherDeviceOfTheArchitectureAnswersThroughItsSelector) {
  write_family(false);
  Client client(db_path_, client_device(h100_sxm()));
  const LookupResult r = client.best("reduce", {{"n", 1 << 21}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->device_match, DeviceMatch::kSameArch);
  EXPECT_EQ(r->problem_match, ProblemMatch::kSelector);
  EXPECT_EQ(r->config_key, kSmallKey);
}

TEST_F(ClientSelector, AReplayedFamilysSelectorNeverAnswers) {
  write_family(true);
  Client client(db_path_, client_device(h200()));
  const LookupResult r = client.best("reduce", {{"n", 1 << 21}});
  EXPECT_FALSE(r);
  EXPECT_NE(r.message.find("replayed"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace ktune::test
