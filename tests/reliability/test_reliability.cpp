// Reliability of `ktune tune` as processes see it: SIGKILL at random moments of replayed tuning,
// for every registered strategy, followed by resumes until a run finishes, must leave an intact
// database with every trial of an uninterrupted run with the same seed, none twice, and the same
// best; four writers tuning one job on one database at once, with readers beside them, measure
// no configuration twice. The figures are printed (kills, lost, duplicates, best equal).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <random>
#include <thread>

#include "ktune/strategy.h"
#include "reliability/process_util.h"

namespace ktune::test {
namespace {

using Clock = std::chrono::steady_clock;

// A small recorded space (274 configurations) for the kill loop; the shipped reduce recording
// (a built-in kernel, so `best` can name it) for the concurrent writers.
const std::string kRecording =
    std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz";
const std::string kReduceRecording =
    std::string(KTUNE_SOURCE_DIR) +
    "/db/recordings/reduce-NVIDIA_H100_80GB_HBM3-n=268435456.json.gz";

std::vector<std::string> tune_args(const std::string& strategy, const fs::path& db,
                                   const std::string& budget,
                                   const std::string& recording = kRecording) {
  std::vector<std::string> a = {"tune",      "--replay", recording,    "--strategy",
                                strategy,    "--seed",   "7",          "--db",
                                db.string(), "-q",       "--progress", "never"};
  if (!budget.empty()) a.insert(a.end(), {"--budget-evals", budget});
  return a;
}

// The strategies a kill loop covers: every registered one; Optuna's where its module and Python
// packages can be loaded (a probe run says).
std::vector<std::string> strategies(const ScratchDir& dir) {
  std::vector<std::string> out;
  for (const std::string& s : strategy_names()) {
    if (s.rfind("optuna", 0) == 0) {
      const fs::path probe = dir / "probe.db";
      if (run_ktune_to_end(tune_args(s, probe, "2"), dir / "probe.log") != 0) continue;
    }
    out.push_back(s);
  }
  return out;
}

struct KillFigures {
  int kills = 0;
  int runs = 0;
  std::size_t lost = 0;        // search trials of the uninterrupted run missing after resuming
  std::size_t extra = 0;       // configurations it never measured
  std::size_t duplicates = 0;  // configurations with two search trials
  bool intact = true;
  bool best_equal = true;
};

// Runs the job on `db` until a run finishes, killing each run after a random delay below
// `window` (SIGKILL to its process group: the run and any child), at most `kills` times.
int kill_and_resume(const std::string& strategy, const fs::path& db, const fs::path& log,
                    Clock::duration window, int kills, std::mt19937_64& rng, int& runs) {
  int done = 0;
  for (;;) {
    ++runs;
    const pid_t pid = spawn_ktune(tune_args(strategy, db, "60"), log);
    if (done >= kills) {
      EXPECT_EQ(wait_exit(pid), 0) << strategy << ": the last resume failed; " << read_text(log);
      return done;
    }
    std::uniform_int_distribution<long long> delay(0, window.count());
    std::this_thread::sleep_for(Clock::duration(delay(rng)));
    int code = 0;
    if (exited(pid, code)) {
      EXPECT_EQ(code, 0) << strategy << ": " << read_text(log);
      return done;
    }
    ::kill(-pid, SIGKILL);
    wait_exit(pid);
    ++done;
  }
}

// Compares a killed-and-resumed database with the uninterrupted run's and adds up the figures.
void compare(const std::string& strategy, const fs::path& whole, const fs::path& killed,
             KillFigures& total) {
  const DbFacts a = read_facts(whole), b = read_facts(killed);
  EXPECT_EQ(b.integrity, "ok") << strategy;
  EXPECT_EQ(b.measured_twice, 0u) << strategy;
  EXPECT_EQ(b.runs_running, 0u) << strategy << ": a killed run still says running";
  EXPECT_EQ(b.search_keys, a.search_keys)
      << strategy << ": not the configurations of an uninterrupted run\nuninterrupted:\n"
      << runs_text(whole) << "killed and resumed:\n"
      << runs_text(killed);
  EXPECT_EQ(b.best_key, a.best_key) << strategy;
  for (const std::string& k : a.search_keys) total.lost += b.search_keys.count(k) ? 0 : 1;
  for (const std::string& k : b.search_keys) total.extra += a.search_keys.count(k) ? 0 : 1;
  total.duplicates += b.measured_twice;
  total.intact = total.intact && b.integrity == "ok";
  total.best_equal = total.best_equal && b.best_key == a.best_key;
}

TEST(Reliability, SigkillAtRandomMomentsLosesNothingAndEndsWithTheSameBest) {
  ScratchDir dir;
  const std::vector<std::string> names = strategies(dir);
  const int per_strategy = std::max<int>(3, (30 + names.size() - 1) / names.size());
  std::mt19937_64 rng(20240611);
  KillFigures total;
  std::string covered;
  for (const std::string& s : names) {
    // One file name per strategy: "random" and "optuna:random" must not share a database.
    std::string tag = s;
    std::replace(tag.begin(), tag.end(), ':', '-');
    const fs::path whole = dir / ("whole-" + tag + ".db");
    const auto t0 = Clock::now();
    ASSERT_EQ(run_ktune_to_end(tune_args(s, whole, "60"), dir / "whole.log"), 0)
        << s << ": " << read_text(dir / "whole.log");
    const auto window = Clock::now() - t0;
    // Chains on fresh databases until this strategy has had its kills (a run may finish before
    // its kill comes).
    int kills = 0;
    for (int chain = 0; chain < 6 && kills < per_strategy; ++chain) {
      const fs::path killed = dir / ("killed-" + tag + std::to_string(chain) + ".db");
      kills += kill_and_resume(s, killed, dir / ("killed-" + tag + ".log"), window,
                               per_strategy - kills, rng, total.runs);
      compare(s, whole, killed, total);
    }
    total.kills += kills;
    covered += (covered.empty() ? "" : ", ") + s;
  }
  std::cout << "kill loop (" << covered << "): " << total.kills << " SIGKILLs in " << total.runs
            << " runs; integrity " << (total.intact ? "ok" : "FAILED") << "; lost trials "
            << total.lost << ", extra " << total.extra << ", configurations measured twice "
            << total.duplicates << "; best equal " << (total.best_equal ? "yes" : "NO") << "\n";
  EXPECT_GE(total.kills, 30);
}

// Readers that query the database in a loop while writers tune; any failure but "nothing
// stored yet" (best: 1) counts.
class Readers {
 public:
  Readers(const fs::path& db, const fs::path& dir) {
    for (int i = 0; i < 2; ++i) {
      threads_.emplace_back([this, db, dir, i] {
        const fs::path log = dir / ("reader" + std::to_string(i) + ".log");
        while (!stop_) {
          const std::vector<std::string> args =
              i == 0 ? std::vector<std::string>{"report", "--db", db.string(), "--json", "-q"}
                     : std::vector<std::string>{"best",    "reduce", "-p",
                                                "n=2**28", "--db",   db.string()};
          const int code = run_ktune_to_end(args, log);
          ++reads_;
          if (code != 0 && !(i == 1 && code == 1)) ++failures_;
        }
      });
    }
  }
  int stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    return failures_;
  }
  int reads() const { return reads_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> reads_{0}, failures_{0};
  std::vector<std::thread> threads_;
};

TEST(Reliability, FourConcurrentWritersMeasureNoConfigurationTwice) {
  ScratchDir dir;
  const fs::path db = dir / "shared.db";
  // Creating the file first: readers need a database to open.
  ASSERT_EQ(run_ktune_to_end(tune_args("random", db, "1", kReduceRecording), dir / "first.log"), 0);
  Readers readers(db, dir.path());
  // Every writer asks for the same 600 configurations in the same order: without claims, each
  // would measure what the others had not committed when it asked.
  std::vector<pid_t> writers;
  for (int i = 0; i < 4; ++i)
    writers.push_back(spawn_ktune(tune_args("brute_force", db, "600", kReduceRecording),
                                  dir / ("writer" + std::to_string(i) + ".log")));
  int writer_failures = 0;
  for (pid_t w : writers) writer_failures += wait_exit(w) != 0;
  const int reader_failures = readers.stop();
  const DbFacts f = read_facts(db);
  std::size_t locked = 0;
  for (int i = 0; i < 4; ++i)
    locked += read_text(dir / ("writer" + std::to_string(i) + ".log")).find("locked") !=
              std::string::npos;
  std::cout << "concurrency: 4 writers, 2 readers (" << readers.reads() << " reads); "
            << f.search_keys.size() << " configurations, " << f.search_trials
            << " search trials, measured twice " << f.measured_twice << "; failures: writers "
            << writer_failures << ", readers " << reader_failures << "; integrity " << f.integrity
            << "\n";
  EXPECT_EQ(writer_failures, 0) << read_text(dir / "writer0.log");
  EXPECT_EQ(reader_failures, 0) << read_text(dir / "reader0.log") << read_text(dir / "reader1.log");
  EXPECT_EQ(locked, 0u);
  EXPECT_EQ(f.integrity, "ok");
  EXPECT_EQ(f.measured_twice, 0u);
  EXPECT_EQ(f.search_trials, f.search_keys.size());
  EXPECT_EQ(f.runs_running, 0u);
  EXPECT_GE(f.search_keys.size(), 600u);
}

}  // namespace
}  // namespace ktune::test
