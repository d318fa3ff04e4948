// The C++ builder (ktune/kernel_desc.hpp) builds exactly the C struct of the plugin ABI: the
// histogram example's descriptor written both ways (between the BEGIN and END comments: the
// line counts docs/plugins.md gives) compares equal field by field.
#include <gtest/gtest.h>

#include <cstring>

#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

namespace ktune {
namespace {

int reference(const ktune_reference_ctx*, char*, std::size_t) { return 0; }
int generate(const ktune_generate_ctx*, char*, std::size_t) { return 0; }

const char* const kSource = "// histogram.cu";
const ktune_param_desc kParams[] = {{"block_size", "64, 128", "128", ""},
                                    {"replicas", "1, 2", "1", ""}};
const char* const kRestrictions[] = {"replicas * 32 <= block_size"};
const ktune_problem_desc kProblem[] = {{"n", "1024", "bytes"}};
const ktune_buffer_desc kBuffers[] = {
    {"data", KTUNE_TYPE_U8, KTUNE_BUFFER_INPUT, "n", "generator(0.5)", 0, 0},
    {"hist", KTUNE_TYPE_U32, KTUNE_BUFFER_INOUT, "256", "value(0)", 0, 0}};
const ktune_arg_desc kArgs[] = {
    {"data", nullptr, 0}, {"hist", nullptr, 0}, {nullptr, "n", KTUNE_TYPE_U64}};

// BEGIN builder
const ktune_kernel_desc kWithBuilder =
    ktune::KernelDesc("histogram", kSource, "histogram.cu", "histogram<REPLICAS>")
        .description("256-bin byte histogram in shared memory")
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("min(blocks_per_sm * multiprocessor_count, div_up(n, block_size))")
        .block("block_size")
        .shared_mem("replicas * 256 * 4")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(reference)
        .generate(generate)
        .bytes("n");
// END builder

// BEGIN c
const ktune_kernel_desc kInC = {
    sizeof(ktune_kernel_desc),
    "histogram",
    "256-bin byte histogram in shared memory",
    kSource,
    "histogram.cu",
    "histogram<REPLICAS>",
    nullptr,
    0,
    kParams,
    sizeof kParams / sizeof kParams[0],
    kRestrictions,
    sizeof kRestrictions / sizeof kRestrictions[0],
    kProblem,
    sizeof kProblem / sizeof kProblem[0],
    {"min(blocks_per_sm * multiprocessor_count, div_up(n, block_size))", nullptr, nullptr},
    {"block_size", nullptr, nullptr},
    "replicas * 256 * 4",
    kBuffers,
    sizeof kBuffers / sizeof kBuffers[0],
    kArgs,
    sizeof kArgs / sizeof kArgs[0],
    reference,
    nullptr,
    "n",
    nullptr,
    nullptr,
    nullptr,
    generate,
};
// END c

bool same_text(const char* a, const char* b) {
  return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}

TEST(KernelDesc, TheBuilderBuildsExactlyTheCStruct) {
  const ktune_kernel_desc& a = kWithBuilder;
  const ktune_kernel_desc& b = kInC;
  EXPECT_EQ(a.struct_size, b.struct_size);
  for (auto field :
       {&ktune_kernel_desc::name, &ktune_kernel_desc::description, &ktune_kernel_desc::source,
        &ktune_kernel_desc::source_name, &ktune_kernel_desc::entry, &ktune_kernel_desc::shared_mem,
        &ktune_kernel_desc::reference_config, &ktune_kernel_desc::bytes, &ktune_kernel_desc::flops})
    EXPECT_TRUE(same_text(a.*field, b.*field));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_text(a.grid[i], b.grid[i])) << "grid " << i;
    EXPECT_TRUE(same_text(a.block[i], b.block[i])) << "block " << i;
  }
  EXPECT_EQ(a.compile_options, b.compile_options);
  EXPECT_EQ(a.compile_option_count, b.compile_option_count);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.param_count, 2u);
  EXPECT_EQ(a.param_count, b.param_count);
  EXPECT_EQ(a.restrictions, b.restrictions);
  EXPECT_EQ(a.restriction_count, b.restriction_count);
  EXPECT_EQ(a.problem, b.problem);
  EXPECT_EQ(a.problem_count, b.problem_count);
  EXPECT_EQ(a.buffers, b.buffers);
  EXPECT_EQ(a.buffer_count, b.buffer_count);
  EXPECT_EQ(a.args, b.args);
  EXPECT_EQ(a.arg_count, 3u);
  EXPECT_EQ(a.arg_count, b.arg_count);
  EXPECT_EQ(a.reference, b.reference);
  EXPECT_EQ(a.run, b.run);
  EXPECT_EQ(a.user_data, b.user_data);
  EXPECT_EQ(a.generate, b.generate);
}

}  // namespace
}  // namespace ktune
