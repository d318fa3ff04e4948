// Matrix multiply C = A B on Hopper's warpgroup tensor cores (wgmma) in TF32, A m x k, B k x n,
// C m x n, row-major fp32 in memory, fp32 accumulation; every input is rounded to TF32 (round to
// nearest, as cuBLAS's TF32 mode and matmul_tf32 do) before it is multiplied. sm_90a only.
//
// wgmma multiplies a 64-row operand held in the registers of a warpgroup (4 warps) by an
// operand read straight from shared memory, which TF32 requires K-major (k contiguous). Of the
// two row-major inputs only A is K-major, so the roles are swapped: each warpgroup computes
// C^T pieces, D (64 columns of C x BLOCK_M rows of C) = B^T (registers) x A^T (shared memory),
//   - A's tile (BLOCK_M rows x BLOCK_K k) sits in shared memory in wgmma's 128-byte-swizzled
//     K-major layout, one block per 32 columns (BLOCK_M rows of 128 bytes; row r at r * 128,
//     its 16-byte chunk c stored at chunk c ^ (r % 8)), 1024-byte aligned; one descriptor per
//     8-deep k slice (32 bytes further within a block);
//   - B's tile (BLOCK_K k x BLOCK_N columns) sits row-major, its 16-byte chunks swizzled within
//     each row (in a cluster: rows padded by 8 floats instead), and each thread loads its
//     fragments of B^T from it and rounds them to TF32 in registers: a warp's fragment rows g
//     and g + 8 (g = lane / 4) are columns 2g and 2g + 1 of its 16, so a thread's two are one
//     8-byte load per k row (rows t = lane % 4, conflict-free);
//   - A's elements are rounded in shared memory, each by the thread that copied it (or in
//     registers, with A_REGISTERS below).
// A block of WARPGROUPS warpgroups computes BLOCK_M rows x BLOCK_N = 64 * TILES_N * WARPGROUPS
// columns of C; each warpgroup TILES_N 64-column pieces, m64nBLOCK_Mk8 per piece and k slice.
// Tiles go from global to shared memory with cp.async (16 bytes at a time where rows keep
// vectors aligned, else 4) through STAGES buffers: one multiplied, WAIT_DEPTH (0 or 1) whose
// products may still run while the next step starts, and the rest loading ahead.
// A_REGISTERS = 1 moves A's tiles through registers instead: each thread loads its vectors two
// tiles ahead, and rounds and stores those of the next tile (swizzled) while the tensor cores
// multiply the current one.
// CLUSTER_M = 2 or 4 launches clusters of that many blocks one above the other in m, which
// need the same tiles of B: each block copies its share of a tile's rows with bulk copies
// multicast into every block of the cluster (cp.async.bulk .multicast::cluster, completing on
// a per-stage mbarrier in each block), so B is read from L2 once per cluster while every
// block reads its fragments from its own shared memory; a block copies into a stage once
// every block of the cluster has freed it (a per-stage mbarrier with an arrival from each),
// so no barrier spans the cluster per tile. Tiles past an edge of B (or with n not a multiple
// of 4) are copied by each block whole, with cp.async and zero fill.
// PRODUCTS_FIRST = 1 (without a producer) reorders a step: once a tile's products are issued,
// the copies of a later tile are issued and the next tile's A is rounded (with A_REGISTERS:
// stored, as always) while the tensor cores work, so between the block's barrier and the
// products there are only B's fragments (0: the copies and the rounding come first).
// PRODUCER = 1 adds a warpgroup that only loads: it copies a tile into a free buffer, and once
// the copies have landed rounds A's part and hands the buffer over through an mbarrier; the
// WARPGROUPS consumers wait for it there, multiply, and hand it back through another, so no
// block-wide barrier stalls the tensor cores (registers move from the producer to the
// consumers with setmaxnreg). PRODUCER = 0: every thread loads its share of the next tile
// between the multiplications, and a __syncthreads per tile publishes it.
// Every access is guarded (zero fill past the matrix), so m, n and k need not be multiples of
// any tile. ktune defines BLOCK_M, BLOCK_K, TILES_N, WARPGROUPS, STAGES, WAIT_DEPTH, PRODUCER,
// CLUSTER_M, A_REGISTERS, PRODUCTS_FIRST and KTUNE_BLOCK_X, and puts wgmma_tf32.cuh (what this
// kernel shares with matmul_tf32_tma.cu) before this text.

#ifndef PRODUCER
#define PRODUCER 0
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef A_REGISTERS
#define A_REGISTERS 0
#endif
#ifndef PRODUCTS_FIRST
#define PRODUCTS_FIRST 0
#endif
#ifndef KTUNE_BLOCK_X
#define KTUNE_BLOCK_X (128 * (WARPGROUPS + PRODUCER))
#endif

namespace wgmm {

using namespace wgmma_tf32;  // the products, descriptors, rounding, mbarriers (wgmma_tf32.cuh)
using wgmma_tf32::to_tf32;   // beside the float4 overload below
constexpr int kBm = BLOCK_M, kTilesN = TILES_N, kGroups = WARPGROUPS, kStages = STAGES;
constexpr int kBk = BLOCK_K;        // 32 or 64: one or two 128-byte swizzled column blocks of A
constexpr int kDepth = WAIT_DEPTH;  // product groups left in flight at the end of a step
constexpr int kAhead = kStages - 1 - kDepth;  // tiles loading ahead of the one multiplied
constexpr int kProducer = PRODUCER;  // 1: a warpgroup of its own loads, the others multiply
constexpr int kConsumers = 128 * kGroups, kThreads = kConsumers + 128 * kProducer;
constexpr int kLoaders = kProducer ? 128 : kThreads;  // threads that copy and round
constexpr int kBn = 64 * kTilesN * kGroups;
// CLUSTER_M blocks, one above the other in m, share B's tiles: each copies BLOCK_K / CLUSTER_M
// of a tile's rows into all of them (one row per lane of warp 0).
constexpr int kCluster = CLUSTER_M;
constexpr int kRowsPerRank = kBk / kCluster;
// In a cluster B's tiles come by bulk copies, one 16-byte-aligned row each, issued by warp 0
// and completing on a per-stage mbarrier, instead of every thread's cp.async. (The same bulk
// copies without a cluster were measured slower than the threads' cp.async: 0.83 against
// 0.62 ms at 4096^3 on an H100, docs/kernels-matmul-hopper.md.)
// B's rows: without a cluster, unpadded with their 16-byte chunks swizzled (chunk c of row r
// at c ^ 2 (r % 4): the fragment loads of rows t = 0..3 land on different banks, and a warp's
// copies fill whole 128-byte lines); in a cluster, where each row comes whole by a bulk copy,
// padded by 8 floats instead (rows t 8 banks apart).
constexpr bool kSwizzleB = kCluster == 1;
constexpr int kPitchB = kBn + (kSwizzleB ? 0 : 8);  // floats per row of B's tile
constexpr int kStageA = kBm * kBk;                  // floats of A's tile (a multiple of 1024 bytes)
constexpr int kStageB = kBk * kPitchB;              // floats of B's tile
constexpr int kAcc = kBm / 2;                       // accumulators per thread and 64-column piece
static_assert(kBm % 64 == 0 && kBm <= 256, "wgmma's n: 64, 128, 192 or 256 rows of C");
static_assert(kBk == 32 || kBk == 64, "tiles of one or two 32-float column blocks");
static_assert(kDepth == 0 || kDepth == 1, "at most one group of products in flight");
static_assert(kAhead >= 1, "a buffer multiplied, the one still in flight, at least one loading");
static_assert(kCluster == 1 || (kBk % kCluster == 0 && kRowsPerRank <= 32), "a row per lane");
static_assert(kCluster == 1 || !kProducer, "a cluster shares B's tiles without a producer");
// A_REGISTERS = 1: A's tile goes through registers (loaded two tiles ahead, rounded there,
// stored swizzled) instead of cp.async and a rounding pass in shared memory.
constexpr bool kARegs = A_REGISTERS;
// PRODUCTS_FIRST: the copies of the tile kAhead on and the rounding of the next tile's A come
// after this tile's products are issued (while the tensor cores work) instead of before.
constexpr bool kLate = PRODUCTS_FIRST && !kProducer;
constexpr int kAVectors = (kBm * kBk / 4 + kThreads - 1) / kThreads;  // float4 per thread
static_assert(!kARegs || !kProducer, "A through registers without a producer");
static_assert(kThreads == KTUNE_BLOCK_X, "the launch's block is the warpgroups' threads");
// Where every loader copies the same number of whole vectors and the loaders cover whole rows,
// a thread's vectors of a tile lie kRowsA (kRowsB) rows apart in the same columns, so their
// addresses are one per-thread base plus offsets that are the same for every thread.
constexpr int kPassesA = kBm * kBk / 4 / kLoaders, kPassesB = kBk * kBn / 4 / kLoaders;
constexpr int kRowsA = kLoaders / (kBk / 4), kRowsB = kLoaders / (kBn / 4);
constexpr bool kFastA = (kBm * kBk / 4) % kLoaders == 0 && kLoaders % (kBk / 4) == 0 &&
                        kRowsA % 8 == 0;  // (the swizzle repeats every 8 rows)
constexpr bool kFastB =
    (kBk * kBn / 4) % kLoaders == 0 && kLoaders % (kBn / 4) == 0 && (!kSwizzleB || kRowsB % 4 == 0);

// Copies `bytes` (0 to 16) of `src` into 16 bytes at shared address `dst`, zero-filling the rest.
__device__ __forceinline__ void copy16(unsigned dst, const float* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
// Copies 16 bytes of `src` to shared address `dst`.
__device__ __forceinline__ void copy16(unsigned dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
// Copies 4 bytes (or none, zero-filling) of `src` to shared address `dst`.
__device__ __forceinline__ void copy4(unsigned dst, const float* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ float4 to_tf32(float4 x) {
  return make_float4(__uint_as_float(to_tf32(x.x)), __uint_as_float(to_tf32(x.y)),
                     __uint_as_float(to_tf32(x.z)), __uint_as_float(to_tf32(x.w)));
}

// Four floats of row `row` (of `rows`, each `len` long) from column `col` to shared address
// `dst`, zero past the matrix; `vectors`: rows start 16-byte aligned (len % 4 == 0).
__device__ __forceinline__ void load4(unsigned dst, const float* base, unsigned row, unsigned rows,
                                      unsigned col, unsigned len, bool vectors) {
  const bool row_ok = row < rows;
  const float* src = base + (row_ok ? u64(row) * len : 0);
  if (vectors) {
    const int bytes = row_ok && col < len ? 4 * static_cast<int>(min(4u, len - col)) : 0;
    copy16(dst, bytes > 0 ? src + col : base, bytes);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool ok = row_ok && col + j < len;
      copy4(dst + 4 * j, ok ? src + col + j : base, ok ? 4 : 0);
    }
  }
}

// Calls f(row, col, slot) for each 4-float vector of a Rows x Cols tile that thread `tid` of
// `Threads` moves (vector slot * Threads + tid, consecutive threads along a row): the walk of
// the copies, of the rounding in shared memory and of A's registers (slot), which must be the
// same.
template <int Rows, int Cols, int Threads, typename F>
__device__ __forceinline__ void for_each_vector(unsigned tid, F&& f) {
  constexpr int kVectors = Rows * Cols / 4;
#pragma unroll
  for (int p = 0; p < (kVectors + Threads - 1) / Threads; ++p) {
    const unsigned v = p * Threads + tid;
    if (kVectors % Threads == 0 || v < kVectors) f(v / (Cols / 4), v % (Cols / 4) * 4, p);
  }
}

// Byte offset of A's element (row, col) in its swizzled tile (col a multiple of 4: a chunk):
// column block col / 32 (BLOCK_M rows of 128 bytes each), then the row, then the chunk.
__device__ __forceinline__ unsigned swizzled(unsigned row, unsigned col) {
  return col / 32 * (kBm * 128) + row * 128 + (((col % 32 / 4) ^ (row % 8)) << 4);
}

// Float offset of B's element (row, col) in its tile (col a multiple of 4: a chunk).
__device__ __forceinline__ unsigned b_offset(unsigned row, unsigned col) {
  return row * kPitchB + (kSwizzleB ? ((col / 4) ^ (row % 4 * 2)) * 4 : col);
}

#if PRODUCER
// The producer gives registers up and the consumers take them (setmaxnreg): 65,536 per block.
// The producer's unrolled copies need about 100 registers (with fewer they spill), so a
// producer serves one or two consumer warpgroups.
constexpr int kProducerRegisters = kGroups == 1 ? 128 : 104;
static_assert(kGroups <= 2, "a producer and at most 2 consumer warpgroups");
constexpr int kConsumerRegisters = (65536 / 128 - kProducerRegisters) / kGroups / 8 * 8 > 256
                                       ? 256
                                       : (65536 / 128 - kProducerRegisters) / kGroups / 8 * 8;
#endif

// Copies `bytes` (a multiple of 16) of `src` to shared address `dst` in every block of the
// cluster, each copy completing `bytes` of the transaction count of the mbarrier at `bar` (the
// same offset in each block).
__device__ __forceinline__ void copy_multicast(unsigned dst, const float* src, unsigned bytes,
                                               unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(static_cast<unsigned short>((1u << kCluster) - 1))
      : "memory");
}
}  // namespace wgmm

#undef WGMM_CLUSTER

#if CLUSTER_M > 1
#define WGMM_CLUSTER __cluster_dims__(1, CLUSTER_M, 1)
#else
#define WGMM_CLUSTER
#endif

__global__ void WGMM_CLUSTER __launch_bounds__(KTUNE_BLOCK_X, 1)
    matmul_tf32_wgmma(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, unsigned m, unsigned n, unsigned k) {
  using namespace wgmm;
  extern __shared__ float4 wgmm_smem[];
  // A's tiles first, 1024-byte aligned (the swizzle's period), then B's.
  const unsigned raw = smem_address(wgmm_smem);
  const unsigned base = (raw + 1023u) & ~1023u;
  float* const smem = reinterpret_cast<float*>(reinterpret_cast<char*>(wgmm_smem) + (base - raw));
  const unsigned a_base = base;
  float* const b_tiles = smem + kStages * kStageA;

  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32 % 4, group = tid / 128;
  const unsigned g = lane / 4, t = lane % 4;
  const unsigned m0 = blockIdx.y * kBm, n0 = blockIdx.x * kBn;
  const bool a_vectors = k % 4 == 0, b_vectors = n % 4 == 0;
  const unsigned tiles = (k + kBk - 1) / kBk;
  // The threads that load: all of them, or the producer warpgroup's.
  const unsigned loader = kProducer ? tid - kConsumers : tid;
#if CLUSTER_M > 1
  // This block copies rows rank * kRowsPerRank on of each of B's tiles into every block of
  // its cluster. b_full[s] completes once B's tile in stage s has landed here: one arrival
  // (thread 0's, raising the bytes expected where the tile comes by bulk copies) and those
  // bytes. b_free[s] completes once every block of the cluster has freed its stage s (the
  // products of the tile in it done): one arrival from each, so no block copies into a
  // neighbour's buffer that is still being multiplied, and no barrier spans the cluster.
  const unsigned rank = cluster_rank();
  __shared__ u64 b_full[kStages], b_free[kStages];
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      barrier_init(smem_address(&b_full[s]), 1);
      barrier_init(smem_address(&b_free[s]), kCluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync();  // every block's barriers are ready before any copy targets them
#endif

  // Blocks whose tiles lie inside the matrices copy without the guards (most of a large
  // product: fewer instructions per tile).
  const bool inside_mn = m0 + kBm <= m && n0 + kBn <= n && a_vectors && b_vectors;
  // The fast paths' per-thread bases: this loader's first vector of A's and of B's tiles.
  const unsigned row_a = loader / (kBk / 4), col_a = loader % (kBk / 4) * 4;
  const unsigned row_b = loader / (kBn / 4), col_b = loader % (kBn / 4) * 4;
  const unsigned a_dst = swizzled(row_a, col_a), b_dst = b_offset(row_b, col_b) * 4;
  const float* const a_src = a + (inside_mn ? u64(m0 + row_a) * k + col_a : 0);
  const float* const b_src = b + (inside_mn ? u64(row_b) * n + n0 + col_b : 0);
  const auto load_tile = [&](int stage, unsigned tile) {
    const unsigned as = a_base + stage * kStageA * 4;
    const unsigned bs = smem_address(b_tiles + stage * kStageB);
    const unsigned k0 = tile * kBk;
    if (inside_mn && k0 + kBk <= k) {
      const float* const a0 = a + u64(m0) * k + k0;
      const float* const b0 = b + u64(k0) * n + n0;
      if constexpr (!kARegs && kFastA) {
#pragma unroll
        for (int p = 0; p < kPassesA; ++p)
          copy16(as + a_dst + p * kRowsA * 128, a_src + k0 + u64(p * kRowsA) * k);
      } else if constexpr (!kARegs) {
        for_each_vector<kBm, kBk, kLoaders>(loader, [&](unsigned r, unsigned cc, int) {
          copy16(as + swizzled(r, cc), a0 + u64(r) * k + cc);
        });
      }
      if constexpr (kCluster == 1 && kFastB) {
#pragma unroll
        for (int p = 0; p < kPassesB; ++p)
          copy16(bs + b_dst + p * kRowsB * kPitchB * 4, b_src + u64(k0 + p * kRowsB) * n);
      } else if constexpr (kCluster == 1) {
        for_each_vector<kBk, kBn, kLoaders>(loader, [&](unsigned r, unsigned cc, int) {
          copy16(bs + b_offset(r, cc) * 4, b0 + u64(r) * n + cc);
        });
      }
    } else if constexpr (!kARegs) {
      for_each_vector<kBm, kBk, kLoaders>(loader, [&](unsigned r, unsigned cc, int) {
        load4(as + swizzled(r, cc), a, m0 + r, m, k0 + cc, k, a_vectors);
      });
    }
#if CLUSTER_M > 1
    // The blocks of a cluster share n0 and k0, so they take the same branch. Inside B: this
    // block's rows, one per lane of warp 0, into every block of the cluster.
    const unsigned bar = smem_address(&b_full[stage]);
    if (tile >= kStages && tid < 32) {
      // This block's stage is free (load_tile runs after the block's barrier): say so to
      // every block of the cluster, then wait until all have.
      const unsigned free = smem_address(&b_free[stage]);
      if (tid < kCluster) barrier_arrive_remote(free, tid);
      barrier_wait(free, (tile / kStages - 1) & 1);
    }
    if (n0 + kBn <= n && b_vectors && k0 + kBk <= k) {
      if (tid == 0) barrier_arrive_expect(bar, kBk * kBn * 4);
      if (tid < kRowsPerRank) {
        const unsigned r = rank * kRowsPerRank + tid;
        copy_multicast(bs + r * kPitchB * 4, b + u64(k0 + r) * n + n0, kBn * 4, bar);
      }
      return;
    }
    if (tid == 0) barrier_arrive(bar);  // copied whole below, published by the block's barrier
#else
    if (inside_mn && k0 + kBk <= k) return;
#endif
    for_each_vector<kBk, kBn, kLoaders>(loader, [&](unsigned r, unsigned cc, int) {
      load4(bs + b_offset(r, cc) * 4, b, k0 + r, k, n0 + cc, n, b_vectors);
    });
  };
  // The copies of the tile kAhead after `tile`: one commit group (empty past the end).
  [[maybe_unused]] const auto load_ahead = [&](unsigned tile) {
    const unsigned next = tile + kAhead;
    if (next < tiles) load_tile(next % kStages, next);
    commit();
  };
  // Rounds to TF32, in place, the elements of A's tile in `stage` this thread copied, and
  // makes its writes visible to wgmma (the async proxy).
  const auto round_tile = [&](int stage) {
    char* const as = reinterpret_cast<char*>(smem + stage * kStageA);
    if constexpr (kFastA) {
      float4 x[kPassesA];  // every load first, so their latencies overlap
#pragma unroll
      for (int p = 0; p < kPassesA; ++p)
        x[p] = *reinterpret_cast<const float4*>(as + a_dst + p * kRowsA * 128);
#pragma unroll
      for (int p = 0; p < kPassesA; ++p)
        *reinterpret_cast<float4*>(as + a_dst + p * kRowsA * 128) = to_tf32(x[p]);
    } else {
      for_each_vector<kBm, kBk, kLoaders>(loader, [&](unsigned r, unsigned cc, int) {
        float4* const p = reinterpret_cast<float4*>(as + swizzled(r, cc));
        *p = to_tf32(*p);
      });
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  };

  // A_REGISTERS: this thread's vectors of A's tile `tile` (zero past the matrix), and their
  // store, rounded to TF32, into `stage`.
  using AVectors = float4[kAVectors];
  [[maybe_unused]] const auto fetch_a = [&](unsigned tile, AVectors& ra) {
    const unsigned k0 = tile * kBk;
    const bool inside = inside_mn && k0 + kBk <= k;
    for_each_vector<kBm, kBk, kThreads>(tid, [&](unsigned r, unsigned cc, int slot) {
      const unsigned row = m0 + r, col = k0 + cc;
      const float* src = a + u64(row) * k + col;
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (inside || (a_vectors && row < m && col + 3 < k)) {
        x = __ldg(reinterpret_cast<const float4*>(src));
      } else if (row < m) {
        if (col < k) x.x = __ldg(src);
        if (col + 1 < k) x.y = __ldg(src + 1);
        if (col + 2 < k) x.z = __ldg(src + 2);
        if (col + 3 < k) x.w = __ldg(src + 3);
      }
      ra[slot] = x;
    });
  };
  [[maybe_unused]] const auto store_a = [&](int stage, const AVectors& ra) {
    char* const as = reinterpret_cast<char*>(smem + stage * kStageA);
    for_each_vector<kBm, kBk, kThreads>(tid, [&](unsigned r, unsigned cc, int slot) {
      *reinterpret_cast<float4*>(as + swizzled(r, cc)) = to_tf32(ra[slot]);
    });
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  };

#if PRODUCER
  // Stage s is full once the producer's 128 threads have arrived (copies landed, A rounded),
  // empty once every consumer thread has (its products of the tile done).
  __shared__ u64 full[kStages], empty[kStages];
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      barrier_init(smem_address(&full[s]), kLoaders);
      barrier_init(smem_address(&empty[s]), kConsumers);
    }
  }
  __syncthreads();  // the barriers are initialised; no block-wide barrier from here on
  if (tid >= kConsumers) {
    // The producer: refills a stage once it is empty, and publishes a tile kAhead tiles after
    // issuing its copies (the copies of the tiles between stay in flight).
    registers_dec<kProducerRegisters>();
    const auto publish = [&](unsigned tile) {
      round_tile(tile % kStages);
      barrier_arrive(smem_address(&full[tile % kStages]));
    };
    for (unsigned tile = 0; tile < tiles; ++tile) {
      const int stage = tile % kStages;
      if (tile >= kStages) barrier_wait(smem_address(&empty[stage]), (tile / kStages + 1) & 1);
      load_tile(stage, tile);
      commit();
      if (tile >= kAhead) {
        wait_copies<kAhead>();  // tile - kAhead has landed
        publish(tile - kAhead);
      }
    }
    wait_copies<0>();
    for (unsigned tile = tiles > kAhead ? tiles - kAhead : 0; tile < tiles; ++tile) publish(tile);
    return;
  }
  registers_inc<kConsumerRegisters>();
#endif

  float acc[kTilesN][kAcc];
#pragma unroll
  for (int i = 0; i < kTilesN; ++i)
#pragma unroll
    for (int j = 0; j < kAcc; ++j) acc[i][j] = 0.0f;

  // This warp's fragments of B^T for one tile: [piece][k slice][register].
  using Fragments = unsigned[kTilesN][kBk / 8][4];
  // One tile: wait for it (and, without a producer, refill the buffer it frees), multiply it
  // (asynchronously), and wait for the products of tile - WAIT_DEPTH.
  // A_REGISTERS: two sets of A's vectors, alternating: a step stores the next tile's (fetched a
  // step ago) and fetches the one after (its load latency hidden by a whole step).
  AVectors ra0, ra1;
  const auto step = [&](unsigned tile, Fragments& fr, AVectors& fetch_into,
                        const AVectors& store_from) {
    const int stage = tile % kStages;
#if PRODUCER
    barrier_wait(smem_address(&full[stage]), (tile / kStages) & 1);
#else
    if constexpr (!kLate) {                      // (else done a step ago)
      wait_copies<kAhead - 1>();                 // this thread's copies of `tile` have landed
      if constexpr (!kARegs) round_tile(stage);  // (through registers: stored a step ago)
    }
    // Every thread's part of `tile` is in; every warpgroup has finished the products of
    // tile - 1 - WAIT_DEPTH (the wait below, one step ago), so its buffer is free (in a
    // cluster, load_tile tells the other blocks through b_free).
    __syncthreads();
#if CLUSTER_M > 1
    barrier_wait(smem_address(&b_full[stage]), (tile / kStages) & 1);  // B's tile is here
#endif
    if constexpr (!kLate) load_ahead(tile);
    if constexpr (kARegs)
      if (tile + 2 < tiles) fetch_a(tile + 2, fetch_into);
#endif

    const float* const bs = b_tiles + stage * kStageB;
#pragma unroll
    for (int p = 0; p < kTilesN; ++p) {
      // Fragment rows g and g + 8 of the warp's 16 are columns 2g and 2g + 1 of its piece of C
      // (the epilogue stores them so): one 8-byte load per k row, conflict-free (rows t = 0..3
      // swizzled, or padded, onto different banks: each half-warp's 16 lanes on 32 banks).
      const unsigned col = (group * kTilesN + p) * 64 + warp * 16 + 2 * g;
#pragma unroll
      for (int s = 0; s < kBk / 8; ++s) {
        const float* q = bs + b_offset(8 * s + t, col / 4 * 4) + col % 4;
        const float2 lo = *reinterpret_cast<const float2*>(q);
        const float2 hi = *reinterpret_cast<const float2*>(q + 4 * kPitchB);
        fr[p][s][0] = to_tf32(lo.x);
        fr[p][s][1] = to_tf32(lo.y);
        fr[p][s][2] = to_tf32(hi.x);
        fr[p][s][3] = to_tf32(hi.y);
      }
    }
    mma_fence();
    const unsigned as = a_base + stage * kStageA * 4;
#pragma unroll
    for (int s = 0; s < kBk / 8; ++s)
#pragma unroll
      for (int p = 0; p < kTilesN; ++p)
        mma(acc[p], fr[p][s], descriptor(as + s / 4 * (kBm * 128) + s % 4 * 32));
    mma_commit();
#if !PRODUCER
    if constexpr (kLate) {
      // While the tensor cores work: the copies of tile + kAhead, then the next tile's A
      // rounded (its copies have landed once all but the kAhead - 1 newest groups have).
      load_ahead(tile);
      wait_copies<kAhead - 1>();
      if constexpr (!kARegs)
        if (tile + 1 < tiles) round_tile((tile + 1) % kStages);
    }
#endif
    // While the tensor cores work: the next tile's A, fetched above, into its buffer, whose
    // last products (tile + 1 - STAGES) every warpgroup finished before this tile's barrier.
    if constexpr (kARegs)
      if (tile + 1 < tiles) store_a((tile + 1) % kStages, store_from);
    // The products of tile - WAIT_DEPTH are done: their fragments and buffer are free.
    mma_wait<kDepth>();
#if PRODUCER
    if (tile >= kDepth) barrier_arrive(smem_address(&empty[(tile - kDepth) % kStages]));
#endif
  };

#if !PRODUCER
  // The first kAhead tiles; every step commits one group (empty past the end), so waiting for
  // all but kAhead - 1 groups always means "the oldest tile has landed".
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < tiles) load_tile(s, s);
    commit();
  }
  if constexpr (kLate) {
    wait_copies<kAhead - 1>();  // tile 0 has landed
    if constexpr (!kARegs) round_tile(0);
  }
  if constexpr (kARegs) {
    fetch_a(0, ra0);
    store_a(0, ra0);
    if (tiles > 1) fetch_a(1, ra1);
  }
#endif
  // Two fragment sets, alternating: a step's products may still read the previous step's.
  // Whole pairs in the loop and an odd last tile after it: every path alternates the sets,
  // so no fragment is written while products that read it may run (else ptxas serialises
  // the products).
  Fragments f0, f1;
  unsigned tile = 0;
  for (; tile + 1 < tiles; tile += 2) {
    step(tile, f0, ra0, ra1);
    step(tile + 1, f1, ra1, ra0);
  }
  if (tile < tiles) step(tile, f0, ra0, ra1);
  mma_wait<0>();
  wait_copies<0>();  // nothing may be in flight into shared memory when the block exits
  if constexpr (kCluster > 1) cluster_sync();  // nor may a neighbour still copy into it
#pragma unroll
  for (int i = 0; i < kTilesN; ++i)
#pragma unroll
    for (int j = 0; j < kAcc; ++j) fence_operand(acc[i][j]);

      // acc[p]: the piece's columns warp * 16 + 2g and + 1 (store_piece, wgmma_tf32.cuh).
#pragma unroll
  for (int p = 0; p < kTilesN; ++p)
    store_piece(c, acc[p], m0, n0 + (group * kTilesN + p) * 64 + warp * 16 + 2 * g, t, m, n);
}
