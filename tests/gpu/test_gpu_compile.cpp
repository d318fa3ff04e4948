// NVRTC where a CUDA driver is installed: since NVRTC 12.9 a program can come from the driver's
// compute cache, without ptxas running and so without its resource report. A program compiled
// twice in a row (alone, and as a batch) must report its registers and shared memory both times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/compile_request.h"
#include "ktune/compiler.h"
#include "ktune/device.h"

namespace ktune {
namespace {

class GpuCompile : public ::testing::Test {
 public:
  void SetUp() override {
    const DeviceQuery q = list_devices();
    if (q.devices.empty()) GTEST_SKIP() << "no CUDA device: " << q.problem;
    arch_ = q.devices.front().arch;
    // A source no earlier run has compiled, so that the first compilation is a real one.
    tag_ = std::to_string(getpid()) + "_" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  }

  CompileRequest request(int block, const std::string& group) const {
    return test::assembled_request(
        {{"BLOCK", std::to_string(block)}},
        "#line 1 \"k.cu\"\n// run " + tag_ +
            "\ntemplate <int B> __global__ void k(float* out, const float* in) {\n"
            "  __shared__ float tile[B];\n"
            "  tile[threadIdx.x] = in[blockIdx.x * B + threadIdx.x] * 2.0f;\n"
            "  __syncthreads();\n"
            "  out[blockIdx.x * B + threadIdx.x] = tile[B - 1 - threadIdx.x];\n"
            "}\n",
        "k<BLOCK>", arch_, group);
  }

  std::string arch_, tag_;
};

TEST_F(GpuCompile, ASecondCompilationOfTheSameProgramStillReportsItsResources) {
  for (int round = 1; round <= 2; ++round) {
    const CompileResult r = compile(request(128, ""));
    ASSERT_TRUE(r.ok) << r.error << r.log;
    EXPECT_GT(r.resources.registers, 0) << "round " << round << ":\n" << r.log;
    EXPECT_EQ(r.resources.static_shared_bytes, 128 * 4) << "round " << round << ":\n" << r.log;
  }
}

TEST_F(GpuCompile, ASecondCompilationOfTheSameBatchStillReportsEachEntrysResources) {
  for (int round = 1; round <= 2; ++round) {
    const std::vector<CompileResult> results = compile_batch({request(64, "g"), request(256, "g")});
    ASSERT_EQ(results.size(), 2u);
    for (std::size_t i = 0; i < results.size(); ++i) {
      ASSERT_TRUE(results[i].ok) << results[i].error << results[i].log;
      EXPECT_GT(results[i].resources.registers, 0) << "round " << round << ", entry " << i;
      EXPECT_EQ(results[i].resources.static_shared_bytes, (i == 0 ? 64 : 256) * 4)
          << "round " << round << ", entry " << i << ":\n"
          << results[i].log;
    }
    // Still one program: the batch was not taken apart to recover the reports.
    EXPECT_EQ(results[0].cubin, results[1].cubin) << "round " << round;
  }
}

}  // namespace
}  // namespace ktune
