// The Store contract of docs/database.md: identities, round trips of every field, resume
// lookups, bests and binaries, on a fresh database in a temporary directory.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <regex>
#include <string>
#include <thread>

#include "store/store_test_util.h"

namespace ktune::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::regex kIsoUtc(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");

using StoreContract = StoreTest;

TEST_F(StoreContract, OpenCreatesTheFileAtTheLatestSchema) {
  ASSERT_FALSE(std::filesystem::exists(db_path_));
  Store store = Store::open(db_path_);
  EXPECT_TRUE(std::filesystem::exists(db_path_));
  EXPECT_EQ(store.path(), db_path_);
  EXPECT_GE(Store::latest_schema_version(), 1);
  EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
  EXPECT_EQ(meta_value(db_path_, "application"), "ktune");
  EXPECT_EQ(meta_value(db_path_, "schema_version"), std::to_string(Store::latest_schema_version()));
}

TEST_F(StoreContract, SchemaHasEveryTableIndexAndTheMigrationRecord) {
  { Store store = Store::open(db_path_); }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
  for (const char* table : {"ktune_meta", "schema_migrations", "devices", "kernels", "problems",
                            "runs", "trials", "best", "binaries", "claims"}) {
    EXPECT_TRUE(db.tableExists(table)) << table;
  }
  for (const char* index : {"trials_by_identity", "trials_by_run", "best_by_kernel_name"}) {
    SQLite::Statement q(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?");
    q.bind(1, index);
    q.executeStep();
    EXPECT_EQ(q.getColumn(0).getInt(), 1) << index;
  }
  SQLite::Statement m(db,
                      "SELECT version, description, applied_at FROM schema_migrations "
                      "ORDER BY version");
  int expected = 1;
  while (m.executeStep()) {
    EXPECT_EQ(m.getColumn(0).getInt(), expected++);
    EXPECT_FALSE(m.getColumn(1).getString().empty());
    EXPECT_TRUE(std::regex_match(m.getColumn(2).getString(), kIsoUtc));
  }
  EXPECT_EQ(expected - 1, Store::latest_schema_version());
  // journal_mode=WAL is stored in the file, so a fresh connection sees it.
  EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "wal");
}

TEST_F(StoreContract, ForeignKeysAreEnforced) {
  Seeded s;
  {
    Store store = Store::open(db_path_);
    s = seed(store);
  }
  // Reopened, so no migration ran: the connection itself must have foreign keys on.
  Store store = Store::open(db_path_);
  RunRecord run;
  run.kernel_id = s.kernel + 100;  // no such kernel
  run.device_id = s.device;
  run.problem_id = s.problem;
  expect_error(ErrorKind::kDatabase, "FOREIGN KEY", [&] { store.begin_run(run); });
}

TEST_F(StoreContract, UpsertsAreIdempotentAndRefreshProvenance) {
  Store store = Store::open(db_path_);
  const std::int64_t device = store.upsert_device(h200());
  EXPECT_GT(device, 0);
  EXPECT_EQ(store.upsert_device(h200()), device);
  DeviceRecord newer_driver = h200();
  newer_driver.driver_version = 13010;
  newer_driver.nvrtc_version = "13.1";
  EXPECT_EQ(store.upsert_device(newer_driver), device);
  auto read = store.device(device);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->driver_version, 13010);
  EXPECT_EQ(read->nvrtc_version, "13.1");
  EXPECT_EQ(read->name, "NVIDIA H200");
  EXPECT_EQ(read->arch, "sm_90");
  EXPECT_EQ(read->cc_major, 9);
  EXPECT_EQ(read->cc_minor, 0);
  EXPECT_EQ(read->sm_count, 132);
  EXPECT_EQ(read->memory_bytes, 150'000'000'000);
  EXPECT_EQ(read->l2_bytes, 52'428'800);
  // Identity includes the memory size: a different card model is a different device.
  EXPECT_NE(store.upsert_device(h200(80'000'000'000)), device);
  EXPECT_EQ(store.devices().size(), 2u);
  EXPECT_FALSE(store.device(device + 100));

  const std::int64_t kernel = store.upsert_kernel(reduce_kernel());
  EXPECT_EQ(store.upsert_kernel(reduce_kernel()), kernel);
  EXPECT_NE(store.upsert_kernel(reduce_kernel("src-2")), kernel);
  auto k = store.kernel(kernel);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->name, "reduce");
  EXPECT_EQ(k->source_hash, "src-1");
  EXPECT_EQ(k->space_hash, "space-1");
  EXPECT_EQ(k->source, reduce_kernel().source);
  EXPECT_EQ(k->entry, "reduce<BLOCK_SIZE>");
  EXPECT_EQ(k->spec_json, reduce_kernel().spec_json);

  const std::int64_t problem = store.upsert_problem(problem_n(1024));
  EXPECT_EQ(store.upsert_problem(problem_n(1024)), problem);
  EXPECT_NE(store.upsert_problem(problem_n(2048)), problem);
  EXPECT_NE(store.upsert_problem(problem_n(1024, "scan")), problem);
  auto p = store.problem(problem);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kernel_name, "reduce");
  EXPECT_EQ(p->key, "n=1024");
  EXPECT_EQ(p->json, "{\"n\": 1024}");
}

TEST_F(StoreContract, RunsRoundTripEveryField) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  RunRecord run;
  run.kernel_id = s.kernel;
  run.device_id = s.device;
  run.problem_id = s.problem;
  run.backend = "cuda";
  run.strategy = "optuna:tpe";
  run.strategy_options = R"({"n_startup_trials": 10})";
  run.budget = R"({"evaluations": 200, "seconds": 600})";
  run.status = RunStatus::kFinished;  // ignored: a new run is running
  run.started_at = "yesterday";       // ignored: set by the store
  run.ktune_version = "0.1.0";
  run.nvrtc_version = "13.0";
  run.driver_version = 13000;
  run.host = "gpu-host-1";  // ignored: the store records the calling process
  run.pid = 1;
  run.command_line = "ktune tune reduce --strategy 'optuna:tpe'";
  run.seed = std::numeric_limits<std::uint64_t>::max();
  run.summary = "{}";
  const std::int64_t id = store.begin_run(run);
  auto read = store.run(id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->id, id);
  EXPECT_EQ(read->kernel_id, s.kernel);
  EXPECT_EQ(read->device_id, s.device);
  EXPECT_EQ(read->problem_id, s.problem);
  EXPECT_EQ(read->backend, "cuda");
  EXPECT_EQ(read->strategy, "optuna:tpe");
  EXPECT_EQ(read->strategy_options, run.strategy_options);
  EXPECT_EQ(read->budget, run.budget);
  EXPECT_EQ(read->status, RunStatus::kRunning);
  EXPECT_TRUE(std::regex_match(read->started_at, kIsoUtc)) << read->started_at;
  EXPECT_EQ(read->finished_at, "");
  EXPECT_EQ(read->ktune_version, "0.1.0");
  EXPECT_EQ(read->nvrtc_version, "13.0");
  EXPECT_EQ(read->driver_version, 13000);
  const ProcessIdentity self = ProcessIdentity::current();
  EXPECT_EQ(read->host, self.host);
  EXPECT_EQ(read->pid, self.pid);
  EXPECT_EQ(read->boot_id, self.boot_id);
  EXPECT_EQ(read->process_start, self.start);
  const auto unix_now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  EXPECT_NEAR(static_cast<double>(read->heartbeat_unix), static_cast<double>(unix_now), 5.0)
      << "begin_run is the run's first heartbeat";
  EXPECT_FALSE(read->replayed);
  EXPECT_FALSE(read->flush_l2.has_value());
  EXPECT_EQ(read->command_line, run.command_line);
  EXPECT_EQ(read->seed, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(read->summary, "{}");

  store.finish_run(id, RunStatus::kInterrupted, R"({"trials": 3})");
  read = store.run(id);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, RunStatus::kInterrupted);
  EXPECT_TRUE(std::regex_match(read->finished_at, kIsoUtc)) << read->finished_at;
  EXPECT_LE(read->started_at, read->finished_at);
  EXPECT_EQ(read->summary, R"({"trials": 3})");

  expect_error(ErrorKind::kInternal, "a run ends finished, interrupted or failed",
               [&] { store.finish_run(id, RunStatus::kRunning, "{}"); });
  expect_error(ErrorKind::kInternal, "no run 999",
               [&] { store.finish_run(999, RunStatus::kFailed, "{}"); });
  EXPECT_FALSE(store.run(999));
}

TEST_F(StoreContract, RunsFilterByKernelName) {
  Store store = Store::open(db_path_);
  Seeded reduce = seed(store);
  KernelRecord scan = reduce_kernel();
  scan.name = "scan";
  Seeded other = seed(store, h200(), scan, problem_n(64, "scan"));
  const std::int64_t second_reduce = seed(store).run;
  EXPECT_EQ(store.runs().size(), 3u);
  auto runs = store.runs("reduce");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, reduce.run);
  EXPECT_EQ(runs[1].id, second_reduce);
  ASSERT_EQ(store.runs("scan").size(), 1u);
  EXPECT_EQ(store.runs("scan")[0].id, other.run);
  EXPECT_TRUE(store.runs("nope").empty());
}

TEST_F(StoreContract, TrialsRoundTripEveryField) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  TrialRecord t;
  t.run_id = s.run;
  t.kernel_id = s.kernel;
  t.device_id = s.device;
  t.problem_id = s.problem;
  t.config_key = "block_size=256,unroll=8";
  t.config_json = R"({"block_size": 256, "unroll": 8})";
  t.status = TrialStatus::kOk;
  t.error = "";
  t.time_ms = 0.123456789012345678;
  t.time_min_ms = 0.1;
  t.time_mean_ms = 1e-300;
  t.time_spread = kNaN;
  t.sample_count = 4;
  t.samples_ms = {0.125, 1.0 / 3.0, kNaN, 1e300};
  t.gbps = kNaN;
  t.gflops = 3.5e12;
  t.registers = 255;
  t.local_bytes = -1;
  t.spill_bytes = -1;
  t.static_shared_bytes = 49152;
  t.dynamic_shared_bytes = -7;
  t.max_threads_per_block = 1024;
  t.occupancy = 0.75;
  t.arch = "sm_90";
  t.compile_options = "-arch=sm_90 -DBLOCK_SIZE=256 --use_fast_math";
  // A long log with quotes, newlines, SQL and non-ASCII text must come back exactly.
  t.compile_log.reserve(1 << 21);
  while (t.compile_log.size() < (1 << 21)) {
    t.compile_log += "kernel.cu(12): error: \"x\" isn't ' defined; DROP TABLE trials; -- é ∑\n";
  }
  t.cubin_hash = "0123456789abcdef";
  t.compile_ms = 12.5;
  t.eval_ms = kNaN;
  t.created_at = "";

  const std::int64_t id = store.add_trial(t);
  EXPECT_GT(id, 0);
  auto read = store.find_trial(s.kernel, s.device, s.problem, t.config_key);
  ASSERT_TRUE(read);
  EXPECT_TRUE(std::regex_match(read->created_at, kIsoUtc)) << read->created_at;
  t.id = id;
  t.created_at = read->created_at;
  expect_same_trial(*read, t);

  // A caller-provided created_at (an import) is kept.
  TrialRecord imported = make_trial(s, "imported", 1.0);
  imported.created_at = "2025-01-02T03:04:05.678Z";
  imported.id = store.add_trial(imported);
  auto all = store.trials_of_run(s.run);
  ASSERT_EQ(all.size(), 2u);
  expect_same_trial(all[0], t);
  expect_same_trial(all[1], imported);
}

TEST_F(StoreContract, TrialStatusIsStoredAsItsIntegerValue) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  for (int v = 0; v < kTrialStatusCount; ++v) {
    TrialRecord t = make_trial(s, "s" + std::to_string(v), kNaN, static_cast<TrialStatus>(v));
    t.error = v == 0 ? "" : "failed with " + std::to_string(v);
    store.add_trial(t);
  }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(db, "SELECT config_key, status, typeof(status), time_ms FROM trials");
  int rows = 0;
  while (q.executeStep()) {
    EXPECT_EQ(q.getColumn(0).getString(), "s" + std::to_string(q.getColumn(1).getInt()));
    EXPECT_EQ(q.getColumn(2).getString(), "integer");
    EXPECT_TRUE(q.getColumn(3).isNull()) << "NaN must be stored as NULL";
    ++rows;
  }
  EXPECT_EQ(rows, kTrialStatusCount);
  auto crashed = store.find_trial(s.kernel, s.device, s.problem, "s7");
  ASSERT_TRUE(crashed);
  EXPECT_EQ(crashed->status, TrialStatus::kCrashed);
  EXPECT_EQ(crashed->error, "failed with 7");
}

TEST_F(StoreContract, FindTrialReturnsTheLatestOfItsKeyAndIdentity) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  EXPECT_FALSE(store.find_trial(s.kernel, s.device, s.problem, "a"));
  const std::int64_t first = store.add_trial(make_trial(s, "a", 2.0, TrialStatus::kTimeout));
  const std::int64_t other = store.add_trial(make_trial(s, "b", 1.0));
  const std::int64_t latest = store.add_trial(make_trial(s, "a", 1.5));
  EXPECT_LT(first, other);
  EXPECT_LT(other, latest);
  auto found = store.find_trial(s.kernel, s.device, s.problem, "a");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, latest);
  EXPECT_EQ(found->time_ms, 1.5);
  EXPECT_EQ(found->status, TrialStatus::kOk);
  EXPECT_EQ(store.find_trial(s.kernel, s.device, s.problem, "b")->id, other);
  EXPECT_FALSE(store.find_trial(s.kernel, s.device, s.problem, "c"));

  // Another device, problem or kernel version never answers for this one.
  Seeded device2 = seed(store, h200(80'000'000'000));
  Seeded problem2 = seed(store, h200(), reduce_kernel(), problem_n(7));
  Seeded kernel2 = seed(store, h200(), reduce_kernel("src-2"));
  EXPECT_FALSE(store.find_trial(device2.kernel, device2.device, device2.problem, "a"));
  EXPECT_FALSE(store.find_trial(problem2.kernel, problem2.device, problem2.problem, "a"));
  EXPECT_FALSE(store.find_trial(kernel2.kernel, kernel2.device, kernel2.problem, "a"));

  // A later run's trial of the same identity wins: resume spans runs.
  Seeded next_run = seed(store);
  ASSERT_NE(next_run.run, s.run);
  ASSERT_EQ(next_run.kernel, s.kernel);
  const std::int64_t resumed = store.add_trial(make_trial(next_run, "a", 1.25));
  EXPECT_EQ(store.find_trial(s.kernel, s.device, s.problem, "a")->id, resumed);
}

TEST_F(StoreContract, LeadersAreEachConfigurationsLatestOkTrialFastestFirst) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  Seeded later = seed(store);  // the same identity, a second run
  store.add_trial(make_trial(s, "a", 2.0));
  const std::int64_t a = store.add_trial(make_trial(later, "a", 1.0));  // the latest counts
  store.add_trial(make_trial(s, "b", 0.5));
  store.add_trial(make_trial(later, "b", kNaN, TrialStatus::kTimeout));  // b's latest failed
  const std::int64_t c = store.add_trial(make_trial(s, "c", 1.5));
  TrialRecord retimed = make_trial(later, "d", 0.1);
  retimed.kind = TrialKind::kRetime;  // re-timings are not search results
  store.add_trial(retimed);
  const std::int64_t d = store.add_trial(make_trial(s, "d", 3.0));
  store.add_trial(make_trial(s, "e", std::numeric_limits<double>::infinity()));
  const std::int64_t f = store.add_trial(make_trial(later, "f", 1.5));  // ties c: by key
  TrialRecord cut = make_trial(s, "g", 0.2);
  cut.cut = true;  // the early cut-off stopped it: never a leader, whatever its time
  const std::int64_t g = store.add_trial(cut);
  EXPECT_TRUE(store.find_trial(s.kernel, s.device, s.problem, "g")->cut);
  EXPECT_NE(g, 0);
  Seeded elsewhere = seed(store, h200(80'000'000'000));
  store.add_trial(make_trial(elsewhere, "z", 0.01));
  RunRecord replay_run = *store.run(s.run);
  replay_run.id = 0;
  replay_run.replayed = true;
  Seeded replayed = s;
  replayed.run = store.begin_run(replay_run);
  const std::int64_t y = store.add_trial(make_trial(replayed, "y", 0.01));

  std::vector<std::int64_t> ids;
  for (const TrialRecord& t : store.leaders(s.kernel, s.device, s.problem, false, 10))
    ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{a, c, f, d}));
  const std::vector<TrialRecord> two = store.leaders(s.kernel, s.device, s.problem, false, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].config_key, "a");
  EXPECT_EQ(two[0].time_ms, 1.0);
  EXPECT_EQ(two[0].samples_ms, std::vector<double>{1.0});  // the whole record
  EXPECT_EQ(two[1].id, c);
  EXPECT_TRUE(store.leaders(s.kernel, s.device, s.problem, false, 0).empty());
  const std::vector<TrialRecord> from_replay =
      store.leaders(s.kernel, s.device, s.problem, true, 10);
  ASSERT_EQ(from_replay.size(), 1u);
  EXPECT_EQ(from_replay[0].id, y);
}

TEST_F(StoreContract, TrialsForListsAllRunsOldestFirst) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  Seeded s2 = seed(store);  // same identity, second run
  Seeded elsewhere = seed(store, h200(80'000'000'000));
  std::vector<std::int64_t> ids;
  ids.push_back(store.add_trial(make_trial(s, "a", 1)));
  ids.push_back(store.add_trial(make_trial(s2, "b", 2)));
  store.add_trial(make_trial(elsewhere, "a", 3));
  ids.push_back(store.add_trial(make_trial(s, "c", 4)));
  auto all = store.trials_for(s.kernel, s.device, s.problem);
  ASSERT_EQ(all.size(), 3u);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(all[i].id, ids[i]);
  auto run1 = store.trials_of_run(s.run);
  ASSERT_EQ(run1.size(), 2u);
  EXPECT_EQ(run1[0].config_key, "a");
  EXPECT_EQ(run1[1].config_key, "c");
  EXPECT_EQ(store.trials_of_run(s2.run).size(), 1u);
  EXPECT_TRUE(store.trials_of_run(999).empty());
}

TEST_F(StoreContract, AddTrialRefusesAnUnknownOrMismatchedRun) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  Seeded other = seed(store, h200(80'000'000'000));
  TrialRecord orphan = make_trial(s, "a", 1);
  orphan.run_id = 999;
  expect_error(ErrorKind::kInternal, "add_trial: no run 999", [&] { store.add_trial(orphan); });
  TrialRecord mismatched = make_trial(s, "a", 1);
  mismatched.run_id = other.run;
  expect_error(ErrorKind::kInternal, "but its run", [&] { store.add_trial(mismatched); });
  EXPECT_TRUE(store.trials_for(s.kernel, s.device, s.problem).empty());
  EXPECT_TRUE(store.trials_of_run(other.run).empty());
}

TEST_F(StoreContract, SetBestRefusesUnknownAndNonOkTrials) {
  Store store = Store::open(db_path_);
  Seeded s = seed(store);
  expect_error(ErrorKind::kInternal, "set_best: no trial 42", [&] { store.set_best(42); });
  for (int v = 1; v < kTrialStatusCount; ++v) {
    const auto status = static_cast<TrialStatus>(v);
    const std::int64_t id = store.add_trial(make_trial(s, "k" + std::to_string(v), 1.0, status));
    const std::string message = expect_error(ErrorKind::kInternal, "only an ok trial can be a best",
                                             [&] { store.set_best(id); });
    EXPECT_NE(message.find(std::string(to_string(status))), std::string::npos) << message;
    EXPECT_EQ(message.rfind(db_path_.string() + ": set_best: trial ", 0), 0u) << message;
  }
  EXPECT_TRUE(store.bests().empty());
  EXPECT_FALSE(store.best("reduce", "n=1048576", s.device));
}

TEST_F(StoreContract, BestInvariantHoldsEvenForDirectSql) {
  Seeded s;
  std::int64_t failed = 0;
  {
    Store store = Store::open(db_path_);
    s = seed(store);
    failed = store.add_trial(make_trial(s, "a", 1.0, TrialStatus::kWrongResult));
  }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
  db.exec("PRAGMA foreign_keys = ON");
  SQLite::Statement q(
      db, "INSERT INTO best VALUES (?, ?, ?, ?, 'reduce', 'n=1048576', 'now', 'time', 0)");
  q.bind(1, s.kernel);
  q.bind(2, s.device);
  q.bind(3, s.problem);
  q.bind(4, failed);
  EXPECT_THROW(q.exec(), SQLite::Exception);
}

TEST_F(StoreContract, BestAnswersOnlyItsDeviceAndProblem) {
  Store store = Store::open(db_path_);
  Seeded a = seed(store);                                            // H200 141 GB, n=1M
  Seeded b = seed(store, h200(80'000'000'000));                      // other device, n=1M
  Seeded c = seed(store, h200(), reduce_kernel(), problem_n(4096));  // H200, n=4096
  const std::int64_t ta = store.add_trial(make_trial(a, "block_size=256", 1.0));
  const std::int64_t tb = store.add_trial(make_trial(b, "block_size=512", 2.0));
  const std::int64_t tc = store.add_trial(make_trial(c, "block_size=128", 3.0));
  store.set_best(ta);
  store.set_best(tb);
  store.set_best(tc);

  auto best_a = store.best("reduce", "n=1048576", a.device);
  ASSERT_TRUE(best_a);
  EXPECT_EQ(best_a->trial_id, ta);
  EXPECT_EQ(best_a->kernel_id, a.kernel);
  EXPECT_EQ(best_a->device_id, a.device);
  EXPECT_EQ(best_a->problem_id, a.problem);
  EXPECT_EQ(best_a->kernel_name, "reduce");
  EXPECT_EQ(best_a->problem_key, "n=1048576");
  EXPECT_TRUE(std::regex_match(best_a->updated_at, kIsoUtc));
  EXPECT_EQ(best_a->trial.id, ta);
  EXPECT_EQ(best_a->trial.config_key, "block_size=256");
  EXPECT_EQ(best_a->device.id, a.device);
  EXPECT_EQ(best_a->device.memory_bytes, 150'000'000'000);
  EXPECT_EQ(best_a->kernel.id, a.kernel);
  EXPECT_EQ(best_a->kernel.source, reduce_kernel().source);

  EXPECT_EQ(store.best("reduce", "n=1048576", b.device)->trial_id, tb);
  EXPECT_EQ(store.best("reduce", "n=4096", c.device)->trial_id, tc);
  EXPECT_FALSE(store.best("reduce", "n=4096", b.device));
  EXPECT_FALSE(store.best("reduce", "n=1", a.device));
  EXPECT_FALSE(store.best("scan", "n=1048576", a.device));
  EXPECT_FALSE(store.best("reduce", "n=1048576", 999));

  // set_best replaces the row of its (kernel, device, problem).
  const std::int64_t faster = store.add_trial(make_trial(a, "block_size=1024", 0.5));
  store.set_best(faster);
  EXPECT_EQ(store.best("reduce", "n=1048576", a.device)->trial_id, faster);
  EXPECT_EQ(store.bests().size(), 3u);
  EXPECT_EQ(store.bests("reduce").size(), 3u);
  EXPECT_TRUE(store.bests("scan").empty());
}

TEST_F(StoreContract, BestPrefersTheMostRecentlyUpdatedKernelVersion) {
  Store store = Store::open(db_path_);
  Seeded v1 = seed(store);
  Seeded v2 = seed(store, h200(), reduce_kernel("src-2"));
  ASSERT_NE(v1.kernel, v2.kernel);
  ASSERT_EQ(v1.problem, v2.problem);
  const std::int64_t t1 = store.add_trial(make_trial(v1, "a", 1.0));
  const std::int64_t t2 = store.add_trial(make_trial(v2, "a", 2.0));
  store.set_best(t1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct updated_at
  store.set_best(t2);
  auto best = store.best("reduce", "n=1048576", v1.device);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->trial_id, t2);
  EXPECT_EQ(best->kernel.source_hash, "src-2");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  store.set_best(t1);  // the old version re-tuned later wins again
  EXPECT_EQ(store.best("reduce", "n=1048576", v1.device)->trial_id, t1);
  auto all = store.bests("reduce");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].trial_id, t1);  // newest first within one (name, problem, device)
  EXPECT_EQ(all[1].trial_id, t2);
}

TEST_F(StoreContract, BinariesRoundTripBytes) {
  Store store = Store::open(db_path_);
  std::string cubin(
      "\x7f"
      "ELF\0\0\x01\xff",
      8);
  for (int i = 0; i < 100000; ++i) cubin.push_back(static_cast<char>(i * 7));
  EXPECT_FALSE(store.binary("key-1"));
  store.put_binary("key-1", "sm_90", "_Z6reduceILi256EEvv", cubin);
  auto read = store.binary("key-1");
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, cubin);
  store.put_binary("key-1", "sm_90", "_Z6reduceILi256EEvv", "replaced");
  EXPECT_EQ(store.binary("key-1").value(), "replaced");
  store.put_binary("key-2", "sm_90", "x", "");
  EXPECT_EQ(store.binary("key-2").value(), "");
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(db,
                      "SELECT arch, lowered_name, typeof(cubin) FROM binaries WHERE key = 'key-1'");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "sm_90");
  EXPECT_EQ(q.getColumn(1).getString(), "_Z6reduceILi256EEvv");
  EXPECT_EQ(q.getColumn(2).getString(), "blob");
}

TEST_F(StoreContract, ReopenKeepsEverything) {
  Seeded s;
  std::int64_t trial = 0;
  {
    Store store = Store::open(db_path_);
    s = seed(store);
    trial = store.add_trial(make_trial(s, "a", 1.0));
    store.set_best(trial);
    store.put_binary("k", "sm_90", "f", "bin");
    store.finish_run(s.run, RunStatus::kFinished, "{}");
  }
  Store store = Store::open(db_path_);
  EXPECT_EQ(store.upsert_device(h200()), s.device);
  EXPECT_EQ(store.upsert_kernel(reduce_kernel()), s.kernel);
  EXPECT_EQ(store.upsert_problem(problem_n(1 << 20)), s.problem);
  EXPECT_EQ(store.run(s.run)->status, RunStatus::kFinished);
  EXPECT_EQ(store.find_trial(s.kernel, s.device, s.problem, "a")->id, trial);
  EXPECT_EQ(store.best("reduce", "n=1048576", s.device)->trial_id, trial);
  EXPECT_EQ(store.binary("k").value(), "bin");
}

TEST_F(StoreContract, MovedStoreKeepsWorking) {
  Store first = Store::open(db_path_);
  Seeded s = seed(first);
  Store second = std::move(first);
  EXPECT_EQ(second.add_trial(make_trial(s, "a", 1.0)), 1);
  Store third = Store::open(dir_ / "other.db");
  third = std::move(second);
  EXPECT_EQ(third.path(), db_path_);
  EXPECT_EQ(third.trials_of_run(s.run).size(), 1u);
}

TEST(UtcNow, IsIso8601WithMilliseconds) {
  const std::string now = utc_now();
  EXPECT_TRUE(std::regex_match(now, kIsoUtc)) << now;
  EXPECT_GE(now, std::string("2024-01-01T00:00:00.000Z"));
}

}  // namespace
}  // namespace ktune::test
