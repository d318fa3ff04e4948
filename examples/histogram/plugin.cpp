// An out-of-tree ktune plugin built with ktune_add_kernel_plugin (CMakeLists.txt): a 256-bin
// byte histogram whose speed depends on how skewed its input is. The kernel stays in
// histogram.cu (embedded as ktune_kernel_src_histogram); the input comes from a generator of the
// plugin's own (`generator(p)`: a fraction p of the bytes hit one hot bin), from a distribution
// (`--input data=zipf(1.2,256)`) or from a file (text.toml).
#include "ktune/plugin.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "histogram_kernels.h"
#include "ktune/kernel_desc.hpp"

namespace {

const ktune_host_buffer* find_buffer(const ktune_reference_ctx* ctx, const char* name) {
  for (std::size_t i = 0; i < ctx->buffer_count; ++i)
    if (std::strcmp(ctx->buffers[i].name, name) == 0) return &ctx->buffers[i];
  return nullptr;
}

// hist enters holding its initial contents (zeros: an inout buffer), the counts are added.
int histogram_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* data = find_buffer(ctx, "data");
  const ktune_host_buffer* hist = find_buffer(ctx, "hist");
  if (data == nullptr || hist == nullptr || hist->count != 256) {
    std::snprintf(error, error_size, "histogram: needs buffers 'data' and 'hist' (256 bins)");
    return 1;
  }
  const auto* bytes = static_cast<const unsigned char*>(data->data);
  auto* bins = static_cast<std::uint32_t*>(hist->data);
  for (std::size_t i = 0; i < data->count; ++i) ++bins[bytes[i]];
  return 0;
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// generator(p): each byte is the hot value 32 with probability p (default 0.5), else uniform.
int skewed_bytes(const ktune_generate_ctx* ctx, char* error, std::size_t error_size) {
  if (ctx->type != KTUNE_TYPE_U8) {
    std::snprintf(error, error_size, "skewed bytes fill uint8 buffers, '%s' is not one",
                  ctx->buffer);
    return 1;
  }
  char* end = nullptr;
  const double p = ctx->args[0] ? std::strtod(ctx->args, &end) : 0.5;
  if ((ctx->args[0] && *end != '\0') || !(p >= 0 && p <= 1)) {
    std::snprintf(error, error_size, "generator(%s): expected a fraction in [0, 1]", ctx->args);
    return 1;
  }
  auto* out = static_cast<unsigned char*>(ctx->data);
  const auto threshold = static_cast<std::uint64_t>(p * 9007199254740992.0);  // p * 2^53
  for (std::size_t i = 0; i < ctx->count; ++i) {
    const std::uint64_t r = mix(ctx->seed ^ mix(i));
    out[i] = (r >> 11) < threshold ? 32 : static_cast<unsigned char>(r & 0xff);
  }
  return 0;
}

const ktune_param_desc kParams[] = {
    {"block_size", "64, 128, 256, 512, 1024", "256", "threads per block"},
    {"items_per_thread", "1, 2, 4, 8, 16", "4", "bytes each thread counts per pass (unrolled)"},
    {"replicas", "1, 2, 4, 8", "1", "copies of the bins in shared memory"},
    {"blocks_per_sm", "1, 2, 4, 8", "2", "blocks per multiprocessor (grid size)"},
};

const char* const kRestrictions[] = {
    "replicas * 32 <= block_size",
    "block_size * blocks_per_sm <= max_threads_per_multiprocessor",
};

const ktune_problem_desc kProblem[] = {{"n", "67108864", "bytes to count"}};

const ktune_buffer_desc kBuffers[] = {
    {"data", KTUNE_TYPE_U8, KTUNE_BUFFER_INPUT, "n", "generator(0.5)", 0, 0},
    {"hist", KTUNE_TYPE_U32, KTUNE_BUFFER_INOUT, "256", "value(0)", 0, 0},  // counts are exact
};

const ktune_arg_desc kArgs[] = {
    {"data", nullptr, 0}, {"hist", nullptr, 0}, {nullptr, "n", KTUNE_TYPE_U64}};

const ktune_kernel_desc kHistogram =
    ktune::KernelDesc("histogram", ktune_kernel_src_histogram, "histogram.cu",
                      "histogram<REPLICAS>")
        .description("256-bin byte histogram in shared memory (example plugin)")
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("min(blocks_per_sm * multiprocessor_count, div_up(n, block_size * items_per_thread))")
        .block("block_size")
        .shared_mem("replicas * 256 * 4")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(histogram_reference)
        .generate(skewed_bytes)
        .bytes("n");

const ktune_kernel_desc* const kKernels[] = {&kHistogram};

const ktune_plugin kPlugin = {
    KTUNE_PLUGIN_ABI_VERSION, sizeof(ktune_plugin), "ktune-example-histogram", "1.0.0", kKernels,
    std::size(kKernels)};

}  // namespace

extern "C" KTUNE_PLUGIN_EXPORT const ktune_plugin* ktune_plugin_entry(void) { return &kPlugin; }
