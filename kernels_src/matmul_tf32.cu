// Matrix multiply C = A B on the tensor cores in TF32, A m x k, B k x n, C m x n, row-major fp32
// in memory, fp32 accumulation: each product's inputs are rounded to TF32 (10-bit mantissa,
// round to nearest) as they enter the tensor cores, as cuBLAS's TF32 mode does.
//
// A block of WARPS_M x WARPS_N warps computes a BLOCK_M x BLOCK_N tile of C; each warp a
// (BLOCK_M / WARPS_M) x (BLOCK_N / WARPS_N) piece of it as 16 x 8 tiles, one
// mma.sync.m16n8k8 (TF32 in, fp32 accumulate) per tile and 8-deep slice of k. Tiles of A
// (BLOCK_M x BLOCK_K) and B (BLOCK_K x BLOCK_N) go from global to shared memory with cp.async
// (16 bytes at a time where the row length keeps vectors aligned, else 4), STAGES of them in
// flight: while the warps multiply one stage, the next STAGES - 1 are loading. Rows of A's
// tile are padded by 4 floats and B's by 8, so the fragment loads of a warp (rows g, columns
// t of A; rows t, columns g of B; g = lane / 4, t = lane % 4) hit 32 different banks.
// Every access is guarded (zero fill past the matrix), so m, n and k need not be multiples of
// any tile. CONVERT_IN_SMEM = 1 rounds each element to TF32 once, in shared memory, by the
// thread that copied it (after its copies land, before the barrier), instead of in every warp's
// fragment load (an element of B is loaded by WARPS_M warps, one of A by WARPS_N): the same
// rounding, fewer conversions. ktune defines BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N,
// STAGES, CONVERT_IN_SMEM and KTUNE_BLOCK_X (the threads per block); offsets are 64-bit.

#ifndef KTUNE_BLOCK_X
#define KTUNE_BLOCK_X (32 * WARPS_M * WARPS_N)
#endif
#ifndef CONVERT_IN_SMEM
#define CONVERT_IN_SMEM 0
#endif

namespace tf32mm {

using u64 = unsigned long long;
constexpr int kBm = BLOCK_M, kBn = BLOCK_N, kBk = BLOCK_K, kStages = STAGES;
constexpr int kWarpsM = WARPS_M, kWarpsN = WARPS_N, kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWm = kBm / kWarpsM, kWn = kBn / kWarpsN;  // a warp's piece of C
constexpr int kMi = kWm / 16, kNi = kWn / 8;             // its 16 x 8 tiles
constexpr int kPitchA = kBk + 4, kPitchB = kBn + 8;      // floats per shared-memory row
constexpr int kStageA = kBm * kPitchA, kStage = kStageA + kBk * kPitchB;
static_assert(kWm % 16 == 0 && kWn % 8 == 0, "warp pieces are whole 16 x 8 tiles");
static_assert(kBk % 8 == 0 && kBn % 4 == 0, "k slices of 8, rows of whole vectors");
static_assert(kThreads == KTUNE_BLOCK_X, "the launch's block is the warps' threads");

__device__ __forceinline__ unsigned smem_address(const float* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies `bytes` (0 to 16) of `src` into 16 bytes at `dst`, zero-filling the rest.
__device__ __forceinline__ void copy16(float* dst, const float* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(bytes));
}
// Copies 4 bytes (or none, zero-filling) of `src` to `dst`.
__device__ __forceinline__ void copy4(float* dst, const float* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(bytes));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_pending() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// x rounded to TF32 (to nearest, ties away from zero, as cvt.rna.tf32.f32) in the upper 19
// bits the tensor cores read: they ignore the low 13, so adding half a unit of the last TF32
// place (0x1000) rounds in one integer add where the conversion takes three instructions
// (matmul_tf32_wgmma.cu says more).
__device__ __forceinline__ unsigned to_tf32(float x) { return __float_as_uint(x) + 0x1000u; }

// Four floats of row `row` (of `rows`, each `len` long) from column `col` into `dst`, zero past
// the matrix; `vectors`: rows start 16-byte aligned (len % 4 == 0), so one 16-byte copy serves.
__device__ __forceinline__ void load4(float* dst, const float* base, unsigned row, unsigned rows,
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
      copy4(dst + j, ok ? src + col + j : base, ok ? 4 : 0);
    }
  }
}

// Calls f(row, col) for each 4-float vector of a Rows x Cols tile that thread `tid` moves
// (vector p * kThreads + tid, consecutive threads along a row): the walk of the copies and of
// the conversion in shared memory, which must be the same.
template <int Rows, int Cols, typename F>
__device__ __forceinline__ void for_each_vector(unsigned tid, F&& f) {
  constexpr int kVectors = Rows * Cols / 4;
#pragma unroll
  for (int p = 0; p < (kVectors + kThreads - 1) / kThreads; ++p) {
    const unsigned v = p * kThreads + tid;
    if (kVectors % kThreads == 0 || v < kVectors) f(v / (Cols / 4), v % (Cols / 4) * 4);
  }
}

}  // namespace tf32mm

__global__ void __launch_bounds__(tf32mm::kThreads)
    matmul_tf32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                unsigned m, unsigned n, unsigned k) {
  using namespace tf32mm;
  extern __shared__ float4 tf32mm_smem[];
  float* const smem = reinterpret_cast<float*>(tf32mm_smem);
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned g = lane / 4, t = lane % 4;
  const unsigned warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const unsigned m0 = blockIdx.y * kBm, n0 = blockIdx.x * kBn;
  const bool a_vectors = k % 4 == 0, b_vectors = n % 4 == 0;
  const unsigned tiles = (k + kBk - 1) / kBk;

  // Tile `tile` of A and B into stage `stage`, vector by vector, consecutive threads along rows.
  const auto load_tile = [&](int stage, unsigned tile) {
    float* const as = smem + stage * kStage;
    float* const bs = as + kStageA;
    const unsigned k0 = tile * kBk;
    for_each_vector<kBm, kBk>(tid, [&](unsigned r, unsigned cc) {
      load4(as + r * kPitchA + cc, a, m0 + r, m, k0 + cc, k, a_vectors);
    });
    for_each_vector<kBk, kBn>(tid, [&](unsigned r, unsigned cc) {
      load4(bs + r * kPitchB + cc, b, k0 + r, k, n0 + cc, n, b_vectors);
    });
  };

  // Rounds to TF32, in place, the elements of stage `stage` this thread copied (the same walk as
  // load_tile), once its copies of that stage have landed.
  const auto convert_tile = [&](int stage) {
    float* const as = smem + stage * kStage;
    float* const bs = as + kStageA;
    const auto round4 = [](float* p) {
      float4 x = *reinterpret_cast<float4*>(p);
      x.x = __uint_as_float(to_tf32(x.x));
      x.y = __uint_as_float(to_tf32(x.y));
      x.z = __uint_as_float(to_tf32(x.z));
      x.w = __uint_as_float(to_tf32(x.w));
      *reinterpret_cast<float4*>(p) = x;
    };
    for_each_vector<kBm, kBk>(tid, [&](unsigned r, unsigned cc) { round4(as + r * kPitchA + cc); });
    for_each_vector<kBk, kBn>(tid, [&](unsigned r, unsigned cc) { round4(bs + r * kPitchB + cc); });
  };
  // A fragment element: rounded here, or already rounded in shared memory.
  const auto frag = [](float x) {
    if constexpr (CONVERT_IN_SMEM)
      return __float_as_uint(x);
    else
      return to_tf32(x);
  };

  float acc[kMi][kNi][4];
#pragma unroll
  for (int i = 0; i < kMi; ++i)
#pragma unroll
    for (int j = 0; j < kNi; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

        // The first STAGES - 1 tiles; every step commits one group (empty past the end), so waiting
        // for all but STAGES - 2 groups always means "the oldest tile has landed".
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load_tile(s, s);
    commit();
  }
  for (unsigned tile = 0; tile < tiles; ++tile) {
    wait_pending<kStages - 2>();
    if constexpr (CONVERT_IN_SMEM) convert_tile(tile % kStages);
    __syncthreads();  // the tile is in every thread's view; the stage refilled below is free
    const unsigned next = tile + kStages - 1;
    if (next < tiles) load_tile(next % kStages, next);
    commit();

    const float* const as = smem + (tile % kStages) * kStage;
    const float* const bs = as + kStageA;
#pragma unroll
    for (int kk = 0; kk < kBk; kk += 8) {
      unsigned fa[kMi][4], fb[kNi][2];
#pragma unroll
      for (int i = 0; i < kMi; ++i) {
        const float* p = as + (warp_m * kWm + i * 16 + g) * kPitchA + kk + t;
        fa[i][0] = frag(p[0]);
        fa[i][1] = frag(p[8 * kPitchA]);
        fa[i][2] = frag(p[4]);
        fa[i][3] = frag(p[8 * kPitchA + 4]);
      }
#pragma unroll
      for (int j = 0; j < kNi; ++j) {
        const float* p = bs + (kk + t) * kPitchB + warp_n * kWn + j * 8 + g;
        fb[j][0] = frag(p[0]);
        fb[j][1] = frag(p[4 * kPitchB]);
      }
#pragma unroll
      for (int i = 0; i < kMi; ++i) {
#pragma unroll
        for (int j = 0; j < kNi; ++j) {
          asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, "
              "%7}, {%8, %9}, {%0, %1, %2, %3};\n"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(fa[i][0]), "r"(fa[i][1]), "r"(fa[i][2]), "r"(fa[i][3]), "r"(fb[j][0]),
                "r"(fb[j][1]));
        }
      }
    }
  }
  wait_pending<0>();  // nothing may be in flight into shared memory when the block exits

  // Each thread holds rows g and g + 8, columns 2t and 2t + 1, of each 16 x 8 tile.
  const bool pairs = n % 2 == 0;
#pragma unroll
  for (int i = 0; i < kMi; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const unsigned row = m0 + warp_m * kWm + i * 16 + g + 8 * half;
      if (row >= m) continue;
      float* const crow = c + u64(row) * n;
#pragma unroll
      for (int j = 0; j < kNi; ++j) {
        const unsigned col = n0 + warp_n * kWn + j * 8 + 2 * t;
        const float x = acc[i][j][2 * half], y = acc[i][j][2 * half + 1];
        if (pairs && col < n) {  // n even, col even: the pair is inside the row, 8-byte aligned
          *reinterpret_cast<float2*>(crow + col) = make_float2(x, y);
        } else {
          if (col < n) crow[col] = x;
          if (col + 1 < n) crow[col + 1] = y;
        }
      }
    }
  }
}
