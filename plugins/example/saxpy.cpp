// An out-of-tree ktune plugin: `saxpy` (y = a * x + y over float32), tuned over block_size and
// elements_per_thread. It needs only ktune/plugin.h: the CUDA text travels as a C string, the
// host reference checks every candidate, and ktune compiles, launches and times the kernel.
// Build it with this folder's CMakeLists.txt and load it with
//   ktune list --plugin path/to/libsaxpy.so
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

namespace {

// The scalar `a`: the kernel argument is the expression kAlphaText, the reference uses kAlpha.
constexpr float kAlpha = 2.5f;
constexpr const char* kAlphaText = "2.5";

// ktune prepends #define BLOCK_SIZE, ELEMENTS_PER_THREAD, KTUNE_LAUNCH_BOUNDS ... to this text.
// Each block handles BLOCK_SIZE * ELEMENTS_PER_THREAD consecutive elements, one coalesced pass
// of the block per element a thread handles.
constexpr const char* kSource = R"(#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif
extern "C" __global__ void KTUNE_LAUNCH_BOUNDS saxpy(const float* __restrict__ x,
                                                    float* __restrict__ y, float a, unsigned n) {
  const unsigned base = blockIdx.x * (BLOCK_SIZE * ELEMENTS_PER_THREAD) + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ELEMENTS_PER_THREAD; ++k) {
    const unsigned i = base + k * BLOCK_SIZE;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
)";

const ktune_host_buffer* find_buffer(const ktune_reference_ctx* ctx, const char* name) {
  for (std::size_t i = 0; i < ctx->buffer_count; ++i)
    if (std::strcmp(ctx->buffers[i].name, name) == 0) return &ctx->buffers[i];
  return nullptr;
}

// y holds its initial contents on entry (an INOUT buffer); the expected output replaces them.
int saxpy_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* x = find_buffer(ctx, "x");
  const ktune_host_buffer* y = find_buffer(ctx, "y");
  if (x == nullptr || y == nullptr || x->count != y->count) {
    std::snprintf(error, error_size, "saxpy: reference needs buffers 'x' and 'y' of one size");
    return 1;
  }
  const float a = *static_cast<const float*>(ctx->user_data);
  const auto* xs = static_cast<const float*>(x->data);
  auto* ys = static_cast<float*>(y->data);
  for (std::size_t i = 0; i < y->count; ++i) ys[i] = a * xs[i] + ys[i];
  return 0;
}

const ktune_param_desc kParams[] = {
    {"block_size", "32, 64, 128, 256, 512, 1024", "256", "threads per block"},
    {"elements_per_thread", "1, 2, 4, 8", "1", "elements each thread computes"},
};

const char* const kRestrictions[] = {
    "block_size * elements_per_thread <= 4096",
};

const ktune_problem_desc kProblem[] = {
    {"n", "16777216", "number of float32 elements"},
};

const ktune_buffer_desc kBuffers[] = {
    {"x", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "n", "random", 0, 0},
    // The GPU may contract a * x + y into one FMA; the host may not.
    {"y", KTUNE_TYPE_F32, KTUNE_BUFFER_INOUT, "n", "random", 1e-6, 1e-5},
};

const ktune_arg_desc kArgs[] = {
    {"x", nullptr, 0},
    {"y", nullptr, 0},
    {nullptr, kAlphaText, KTUNE_TYPE_F32},
    {nullptr, "n", KTUNE_TYPE_U32},
};

const ktune_kernel_desc kSaxpy = ktune::KernelDesc("saxpy", kSource, "saxpy.cu",
                                                   "saxpy")
                                     .description("y = a * x + y over float32 (example plugin)")
                                     .params(kParams)
                                     .restrictions(kRestrictions)
                                     .problem(kProblem)
                                     .grid("div_up(n, block_size * elements_per_thread)")
                                     .block("block_size")
                                     .buffers(kBuffers)
                                     .args(kArgs)
                                     .reference(saxpy_reference)
                                     .bytes("12 * n")  // read x and y, write y
                                     .flops("2 * n")
                                     .user_data(const_cast<float*>(&kAlpha));

const ktune_kernel_desc* const kKernels[] = {&kSaxpy};

const ktune_plugin kPlugin = {
    KTUNE_PLUGIN_ABI_VERSION, sizeof(ktune_plugin), "ktune-example-saxpy", "1.0.0", kKernels,
    std::size(kKernels),
};

}  // namespace

extern "C" KTUNE_PLUGIN_EXPORT const ktune_plugin* ktune_plugin_entry(void) { return &kPlugin; }
