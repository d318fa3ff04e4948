// Bad input is refused with a clear error and the documented exit code, and changes nothing:
// job files checked at every level (a misspelt nested key is an error with a suggestion, not a
// silently ignored line), every numeric option and job value range-checked (finite, positive
// where it must be, no wrap-around), and nothing written for a refused command.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_files.h"
#include "ktune/job.h"
#include "ktune/suggest.h"
#include "tuner/cli_test_util.h"

namespace ktune::test {
namespace {

class JobFileChecks : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const fs::path p = dir_ / ("job" + std::to_string(++count_) + ".toml");
    write_file(p, text);
    return p.string();
  }
  TempDir dir_;
  int count_ = 0;
};

TEST_F(JobFileChecks, EveryKeyAtEveryLevelIsChecked) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[budget]\nsecs = 480\n",
       "unknown key 'secs' in [budget] (known: evaluations, seconds, stagnation, ceiling, "
       "family_evaluations, family_seconds)"},
      {"[budget]\nevaluation = 10\n",
       "unknown key 'evaluation' in [budget]; did you mean 'evaluations'?"},
      {"[measure]\nsample = 10\n", "unknown key 'sample' in [measure]; did you mean 'samples'?"},
      {"[strategy]\nnam = 'random'\n", "unknown key 'nam' in [strategy]; did you mean 'name'?"},
      {"kernal = 'reduce'\n", "unknown key 'kernal'; did you mean 'kernel'?"},
      {"budget = 5\n", "'budget' must be a table ([budget] ...), not a integer"},
      {"[budget]\nseconds = -10\n", "budget.seconds = -10 must be a finite number above 0"},
      {"[budget]\nseconds = nan\n", "budget.seconds = nan must be a finite number above 0"},
      {"[budget]\nevaluations = 0\n", "budget.evaluations = 0 is out of range"},
      {"[measure]\nsamples = 4294967296\n", "measure.samples = 4294967296 is out of range"},
      {"[measure]\ntimeout = -1\n", "measure.timeout = -1 must be a finite number above 0"},
      {"[measure]\ntarget_spread = inf\n", "measure.target_spread = inf must be a finite number"},
      {"[measure]\nwarmup = -1\n", "measure.warmup = -1 is out of range"},
      {"[measure]\nsustain_ms = -100\n", "measure.sustain_ms = -100 must be a finite number"},
      {"[measure]\nsustain = 100\n", "unknown key 'sustain' in [measure]; did you mean"},
      {"[measure]\nflush_l2 = 1\n", "measure.flush_l2 must be a string, not a integer"},
      {"[space]\nblock_size = [32, nan]\n", "space.block_size: values must be finite"},
      {"[compile]\nthread = 2\n", "unknown key 'thread' in [compile]; did you mean 'threads'?"},
      {"[problem]\nn = 1.5\n",
       "problem.n must be an integer, a list of integers or a string, not a float"},
      {"[problem]\nn = [1, 'a']\n", "problem.n: a list holds integers, not a string"},
      {"[compile]\nthreads = 0\n", "compile.threads = 0 is out of range: 1 to 1024"},
      {"[compile]\nin_process = 1\n", "compile.in_process must be true or false, not a integer"},
      {"[measure]\ncutoff = 'no'\n", "measure.cutoff must be true or false, not a string"},
  };
  for (const auto& [text, message] : cases) {
    const std::string path = write(text);
    const std::string m = expect_error(ErrorKind::kInput, message, [&] { load_job(path); });
    EXPECT_TRUE(contains(m, path)) << m;
  }
  expect_error(ErrorKind::kInput, "is a directory, not a job file",
               [&] { load_job(dir_.path().string()); });
  // What is right loads.
  const JobFile ok = load_job(
      write("kernel = 'reduce'\n[budget]\nevaluations = 10\nseconds = 2.5\n[measure]\nsamples = 7\n"
            "warmup = 0\ntarget_spread = 0\ntimeout = 3\nflush_l2 = 'never'\nsustain_ms = 250\n"));
  EXPECT_EQ(ok.budget_evaluations, 10u);
  EXPECT_FALSE(ok.compile_threads.has_value());
  // A family: a list, a range or an expression of the others, each kept as text.
  const JobFile family = load_job(
      write("[problem]\nrows = [1024, 2048]\ncols = 'rows'\nn = '2**18..2**20'\nf = 15\n"));
  EXPECT_EQ(family.problem, (Problem{{"f", 15}}));
  EXPECT_EQ(family.problem_sets.at("rows"), "[1024, 2048]");
  EXPECT_EQ(family.problem_sets.at("cols"), "rows");
  EXPECT_EQ(job_problems(family).problems().size(), 6u);
  // Narrowed to one problem by the overrides, as each problem of a family is; else refused.
  EXPECT_EQ(job_problem(family, {{"rows", 1024}, {"n", 1 << 19}}),
            (Problem{{"cols", 1024}, {"f", 15}, {"n", 1 << 19}, {"rows", 1024}}));
  const std::string refused =
      expect_error(ErrorKind::kUsage, "a family of 6 problems", [&] { (void)job_problem(family); });
  EXPECT_TRUE(contains(refused, "job")) << refused;
  const JobFile compile = load_job(write("[compile]\nthreads = 3\nin_process = true\n"));
  EXPECT_EQ(compile.compile_threads, 3u);
  EXPECT_EQ(compile.compile_in_process, true);
  EXPECT_EQ(ok.budget_seconds, 2.5);
  EXPECT_EQ(ok.samples, 7);
  EXPECT_EQ(ok.warmup, 0);
  EXPECT_EQ(ok.target_spread, 0.0);
  EXPECT_EQ(ok.flush_l2, "never");
  EXPECT_EQ(ok.sustain_ms, 250.0);
}

TEST(Suggest, TheClosestNameWithinAFewEdits) {
  EXPECT_EQ(closest_name("secnods", {"seconds", "evaluations"}), "seconds");
  EXPECT_EQ(closest_name("blocksize", {"block_size", "unroll"}), "block_size");
  EXPECT_EQ(closest_name("Block_Size", {"block_size"}), "block_size");
  EXPECT_FALSE(closest_name("x", {"a", "b"}));  // too short to guess
  EXPECT_FALSE(closest_name("frobnicate", {"seconds", "evaluations"}));
  EXPECT_EQ(did_you_mean("unrol", {"unroll"}), "; did you mean 'unroll'?");
  EXPECT_EQ(did_you_mean("zzz", {"unroll"}), "");
  EXPECT_EQ(closest_name("genetic", {"genetic_algorithm", "random"}), "genetic_algorithm");
  EXPECT_FALSE(closest_name("greedy", {"greedy_ils", "greedy_mls"}));  // which one?
}

class OptionChecks : public ::testing::Test {
 protected:
  CliResult run(const std::vector<std::string>& args) {
    return run_ktune(args, dir_.path(), dir_ / "cache", {{"KTUNE_RECORDINGS", std::nullopt}});
  }
  TempDir dir_;
};

// Each refused before anything is written: no database file appears.
TEST_F(OptionChecks, NumericOptionsAreRangeChecked) {
  const std::string recording = std::string(KTUNE_SOURCE_DIR) +
                                "/db/recordings/reduce-NVIDIA_H100_80GB_HBM3-n=268435456.json.gz";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--budget-evals", "-1"}, "'--budget-evals' is invalid"},
      {{"--budget-evals", "0"}, "--budget-evals 0: a run needs at least one evaluation"},
      {{"--budget-time", "nan"}, "--budget-time nan: expected a number of seconds above 0"},
      {{"--budget-time", "-3"}, "--budget-time -3"},
      {{"--timeout", "-5"}, "--timeout -5: expected a finite number of seconds above 0"},
      {{"--timeout", "inf"}, "--timeout inf"},
      {{"--target-spread", "nan"}, "--target-spread nan: expected a finite number of at least 0"},
      {{"--seed", "-1"}, "'--seed' is invalid"},
      {{"--seed", "1.5"}, "'--seed' is invalid"},
      {{"--samples", "-2"}, "--samples -2: must not be negative"},
      {{"--max-samples", "0"}, "--max-samples 0: at least 1"},
      {{"--retime-top", "-1"}, "--retime-top -1: must not be negative"},
      {{"--sustain", "-1"}, "--sustain -1: expected milliseconds from 0 to 60000"},
      {{"--sustain", "nan"}, "--sustain nan: expected milliseconds from 0 to 60000"},
      {{"--sustain", "1e9"}, "--sustain 1000000000: expected milliseconds from 0 to 60000"},
      {{"--compile-threads", "-1"}, "'--compile-threads' is invalid"},
      {{"--flush-l2", "sometimes"}, "--flush-l2 'sometimes': expected auto, always or never"},
      {{"--config", dir_.path().string()}, "is a directory, not a job file"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"tune",     "reduce",  "-p",   "n=2**28",
                                     "--replay", recording, "--db", "x.db"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run(args);
    EXPECT_EQ(r.code, extra[0] == "--config" ? 3 : 2) << r;
    EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r;
    EXPECT_FALSE(fs::exists(dir_ / "x.db")) << r;
  }
  CliResult r = run({"space", "reduce", "--arch", "sm_90", "--sample", "-1"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "'--sample' is invalid")) << r;
  r = run({"space", "reduce", "--arch", "sm_90", "--sample", "2000000"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "at most 1000000")) << r;
}

}  // namespace
}  // namespace ktune::test
