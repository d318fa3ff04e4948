// Single-precision matrix multiply C = A B, A m x k, B k x n, C m x n, all row-major, fp32
// throughout (no tensor cores), the lectures' tiled algorithm and its register-blocked successor.
// VARIANT picks:
//   1  the lecture's tiled kernel: a TILE x TILE block (BLOCK_M = BLOCK_N = BLOCK_K = TILE)
//      computes one element of C per thread from TILE x TILE tiles of A and B in shared memory;
//      each element of a tile is used TILE times
//   2  register-blocked: a block of (BLOCK_M / THREAD_M) x (BLOCK_N / THREAD_N) threads computes
//      a BLOCK_M x BLOCK_N tile of C, each thread a THREAD_M x THREAD_N tile of it held in
//      registers, from BLOCK_M x BLOCK_K and BLOCK_K x BLOCK_N tiles in shared memory; A's tile
//      is stored transposed, so a thread reads its THREAD_M values of A and THREAD_N values of B
//      for one k as two contiguous runs (16-byte loads where PADDING keeps rows aligned).
//      Global loads move VECTOR_WIDTH floats at once (float2, float4) where the row length
//      allows it (k, resp. n, a multiple of the width); otherwise one float at a time.
//   3  register-blocked as 2, with three changes that keep the multiprocessor fed: two
//      shared-memory stages (the next tiles of A and B are loaded from global memory into
//      registers while the current ones are multiplied, then stored into the other stage: one
//      barrier per tile instead of two); a thread's THREAD_M x THREAD_N tile of C is split into
//      4 x 4 pieces a quarter-tile apart (rows ty*4 + g*(BLOCK_M/(THREAD_M/4)), likewise for
//      columns), so a warp reads B's row as consecutive 16-byte vectors without bank conflicts
//      while its threads share A's vectors. Needs THREAD_M, THREAD_N and PADDING multiples of 4.
//      WARP_ROWS > 0 lays each warp's threads out as WARP_ROWS rows of 32 / WARP_ROWS threads
//      (0: the block's rows in order, so a warp spans 32 / threads-per-row rows): a squarer warp
//      reads fewer distinct values of A and B per k, and shared memory serves fewer bytes per
//      FMA.
// All variants add the products of one element in increasing k with one accumulator, and guard
// every access, so m, n and k need not be multiples of any tile. Shared memory is dynamic (the
// tuner opts in above 48 KiB): the tile of A, then the tile of B 16-byte aligned, each row
// padded by PADDING floats against bank conflicts. ktune defines VARIANT, BLOCK_M, BLOCK_N,
// BLOCK_K, THREAD_M, THREAD_N, PADDING, UNROLL (of the k loop over a tile), VECTOR_WIDTH,
// LAUNCH_BOUNDS, KTUNE_BLOCK_X/Y/Z and KTUNE_LAUNCH_BOUNDS; offsets are 64-bit.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef WARP_ROWS
#define WARP_ROWS 0
#endif
#define KTUNE_PRAGMA_(x) _Pragma(#x)
#define KTUNE_UNROLL(n) KTUNE_PRAGMA_(unroll n)

// Every block shape in the space must be able to launch, but without launch bounds ptxas may
// give a thread more registers (up to 255) than a block of 512 or 1024 threads can have. So the
// kernel declares its block size unless MAXRREGCOUNT caps the registers instead (ptxas lets
// __launch_bounds__ override -maxrregcount, so the two never meet: the space keeps them apart);
// LAUNCH_BOUNDS > 0 adds the minimum blocks per multiprocessor (KTUNE_LAUNCH_BOUNDS).
#undef MATMUL_LAUNCH_BOUNDS
#if defined(KTUNE_BLOCK_X) && (!defined(LAUNCH_BOUNDS) || LAUNCH_BOUNDS == 0) && \
    (!defined(MAXRREGCOUNT) || MAXRREGCOUNT == 0)
#define MATMUL_LAUNCH_BOUNDS __launch_bounds__(KTUNE_BLOCK_X* KTUNE_BLOCK_Y* KTUNE_BLOCK_Z)
#else
#define MATMUL_LAUNCH_BOUNDS KTUNE_LAUNCH_BOUNDS
#endif

template <int Width>
struct MatmulVec;
template <>
struct MatmulVec<1> {
  using type = float;
};
template <>
struct MatmulVec<2> {
  using type = float2;
};
template <>
struct MatmulVec<4> {
  using type = float4;
};

template <int Width>
__device__ __forceinline__ void matmul_unpack(const typename MatmulVec<Width>::type& v, float* x) {
  if constexpr (Width == 1) {
    x[0] = v;
  } else if constexpr (Width == 2) {
    x[0] = v.x;
    x[1] = v.y;
  } else {
    x[0] = v.x;
    x[1] = v.y;
    x[2] = v.z;
    x[3] = v.w;
  }
}

template <int Width>
__device__ __forceinline__ typename MatmulVec<Width>::type matmul_pack(const float* x) {
  if constexpr (Width == 1) {
    return x[0];
  } else if constexpr (Width == 2) {
    return make_float2(x[0], x[1]);
  } else {
    return make_float4(x[0], x[1], x[2], x[3]);
  }
}

// Reads Width floats of a row, starting at column `col` of a row with `len` columns, zero past
// its end; `vector_ok` says the row length keeps vectors aligned.
template <int Width>
__device__ __forceinline__ void matmul_load(const float* __restrict__ row, unsigned col,
                                            unsigned len, bool row_valid, bool vector_ok,
                                            float* x) {
  using V = typename MatmulVec<Width>::type;
  if (Width > 1 && vector_ok && row_valid && col < len) {
    // col is a multiple of Width and so is len: the whole vector is inside the row.
    matmul_unpack<Width>(*reinterpret_cast<const V*>(row + col), x);
  } else {
#pragma unroll
    for (int j = 0; j < Width; ++j) x[j] = row_valid && col + j < len ? row[col + j] : 0.0f;
  }
}

// Calls f(pass, row, col) for each vector of a Rows x Cols tile, Width floats per vector, that
// thread `tid` of Threads moves: vector pass * Threads + tid, consecutive threads along a row
// (variant 3; variant 2 spells the same walk out, and its code stays as it was measured).
template <int Rows, int Cols, int Width, int Threads, typename F>
__device__ __forceinline__ void matmul_tile_vectors(unsigned tid, F&& f) {
  constexpr int kRowVectors = Cols / Width;
  constexpr int kVectors = Rows * kRowVectors;
#pragma unroll
  for (int pass = 0; pass < (kVectors + Threads - 1) / Threads; ++pass) {
    const unsigned v = pass * Threads + tid;
    if (kVectors % Threads == 0 || v < kVectors) f(pass, v / kRowVectors, v % kRowVectors * Width);
  }
}

template <int Variant, int BlockM, int BlockN, int BlockK, int ThreadM, int ThreadN, int Padding,
          int VectorWidth>
__global__ void MATMUL_LAUNCH_BOUNDS matmul(const float* __restrict__ a,
                                            const float* __restrict__ b, float* __restrict__ c,
                                            unsigned m, unsigned n, unsigned k) {
  using u64 = unsigned long long;
  extern __shared__ float4 matmul_smem[];
  float* const smem = reinterpret_cast<float*>(matmul_smem);

  if constexpr (Variant == 3) {
    static_assert(BlockM % ThreadM == 0 && BlockN % ThreadN == 0,
                  "thread tiles divide the block tile");
    static_assert(ThreadM % 4 == 0 && ThreadN % 4 == 0 && Padding % 4 == 0,
                  "4 x 4 pieces read as float4 from 16-byte aligned rows");
    static_assert(BlockK % VectorWidth == 0 && BlockN % VectorWidth == 0,
                  "vectors stay inside a tile row");
    constexpr int kThreadsX = BlockN / ThreadN, kThreadsY = BlockM / ThreadM;
    constexpr int kThreads = kThreadsX * kThreadsY;
    constexpr int kPitchA = BlockM + Padding;  // as[kk][row]: A's tile transposed
    constexpr int kPitchB = BlockN + Padding;  // bs[kk][col]
    constexpr int kSizeA = BlockK * kPitchA;   // a multiple of 4: B's tile stays aligned
    constexpr int kStage = kSizeA + BlockK * kPitchB;
    constexpr int kStrideM = kThreadsY * 4, kStrideN = kThreadsX * 4;  // between a thread's pieces
    constexpr int kPassesA = (BlockM * BlockK / VectorWidth + kThreads - 1) / kThreads;
    constexpr int kPassesB = (BlockK * BlockN / VectorWidth + kThreads - 1) / kThreads;
    const unsigned tid = threadIdx.y * kThreadsX + threadIdx.x;
    // The thread's place in the block's grid of thread tiles: row-major, or warp by warp.
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    if constexpr (WARP_ROWS > 0) {
      constexpr unsigned kWarpRows = WARP_ROWS > 0 ? WARP_ROWS : 1;  // not a macro: no 1/0
      constexpr unsigned kWarpCols = 32 / kWarpRows, kWarpsX = kThreadsX / kWarpCols;
      static_assert(kThreadsX % kWarpCols == 0 && kThreadsY % kWarpRows == 0 && kThreads % 32 == 0,
                    "warps tile the block's threads");
      const unsigned lane = tid % 32, warp = tid / 32;
      tx = warp % kWarpsX * kWarpCols + lane % kWarpCols;
      ty = warp / kWarpsX * kWarpRows + lane / kWarpCols;
    }
    const unsigned m0 = blockIdx.y * BlockM, n0 = blockIdx.x * BlockN;
    const bool a_vectors = k % VectorWidth == 0;
    const bool b_vectors = n % VectorWidth == 0;

    // The next tiles, on their way from global memory to the other stage.
    float ga[kPassesA][VectorWidth], gb[kPassesB][VectorWidth];
    const auto fetch = [&](unsigned k0) {
      matmul_tile_vectors<BlockM, BlockK, VectorWidth, kThreads>(tid, [&](int pass, unsigned r,
                                                                          unsigned cc) {
        matmul_load<VectorWidth>(a + u64(m0 + r) * k, k0 + cc, k, m0 + r < m, a_vectors, ga[pass]);
      });
      matmul_tile_vectors<BlockK, BlockN, VectorWidth, kThreads>(tid, [&](int pass, unsigned r,
                                                                          unsigned cc) {
        matmul_load<VectorWidth>(b + u64(k0 + r) * n, n0 + cc, n, k0 + r < k, b_vectors, gb[pass]);
      });
    };
    const auto stash = [&](float* stage) {
      float* const as = stage;
      float* const bs = stage + kSizeA;
      matmul_tile_vectors<BlockM, BlockK, VectorWidth, kThreads>(
          tid, [&](int pass, unsigned r, unsigned cc) {
#pragma unroll
            for (int j = 0; j < VectorWidth; ++j) as[(cc + j) * kPitchA + r] = ga[pass][j];
          });
      // cc is a multiple of the width and the pitch one of 4: the vector store is aligned.
      matmul_tile_vectors<BlockK, BlockN, VectorWidth, kThreads>(
          tid, [&](int pass, unsigned r, unsigned cc) {
            *reinterpret_cast<typename MatmulVec<VectorWidth>::type*>(bs + r * kPitchB + cc) =
                matmul_pack<VectorWidth>(gb[pass]);
          });
    };

    float acc[ThreadM][ThreadN];
#pragma unroll
    for (int i = 0; i < ThreadM; ++i) {
#pragma unroll
      for (int j = 0; j < ThreadN; ++j) acc[i][j] = 0.0f;
    }

    const unsigned tiles = (k + BlockK - 1) / BlockK;
    fetch(0);
    stash(smem);
    __syncthreads();
    for (unsigned t = 0; t < tiles; ++t) {
      const float* const as = smem + (t & 1) * kStage;
      const float* const bs = as + kSizeA;
      const bool more = t + 1 < tiles;
      if (more) fetch((t + 1) * BlockK);  // in flight while this tile is multiplied
      KTUNE_UNROLL(UNROLL)
      for (int kk = 0; kk < BlockK; ++kk) {
        float ra[ThreadM], rb[ThreadN];
#pragma unroll
        for (int g = 0; g < ThreadM / 4; ++g)
          matmul_unpack<4>(
              *reinterpret_cast<const float4*>(as + kk * kPitchA + g * kStrideM + ty * 4),
              ra + 4 * g);
#pragma unroll
        for (int h = 0; h < ThreadN / 4; ++h)
          matmul_unpack<4>(
              *reinterpret_cast<const float4*>(bs + kk * kPitchB + h * kStrideN + tx * 4),
              rb + 4 * h);
#pragma unroll
        for (int i = 0; i < ThreadM; ++i) {
#pragma unroll
          for (int j = 0; j < ThreadN; ++j) acc[i][j] += ra[i] * rb[j];
        }
      }
      // Every thread finished reading the other stage before the previous barrier.
      if (more) stash(smem + ((t + 1) & 1) * kStage);
      __syncthreads();
    }

    const bool c_vectors = n % 4 == 0;
#pragma unroll
    for (int i = 0; i < ThreadM; ++i) {
      const unsigned row = m0 + (i / 4) * kStrideM + ty * 4 + i % 4;
      if (row >= m) continue;
      float* const crow = c + u64(row) * n;
#pragma unroll
      for (int h = 0; h < ThreadN / 4; ++h) {
        const unsigned col = n0 + h * kStrideN + tx * 4;
        if (c_vectors && col < n) {  // n and col multiples of 4: the vector is inside the row
          *reinterpret_cast<float4*>(crow + col) = matmul_pack<4>(&acc[i][4 * h]);
        } else {
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
            if (col + jj < n) crow[col + jj] = acc[i][4 * h + jj];
        }
      }
    }
  } else if constexpr (Variant == 1) {
    static_assert(BlockM == BlockN && BlockN == BlockK && ThreadM == 1 && ThreadN == 1,
                  "the tiled kernel has square tiles and one element per thread");
    constexpr int kTile = BlockK;
    constexpr int kPitch = kTile + Padding;
    float* const as = smem;                                 // as[row][kk]
    float* const bs = smem + (kTile * kPitch + 3) / 4 * 4;  // bs[kk][col]
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned row = blockIdx.y * kTile + ty;
    const unsigned col = blockIdx.x * kTile + tx;
    float acc = 0.0f;
    for (unsigned k0 = 0; k0 < k; k0 += kTile) {
      as[ty * kPitch + tx] = row < m && k0 + tx < k ? a[u64(row) * k + k0 + tx] : 0.0f;
      bs[ty * kPitch + tx] = k0 + ty < k && col < n ? b[u64(k0 + ty) * n + col] : 0.0f;
      __syncthreads();
      KTUNE_UNROLL(UNROLL)
      for (int kk = 0; kk < kTile; ++kk) acc += as[ty * kPitch + kk] * bs[kk * kPitch + tx];
      __syncthreads();
    }
    if (row < m && col < n) c[u64(row) * n + col] = acc;
  } else {
    static_assert(BlockM % ThreadM == 0 && BlockN % ThreadN == 0,
                  "thread tiles divide the block tile");
    static_assert(BlockK % VectorWidth == 0 && BlockN % VectorWidth == 0,
                  "vectors stay inside a tile row");
    constexpr int kThreadsX = BlockN / ThreadN;
    constexpr int kThreads = kThreadsX * (BlockM / ThreadM);
    constexpr int kPitchA = BlockM + Padding;  // as[kk][row]: A's tile transposed
    constexpr int kPitchB = BlockN + Padding;  // bs[kk][col]
    float* const as = smem;
    float* const bs = smem + (BlockK * kPitchA + 3) / 4 * 4;
    const unsigned tid = threadIdx.y * kThreadsX + threadIdx.x;
    const unsigned m0 = blockIdx.y * BlockM, n0 = blockIdx.x * BlockN;
    const bool a_vectors = k % VectorWidth == 0;
    const bool b_vectors = n % VectorWidth == 0;

    float acc[ThreadM][ThreadN];
#pragma unroll
    for (int i = 0; i < ThreadM; ++i) {
#pragma unroll
      for (int j = 0; j < ThreadN; ++j) acc[i][j] = 0.0f;
    }

    constexpr int kVectorsA = BlockM * BlockK / VectorWidth;
    constexpr int kVectorsB = BlockK * BlockN / VectorWidth;
    for (unsigned k0 = 0; k0 < k; k0 += BlockK) {
      // A's tile, consecutive threads along k; stored transposed.
#pragma unroll
      for (int pass = 0; pass < (kVectorsA + kThreads - 1) / kThreads; ++pass) {
        const unsigned v = pass * kThreads + tid;
        if (kVectorsA % kThreads == 0 || v < kVectorsA) {
          const unsigned r = v / (BlockK / VectorWidth);
          const unsigned cc = v % (BlockK / VectorWidth) * VectorWidth;
          float x[VectorWidth];
          matmul_load<VectorWidth>(a + u64(m0 + r) * k, k0 + cc, k, m0 + r < m, a_vectors, x);
#pragma unroll
          for (int j = 0; j < VectorWidth; ++j) as[(cc + j) * kPitchA + r] = x[j];
        }
      }
      // B's tile, consecutive threads along n.
#pragma unroll
      for (int pass = 0; pass < (kVectorsB + kThreads - 1) / kThreads; ++pass) {
        const unsigned v = pass * kThreads + tid;
        if (kVectorsB % kThreads == 0 || v < kVectorsB) {
          const unsigned r = v / (BlockN / VectorWidth);
          const unsigned cc = v % (BlockN / VectorWidth) * VectorWidth;
          float x[VectorWidth];
          matmul_load<VectorWidth>(b + u64(k0 + r) * n, n0 + cc, n, k0 + r < k, b_vectors, x);
#pragma unroll
          for (int j = 0; j < VectorWidth; ++j) bs[r * kPitchB + cc + j] = x[j];
        }
      }
      __syncthreads();
      KTUNE_UNROLL(UNROLL)
      for (int kk = 0; kk < BlockK; ++kk) {
        float ra[ThreadM], rb[ThreadN];
#pragma unroll
        for (int i = 0; i < ThreadM; ++i) ra[i] = as[kk * kPitchA + threadIdx.y * ThreadM + i];
#pragma unroll
        for (int j = 0; j < ThreadN; ++j) rb[j] = bs[kk * kPitchB + threadIdx.x * ThreadN + j];
#pragma unroll
        for (int i = 0; i < ThreadM; ++i) {
#pragma unroll
          for (int j = 0; j < ThreadN; ++j) acc[i][j] += ra[i] * rb[j];
        }
      }
      __syncthreads();
    }

    // C's tile: vector stores where the row length keeps them aligned and inside the row.
    constexpr int kStoreWidth = ThreadN % VectorWidth == 0 ? VectorWidth : 1;
    using V = typename MatmulVec<kStoreWidth>::type;
    const bool c_vectors = n % kStoreWidth == 0;
#pragma unroll
    for (int i = 0; i < ThreadM; ++i) {
      const unsigned row = m0 + threadIdx.y * ThreadM + i;
      if (row >= m) continue;
      float* const crow = c + u64(row) * n;
#pragma unroll
      for (int j = 0; j < ThreadN; j += kStoreWidth) {
        const unsigned col = n0 + threadIdx.x * ThreadN + j;
        if (kStoreWidth > 1 && c_vectors && col < n) {
          *reinterpret_cast<V*>(crow + col) = matmul_pack<kStoreWidth>(&acc[i][j]);
        } else {
#pragma unroll
          for (int jj = 0; jj < kStoreWidth; ++jj)
            if (col + jj < n) crow[col + jj] = acc[i][j + jj];
        }
      }
    }
  }
}
