// Built-in kernel `matmul`: fp32 C = A B (kernels_src/matmul.cu), the lectures' tiled kernel
// and two register-blocked ones. Its reference is a configuration, not a host function: a host
// product of the default 4096^3 problem is 137 GFLOP, far too slow to run for every worker, so
// the lecture's tiled kernel computes the reference on the GPU (and the GPU tests check that
// configuration against a double-precision host product at small sizes).
#include <iterator>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_matmul;

namespace ktune::builtin {
namespace {

const ktune_param_desc kParams[] = {
    {"variant", "1, 2, 3", "2",
     "1: the lecture's tiled kernel (square tile, one element per thread); 2: register-blocked; "
     "3: register-blocked with two shared-memory stages and 4 x 4 pieces read as float4"},
    {"block_m", "16, 32, 64, 128, 256", "128", "rows of C per block (variant 1: the tile width)"},
    {"block_n", "16, 32, 64, 128, 256", "128", "columns of C per block"},
    {"block_k", "8, 16, 32", "8", "depth of the shared-memory tiles of A and B"},
    {"thread_m", "1, 2, 4, 8, 16", "8", "rows of C per thread (variants 2, 3)"},
    {"thread_n", "1, 2, 4, 8, 16", "8", "columns of C per thread (variants 2, 3)"},
    {"padding", "0, 1, 4", "4", "floats added to each shared-memory row against bank conflicts"},
    {"unroll", "1, 2, 4, 8, 16, 32", "8", "unroll depth of the k loop over a tile"},
    {"vector_width", "1, 2, 4", "4",
     "floats per global load (float, float2, float4) where the row length allows it (variants 2, "
     "3)"},
    {"maxrregcount", "0, 64, 128", "0",
     "register limit per thread (0: none; the kernel then leaves out __launch_bounds__, which "
     "would override it)"},
    {"launch_bounds", "0, 2, 4", "0",
     "minimum blocks per multiprocessor in __launch_bounds__ (0: the block size alone, which the "
     "kernel always declares so that every block shape can launch)"},
    {"warp_rows", "0, 2, 4, 8", "0",
     "variant 3: each warp's threads as warp_rows rows of 32 / warp_rows (0: the block's rows in "
     "order)"},
};

const char* const kRestrictions[] = {
    "variant != 1 or (block_m == block_n == block_k and thread_m == 1 and thread_n == 1 and "
    "vector_width == 1)",
    // Variant 3 reads 4 x 4 pieces as float4 from rows that stay 16-byte aligned.
    "variant != 3 or (thread_m % 4 == 0 and thread_n % 4 == 0 and padding % 4 == 0)",
    "block_m % thread_m == 0 and block_n % thread_n == 0",
    // Variants 2 and 3: at least a warp, and at most 64 accumulators of a thread's 255 registers
    // (128 for variant 3, below).
    "variant == 1 or (block_m // thread_m) * (block_n // thread_n) >= 32",
    // Variant 3 also as cuBLAS's FFMA kernels hold C: 128 accumulators (8 x 16) per thread.
    "thread_m * thread_n <= 64 or (variant == 3 and thread_m * thread_n <= 128)",
    "block_k % vector_width == 0 and block_n % vector_width == 0",
    // A warp layout that differs from the row-major one and tiles the block's threads.
    "warp_rows == 0 or (variant == 3 and (block_n // thread_n) * warp_rows > 32 and "
    "(block_n // thread_n) % (32 // warp_rows) == 0 and (block_m // thread_m) % warp_rows == 0)",
    "unroll <= block_k",
    // __launch_bounds__ overrides -maxrregcount in ptxas: a space with both would hold configs
    // whose register limit silently is not the one named.
    "maxrregcount == 0 or launch_bounds == 0",
    "maxrregcount == 0 or "
    "maxrregcount * (block_m // thread_m) * (block_n // thread_n) <= max_registers_per_block",
    "launch_bounds == 0 or "
    "launch_bounds * (block_m // thread_m) * (block_n // thread_n) <= "
    "max_threads_per_multiprocessor",
    "m < 2**31 and n < 2**31 and k < 2**31",  // 32-bit arguments and tile indices
};

// C is checked against the reference configuration with |c - ref| <= 5e-3 + 1e-4 |ref|. The
// inputs are uniform in [-1, 1); both variants add an element's k products in the same order,
// but nothing should depend on that, so the tolerance covers two different fp32 summations:
// the classic estimate sqrt(k) * u * sum |a||b| (u = 2^-24, sum |a||b| ~ k / 4) is 3.9e-3 at
// k = 4096, and the error of one sequential sum, rms u * k / (3 sqrt 2), puts six standard
// deviations of the difference of two sums below 5e-3 up to k = 2^15. A wrong element is off
// by at least one product (|a b| ~ 0.25 on average), so the check still catches it.
const ktune_buffer_desc kBuffers[] = {
    {"a", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "m * k", "random", 0, 0},
    {"b", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "k * n", "random", 0, 0},
    {"c", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "m * n", nullptr, 5e-3, 1e-4},
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kMatmul =
    KernelDesc(
        "matmul", ktune_kernel_src_matmul, "matmul.cu",
        "matmul<VARIANT, BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, PADDING, VECTOR_WIDTH>")
        .description(
            "float32 matrix multiply C = A B: the lecture's shared-memory tiles and "
            "register-blocked kernels")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kMatmulProblem)
        .grid("div_up(n, block_n)", "div_up(m, block_m)")
        .block("block_n // thread_n", "block_m // thread_m")
        // The tile of A (rounded up to 16 bytes), then the tile of B, rows padded; variant 3 has
        // two such stages.
        .shared_mem(
            "4 * (variant // 3 + 1) * (div_up(block_k * (block_m + padding), 4) * 4 + block_k * "
            "(block_n + padding))")
        .buffers(kBuffers)
        .args(kMatmulArgs)
        // The lecture's kernel: 32 x 32 tiles, one element per thread, 8 KiB of shared memory (no
        // opt-in needed, which the reference run does not do).
        .reference_config(
            "variant=1,block_m=32,block_n=32,block_k=32,thread_m=1,thread_n=1,padding=0,unroll=8,"
            "vector_width=1,maxrregcount=0,launch_bounds=0")
        .bytes("4 * (m * k + k * n + m * n)")
        .flops("2 * m * n * k");

}  // namespace

const ktune_kernel_desc* matmul_kernel() { return &kMatmul; }

}  // namespace ktune::builtin
