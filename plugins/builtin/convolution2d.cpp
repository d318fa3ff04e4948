// Built-in kernel `convolution2d`: "same" 2-D convolution of an fp32 image with an F x F filter
// in constant memory (kernels_src/convolution2d.cu), directly from global memory or through a
// shared-memory tile; the space follows Kernel Tuner's convolution benchmark, plus register
// blocking (reg_rows) beyond it.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_convolution2d;

namespace ktune::builtin {
namespace {

// out[y][x] = sum_ij filter[i][j] * image(y + i - R, x + j - R), zero outside the image,
// accumulated in double: the result is the exact sum rounded once, so the tolerance only has to
// cover the GPU's float rounding.
int convolution2d_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* image = find_buffer(ctx, "image");
  const ktune_host_buffer* filter = find_buffer(ctx, "filter");
  const ktune_host_buffer* out = find_buffer(ctx, "out");
  const std::int64_t h = problem_value(ctx, "h", -1), w = problem_value(ctx, "w", -1);
  const std::int64_t f = problem_value(ctx, "f", -1);
  if (!image || !filter || !out || h < 1 || w < 1 || f < 1 || f % 2 == 0) {
    std::snprintf(error, error_size,
                  "convolution2d: reference needs buffers image, filter, out and h, w, odd f");
    return 1;
  }
  const auto count = static_cast<std::size_t>(h * w);
  if (image->count != count || out->count != count ||
      filter->count != static_cast<std::size_t>(f * f)) {
    std::snprintf(error, error_size,
                  "convolution2d: buffer sizes do not match h=%lld, w=%lld, f=%lld",
                  static_cast<long long>(h), static_cast<long long>(w), static_cast<long long>(f));
    return 1;
  }
  const auto* in = static_cast<const float*>(image->data);
  const auto* c = static_cast<const float*>(filter->data);
  auto* result = static_cast<float*>(out->data);
  const std::int64_t r = (f - 1) / 2;
  parallel_for(static_cast<std::size_t>(h), [&](std::size_t begin, std::size_t end) {
    std::vector<double> acc(static_cast<std::size_t>(w));
    for (std::size_t y = begin; y < end; ++y) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t i = 0; i < f; ++i) {
        const std::int64_t row = static_cast<std::int64_t>(y) + i - r;
        if (row < 0 || row >= h) continue;
        const float* src = in + row * w;
        for (std::int64_t j = 0; j < f; ++j) {
          const double weight = c[i * f + j];
          const std::int64_t shift = j - r;  // out[x] reads src[x + shift]
          const std::int64_t x0 = std::max<std::int64_t>(0, -shift);
          const std::int64_t x1 = std::min<std::int64_t>(w, w - shift);
          for (std::int64_t x = x0; x < x1; ++x) acc[x] += weight * src[x + shift];
        }
      }
      for (std::int64_t x = 0; x < w; ++x) result[y * w + x] = static_cast<float>(acc[x]);
    }
  });
  return 0;
}

// Fills this configuration's constant filter from the `filter` input on the timed stream, then
// launches: the copy (f * f floats, device to device) is part of every measured run.
int convolution2d_run(const ktune_run_ctx* ctx, char* error, std::size_t error_size) {
  static const char* const kNames[] = {"block_size_x", "block_size_y", "tile_size_x",
                                       "tile_size_y",  "use_shmem",    "use_padding",
                                       "filter_size",  "reg_rows",     "full_unroll"};
  long long v[std::size(kNames)];
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    int found = 0;
    v[i] = static_cast<long long>(ctx->value(ctx, kNames[i], &found));
    if (!found) {
      std::snprintf(error, error_size, "convolution2d: no value for parameter %s", kNames[i]);
      return 1;
    }
  }
  char symbol[160];
  const int len =
      std::snprintf(symbol, sizeof(symbol), "conv_filter_%lld_%lld_%lld_%lld_%lld_%lld_%lld", v[0],
                    v[1], v[2], v[3], v[4], v[5], v[6]);
  if (v[7] != 1)  // convolution2d.cu names the filter of a register-blocked configuration so
    std::snprintf(symbol + len, sizeof(symbol) - static_cast<std::size_t>(len), "_r%lld_u%lld",
                  v[7], v[8]);
  std::size_t bytes = 0, count = 0;
  void* constant = find_global(ctx, symbol, &bytes);
  void* filter = ctx->buffer(ctx, "filter", &count);
  if (!constant || !filter) {
    std::snprintf(error, error_size, "convolution2d: %s not found (%s)",
                  constant ? "buffer 'filter'" : "the constant filter", symbol);
    return 1;
  }
  if (count * sizeof(float) > bytes) {
    std::snprintf(error, error_size, "convolution2d: %zu filter values, but %s holds %zu bytes",
                  count, symbol, bytes);
    return 1;
  }
  using MemcpyAsync = int (*)(void*, const void*, std::size_t, int, void*);
  constexpr int kDeviceToDevice = 3;  // cudaMemcpyDeviceToDevice
  const auto memcpy_async = reinterpret_cast<MemcpyAsync>(ctx->cuda_function("cudaMemcpyAsync"));
  if (!memcpy_async) {
    std::snprintf(error, error_size, "convolution2d: cudaMemcpyAsync is not available");
    return 1;
  }
  if (const int rc =
          memcpy_async(constant, filter, count * sizeof(float), kDeviceToDevice, ctx->stream)) {
    std::snprintf(error, error_size, "convolution2d: upload of the filter failed (CUDA error %d)",
                  rc);
    return rc;
  }
  if (const int rc = ctx->launch(ctx, nullptr, ctx->grid, ctx->block, ctx->shared_mem, ctx->args)) {
    std::snprintf(error, error_size, "convolution2d: launch failed (CUDA error %d)", rc);
    return rc;
  }
  return 0;
}

// Defaults: the fastest configuration of Kernel Tuner's brute-forced recording of this problem on
// an A100 (benchmark_hub convolution_milo, 0.55 ms; its kernel differs in detail), a fair start.
const ktune_param_desc kParams[] = {
    {"block_size_x", "16, 32, 48, 64, 128, 256", "32", "threads per block along x (columns)"},
    {"block_size_y", "1, 2, 4, 8, 16", "4", "threads per block along y (rows)"},
    {"tile_size_x", "1, 2, 3, 4", "1", "outputs per thread along x, block_size_x apart"},
    {"tile_size_y", "1, 2, 3, 4", "3", "outputs per thread along y, block_size_y apart"},
    {"use_shmem", "0, 1", "1",
     "1: stage the input tile and halo in shared memory; 0: read global memory"},
    {"use_padding", "0, 1", "0",
     "shared-memory row stride = block_size_x (mod 32), so warps spanning rows are conflict free"},
    {"filter_size", "3, 5, 7, 9, 11, 13, 15", "15",
     "the problem's f as a compile-time constant (the space pins it to f)"},
    {"reg_rows", "1, 2, 4, 8, 16", "1",
     "adjacent output rows per tile_size_y group, summed in registers from one walk down each "
     "filter column of the shared tile (1: off)"},
    {"full_unroll", "0, 1", "0",
     "1: unroll the loop over filter columns too (straight code, filter_size times longer; "
     "reg_rows > 1)"},
};

const char* const kRestrictions[] = {
    "f % 2 == 1 and 3 <= f <= 15",
    "filter_size == f",
    "block_size_x * block_size_y >= 32",
    "use_padding == 0 or use_shmem == 1",
    "use_padding == 0 or block_size_x % 32 != 0",
    "reg_rows == 1 or use_shmem == 1",
    "full_unroll == 0 or reg_rows > 1",
    // At most 32 accumulators per thread (more spill), and 16 where every tap is unrolled
    // (16 * 225 FMAs of code at f = 15, a second of NVRTC).
    "reg_rows == 1 or tile_size_x * tile_size_y * reg_rows <= 32",
    "full_unroll == 0 or tile_size_x * tile_size_y * reg_rows <= 16",
    "h * w < 2**31",
};

const ktune_problem_desc kProblem[] = {
    {"h", "4096", "image rows"},
    {"w", "4096", "image columns"},
    {"f", "15", "filter width and height (odd, 3 to 15)"},
};

// Floats of |x| < 1: the F*F products sum to a few units in magnitude, and a float sum of 225
// of them is off by at most ~5e-5 (worst case; typically 1e-6) from the exact value.
const ktune_buffer_desc kBuffers[] = {
    {"image", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "h * w", "random", 0, 0},
    {"filter", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "f * f", "random", 0, 0},
    {"out", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "h * w", nullptr, 1e-4, 1e-4},
};

const ktune_arg_desc kArgs[] = {
    {"image", nullptr, 0},
    {"out", nullptr, 0},
    {nullptr, "h", KTUNE_TYPE_I32},
    {nullptr, "w", KTUNE_TYPE_I32},
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kConvolution2d =
    KernelDesc("convolution2d", ktune_kernel_src_convolution2d, "convolution2d.cu", "convolution2d")
        .description(
            "same-size 2-D convolution, fp32, F x F filter in constant memory, global or "
            "shared-memory "
            "input")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("div_up(w, block_size_x * tile_size_x)",
              "div_up(h, block_size_y * tile_size_y * reg_rows)")
        .block("block_size_x", "block_size_y")
        // The input tile with its halo, rows padded to the stride the kernel uses
        // (convolution2d.cu).
        // With reg_rows > 1 the stride makes reg_rows * stride = 16 (mod 32) instead.
        .shared_mem(
            "(4 * (block_size_y * tile_size_y + filter_size - 1) * "
            "(block_size_x * tile_size_x + filter_size - 1 + "
            "use_padding * ((block_size_x - block_size_x * tile_size_x - filter_size + 1) % 32)) "
            "if reg_rows == 1 else "
            "4 * (block_size_y * tile_size_y * reg_rows + filter_size - 1) * "
            "(block_size_x * tile_size_x + filter_size - 1 + use_padding * "
            "((16 // reg_rows - block_size_x * tile_size_x - filter_size + 1) % (32 // "
            "reg_rows)))) "
            "if use_shmem == 1 else 0")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(convolution2d_reference)
        .bytes("(2 * h * w + f * f) * 4")
        .flops("2 * h * w * f * f")
        .run(convolution2d_run);

}  // namespace

const ktune_kernel_desc* convolution2d_kernel() { return &kConvolution2d; }

}  // namespace ktune::builtin
