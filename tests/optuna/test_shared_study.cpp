// Several `ktune tune` processes sharing one Optuna study (--study-storage), on the replay
// backend: a throwaway PostgreSQL server started by the test on a loopback port, and a journal
// file. Four workers measure distinct configurations (the sum of each worker's, no duplicates),
// a shared brute force covers the space and its merged best is a single process's; a worker
// killed with SIGKILL keeps what it committed and the others finish. Skips, with the reason,
// where Python, Optuna, psycopg2 or a PostgreSQL server is missing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "ktune/error.h"
#include "ktune/store.h"
#include "optuna/optuna_test_util.h"
#include "strategies/optuna/strategy.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

using test::conv;
using test::optuna_missing;

// Runs a shell command; its exit status, with its output in `output`.
int shell(const std::string& command, std::string* output = nullptr) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, p)) out.append(buffer, n);
  const int status = ::pclose(p);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A free TCP port on the loopback interface.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// Whether the embedded Python (or the first python3 on PATH) can import `module`.
bool python_imports(const std::string& module) {
  return shell("/usr/bin/env python3 -c 'import " + module + "'") == 0 ||
         shell(std::string(KTUNE_TEST_PYTHON_EXECUTABLE) + " -c 'import " + module + "'") == 0;
}

// A throwaway PostgreSQL cluster in a temporary directory, listening on 127.0.0.1 only, with
// trust authentication; stopped and deleted with the object. PostgreSQL refuses to run as root,
// so as root it runs as the `postgres` user (Debian's package creates it).
class PostgresCluster {
 public:
  explicit PostgresCluster(const fs::path& dir) : dir_(dir / "pg") {
    const std::string bin = find_bin();
    if (bin.empty()) {
      why_ = "no initdb/pg_ctl (apt-get install postgresql)";
      return;
    }
    fs::create_directories(dir_);
    if (::geteuid() == 0) {
      if (!::getpwnam("postgres")) {
        why_ = "running as root and there is no postgres user to run the server as";
        return;
      }
      as_ = "runuser -u postgres -- ";
      shell("chown -R postgres " + dir_.string() + " && chmod 755 " + dir.string());
    }
    port_ = free_port();
    std::string log;
    if (shell(as_ + bin + "/initdb -D " + (dir_ / "data").string() +
                  " -U ktune --auth=trust -E UTF8 --no-sync",
              &log) != 0) {
      why_ = "initdb failed: " + log;
      return;
    }
    const std::string options = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) +
                                " -k " + dir_.string() + " -c fsync=off -c max_connections=50";
    if (shell(as_ + bin + "/pg_ctl -D " + (dir_ / "data").string() + " -l " +
                  (dir_ / "log").string() + " -w -t 60 -o '" + options + "' start",
              &log) != 0) {
      why_ = "pg_ctl start failed: " + log + test::read_file(dir_ / "log");
      return;
    }
    bin_ = bin;
  }
  ~PostgresCluster() {
    if (!bin_.empty())
      shell(as_ + bin_ + "/pg_ctl -D " + (dir_ / "data").string() + " -m immediate -w stop");
  }
  // Why the server could not start; empty when it runs.
  const std::string& why() const { return why_; }
  std::string url() const {
    return "postgresql://ktune@127.0.0.1:" + std::to_string(port_) + "/postgres";
  }

 private:
  static std::string find_bin() {
    std::string out;
    if (shell("command -v pg_ctl", &out) == 0 && !out.empty()) {
      fs::path p = fs::canonical(fs::path(out.substr(0, out.find('\n'))));
      if (fs::exists(p.parent_path() / "initdb")) return p.parent_path().string();
    }
    if (shell("ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1", &out) == 0 && !out.empty())
      return out.substr(0, out.find('\n'));
    return {};
  }

  fs::path dir_;
  std::string bin_, as_, why_;
  int port_ = 0;
};

// A throwaway Redis server in a temporary directory, listening on 127.0.0.1 at a free port with
// nothing persisted; shut down with the object.
class RedisServer {
 public:
  explicit RedisServer(const fs::path& dir) : dir_(dir / "redis") {
    std::string out;
    if (shell("command -v redis-server", &out) != 0 || out.empty()) {
      why_ = "no redis-server (apt-get install redis-server)";
      return;
    }
    fs::create_directories(dir_);
    port_ = free_port();
    std::string log;
    if (shell("redis-server --port " + std::to_string(port_) +
                  " --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir " +
                  dir_.string() + " --pidfile " + (dir_ / "pid").string() + " --logfile " +
                  (dir_ / "log").string(),
              &log) != 0) {
      why_ = "redis-server did not start: " + log;
      return;
    }
    for (int i = 0; i < 100; ++i) {
      if (shell("redis-cli -h 127.0.0.1 -p " + std::to_string(port_) + " ping", &out) == 0 &&
          out.find("PONG") != std::string::npos) {
        running_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    why_ = "redis-server did not answer: " + test::read_file(dir_ / "log");
  }
  ~RedisServer() {
    if (running_) shell("redis-cli -h 127.0.0.1 -p " + std::to_string(port_) + " shutdown nosave");
  }
  const std::string& why() const { return why_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  fs::path dir_;
  std::string why_;
  int port_ = 0;
  bool running_ = false;
};

// A `ktune tune` process running in the background, its output in files.
struct Worker {
  pid_t pid = -1;
  fs::path out, err;
  int code = -1;
};

Worker start(const std::vector<std::string>& args, const fs::path& dir, int index) {
  Worker w;
  w.out = dir / ("worker" + std::to_string(index) + ".out");
  w.err = dir / ("worker" + std::to_string(index) + ".err");
  std::vector<std::string> argv_strings = {KTUNE_EXE};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string out = w.out.string(), err = w.err.string(), cwd = dir.string();
  const std::string cache = "KTUNE_CACHE_DIR=" + (dir / "cache").string();
  w.pid = ::fork();
  if (w.pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(o, STDOUT_FILENO);
    ::dup2(e, STDERR_FILENO);
    ::putenv(const_cast<char*>(cache.c_str()));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return w;
}

void finish(Worker& w) {
  int status = 0;
  ::waitpid(w.pid, &status, 0);
  w.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string describe(const Worker& w) {
  return "exit " + std::to_string(w.code) + "\n--- stdout\n" + test::read_file(w.out) +
         "--- stderr\n" + test::read_file(w.err);
}

// The configurations a results database holds search trials of.
std::vector<std::string> searched(const fs::path& db) {
  Store store = Store::open(db, Store::Mode::kReadOnly);
  std::vector<std::string> keys;
  for (const RunRecord& run : store.runs())
    for (const TrialRecord& t : store.trials_of_run(run.id))
      if (t.kind == TrialKind::kSearch) keys.push_back(t.config_key);
  return keys;
}

double best_time(const fs::path& db) {
  Store store = Store::open(db, Store::Mode::kReadOnly);
  const auto bests = store.bests();
  return bests.empty() ? -1 : bests.front().trial.time_ms;
}

class SharedStudy : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string why = optuna_missing();
    if (!why.empty()) GTEST_SKIP() << why;
    if (GetParam() == "journal") {
      url_ = "journal:" + (dir_ / "study.log").string();
      return;
    }
    if (GetParam() == "redis") {
      if (!python_imports("redis"))
        GTEST_SKIP() << "no redis package for the embedded Python (apt-get install python3-redis)";
      redis_ = std::make_unique<RedisServer>(dir_.path());
      if (!redis_->why().empty()) GTEST_SKIP() << "cannot start a Redis server: " << redis_->why();
      url_ = redis_->url();
      return;
    }
    if (!python_imports("psycopg2"))
      GTEST_SKIP() << "no psycopg2 for the embedded Python (apt-get install python3-psycopg2)";
    pg_ = std::make_unique<PostgresCluster>(dir_.path());
    if (!pg_->why().empty()) GTEST_SKIP() << "cannot start a PostgreSQL server: " << pg_->why();
    url_ = pg_->url();
  }

  std::vector<std::string> tune_args(const std::string& strategy, int index, int budget,
                                     const std::string& db) {
    return {"tune",
            "convolution_kernel",
            "--replay",
            conv(),
            "--strategy",
            strategy,
            "--study-storage",
            url_,
            "--budget-evals",
            std::to_string(budget),
            "--seed",
            std::to_string(index + 1),
            "--db",
            db,
            "--json",
            "--progress",
            "never"};
  }

  // Starts `n` workers at once and waits for all of them.
  std::vector<Worker> run_workers(int n, const std::string& strategy, int budget,
                                  std::vector<std::string> extra = {}) {
    std::vector<Worker> workers;
    for (int i = 0; i < n; ++i) {
      auto args = tune_args(strategy, i, budget, "w" + std::to_string(i) + ".db");
      args.insert(args.end(), extra.begin(), extra.end());
      workers.push_back(start(args, dir_.path(), i));
    }
    for (Worker& w : workers) finish(w);
    return workers;
  }

  TempDir dir_;
  std::unique_ptr<PostgresCluster> pg_;
  std::unique_ptr<RedisServer> redis_;
  std::string url_;
};

TEST_P(SharedStudy, FourWorkersMeasureDistinctConfigurationsAndMergeToTheSingleProcessBest) {
  // 20 ms per evaluation, so the workers overlap however slowly each one starts.
  const std::vector<Worker> workers = run_workers(4, "optuna:grid", 1000, {"--replay-delay", "20"});
  std::size_t sum = 0;
  std::set<std::string> all;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(workers[i].code, 0) << describe(workers[i]);
    const auto keys = searched(dir_ / ("w" + std::to_string(i) + ".db"));
    RecordProperty("worker" + std::to_string(i), static_cast<int>(keys.size()));
    sum += keys.size();
    for (const auto& k : keys) EXPECT_TRUE(all.insert(k).second) << "measured twice: " << k;
  }
  EXPECT_EQ(all.size(), sum);

  // One process, brute force over the same space, on the same budget.
  const test::CliResult single =
      test::run_ktune({"tune", "convolution_kernel", "--replay", conv(), "--strategy",
                       "brute_force", "--budget-evals", "1000", "--db", "single.db", "--json"},
                      dir_.path(), dir_ / "cache");
  ASSERT_EQ(single.code, 0) << single;
  EXPECT_EQ(all.size(), searched(dir_ / "single.db").size()) << "the shared grid missed some";

  Store fleet = Store::open(dir_ / "fleet.db");
  for (int i = 0; i < 4; ++i) fleet.merge_from(dir_ / ("w" + std::to_string(i) + ".db"));
  EXPECT_EQ(best_time(dir_ / "fleet.db"), best_time(dir_ / "single.db"));
  EXPECT_GT(best_time(dir_ / "single.db"), 0);
}

TEST_P(SharedStudy, SamplersOfFourWorkersNeverDrawWhatAnotherMeasures) {
  const std::vector<Worker> workers = run_workers(4, "optuna:random", 30);
  std::size_t sum = 0;
  std::set<std::string> all;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(workers[i].code, 0) << describe(workers[i]);
    const auto keys = searched(dir_ / ("w" + std::to_string(i) + ".db"));
    EXPECT_EQ(keys.size(), 30u) << describe(workers[i]);
    sum += keys.size();
    for (const auto& k : keys) EXPECT_TRUE(all.insert(k).second) << "measured twice: " << k;
  }
  EXPECT_EQ(all.size(), sum);
}

TEST_P(SharedStudy, AWorkerKilledMidRunKeepsWhatItCommittedAndTheOthersFinish) {
  std::vector<Worker> workers;
  for (int i = 0; i < 4; ++i) {
    auto args = tune_args("optuna:grid", i, 1000, "w" + std::to_string(i) + ".db");
    args.insert(args.end(), {"--replay-delay", "20"});
    workers.push_back(start(args, dir_.path(), i));
  }
  // 20 ms per evaluation: about 70 trials each, 1.5 s of work per worker.
  const fs::path victim_db = dir_ / "w0.db";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::size_t committed = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(victim_db)) continue;
    try {
      committed = searched(victim_db).size();
    } catch (const Error&) {
      continue;  // not a ktune database yet
    }
    if (committed >= 5) break;
  }
  ASSERT_GE(committed, 5u) << "the first worker never got going: " << describe(workers[0]);
  ::kill(workers[0].pid, SIGKILL);
  for (Worker& w : workers) finish(w);
  EXPECT_EQ(workers[0].code, 128 + SIGKILL);
  std::set<std::string> all;
  std::size_t duplicates = 0;
  for (int i = 1; i < 4; ++i) ASSERT_EQ(workers[i].code, 0) << describe(workers[i]);
  for (int i = 0; i < 4; ++i)
    for (const auto& k : searched(dir_ / ("w" + std::to_string(i) + ".db")))
      duplicates += all.insert(k).second ? 0 : 1;
  // Nothing committed is lost: the killed worker's trials are in its database, its run reads as
  // interrupted, and the others covered the rest of the space.
  EXPECT_GE(searched(victim_db).size(), committed);
  Store victim = Store::open(victim_db, Store::Mode::kReadOnly);
  EXPECT_EQ(victim.runs().at(0).status, RunStatus::kInterrupted);
  const test::CliResult single =
      test::run_ktune({"tune", "convolution_kernel", "--replay", conv(), "--strategy",
                       "brute_force", "--budget-evals", "1000", "--db", "single.db", "--json"},
                      dir_.path(), dir_ / "cache");
  ASSERT_EQ(single.code, 0) << single;
  EXPECT_EQ(all.size(), searched(dir_ / "single.db").size());
  // At most the trial the victim had committed but not yet told the study (the pipeline holds
  // two) is measured again by a survivor.
  EXPECT_LE(duplicates, 2u);
}

INSTANTIATE_TEST_SUITE_P(Storage, SharedStudy, ::testing::Values("journal", "postgresql", "redis"));

// `ktune tune --devices`: one worker process per device, here replay workers on the CPU.
class TuneDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = optuna_missing();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  std::vector<std::string> args(const std::string& devices, const std::string& delay = "10") {
    return {"tune",           "convolution_kernel",
            "--replay",       conv(),
            "--devices",      devices,
            "--replay-delay", delay,
            "--db",           "devices.db",
            "--budget-evals", "1000"};
  }
  // Search trials of every run in the database, and how many were measured twice.
  std::map<std::int64_t, std::size_t> search_trials(std::size_t& duplicates,
                                                    std::set<std::string>& all) {
    Store store = Store::open(dir_ / "devices.db", Store::Mode::kReadOnly);
    std::map<std::int64_t, std::size_t> per_run;
    duplicates = 0;
    for (const RunRecord& run : store.runs())
      for (const TrialRecord& t : store.trials_of_run(run.id))
        if (t.kind == TrialKind::kSearch) {
          ++per_run[run.id];
          duplicates += all.insert(t.config_key).second ? 0 : 1;
        }
    return per_run;
  }
  // The workers measured the whole space between them, and their best is one process's.
  void expect_split_space(std::size_t max_duplicates) {
    std::size_t duplicates = 0;
    std::set<std::string> all;
    EXPECT_GE(search_trials(duplicates, all).size(), 3u);
    EXPECT_LE(duplicates, max_duplicates);
    const test::CliResult single =
        test::run_ktune({"tune", "convolution_kernel", "--replay", conv(), "--strategy",
                         "brute_force", "--budget-evals", "1000", "--db", "single.db", "--json"},
                        dir_.path(), dir_ / "cache");
    ASSERT_EQ(single.code, 0) << single;
    EXPECT_EQ(all.size(), searched(dir_ / "single.db").size());
    EXPECT_EQ(best_time(dir_ / "devices.db"), best_time(dir_ / "single.db"));
  }
  nlohmann::json run_json(std::vector<std::string> a, int expect_code = 0) {
    a.push_back("--json");
    const test::CliResult r = test::run_ktune(a, dir_.path(), dir_ / "cache");
    EXPECT_EQ(r.code, expect_code) << r;
    return r.out.empty() ? nlohmann::json() : nlohmann::json::parse(r.out);
  }
  TempDir dir_;
};

TEST_F(TuneDevices, OneWorkerPerDeviceSplitsTheSpace) {
  // auto: the space fits the budget, so random search, split in three parts of its order.
  const auto j = run_json(args("0,1,2"));
  ASSERT_EQ(j.at("workers").size(), 3u) << j;
  std::size_t measured = 0;
  for (const auto& w : j.at("workers")) {
    EXPECT_EQ(w.at("worker_exit"), 0);
    EXPECT_EQ(w.at("strategy"), "auto");
    EXPECT_EQ(w.at("strategy_chosen"), "random");
    measured += w.at("measured").get<std::size_t>();
  }
  expect_split_space(0);
  std::size_t duplicates = 0;
  std::set<std::string> all;
  search_trials(duplicates, all);
  EXPECT_EQ(measured, all.size());       // each configuration measured by one worker
  for (const auto& w : j.at("workers"))  // and each worker measured a share
    EXPECT_GE(w.at("measured").get<std::size_t>(), all.size() / 6) << j;
}

TEST_F(TuneDevices, TheEvaluationBudgetIsTheJobsSharedByTheWorkers) {
  auto a = args("0,1,2");
  a.back() = "90";  // --budget-evals
  a.insert(a.end(), {"--strategy", "random"});
  const auto j = run_json(a);
  std::size_t duplicates = 0;
  std::set<std::string> all;
  const auto per_run = search_trials(duplicates, all);
  EXPECT_EQ(duplicates, 0u);
  EXPECT_EQ(all.size(), 90u);
  for (const auto& [run, n] : per_run) EXPECT_EQ(n, 30u) << "run " << run;
  for (const auto& w : j.at("workers")) EXPECT_EQ(w.at("measured"), 30) << j;
}

TEST_F(TuneDevices, AWorkerThatDiesCostsItsTrialNotTheRun) {
  Worker parent = start(args("0,1,2", "30"), dir_.path(), 0);
  // The parent names each worker's process on stderr; kill device 1's once it has measured.
  pid_t victim = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (victim < 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string err = test::read_file(parent.err);
    const auto at = err.find("device 1: worker ");
    // Only a whole line: a read while the parent writes it may end inside the number.
    if (at != std::string::npos && err.find('\n', at) != std::string::npos)
      victim = std::stoi(err.substr(at + 17));
  }
  ASSERT_GT(victim, 0) << describe(parent);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(::kill(victim, SIGKILL), 0) << "pid " << victim << ": " << std::strerror(errno) << "\n"
                                        << describe(parent);
  finish(parent);
  ASSERT_EQ(parent.code, 0) << describe(parent);
  EXPECT_NE(test::read_file(parent.err).find("device 1: worker killed by signal 9"),
            std::string::npos)
      << describe(parent);
  expect_split_space(2);  // at most the killed worker's trials in flight, measured again
}

TEST_F(TuneDevices, ANativeSearchRunsSeededApartOnTheSharedDatabase) {
  auto a = args("0,1");
  a.back() = "120";  // --budget-evals
  a.insert(a.end(), {"--strategy", "genetic_algorithm"});
  const auto j = run_json(a);
  for (const auto& w : j.at("workers")) {
    EXPECT_EQ(w.at("worker_exit"), 0);
    EXPECT_EQ(w.at("strategy"), "genetic_algorithm");
  }
  std::size_t duplicates = 0;
  std::set<std::string> all;
  EXPECT_EQ(search_trials(duplicates, all).size(), 2u);
  EXPECT_EQ(duplicates, 0u);  // the database's claims: a configuration is measured once
  EXPECT_LE(all.size(), 120u);
  EXPECT_GT(all.size(), 60u);  // two searches, not one repeated
}

TEST_F(TuneDevices, AStudyStorageIsForOptunaStrategies) {
  auto a = args("0,1");
  a.insert(a.end(), {"--strategy", "genetic_algorithm", "--study-storage", "journal:s.log"});
  const test::CliResult r = test::run_ktune(a, dir_.path(), dir_ / "cache");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(test::contains(r.err, "Optuna strategies")) << r;
  EXPECT_TRUE(test::contains(r.err, "genetic_algorithm")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "devices.db"));
  const test::CliResult p = test::run_ktune(
      {"tune", "convolution_kernel", "--replay", conv(), "--part", "3/2", "--db", "p.db"},
      dir_.path(), dir_ / "cache");
  EXPECT_EQ(p.code, 2) << p;
  EXPECT_TRUE(test::contains(p.err, "--part '3/2'")) << p;
  const test::CliResult o =
      test::run_ktune({"tune", "convolution_kernel", "--replay", conv(), "--part", "1/2",
                       "--strategy", "optuna:random", "--db", "o.db"},
                      dir_.path(), dir_ / "cache");
  EXPECT_EQ(o.code, 2) << o;
  EXPECT_TRUE(test::contains(o.err, "--study-storage")) << o;
}

TEST_F(TuneDevices, TheDatabaseIsMadeBeforeTheWorkersAndGoesWhenEveryWorkerRefuses) {
  // Every worker refuses the run (no such problem parameter): the database this run made holds
  // no run, so it goes, as a single run's does.
  auto a = args("0,1,2");
  a.insert(a.end(), {"--problem", "no_such_size=3"});
  const test::CliResult r = test::run_ktune(a, dir_.path(), dir_ / "cache");
  EXPECT_NE(r.code, 0) << r;
  EXPECT_TRUE(test::contains(r.err, "no_such_size")) << r;
  for (const char* suffix : {"", "-wal", "-shm"})
    EXPECT_FALSE(fs::exists(dir_ / (std::string("devices.db") + suffix))) << suffix;
  // A database that was there before stays, with what it held.
  const auto db = dir_ / "devices.db";
  (void)Store::open(db);
  const test::CliResult again = test::run_ktune(a, dir_.path(), dir_ / "cache");
  EXPECT_NE(again.code, 0) << again;
  EXPECT_TRUE(fs::exists(db));
}

TEST_F(TuneDevices, AnOptunaSamplerSharesOneStudy) {
  auto a = args("0,1");
  a.back() = "60";
  a.insert(a.end(), {"--strategy", "optuna:random"});
  const auto j = run_json(a);
  for (const auto& w : j.at("workers")) EXPECT_EQ(w.at("strategy"), "optuna:random");
  std::size_t duplicates = 0;
  std::set<std::string> all;
  search_trials(duplicates, all);
  EXPECT_EQ(duplicates, 0u);
  EXPECT_EQ(all.size(), 60u);
  EXPECT_TRUE(fs::exists(dir_ / "devices.db.study.log"));
}

}  // namespace
}  // namespace ktune
