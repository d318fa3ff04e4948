// Kernels and helpers shared by the compile tests: small templated sources, NVRTC options
// as render() would produce them, and a temporary directory per test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ktune/compiler.h"

namespace ktune::test {

// A block reduction with a __shared__ array of BLOCK_SIZE ints, so static smem is 4 * B.
inline constexpr const char* kReduceTemplate = R"(
template <int B>
__global__ void reduce(const int* in, int* out, unsigned n) {
  __shared__ int partial[B];
  unsigned i = blockIdx.x * B + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = B / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

__global__ void other(float* x) { x[threadIdx.x] *= 2.0f; }
)";

inline std::vector<std::string> options_for(const std::string& arch,
                                            std::vector<std::string> extra = {}) {
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "-std=c++17",
                                      "--ptxas-options=-v"};
  options.insert(options.end(), extra.begin(), extra.end());
  return options;
}

// The reduce kernel for one block size, the way a config is rendered: a #define, then the text.
inline CompileRequest reduce_request(int block_size, const std::string& arch = "sm_90",
                                     std::vector<std::string> extra = {}) {
  CompileRequest request;
  request.source = "#define BLOCK_SIZE " + std::to_string(block_size) + "\n" + kReduceTemplate;
  request.source_name = "reduce.cu";
  request.entry = "reduce<BLOCK_SIZE>";
  request.options = options_for(arch, std::move(extra));
  request.arch = arch;
  return request;
}

inline std::string reduce_lowered_name(int block_size) {
  return "_Z6reduceILi" + std::to_string(block_size) + "EEvPKiPij";
}

// A fresh directory under the system temp dir, removed with the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("ktune-compile-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

}  // namespace ktune::test
