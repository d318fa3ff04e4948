// Built-in kernel `soa_aos`: an explicit Euler step of n particles stored as an array of
// structures or as a structure of arrays (kernels_src/soa_aos.cu), the layout a categorical
// parameter.
//
// The reference sees the problem and the buffers, never the configuration, yet the expected
// output depends on the layout. So each layout has its own input and output buffers, sized by
// the layout parameter: `10 * n if layout == "aos" else 0`. A configuration uses the buffers of
// its layout; those of the other layout have no elements, so they are neither generated,
// compared nor touched. The reference fills every output that has elements from the input of
// the same layout, without knowing which configuration asked: it is layout independent.
#include <cstdint>
#include <cstdio>
#include <iterator>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_soa_aos;

namespace ktune::builtin {
namespace {

constexpr float kDt = 0.01f;
constexpr std::size_t kIn = 10, kOut = 6;  // px py pz vx vy vz fx fy fz m / px py pz vx vy vz

// The kernel's arithmetic in float, operation for operation; the GPU may fuse a multiply-add.
void particle_step(const float (&a)[kIn], float (&b)[kOut]) {
  const float inv_m = 1.0f / a[9];
  for (std::size_t d = 0; d < 3; ++d) {
    b[d] = a[d] + a[3 + d] * kDt;
    b[3 + d] = a[3 + d] + a[6 + d] * inv_m * kDt;
  }
}

int soa_aos_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const std::int64_t n = problem_value(ctx, "n", -1);
  if (n < 1) {
    std::snprintf(error, error_size, "soa_aos: reference needs n >= 1");
    return 1;
  }
  const auto count = static_cast<std::size_t>(n);
  for (const bool aos : {true, false}) {
    const ktune_host_buffer* in = find_buffer(ctx, aos ? "in_aos" : "in_soa");
    const ktune_host_buffer* out = find_buffer(ctx, aos ? "out_aos" : "out_soa");
    if (!in || !out) {
      std::snprintf(error, error_size,
                    "soa_aos: reference needs buffers in_aos, out_aos, in_soa, out_soa");
      return 1;
    }
    if (out->count == 0) continue;  // the other layout's
    if (in->count != kIn * count || out->count != kOut * count) {
      std::snprintf(error, error_size,
                    "soa_aos: %s holds %zu values and %s %zu; expected %zu and %zu", in->name,
                    in->count, out->name, out->count, kIn * count, kOut * count);
      return 1;
    }
    const auto* src = static_cast<const float*>(in->data);
    auto* dst = static_cast<float*>(out->data);
    for (std::size_t i = 0; i < count; ++i) {
      float a[kIn], b[kOut];
      for (std::size_t f = 0; f < kIn; ++f) a[f] = aos ? src[i * kIn + f] : src[f * count + i];
      particle_step(a, b);
      for (std::size_t f = 0; f < kOut; ++f) (aos ? dst[i * kOut + f] : dst[f * count + i]) = b[f];
    }
  }
  return 0;
}

const ktune_param_desc kParams[] = {
    {"block_size", "64, 128, 256, 512, 1024", "256", "threads per block"},
    {"elements_per_thread", "1, 2, 4, 8", "1", "particles per thread, block_size apart"},
    {"layout", "\"aos\", \"soa\"", "\"soa\"", "aos: in[i * 10 + field]; soa: in[field * n + i]"},
    {"use_shmem", "0, 1", "0",
     "aos only: stage the block's structures through shared memory, coalesced"},
};

const char* const kRestrictions[] = {
    "use_shmem == 0 or layout == 'aos'",
    "10 * n < 2**32",
};

const ktune_problem_desc kProblem[] = {
    {"n", "8388608", "number of particles"},
};

// Positions, velocities, forces and masses all in [0.5, 2): masses well away from 0.
const ktune_buffer_desc kBuffers[] = {
    {"in_aos", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "10 * n if layout == 'aos' else 0",
     "random(0.5, 2)", 0, 0},
    {"out_aos", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "6 * n if layout == 'aos' else 0", nullptr,
     1e-6, 1e-6},
    {"in_soa", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "10 * n if layout == 'soa' else 0",
     "random(0.5, 2)", 0, 0},
    {"out_soa", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "6 * n if layout == 'soa' else 0", nullptr,
     1e-6, 1e-6},
};

const ktune_arg_desc kArgs[] = {
    {"in_aos", nullptr, 0},         {"out_aos", nullptr, 0},
    {"in_soa", nullptr, 0},         {"out_soa", nullptr, 0},
    {nullptr, "n", KTUNE_TYPE_U32}, {nullptr, "0.01", KTUNE_TYPE_F32},  // kDt
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kSoaAos =
    KernelDesc("soa_aos", ktune_kernel_src_soa_aos, "soa_aos.cu",
               "soa_aos")
        .description(
            "particle update (Euler step), fp32, array of structures vs structure of arrays")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("div_up(n, block_size * elements_per_thread)")
        .block("block_size")
        .shared_mem("block_size * elements_per_thread * (10 + 6) * 4 if use_shmem == 1 else 0")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(soa_aos_reference)
        .bytes("(10 + 6) * 4 * n")  // ten floats read and six written per particle
        .flops("16 * n");           // a division, then 3 x (2 + 3) multiplies and adds

}  // namespace

const ktune_kernel_desc* soa_aos_kernel() { return &kSoaAos; }

}  // namespace ktune::builtin
