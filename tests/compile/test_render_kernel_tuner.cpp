// Kernel Tuner's rendering style (ktune/render.h, DefineStyle::kKernelTuner): what Kernel Tuner
// prepends to a kernel, and its loop_unroll_factor rule.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ktune/render.h"

namespace ktune {
namespace {

KernelText kernel_tuner_text(std::string source) {
  KernelText k;
  k.name = "vector_add";
  k.source = std::move(source);
  k.source_name = "vector_add.cu";
  k.entry = "vector_add";
  k.define_style = DefineStyle::kKernelTuner;
  return k;
}

TEST(RenderKernelTuner, DefinesWhatKernelTunerPrepends) {
  const KernelText k = kernel_tuner_text("__global__ void vector_add() {}\n");
  const RenderDims dims{{40, 2, 1}, {256, 4, 1}};
  const Defines d = render_defines(k, {{"block_size_x", Value(256)}, {"tile", Value(4)}}, dims);
  const Defines expected{{"grid_size_x", "40"},   {"grid_size_y", "2"},  {"grid_size_z", "1"},
                         {"block_size_x", "256"}, {"block_size_y", "4"}, {"block_size_z", "1"},
                         {"tile", "4"},           {"kernel_tuner", "1"}};
  EXPECT_EQ(d, expected);
  const CompileRequest r =
      render(k, {{"block_size_x", Value(256)}}, dims, "block_size_x=256", "sm_90");
  EXPECT_NE(r.source.find("#define block_size_x 256\n"), std::string::npos);
  EXPECT_EQ(r.source.find("BLOCK_SIZE_X"), std::string::npos);  // not ktune's upper-case rule
}

TEST(RenderKernelTuner, RenamedBlockDimensions) {
  KernelText k = kernel_tuner_text("");
  k.block_names = {"bx", "by", "bz"};
  const Defines d = render_defines(k, {}, RenderDims{{1, 1, 1}, {32, 2, 1}});
  EXPECT_EQ(d[3], (std::pair<std::string, std::string>{"bx", "32"}));
  EXPECT_EQ(d[4], (std::pair<std::string, std::string>{"by", "2"}));
}

TEST(RenderKernelTuner, LoopUnrollFactors) {
  const KernelText k = kernel_tuner_text(
      "__global__ void f(float* x) {\n  #pragma unroll loop_unroll_factor_0\n  for (;;) {}\n}\n");
  const RenderDims dims{{1, 1, 1}, {32, 1, 1}};
  const CompileRequest eight =
      render(k, {{"loop_unroll_factor_0", Value(8)}}, dims, "loop_unroll_factor_0=8", "sm_90");
  EXPECT_NE(eight.source.find("constexpr int loop_unroll_factor_0 = 8;\n#line 1"),
            std::string::npos);
  EXPECT_EQ(eight.source.find("#define loop_unroll_factor_0"), std::string::npos);
  EXPECT_NE(eight.source.find("#pragma unroll loop_unroll_factor_0"), std::string::npos);
  EXPECT_TRUE(eight.batch_group.empty());  // the body differs per configuration
  const CompileRequest zero =
      render(k, {{"loop_unroll_factor_0", Value(0)}}, dims, "loop_unroll_factor_0=0", "sm_90");
  EXPECT_EQ(zero.source.find("#pragma unroll"), std::string::npos);
  EXPECT_EQ(zero.source.find("constexpr int"), std::string::npos);
}

// With the user's defines, Kernel Tuner defines those alone, each value with the parameters'
// names in it replaced by their values (whole names only), and no kernel_tuner 1.
TEST(RenderKernelTuner, UserDefinesAreDefinedAloneWithTheParametersReplaced) {
  KernelText k = kernel_tuner_text("__global__ void vector_add() {}\n");
  k.user_defines = Defines{{"WORK", "block_size_x * tile"},
                           {"TILE2", "tile_x2 + tile"},  // tile_x2 is not a parameter
                           {"CONST", "42"},
                           {"TWO_LINES", "a\nb"}};
  const RenderDims dims{{40, 2, 1}, {256, 4, 1}};
  const std::vector<Setting> settings{{"block_size_x", Value(256)}, {"tile", Value(4)}};
  const Defines expected{
      {"WORK", "256 * 4"}, {"TILE2", "tile_x2 + 4"}, {"CONST", "42"}, {"TWO_LINES", "a\\\nb"}};
  EXPECT_EQ(render_defines(k, settings, dims), expected);
  k.user_defines = Defines{};  // defines={}: nothing at all
  EXPECT_TRUE(render_defines(k, settings, dims).empty());
}

TEST(RenderKernelTuner, AUserDefinedUnrollFactorIsAConstant) {
  KernelText k = kernel_tuner_text(
      "__global__ void f(float* x) {\n  #pragma unroll loop_unroll_factor_0\n  for (;;) {}\n}\n");
  k.user_defines = Defines{{"loop_unroll_factor_0", "u"}, {"N", "u"}};
  const RenderDims dims{{1, 1, 1}, {32, 1, 1}};
  const CompileRequest four = render(k, {{"u", Value(4)}}, dims, "u=4", "sm_90");
  EXPECT_NE(four.source.find("constexpr int loop_unroll_factor_0 = 4;\n"), std::string::npos);
  EXPECT_NE(four.source.find("#define N 4\n"), std::string::npos);
  EXPECT_EQ(four.source.find("#define u "), std::string::npos);
  const CompileRequest zero = render(k, {{"u", Value(0)}}, dims, "u=0", "sm_90");
  EXPECT_EQ(zero.source.find("#pragma unroll"), std::string::npos);
}

// A constant buffer's __constant__ variable is found by its name (Kernel Tuner's cmem_args): such
// a kernel is never batched into namespaces, which would change the name.
TEST(RenderKernelTuner, AKernelWithAConstantBufferIsNotBatched) {
  const RenderDims dims{{1, 1, 1}, {32, 1, 1}};
  KernelText k =
      kernel_tuner_text("__constant__ float c[4];\n__global__ void f(float* x) { x[0] = c[0]; }\n");
  EXPECT_FALSE(render(k, {}, dims, "", "sm_90").batch_group.empty());
  k.constants_by_name = true;
  EXPECT_TRUE(render(k, {}, dims, "", "sm_90").batch_group.empty());
}

TEST(RenderKtune, DefaultStyleIsUnchanged) {
  KernelText k = kernel_tuner_text("");
  k.define_style = DefineStyle::kKtune;
  const Defines d =
      render_defines(k, {{"block_size", Value(128)}}, RenderDims{{1, 1, 1}, {128, 1, 1}});
  EXPECT_EQ(d[0], (std::pair<std::string, std::string>{"BLOCK_SIZE", "128"}));
  EXPECT_EQ(d[1], (std::pair<std::string, std::string>{"KTUNE_BLOCK_X", "128"}));
}

}  // namespace
}  // namespace ktune
