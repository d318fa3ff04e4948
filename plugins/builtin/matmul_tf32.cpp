// Built-in kernel `matmul_tf32`: C = A B of fp32 matrices on the tensor cores in TF32 with fp32
// accumulation (kernels_src/matmul_tf32.cu), mma.sync tiles fed by a cp.async pipeline. Its
// reference is the exact product in double on the host (all cores, blocked), rounded once; the
// tolerance covers TF32's rounding of the inputs. The same product on Hopper's warpgroup
// instructions: `matmul_tf32_wgmma` (every thread copies with cp.async) and `matmul_tf32_tma`
// (a producer warpgroup copies with the TMA), over wgmma_tf32.cuh, which the two share.
#include <cuda.h>  // CUtensorMap and its enumerations (types only: ktune hands over the function)

#include <algorithm>
#include <cstdio>
#include <deque>
#include <iterator>
#include <string>
#include <vector>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_matmul_tf32;
extern const char* const ktune_kernel_src_matmul_tf32_wgmma;
extern const char* const ktune_kernel_src_matmul_tf32_tma;
extern const char* const ktune_kernel_src_wgmma_tf32;

namespace ktune::builtin {
namespace {

// C = A B in double, rounded once. Rows of C in blocks of 16: each row of B, streamed once per
// block, meets the block's 16 rows of A, and the block's accumulators stay in the cache.
int matmul_tf32_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* a = find_buffer(ctx, "a");
  const ktune_host_buffer* b = find_buffer(ctx, "b");
  const ktune_host_buffer* c = find_buffer(ctx, "c");
  const std::int64_t m = problem_value(ctx, "m", -1), n = problem_value(ctx, "n", -1),
                     k = problem_value(ctx, "k", -1);
  if (!a || !b || !c || m < 1 || n < 1 || k < 1) {
    std::snprintf(error, error_size, "matmul_tf32: reference needs buffers a, b, c and m, n, k");
    return 1;
  }
  if (a->count != static_cast<std::size_t>(m * k) || b->count != static_cast<std::size_t>(k * n) ||
      c->count != static_cast<std::size_t>(m * n)) {
    std::snprintf(error, error_size,
                  "matmul_tf32: buffer sizes do not match m=%lld, n=%lld, k=%lld",
                  static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
    return 1;
  }
  const auto* pa = static_cast<const float*>(a->data);
  const auto* pb = static_cast<const float*>(b->data);
  auto* pc = static_cast<float*>(c->data);
  constexpr std::int64_t kRows = 16;
  const auto blocks = static_cast<std::size_t>((m + kRows - 1) / kRows);
  parallel_for(blocks, [&](std::size_t begin, std::size_t end) {
    std::vector<double> acc(static_cast<std::size_t>(kRows * n));
    for (std::size_t blk = begin; blk < end; ++blk) {
      const std::int64_t r0 = static_cast<std::int64_t>(blk) * kRows;
      const std::int64_t rows = std::min(kRows, m - r0);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const float* brow = pb + kk * n;
        for (std::int64_t r = 0; r < rows; ++r) {
          const double x = pa[(r0 + r) * k + kk];
          double* out = acc.data() + r * n;
          for (std::int64_t j = 0; j < n; ++j) out[j] += x * brow[j];
        }
      }
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < n; ++j)
          pc[(r0 + r) * n + j] = static_cast<float>(acc[static_cast<std::size_t>(r * n + j)]);
    }
  });
  return 0;
}

// The source of a wgmma kernel: wgmma_tf32.cuh (what the two share), then the kernel's own
// text, each part's compiler messages located in its own file.
const char* wgmma_source(const char* file, const char* text) {
  static std::deque<std::string> sources;  // (alive as long as the process; never moved)
  sources.push_back("#line 1 \"wgmma_tf32.cuh\"\n" + std::string(ktune_kernel_src_wgmma_tf32) +
                    "#line 1 \"" + file + "\"\n" + text);
  return sources.back().c_str();
}

const ktune_param_desc kParams[] = {
    {"block_m", "32, 64, 128, 256", "128", "rows of C per block"},
    {"block_n", "32, 64, 128, 256", "128", "columns of C per block"},
    {"block_k", "16, 32", "32", "depth of the shared-memory tiles of A and B"},
    {"warps_m", "1, 2, 4", "2", "warps per block along m"},
    {"warps_n", "1, 2, 4", "4", "warps per block along n"},
    {"stages", "2, 3, 4", "3", "tiles of A and B in flight through shared memory (cp.async)"},
    {"convert_in_smem", "0, 1", "0",
     "1: round each element to TF32 once in shared memory; 0: in every warp's fragment load"},
};

const char* const kRestrictions[] = {
    // A warp's piece of C is whole 16 x 8 tiles, at most 128 accumulators per thread.
    "(block_m // warps_m) % 16 == 0 and (block_n // warps_n) % 8 == 0",
    "block_m % warps_m == 0 and block_n % warps_n == 0",
    "(block_m // warps_m) * (block_n // warps_n) <= 4096",
    "m < 2**31 and n < 2**31 and k < 2**31",  // 32-bit arguments and tile indices
    "compute_capability >= 80",               // mma.sync with TF32 and cp.async
};

// Inputs uniform in [-1, 1). TF32 rounds each input to 10 mantissa bits (relative error up to
// u = 2^-11), so a product is off by a b (da + db), standard deviation about 0.82 u / 3 = 1.3e-4;
// k = 4096 of them sum to 8.5e-3, and the largest of 16.7 M elements is near 5.5 standard
// deviations, 0.047. The tolerance, 0.1 + 1e-3 |ref|, holds up to k of about 16384 (6 standard
// deviations there). A missing 8-deep slice of products moves an element by about 0.94.
const ktune_buffer_desc kBuffers[] = {
    {"a", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "m * k", "random", 0, 0},
    {"b", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "k * n", "random", 0, 0},
    {"c", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "m * n", nullptr, 0.1, 1e-3},
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kMatmulTf32 =
    KernelDesc("matmul_tf32", ktune_kernel_src_matmul_tf32, "matmul_tf32.cu", "matmul_tf32")
        .description(
            "matrix multiply C = A B of fp32 matrices on the tensor cores in TF32 (mma.sync, fp32 "
            "accumulation, cp.async pipeline)")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kMatmulProblem)
        .grid("div_up(n, block_n)", "div_up(m, block_m)")
        .block("32 * warps_m * warps_n")
        // STAGES tiles of A (rows padded by 4 floats) and of B (rows padded by 8).
        .shared_mem("4 * stages * (block_m * (block_k + 4) + block_k * (block_n + 8))")
        .buffers(kBuffers)
        .args(kMatmulArgs)
        .reference(matmul_tf32_reference)
        .bytes("4 * (m * k + k * n + m * n)")
        .flops("2 * m * n * k");

// matmul_tf32_wgmma: the same product on Hopper's warpgroup instructions (sm_90a). A block is
// WARPGROUPS x 128 threads (and a producer warpgroup) computing block_m rows x 64 * tiles_n *
// warpgroups columns of C.
const ktune_param_desc kWgmmaParams[] = {
    {"block_m", "64, 128, 192, 256", "128", "rows of C per block (wgmma's n)"},
    {"block_k", "32, 64", "32", "depth of the shared-memory tiles (one or two swizzled blocks)"},
    {"tiles_n", "1, 2, 4", "1", "64-column pieces of C per warpgroup"},
    {"warpgroups", "1, 2, 3, 4", "4", "warpgroups (128 threads each) per block, side by side in n"},
    {"stages", "2, 3, 4, 5, 6", "3", "shared-memory buffers of A's and B's tiles (cp.async)"},
    {"wait_depth", "0, 1", "0", "groups of products left running while the next tile starts"},
    {"producer", "0, 1", "0",
     "1: a warpgroup of its own loads, handing tiles over through mbarriers"},
    {"cluster_m", "1, 2, 4", "1",
     "blocks (one above the other in m) sharing B's tiles: each copies a share of a tile's rows "
     "into all of them (bulk copies multicast in the cluster)"},
    {"a_registers", "0, 1", "0",
     "1: A's tiles through registers (loaded two tiles ahead, rounded there); 0: cp.async"},
    {"products_first", "0, 1", "1",
     "1: a step issues its products first, then a later tile's copies and the next tile's "
     "rounding while the tensor cores work; 0: copies and rounding first (without a producer)"},
};

const char* const kWgmmaRestrictions[] = {
    "block_m * tiles_n <= 256",      // at most 128 accumulators per thread
    "stages - 1 - wait_depth >= 1",  // at least one tile loading ahead
    // Accumulators and B's fragments (two sets with wait_depth 1) fit a thread's registers
    // with room, and a block's the 65,536 of an SM: 128 accumulators on 512 threads do not
    // compile.
    "block_m * tiles_n / 2 + (1 + wait_depth) * tiles_n * block_k / 2 <= 200",
    "block_m * tiles_n * warpgroups < 1024",
    // A producer's registers (setmaxnreg) serve one or two consumer warpgroups.
    "producer == 0 or warpgroups <= 2",
    // Clusters without a producer.
    "cluster_m == 1 or producer == 0",
    // A through registers: at most 4 vectors per thread in each of two sets, without a
    // producer, and room beside the accumulators (192 x 256 blocks of 512 threads spill).
    "a_registers == 0 or (producer == 0 and block_m * block_k <= 2048 * warpgroups and "
    "block_m * tiles_n * warpgroups * 64 <= 40960)",
    // The order of a step where every thread loads (a producer loads on its own).
    "products_first == 0 or producer == 0", "m < 2**31 and n < 2**31 and k < 2**31",
    "compute_capability == 90",  // wgmma exists on sm_90a alone
};

const ktune_kernel_desc kMatmulTf32Wgmma =
    KernelDesc("matmul_tf32_wgmma",
               wgmma_source("matmul_tf32_wgmma.cu", ktune_kernel_src_matmul_tf32_wgmma),
               "matmul_tf32_wgmma.cu", "matmul_tf32_wgmma")
        .description(
            "matrix multiply C = A B of fp32 matrices on Hopper's warpgroup tensor cores in TF32 "
            "(wgmma from registers and 128-byte-swizzled shared memory, fp32 accumulation, "
            "cp.async pipeline; sm_90a)")
        .options(kOptions)
        .arch_specific()
        .params(kWgmmaParams)
        .restrictions(kWgmmaRestrictions)
        .problem(kMatmulProblem)
        // Whole clusters in m: the blocks past m load zeros and store nothing.
        .grid("div_up(n, 64 * tiles_n * warpgroups)", "cluster_m * div_up(m, cluster_m * block_m)")
        .block("128 * (warpgroups + producer)")
        // 1024 bytes to align A's tiles to the swizzle's period (and room for the producer's
        // or the cluster's mbarriers), then STAGES tiles of A (block_m rows of block_k floats) and
        // of B (block_k rows of the block's columns, swizzled, or padded by 8 in a cluster).
        .shared_mem(
            "1024 + 128 * (producer + cluster_m // 2) + 4 * stages * block_k * "
            "(block_m + 64 * tiles_n * warpgroups + 8 * min(cluster_m - 1, 1))")
        .buffers(kBuffers)
        .args(kMatmulArgs)
        .reference(matmul_tf32_reference)
        .bytes("4 * (m * k + k * n + m * n)")
        .flops("2 * m * n * k");

// matmul_tf32_tma: the same product, warp-specialised and fed by the TMA (sm_90a). A block is
// WARPGROUPS consumer warpgroups (64 columns of C each) and a producer warpgroup.
const ktune_param_desc kTmaParams[] = {
    {"block_m", "64, 128, 192, 256", "128", "rows of C per block (wgmma's n)"},
    {"warpgroups", "2, 3, 4", "4",
     "consumer warpgroups (128 threads, 64 columns of C each) beside the producer warpgroup"},
    {"stages", "2, 3, 4, 5, 6", "4", "shared-memory buffers of A's and B's 32-deep tiles (TMA)"},
    {"wait_depth", "0, 1", "0", "groups of products left running while the next tile starts"},
    {"lag", "1, 2, 3", "2",
     "tiles between the producer's copies of a tile and its rounding of the tile's A"},
    {"round_batch", "1, 2, 4, 8", "2",
     "16-byte vectors of A each producer thread loads before it rounds and stores them"},
    {"cluster_m", "1, 2, 4", "1",
     "blocks one above the other in m launched as a cluster, sharing B's tiles: each copies "
     "its share of a tile's boxes into all of them (TMA multicast)"},
};

const char* const kTmaRestrictions[] = {
    // The producer copies into a stage again once the products of its last tile are done,
    // which needs the rounding of a later tile: it must never wait on itself.
    "lag + wait_depth <= stages - 1",
    // Registers per consumer thread after the producer gives its up (setmaxnreg: 112, 152 or
    // 232 with 4, 3 or 2 consumers): accumulators, one or two fragment sets and 32 more (with
    // fewer, ptxas serialises the products: 192 rows, 3 consumers, wait depth 1);
    // a producer beside 4 consumers keeps 32 registers, room for 4 vectors at a time (NVRTC's
    // code spills 8 bytes there at 4, none at 2).
    "block_m // 2 + 16 * (1 + wait_depth) + 32 <= "
    "(112 if warpgroups == 4 else 152 if warpgroups == 3 else 232)",
    "warpgroups < 4 or round_batch <= 4",
    // Each block of a cluster copies whole 32-column boxes of B.
    "(2 * warpgroups) % cluster_m == 0",
    // The TMA's row strides are multiples of 16 bytes.
    "n % 4 == 0 and k % 4 == 0", "m < 2**31 and n < 2**31 and k < 2**31",
    "compute_capability == 90",  // wgmma and the TMA as used here: sm_90a
};

// The run hook: the tensor maps of A (k x m, box 32 x block_m) and of B (n x k, box 32 x 32),
// FLOAT32 with the 128-byte swizzle and zero fill past the edges, take the places of the two
// pointers. Built once per buffer pair, shape and block height (the maps of the previous launch
// are kept), with the driver's cuTensorMapEncodeTiled that ktune hands over.
int matmul_tf32_tma_run(const ktune_run_ctx* ctx, char* error, std::size_t error_size) {
  int found = 0;
  const auto value = [&](const char* name) {
    const std::int64_t v = ctx->value(ctx, name, &found);
    return found ? v : -1;
  };
  const std::int64_t m = value("m"), n = value("n"), k = value("k"), block_m = value("block_m");
  void* a = ctx->buffer(ctx, "a", nullptr);
  void* b = ctx->buffer(ctx, "b", nullptr);
  void* c = ctx->buffer(ctx, "c", nullptr);
  if (!a || !b || !c || m < 1 || n < 1 || k < 1 || block_m < 1) {
    std::snprintf(error, error_size, "matmul_tf32_tma: needs buffers a, b, c, m, n, k, block_m");
    return 1;
  }
  if (n % 4 != 0 || k % 4 != 0) {
    std::snprintf(error, error_size,
                  "matmul_tf32_tma: the TMA needs rows starting 16-byte aligned (n = %lld and "
                  "k = %lld must be multiples of 4)",
                  static_cast<long long>(n), static_cast<long long>(k));
    return 1;
  }
  struct Maps {
    void *a = nullptr, *b = nullptr;
    std::int64_t m = 0, n = 0, k = 0, block_m = 0;
    CUtensorMap map_a{}, map_b{};
  };
  thread_local Maps maps;
  if (maps.a != a || maps.b != b || maps.m != m || maps.n != n || maps.k != k ||
      maps.block_m != block_m) {
    using Encode =
        CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                     const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                     CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    const auto encode = reinterpret_cast<Encode>(ctx->cuda_function("cuTensorMapEncodeTiled"));
    if (!encode) {
      std::snprintf(error, error_size,
                    "matmul_tf32_tma: the CUDA driver has no cuTensorMapEncodeTiled");
      return 1;
    }
    // A 2-D map of the row-major rows x inner matrix at `address`, boxes of 32 x box_rows.
    const auto encode_map = [&](CUtensorMap& map, void* address, std::int64_t inner,
                                std::int64_t rows, std::int64_t box_rows, const char* which) {
      const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(rows)};
      const cuuint64_t stride[1] = {cuuint64_t(inner) * 4};
      const cuuint32_t box[2] = {32, cuuint32_t(box_rows)}, unit[2] = {1, 1};
      const CUresult rc =
          encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, address, dims, stride, box, unit,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (rc != CUDA_SUCCESS)
        std::snprintf(error, error_size,
                      "matmul_tf32_tma: cuTensorMapEncodeTiled for %s failed (CUDA driver error "
                      "%d)",
                      which, static_cast<int>(rc));
      return rc == CUDA_SUCCESS;
    };
    Maps next{a, b, m, n, k, block_m, {}, {}};
    if (!encode_map(next.map_a, a, k, m, block_m, "A") || !encode_map(next.map_b, b, n, k, 32, "B"))
      return 1;
    maps = next;
  }
  auto mu = static_cast<unsigned>(m), nu = static_cast<unsigned>(n), ku = static_cast<unsigned>(k);
  void* args[] = {&maps.map_a, &maps.map_b, &c, &mu, &nu, &ku};
  const int rc = ctx->launch(ctx, nullptr, ctx->grid, ctx->block, ctx->shared_mem, args);
  if (rc != 0)
    std::snprintf(error, error_size, "matmul_tf32_tma: launch failed (CUDA error %d)", rc);
  return rc;
}

const ktune_kernel_desc kMatmulTf32Tma =
    KernelDesc("matmul_tf32_tma",
               wgmma_source("matmul_tf32_tma.cu", ktune_kernel_src_matmul_tf32_tma),
               "matmul_tf32_tma.cu", "matmul_tf32_tma")
        .description(
            "matrix multiply C = A B of fp32 matrices on Hopper's warpgroup tensor cores in TF32, "
            "warp-specialised: a producer warpgroup copies tiles with the TMA and rounds A, "
            "consumer warpgroups multiply (wgmma, fp32 accumulation; sm_90a; the run hook passes "
            "TMA tensor maps of A and B in place of their pointers)")
        .options(kOptions)
        .arch_specific()
        .params(kTmaParams)
        .restrictions(kTmaRestrictions)
        .problem(kMatmulProblem)
        // Whole clusters in m: the blocks past m load zeros (the TMA's fill) and store nothing.
        .grid("div_up(n, 64 * warpgroups)", "cluster_m * div_up(m, cluster_m * block_m)")
        .block("128 * (warpgroups + 1)")
        // Up to 1023 bytes to align the tiles to the swizzle's period and room for the
        // mbarriers, then STAGES tiles of A (block_m x 32 floats) and of B (32 x the block's
        // columns).
        .shared_mem("1280 + 128 * stages * (block_m + 64 * warpgroups)")
        .buffers(kBuffers)
        .args(kMatmulArgs)
        .run(matmul_tf32_tma_run)
        .reference(matmul_tf32_reference)
        .bytes("4 * (m * k + k * n + m * n)")
        .flops("2 * m * n * k");

}  // namespace

const ktune_kernel_desc* matmul_tf32_kernel() { return &kMatmulTf32; }
const ktune_kernel_desc* matmul_tf32_wgmma_kernel() { return &kMatmulTf32Wgmma; }
const ktune_kernel_desc* matmul_tf32_tma_kernel() { return &kMatmulTf32Tma; }

}  // namespace ktune::builtin
