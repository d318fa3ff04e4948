// Store::merge_from: what a merge copies and keeps (provenance), the rule for bests and
// conflicting duplicates, and its properties on randomly generated fleets: merging twice
// changes nothing, and neither the order of the sources nor their grouping changes the result.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include "store/store_test_util.h"

namespace ktune::test {
namespace {

// Makes a run look as if another process on another host had written it.
void set_origin(const std::filesystem::path& db, std::int64_t run, const std::string& host,
                std::int64_t pid) {
  SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
  SQLite::Statement q(raw, "UPDATE runs SET host = ?, pid = ?, seed = ? WHERE id = ?");
  q.bind(1, host);
  q.bind(2, pid);
  q.bind(3, pid);
  q.bind(4, run);
  q.exec();
}

// A run of `device` on `path` from `host`; returns what seed() returns.
Seeded add_run(const std::filesystem::path& path, const DeviceRecord& device,
               const std::string& host, std::int64_t pid,
               const ProblemRecord& problem = problem_n(1 << 20)) {
  Seeded s;
  {
    Store store = Store::open(path);
    s = seed(store, device, reduce_kernel(), problem);
  }
  set_origin(path, s.run, host, pid);
  return s;
}

TrialRecord retimed(const Seeded& s, const std::string& key, double time_ms) {
  TrialRecord t = make_trial(s, key, time_ms);
  t.kind = TrialKind::kRetime;
  return t;
}

// The whole content of a database, without row ids, in a canonical order: two databases with
// the same dump hold the same runs, trials and bests.
std::string dump(const std::filesystem::path& path) {
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  std::ostringstream out;
  auto rows = [&](const char* title, const char* sql) {
    out << title << "\n";
    SQLite::Statement q(db, sql);
    std::vector<std::string> lines;
    while (q.executeStep()) {
      std::string line;
      for (int c = 0; c < q.getColumnCount(); ++c) line += q.getColumn(c).getString() + "|";
      lines.push_back(line);
    }
    std::sort(lines.begin(), lines.end());
    for (const auto& l : lines) out << l << "\n";
  };
  rows("devices", "SELECT name, arch, sm_count, memory_bytes FROM devices");
  rows("kernels", "SELECT name, source_hash, space_hash FROM kernels");
  rows("problems", "SELECT kernel_name, key FROM problems");
  rows("runs",
       "SELECT k.source_hash, d.name, p.key, r.host, r.pid, r.started_at, r.status, r.seed, "
       "r.summary FROM runs r JOIN kernels k ON k.id = r.kernel_id JOIN devices d ON d.id = "
       "r.device_id JOIN problems p ON p.id = r.problem_id");
  rows("trials",
       "SELECT r.host, r.pid, r.started_at, t.config_key, t.kind, t.status, t.time_ms, "
       "t.created_at, d.name, p.key FROM trials t JOIN runs r ON r.id = t.run_id "
       "JOIN devices d ON d.id = t.device_id JOIN problems p ON p.id = t.problem_id");
  rows("best",
       "SELECT b.kernel_name, d.name, b.problem_key, t.config_key, t.time_ms, t.kind, r.host, "
       "b.updated_at FROM best b JOIN trials t ON t.id = b.trial_id JOIN runs r ON r.id = "
       "t.run_id JOIN devices d ON d.id = b.device_id");
  rows("binaries", "SELECT key, arch, length(cubin) FROM binaries");
  return out.str();
}

// (device, problem) -> "config time" of the best.
std::map<std::string, std::string> bests_of(const std::filesystem::path& path) {
  Store store = Store::open(path, Store::Mode::kReadOnly);
  std::map<std::string, std::string> out;
  for (const BestRecord& b : store.bests())
    out[b.device.name + " " + b.problem_key] =
        b.trial.config_key + " " + std::to_string(b.trial.time_ms);
  return out;
}

bool all_zero(const MergeReport& r) {
  return r.devices == 0 && r.kernels == 0 && r.problems == 0 && r.runs == 0 &&
         r.runs_updated == 0 && r.trials == 0 && r.binaries == 0 && r.bests == 0;
}

class StoreMerge : public StoreTest {
 protected:
  std::filesystem::path file(const std::string& name) { return dir_ / name; }
};

TEST_F(StoreMerge, CopiesRunsTrialsBestsAndBinariesKeepingTheirProvenance) {
  const auto a = file("a.db");
  const Seeded s = add_run(a, h200(), "host-a", 101);
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(s, "b=128", 2.0));
    store.add_trial(make_trial(s, "b=256", 1.0));
    store.add_trial(make_trial(s, "b=512", 0.5, TrialStatus::kWrongResult));
    const std::int64_t best = store.add_trial(retimed(s, "b=256", 1.1));
    store.set_best(best);
    store.put_binary("bin-1", "sm_90", "reduce<256>",
                     std::string("\x7f"
                                 "ELF\0cubin",
                                 10));
    store.finish_run(s.run, RunStatus::kFinished, R"({"trials":4})");
  }
  const auto fleet = file("fleet.db");
  Store into = Store::open(fleet);
  const MergeReport r = into.merge_from(a);
  EXPECT_EQ(r.runs, 1);
  EXPECT_EQ(r.trials, 4);
  EXPECT_EQ(r.binaries, 1);
  EXPECT_EQ(r.bests, 1);
  EXPECT_EQ(r.devices, 1);

  const std::vector<RunRecord> runs = into.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].host, "host-a");
  EXPECT_EQ(runs[0].pid, 101);
  EXPECT_EQ(runs[0].status, RunStatus::kFinished);
  EXPECT_EQ(runs[0].summary, R"({"trials":4})");
  Store source = Store::open(a, Store::Mode::kReadOnly);
  EXPECT_EQ(runs[0].started_at, source.runs()[0].started_at);
  const auto merged = into.trials_of_run(runs[0].id);
  const auto original = source.trials_of_run(s.run);
  ASSERT_EQ(merged.size(), original.size());
  for (std::size_t i = 0; i < merged.size(); ++i) {
    EXPECT_EQ(merged[i].config_key, original[i].config_key);
    EXPECT_EQ(merged[i].kind, original[i].kind);
    EXPECT_EQ(merged[i].created_at, original[i].created_at);
    EXPECT_EQ(merged[i].samples_ms, original[i].samples_ms);
  }
  const auto best = into.best("reduce", "n=1048576", into.devices()[0].id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial.config_key, "b=256");
  EXPECT_EQ(best->trial.kind, TrialKind::kRetime);
  EXPECT_EQ(into.binary("bin-1"), source.binary("bin-1"));
}

TEST_F(StoreMerge, MergingTwiceChangesNothing) {
  const auto a = file("a.db"), b = file("b.db"), fleet = file("fleet.db");
  const Seeded sa = add_run(a, h200(), "host-a", 1);
  const Seeded sb = add_run(b, h200(), "host-b", 2);
  {
    Store store = Store::open(a);
    store.set_best(store.add_trial(make_trial(sa, "b=128", 2.0)));
  }
  {
    Store store = Store::open(b);
    store.set_best(store.add_trial(make_trial(sb, "b=256", 1.5)));
  }
  Store into = Store::open(fleet);
  into.merge_from(a);
  into.merge_from(b);
  const std::string once = dump(fleet);
  EXPECT_TRUE(all_zero(into.merge_from(a)));
  EXPECT_TRUE(all_zero(into.merge_from(b)));
  EXPECT_EQ(dump(fleet), once);
  EXPECT_EQ(into.runs().size(), 2u);
  EXPECT_EQ(bests_of(fleet).begin()->second.substr(0, 5), "b=256");
}

TEST_F(StoreMerge, ARunMergedWhileRunningGetsItsLaterTrialsAndStatus) {
  const auto a = file("a.db"), fleet = file("fleet.db");
  const Seeded s = add_run(a, h200(), "host-a", 7);
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(s, "b=128", 2.0));
  }
  Store into = Store::open(fleet);
  EXPECT_EQ(into.merge_from(a).trials, 1);
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(s, "b=256", 1.0));
    store.set_best(store.add_trial(make_trial(s, "b=512", 0.7)));
    store.finish_run(s.run, RunStatus::kFinished, "{}");
  }
  const MergeReport r = into.merge_from(a);
  EXPECT_EQ(r.runs, 0);
  EXPECT_EQ(r.runs_updated, 1);
  EXPECT_EQ(r.trials, 2);
  ASSERT_EQ(into.runs().size(), 1u);
  EXPECT_EQ(into.runs()[0].status, RunStatus::kFinished);
  EXPECT_EQ(into.trials_of_run(into.runs()[0].id).size(), 3u);
  EXPECT_EQ(bests_of(fleet).begin()->second.substr(0, 5), "b=512");
}

// The documented rule for a configuration measured on several hosts of one device model.
// The fleet cannot see a process on another host: on its next read-write open it closes the run
// it merged while running as interrupted, once its heartbeat is old. A later merge still gives
// it the status the source ended it with; a run the source itself left interrupted stays so.
TEST_F(StoreMerge, ARunTheFleetClosedAsInterruptedGetsItsFinalStatusFromALaterMerge) {
  const auto a = file("a.db"), fleet = file("fleet.db");
  const Seeded s = add_run(a, h200(), "host-a", 7);
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(s, "b=128", 2.0));
  }
  { EXPECT_EQ(Store::open(fleet).merge_from(a).trials, 1); }
  {
    SQLite::Database raw(fleet.string(), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE runs SET heartbeat_unix = 1");  // silent since 1970
  }
  {
    Store into = Store::open(fleet);  // closes it
    ASSERT_EQ(into.runs().at(0).status, RunStatus::kInterrupted);
  }
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(s, "b=256", 1.0));
    store.finish_run(s.run, RunStatus::kFinished, R"({"trials":2})");
  }
  Store into = Store::open(fleet);
  const MergeReport r = into.merge_from(a);
  EXPECT_EQ(r.runs_updated, 1);
  EXPECT_EQ(r.trials, 1);
  EXPECT_EQ(into.runs().at(0).status, RunStatus::kFinished);
  EXPECT_EQ(into.runs().at(0).summary, R"({"trials":2})");
  EXPECT_TRUE(all_zero(into.merge_from(a)));  // and again: nothing
}

TEST_F(StoreMerge, ConflictingDuplicatesTakeTheMedianAndAWrongResultAnywhereDisqualifies) {
  const auto fleet = file("fleet.db");
  std::vector<std::filesystem::path> hosts;
  // b=256 re-timed at 1.0, 1.2 and 3.0 (median 1.2); b=128 at 1.1 on one host only.
  const std::vector<std::vector<std::pair<std::string, double>>> retimes = {
      {{"b=256", 1.0}, {"b=128", 1.1}}, {{"b=256", 1.2}}, {{"b=256", 3.0}}};
  for (std::size_t h = 0; h < retimes.size(); ++h) {
    hosts.push_back(file("host" + std::to_string(h) + ".db"));
    const Seeded s = add_run(hosts.back(), h200(), "host-" + std::to_string(h), 10 + h);
    Store store = Store::open(hosts.back());
    std::int64_t best = 0;
    for (const auto& [key, time] : retimes[h]) {
      const std::int64_t id = store.add_trial(retimed(s, key, time));
      if (!best) best = id;
    }
    store.set_best(best);  // host 0 chose b=256 at 1.0
  }
  Store into = Store::open(fleet);
  for (const auto& h : hosts) into.merge_from(h);
  EXPECT_EQ(bests_of(fleet).begin()->second.substr(0, 5), "b=128");  // 1.1 < median 1.2

  // A wrong result of b=128 on any host rules it out; b=256 (median 1.2) is the best.
  const auto bad = file("bad.db");
  const Seeded s = add_run(bad, h200(), "host-bad", 99);
  {
    Store store = Store::open(bad);
    store.add_trial(make_trial(s, "b=128", 0.1, TrialStatus::kWrongResult));
    store.add_trial(make_trial(s, "b=64", 5.0));
  }
  into.merge_from(bad);
  const auto best = into.best("reduce", "n=1048576", into.devices()[0].id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial.config_key, "b=256");
  EXPECT_DOUBLE_EQ(best->trial.time_ms, 1.2);
}

// A (kernel, device, problem) is ranked by the objective of its newest run, in whichever order
// the databases are merged; the best row records it.
TEST_F(StoreMerge, TheObjectiveOfTheNewestRunRanksTheBestInAnyOrder) {
  const Objective gflops{"GFLOP/s", true};
  const auto run_on = [&](const std::string& name, const Objective& objective,
                          const std::vector<std::tuple<std::string, double, double>>& trials) {
    const auto path = file(name + ".db");
    {
      Store store = Store::open(path);
      const Seeded s = seed(store, h200(), reduce_kernel(), problem_n(1 << 20), objective);
      std::int64_t first = 0;
      for (const auto& [key, time, value] : trials) {
        TrialRecord t = make_trial(s, key, time);
        t.objective = value;
        const std::int64_t id = store.add_trial(t);
        if (!first) first = id;
      }
      store.set_best(first, objective);
    }
    set_origin(path, 1, "host-" + name, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the next run starts later
    return path;
  };
  const auto by_time = run_on("a", {}, {{"b=128", 1.0, NAN}, {"b=256", 2.0, NAN}});
  const auto by_rate = run_on("b", gflops, {{"b=256", 2.0, 50}, {"b=128", 1.0, 10}});
  const auto best_of = [](const std::filesystem::path& path) {
    Store store = Store::open(path, Store::Mode::kReadOnly);
    const BestRecord b = store.bests().at(0);
    return b.trial.config_key + " " + b.objective + " " +
           std::to_string(b.objective_higher_is_better);
  };
  for (const bool reversed : {false, true}) {
    const auto fleet = file(reversed ? "fleet2.db" : "fleet1.db");
    Store into = Store::open(fleet);
    into.merge_from(reversed ? by_rate : by_time);
    into.merge_from(reversed ? by_time : by_rate);
    EXPECT_EQ(best_of(fleet), "b=256 GFLOP/s 1") << reversed;
  }
  // A newer run by time ranks every trial by time again.
  const auto later = run_on("c", {}, {{"b=512", 1.5, NAN}});
  Store into = Store::open(file("fleet1.db"));
  into.merge_from(later);
  EXPECT_EQ(best_of(file("fleet1.db")), "b=128 time 0");
}

// A damaged trial (a negative or zero time, text where the time belongs) is never a best: not
// by the merge rule, not among the leaders, and a best row that points at one does not answer.
TEST_F(StoreMerge, ATimeThatIsNotAPositiveNumberIsNeverABest) {
  const auto a = file("a.db");
  const Seeded s = add_run(a, h200(), "host-a", 101);
  std::int64_t damaged_best = 0;
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(s, "b=64", 0.5));
    damaged_best = store.add_trial(make_trial(s, "b=128", 0.3));
    store.add_trial(make_trial(s, "b=256", 0.2));
    store.add_trial(make_trial(s, "b=512", 0.1));
    store.set_best(damaged_best);
  }
  {
    SQLite::Database raw(a.string(), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE trials SET time_ms = -1 WHERE config_key = 'b=128'");
    raw.exec("UPDATE trials SET time_ms = 'fast' WHERE config_key = 'b=256'");
    raw.exec("UPDATE trials SET time_ms = 0 WHERE config_key = 'b=512'");
  }
  {
    Store source = Store::open(a, Store::Mode::kReadOnly);
    EXPECT_FALSE(source.best("reduce", "n=1048576", s.device)) << "a best of -1 ms answered";
    EXPECT_TRUE(source.bests().empty());
    const auto leaders = source.leaders(s.kernel, s.device, s.problem, false, 10);
    ASSERT_EQ(leaders.size(), 1u);
    EXPECT_EQ(leaders[0].config_key, "b=64");
    const auto trials = source.trials_of_run(s.run);
    ASSERT_EQ(trials.size(), 4u);
    EXPECT_TRUE(std::isnan(trials[2].time_ms)) << "text read as " << trials[2].time_ms;
  }
  const auto fleet = file("fleet.db");
  Store into = Store::open(fleet);
  into.merge_from(a);
  const auto best = into.best("reduce", "n=1048576", into.devices().at(0).id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial.config_key, "b=64");
  EXPECT_DOUBLE_EQ(best->trial.time_ms, 0.5);
  const auto bad = into.trials_for(best->kernel_id, best->device_id, best->problem_id);
  ASSERT_EQ(bad.size(), 4u);
  for (const TrialRecord& t : bad)
    if (t.config_key != "b=64") EXPECT_THROW(into.set_best(t.id), Error) << t.config_key;
}

// Trials whose run a source no longer holds, and runs whose problem it no longer holds, are
// not merged, and the merge says how many there were each time.
TEST_F(StoreMerge, WhatADamagedSourceCannotMergeIsCounted) {
  const auto a = file("a.db");
  const Seeded kept = add_run(a, h200(), "host-a", 101);
  const Seeded lost = add_run(a, h200(), "host-a", 102);
  const Seeded orphan = add_run(a, h200(), "host-a", 103, problem_n(1 << 10));
  {
    Store store = Store::open(a);
    store.add_trial(make_trial(kept, "b=64", 0.5));
    for (const char* key : {"b=128", "b=256", "b=512"}) store.add_trial(make_trial(lost, key, 0.4));
    store.add_trial(make_trial(orphan, "b=64", 0.7));
    store.finish_run(kept.run, RunStatus::kFinished, "");
    store.finish_run(lost.run, RunStatus::kFinished, "");
    store.finish_run(orphan.run, RunStatus::kFinished, "");
  }
  {
    SQLite::Database raw(a.string(), SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA foreign_keys = OFF");
    raw.exec("DELETE FROM runs WHERE id = " + std::to_string(lost.run));
    raw.exec("DELETE FROM problems WHERE id = " + std::to_string(orphan.problem));
  }
  Store into = Store::open(file("fleet.db"));
  for (int pass = 0; pass < 2; ++pass) {
    const MergeReport r = into.merge_from(a);
    EXPECT_EQ(r.trials, pass == 0 ? 1 : 0);
    EXPECT_EQ(r.skipped_trials, 4) << "pass " << pass;
    EXPECT_EQ(r.skipped_runs, 1) << "pass " << pass;
  }
  EXPECT_EQ(into.runs().size(), 1u);
}

TEST_F(StoreMerge, ARetimingCountsWithItsRankingRoundsAsTheRunThatMadeItChose) {
  // The run's re-timing ranked b=256 first (rank 0.9) although its timing rounds read 1.2, and
  // b=128's 1.1 (ranked 1.3): the run stored b=256, and merging keeps that choice and its time.
  const auto host = file("host.db");
  const Seeded s = add_run(host, h200(), "host-0", 10);
  {
    Store store = Store::open(host);
    TrialRecord a = retimed(s, "b=256", 1.2);
    a.rank_ms = 0.9;
    TrialRecord b = retimed(s, "b=128", 1.1);
    b.rank_ms = 1.3;
    store.set_best(store.add_trial(a));
    store.add_trial(b);
    const auto stored = store.best("reduce", "n=1048576", store.devices()[0].id);
    ASSERT_TRUE(stored);
    EXPECT_DOUBLE_EQ(stored->trial.rank_ms, 0.9);  // the column round-trips
  }
  const auto fleet = file("fleet.db");
  Store into = Store::open(fleet);
  into.merge_from(host);
  const auto best = into.best("reduce", "n=1048576", into.devices()[0].id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial.config_key, "b=256");
  EXPECT_DOUBLE_EQ(best->trial.time_ms, 1.2);
  EXPECT_DOUBLE_EQ(best->trial.rank_ms, 0.9);
  // A re-timing from before schema 5 (no rank) counts with its time: 1.0 loses to the rank
  // 0.9, 0.5 wins.
  const auto merge_unranked = [&](const std::string& name, const std::string& key, double ms) {
    const auto path = file(name + ".db");
    const Seeded o = add_run(path, h200(), "host-" + name, 11 + static_cast<int>(name.size()));
    {
      Store store = Store::open(path);
      store.add_trial(retimed(o, key, ms));
    }
    into.merge_from(path);
    return into.best("reduce", "n=1048576", into.devices()[0].id)->trial.config_key;
  };
  EXPECT_EQ(merge_unranked("old", "b=64", 1.0), "b=256");
  EXPECT_EQ(merge_unranked("older", "b=32", 0.5), "b=32");
}

// A source whose writer was killed before a checkpoint (its trials only in the -wal) is read
// with those trials, and left as it was: its file's bytes and its -wal unchanged, so that the
// writer's next open finds what it wrote.
TEST_F(StoreMerge, ASourceWithAKilledWritersLogIsReadAndLeftAsItWas) {
  const auto hot = file("hot.db");
  const Seeded s = add_run(hot, h200(), "host-a", 10);
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    Store store = Store::open(hot);
    for (int i = 0; i < 20; ++i)
      store.add_trial(make_trial(s, "block_size=" + std::to_string(64 + i), 1.0 + i));
    std::_Exit(0);  // killed before a checkpoint: no destructor runs
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  const auto wal = std::filesystem::path(hot.string() + "-wal");
  ASSERT_TRUE(std::filesystem::exists(wal));
  const std::string bytes = read_bytes(hot), log = read_bytes(wal);
  ASSERT_FALSE(log.empty());

  const auto fleet = file("fleet.db");
  MergeReport r;
  {
    Store dst = Store::open(fleet);
    r = dst.merge_from(hot);
  }
  EXPECT_EQ(r.trials, 20);  // those only in the -wal
  EXPECT_EQ(read_bytes(hot), bytes);
  ASSERT_TRUE(std::filesystem::exists(wal));
  EXPECT_EQ(read_bytes(wal), log);
  // The destination itself is checkpointed on close as before.
  EXPECT_FALSE(std::filesystem::exists(fleet.string() + "-wal"));
}

TEST_F(StoreMerge, RefusesItselfAndBadSourcesLeavingTheDatabaseAsItWas) {
  const auto a = file("a.db"), fleet = file("fleet.db"), junk = file("junk.db");
  const Seeded s = add_run(a, h200(), "host-a", 1);
  {
    Store store = Store::open(a);
    store.set_best(store.add_trial(make_trial(s, "b=128", 2.0)));
  }
  Store into = Store::open(fleet);
  into.merge_from(a);
  const std::string before = dump(fleet);
  { std::ofstream(junk) << "not a database at all, just text that is long enough to be read"; }
  try {
    into.merge_from(junk);
    FAIL() << "merged a file that is not a database";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDatabase);
    EXPECT_NE(std::string(e.what()).find("junk.db"), std::string::npos) << e.what();
  }
  try {
    into.merge_from(fleet);
    FAIL() << "merged a database into itself";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("itself"), std::string::npos) << e.what();
  }
  EXPECT_THROW(into.merge_from(file("missing.db")), Error);
  EXPECT_FALSE(std::filesystem::exists(file("missing.db")));
  EXPECT_EQ(dump(fleet), before);
}

// A random fleet: hosts with runs of two device models and two problems, overlapping
// configurations, re-timings, wrong results and unfinished runs.
std::vector<std::filesystem::path> random_fleet(const std::filesystem::path& dir,
                                                std::uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<DeviceRecord> devices = {h200(), [] {
                                               DeviceRecord d = h200(80'000'000'000);
                                               d.name = "NVIDIA A100";
                                               d.arch = "sm_80";
                                               return d;
                                             }()};
  const std::vector<std::string> keys = {"b=32", "b=64", "b=128", "b=256", "b=512", "b=1024"};
  std::vector<std::filesystem::path> out;
  std::int64_t pid = 1000 * seed;
  const int hosts = 2 + static_cast<int>(rng() % 3);
  for (int h = 0; h < hosts; ++h) {
    out.push_back(dir / ("fleet" + std::to_string(seed) + "-host" + std::to_string(h) + ".db"));
    const int runs = 1 + static_cast<int>(rng() % 3);
    for (int r = 0; r < runs; ++r) {
      const DeviceRecord& device = devices[rng() % devices.size()];
      const Seeded s = add_run(out.back(), device, "host-" + std::to_string(h), ++pid,
                               problem_n(rng() % 2 ? 1 << 20 : 1 << 22));
      Store store = Store::open(out.back());
      std::uniform_real_distribution<double> time(0.5, 3.0);
      for (int t = 0; t < 4; ++t) {
        const TrialStatus status = rng() % 8 == 0 ? TrialStatus::kWrongResult : TrialStatus::kOk;
        store.add_trial(make_trial(s, keys[rng() % keys.size()], time(rng), status));
      }
      if (rng() % 3 == 0) continue;  // left running: no re-timing, no best
      std::int64_t best = 0;
      double best_time = 1e9;
      for (int t = 0; t < 2; ++t) {
        const double ms = time(rng);
        const std::int64_t id = store.add_trial(retimed(s, keys[rng() % keys.size()], ms));
        if (ms < best_time) best = id, best_time = ms;
      }
      store.set_best(best);
      store.finish_run(s.run, RunStatus::kFinished, "{}");
    }
  }
  return out;
}

TEST_F(StoreMerge, PropertiesOnRandomFleets) {
  for (std::uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("fleet seed " + std::to_string(seed));
    std::vector<std::filesystem::path> sources = random_fleet(dir_, seed);
    std::mt19937 rng(seed);
    std::string reference;
    std::map<std::string, std::string> reference_bests;
    for (int order = 0; order < 4; ++order) {
      std::shuffle(sources.begin(), sources.end(), rng);
      const auto fleet =
          file("merged" + std::to_string(seed) + "-" + std::to_string(order) + ".db");
      Store into = Store::open(fleet);
      for (const auto& s : sources) into.merge_from(s);
      const std::string once = dump(fleet);
      // Idempotent: every source again changes nothing.
      for (const auto& s : sources) EXPECT_TRUE(all_zero(into.merge_from(s)));
      EXPECT_EQ(dump(fleet), once);
      if (order == 0) {
        reference = once;
        reference_bests = bests_of(fleet);
      } else {
        // Order-independent: the same content, the same bests.
        EXPECT_EQ(once, reference);
        EXPECT_EQ(bests_of(fleet), reference_bests);
      }
    }
    // Grouping does not matter either: merge the first half, then that merge into the rest.
    const auto half = file("half" + std::to_string(seed) + ".db");
    const auto grouped = file("grouped" + std::to_string(seed) + ".db");
    {
      Store h = Store::open(half);
      for (std::size_t i = 0; i < sources.size() / 2; ++i) h.merge_from(sources[i]);
    }
    Store g = Store::open(grouped);
    for (std::size_t i = sources.size() / 2; i < sources.size(); ++i) g.merge_from(sources[i]);
    g.merge_from(half);
    EXPECT_EQ(dump(grouped), reference);
    // And every best is an ok trial with no wrong result of its configuration anywhere.
    SQLite::Database raw(grouped.string(), SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM best b JOIN trials t ON t.id = b.trial_id "
                             "WHERE t.status <> 0 OR EXISTS (SELECT 1 FROM trials w WHERE "
                             "w.kernel_id = b.kernel_id AND w.device_id = b.device_id AND "
                             "w.problem_id = b.problem_id AND w.config_key = t.config_key "
                             "AND w.status = 5)")
                  .getInt(),
              0);
  }
}

}  // namespace
}  // namespace ktune::test
