// Built-in kernel `stencil3d`: one sweep of a 7-point stencil over an fp32 3-D grid with the
// lectures' z-marching kernels (kernels_src/stencil3d.cu): naive, register-pipelined, and
// register-pipelined with a shared-memory plane or with four points per thread as float4.
#include <cstdint>
#include <cstdio>
#include <iterator>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_stencil3d;

namespace ktune::builtin {
namespace {

// The stencil's weights: a diffusion step, out = in + 0.1 * (sum of neighbours - 6 * in).
constexpr float kC0 = 0.4f;
constexpr float kC1 = 0.1f;

// In double, rounded once: the GPU's float sums in any order stay within the tolerance.
int stencil3d_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* in = find_buffer(ctx, "in");
  const ktune_host_buffer* out = find_buffer(ctx, "out");
  const std::int64_t nx = problem_value(ctx, "nx", -1), ny = problem_value(ctx, "ny", -1);
  const std::int64_t nz = problem_value(ctx, "nz", -1);
  if (!in || !out || nx < 1 || ny < 1 || nz < 1) {
    std::snprintf(error, error_size, "stencil3d: reference needs buffers in, out and nx, ny, nz");
    return 1;
  }
  const auto count = static_cast<std::size_t>(nx * ny * nz);
  if (in->count != count || out->count != count) {
    std::snprintf(error, error_size,
                  "stencil3d: buffers hold %zu and %zu values, not nx * ny * nz = %zu", in->count,
                  out->count, count);
    return 1;
  }
  const auto* a = static_cast<const float*>(in->data);
  auto* b = static_cast<float*>(out->data);
  const std::int64_t plane = nx * ny;
  parallel_for(static_cast<std::size_t>(nz), [&](std::size_t begin, std::size_t end) {
    for (auto z = static_cast<std::int64_t>(begin); z < static_cast<std::int64_t>(end); ++z) {
      for (std::int64_t y = 0; y < ny; ++y) {
        for (std::int64_t x = 0; x < nx; ++x) {
          const std::int64_t i = z * plane + y * nx + x;
          const bool interior = x > 0 && x < nx - 1 && y > 0 && y < ny - 1 && z > 0 && z < nz - 1;
          if (!interior) {
            b[i] = a[i];
            continue;
          }
          const double sum =
              double(a[i - 1]) + a[i + 1] + a[i - nx] + a[i + nx] + a[i - plane] + a[i + plane];
          b[i] = static_cast<float>(double(kC0) * a[i] + double(kC1) * sum);
        }
      }
    }
  });
  return 0;
}

const ktune_param_desc kParams[] = {
    {"block_size_x", "32, 64, 128, 256", "64", "threads per block along x"},
    {"block_size_y", "1, 2, 4, 8, 16", "4", "threads per block along y"},
    {"variant", "\"naive\", \"registers\", \"shared\", \"vector\"", "\"shared\"",
     "naive: 7 global loads per point; registers: z-1/z/z+1 in registers; shared: and the plane in "
     "shared memory; vector: as registers, 4 points along x per thread moved as float4"},
    {"z_chunk", "4, 8, 16, 32, 64, 128, 256, 512", "64",
     "planes each thread marches through (grid.z chunks the z axis)"},
    {"maxrregcount", "0, 40", "0",
     "vector: register limit per thread (0: none), for more resident warps"},
    {"offsets", "64, 32", "64", "vector: bits of the grid offsets (32: fewer registers)"},
};

const char* const kRestrictions[] = {
    // Chunks of nz or more planes are one chunk: keep only the smallest such value.
    "z_chunk == 4 or z_chunk // 2 < nz",
    "maxrregcount == 0 or variant == 'vector'",
    "offsets == 64 or (variant == 'vector' and nx * ny * nz < 2**31)",
};

const ktune_problem_desc kProblem[] = {
    {"nx", "512", "grid points along x (contiguous)"},
    {"ny", "512", "grid points along y"},
    {"nz", "512", "grid points along z (the marching axis)"},
};

const ktune_buffer_desc kBuffers[] = {
    {"in", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "nx * ny * nz", "random", 0, 0},
    {"out", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "nx * ny * nz", nullptr, 1e-6, 1e-5},
};

const ktune_arg_desc kArgs[] = {
    {"in", nullptr, 0},
    {"out", nullptr, 0},
    {nullptr, "nx", KTUNE_TYPE_I32},
    {nullptr, "ny", KTUNE_TYPE_I32},
    {nullptr, "nz", KTUNE_TYPE_I32},
    {nullptr, "0.4", KTUNE_TYPE_F32},  // kC0
    {nullptr, "0.1", KTUNE_TYPE_F32},  // kC1
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kStencil3d =
    KernelDesc("stencil3d", ktune_kernel_src_stencil3d, "stencil3d.cu", "stencil3d")
        .description(
            "7-point 3-D stencil, fp32, z-marching: naive, register pipelining, shared-memory "
            "plane, float4 rows")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("div_up(nx, block_size_x * (4 if variant == 'vector' else 1))",
              "div_up(ny, block_size_y)", "div_up(nz, z_chunk)")  // vector: 4 points a thread
        .block("block_size_x", "block_size_y")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(stencil3d_reference)
        // Every point read once and written once is the ideal: compare GB/s with the copy kernel's.
        .bytes("8 * nx * ny * nz")
        .flops("8 * max(nx - 2, 0) * max(ny - 2, 0) * max(nz - 2, 0)");

}  // namespace

const ktune_kernel_desc* stencil3d_kernel() { return &kStencil3d; }

}  // namespace ktune::builtin
