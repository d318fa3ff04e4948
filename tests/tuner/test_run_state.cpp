// Run and trial state is typed, never read from text: a replayed run keeps its search trials and
// its re-timing apart, and every way out of a run (finished, Ctrl-C, an exception, a killed
// process) leaves the status it should.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/test_files.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/replay.h"
#include "ktune/report.h"
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune::test {
namespace {

const std::string kReduceRecording =
    std::string(KTUNE_SOURCE_DIR) +
    "/db/recordings/reduce-NVIDIA_H100_80GB_HBM3-n=268435456.json.gz";

// A replayed run of a small kernel, device and problem, registered in `store`, to begin.
RunRecord a_replay_run(Store& store) {
  RunRecord run;
  run.kernel_id = store.upsert_kernel(KernelRecord{0, "reduce", "s", "p", "", "", "{}"});
  run.device_id = store.upsert_device(DeviceRecord{{"GPU", "sm_90", 9, 0, 1, 1}, 0, 1, 0, ""});
  run.problem_id = store.upsert_problem(ProblemRecord{0, "reduce", "n=1", "{\"n\": 1}"});
  run.backend = "replay";
  return run;
}

class RunState : public ::testing::Test {
 protected:
  CliResult run(const std::vector<std::string>& args) {
    return run_ktune(args, dir_.path(), dir_ / "cache", {{"KTUNE_RECORDINGS", std::nullopt}});
  }
  TempDir dir_;
};

// The README's job replayed twice: every trial is told once, the report counts every search
// evaluation and only the re-timing of each run as re-timed, and nothing a recording held is
// copied into the new trials' errors or kinds.
TEST_F(RunState, AReplayedRunKeepsItsSearchAndItsRetimingApart) {
  const std::string job = std::string(KTUNE_SOURCE_DIR) + "/configs/reduce.toml";
  CliResult r = run(
      {"tune", "--config", job, "--replay", kReduceRecording, "--db", "r.db", "--retime-top", "5"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "5874 trials (5874 measured")) << r;
  // The database of that run is itself a recording: replaying it must not count its re-timing
  // as search trials, nor carry its text over. It holds every parameter (the first run kept the
  // one the shipped recording lacks at its default), so the space is narrowed to what it
  // measured, steps 1-9, by a job.
  write_file(dir_ / "steps.toml",
             "kernel = \"reduce\"\n[problem]\nn = 268435456\n[space]\n"
             "variant = [1, 2, 3, 4, 5, 6, 7, 8, 9]\n[strategy]\nname = \"brute_force\"\n");
  r = run({"tune", "--config", (dir_ / "steps.toml").string(), "--replay", "r.db", "--db",
           "again.db", "--retime-top", "5"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "5874 trials (5874 measured")) << r;

  for (const char* db : {"r.db", "again.db"}) {
    Store store = Store::open(dir_ / db, Store::Mode::kReadOnly);
    const auto runs = store.runs();
    ASSERT_EQ(runs.size(), 1u) << db;
    EXPECT_TRUE(runs[0].replayed) << db;
    EXPECT_EQ(runs[0].status, RunStatus::kFinished) << db;
    std::size_t search = 0, retime = 0;
    for (const TrialRecord& t : store.trials_of_run(runs[0].id)) {
      (t.kind == TrialKind::kRetime ? retime : search) += 1;
      if (t.status == TrialStatus::kOk) {
        EXPECT_EQ(t.error, "") << db << " trial " << t.id;
      }
    }
    EXPECT_EQ(search, 5874u) << db;
    EXPECT_EQ(retime, 5u) << db;

    const Report report = build_report(store, {});
    ASSERT_EQ(report.studies.size(), 1u);
    ASSERT_EQ(report.studies[0].runs.size(), 1u);
    EXPECT_EQ(report.studies[0].runs[0].search.size(), 5874u) << db;
    EXPECT_EQ(report.studies[0].runs[0].retimed.size(), 5u) << db;
  }
  r = run({"report", "--db", "again.db", "--format", "md"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "| finished | ")) << r;
  EXPECT_TRUE(contains(r.out, "| 5874 | 5874 | 0 | ")) << r;
  EXPECT_TRUE(contains(r.out, "5874 evaluations, 5874 distinct configurations")) << r;
  r = run({"report", "--db", "again.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const auto j = nlohmann::json::parse(r.out);
  const auto& run0 = j.at("studies").at(0).at("runs").at(0);
  EXPECT_EQ(run0.at("evaluations"), 5874);
  EXPECT_EQ(run0.at("retimed"), 5);
  EXPECT_EQ(run0.at("status"), "finished");
  EXPECT_EQ(run0.at("replayed"), true);
}

// A run refused by its strategy (an unknown option) writes no run row that could stay running,
// and no database file where there was none; into an existing database it adds no run.
// --stop-at-ceiling holds the best's GB/s against the device's stored ceilings: without them
// the run says so and goes on to its budget; with them it stops at the first best within the
// fraction; merge carries the ceilings over, the newer measurement staying.
TEST_F(RunState, TheStopAtTheCeilingEndsASearchOnceTheBestIsThere) {
  const std::string job = std::string(KTUNE_SOURCE_DIR) + "/configs/reduce.toml";
  CliResult r = run({"tune", "--config", job, "--replay", kReduceRecording, "--strategy", "random",
                     "--budget-evals", "400", "--stop-at-ceiling", "0.9", "--db", "c.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "400 trials")) << r;
  EXPECT_TRUE(contains(r.out, "ceiling    none stored for this device")) << r;

  // Ceilings that put the recording's best at 0.97 of the bandwidth.
  double best_gbps = 0;
  std::int64_t device = 0;
  {
    Store store = Store::open(dir_ / "c.db");
    for (const TrialRecord& t : store.trials_of_run(store.runs().at(0).id))
      if (t.status == TrialStatus::kOk) best_gbps = std::max(best_gbps, t.gbps);
    ASSERT_GT(best_gbps, 0);
    device = store.devices().at(0).id;
    DeviceCeilings c;
    c.read_gbps = best_gbps / 0.97;
    c.copy_gbps = best_gbps / 1.5;  // the higher of the two is the bandwidth
    c.source = "test";
    store.set_ceilings(device, c);
    EXPECT_THROW(store.set_ceilings(device, DeviceCeilings{-1.0}), Error);
  }
  r = run({"tune", "--config", job, "--replay", kReduceRecording, "--strategy", "random",
           "--budget-evals", "400", "--stop-at-ceiling", "0.9", "--no-reuse", "--db", "c.db",
           "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j.at("trials").get<int>(), 400);
  EXPECT_TRUE(j.at("ceiling").at("stored").get<bool>());
  EXPECT_TRUE(j.at("ceiling").at("reached").get<bool>());
  EXPECT_GE(j.at("ceiling").at("fraction").get<double>(), 0.9);
  EXPECT_LE(j.at("ceiling").at("fraction").get<double>(), 0.97 + 1e-9);
  // Out of range: refused before anything runs.
  r = run({"tune", "--config", job, "--replay", kReduceRecording, "--stop-at-ceiling", "1.5",
           "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--stop-at-ceiling 1.5: expected a fraction")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "x.db"));

  // merge copies them; a second merge changes nothing.
  r = run({"merge", "c.db", "-o", "m.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "ceilings of 1 device(s)")) << r;
  r = run({"merge", "c.db", "-o", "m.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_FALSE(contains(r.out, "ceilings of")) << r;
  Store merged = Store::open(dir_ / "m.db", Store::Mode::kReadOnly);
  const auto copied = merged.ceilings(merged.devices().at(0).id);
  ASSERT_TRUE(copied.has_value());
  EXPECT_DOUBLE_EQ(copied->read_gbps, best_gbps / 0.97);
  EXPECT_DOUBLE_EQ(copied->bandwidth_gbps(), best_gbps / 0.97);
  EXPECT_TRUE(std::isnan(copied->fma_gflops));
  EXPECT_EQ(copied->source, "test");
}

TEST_F(RunState, ARunRefusedByItsStrategyLeavesNoNewFileAndAnExistingDatabaseAsItWas) {
  const std::vector<std::string> refused = {"tune",
                                            "reduce",
                                            "--problem",
                                            "n=2**28",
                                            "--replay",
                                            kReduceRecording,
                                            "--strategy",
                                            "genetic_algorithm",
                                            "--strategy-option",
                                            "bogus=1",
                                            "--db"};
  std::vector<std::string> args = refused;
  args.push_back("x.db");
  CliResult r = run(args);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "bogus")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "x.db")) << "a refused run left a database file";
  EXPECT_FALSE(fs::exists(dir_ / "x.db-wal"));
  r = run({"tune", "reduce", "--problem", "n=2**28", "--replay", kReduceRecording, "--budget-evals",
           "5", "--db", "y.db", "--retime-top", "0"});
  ASSERT_EQ(r.code, 0) << r;
  ASSERT_FALSE(fs::exists(dir_ / "y.db-wal"));
  const std::string before = read_file(dir_ / "y.db");
  args = refused;
  args.push_back("y.db");
  EXPECT_EQ(run(args).code, 2);
  ASSERT_TRUE(fs::exists(dir_ / "y.db")) << "an existing database is never removed";
  EXPECT_TRUE(read_file(dir_ / "y.db") == before) << "a refused run wrote to the database";
  EXPECT_FALSE(fs::exists(dir_ / "y.db-wal"));
  Store store = Store::open(dir_ / "y.db", Store::Mode::kReadOnly);
  EXPECT_EQ(store.runs().size(), 1u);
  for (const RunRecord& run : store.runs()) EXPECT_EQ(run.status, RunStatus::kFinished);
}

// A killed run reads as interrupted in `report` and `best`, and the next read-write open
// writes it down so.
TEST_F(RunState, AKilledRunIsShownInterruptedAndClosedOnTheNextOpen) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Store store = Store::open(dir_ / "k.db");
    const RunRecord run = a_replay_run(store);
    store.begin_run(run);
    _exit(0);  // as SIGKILL would: the row says running
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  CliResult r = run({"report", "--db", "k.db", "--format", "md"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "| interrupted |")) << r;
  EXPECT_FALSE(contains(r.out, "| running |")) << r;
  {
    SQLite::Database db((dir_ / "k.db").string(), SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("SELECT status FROM runs").getString(), "running")
        << "report only reads";
  }
  { Store store = Store::open(dir_ / "k.db"); }
  SQLite::Database db((dir_ / "k.db").string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT status FROM runs").getString(), "interrupted");
}

// A run of another host cannot be checked by pid: its heartbeat tells. Silent past
// Store::run_silence_seconds it reads interrupted and the next open closes it; a run that beats
// again (its process was only stopped) is running again; one from before heartbeats reads running.
TEST_F(RunState, ARunOfAnotherHostIsAliveWhileItsHeartbeatIs) {
  std::int64_t fresh = 0, silent = 0, unknown = 0;
  {
    Store store = Store::open(dir_ / "k.db");
    const RunRecord run = a_replay_run(store);
    fresh = store.begin_run(run);
    silent = store.begin_run(run);
    unknown = store.begin_run(run);
  }
  {
    SQLite::Database db((dir_ / "k.db").string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE runs SET host = 'another-host', pid = 4242, process_start = 7");
    const std::int64_t now = db.execAndGet("SELECT unixepoch()").getInt64();
    db.exec("UPDATE runs SET heartbeat_unix = " + std::to_string(now - 5) +
            " WHERE id = " + std::to_string(fresh));
    db.exec(
        "UPDATE runs SET heartbeat_unix = " + std::to_string(now - Store::run_silence_seconds - 5) +
        " WHERE id = " + std::to_string(silent));
    db.exec("UPDATE runs SET heartbeat_unix = 0 WHERE id = " + std::to_string(unknown));
  }
  {
    const Store reader = Store::open(dir_ / "k.db", Store::Mode::kReadOnly);
    EXPECT_EQ(reader.run(fresh)->status, RunStatus::kRunning);
    EXPECT_EQ(reader.run(silent)->status, RunStatus::kInterrupted);
    EXPECT_EQ(reader.run(unknown)->status, RunStatus::kRunning);
  }
  CliResult r = run({"report", "--db", "k.db", "--format", "md"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "| interrupted |")) << r;
  Store store = Store::open(dir_ / "k.db");
  const auto status_of = [&](std::int64_t id) {
    SQLite::Database db((dir_ / "k.db").string(), SQLite::OPEN_READONLY);
    return db.execAndGet("SELECT status FROM runs WHERE id = " + std::to_string(id)).getString();
  };
  EXPECT_EQ(status_of(fresh), "running");
  EXPECT_EQ(status_of(silent), "interrupted") << "the read-write open closes it";
  EXPECT_EQ(status_of(unknown), "running");
  store.heartbeat(silent);
  EXPECT_EQ(status_of(silent), "running") << "its process was only silent";
  EXPECT_EQ(store.run(silent)->status, RunStatus::kRunning);
  EXPECT_EQ(store.run(silent)->finished_at, "");
  store.finish_run(silent, RunStatus::kFinished, "{}");
  store.heartbeat(silent);
  EXPECT_EQ(status_of(silent), "finished") << "a heartbeat never reopens a finished run";
}

// The library: each way out of tune() writes its status.
class RunStateLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    recording_ = std::make_shared<Recording>(read_kt_cache(kReduceRecording));
    Registry registry;
    register_builtin_kernels(registry);
    target_ = std::make_unique<ReplayTarget>(replay_target(*recording_, &registry));
    instance_ =
        std::make_unique<KernelInstance>(target_->kernel, target_->problem, target_->limits);
    store_ = std::make_unique<Store>(Store::open(dir_ / "loop.db"));
  }
  TempDir dir_;
  std::shared_ptr<Recording> recording_;
  std::unique_ptr<ReplayTarget> target_;
  std::unique_ptr<KernelInstance> instance_;
  std::unique_ptr<Store> store_;
};

// A backend that fails (not a trial's failure: the backend itself) after some evaluations.
class FailingBackend : public Backend {
 public:
  FailingBackend(std::shared_ptr<const Recording> r, int after)
      : inner_(std::move(r)), left_(after) {}
  std::string name() const override { return "failing"; }
  DeviceInfo device() const override { return inner_.device(); }
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance& instance, const MeasureOptions& o) override {
    inner_.prepare(instance, o);
  }
  Measurement evaluate(const Config& config, const CompileResult* compiled) override {
    if (left_-- == 0) throw Error(ErrorKind::kDevice, "the device went away");
    return inner_.evaluate(config, compiled);
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& c, int rounds) override {
    return inner_.retime(c, rounds);
  }

 private:
  ReplayBackend inner_;
  int left_;
};

TEST_F(RunStateLoop, AnExceptionMarksTheRunFailedAndIsRethrown) {
  FailingBackend backend(recording_, 20);
  auto strategy = make_strategy("random");
  TuneOptions options;
  options.budget.evaluations = 100;
  expect_error(ErrorKind::kDevice, "the device went away",
               [&] { tune(*instance_, backend, *store_, *strategy, options, nullptr); });
  const auto runs = store_->runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::kFailed);
  EXPECT_TRUE(contains(runs[0].summary, "the device went away")) << runs[0].summary;
  EXPECT_EQ(store_->trials_of_run(runs[0].id).size(), 20u);
}

TEST_F(RunStateLoop, AStrategyThatRejectsItsOptionsLeavesNoRun) {
  ReplayBackend backend(recording_);
  auto strategy = make_strategy("genetic_algorithm");
  TuneOptions options;
  options.strategy_options = {{"bogus", "1"}};
  expect_error(ErrorKind::kUsage, "bogus",
               [&] { tune(*instance_, backend, *store_, *strategy, options, nullptr); });
  EXPECT_TRUE(store_->runs().empty());
}

TEST_F(RunStateLoop, StopMarksTheRunInterruptedAndBudgetsFinishIt) {
  ReplayBackend backend(recording_);
  auto strategy = make_strategy("random");
  TuneOptions options;
  options.budget.evaluations = 50;
  std::atomic<bool> stop{false};
  std::uint64_t seen = 0;
  ProgressObserver watch([&](const Progress& p) {
    seen = p.done;
    if (p.done == 10) stop = true;
  });
  const TuneSummary s =
      tune(*instance_, backend, *store_, *strategy, options, nullptr, &watch, &stop);
  EXPECT_EQ(s.status, RunStatus::kInterrupted);
  EXPECT_EQ(store_->run(s.run_id)->status, RunStatus::kInterrupted);
  EXPECT_LT(seen, 50u);
  auto again = make_strategy("random");
  const TuneSummary f = tune(*instance_, backend, *store_, *again, options, nullptr);
  EXPECT_EQ(f.status, RunStatus::kFinished);
  EXPECT_EQ(store_->run(f.run_id)->status, RunStatus::kFinished);
}

// A process killed in the middle of a run cannot write anything; readers see its run as
// interrupted, and the next read-write open writes that down.
TEST_F(RunStateLoop, ARunWhoseProcessWasKilledIsInterrupted) {
  const std::int64_t kernel = store_->upsert_kernel(kernel_record(*instance_));
  const std::int64_t device =
      store_->upsert_device(device_record(ReplayBackend(recording_).device()));
  ProblemRecord p;
  p.kernel_name = instance_->kernel().name;
  p.key = instance_->problem_key();
  p.json = "{}";
  const std::int64_t problem = store_->upsert_problem(p);
  const fs::path path = dir_ / "loop.db";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Store store = Store::open(path);
    RunRecord run;
    run.kernel_id = kernel;
    run.device_id = device;
    run.problem_id = problem;
    run.backend = "replay";
    store.begin_run(run);
    ::kill(::getpid(), SIGKILL);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  // This test process's own run, still going, stays running.
  RunRecord mine;
  mine.kernel_id = kernel;
  mine.device_id = device;
  mine.problem_id = problem;
  mine.backend = "replay";
  const std::int64_t live = store_->begin_run(mine);
  {
    Store reader = Store::open(path, Store::Mode::kReadOnly);
    const auto runs = reader.runs();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].status, RunStatus::kInterrupted);
    EXPECT_EQ(runs[1].status, RunStatus::kRunning);
  }
  {
    SQLite::Database raw(path.string(), SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT status FROM runs WHERE id = 1").getString(), "running")
        << "a read-only open writes nothing";
  }
  { Store writer = Store::open(path); }
  SQLite::Database raw(path.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT status FROM runs WHERE id = 1").getString(), "interrupted");
  EXPECT_EQ(
      raw.execAndGet("SELECT status FROM runs WHERE id = " + std::to_string(live)).getString(),
      "running");
}

}  // namespace
}  // namespace ktune::test
