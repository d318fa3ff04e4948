// Copy of n floats, the bandwidth yardstick the other kernels are compared with, in three ways.
//
// VARIANT 0, grid-stride: the grid is a fixed number of blocks per multiprocessor (one resident
// wave) and each thread walks the array with the grid's stride, moving VECTOR_WIDTH floats per
// access (float, float2, float4) and UNROLL independent accesses per iteration, all loads before
// any store, so each thread keeps several requests in flight. A tail of n % VECTOR_WIDTH floats is
// copied one by one. CACHE_HINT (variants 0 and 2) picks the cache operators of the vector
// accesses: 0 none (ld.global.nc through const __restrict__, st.global), 1 streaming stores
// (st.global.cs: evict first, the copy is not read again), 2 streaming loads and stores
// (ld.global.cs, st.global.cs). ktune defines BLOCK_SIZE, VECTOR_WIDTH, BLOCKS_PER_SM, UNROLL,
// CACHE_HINT, VARIANT, CHUNK_KB, STAGES and KTUNE_LAUNCH_BOUNDS; indices are 64-bit, so n may
// exceed 2^32.
//
// VARIANT 1, bulk (sm_90 and later): the copy engine of each multiprocessor moves the data.
// The array is cut into chunks of CHUNK_KB KiB, dealt round-robin to the blocks; one thread per
// block keeps STAGES chunks in flight through a ring of shared-memory stages: a bulk load
// (cp.async.bulk global to shared) completes on the stage's mbarrier, a bulk store
// (cp.async.bulk shared to global) writes it out, and once that store has read the stage the
// stage takes the block's next chunk. The bytes past the last whole chunk are copied by the
// last block's threads one float at a time.
//
// VARIANT 2, one pass: no grid stride. Each block copies one contiguous piece of
// BLOCK_SIZE * UNROLL vectors (UNROLL accesses per thread, BLOCK_SIZE vectors apart, all loads
// before the stores) and the grid has as many blocks as there are pieces, so the hardware deals
// the pieces to the multiprocessors as they free up instead of each block owning a fixed share.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef CACHE_HINT
#define CACHE_HINT 0
#endif
#define KTUNE_PRAGMA_(x) _Pragma(#x)
#define KTUNE_UNROLL(n) KTUNE_PRAGMA_(unroll n)

template <int Width>
struct CopyVec;
template <>
struct CopyVec<1> {
  using type = float;
};
template <>
struct CopyVec<2> {
  using type = float2;
};
template <>
struct CopyVec<4> {
  using type = float4;
};

template <typename V>
__device__ __forceinline__ V copy_load(const V* p) {
  if constexpr (CACHE_HINT == 2) {
    return __ldcs(p);
  } else {
    return *p;
  }
}

template <typename V>
__device__ __forceinline__ void copy_store(V* p, const V& v) {
  if constexpr (CACHE_HINT >= 1) {
    __stcs(p, v);
  } else {
    *p = v;
  }
}

#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef CHUNK_KB
#define CHUNK_KB 16
#endif
#ifndef STAGES
#define STAGES 4
#endif

template <unsigned Chunk, int Stages>
__device__ __forceinline__ void copy_bulk(const float* __restrict__ in, float* __restrict__ out,
                                          unsigned long long n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(Chunk % 16 == 0, "bulk copies move multiples of 16 bytes");
  extern __shared__ float4 copy_stages[];  // Stages x Chunk bytes, 16-byte aligned
  __shared__ alignas(8) unsigned long long copy_barriers[Stages];
  const unsigned long long chunks = n * 4ull / Chunk;
  const unsigned long long first = blockIdx.x;
  const unsigned long long count =
      first < chunks ? (chunks - first + gridDim.x - 1) / gridDim.x : 0;
  if (threadIdx.x == 0 && count > 0) {
    const unsigned stage0 = static_cast<unsigned>(__cvta_generic_to_shared(copy_stages));
    const unsigned barrier0 = static_cast<unsigned>(__cvta_generic_to_shared(copy_barriers));
    for (int s = 0; s < Stages; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrier0 + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    const char* const src = reinterpret_cast<const char*>(in);
    char* const dst = reinterpret_cast<char*>(out);
    const auto offset = [&](unsigned long long j) { return (first + j * gridDim.x) * Chunk; };
    const auto load = [&](unsigned long long j) {  // the block's j-th chunk into its stage
      const unsigned s = static_cast<unsigned>(j % Stages);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier0 + 8 * s),
                   "r"(Chunk)
                   : "memory");
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];" ::"r"(stage0 + s * Chunk),
          "l"(src + offset(j)), "r"(Chunk), "r"(barrier0 + 8 * s)
          : "memory");
    };
    for (unsigned long long j = 0; j < count && j < Stages; ++j) load(j);
    for (unsigned long long j = 0; j < count; ++j) {
      const unsigned s = static_cast<unsigned>(j % Stages);
      const unsigned parity = static_cast<unsigned>(j / Stages) & 1u;
      asm volatile(
          "{\n"
          ".reg .pred ready;\n"
          "WAIT:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
          "@!ready bra WAIT;\n"
          "}\n" ::"r"(barrier0 + 8 * s),
          "r"(parity)
          : "memory");
      asm volatile(
          "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + offset(j)),
          "r"(stage0 + s * Chunk), "r"(Chunk)
          : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      // The previous chunk's stage takes the chunk Stages after it, once its store has read it
      // (at most the store just issued may still be reading).
      if (j >= 1 && j - 1 + Stages < count) {
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        load(j - 1 + Stages);
      }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // every store complete
  }
  if (blockIdx.x == gridDim.x - 1) {
    for (unsigned long long i = chunks * (Chunk / 4) + threadIdx.x; i < n; i += blockDim.x)
      out[i] = in[i];
  }
#else
  __trap();  // the space offers the bulk variant on sm_90 and later only
#endif
}

template <int Width>
__global__ void KTUNE_LAUNCH_BOUNDS copy(const float* __restrict__ in, float* __restrict__ out,
                                         unsigned long long n) {
  if constexpr (VARIANT == 1) {
    copy_bulk<CHUNK_KB * 1024u, STAGES>(in, out, n);
    return;
  }
  using V = typename CopyVec<Width>::type;
  // cudaMalloc returns 256-byte aligned pointers, so the vector views are aligned.
  const V* __restrict__ vin = reinterpret_cast<const V*>(in);
  V* __restrict__ vout = reinterpret_cast<V*>(out);
  const unsigned long long vectors = n / Width;
  if constexpr (VARIANT == 2) {
    const unsigned long long first =
        blockIdx.x * static_cast<unsigned long long>(BLOCK_SIZE) * UNROLL + threadIdx.x;
    if (first + (UNROLL - 1) * static_cast<unsigned long long>(BLOCK_SIZE) < vectors) {
      V r[UNROLL];
      KTUNE_UNROLL(UNROLL)
      for (int k = 0; k < UNROLL; ++k) r[k] = copy_load(vin + first + k * BLOCK_SIZE);
      KTUNE_UNROLL(UNROLL)
      for (int k = 0; k < UNROLL; ++k) copy_store(vout + first + k * BLOCK_SIZE, r[k]);
    } else {  // the last piece, partly past the end
      for (int k = 0; k < UNROLL; ++k) {
        const unsigned long long i = first + k * static_cast<unsigned long long>(BLOCK_SIZE);
        if (i < vectors) copy_store(vout + i, copy_load(vin + i));
      }
    }
    const unsigned long long rest = vectors * Width;  // fewer than Width floats past the vectors
    if (blockIdx.x == 0 && threadIdx.x < n - rest) out[rest + threadIdx.x] = in[rest + threadIdx.x];
    return;
  }
  const unsigned long long tid =
      blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;

  unsigned long long i = tid;
  // Whole rounds: UNROLL accesses per thread, each one grid stride after the previous.
  for (; i + (UNROLL - 1) * stride < vectors; i += UNROLL * stride) {
    V r[UNROLL];
    KTUNE_UNROLL(UNROLL)
    for (int k = 0; k < UNROLL; ++k) r[k] = copy_load(vin + i + k * stride);
    KTUNE_UNROLL(UNROLL)
    for (int k = 0; k < UNROLL; ++k) copy_store(vout + i + k * stride, r[k]);
  }
  // The last partial round.
  for (; i < vectors; i += stride) copy_store(vout + i, copy_load(vin + i));
  // Floats past the last whole vector (fewer than Width, so one per thread is enough).
  const unsigned long long rest = vectors * Width;
  if (tid < n - rest) out[rest + tid] = in[rest + tid];
}
