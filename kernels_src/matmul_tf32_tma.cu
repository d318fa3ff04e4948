// Matrix multiply C = A B on Hopper's warpgroup tensor cores (wgmma) in TF32, warp-specialised
// and fed by the TMA: A m x k, B k x n, C m x n, row-major fp32 in memory, fp32 accumulation;
// every input is rounded to TF32 (to nearest, ties away from zero, as cuBLAS's TF32 mode,
// matmul_tf32 and matmul_tf32_wgmma do) before it is multiplied. sm_90a only.
//
// As in matmul_tf32_wgmma, TF32's shared-memory operand must be K-major and only A is, so each
// consumer warpgroup computes D (64 columns of C x BLOCK_M rows of C) = B^T (registers) x A^T
// (shared memory), one m64nBLOCK_Mk8 per 8-deep slice of a 32-deep tile. What differs is who
// moves the tiles:
//   - A producer warpgroup (the block's last) does nothing else. One of its threads issues, per
//     tile, one TMA copy of A's tile (a box of 32 k x BLOCK_M rows, 128-byte swizzle: exactly
//     the layout wgmma reads) and one of each 32-column box of B's tile (32 k rows x 32
//     columns, 128-byte swizzle: row r at r * 128 bytes, its 16-byte chunk c at chunk c ^ (r % 8)),
//     all completing on the stage's `full` mbarrier; the TMA zero-fills past the matrices.
//   - LAG tiles later the producer's 128 threads round that tile's A in place (ROUND_BATCH
//     16-byte vectors loaded at a time) and arrive on the stage's `ready` mbarrier.
//   - The WARPGROUPS consumers wait for `ready`, load and round their fragments of B^T from the
//     swizzled boxes, issue the tile's products and, once the products of tile - WAIT_DEPTH are
//     done, free that tile's stage through its `empty` mbarrier (one arrival per warp), which
//     the producer waits for before copying into the stage again. No barrier spans the block.
//   - Fragment rows g and g + 8 (g = lane / 4) of a warp are two adjacent columns of C, one
//     8-byte pair: lane g of warp w (w % 2 = h) takes chunk 2 h + g / 4 + 4 ((g % 4) / 2) of
//     its 32-column box, floats 2 (g % 2) and 2 (g % 2) + 1 of it, so the 16 lanes of a
//     half-warp read 8 different chunks of 4 rows: conflict-free 8-byte loads.
//   - Registers move from the producer to the consumers (setmaxnreg): the consumers hold
//     BLOCK_M / 2 accumulators each.
//   - CLUSTER_M = 2 or 4 launches clusters of that many blocks one above the other in m, which
//     share B's tiles: each block's producer copies its share of a tile's boxes, multicast into
//     every block of the cluster (completing on each block's `full`), once every consumer warp
//     of the cluster has freed that stage (each arrives on `empty` of every block; the
//     hand-over has the default, CTA-scope semantics: see barrier_arrive_remote). So B is read
//     from the L2 once per cluster; A's tile stays the block's own.
// The TMA needs its tensor maps from the host (cuTensorMapEncodeTiled): the kernel's first two
// arguments are the maps of A (2-D, k x m, box 32 x BLOCK_M) and of B (n x k, box 32 x 32), both
// FLOAT32 with the 128-byte swizzle; the built-in description's run hook builds them. Rows of A
// and B must start 16-byte aligned (k and n multiples of 4); m, n and k need not be multiples
// of any tile. ktune defines BLOCK_M, WARPGROUPS, STAGES, WAIT_DEPTH, LAG, ROUND_BATCH and
// CLUSTER_M, and puts wgmma_tf32.cuh (what this kernel shares with matmul_tf32_wgmma.cu) before
// this text.

namespace wgtma {

using namespace wgmma_tf32;  // the products, descriptors, rounding, mbarriers (wgmma_tf32.cuh)
constexpr int kBm = BLOCK_M, kGroups = WARPGROUPS, kStages = STAGES, kDepth = WAIT_DEPTH;
constexpr int kBk = 32, kBn = 64 * kGroups;
constexpr int kConsumers = 128 * kGroups, kThreads = kConsumers + 128;
constexpr int kStageA = kBm * kBk * 4, kStageB = kBk * kBn * 4;  // bytes
constexpr int kBoxes = kBn / 32;                                 // 32-column boxes of B
constexpr int kAcc = kBm / 2;                                    // accumulators per consumer thread
constexpr int kLag = LAG, kBatch = ROUND_BATCH, kCluster = CLUSTER_M;
constexpr int kBoxesPerRank = kBoxes / kCluster;  // the boxes each block of a cluster copies
static_assert(kBm % 64 == 0 && kBm <= 256, "wgmma's n: 64, 128, 192 or 256 rows of C");
static_assert(kGroups >= 2 && kGroups <= 4, "2 to 4 consumer warpgroups");
static_assert(kCluster >= 1 && kBoxes % kCluster == 0, "whole boxes of B per block of a cluster");
static_assert(kDepth == 0 || kDepth == 1, "at most one group of products in flight");
// The producer copies a stage again once the products of its last tile are done, which needs
// the rounding of a later tile (kLag + kDepth ahead) to have happened first.
static_assert(kLag >= 1 && kLag + kDepth <= kStages - 1, "the producer never waits on itself");
// Registers: the block's 65,536 split evenly at launch (in multiples of 8 per thread); the
// producer gives up all but kProducerRegs, the consumers take them (setmaxnreg, from the
// block's own pool).
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
constexpr int kProducerRegs = kGroups == 4 ? 32 : 40;
constexpr int kConsumerRegs = (kLaunchRegs + (kLaunchRegs - kProducerRegs) / kGroups) / 8 * 8;
static_assert(kConsumerRegs <= 240, "setmaxnreg's range");
static_assert(kBatch >= 1 && (kGroups < 4 || kBatch <= 4), "the producer's registers");

struct alignas(128) TensorMap {  // a CUtensorMap, as cuTensorMapEncodeTiled wrote it
  u64 opaque[16];
};

// The box at coordinates (c0, c1) of the tensor `map` describes, to shared address `dst`,
// completing its bytes on the mbarrier at `bar`.
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, int c0, int c1,
                                         unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same box into shared address `dst` of every block of the cluster, completing on the
// mbarrier at `bar` (the same offset) in each.
__device__ __forceinline__ void tma_load_multicast(unsigned dst, const TensorMap* map, int c0,
                                                   int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar),
      "h"(static_cast<unsigned short>((1u << kCluster) - 1))
      : "memory");
}

}  // namespace wgtma

#if CLUSTER_M > 1
#define WGTMA_CLUSTER __cluster_dims__(1, CLUSTER_M, 1)
#else
#define WGTMA_CLUSTER
#endif

__global__ void WGTMA_CLUSTER __launch_bounds__(wgtma::kThreads, 1)
    matmul_tf32_tma(const __grid_constant__ wgtma::TensorMap map_a,
                    const __grid_constant__ wgtma::TensorMap map_b, float* __restrict__ c,
                    unsigned m, unsigned n, unsigned k) {
  using namespace wgtma;
  extern __shared__ float4 wgtma_smem[];
  // STAGES tiles of A, then of B, 1024-byte aligned (the swizzle's period); the mbarriers after.
  const unsigned raw = smem_address(wgtma_smem);
  const unsigned base = (raw + 1023u) & ~1023u;
  char* const smem = reinterpret_cast<char*>(wgtma_smem) + (base - raw);
  const unsigned a_base = base, b_base = base + kStages * kStageA;
  u64* const bars = reinterpret_cast<u64*>(smem + kStages * (kStageA + kStageB));
  // full[s]: the copies into stage s have landed; ready[s]: its A is rounded; empty[s]: every
  // consumer warp is done with it.
  const auto full = [&](int s) { return smem_address(bars + s); };
  const auto ready = [&](int s) { return smem_address(bars + kStages + s); };
  const auto empty = [&](int s) { return smem_address(bars + 2 * kStages + s); };

  const unsigned tid = threadIdx.x;
  const unsigned m0 = blockIdx.y * kBm, n0 = blockIdx.x * kBn;
  const unsigned tiles = (k + kBk - 1) / kBk;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      barrier_init(full(s), 1);
      barrier_init(ready(s), 128);
      barrier_init(empty(s), kConsumers / 32 * kCluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(&map_a)) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(&map_b)) : "memory");
  }
  // The barriers are initialised (in every block of the cluster, before any copy or arrival
  // targets them); no block-wide barrier from here on but the last.
  if constexpr (kCluster > 1)
    cluster_sync();
  else
    __syncthreads();
  const unsigned rank = kCluster > 1 ? cluster_rank() : 0;

  if (tid >= kConsumers) {
    // The producer.
    registers_dec<kProducerRegs>();
    const unsigned p = tid - kConsumers;
    // Rounds A's tile `tile` once its copies have landed, and hands the stage over.
    const auto round = [&](unsigned tile) {
      const int s = tile % kStages;
      barrier_wait(full(s), (tile / kStages) & 1);
      char* const as = smem + s * kStageA;
      constexpr int kVectors = kStageA / 16 / 128;  // 16-byte vectors per producer thread
      constexpr int kStep = kVectors < kBatch ? kVectors : kBatch;
      // (a last batch may be partial: 12 vectors of a 192-row tile in batches of 8)
      constexpr bool kWhole = kVectors % kStep == 0;
#pragma unroll
      for (int v0 = 0; v0 < kVectors; v0 += kStep) {
        uint4 x[kStep];
#pragma unroll
        for (int i = 0; i < kStep; ++i)
          if (kWhole || v0 + i < kVectors)
            x[i] = *reinterpret_cast<const uint4*>(as + ((v0 + i) * 128 + p) * 16);
#pragma unroll
        for (int i = 0; i < kStep; ++i) {
          if (!kWhole && v0 + i >= kVectors) break;
          x[i].x += 0x1000u;
          x[i].y += 0x1000u;
          x[i].z += 0x1000u;
          x[i].w += 0x1000u;
          *reinterpret_cast<uint4*>(as + ((v0 + i) * 128 + p) * 16) = x[i];
        }
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to wgmma
      barrier_arrive(ready(s));
    };
    for (unsigned tile = 0; tile < tiles; ++tile) {
      const int s = tile % kStages;
      if (p == 0) {
        if (tile >= kStages) barrier_wait(empty(s), (tile / kStages - 1) & 1);
        barrier_arrive_expect(full(s), kStageA + kStageB);
        const int k0 = tile * kBk;
        tma_load(a_base + s * kStageA, &map_a, k0, m0, full(s));
#pragma unroll
        for (int i = 0; i < kBoxesPerRank; ++i) {
          const unsigned j = rank * kBoxesPerRank + i;
          if constexpr (kCluster > 1)
            tma_load_multicast(b_base + s * kStageB + j * 4096, &map_b, n0 + j * 32, k0, full(s));
          else
            tma_load(b_base + s * kStageB + j * 4096, &map_b, n0 + j * 32, k0, full(s));
        }
      }
      __syncwarp();
      if (tile >= kLag) round(tile - kLag);
    }
    for (unsigned tile = tiles > kLag ? tiles - kLag : 0; tile < tiles; ++tile) round(tile);
    // No block of a cluster leaves while another may still copy into it or arrive on its
    // barriers (the consumers meet the producers here after their stores).
    if constexpr (kCluster > 1) cluster_sync();
    return;
  }

  // A consumer.
  registers_inc<kConsumerRegs>();
  const unsigned lane = tid % 32, warp = tid / 32 % 4, group = tid / 128;
  const unsigned g = lane / 4, t = lane % 4;
  // The warp's 16 columns of C lie in B's box `box`, chunks {2 h, 2 h + 1, 2 h + 4, 2 h + 5}.
  const unsigned box = group * 2 + warp / 2, h = warp % 2;
  const unsigned chunk = 2 * h + g / 4 + 4 * ((g % 4) / 2);
  const unsigned col = box * 32 + 4 * chunk + 2 * (g % 2);  // this lane's two, in the block
  // Byte offsets in a stage of B of this lane's pair in rows t and t + 4 of the first slice.
  const unsigned off_lo = box * 4096 + t * 128 + ((chunk ^ t) << 4) + 8 * (g % 2);
  const unsigned off_hi = box * 4096 + (t + 4) * 128 + ((chunk ^ (t + 4)) << 4) + 8 * (g % 2);

  float acc[kAcc];
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[j] = 0.0f;
  using Fragments = unsigned[kBk / 8][4];
  // One tile: wait until it is ready, multiply it (asynchronously), wait for the products of
  // tile - WAIT_DEPTH and free that tile's stage.
  const auto step = [&](unsigned tile, Fragments& fr) {
    const int s = tile % kStages;
    const unsigned phase = (tile / kStages) & 1;
    barrier_wait(full(s), phase);   // B's copies (the async proxy's writes) are visible
    barrier_wait(ready(s), phase);  // A is rounded
    const char* const bs = smem + kStages * kStageA + s * kStageB;
#pragma unroll
    for (int sl = 0; sl < kBk / 8; ++sl) {
      const float2 lo = *reinterpret_cast<const float2*>(bs + off_lo + sl * 1024);
      const float2 hi = *reinterpret_cast<const float2*>(bs + off_hi + sl * 1024);
      fr[sl][0] = to_tf32(lo.x);
      fr[sl][1] = to_tf32(lo.y);
      fr[sl][2] = to_tf32(hi.x);
      fr[sl][3] = to_tf32(hi.y);
    }
    mma_fence();
    const unsigned as = a_base + s * kStageA;
#pragma unroll
    for (int sl = 0; sl < kBk / 8; ++sl) mma(acc, fr[sl], descriptor(as + sl * 32));
    mma_commit();
    mma_wait<kDepth>();
    if (lane == 0 && tile + 1 > kDepth) {
      const unsigned e = empty((tile - kDepth) % kStages);
      if constexpr (kCluster > 1) {
#pragma unroll
        for (int r = 0; r < kCluster; ++r) barrier_arrive_remote(e, r);  // this block's too
      } else {
        barrier_arrive(e);
      }
    }
  };
  // Two fragment sets, alternating, in whole pairs of tiles (an odd last one after): no
  // fragment is written while products that read it may run (else ptxas serialises them).
  Fragments f0, f1;
  unsigned tile = 0;
  for (; tile + 1 < tiles; tile += 2) {
    step(tile, f0);
    step(tile + 1, f1);
  }
  if (tile < tiles) step(tile, f0);
  mma_wait<0>();
#pragma unroll
  for (int j = 0; j < kAcc; ++j) fence_operand(acc[j]);

  // This lane's columns col and col + 1 of the block's piece of C (store_piece, wgmma_tf32.cuh).
  store_piece(c, acc, m0, n0 + col, t, m, n);
  if constexpr (kCluster > 1) cluster_sync();
}
