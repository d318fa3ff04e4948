// The CUDA backend's pipe protocol: every message survives the trip through JSON, field by field,
// so the tuner and its worker process agree on what a measurement says.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/protocol.h"
#include "ktune/error.h"

namespace ktune::protocol {
namespace {

TEST(WorkerProtocol, AMeasurementRoundTrips) {
  Measurement m;
  m.status = TrialStatus::kOk;
  m.samples_ms = {0.5, 0.25, 0.75};
  m.time_ms = 0.5;
  m.time_min_ms = 0.25;
  m.time_mean_ms = 0.5;
  m.time_spread = 0.1;
  m.registers = 32;
  m.local_bytes = 0;
  m.static_shared_bytes = 1024;
  m.dynamic_shared_bytes = 2048;
  m.max_threads_per_block = 1024;
  m.occupancy = 0.75;
  m.l2_flushed = 1;
  m.launches_per_sample = 4;
  m.gpu_ms = 3;
  m.timed_ms = 2;
  m.eval_ms = 7;
  m.phases_ms = {{"load", 1.5}, {"time", 2.5}};
  m.sm_clock_mhz = 1755;
  m.max_sm_clock_mhz = 1980;
  m.temperature_c = 52;
  m.clock_reasons = 0x24;
  const Measurement back = measurement_from_json(nlohmann::json::parse(to_json(m).dump()));
  EXPECT_EQ(back.status, m.status);
  EXPECT_EQ(back.samples_ms, m.samples_ms);
  EXPECT_EQ(back.time_ms, m.time_ms);
  EXPECT_EQ(back.time_min_ms, m.time_min_ms);
  EXPECT_EQ(back.time_mean_ms, m.time_mean_ms);
  EXPECT_EQ(back.time_spread, m.time_spread);
  EXPECT_EQ(back.registers, 32);
  EXPECT_EQ(back.static_shared_bytes, 1024);
  EXPECT_EQ(back.dynamic_shared_bytes, 2048);
  EXPECT_EQ(back.max_threads_per_block, 1024);
  EXPECT_EQ(back.occupancy, 0.75);
  EXPECT_EQ(back.l2_flushed, 1);
  EXPECT_EQ(back.launches_per_sample, 4);
  EXPECT_EQ(back.gpu_ms, 3);
  EXPECT_EQ(back.timed_ms, 2);
  EXPECT_EQ(back.eval_ms, 7);
  EXPECT_EQ(back.phases_ms, m.phases_ms);
  EXPECT_EQ(back.sm_clock_mhz, 1755);
  EXPECT_EQ(back.max_sm_clock_mhz, 1980);
  EXPECT_EQ(back.temperature_c, 52);
  EXPECT_EQ(back.clock_reasons, 0x24u);
  EXPECT_TRUE(std::isnan(back.rank_ms));  // a search trial's: nothing ranked apart
  m.rank_ms = 0.45;                       // a re-timing's
  EXPECT_EQ(measurement_from_json(to_json(m)).rank_ms, 0.45);

  Measurement failed;
  failed.status = TrialStatus::kWrongResult;
  failed.error = "out[3] = 1, expected 2";
  const Measurement f = measurement_from_json(to_json(failed));
  EXPECT_EQ(f.status, TrialStatus::kWrongResult);
  EXPECT_EQ(f.error, failed.error);
  EXPECT_TRUE(f.samples_ms.empty());
  // A reply the tuner cannot read is a crash, never an ok trial.
  EXPECT_EQ(measurement_from_json(nlohmann::json::object()).status, TrialStatus::kCrashed);
}

TEST(WorkerProtocol, TheInitCarriesTheSpaceAsTunedAndTheMeasurement) {
  WorkerInit init;
  init.kernel = "reduce";
  Parameter p;
  p.name = "layout";
  p.values = {Value("soa"), Value(2), Value(0.5)};
  p.default_index = 2;
  init.params = {p};
  init.restrictions = {"layout != 'soa' or 1 == 1"};
  init.problem = {{"n", 1 << 20}};
  init.plugins = {"/x/y.so"};
  init.device = 1;
  init.measure.samples = 7;
  init.measure.flush_l2 = FlushL2::kNever;
  init.measure.seed = 42;
  init.measure.timeout_seconds = 3;
  init.measure.sustain_ms = 250;
  init.measure.verify_on_device = false;
  init.measure.fetch_outputs = {"out", "hist"};
  const WorkerInit back = worker_init_from_json(nlohmann::json::parse(to_json(init).dump()));
  EXPECT_EQ(back.kernel, "reduce");
  ASSERT_EQ(back.params.size(), 1u);
  EXPECT_EQ(back.params[0].name, "layout");
  EXPECT_EQ(back.params[0].values, p.values);
  EXPECT_TRUE(back.params[0].values[0].is_string());
  EXPECT_TRUE(back.params[0].values[2].is_double());
  EXPECT_EQ(back.params[0].default_index, 2u);
  EXPECT_EQ(back.restrictions, init.restrictions);
  EXPECT_EQ(back.problem, init.problem);
  EXPECT_EQ(back.plugins, init.plugins);
  EXPECT_EQ(back.device, 1);
  EXPECT_EQ(back.measure.samples, 7);
  EXPECT_EQ(back.measure.flush_l2, FlushL2::kNever);
  EXPECT_EQ(back.measure.seed, 42u);
  EXPECT_EQ(back.measure.timeout_seconds, 3);
  EXPECT_EQ(back.measure.sustain_ms, 250);
  EXPECT_FALSE(back.measure.verify_on_device);
  EXPECT_EQ(back.measure.fetch_outputs, init.measure.fetch_outputs);
}

// Fetched outputs (Kernel Tuner's verify) travel as the reply's blob, in the header's order.
TEST(WorkerProtocol, FetchedOutputsTravelAsTheReplysData) {
  Measurement m;
  m.outputs = {{"b", std::string("\x01\x02\x03", 3)}, {"a", std::string(5, '\0')}};
  const nlohmann::json header = nlohmann::json::parse(to_json(m).dump());
  const std::string blob = outputs_blob(m);
  EXPECT_EQ(blob.size(), 8u);
  const Measurement back = measurement_from_message(header, blob);
  EXPECT_EQ(back.outputs, m.outputs);
  EXPECT_TRUE(measurement_from_message(to_json(Measurement{}), "").outputs.empty());
  // A header that promises more than was sent is the tuner's error, not a silent truncation.
  EXPECT_THROW(measurement_from_message(header, blob.substr(0, 7)), ktune::Error);
}

TEST(WorkerProtocol, RequestsAndRetimeRepliesRoundTrip) {
  Request r = request_from_json(to_json(EvaluateRequest{"block_size=256", "_Z6reducev"}));
  EXPECT_EQ(r.op, Request::Op::kEvaluate);
  EXPECT_EQ(r.evaluate.config, "block_size=256");
  EXPECT_EQ(r.evaluate.lowered_name, "_Z6reducev");
  RetimeRequest retime;
  retime.rounds = 3;
  retime.candidates = {{"a=1", "_Za", 10}, {"a=2", "_Zb", 20}};
  r = request_from_json(to_json(retime));
  EXPECT_EQ(r.op, Request::Op::kRetime);
  EXPECT_EQ(r.retime.rounds, 3);
  ASSERT_EQ(r.retime.candidates.size(), 2u);
  EXPECT_EQ(r.retime.candidates[1].config, "a=2");
  EXPECT_EQ(r.retime.candidates[1].size, 20u);
  EXPECT_EQ(request_from_json({{"op", "quit"}}).op, Request::Op::kQuit);
  const Request unknown = request_from_json({{"op", "dance"}});
  EXPECT_EQ(unknown.op, Request::Op::kUnknown);
  EXPECT_EQ(unknown.name, "dance");

  RetimeReply reply;
  reply.gpu_ms = 4;
  reply.results.resize(2);
  reply.results[1].time_ms = 0.5;
  const RetimeReply back = retime_reply_from_json(to_json(reply));
  EXPECT_TRUE(back.error.empty());
  EXPECT_EQ(back.gpu_ms, 4);
  ASSERT_EQ(back.results.size(), 2u);
  EXPECT_EQ(back.results[1].time_ms, 0.5);
  RetimeReply error;
  error.error = "cudaErrorIllegalAddress";
  EXPECT_EQ(retime_reply_from_json(to_json(error)).error, error.error);
}

}  // namespace
}  // namespace ktune::protocol

#include "backends/cuda/device_compare.h"
#include "cli_test_util.h"

namespace ktune::worker {
namespace {

// The kernels that check outputs, count poison and make inputs on the GPU compile with this
// NVRTC for the GPUs ktune targets (loading and running them is the GPU tests' part).
TEST(DeviceCompare, TheComparisonKernelsCompileForEveryTargetArchitecture) {
  for (const char* arch : {"sm_80", "sm_89", "sm_90"}) {
    const CompileResult r =
        ktune::compile(compare_program::request(arch, DeviceCompare::Needs::all()));
    EXPECT_TRUE(r.ok) << arch << ": " << r.error << "\n" << r.log;
    EXPECT_FALSE(r.cubin.empty()) << arch;
    for (const char* name : {"ktune_compare_f32", "ktune_count_equal8", "ktune_fill_i8",
                             "ktune_fill_u64", "ktune_fill_f32", "ktune_fill_f64"})
      EXPECT_NE(r.cubin.find(name), std::string::npos) << arch << ": " << name;
  }
  // A program of what a worker's buffers need: copy's, float32 compared and made.
  DeviceCompare::Needs copy;
  copy.compared = {ElemType::kF32};
  copy.filled = {ElemType::kF32};
  const CompileResult r = ktune::compile(compare_program::request("sm_90", copy));
  ASSERT_TRUE(r.ok) << r.error << "\n" << r.log;
  for (const char* name : {"ktune_compare_f32", "ktune_count_equal4", "ktune_fill_f32"})
    EXPECT_NE(r.cubin.find(name), std::string::npos) << name;
  for (const char* name : {"ktune_compare_f64", "ktune_count_equal8", "ktune_fill_i8"})
    EXPECT_EQ(r.cubin.find(name), std::string::npos) << name;
  // Equal needs in another order: the same program (one compile-cache entry).
  DeviceCompare::Needs twice;
  twice.compared = {ElemType::kF32, ElemType::kF32};
  twice.filled = {ElemType::kF32};
  EXPECT_EQ(DeviceCompare::source(twice), DeviceCompare::source(copy));
}

// The build compiled the whole program for the lowest architecture of each major version NVRTC
// supports; a worker takes the one its GPU runs (same major version, minor not above the GPU's)
// and NVRTC's compilation, byte for byte the same, only where none fits or it is asked for.
TEST(DeviceCompare, AWorkerTakesTheCubinTheBuildCompiled) {
  ASSERT_FALSE(compare_program::embedded_cubins().empty());
  EXPECT_EQ(compare_program::embedded_source_hash(), compare_program::source_hash());
  test::EnvGuard cache("KTUNE_CACHE_DIR", ::testing::TempDir());
  const std::string_view sm90 = compare_program::embedded_cubin("sm_90");
  const std::string_view sm80 = compare_program::embedded_cubin("sm_80");
  ASSERT_FALSE(sm90.empty());
  ASSERT_FALSE(sm80.empty());
  EXPECT_EQ(compare_program::embedded_cubin("sm_89"), sm80);  // 8.0's CUBIN runs on 8.9
  EXPECT_EQ(compare_program::embedded_cubin("sm_86"), sm80);
  EXPECT_NE(sm90, sm80);
  EXPECT_TRUE(compare_program::embedded_cubin("sm_70").empty());  // older than any build's
  EXPECT_TRUE(compare_program::embedded_cubin("compute_90").empty());
  // What compile() gives: the embedded bytes, every kernel whatever the needs.
  DeviceCompare::Needs copy;
  copy.compared = {ElemType::kF32};
  const CompileResult embedded = DeviceCompare::compile("sm_90", copy);
  ASSERT_TRUE(embedded.ok);
  EXPECT_EQ(embedded.cubin, sm90);
  EXPECT_NE(embedded.cubin.find("ktune_fill_f64"), std::string::npos);
  // NVRTC's own compilation of the whole program is the same CUBIN.
  const CompileResult nvrtc =
      ktune::compile(compare_program::request("sm_90", DeviceCompare::Needs::all()));
  ASSERT_TRUE(nvrtc.ok) << nvrtc.error;
  EXPECT_TRUE(nvrtc.cubin == sm90)
      << "NVRTC made " << nvrtc.cubin.size() << " bytes, the build " << sm90.size();
  // Where the build made none (compile_needs): compiled now, for the needs only.
  const CompileResult compiled = DeviceCompare::compile_needs("sm_90", copy);
  ASSERT_TRUE(compiled.ok) << compiled.error;
  EXPECT_NE(compiled.cubin, embedded.cubin);
  EXPECT_EQ(compiled.cubin.find("ktune_fill_f64"), std::string::npos);
}

}  // namespace
}  // namespace ktune::worker
