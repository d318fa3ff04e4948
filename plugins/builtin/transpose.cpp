// Built-in kernel `transpose`: fp32 out = in^T (kernels_src/transpose.cu), the lecture's
// naive, shared-memory tile and padded-tile (32 x 33) versions under one template.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_transpose;

namespace ktune::builtin {
namespace {

std::int64_t problem_value(const ktune_reference_ctx* ctx, const char* name) {
  for (std::size_t i = 0; i < ctx->problem_count; ++i)
    if (std::strcmp(ctx->problem_names[i], name) == 0) return ctx->problem_values[i];
  return -1;
}

// A transposition only moves values, so the comparison is exact.
int transpose_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* in = find_buffer(ctx, "in");
  const ktune_host_buffer* out = find_buffer(ctx, "out");
  const std::int64_t rows = problem_value(ctx, "rows");
  const std::int64_t cols = problem_value(ctx, "cols");
  if (in == nullptr || out == nullptr || rows < 1 || cols < 1 ||
      in->count != static_cast<std::size_t>(rows * cols) || out->count != in->count) {
    std::snprintf(
        error, error_size,
        "transpose: reference needs rows, cols and buffers 'in' and 'out' of rows * cols floats");
    return 1;
  }
  const auto* x = static_cast<const float*>(in->data);
  auto* y = static_cast<float*>(out->data);
  // In 64 x 64 blocks, so neither side strides through the whole matrix per element.
  // Rows of blocks on the host's cores.
  constexpr std::int64_t kBlock = 64;
  const auto bands = static_cast<std::size_t>((rows + kBlock - 1) / kBlock);
  parallel_for(bands, [&](std::size_t first, std::size_t last) {
    for (auto band = static_cast<std::int64_t>(first); band < static_cast<std::int64_t>(last);
         ++band) {
      const std::int64_t r0 = band * kBlock, r1 = std::min(rows, r0 + kBlock);
      for (std::int64_t c0 = 0; c0 < cols; c0 += kBlock) {
        const std::int64_t c1 = std::min(cols, c0 + kBlock);
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t c = c0; c < c1; ++c) y[c * rows + r] = x[r * cols + c];
      }
    }
  });
  return 0;
}

const ktune_param_desc kParams[] = {
    {"variant", "1, 2", "2", "1: naive (strided writes); 2: through a shared-memory tile"},
    {"tile", "16, 32, 64", "32", "tile width: a block covers tile x tile elements"},
    {"rows_per_block", "1, 2, 4, 8, 16, 32", "8",
     "thread rows per block; threads per block = tile * rows_per_block, each thread handles "
     "tile / rows_per_block elements"},
    {"padding", "0, 1", "1",
     "extra column of the shared tile (1: the lecture's 32 x 33, no bank conflicts)"},
};

const char* const kRestrictions[] = {
    "tile % rows_per_block == 0",
    "variant == 2 or padding == 0",   // the naive kernel has no shared memory to pad
    "rows < 2**31 and cols < 2**31",  // 32-bit arguments and indices within a row
};

const ktune_problem_desc kProblem[] = {
    {"rows", "8192", "rows of the input (columns of the output)"},
    {"cols", "8192", "columns of the input (rows of the output)"},
};

const ktune_buffer_desc kBuffers[] = {
    {"in", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "rows * cols", "random", 0, 0},
    {"out", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "rows * cols", nullptr, 0, 0},
};

const ktune_arg_desc kArgs[] = {
    {"in", nullptr, 0},
    {"out", nullptr, 0},
    {nullptr, "rows", KTUNE_TYPE_U32},
    {nullptr, "cols", KTUNE_TYPE_U32},
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kTranspose =
    KernelDesc("transpose", ktune_kernel_src_transpose, "transpose.cu",
               "transpose<TILE, ROWS_PER_BLOCK, PADDING, VARIANT>")
        .description(
            "float32 matrix transpose: naive, shared-memory tile, and padded tile against bank "
            "conflicts")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("div_up(cols, tile)", "div_up(rows, tile)")
        .block("tile", "rows_per_block")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(transpose_reference)
        .bytes("2 * 4 * rows * cols");

}  // namespace

const ktune_kernel_desc* transpose_kernel() { return &kTranspose; }

}  // namespace ktune::builtin
