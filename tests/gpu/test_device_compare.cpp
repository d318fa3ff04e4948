// The comparison kernels on the GPU (backends/cuda/device_compare.h): every element type, the
// 16-byte bulk and the element-wise rest, unaligned buffers, tolerances, NaN and Inf; the inputs
// made there, bit for bit the host's; the poison counted there.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_compare.h"
#include "backends/cuda/inputs.h"
#include "ktune/kernel.h"

namespace ktune::worker {
namespace {

class DeviceCompareGpu : public ::testing::Test {
 public:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    compare_ = std::make_unique<DeviceCompare>("sm_" + std::to_string(prop.major * 10 + prop.minor),
                                               nullptr);
  }
  void TearDown() override {
    for (void* p : allocations_) cudaFree(p);
  }
  // A device copy of `bytes`, `offset` bytes past a 256-byte aligned allocation.
  void* upload(const void* bytes, std::size_t size, std::size_t offset = 0) {
    char* p = nullptr;
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), size + offset + 16), cudaSuccess);
    allocations_.push_back(p);
    EXPECT_EQ(cudaMemcpy(p + offset, bytes, size, cudaMemcpyHostToDevice), cudaSuccess);
    return p + offset;
  }
  template <typename T>
  DeviceCompare::Summary run(ElemType type, const std::vector<T>& got, const std::vector<T>& want,
                             std::size_t offset = 0, double abs_tol = 0, double rel_tol = 0) {
    const std::size_t size = got.size() * sizeof(T);
    return compare_->compare(type, upload(got.data(), size, offset),
                             upload(want.data(), size, offset), got.size(), abs_tol, rel_tol);
  }
  std::unique_ptr<DeviceCompare> compare_;
  std::vector<void*> allocations_;
};

// Differences planted in the 16-byte bulk and in the rest are all counted, the first is found.
template <typename T>
void expect_planted(DeviceCompareGpu& t, ElemType type, std::size_t offset) {
  const std::size_t n = 1000003;  // not a multiple of any word's element count
  std::vector<T> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<T>(i * 2654435761u);
  std::vector<T> got = want;
  EXPECT_EQ(t.run(type, got, want, offset).count, 0u) << sizeof(T) << " bytes, offset " << offset;
  for (std::size_t i : {std::size_t{17}, std::size_t{4097}, std::size_t{999999}, n - 1})
    got[i] = static_cast<T>(got[i] + 1);
  const DeviceCompare::Summary s = t.run(type, got, want, offset);
  EXPECT_EQ(s.count, 4u) << sizeof(T) << " bytes, offset " << offset;
  EXPECT_EQ(s.first, 17u) << sizeof(T) << " bytes, offset " << offset;
}

TEST_F(DeviceCompareGpu, CountsEveryDifferenceOfEveryIntegerSize) {
  for (std::size_t offset : {std::size_t{0}, std::size_t{8}}) {
    expect_planted<std::uint8_t>(*this, ElemType::kU8, offset);
    expect_planted<std::uint16_t>(*this, ElemType::kU16, offset);
    expect_planted<std::uint32_t>(*this, ElemType::kU32, offset);
    expect_planted<std::uint64_t>(*this, ElemType::kU64, offset);
  }
}

TEST_F(DeviceCompareGpu, AFirstDifferenceInsideAWordIsItsOwnIndex) {
  std::vector<std::uint8_t> want(64, 7), got(64, 7);
  got[21] = 8;  // the sixth byte of the second 16-byte word
  got[22] = 9;
  const DeviceCompare::Summary s = run(ElemType::kU8, got, want);
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.first, 21u);
}

TEST_F(DeviceCompareGpu, FloatsWithinToleranceOnlyAndNeverNanOrInf) {
  for (std::size_t offset : {std::size_t{0}, std::size_t{4}}) {
    std::vector<float> want(100001, 1.0f), got = want;
    got[5] = 1.0f + 1e-6f;  // within 1e-5 relative
    EXPECT_EQ(run(ElemType::kF32, got, want, offset, 0, 1e-5).count, 0u);
    got[70001] = 1.1f;
    got[90000] = std::numeric_limits<float>::quiet_NaN();
    got[100000] = std::numeric_limits<float>::infinity();
    const DeviceCompare::Summary s = run(ElemType::kF32, got, want, offset, 0, 1e-5);
    EXPECT_EQ(s.count, 3u) << "offset " << offset;
    EXPECT_EQ(s.first, 70001u) << "offset " << offset;
  }
  std::vector<double> want(33, 2.0), got = want;
  got[32] = std::numeric_limits<double>::quiet_NaN();
  want[32] = std::numeric_limits<double>::quiet_NaN();  // NaN never passes, even against NaN
  const DeviceCompare::Summary s = run(ElemType::kF64, got, want, 0, 1e-9, 0);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.first, 32u);
}

// The GPU makes an input as the host's fill() does, bit for bit, for every type and every kind
// it takes (inputs.h), at a count that is not a multiple of anything and from an odd address.
template <typename T>
void expect_fill_as_host(DeviceCompareGpu& t, ElemType type, const std::string& text) {
  BufferSpec spec;
  spec.name = "x";
  spec.type = type;
  spec.init = text;
  const BufferInit init = KernelSpec::parse_init(spec);
  const auto rule = device_fill(type, init);
  ASSERT_TRUE(rule) << text;
  const std::size_t n = 1000003;
  const std::uint64_t stream = mix(42) ^ mix(3);
  std::vector<T> host(n), gpu(n);
  fill(host.data(), type, n, init, stream);
  char* data = static_cast<char*>(t.upload(gpu.data(), n * sizeof(T), sizeof(T)));
  t.compare_->fill(type, data, n, *rule, stream);
  ASSERT_EQ(cudaMemcpy(gpu.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  std::size_t differ = 0, first = n;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&host[i], &gpu[i], sizeof(T)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << to_string(type) << " " << text << ": first at " << first;
}

TEST_F(DeviceCompareGpu, FillMakesTheHostsInputsBitForBit) {
  for (const std::string text :
       {"random", "random(-3, 1000)", "uniform(1e-3, 7)", "iota", "value(-1)", "value(2.5)"}) {
    expect_fill_as_host<std::int8_t>(*this, ElemType::kI8, text);
    expect_fill_as_host<std::uint8_t>(*this, ElemType::kU8, text);
    expect_fill_as_host<std::int16_t>(*this, ElemType::kI16, text);
    expect_fill_as_host<std::uint16_t>(*this, ElemType::kU16, text);
    expect_fill_as_host<std::int32_t>(*this, ElemType::kI32, text);
    expect_fill_as_host<std::uint32_t>(*this, ElemType::kU32, text);
    expect_fill_as_host<std::int64_t>(*this, ElemType::kI64, text);
    expect_fill_as_host<std::uint64_t>(*this, ElemType::kU64, text);
    expect_fill_as_host<float>(*this, ElemType::kF32, text);
    expect_fill_as_host<double>(*this, ElemType::kF64, text);
  }
}

TEST_F(DeviceCompareGpu, CountEqualFindsThePoisonInEveryElementSize) {
  std::vector<std::uint16_t> shorts(100003, 7);
  shorts[3] = shorts[70000] = shorts[100002] = 0xFFFF;
  EXPECT_EQ(
      compare_->count_equal(2, upload(shorts.data(), shorts.size() * 2, 2), shorts.size(), ~0ull),
      3u);
  std::vector<double> doubles(1001, 1.0);
  EXPECT_EQ(
      compare_->count_equal(8, upload(doubles.data(), doubles.size() * 8), doubles.size(), ~0ull),
      0u);
  std::vector<std::uint8_t> bytes(17, 0xFF);
  EXPECT_EQ(compare_->count_equal(1, upload(bytes.data(), bytes.size(), 1), bytes.size(), 0xFFull),
            17u);
}

}  // namespace
}  // namespace ktune::worker
