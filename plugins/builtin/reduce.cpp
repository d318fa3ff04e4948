// Built-in kernels `reduce` and `reduce_f32`: the lecture's seven reduction steps
// (kernels_src/reduce.cu) over int32 and over float32, described through the plugin ABI like any
// out-of-tree plugin. Both share the parameters, restrictions, launch and run hook.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_reduce;

namespace ktune::builtin {
namespace {

// The float sum, added in double and rounded once: far closer to the exact sum than any fp32
// order, so the tolerance of `out` (kBuffersF32) is the GPU's error alone.
int reduce_f32_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* in = find_buffer(ctx, "in");
  const ktune_host_buffer* out = find_buffer(ctx, "out");
  if (in == nullptr || out == nullptr || out->count < 1) {
    std::snprintf(error, error_size, "reduce_f32: reference needs buffers 'in' and 'out'");
    return 1;
  }
  const auto* x = static_cast<const float*>(in->data);
  double sum = 0;
  for (std::size_t i = 0; i < in->count; ++i) sum += x[i];
  const float result = static_cast<float>(sum);
  std::memcpy(out->data, &result, sizeof(result));
  return 0;
}

// Step 10 (one pass): a single launch with the geometry of the kernel's expressions; the blocks'
// partial sums go to `partial`, the last block writes `out`.
int reduce_run_one_pass(const ktune_run_ctx* ctx, void* in, void* out, void* partial,
                        std::int64_t n, char* error, std::size_t error_size) {
  unsigned n_arg = static_cast<unsigned>(n);
  void* args[] = {&in, &out, &n_arg, &partial};
  const int rc = ctx->launch(ctx, nullptr, ctx->grid, ctx->block, ctx->shared_mem, args);
  if (rc != 0)
    std::snprintf(error, error_size, "reduce: one-pass launch failed (CUDA error %d)", rc);
  return rc;
}

// Kernel decomposition (steps 1-9): launch the kernel on the input, then on the partial sums,
// until a single block writes the result. Partial sums alternate between two halves of
// `partial`.
int reduce_run(const ktune_run_ctx* ctx, char* error, std::size_t error_size) {
  int found = 0;
  const auto value = [&](const char* name) {
    const std::int64_t v = ctx->value(ctx, name, &found);
    return found ? v : -1;
  };
  const std::int64_t block_size = value("block_size");
  const std::int64_t per_thread = value("elements_per_thread");
  const std::int64_t n0 = value("n");
  const std::int64_t variant = value("variant");
  std::size_t partial_count = 0, in_count = 0, out_count = 0;
  void* in = ctx->buffer(ctx, "in", &in_count);
  void* out = ctx->buffer(ctx, "out", &out_count);
  // int32 or float: only the element size (4 bytes) matters here.
  auto* partial = static_cast<std::int32_t*>(ctx->buffer(ctx, "partial", &partial_count));
  if (block_size <= 0 || per_thread <= 0 || n0 <= 0 || !in || !out || !partial) {
    std::snprintf(error, error_size,
                  "reduce: missing block_size, elements_per_thread, n or a buffer");
    return 1;
  }
  if (variant == 10) return reduce_run_one_pass(ctx, in, out, partial, n0, error, error_size);
  const std::int64_t tile = block_size * per_thread;
  const std::int64_t first_grid = (n0 + tile - 1) / tile;
  // The second half starts 16-byte aligned, as the vector-load variant needs.
  const std::int64_t second = (first_grid + 3) / 4 * 4;
  std::int32_t* halves[2] = {partial, partial + second};

  const void* src = in;
  std::int64_t n = n0;
  for (int level = 0;; ++level) {
    const std::int64_t grid = (n + tile - 1) / tile;
    void* dst = grid == 1 ? out : static_cast<void*>(halves[level % 2]);
    if (grid > 1 &&
        (level % 2 == 0 ? grid : second + grid) > static_cast<std::int64_t>(partial_count)) {
      std::snprintf(error, error_size, "reduce: partial buffer too small at level %d", level);
      return 1;
    }
    unsigned n_arg = static_cast<unsigned>(n);
    void* scratch = partial;  // step 10's argument, unused by steps 1-9
    void* args[] = {&src, &dst, &n_arg, &scratch};
    const unsigned g[3] = {static_cast<unsigned>(grid), 1, 1};
    const int rc = ctx->launch(ctx, nullptr, g, ctx->block, ctx->shared_mem, args);
    if (rc != 0) {
      std::snprintf(error, error_size, "reduce: launch of level %d failed (CUDA error %d)", level,
                    rc);
      return rc;
    }
    if (grid == 1) return 0;
    src = dst;
    n = grid;
  }
}

const ktune_param_desc kParams[] = {
    {"block_size", "32, 64, 128, 256, 512, 1024", "256", "threads per block"},
    {"variant", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10", "7",
     "step of the lecture, 1-7; 8: warp shuffles; 9: shuffles and vector loads; 10: as 9 in one "
     "launch, the last block adding the partial sums (see reduce.cu)"},
    {"elements_per_thread", "1, 2, 4, 8, 16, 32", "8",
     "input elements each thread adds before the tree (1 for steps 1-3, 2 for 4-6)"},
    {"unroll", "1, 2, 4, 8", "1", "unroll depth of the per-thread loop (steps 7-10)"},
    {"maxrregcount", "0, 32, 64, 128", "0", "register limit per thread (0: none)"},
    {"launch_bounds", "0, 1, 2, 4", "0",
     "minimum blocks per multiprocessor (0: no __launch_bounds__)"},
    {"blocks_per_sm", "0, 1, 2, 4, 8, 16, 32", "0",
     "step 10's grid in blocks per multiprocessor, each block striding over the tiles (0: one "
     "block per tile)"},
};

const char* const kRestrictions[] = {
    "variant >= 7 or elements_per_thread == (1 if variant <= 3 else 2)",
    "variant < 7 or elements_per_thread >= 2",
    "variant >= 7 or unroll == 1",
    "maxrregcount == 0 or maxrregcount * block_size <= max_registers_per_block",
    "launch_bounds == 0 or launch_bounds * block_size <= max_threads_per_multiprocessor",
    "variant == 10 or blocks_per_sm == 0",
    "variant < 10 or maxrregcount == 0",
    "n <= 2**31",
};

// reduce_f32 leaves out step 10: its grid stride and last-block loop add far more values in a
// row than the depth bound of the tolerance below allows.
const char* const kRestrictionsF32[] = {
    "variant >= 7 or elements_per_thread == (1 if variant <= 3 else 2)",
    "variant < 7 or elements_per_thread >= 2",
    "variant >= 7 or unroll == 1",
    "maxrregcount == 0 or maxrregcount * block_size <= max_registers_per_block",
    "launch_bounds == 0 or launch_bounds * block_size <= max_threads_per_multiprocessor",
    "variant <= 9 and blocks_per_sm == 0",
    "n <= 2**31",
};

const ktune_problem_desc kProblem[] = {
    {"n", "16777216", "number of int32 elements to sum"},
};

const ktune_buffer_desc kBuffers[] = {
    {"in", KTUNE_TYPE_I32, KTUNE_BUFFER_INPUT, "n", "random", 0, 0},
    {"out", KTUNE_TYPE_I32, KTUNE_BUFFER_OUTPUT, "1", nullptr, 0, 0},
    {"partial", KTUNE_TYPE_I32, KTUNE_BUFFER_SCRATCH,
     "div_up(n, block_size * elements_per_thread) + "
     "div_up(div_up(n, block_size * elements_per_thread), block_size * elements_per_thread) + 4",
     "none", 0, 0},
};

// reduce_f32: inputs uniform in [-1, 1), so the sum cancels (|sum| ~ sqrt(n / 3)) and a relative
// tolerance alone would mean nothing; the absolute one is scaled for the most summands the
// kernel takes, n = 2^31. A fp32 summation tree with leaves at depth at most D has a rounding
// error of rms at most u sqrt(n D / 3) (u = 2^-24; every addition's result is a partial sum of
// variance size / 3, and the sizes over a tree add up to at most n D). Every configuration here
// has D <= 150 (at worst 4 levels of 32 sequential additions and a 5-step warp tree), so the
// rms is <= 1.7e-3 at n = 2^24 and <= 2.0e-2 at n = 2^31: 0.125 is six of those. An element
// dropped or counted twice moves the sum by |x| ~ 0.5 on average.
const ktune_buffer_desc kBuffersF32[] = {
    {"in", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "n", "random", 0, 0},
    {"out", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "1", nullptr, 0.125, 1e-6},
    {"partial", KTUNE_TYPE_F32, KTUNE_BUFFER_SCRATCH,
     "div_up(n, block_size * elements_per_thread) + "
     "div_up(div_up(n, block_size * elements_per_thread), block_size * elements_per_thread) + 4",
     "none", 0, 0},
};

const ktune_arg_desc kArgs[] = {
    {"in", nullptr, 0},
    {"out", nullptr, 0},
    {nullptr, "n", KTUNE_TYPE_U32},
    {"partial", nullptr, 0},
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kReduce =
    KernelDesc("reduce", ktune_kernel_src_reduce, "reduce.cu",
               "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, int>")
        .description(
            "sum of int32 values: the seven steps of the parallel-reduction lecture, plus "
            "warp-shuffle, vector-load and one-pass steps")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid(
            "div_up(n, block_size * elements_per_thread) if blocks_per_sm == 0 else "
            "min(div_up(n, block_size * elements_per_thread), blocks_per_sm * "
            "multiprocessor_count)")
        .block("block_size")
        .shared_mem("max(block_size, 64) * 4")
        .buffers(kBuffers)
        .args(kArgs)
        // The lecture's first step, 256 threads, one element each: int32 additions wrap around
        // whatever their order, so every correct configuration returns this sum exactly. A
        // configuration, not a host sum, so that the inputs are made on the GPU and never pass
        // through the host (2^28 values: 0.4 s of filling and adding there, 1 GiB uploaded). The
        // GPU tests check it against a host sum.
        .reference_config(
            "variant=1,block_size=256,elements_per_thread=1,unroll=1,maxrregcount=0,"
            "launch_bounds=0,blocks_per_sm=0")
        .bytes("4 * n")
        .run(reduce_run);

const ktune_kernel_desc kReduceF32 = [] {
  ktune_kernel_desc d = kReduce;
  d.name = "reduce_f32";
  d.description =
      "sum of float32 values: the reduction lecture's steps over floats, checked "
      "against a double-precision sum";
  d.entry = "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, float>";
  d.buffers = kBuffersF32;
  d.buffer_count = std::size(kBuffersF32);
  d.reference = reduce_f32_reference;  // in double: no fp32 configuration is the sum
  d.reference_config = nullptr;
  d.restrictions = kRestrictionsF32;
  d.restriction_count = std::size(kRestrictionsF32);
  d.flops = "n";
  return d;
}();

}  // namespace

const ktune_kernel_desc* reduce_kernel() { return &kReduce; }
const ktune_kernel_desc* reduce_f32_kernel() { return &kReduceF32; }

}  // namespace ktune::builtin
