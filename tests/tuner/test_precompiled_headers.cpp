// Kernels whose source starts with `#include <...>` lines: rendered with those lines before the
// configuration's macros, and compiled in compile processes with NVRTC's precompiled header
// where that is faster, to the same CUBIN.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/render.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

const char* const kSource =
    "// halves, doubled\n"                 // line 1
    "#include <cuda_fp16.h>\n"             // line 2
    "\n"                                   // line 3
    "#include <cuda_bf16.h>  // unused\n"  // line 4
    "#if BAD\n"                            // line 5
    "#error a bad configuration\n"         // line 6
    "#endif\n"                             // line 7
    "extern \"C\" __global__ void twice(__half* x, int n) {\n"
    "  int i = blockIdx.x * BLOCK + threadIdx.x;\n"
    "  if (i < n) x[i] = __hadd(x[i], x[i]);\n"
    "}\n";

KernelText header_kernel(std::string source = kSource) {
  KernelText k;
  k.name = "twice";
  k.source = std::move(source);
  k.source_name = "twice.cu";
  k.entry = "twice";
  k.compile_options = {"-std=c++17"};
  std::stringstream dirs(KTUNE_CUDA_INCLUDE_DIRS);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty()) k.compile_options.push_back("-I" + dir);
  return k;
}

CompileRequest render_block(const KernelText& k, int block, int bad = 0) {
  return render(k, {{"block", Value(block)}, {"bad", Value(bad)}},
                RenderDims{{1, 1, 1}, {64, 1, 1}}, "block=" + std::to_string(block), "sm_90");
}

TEST(PrecompiledHeaders, LeadingSystemIncludesComeBeforeTheConfigurationsMacros) {
  const CompileRequest r = render_block(header_kernel(), 128);
  const std::string expected_start =
      "// halves, doubled\n#include <cuda_fp16.h>\n\n"
      "#include <cuda_bf16.h>  // unused\nnamespace ktune_headers_end {}\n// ktune: "
      "twice[block=128]";
  EXPECT_EQ(r.source.substr(0, expected_start.size()), expected_start) << r.source;
  EXPECT_NE(r.source.find("#define BLOCK 128\n"), std::string::npos);
  // The rest keeps its line numbers.
  EXPECT_NE(r.source.find("#line 5 \"twice.cu\"\n#if BAD\n"), std::string::npos) << r.source;
  EXPECT_TRUE(r.batch_group.empty());  // a source with headers is compiled alone
}

TEST(PrecompiledHeaders, OtherSourcesKeepTheMacrosFirst) {
  const auto starts_with_macros = [](const std::string& source) {
    const CompileRequest r = render_block(header_kernel(source), 64);
    return r.source.rfind("// ktune: twice[", 0) == 0;
  };
  // A quoted include (a header of the kernel's own, which may read the macros), a directive
  // before the includes, and no include at all.
  EXPECT_TRUE(starts_with_macros("#include \"mine.h\"\n#include <cuda_fp16.h>\n"));
  EXPECT_TRUE(starts_with_macros("#define HALF 1\n#include <cuda_fp16.h>\n"));
  EXPECT_TRUE(starts_with_macros("__global__ void twice() {}\n"));
  EXPECT_FALSE(starts_with_macros(kSource));
}

// One compile process, the programs one after another: the first plain, the second creating the
// precompiled header, the third loading it (the header block's trial), every CUBIN the one a plain
// compilation in this process (where precompiled headers are never used) gives.
TEST(PrecompiledHeaders, ACompileProcessReusesTheHeadersForTheSameCubins) {
  namespace fs = std::filesystem;
  const std::string version = nvrtc_version();  // "13.0"
  if (const auto dot = version.find('.');
      dot == std::string::npos ||
      std::stoi(version.substr(0, dot)) * 100 + std::stoi(version.substr(dot + 1)) < 1208)
    GTEST_SKIP() << "NVRTC " << version << " has no precompiled headers (12.8 and later)";
  // The process keeps its precompiled headers in a directory of its own under TMPDIR.
  const test::TempDir tmp_dir;
  const fs::path& tmp = tmp_dir.path();
  const test::EnvGuard tmpdir("TMPDIR", tmp.string());
  // What a compile process that was killed left behind: removed when the next one starts.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  const fs::path stale = tmp / ("ktune-pch-" + std::to_string(gone));
  fs::create_directories(stale);
  test::write_file(stale / "twice_0.pch", "left over");
  auto pool =
      std::make_unique<CompilePool>(1, nullptr, std::vector<std::string>{KTUNE_EXE, "__compile"});
  const KernelText k = header_kernel();
  const std::vector<int> blocks = {64, 128, 256, 512};
  std::vector<CompileResult> remote;
  for (int block : blocks) remote.push_back(pool->submit(render_block(k, block)).get());
  ASSERT_EQ(remote.size(), blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_TRUE(remote[i].ok) << remote[i].error << "\n" << remote[i].log;
    const CompileResult plain = compile(render_block(k, blocks[i]));
    ASSERT_TRUE(plain.ok) << plain.error;
    EXPECT_FALSE(plain.precompiled_header);
    EXPECT_EQ(remote[i].cubin, plain.cubin) << "block " << blocks[i];
    EXPECT_EQ(remote[i].resources.registers, plain.resources.registers);
  }
  EXPECT_FALSE(remote[0].precompiled_header);
  EXPECT_TRUE(remote[1].precompiled_header);
  EXPECT_TRUE(remote[2].precompiled_header);
  // An error after the header block names the kernel source's own line.
  const CompileResult bad = pool->submit(render_block(k, 64, 1)).get();
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("twice.cu(6)"), std::string::npos) << bad.log;
  EXPECT_FALSE(fs::exists(stale));
  // Its directory held the header while it ran, and is gone when it has ended.
  std::vector<std::string> during;
  for (const auto& e : fs::directory_iterator(tmp)) during.push_back(e.path().filename().string());
  ASSERT_EQ(during.size(), 1u);
  EXPECT_EQ(during[0].rfind("ktune-pch-", 0), 0u) << during[0];
  EXPECT_FALSE(fs::is_empty(tmp / during[0]));
  pool.reset();
  for (const auto& e : fs::recursive_directory_iterator(tmp)) ADD_FAILURE() << "left: " << e.path();
  EXPECT_TRUE(fs::is_empty(tmp));
}

}  // namespace
}  // namespace ktune
