// The replay backend and its recordings: Kernel Tuner caches (gzip and plain, a bare-number
// problem_size, an empty device_name, failures), the shipped replay jobs whose restrictions give
// exactly the recorded key sets, the synthesized kernel, bad input, the tuning loop on replayed
// data, databases as recordings, and `ktune tune --backend replay` through the real binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "ktune/instance.h"
#include "ktune/registry.h"
#include "ktune/replay.h"
#include "ktune/stagnation.h"
#include "ktune/store.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::expect_error;
using test::TempDir;

std::string fixture(const std::string& name) {
  return std::string(KTUNE_TEST_DATA_DIR) + "/replay/" + name;
}

const RecordedTrial* trial_by_key(const Recording& r, const std::string& key) {
  for (const auto& t : r.trials)
    if (recording_key(t.values) == key) return &t;
  return nullptr;
}

std::set<std::string> recorded_keys(const Recording& r) {
  std::set<std::string> keys;
  for (const auto& t : r.trials) keys.insert(recording_key(t.values));
  return keys;
}

// Keys of a space's valid configurations in the recording's parameter order.
std::set<std::string> space_keys(const SearchSpace& space, const Recording& r) {
  std::set<std::string> keys;
  space.for_each_valid([&](const Config& c) {
    std::vector<Value> v;
    for (const auto& p : r.params) v.push_back(space.value(c, space.param_index(p.name)));
    keys.insert(recording_key(v));
    return true;
  });
  return keys;
}

// The fastest configuration of convolution_A100_small.json.gz (0.8284159898757935 ms).
Config recorded_best(const SearchSpace& space) {
  return space.from_assignments({{"block_size_x", "176"},
                                 {"block_size_y", "1"},
                                 {"tile_size_x", "1"},
                                 {"tile_size_y", "4"},
                                 {"read_only", "1"},
                                 {"use_padding", "0"},
                                 {"use_shmem", "1"}});
}

// The numbers below come from tests/data/replay/make_fixtures.py (Python's json and statistics
// modules), not from ktune.
TEST(Replay, ImportsAGzippedCacheWithFailures) {
  const Recording r = read_kt_cache(fixture("convolution_A100_small.json.gz"));
  EXPECT_EQ(r.format, "kt-cache");
  EXPECT_EQ(r.kernel_name, "convolution_kernel");
  EXPECT_EQ(r.device_name, "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(r.arch, "sm_80");
  EXPECT_EQ(r.problem_key(), "problem_size_x=4096,problem_size_y=4096");
  ASSERT_EQ(r.params.size(), 10u);
  EXPECT_EQ(r.params[0].name, "block_size_x");
  EXPECT_EQ(r.params[9].name, "filter_width");
  EXPECT_EQ(r.params[0].values.size(), 4u);
  EXPECT_EQ(r.trials.size(), 274u);
  EXPECT_EQ(r.count(TrialStatus::kOk), 262u);
  EXPECT_EQ(r.count(TrialStatus::kLaunchFailed), 10u);
  EXPECT_EQ(r.count(TrialStatus::kCompileFailed), 2u);
  const RecordedTrial* best = r.optimum();
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(recording_key(best->values), "176,1,1,4,1,0,1,1,15,15");
  EXPECT_DOUBLE_EQ(best->time_ms, 0.8284159898757935);      // median of `times`
  EXPECT_DOUBLE_EQ(best->recorded_ms, 0.8327999915927649);  // Kernel Tuner's mean
  EXPECT_NEAR(best->time_mean_ms, best->recorded_ms, 1e-12);
  EXPECT_EQ(best->samples_ms.size(), 32u);
  EXPECT_GT(best->eval_ms, best->compile_ms);
  const RecordedTrial* failed = trial_by_key(r, "80,8,3,4,0,1,1,1,15,15");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->status, TrialStatus::kCompileFailed);
  EXPECT_EQ(failed->error, "CompilationFailedConfig");
  EXPECT_TRUE(failed->samples_ms.empty());
  EXPECT_TRUE(std::isnan(failed->time_ms));
}

TEST(Replay, ImportsABareNumberProblemSizeAndNoObjective) {
  const Recording r = read_kt_cache(fixture("pnpoly_small.json.gz"));
  EXPECT_EQ(r.kernel_name, "cn_pnpoly");
  EXPECT_TRUE(r.scalar_problem_size);
  EXPECT_EQ(r.problem_key(), "problem_size=20000000");
  EXPECT_EQ(r.objective, "time");
  EXPECT_EQ(r.arch, "sm_86");
  EXPECT_EQ(r.trials.size(), 72u);
  EXPECT_EQ(r.count(TrialStatus::kOk), 60u);
  EXPECT_EQ(r.count(TrialStatus::kLaunchFailed), 12u);
  ASSERT_NE(r.optimum(), nullptr);
  EXPECT_EQ(recording_key(r.optimum()->values), "0,512,20,0");
  EXPECT_DOUBLE_EQ(r.optimum()->time_ms, 27.199888229370117);
  EXPECT_EQ(r.optimum()->samples_ms.size(), 10u);
}

TEST(Replay, AnEmptyDeviceNameIsTakenFromTheOptionOrTheFileName) {
  const Recording from_file =
      read_kt_cache(fixture("dedispersion_MI250X_small.json"));  // plain JSON
  EXPECT_EQ(from_file.device_name, "dedispersion_MI250X_small");
  EXPECT_EQ(from_file.arch, "");
  ASSERT_FALSE(from_file.notes.empty());
  EXPECT_TRUE(contains(from_file.notes[0], "names no device")) << from_file.notes[0];
  EXPECT_EQ(from_file.trials.size(), 63u);
  EXPECT_EQ(recording_key(from_file.optimum()->values), "4,64,1,1,1,0,0,0");
  EXPECT_DOUBLE_EQ(from_file.optimum()->time_ms, 49.77505874633789);

  const Recording named =
      read_kt_cache(fixture("dedispersion_MI250X_small.json"), "AMD Instinct MI250X");
  EXPECT_EQ(named.device_name, "AMD Instinct MI250X");
  EXPECT_TRUE(named.notes.empty());

  // The shipped-recording convention <kernel>-<device>-<problem> gives the device part.
  TempDir dir;
  const fs::path p =
      dir / recording_file_name("dedispersion_kernel", "MI250X", from_file.problem_key());
  test::write_file(p, test::read_file(fixture("dedispersion_MI250X_small.json")));
  EXPECT_EQ(read_kt_cache(p.string()).device_name, "MI250X");
}

TEST(Replay, FailureStringsMapToStatusesAndAreKept) {
  const std::string text = R"({"device_name": "d", "kernel_name": "k", "problem_size": [8],
    "tune_params_keys": ["a"], "tune_params": {"a": [1, 2, 3, 4, 5]},
    "cache": {"1": {"a": 1, "time": 2.0, "times": [1.0, 2.0, 6.0]},
              "2": {"a": 2, "time": "InvalidConfig"},
              "3": {"a": 3, "time": "CompilationFailedConfig"},
              "4": {"a": 4, "time": "RuntimeFailedConfig"},
              "5": {"a": 5, "time": "SomethingElseConfig"}}})";
  const Recording r = parse_kt_cache(text, "inline");
  ASSERT_EQ(r.trials.size(), 5u);
  EXPECT_EQ(r.find({Value(1)})->status, TrialStatus::kOk);
  EXPECT_DOUBLE_EQ(r.find({Value(1)})->time_ms, 2.0);  // median, not the mean (3.0)
  EXPECT_DOUBLE_EQ(r.find({Value(1)})->time_mean_ms, 3.0);
  EXPECT_EQ(r.find({Value(2)})->status, TrialStatus::kInvalid);
  EXPECT_EQ(r.find({Value(3)})->status, TrialStatus::kCompileFailed);
  EXPECT_EQ(r.find({Value(4)})->status, TrialStatus::kLaunchFailed);
  EXPECT_EQ(r.find({Value(5)})->status, TrialStatus::kCrashed);
  EXPECT_EQ(r.find({Value(5)})->error, "SomethingElseConfig");
  EXPECT_EQ(r.problem_key(), "problem_size_x=8");
  EXPECT_EQ(r.find({Value(6)}), nullptr);
}

TEST(Replay, BadInputIsAnInputErrorNamingTheFile) {
  TempDir dir;
  expect_error(ErrorKind::kInput, {"missing.json", "no such file"},
               [&] { read_kt_cache((dir / "missing.json").string()); });
  test::write_file(dir / "text.json", "this is not json");
  expect_error(ErrorKind::kInput, {"text.json", "not JSON"},
               [&] { read_kt_cache((dir / "text.json").string()); });
  test::write_file(dir / "broken.json.gz", std::string("\x1f\x8b\x08\x00garbage garbage", 20));
  expect_error(ErrorKind::kInput, {"broken.json.gz", "not a valid gzip file"},
               [&] { read_kt_cache((dir / "broken.json.gz").string()); });
  // A gzip file cut short.
  const std::string whole = test::read_file(fixture("pnpoly_small.json.gz"));
  test::write_file(dir / "cut.json.gz", whole.substr(0, whole.size() / 2));
  expect_error(ErrorKind::kInput, {"cut.json.gz", "gzip"},
               [&] { read_kt_cache((dir / "cut.json.gz").string()); });
  test::write_file(dir / "nocache.json",
                   R"({"kernel_name": "k", "tune_params_keys": ["a"], "tune_params": {"a": [1]}})");
  expect_error(ErrorKind::kInput, {"nocache.json", "no 'cache'"},
               [&] { read_kt_cache((dir / "nocache.json").string()); });
  test::write_file(dir / "noparams.json",
                   R"({"kernel_name": "k", "tune_params_keys": ["a"], "cache": {}})");
  expect_error(ErrorKind::kInput, {"noparams.json", "no 'tune_params'"},
               [&] { read_kt_cache((dir / "noparams.json").string()); });
  test::write_file(dir / "badkey.json", R"({"kernel_name": "k", "tune_params_keys": ["a", "b"],
      "tune_params": {"a": [1], "b": [2]}, "cache": {"1": {"time": 1.0}}})");
  expect_error(ErrorKind::kInput, {"badkey.json", "cache entry '1'", "expected 2"},
               [&] { read_kt_cache((dir / "badkey.json").string()); });
  test::write_file(dir / "badvalue.json", R"({"kernel_name": "k", "tune_params_keys": ["a"],
      "tune_params": {"a": [1]}, "cache": {"7": {"time": 1.0}}})");
  expect_error(ErrorKind::kInput, {"cache entry '7'", "not a value of 'a'"},
               [&] { read_kt_cache((dir / "badvalue.json").string()); });
  test::write_file(dir / "array.json", "[1, 2]");
  expect_error(ErrorKind::kInput, {"not an object"},
               [&] { read_kt_cache((dir / "array.json").string()); });
  test::write_file(dir / "wrongtype.json", R"({"kernel_name": 5, "tune_params_keys": ["a"],
      "tune_params": {"a": [1]}, "cache": {}})");
  expect_error(ErrorKind::kInput, {"wrongtype.json"},
               [&] { read_kt_cache((dir / "wrongtype.json").string()); });
}

// For each kernel of the recorded spaces, the shipped replay job's restrictions over the
// recorded value lists select exactly the recorded keys (fixtures are sub-products of the real
// spaces, so this holds for them as it does for the full files).
TEST(Replay, ShippedRestrictionsSelectExactlyTheRecordedKeys) {
  for (const char* name : {"convolution_A100_small.json.gz", "pnpoly_small.json.gz",
                           "dedispersion_MI250X_small.json", "gemm_small.json"}) {
    SCOPED_TRACE(name);
    const Recording r = read_kt_cache(fixture(name));
    const ReplayTarget t = replay_target(r, nullptr);
    ASSERT_FALSE(t.notes.empty());
    EXPECT_TRUE(contains(t.notes[0], "configs/replay/" + r.kernel_name + ".toml")) << t.notes[0];
    const KernelInstance instance(t.kernel, t.problem, t.limits);
    const std::set<std::string> space = space_keys(instance.space(), r);
    EXPECT_EQ(space, recorded_keys(r));
    EXPECT_LT(space.size(),
              instance.space().cartesian_size() + (r.kernel_name == "cn_pnpoly" ? 1 : 0));
  }
}

TEST(Replay, ARecordingTheReplayJobDoesNotFitDefinesItsOwnSpace) {
  // An older convolution kernel, without use_shmem: the shipped job's restrictions name it.
  const Recording r = read_kt_cache(fixture("convolution_no_shmem_small.json"));
  const ReplayTarget t = replay_target(r, nullptr);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_TRUE(contains(t.notes[0], "configs/replay/convolution_kernel.toml does not fit"))
      << t.notes[0];
  EXPECT_TRUE(contains(t.notes[0], "unknown name 'use_shmem'")) << t.notes[0];
  EXPECT_TRUE(contains(t.notes[0], "its 170 recorded configurations define the space"))
      << t.notes[0];
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  EXPECT_TRUE(instance.space().listed_only());
  EXPECT_EQ(space_keys(instance.space(), r), recorded_keys(r));
  EXPECT_LT(r.trials.size(), instance.space().cartesian_size());  // so the list is what narrows
  ReplayBackend backend(std::make_shared<Recording>(r));
  EXPECT_EQ(backend.missing(instance.space()), 0u);
  // Outside the list is invalid, and says why; the list is part of the space's identity.
  std::optional<Config> outside;
  const SearchSpace cartesian(instance.space().params(), {});
  cartesian.for_each_valid([&](const Config& c) {
    if (instance.space().is_valid(c)) return true;
    outside = c;
    return false;
  });
  ASSERT_TRUE(outside);
  EXPECT_EQ(instance.space().violated(*outside), "not among the listed configurations");
  KernelSpec unlisted = t.kernel;
  unlisted.listed.reset();
  EXPECT_NE(KernelInstance(unlisted, t.problem, t.limits).space().hash(), instance.space().hash());
  // Neighbours stay inside the list.
  for (const Config& c :
       instance.space().neighbours(instance.space().enumerate().front(), Neighbourhood::kHamming))
    EXPECT_TRUE(instance.space().is_valid(c));
}

TEST(Replay, AnUnknownKernelWithoutRestrictionsSpansTheCartesianProduct) {
  std::string text = test::read_file(fixture("dedispersion_MI250X_small.json"));
  const std::string from = "\"dedispersion_kernel\"";
  text.replace(text.find(from), from.size(), "\"mystery_kernel\"");
  const Recording r = parse_kt_cache(text, "mystery.json", "some GPU");
  const ReplayTarget t = replay_target(r, nullptr);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_TRUE(contains(t.notes[0], "warning: no restrictions known for mystery_kernel"))
      << t.notes[0];
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  EXPECT_EQ(instance.space().enumerate().size(), instance.space().cartesian_size());
  ReplayBackend backend(std::make_shared<Recording>(r));
  EXPECT_EQ(backend.missing(instance.space()), instance.space().cartesian_size() - r.trials.size());
}

TEST(Replay, TheSynthesizedKernelValidatesAndCannotBeMistakenForSource) {
  const Recording r = read_kt_cache(fixture("pnpoly_small.json.gz"));
  const KernelSpec k = kernel_from_recording(r);
  EXPECT_NO_THROW(k.validate());
  EXPECT_EQ(k.name, "cn_pnpoly");
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[1].name, "block_size_x");
  ASSERT_EQ(k.problem.size(), 1u);
  EXPECT_EQ(k.problem[0].name, "problem_size");
  EXPECT_EQ(k.problem[0].default_value, 20000000);
  EXPECT_TRUE(contains(k.source, "no source")) << k.source;
  EXPECT_TRUE(contains(k.origin, "pnpoly_small.json.gz"));
}

TEST(Replay, TheBackendAnswersFromTheRecording) {
  auto r = std::make_shared<Recording>(read_kt_cache(fixture("convolution_A100_small.json.gz")));
  const ReplayTarget t = replay_target(*r, nullptr);
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  ReplayBackend backend(r);
  EXPECT_EQ(backend.name(), "replay");
  EXPECT_FALSE(backend.needs_compilation());
  EXPECT_EQ(backend.device().name, "NVIDIA A100-PCIE-40GB");
  EXPECT_TRUE(backend.replays());
  EXPECT_EQ(backend.device().arch, "sm_80");
  EXPECT_EQ(backend.device().cc_major, 8);
  EXPECT_EQ(backend.device().sm_count, 0);
  backend.prepare(instance, {});
  const SearchSpace& space = instance.space();
  const Config best = recorded_best(space);
  const Measurement m = backend.evaluate(best, nullptr);
  EXPECT_EQ(m.status, TrialStatus::kOk);
  EXPECT_DOUBLE_EQ(m.time_ms, 0.8284159898757935);
  EXPECT_EQ(m.samples_ms.size(), 32u);
  EXPECT_TRUE(m.from_cache);
  const Config failed = space.from_assignments({{"block_size_x", "80"},
                                                {"block_size_y", "8"},
                                                {"tile_size_x", "3"},
                                                {"tile_size_y", "4"},
                                                {"use_padding", "1"},
                                                {"use_shmem", "1"}});
  EXPECT_EQ(backend.evaluate(failed, nullptr).status, TrialStatus::kCompileFailed);
  // The status is replayed, the recorded text is not: it may describe the recording itself.
  EXPECT_EQ(backend.evaluate(failed, nullptr).error, "replayed: recorded as compile_failed");
  EXPECT_EQ(m.error, "");
  const auto re = backend.retime({{best, nullptr}, {failed, nullptr}}, 10);
  ASSERT_EQ(re.size(), 2u);
  EXPECT_DOUBLE_EQ(re[0].time_ms, m.time_ms);

  // A configuration the recording lacks (this one breaks a restriction, so it was never run).
  const Config absent = space.from_assignments({{"block_size_x", "176"}, {"block_size_y", "16"}});
  const Measurement a = backend.evaluate(absent, nullptr);
  EXPECT_EQ(a.status, TrialStatus::kInvalid);
  EXPECT_EQ(a.error, "not in the recording");
}

// With a delay the backend is a simulated device: submitted evaluations run one after another,
// each taking the delay from when the device is free, and collect() waits for the oldest; the
// caller's own work between submit and collect is hidden, as it is behind a GPU.
TEST(Replay, ADelayedBackendWorksThroughSubmissionsLikeADevice) {
  using Clock = std::chrono::steady_clock;
  auto r = std::make_shared<Recording>(read_kt_cache(fixture("convolution_A100_small.json.gz")));
  const ReplayTarget t = replay_target(*r, nullptr);
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  ReplayBackend backend(r);
  EXPECT_EQ(backend.pipeline_depth(), 1u);
  // A delay long beside the machine's scheduling noise, so that the upper bounds below (which
  // show the overlap) hold on a loaded machine too.
  backend.set_delay(200);
  EXPECT_EQ(backend.pipeline_depth(), 2u);
  backend.prepare(instance, {});
  const Config c = recorded_best(instance.space());
  const auto ms_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  const auto t0 = Clock::now();
  backend.submit(c, nullptr);
  backend.submit(c, nullptr);
  EXPECT_LT(ms_since(t0), 150);  // submitting does not wait for the device
  EXPECT_DOUBLE_EQ(backend.collect().time_ms, 0.8284159898757935);
  EXPECT_GE(ms_since(t0), 200);
  backend.collect();
  EXPECT_GE(ms_since(t0), 400);  // the second ran after the first
  // Work done while the device is busy is hidden: the result is due 200 ms after its
  // submission, not 200 ms after the caller's 150 ms of other work.
  const auto t1 = Clock::now();
  backend.submit(c, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  backend.collect();
  EXPECT_GE(ms_since(t1), 200);
  EXPECT_LT(ms_since(t1), 340);
  // A device left idle starts the next evaluation when it is submitted, not earlier.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const auto t2 = Clock::now();
  backend.submit(c, nullptr);
  backend.collect();
  EXPECT_GE(ms_since(t2), 200);
  const auto t3 = Clock::now();
  backend.evaluate(c, nullptr);  // the synchronous path waits the delay
  EXPECT_GE(ms_since(t3), 200);
  EXPECT_THROW(backend.collect(), Error);
}

TEST(Replay, BindingRefusesParametersThatDoNotMatch) {
  auto r = std::make_shared<Recording>(read_kt_cache(fixture("pnpoly_small.json.gz")));
  ReplayBackend backend(r);
  const SearchSpace fewer({{"between_method", {Value(0)}}, {"block_size_x", {Value(32)}}}, {});
  expect_error(ErrorKind::kInput, {"pnpoly_small.json.gz", "'tile_size'"},
               [&] { backend.bind(fewer); });
  std::vector<Parameter> params = r->params;
  params.push_back({"extra", {Value(1), Value(2)}});
  const SearchSpace more(params, {});
  expect_error(ErrorKind::kInput, {"'extra'", "not in the recording"}, [&] { backend.bind(more); });
  params.back().values = {Value(1)};  // a single value changes nothing
  const SearchSpace fixed(params, {});
  EXPECT_NO_THROW(backend.bind(fixed));
}

TEST(Replay, AParameterTheKernelGainedAfterTheRecordingStaysAtItsDefault) {
  // A kernel that gained a parameter after its recording was made (here stencil3d with an
  // extra `z_unroll`) replays the recording with the new parameter pinned to its default, every
  // recorded configuration valid, and says so.
  const fs::path file = fs::path(KTUNE_SOURCE_DIR) / "db" / "recordings" /
                        "stencil3d-NVIDIA_H100_80GB_HBM3-nx=512,ny=512,nz=512.json.gz";
  auto r = std::make_shared<Recording>(read_kt_cache(file.string()));
  Registry builtin;
  register_builtin_kernels(builtin);
  KernelSpec grown = builtin.get("stencil3d");
  Parameter extra;
  extra.name = "z_unroll";
  extra.values = {Value(1), Value(2), Value(4)};
  extra.default_index = 1;
  grown.params.push_back(extra);
  Registry registry;
  registry.add(grown);

  const ReplayTarget t = replay_target(*r, &registry);
  EXPECT_FALSE(
      t.kernel.source.empty());  // the registered kernel, not one synthesized from the file
  const auto z = std::find_if(t.kernel.params.begin(), t.kernel.params.end(),
                              [](const Parameter& p) { return p.name == "z_unroll"; });
  ASSERT_NE(z, t.kernel.params.end());
  ASSERT_EQ(z->values.size(), 1u);
  EXPECT_EQ(z->values[0].to_string(), "2");
  EXPECT_TRUE(std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) {
    return contains(n, "'z_unroll'") && contains(n, "kept at 2");
  }));
  const KernelInstance inst(t.kernel, t.problem, t.limits);
  EXPECT_EQ(space_keys(inst.space(), *r), recorded_keys(*r));
  ReplayBackend backend(r);
  EXPECT_NO_THROW(backend.bind(inst.space()));
}

class ReplayTuning : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(ReplayTuning, TheLoopFindsTheRecordedOptimumAndAReplayDeviceOfItsOwn) {
  auto r = std::make_shared<Recording>(read_kt_cache(fixture("convolution_A100_small.json.gz")));
  const ReplayTarget t = replay_target(*r, nullptr);
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  ReplayBackend backend(r);
  Store store = Store::open(dir_ / "replay.db");
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  const TuneSummary s = tune(instance, backend, store, *strategy, options, nullptr);
  EXPECT_EQ(s.status, RunStatus::kFinished);
  EXPECT_EQ(s.trials, 274u);
  EXPECT_EQ(s.by_status.at("ok"), 262u);
  EXPECT_EQ(s.by_status.at("launch_failed"), 10u);
  EXPECT_EQ(s.by_status.at("compile_failed"), 2u);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_EQ(s.best->config_key,
            "block_size_x=176,block_size_y=1,tile_size_x=1,tile_size_y=4,read_only=1,use_padding=0,"
            "use_shmem=1,"
            "use_cmem=1,filter_height=15,filter_width=15");
  EXPECT_DOUBLE_EQ(s.best->time_ms, 0.8284159898757935);
  const auto devices = store.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].name, "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(devices[0].arch, "sm_80");  // the recorded device's architecture
  EXPECT_TRUE(store.run(s.run_id)->replayed);
  EXPECT_EQ(store.run(s.run_id)->backend, "replay");

  // The database is itself a recording of the same measurements.
  const Recording again =
      read_recording((dir_ / "replay.db").string(), {"convolution_kernel", {}, ""});
  EXPECT_EQ(again.format, "ktune-db");
  EXPECT_EQ(again.trials.size(), 274u);
  EXPECT_EQ(again.count(TrialStatus::kCompileFailed), 2u);
  EXPECT_EQ(again.device_name, "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(again.arch, "sm_80");  // from the stored compute capability
  EXPECT_EQ(again.problem_key(), r->problem_key());
  EXPECT_EQ(recording_key(again.optimum()->values), "176,1,1,4,1,0,1,1,15,15");
  EXPECT_EQ(again.optimum()->samples_ms, r->optimum()->samples_ms);
}

TEST_F(ReplayTuning, TheEarlyCutOffStopsOnlyTheFarSlowerAndNeverCrownsOne) {
  auto r = std::make_shared<Recording>(read_kt_cache(fixture("convolution_A100_small.json.gz")));
  const ReplayTarget t = replay_target(*r, nullptr);
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  const auto run = [&](const std::string& db, bool cutoff) {
    ReplayBackend backend(r);
    Store store = Store::open(dir_ / db);
    auto strategy = make_strategy("brute_force");
    TuneOptions options;
    options.measure.cutoff = cutoff;
    return tune(instance, backend, store, *strategy, options, nullptr);
  };
  const TuneSummary cut = run("cut.db", true);
  const TuneSummary whole = run("whole.db", false);
  EXPECT_GT(cut.cut, 50u);
  EXPECT_EQ(whole.cut, 0u);
  ASSERT_TRUE(cut.best && whole.best);
  EXPECT_EQ(cut.best->config_key, whole.best->config_key);  // the same winner
  EXPECT_DOUBLE_EQ(cut.best->time_ms, whole.best->time_ms);
  EXPECT_FALSE(cut.best->cut);

  // Each cut trial has the samples it took, and its fastest is far slower than the best.
  Store store = Store::open(dir_ / "cut.db", Store::Mode::kReadOnly);
  std::size_t n = 0;
  for (const TrialRecord& trial : store.trials_of_run(cut.run_id)) {
    if (!trial.cut) continue;
    ++n;
    EXPECT_EQ(trial.kind, TrialKind::kSearch);
    EXPECT_EQ(trial.sample_count, MeasureOptions::kCutoffSamples);
    EXPECT_GT(trial.time_min_ms, MeasureOptions::kCutoffFactor * cut.best->time_ms);
  }
  EXPECT_EQ(n, cut.cut);

  // A recording made from the database, and the cache exported from it, say which rows were cut.
  const Recording again =
      read_recording((dir_ / "cut.db").string(), {"convolution_kernel", {}, ""});
  const auto cut_rows = [](const Recording& rec) {
    return std::count_if(rec.trials.begin(), rec.trials.end(),
                         [](const RecordedTrial& x) { return x.cut; });
  };
  EXPECT_EQ(static_cast<std::uint64_t>(cut_rows(again)), cut.cut);
  const std::string cache = kt_cache_text(again);
  EXPECT_TRUE(contains(cache, "\"ktune_cut\":true"));
  const std::string path = (dir_ / "exported.json").string();
  test::write_file(path, cache);
  EXPECT_EQ(static_cast<std::uint64_t>(cut_rows(read_kt_cache(path))), cut.cut);
  // Without the cut-off the same database's cut trials are measured again, the rest reused.
  const TuneSummary again_whole = run("cut.db", false);
  EXPECT_EQ(again_whole.measured, cut.cut);
  EXPECT_EQ(again_whole.from_database, cut.trials - cut.cut);
  EXPECT_EQ(again_whole.cut, 0u);
}

// The stagnation stop ends a run once that many trials in a row brought no improvement beyond
// the noise, and only then: walking the run's trials in order with the same rule finds it
// stagnant at its end and not before.
TEST_F(ReplayTuning, TheStagnationStopEndsASearchThatNoLongerImproves) {
  auto r = std::make_shared<Recording>(read_kt_cache(fixture("convolution_A100_small.json.gz")));
  const ReplayTarget t = replay_target(*r, nullptr);
  const KernelInstance instance(t.kernel, t.problem, t.limits);
  ReplayBackend backend(r);
  Store store = Store::open(dir_ / "stagnation.db");
  auto strategy = make_strategy("random");
  TuneOptions options;
  options.budget.stagnation = 12;
  const TuneSummary s = tune(instance, backend, store, *strategy, options, nullptr);
  EXPECT_TRUE(s.stagnated);
  EXPECT_LT(s.trials, 274u);
  EXPECT_EQ(summary_json(s).at("stagnated"), true);
  StagnationWatch watch(12);
  std::uint64_t told = 0, stagnant_at = 0;
  for (const TrialRecord& trial : store.trials_of_run(s.run_id)) {
    if (trial.kind != TrialKind::kSearch) continue;  // the finalists' re-timing
    ++told;
    watch.tell(trial.status == TrialStatus::kOk && !trial.cut ? trial.time_ms : std::nan(""),
               trial.time_spread);
    if (watch.stagnant() && stagnant_at == 0) stagnant_at = told;
  }
  EXPECT_EQ(told, s.trials);
  ASSERT_GT(stagnant_at, 12u);
  // What was already in flight when it stopped is kept (the replay backend has one at a time).
  EXPECT_LE(s.trials - stagnant_at, backend.pipeline_depth());
  // A window of 0 never stops: the whole space.
  Store whole = Store::open(dir_ / "whole.db");
  auto again = make_strategy("random");
  options.budget.stagnation = 0;
  const TuneSummary w = tune(instance, backend, whole, *again, options, nullptr);
  EXPECT_FALSE(w.stagnated);
  EXPECT_EQ(w.trials, 274u);
}

TEST_F(ReplayTuning, ADatabaseRecordingMustBeUnambiguous) {
  Store store = Store::open(dir_ / "two.db");
  for (const char* name : {"pnpoly_small.json.gz", "dedispersion_MI250X_small.json"}) {
    auto r = std::make_shared<Recording>(read_kt_cache(fixture(name)));
    const ReplayTarget t = replay_target(*r, nullptr);
    const KernelInstance instance(t.kernel, t.problem, t.limits);
    ReplayBackend backend(r);
    auto strategy = make_strategy("random");
    TuneOptions options;
    options.budget.evaluations = 10;
    tune(instance, backend, store, *strategy, options, nullptr);
  }
  const std::string db = (dir_ / "two.db").string();
  expect_error(ErrorKind::kUsage, {"2 recordings match", "cn_pnpoly", "dedispersion_kernel"},
               [&] { read_db_recording(db, {}); });
  expect_error(ErrorKind::kUsage, {"no runs of kernel 'nope'"}, [&] {
    read_db_recording(db, {"nope", {}, ""});
  });
  const Recording p = read_db_recording(db, {"cn_pnpoly", {}, ""});
  EXPECT_EQ(p.trials.size(), 10u);
  EXPECT_EQ(p.problem_key(), "problem_size=20000000");
  expect_error(ErrorKind::kUsage, {"no runs"}, [&] {
    read_db_recording(db, {"cn_pnpoly", {{"problem_size", 5}}, ""});
  });
}

TEST_F(ReplayTuning, TuneThroughTheBinaryWithASynthesizedKernel) {
  const auto run = [&](const std::vector<std::string>& args,
                       const std::map<std::string, std::optional<std::string>>& env = {}) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache", env);
  };
  const std::string conv = fixture("convolution_A100_small.json.gz");
  auto r = run({"tune", "--backend", "replay", "--replay", conv, "--strategy", "random",
                "--budget-evals", "40", "--db", "x.db", "--progress", "always"});
  ASSERT_EQ(r.code, 0) << r;
  // Without a terminal: plain progress lines (the first at once), then the re-timing's.
  EXPECT_TRUE(contains(r.err, "progress [1/40] ")) << r;
  EXPECT_TRUE(contains(r.err, "progress [40/40] re-timing 5 finalists\n")) << r;
  EXPECT_FALSE(contains(r.err, "\x1b[")) << r;
  EXPECT_TRUE(contains(r.err, "note: restrictions of convolution_kernel from")) << r;
  EXPECT_TRUE(contains(
      r.err,
      "replaying convolution_kernel [problem_size_x=4096,problem_size_y=4096] as measured on "
      "NVIDIA A100-PCIE-40GB"))
      << r;
  EXPECT_FALSE(contains(r.err, "not in the recording")) << r;
  EXPECT_TRUE(contains(r.out, "run 1 finished: 40 trials (40 measured, ")) << r;
  EXPECT_TRUE(contains(r.out, " of them cut early, 0 from the database)")) << r;
  EXPECT_TRUE(contains(r.out, "replayed   from " + conv)) << r;
  {
    Store store = Store::open(dir_ / "x.db", Store::Mode::kReadOnly);
    ASSERT_EQ(store.runs().size(), 1u);
    EXPECT_EQ(store.runs()[0].backend, "replay");
    EXPECT_EQ(store.kernel(store.runs()[0].kernel_id)->name, "convolution_kernel");
    // The finalists were re-timed; a replay has no GPU to hold under a sustained load.
    const nlohmann::json summary = nlohmann::json::parse(store.runs()[0].summary);
    EXPECT_EQ(summary.at("retime").at("finalists"), 5) << summary.dump();
    EXPECT_EQ(summary.at("retime").at("sustain_seconds"), 0.0) << summary.dump();
  }
  // The same seed again: every trial answered from the database.
  r = run({"tune", "convolution_kernel", "--replay", conv, "--strategy", "random", "--budget-evals",
           "40", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "40 trials (0 measured, 40 from the database)")) << r;
  // A kernel known only from a recording exports like any other.
  r = run({"export", "convolution_kernel", "--kt-cache", "conv.json", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  const Recording back = read_kt_cache((dir_ / "conv.json").string());
  EXPECT_EQ(back.trials.size(), 40u);
  EXPECT_EQ(back.problem_key(), "problem_size_x=4096,problem_size_y=4096");
  const Recording original = read_kt_cache(conv);
  for (const auto& t : back.trials) {
    const RecordedTrial* o = original.find(t.values);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->status, t.status);
    // A trial the early cut-off stopped has the recording's first samples.
    const std::size_t n = t.cut ? MeasureOptions::kCutoffSamples : o->samples_ms.size();
    EXPECT_EQ(std::vector<double>(o->samples_ms.begin(), o->samples_ms.begin() + n), t.samples_ms);
  }
  // `best` and `report` know a kernel that only the database knows.
  r = run({"best", "convolution_kernel", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out,
                       "convolution_kernel [problem_size_x=4096,problem_size_y=4096] on "
                       "NVIDIA A100-PCIE-40GB"))
      << r;
  r = run({"best", "convolution_kernel", "--problem", "problem_size_x=8", "--db", "x.db"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "no best configuration of convolution_kernel")) << r;
  r = run({"best", "no_such_kernel", "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown kernel 'no_such_kernel': not registered and not in")) << r;
  r = run({"report", "--db", "x.db", "--kernel", "convolution_kernel"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "convolution_kernel")) << r;
  // A recording of another kernel than the one named is refused.
  r = run({"tune", "reduce", "--replay", conv, "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "holds measurements of kernel 'convolution_kernel', not 'reduce'"))
      << r;
}

// `best`, `report` and `export` of a kernel that only the database knows (replayed from a Kernel
// Tuner cache of CLBlast's Xgemm): its problem parameters come from the stored spec, a name
// that is neither registered nor stored is refused naming what the database holds, and a
// replayed best is never exported for the run-time client.
TEST_F(ReplayTuning, BestReportAndExportServeAKernelOnlyTheDatabaseKnows) {
  const auto run = [&](const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  };
  auto r = run({"tune", "--replay", fixture("gemm_small.json"), "--strategy", "brute_force", "--db",
                "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  const std::string key = "problem_size_x=4096,problem_size_y=4096";
  r = run({"best", "Xgemm", "--db", "x.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const auto best = nlohmann::json::parse(r.out);
  EXPECT_EQ(best.at("problem"), key);
  ASSERT_EQ(best.at("results").size(), 1u);
  EXPECT_EQ(best.at("results").at(0).at("device"), "NVIDIA GeForce RTX 3090");
  r = run({"best", "Xgemm", "-p", "problem_size_y=4096", "--arch", "sm_86", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "Xgemm [" + key + "] on NVIDIA GeForce RTX 3090 (sm_86)")) << r;
  r = run({"report", "Xgemm", "--db", "x.db", "--format", "md"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "Xgemm")) << r;
  r = run({"export", "Xgemm", "-p", "problem_size_x=4096", "--kt-cache", "g.json", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(read_kt_cache((dir_ / "g.json").string()).trials.size(), 65u);
  // Problem names are checked against the stored kernel's, as a registered kernel's are.
  r = run({"export", "Xgemm", "-p", "n=4096", "--kt-cache", "g.json", "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err,
                       "Xgemm: unknown problem parameter 'n'; known: problem_size_x, "
                       "problem_size_y"))
      << r;
  // The best was replayed: it never answers the client, so the header holds no table, and
  // says why.
  r = run({"export", "Xgemm", "--header", "g.h", "--best-json", "g-best.json", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err,
                       "note: x.db holds no best configuration of Xgemm that answers the "
                       "run-time client"))
      << r;
  EXPECT_FALSE(contains(test::read_file(dir_ / "g.h"), "Xgemm"));
  EXPECT_TRUE(nlohmann::json::parse(test::read_file(dir_ / "g-best.json")).at("kernels").empty());

  // Neither registered nor stored: every command says so and names what the database holds.
  const std::string held =
      "unknown kernel 'Xgem': not registered and not in x.db; it holds Xgemm "
      "(1 run)";
  for (const std::vector<std::string>& args : {std::vector<std::string>{"best", "Xgem"},
                                               {"export", "Xgem", "--kt-cache", "n.json"},
                                               {"export", "Xgem", "--header", "n.h"},
                                               {"export", "Xgem", "--best-json", "n.json"}}) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--db", "x.db"});
    r = run(full);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(contains(r.err, held)) << r;
  }
  EXPECT_FALSE(fs::exists(dir_ / "n.h"));
  EXPECT_FALSE(fs::exists(dir_ / "n.json"));
  r = run({"report", "Xgem", "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "it holds Xgemm (1 run)")) << r;
  // A registered kernel the database does not hold behaves as before.
  r = run({"best", "reduce", "--db", "x.db"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "no best configuration of reduce")) << r;
  r = run({"export", "reduce", "--kt-cache", "n.json", "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "no runs of kernel 'reduce'")) << r;
}

// A kernel version written through the Store API with a spec that lists no problem parameters:
// `best` takes them from the stored problem key, in its order.
TEST_F(ReplayTuning, BestOfAStoredKernelWithoutProblemParametersUsesItsProblemKey) {
  {
    Store store = Store::open(dir_ / "lib.db");
    RunRecord run;
    run.kernel_id = store.upsert_kernel(KernelRecord{0, "lib_kernel", "s", "p", "", "",
                                                     R"({"parameters": [{"name": "bs", )"
                                                     R"("values": ["32", "64"]}]})"});
    run.device_id = store.upsert_device(DeviceRecord{{"GPU", "sm_90", 9, 0, 1, 1}, 0, 1, 0, ""});
    run.problem_id =
        store.upsert_problem(ProblemRecord{0, "lib_kernel", "n=8,m=4", R"({"m": 4, "n": 8})"});
    run.backend = "cuda";
    run.strategy = "brute_force";
    const std::int64_t run_id = store.begin_run(run);
    TrialRecord t;
    t.run_id = run_id;
    t.kernel_id = run.kernel_id;
    t.device_id = run.device_id;
    t.problem_id = run.problem_id;
    t.config_key = "bs=64";
    t.config_json = R"({"bs": 64})";
    t.time_ms = t.time_min_ms = t.time_mean_ms = 1.25;
    t.sample_count = 1;
    t.samples_ms = {1.25};
    t.gbps = t.gflops = NAN;
    store.set_best(store.add_trial(t));
    store.finish_run(run_id, RunStatus::kFinished, "{}");
  }
  auto r = test::run_ktune({"best", "lib_kernel", "--db", "lib.db"}, dir_.path(), dir_ / "cache");
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "lib_kernel [n=8,m=4] on GPU (sm_90)\n  bs=64\n  1.2500 ms")) << r;
  r = test::run_ktune({"best", "lib_kernel", "-p", "m=4", "--db", "lib.db"}, dir_.path(),
                      dir_ / "cache");
  EXPECT_EQ(r.code, 0) << r;
  r = test::run_ktune({"best", "lib_kernel", "-p", "m=5", "--db", "lib.db"}, dir_.path(),
                      dir_ / "cache");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "no best configuration of lib_kernel for [n=8,m=5]")) << r;
}

TEST_F(ReplayTuning, ARecordingOfAnotherKernelVersionTunesOverItsOwnConfigurations) {
  // An older convolution_kernel without use_shmem, which the shipped replay job's restrictions
  // name: `tune --replay` and `bench-strategies` both search exactly the recorded configurations
  // and say why.
  const auto run = [&](const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  };
  const std::string old = fixture("convolution_no_shmem_small.json");
  const Recording recording = read_kt_cache(old);
  const std::string note = "configs/replay/convolution_kernel.toml does not fit this recording (";
  auto r = run({"tune", "--replay", old, "--budget-evals", "500", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, "note: " + old + ": the replay job ")) << r;
  EXPECT_TRUE(contains(r.err, note)) << r;
  EXPECT_TRUE(contains(r.err, "restriction 3: expression 'use_padding == 0 or use_shmem != 0'"))
      << r;
  EXPECT_TRUE(contains(r.err, "unknown name 'use_shmem'")) << r;
  EXPECT_TRUE(contains(r.err, "its 170 recorded configurations define the space")) << r;
  EXPECT_TRUE(contains(r.out, "170 trials (170 measured")) << r;
  EXPECT_FALSE(contains(r.err, "not in the recording")) << r;
  // Every trial is a recorded configuration with its recorded outcome, the best the optimum.
  r = run({"export", "convolution_kernel", "--kt-cache", "back.json", "--db", "x.db"});
  ASSERT_EQ(r.code, 0) << r;
  const Recording back = read_kt_cache((dir_ / "back.json").string());
  ASSERT_EQ(back.trials.size(), recording.trials.size());
  double optimum = INFINITY;
  for (const auto& t : recording.trials)
    if (t.status == TrialStatus::kOk) optimum = std::min(optimum, t.time_ms);
  for (const auto& t : back.trials) {
    const RecordedTrial* o = recording.find(t.values);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->status, t.status);
  }
  r = run({"best", "convolution_kernel", "--db", "x.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out).at("results").at(0).at("time_ms"), optimum);

  r = run({"bench-strategies", "--strategies", "random", "--seeds", "2", "--budgets", "10",
           "--replay", old, "-o", "bench.json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, note)) << r;
  EXPECT_TRUE(contains(r.err, "unknown name 'use_shmem'")) << r;
  EXPECT_FALSE(contains(r.err, "not in the recording")) << r;
  EXPECT_FALSE(contains(r.err, "outside the space")) << r;
  const auto space = nlohmann::json::parse(test::read_file(dir_ / "bench.json")).at("spaces").at(0);
  EXPECT_EQ(space.at("configs"), recording.trials.size());
  EXPECT_EQ(space.at("ok"), recording.count(TrialStatus::kOk));
  EXPECT_DOUBLE_EQ(space.at("optimum_ms").get<double>(), optimum);
}

TEST_F(ReplayTuning, AKernelKnownOnlyFromAShippedRecordingIsReplayed) {
  const auto run = [&](const std::vector<std::string>& args,
                       const std::map<std::string, std::optional<std::string>>& env = {}) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache", env);
  };
  fs::create_directories(dir_ / "recs");
  fs::copy_file(fixture("pnpoly_small.json.gz"),
                dir_ / "recs" / "cn_pnpoly-Laptop-problem_size=20000000.json.gz");
  const std::map<std::string, std::optional<std::string>> env = {
      {"KTUNE_RECORDINGS", (dir_ / "recs").string()}};
  auto r = run({"tune", "cn_pnpoly", "--db", "p.db"}, env);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(
      r.err,
      "note: cn_pnpoly is known to ktune only from recorded measurements; replaying recorded "
      "measurements from " +
          (dir_ / "recs").string()))
      << r;
  EXPECT_TRUE(contains(r.out, "72 trials")) << r;
  EXPECT_TRUE(contains(r.out, "between_method=0,block_size_x=512,tile_size=20,use_method=0")) << r;
  // Not shipped: an unknown kernel, as before.
  r = run({"tune", "cn_pnpoly", "--db", "p.db"}, {{"KTUNE_RECORDINGS", (dir_ / "cache").string()}});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown kernel 'cn_pnpoly'")) << r;
}

// The README's main command on a machine without a GPU: the job's recording ships with ktune,
// so the tune replays it, says so, and stores a best.
TEST_F(ReplayTuning, TheReadmeJobReplaysItsShippedRecordingWithoutAGpu) {
  const auto run = [&](const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache", {{"KTUNE_RECORDINGS", std::nullopt}});
  };
  if (run({"devices"}).code == 0) GTEST_SKIP() << "a GPU is present: the job tunes on it";
  const std::string job = std::string(KTUNE_SOURCE_DIR) + "/configs/reduce.toml";
  auto r = run({"tune", "--config", job, "--db", "readme.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, "replaying recorded measurements from")) << r;
  EXPECT_TRUE(contains(r.err, "reduce-NVIDIA_H100_80GB_HBM3-n=268435456.json.gz")) << r;
  EXPECT_TRUE(contains(r.out, "5874 trials")) << r;
  r = run({"best", "reduce", "--problem", "n=2**28", "--db", "readme.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "variant=8")) << r;
  // --backend cuda insists on a GPU.
  r = run({"tune", "--config", job, "--db", "readme.db", "--backend", "cuda"});
  EXPECT_NE(r.code, 0) << r;
}

TEST(ReplayData, OfSeveralShippedRecordingsTheOneWithTheMostConfigurationsIsReplayed) {
  // stencil3d at 512^3 ships from an H100 (306 configurations, before the vector variant) and an
  // H200 (408): the H200 one covers today's space and is chosen, though it sorts second.
  TempDir dir;
  const fs::path shipped = fs::path(KTUNE_SOURCE_DIR) / "db" / "recordings";
  const std::string problem = "nx=512,ny=512,nz=512";
  fs::copy_file(shipped / ("stencil3d-NVIDIA_H100_80GB_HBM3-" + problem + ".json.gz"),
                dir.path() / ("stencil3d-A-" + problem + ".json.gz"));
  fs::copy_file(shipped / ("stencil3d-NVIDIA_H200-" + problem + ".json.gz"),
                dir.path() / ("stencil3d-B-" + problem + ".json.gz"));
  ASSERT_EQ(setenv("KTUNE_RECORDINGS", dir.path().c_str(), 1), 0);
  const auto found = find_shipped_recording("stencil3d", problem);
  const auto any_problem = find_shipped_recording("stencil3d", std::nullopt);
  const auto other = find_shipped_recording("stencil3d", "nx=64,ny=64,nz=64");
  unsetenv("KTUNE_RECORDINGS");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->filename().string(), "stencil3d-B-" + problem + ".json.gz");
  ASSERT_TRUE(any_problem.has_value());
  EXPECT_EQ(any_problem->filename(), found->filename());
  EXPECT_FALSE(other.has_value());
}

TEST(ReplayData, ShippedRecordingsFollowTheNamingAndAreListed) {
  const fs::path dir = fs::path(KTUNE_SOURCE_DIR) / "db" / "recordings";
  const std::string readme = test::read_file(dir / "README.md");
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 8 || name.compare(name.size() - 8, 8, ".json.gz") != 0) continue;
    ++files;
    SCOPED_TRACE(name);
    EXPECT_TRUE(contains(readme, name)) << "db/recordings/README.md does not describe " << name;
    const Recording r = read_kt_cache(e.path().string());
    EXPECT_EQ(name, recording_file_name(r.kernel_name, r.device_name, r.problem_key()));
  }
  EXPECT_GE(files, 1u);
  // The recordings of several sizes of one kernel (sizes/, described by a table) are read and
  // named alike.
  std::size_t sized = 0;
  for (const auto& e : fs::directory_iterator(dir / "sizes")) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    const Recording r = read_kt_cache(e.path().string());
    EXPECT_EQ(name, recording_file_name(r.kernel_name, r.device_name, r.problem_key()));
    ++sized;
  }
  EXPECT_EQ(sized, 18u);
}

}  // namespace
}  // namespace ktune
