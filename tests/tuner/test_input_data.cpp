// Input data of one's own: init texts (distributions, files, generators) parsed and refused with
// the buffer named, .npy and raw files checked against the buffer, distributions reproducible from
// the seed and shaped as asked, a plugin's generate function called with problem and seed, and
// job files / manifests that set inputs and expected files (paths relative to where written).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cuda/inputs.h"
#include "common/npy_file.h"
#include "ktune/data_file.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/job.h"
#include "ktune/registry.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::expect_error;
using test::write_npy;

BufferSpec input(std::string init, ElemType type = ElemType::kI32) {
  BufferSpec b;
  b.name = "x";
  b.type = type;
  b.role = BufferRole::kInput;
  b.size = "n";
  b.init = std::move(init);
  return b;
}

void write_raw(const fs::path& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// ---------------------------------------------------------------------------------------------
// Init texts

TEST(InputInit, DistributionsParseWithTheirParameters) {
  auto n = KernelSpec::parse_init(input("normal(0, 1.5)", ElemType::kF32));
  EXPECT_EQ(n.kind, BufferInit::Kind::kNormal);
  EXPECT_EQ(n.value, 0);
  EXPECT_EQ(n.spread, 1.5);
  auto z = KernelSpec::parse_init(input("zipf(1.2, 256)"));
  EXPECT_EQ(z.kind, BufferInit::Kind::kZipf);
  EXPECT_EQ(z.value, 1.2);
  EXPECT_EQ(z.spread, 256);
  EXPECT_EQ(KernelSpec::parse_init(input("zipf(2)")).spread, 0);
  auto u = KernelSpec::parse_init(input(" uniform( 2, 2**4 ) "));
  EXPECT_EQ(u.kind, BufferInit::Kind::kRandom);
  EXPECT_TRUE(u.has_range);
  EXPECT_EQ(u.hi, 16);
  auto c = KernelSpec::parse_init(input("choice(1, 7, -3)"));
  EXPECT_EQ(c.kind, BufferInit::Kind::kChoice);
  EXPECT_EQ(c.choices, (std::vector<double>{1, 7, -3}));
  auto f = KernelSpec::parse_init(input("file( data dir/x.npy )"));
  EXPECT_EQ(f.kind, BufferInit::Kind::kFile);
  EXPECT_EQ(f.text, "data dir/x.npy");  // spaces inside a path are kept
  auto g = KernelSpec::parse_init(input("generator(skew=3)"));
  EXPECT_EQ(g.kind, BufferInit::Kind::kGenerator);
  EXPECT_EQ(g.text, "skew=3");
  EXPECT_EQ(KernelSpec::parse_init(input("generator")).text, "");
  // The original kinds are unchanged.
  EXPECT_EQ(KernelSpec::parse_init(input("")).kind, BufferInit::Kind::kRandom);
  EXPECT_EQ(KernelSpec::parse_init(input("iota")).kind, BufferInit::Kind::kIota);
  EXPECT_EQ(KernelSpec::parse_init(input("value(3)")).value, 3);
}

TEST(InputInit, BadInitsNameTheBufferAndWhatWasExpected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"normal(0)", "normal(mean, stddev)"},
      {"normal(0, -1)", "stddev > 0"},
      {"zipf(1)", "s > 1"},
      {"zipf(0, 10)", "s > 0"},
      {"zipf(1.2, 2.5)", "whole number"},
      {"uniform(3, 1)", "lo < hi"},
      {"choice()", "expected random"},
      {"file()", "needs a path"},
      {"gauss(0, 1)", "zipf(s, n)"},
      {"normal(0, 1", "expected random"},
      {"choice(1, nope)", "nope"},
  };
  for (const auto& [text, needle] : cases)
    expect_error(ErrorKind::kInput, {"buffer 'x'", text, needle},
                 [&] { KernelSpec::parse_init(input(text)); });
}

TEST(InputInit, ExpectedFilesAreForOutputsOnly) {
  BufferSpec out = input("");
  out.role = BufferRole::kOutput;
  out.expected = "file(ref.npy)";
  EXPECT_EQ(KernelSpec::expected_file(out), "ref.npy");
  out.expected.clear();
  out.init = "file(from_init.bin)";  // the C ABI's way: an output's init
  EXPECT_EQ(KernelSpec::expected_file(out), "from_init.bin");
  out.init = "random";
  expect_error(ErrorKind::kInput, {"buffer 'x'", "file(PATH)"},
               [&] { KernelSpec::expected_file(out); });
  BufferSpec in = input("");
  in.expected = "file(ref.npy)";
  expect_error(ErrorKind::kInput, {"buffer 'x'", "output and inout", "input"},
               [&] { KernelSpec::expected_file(in); });
}

TEST(InputInit, RelativeDataPathsAreRebased) {
  KernelSpec k;
  k.buffers = {input("file(a.npy)"), input("file(/abs/b.bin)"), input("zipf(2)")};
  k.buffers[2].role = BufferRole::kOutput;
  k.buffers[2].init.clear();
  k.buffers[2].expected = "file(sub/../c.npy)";
  k.resolve_data_paths("/data/here");
  EXPECT_EQ(k.buffers[0].init, "file(/data/here/a.npy)");
  EXPECT_EQ(k.buffers[1].init, "file(/abs/b.bin)");
  EXPECT_EQ(k.buffers[2].expected, "file(/data/here/c.npy)");
}

// ---------------------------------------------------------------------------------------------
// Files

TEST(DataFile, NpyOfTheBuffersTypeAndCountReads) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.5f};
  write_npy(dir / "v.npy", "<f4", "(2, 3)", values.data(), values.size() * 4);
  std::vector<float> got(6);
  read_data_file((dir / "v.npy").string(), ElemType::kF32, 6, got.data(), "buffer 'v'");
  EXPECT_EQ(got, values);
  const DataFile f = inspect_data_file((dir / "v.npy").string(), ElemType::kF32, "buffer 'v'");
  EXPECT_TRUE(f.npy);
  EXPECT_EQ(f.shape, (std::vector<std::uint64_t>{2, 3}));
  // The header is padded so that the data starts at a multiple of 64 bytes.
  EXPECT_EQ(f.data_offset, fs::file_size(dir / "v.npy") - values.size() * 4);
  EXPECT_EQ(f.data_offset % 64, 0u);
}

TEST(DataFile, NpyOfAnotherTypeOrCountIsRefusedSayingBoth) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const std::vector<double> values(10, 1.0);
  write_npy(dir / "d.npy", "<f8", "(10,)", values.data(), 80);
  const std::string path = (dir / "d.npy").string();
  expect_error(ErrorKind::kInput, {"buffer 'x'", path, "'<f8'", "float32", "'<f4'"},
               [&] { check_data_file(path, ElemType::kF32, 10, "buffer 'x'"); });
  expect_error(ErrorKind::kInput, {"holds 10 elements", "shape (10)", "has 12"},
               [&] { check_data_file(path, ElemType::kF64, 12, "buffer 'x'"); });
  EXPECT_NO_THROW(check_data_file(path, ElemType::kF64, 10, "buffer 'x'"));
  // One-byte types carry no byte order in their descr.
  const std::vector<std::uint8_t> bytes(4, 9);
  write_npy(dir / "b.npy", "|u1", "(4,)", bytes.data(), 4);
  EXPECT_NO_THROW(check_data_file((dir / "b.npy").string(), ElemType::kU8, 4, "b"));
  expect_error(ErrorKind::kInput, {"'|u1'", "int8"},
               [&] { check_data_file((dir / "b.npy").string(), ElemType::kI8, 4, "b"); });
}

TEST(DataFile, FortranOrderTruncatedAndMalformedNpyAreRefused) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const std::vector<float> values(6, 1.0f);
  write_npy(dir / "f.npy", "<f4", "(2, 3)", values.data(), 24, /*fortran=*/true);
  expect_error(ErrorKind::kInput, {"Fortran-order", "ascontiguousarray"},
               [&] { check_data_file((dir / "f.npy").string(), ElemType::kF32, 6, "b"); });
  write_npy(dir / "t.npy", "<f4", "(6,)", values.data(), 20);  // one element short
  expect_error(ErrorKind::kInput, {"truncated"},
               [&] { check_data_file((dir / "t.npy").string(), ElemType::kF32, 6, "b"); });
  write_npy(dir / "s.npy", "<f4", "(six,)", values.data(), 24);
  expect_error(ErrorKind::kInput, {"bad shape"},
               [&] { check_data_file((dir / "s.npy").string(), ElemType::kF32, 6, "b"); });
}

TEST(DataFile, RawFilesAreCheckedBySize) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const std::vector<std::int32_t> values = {1, 2, 3, 4};
  write_raw(dir / "r.bin", values.data(), 16);
  std::vector<std::int32_t> got(4);
  read_data_file((dir / "r.bin").string(), ElemType::kI32, 4, got.data(), "b");
  EXPECT_EQ(got, values);
  expect_error(ErrorKind::kInput, {"holds 4 elements", "has 5"},
               [&] { check_data_file((dir / "r.bin").string(), ElemType::kI32, 5, "b"); });
  write_raw(dir / "odd.bin", values.data(), 12);
  expect_error(ErrorKind::kInput, {"12 bytes", "float64"},
               [&] { check_data_file((dir / "odd.bin").string(), ElemType::kF64, 2, "b"); });
  expect_error(ErrorKind::kInput, {"cannot be read"},
               [&] { check_data_file((dir / "missing.bin").string(), ElemType::kI32, 4, "b"); });
}

// ---------------------------------------------------------------------------------------------
// Distributions

template <typename T>
std::vector<T> filled(const std::string& init, std::size_t n, std::uint64_t stream, ElemType type) {
  std::vector<T> out(n);
  worker::fill(out.data(), type, n, KernelSpec::parse_init(input(init, type)), stream);
  return out;
}

TEST(Distributions, SameSeedSameDataOtherSeedOtherData) {
  for (const std::string init : {"normal(0, 1)", "zipf(1.2, 256)", "choice(1, 2, 3)", "zipf(2)"}) {
    const auto a = filled<std::int32_t>(init, 5000, 7, ElemType::kI32);
    EXPECT_EQ(a, (filled<std::int32_t>(init, 5000, 7, ElemType::kI32))) << init;
    EXPECT_NE(a, (filled<std::int32_t>(init, 5000, 8, ElemType::kI32))) << init;
  }
}

// Element i as the GPU's fill kernel computes it from a DeviceFill (device_compare.cpp's
// fill_elems, written again here on the host).
template <typename T>
T device_element(const worker::DeviceFill& f, std::uint64_t stream, std::uint64_t i) {
  if (f.kind == worker::DeviceFill::kValue) {
    T v;
    std::memcpy(&v, &f.value_bits, sizeof(T));
    return v;
  }
  if (f.kind == worker::DeviceFill::kIota) return static_cast<T>(i);
  const std::uint64_t r = worker::mix(stream ^ worker::mix(i));
  if (f.kind == worker::DeviceFill::kRandomFloat) {
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    const volatile double product = f.width * u;  // two roundings, as __dmul_rn and __dadd_rn
    return static_cast<T>(f.lo + product);
  }
  return static_cast<T>(f.int_lo + static_cast<std::int64_t>(r % f.span));
}

template <typename T>
void expect_device_rule_matches(ElemType type, const std::string& init) {
  const BufferInit parsed = KernelSpec::parse_init(input(init, type));
  const auto rule = worker::device_fill(type, parsed);
  ASSERT_TRUE(rule) << init;
  const std::size_t n = 4099;
  const auto host = filled<T>(init, n, 11, type);
  for (std::size_t i = 0; i < n; ++i) {
    const T gpu = device_element<T>(*rule, 11, i);
    ASSERT_EQ(std::memcmp(&host[i], &gpu, sizeof(T)), 0)
        << to_string(type) << " " << init << " element " << i;
  }
}

TEST(Distributions, TheGpusRuleMakesTheHostsValuesBitForBit) {
  for (const std::string init :
       {"random", "random(-3, 1000)", "uniform(0, 1)", "iota", "zero", "value(-7)", "value(2.5)"}) {
    expect_device_rule_matches<std::int8_t>(ElemType::kI8, init);
    expect_device_rule_matches<std::uint8_t>(ElemType::kU8, init);
    expect_device_rule_matches<std::int16_t>(ElemType::kI16, init);
    expect_device_rule_matches<std::uint16_t>(ElemType::kU16, init);
    expect_device_rule_matches<std::int32_t>(ElemType::kI32, init);
    expect_device_rule_matches<std::uint32_t>(ElemType::kU32, init);
    expect_device_rule_matches<std::int64_t>(ElemType::kI64, init);
    expect_device_rule_matches<std::uint64_t>(ElemType::kU64, init);
    expect_device_rule_matches<float>(ElemType::kF32, init);
    expect_device_rule_matches<double>(ElemType::kF64, init);
  }
  // What only the host makes: libm's distributions, choices, files and generate functions.
  for (const std::string init :
       {"normal(0, 1)", "zipf(1.5)", "choice(1, 2)", "file(x.bin)", "generator"})
    EXPECT_FALSE(
        worker::device_fill(ElemType::kF32, KernelSpec::parse_init(input(init, ElemType::kF32))))
        << init;
}

TEST(Distributions, NormalHasItsMeanAndSpread) {
  const auto v = filled<double>("normal(5, 2)", 200000, 3, ElemType::kF64);
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= v.size();
  EXPECT_NEAR(mean, 5.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.03);
}

TEST(Distributions, ZipfRanksFallAsTheirPowerLaw) {
  const std::size_t n = 400000;
  const auto v = filled<std::uint8_t>("zipf(1.2, 256)", n, 11, ElemType::kU8);
  std::vector<double> count(256, 0);
  for (auto x : v) count[x] += 1;  // every value is in [0, 256) by the type
  double norm = 0;
  for (int k = 1; k <= 256; ++k) norm += std::pow(k, -1.2);
  for (int k : {0, 1, 3, 15}) {
    const double expected = n * std::pow(k + 1, -1.2) / norm;
    EXPECT_NEAR(count[k], expected, 5 * std::sqrt(expected)) << "rank " << k;
  }
  EXPECT_GT(count[0], count[1]);
  EXPECT_GT(count[1], count[10]);
  // Bounded by n below the type's range.
  const auto small = filled<std::int32_t>("zipf(0.5, 10)", 10000, 1, ElemType::kI32);
  EXPECT_EQ(*std::max_element(small.begin(), small.end()), 9);
  EXPECT_EQ(*std::min_element(small.begin(), small.end()), 0);
  // Unbounded zipf(s) stays within a narrow type.
  const auto narrow = filled<std::int8_t>("zipf(1.1)", 10000, 1, ElemType::kI8);
  EXPECT_GE(*std::min_element(narrow.begin(), narrow.end()), 0);
}

TEST(Distributions, ChoiceTakesOnlyItsValuesEachAboutEquallyOften) {
  const auto v = filled<float>("choice(0.5, 2, 8)", 30000, 5, ElemType::kF32);
  std::map<float, int> seen;
  for (float x : v) ++seen[x];
  ASSERT_EQ(seen.size(), 3u);
  for (const auto& [value, count] : seen) EXPECT_NEAR(count, 10000, 400) << value;
}

TEST(Distributions, NormalIntegersAreRoundedAndClampedToTheType) {
  const auto v = filled<std::uint8_t>("normal(250, 40)", 10000, 2, ElemType::kU8);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 255);  // clamped, never wrapped
  EXPECT_GT(std::count(v.begin(), v.end(), 255), 1000);
}

// ---------------------------------------------------------------------------------------------
// Generators and files through fill_input

int iota_times_seed(const ktune_generate_ctx* ctx, char* error, std::size_t error_size) {
  if (ctx->type != KTUNE_TYPE_I32 || std::strcmp(ctx->buffer, "x") != 0) {
    std::snprintf(error, error_size, "unexpected buffer %s", ctx->buffer);
    return 1;
  }
  if (std::strcmp(ctx->args, "fail") == 0) {
    std::snprintf(error, error_size, "asked to fail");
    return 1;
  }
  std::int64_t scale = 1;
  for (std::size_t i = 0; i < ctx->problem_count; ++i)
    if (std::strcmp(ctx->problem_names[i], "scale") == 0) scale = ctx->problem_values[i];
  auto* out = static_cast<std::int32_t*>(ctx->data);
  for (std::size_t i = 0; i < ctx->count; ++i)
    out[i] = static_cast<std::int32_t>(i * scale + ctx->seed % 7);
  return 0;
}

TEST(FillInput, GeneratorGetsProblemSeedAndArgs) {
  KernelSpec k;
  k.name = "gen";
  k.generate = iota_times_seed;
  const BufferSpec b = input("generator(any text)");
  std::vector<std::int32_t> out(5);
  worker::fill_input(out.data(), b, KernelSpec::parse_init(b), 5, 14 + 3, k,
                     Problem{{"scale", 10}});
  EXPECT_EQ(out, (std::vector<std::int32_t>{3, 13, 23, 33, 43}));
  const BufferSpec failing = input("generator(fail)");
  expect_error(ErrorKind::kInput, {"gen", "buffer 'x'", "generate failed", "asked to fail"}, [&] {
    worker::fill_input(out.data(), failing, KernelSpec::parse_init(failing), 5, 1, k, {});
  });
  k.generate = nullptr;
  expect_error(ErrorKind::kInput, {"gen", "buffer 'x'", "no generate function"},
               [&] { worker::fill_input(out.data(), b, KernelSpec::parse_init(b), 5, 1, k, {}); });
}

TEST(FillInput, FileInputIsReadAndCheckedAgainstTheCount) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const std::vector<std::int32_t> values = {4, 3, 2, 1};
  write_npy(dir / "x.npy", "<i4", "(4,)", values.data(), 16);
  KernelSpec k;
  k.name = "files";
  const BufferSpec b = input("file(" + (dir / "x.npy").string() + ")");
  std::vector<std::int32_t> out(4);
  worker::fill_input(out.data(), b, KernelSpec::parse_init(b), 4, 1, k, {});
  EXPECT_EQ(out, values);
  std::vector<std::int32_t> more(5);
  expect_error(ErrorKind::kInput, {"files: buffer 'x'", "holds 4 elements", "has 5"},
               [&] { worker::fill_input(more.data(), b, KernelSpec::parse_init(b), 5, 1, k, {}); });
}

// ---------------------------------------------------------------------------------------------
// Job files, overrides and manifests

KernelSpec saxpy_like() {
  Registry r;
  register_builtin_kernels(r);
  return r.get("copy");
}

TEST(JobInputs, InputsAndExpectedFromAJobFileRelativeToIt) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const KernelSpec base = saxpy_like();
  const std::string in = base.buffers[0].name;
  std::string out;
  for (const auto& b : base.buffers)
    if (b.role == BufferRole::kOutput) out = b.name;
  ASSERT_FALSE(out.empty());
  std::ofstream(dir / "job.toml") << "kernel = \"copy\"\n[inputs]\n"
                                  << in << " = \"file(data/in.npy)\"\n[expected]\n"
                                  << out << " = \"file(/abs/out.npy)\"\n";
  const JobFile job = load_job((dir / "job.toml").string());
  EXPECT_EQ(job.inputs.at(in), "file(data/in.npy)");
  const KernelSpec k = apply_job(base, job);
  const auto buffer = [&](const std::string& name) {
    return *std::find_if(k.buffers.begin(), k.buffers.end(),
                         [&](const BufferSpec& b) { return b.name == name; });
  };
  EXPECT_EQ(buffer(in).init, "file(" + (fs::absolute(dir) / "data/in.npy").string() + ")");
  EXPECT_EQ(buffer(out).expected, "file(/abs/out.npy)");
}

TEST(JobInputs, UnknownBufferSuggestsTheClosest) {
  KernelSpec k = saxpy_like();
  const std::string in = k.buffers[0].name;
  expect_error(ErrorKind::kUsage, {"--input", "no buffer '" + in + "x'", "did you mean '" + in},
               [&] {
                 apply_inputs(k, {{in + "x", "zipf(2)"}}, {}, ".", "--input");
               });
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  std::ofstream(dir / "bad.toml") << "[inputs]\n" << in << " = 3\n";
  expect_error(ErrorKind::kInput, {"inputs." + in, "must be a string"},
               [&] { load_job((dir / "bad.toml").string()); });
}

// The vecscale test manifest's text up to its [reference] table, its source copied into `dir`.
std::string vecscale_without_reference(const fs::path& dir) {
  fs::copy_file(fs::path(KTUNE_TEST_DATA_DIR) / "manifests/vecscale.cu", dir / "vecscale.cu");
  std::ifstream in(fs::path(KTUNE_TEST_DATA_DIR) / "manifests/vecscale.toml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.substr(0, text.find("[reference]"));
}

TEST(JobInputs, ManifestExpectedFileReplacesTheReferenceConfig) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  std::string text = vecscale_without_reference(dir);  // no reference config ...
  const auto out = text.find("name = \"out\"");
  ASSERT_NE(out, std::string::npos);
  std::ofstream(dir / "no_reference.toml") << text;
  Registry r;
  expect_error(ErrorKind::kInput, {"no_reference.toml", "[reference]", "expected files"},
               [&] { r.load_manifest((dir / "no_reference.toml").string()); });
  text.insert(out, "expected = \"file(out.npy)\"\n");  // ... but an expected file
  std::ofstream(dir / "expected.toml") << text;
  r.load_manifest((dir / "expected.toml").string());
  const KernelSpec& k = r.get("vecscale");
  EXPECT_TRUE(k.reference_config.empty());
  EXPECT_EQ(k.buffers[1].expected, "file(" + (fs::absolute(dir) / "out.npy").string() + ")");
  // Checked against the buffer before any GPU work: the file does not exist yet.
  KernelInstance instance(k, k.make_problem({{"n", 3}}), DeviceLimits::for_arch(90));
  expect_error(ErrorKind::kInput, {"vecscale: expected 'out'", "out.npy", "cannot be read"},
               [&] { check_data_files(instance); });
  const std::vector<float> six(6, 0.5f);
  write_npy(dir / "out.npy", "<f4", "(3, 2)", six.data(), 24);
  EXPECT_NO_THROW(check_data_files(instance));
}

// `unchecked = true`: an output is compared with nothing, so it needs no reference (Kernel
// Tuner's tune_kernel with a verify function checks it in the caller).
TEST(JobInputs, AnUncheckedManifestKernelNeedsNoReference) {
  test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const std::string text = vecscale_without_reference(dir) + "[reference]\nunchecked = true\n";
  std::ofstream(dir / "unchecked.toml") << text;
  Registry r;
  r.load_manifest((dir / "unchecked.toml").string());
  const KernelSpec& k = r.get("vecscale");
  EXPECT_TRUE(k.unchecked);
  EXPECT_TRUE(k.reference_config.empty());
  EXPECT_EQ(k.buffers[1].role, BufferRole::kOutput);
}

}  // namespace
}  // namespace ktune
