// compile(): NVRTC output, lowered names, ptxas resources, failures as data, keys, archs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "compile/compile_test_util.h"
#include "ktune/compiler.h"
#include "ktune/error.h"

namespace ktune {
namespace {

using test::reduce_lowered_name;
using test::reduce_request;

bool is_elf(const std::string& bytes) { return bytes.starts_with("\177ELF"); }

TEST(Compile, TemplatedKernelForSm90) {
  CompileResult result = compile(reduce_request(128));
  ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
  EXPECT_TRUE(is_elf(result.cubin));
  EXPECT_GT(result.cubin.size(), 1000u);
  // The #define in the source reaches the name expression "reduce<BLOCK_SIZE>".
  EXPECT_EQ(result.lowered_name, reduce_lowered_name(128));
  EXPECT_TRUE(result.error.empty());
  EXPECT_EQ(result.arch, "sm_90");
  EXPECT_EQ(result.options, reduce_request(128).options);
  EXPECT_EQ(result.key, reduce_request(128).key());
  EXPECT_GT(result.compile_ms, 0);
  EXPECT_FALSE(result.from_cache);
  EXPECT_NE(result.log.find("ptxas info"), std::string::npos) << result.log;

  const CompiledResources& r = result.resources;
  EXPECT_GT(r.registers, 0);
  EXPECT_EQ(r.static_shared_bytes, 128 * 4);
  EXPECT_EQ(r.spill_store_bytes, 0);
  EXPECT_EQ(r.spill_load_bytes, 0);
  EXPECT_GE(r.stack_frame_bytes, 0);
}

TEST(Compile, OtherArchAndBlockSize) {
  CompileResult result = compile(reduce_request(512, "sm_80"));
  ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
  EXPECT_TRUE(is_elf(result.cubin));
  EXPECT_EQ(result.lowered_name, reduce_lowered_name(512));
  EXPECT_NE(result.log.find("for 'sm_80'"), std::string::npos) << result.log;
  EXPECT_EQ(result.resources.static_shared_bytes, 512 * 4);
  EXPECT_GT(result.resources.registers, 0);
  // ptxas reports the parameter bank on sm_80 (not on sm_90 under CUDA 13).
  EXPECT_GT(result.resources.constant_bytes, 0);
  EXPECT_NE(result.cubin, compile(reduce_request(512, "sm_90")).cubin);
}

TEST(Compile, NoVerboseOptionLeavesResourcesUnknown) {
  CompileRequest request = reduce_request(64);
  request.options = {"--gpu-architecture=sm_90"};
  CompileResult result = compile(request);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.resources.registers, -1);
  EXPECT_EQ(result.resources.static_shared_bytes, -1);
}

TEST(Compile, SyntaxErrorIsData) {
  CompileRequest request = reduce_request(128);
  request.source =
      "#define BLOCK_SIZE 128\ntemplate <int B>\n__global__ void reduce(int* x) {\n"
      "  x[0] = B  // missing semicolon\n}\n";
  request.source_name = "broken.cu";
  CompileResult result = compile(request);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("broken.cu"), std::string::npos) << result.error;
  EXPECT_NE(result.log.find("broken.cu(5): error"), std::string::npos) << result.log;
  EXPECT_TRUE(result.cubin.empty());
  EXPECT_TRUE(result.lowered_name.empty());
  EXPECT_EQ(result.options, request.options);
  EXPECT_EQ(result.arch, "sm_90");
  EXPECT_EQ(result.key, request.key());
}

TEST(Compile, UnknownEntryIsData) {
  CompileRequest request = reduce_request(128);
  request.entry = "no_such_kernel<BLOCK_SIZE>";
  CompileResult result = compile(request);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("NVRTC_ERROR"), std::string::npos) << result.error;
  EXPECT_NE(result.log.find("no_such_kernel"), std::string::npos) << result.log;
}

TEST(Compile, UnknownOptionIsData) {
  CompileResult result = compile(reduce_request(128, "sm_90", {"--no-such-option"}));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("NVRTC_ERROR_INVALID_OPTION"), std::string::npos) << result.error;
}

TEST(Compile, VirtualArchitectureGivesNoCubin) {
  CompileRequest request = reduce_request(128);
  request.options = {"--gpu-architecture=compute_90"};
  request.arch = "compute_90";
  CompileResult result = compile(request);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("no CUBIN"), std::string::npos) << result.error;
}

// Enough live values that ptxas wants many registers unless capped.
constexpr const char* kHungrySource = R"(
template <int N>
__global__ void hungry(const float* in, float* out) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = in[threadIdx.x * N + i];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + 1) % N] + acc[(i + 7) % N];
  }
  float sum = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) sum += acc[i] * (i + 1);
  out[threadIdx.x] = sum;
}
)";

TEST(Compile, MaxRegCountLowersRegisters) {
  CompileRequest request;
  request.source = kHungrySource;
  request.source_name = "hungry.cu";
  request.entry = "hungry<96>";
  request.arch = "sm_90";
  request.options = test::options_for("sm_90");
  CompileResult free = compile(request);
  request.options = test::options_for("sm_90", {"-maxrregcount=32"});
  CompileResult capped = compile(request);
  ASSERT_TRUE(free.ok) << free.error << free.log;
  ASSERT_TRUE(capped.ok) << capped.error << capped.log;
  EXPECT_EQ(free.lowered_name, "_Z6hungryILi96EEvPKfPf");
  EXPECT_GT(free.resources.registers, 64) << free.log;
  EXPECT_LE(capped.resources.registers, 32) << capped.log;
  EXPECT_GT(capped.resources.spill_store_bytes, 0) << capped.log;
  EXPECT_GT(capped.resources.spill_load_bytes, 0) << capped.log;
  EXPECT_NE(free.key, capped.key);
}

// A log as NVRTC 13.0 writes it for a program with two entries and a device function.
constexpr const char* kTwoEntryLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z1kILi128EEvPiPKij' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z1kILi128EEvPiPKij\n"
    "ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
    "ptxas info    : Used 24 registers, used 1 barriers, 256 bytes cumulative stack size, "
    "512 bytes smem, 372 bytes cmem[0], 16 bytes cmem[3]\n"
    "ptxas info    : Compile time = 11.915 ms\n"
    "ptxas info    : Function properties for _Z6helperPfi\n"
    "ptxas         .     40 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    "ptxas info    : Compiling entry function '_Z5otherPf' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z5otherPf\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 0.891 ms\n";

TEST(PtxasLog, TakesTheEntrysOwnLines) {
  CompiledResources k = parse_ptxas_resources(kTwoEntryLog, "_Z1kILi128EEvPiPKij");
  EXPECT_EQ(k.registers, 24);
  EXPECT_EQ(k.stack_frame_bytes, 256);
  EXPECT_EQ(k.spill_store_bytes, 8);
  EXPECT_EQ(k.spill_load_bytes, 12);
  EXPECT_EQ(k.static_shared_bytes, 512);
  EXPECT_EQ(k.constant_bytes, 372 + 16);

  CompiledResources other = parse_ptxas_resources(kTwoEntryLog, "_Z5otherPf");
  EXPECT_EQ(other.registers, 8);
  EXPECT_EQ(other.stack_frame_bytes, 0);
  EXPECT_EQ(other.static_shared_bytes, 0);  // ptxas leaves zero smem out
  EXPECT_EQ(other.constant_bytes, 360);
}

TEST(PtxasLog, UnknownWhenAbsent) {
  CompiledResources none = parse_ptxas_resources(kTwoEntryLog, "_Z7missingv");
  EXPECT_EQ(none.registers, -1);
  EXPECT_EQ(none.spill_store_bytes, -1);
  EXPECT_EQ(none.static_shared_bytes, -1);
  EXPECT_EQ(none.constant_bytes, -1);
  CompiledResources sm90 = parse_ptxas_resources(
      "ptxas info    : Compiling entry function '_Z1fv' for 'sm_90'\n"
      "ptxas info    : Used 6 registers, used 0 barriers\n",
      "_Z1fv");
  EXPECT_EQ(sm90.registers, 6);
  EXPECT_EQ(sm90.constant_bytes, -1);
  EXPECT_EQ(sm90.stack_frame_bytes, -1);
  EXPECT_EQ(parse_ptxas_resources("", "_Z1fv").registers, -1);
}

TEST(CompileKey, StableAndSensitiveToEachField) {
  CompileRequest base = reduce_request(128);
  std::string key = base.key();
  EXPECT_EQ(key.size(), 32u);
  EXPECT_TRUE(std::all_of(key.begin(), key.end(),
                          [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
  EXPECT_EQ(key, reduce_request(128).key());

  CompileRequest source = base;
  source.source += " ";
  CompileRequest entry = base;
  entry.entry = "reduce<128>";
  CompileRequest options = base;
  options.options.push_back("-lineinfo");
  CompileRequest arch = base;
  arch.arch = "sm_80";
  // Fields are length-prefixed: moving a byte from one option to the next changes the key.
  CompileRequest split = base;
  split.options = {"--gpu-architecture=sm_90-std=c++17", "", "--ptxas-options=-v"};
  for (const CompileRequest* other : {&source, &entry, &options, &arch, &split}) {
    EXPECT_NE(other->key(), key);
  }
  CompileRequest renamed = base;
  renamed.source_name = "other.cu";  // only names the file in messages
  EXPECT_EQ(renamed.key(), key);
}

TEST(Nvrtc, VersionAndArchs) {
  std::string version = nvrtc_version();
  ASSERT_NE(version.find('.'), std::string::npos);
  EXPECT_GE(std::stoi(version), 12);
  std::vector<std::string> archs = nvrtc_supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90"), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_80"), archs.end());
  for (const std::string& arch : archs) EXPECT_TRUE(arch.starts_with("sm_")) << arch;
}

TEST(Nvrtc, CheckArch) {
  EXPECT_NO_THROW(check_arch("sm_90"));
  EXPECT_NO_THROW(check_arch("sm_90a"));
  EXPECT_NO_THROW(check_arch("sm_80"));
  for (const char* bad : {"sm_10", "sm_10a", "compute_90", "sm_", "sm_90x", "90", "", "SM_90"}) {
    try {
      check_arch(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      std::string message = e.what();
      EXPECT_TRUE(message.starts_with("unsupported architecture '" + std::string(bad) +
                                      "'; NVRTC " + nvrtc_version() + " supports sm_"))
          << message;
      EXPECT_NE(message.find("sm_90"), std::string::npos) << message;
      EXPECT_NE(message.back(), '.');
    }
  }
}

}  // namespace
}  // namespace ktune
