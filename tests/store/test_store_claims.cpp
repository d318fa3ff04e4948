// Claims (docs/database.md, Concurrency): a configuration is answered by its trial, or claimed by
// one store at a time; a claim ends with its trial, with release_claims() or the store, and a
// claim whose process is gone is taken over.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_test_util.h"

namespace ktune::test {
namespace {

using State = Store::Claim::State;

class StoreClaims : public StoreTest {
 protected:
  Store::Claim claim(Store& store, const std::string& key, bool replayed = true) {
    return store.claim(s_.kernel, s_.device, s_.problem, key, replayed);
  }
  int claim_rows() {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
    return db.execAndGet("SELECT count(*) FROM claims").getInt();
  }
  Seeded s_;
};

TEST_F(StoreClaims, OneStoreAtATimeHoldsAConfigurationUntilItsTrialAnswersIt) {
  Store a = Store::open(db_path_);
  s_ = seed(a);  // a run of measurements (replayed = 0)
  Store b = Store::open(db_path_);
  EXPECT_EQ(claim(a, "k=1", false).state, State::kClaimed);
  EXPECT_EQ(claim(a, "k=1", false).state, State::kClaimed) << "a store's own claim is its own";
  EXPECT_EQ(claim(b, "k=1", false).state, State::kBusy);
  EXPECT_EQ(claim(b, "k=1", true).state, State::kClaimed) << "replayed and measured apart";
  EXPECT_EQ(claim(b, "k=2", false).state, State::kClaimed);
  a.add_trial(make_trial(s_, "k=1", 1.5));
  const Store::Claim answered = claim(b, "k=1", false);
  ASSERT_EQ(answered.state, State::kMeasured);
  ASSERT_TRUE(answered.trial);
  EXPECT_EQ(answered.trial->time_ms, 1.5);
  EXPECT_EQ(claim_rows(), 2) << "the trial ended k=1's claim; k=1 replayed and k=2 remain";
  b.release_claims();
  EXPECT_EQ(claim_rows(), 0);
}

TEST_F(StoreClaims, AStoreReleasesItsClaimsWhenItCloses) {
  {
    Store a = Store::open(db_path_);
    s_ = seed(a);
    EXPECT_EQ(claim(a, "k=1").state, State::kClaimed);
    EXPECT_EQ(claim_rows(), 1);
  }
  EXPECT_EQ(claim_rows(), 0);
}

TEST_F(StoreClaims, AClaimOfAProcessThatIsGoneIsTakenOver) {
  {
    Store a = Store::open(db_path_);
    s_ = seed(a);
  }
  // A child claims and dies without releasing (as SIGKILL would leave it).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Store c = Store::open(db_path_);
    const bool ok = c.claim(s_.kernel, s_.device, s_.problem, "k=1", true).state == State::kClaimed;
    _exit(ok ? 0 : 1);  // no destructors: the claim stays
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(claim_rows(), 1);
  Store b = Store::open(db_path_);
  EXPECT_EQ(claim(b, "k=1").state, State::kClaimed);
}

TEST_F(StoreClaims, AReadOnlyStoreCannotClaim) {
  {
    Store a = Store::open(db_path_);
    s_ = seed(a);
  }
  Store r = Store::open(db_path_, Store::Mode::kReadOnly);
  expect_error(ErrorKind::kDatabase, "read-only", [&] { claim(r, "k=1"); });
}

}  // namespace
}  // namespace ktune::test
