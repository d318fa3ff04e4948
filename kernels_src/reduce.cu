// Parallel reduction (sum), the seven steps of the lecture "Optimizing Parallel Reduction in
// CUDA" as one template; VARIANT picks the step:
//   1  interleaved addressing with divergent branching (tid % (2*s))
//   2  interleaved addressing with a strided index (no divergence, bank conflicts)
//   3  sequential addressing (conflict free)
//   4  first add during the global load (two elements per thread)
//   5  unrolled last warp
//   6  completely unrolled, block size as a template parameter
//   7  several elements per thread (ELEMENTS_PER_THREAD, loop unrolled by UNROLL)
// and two steps past the lecture, for current GPUs:
//   8  as 7, then warp shuffles instead of shared memory for the tree
//   9  as 8, with 16-byte (8-byte when ELEMENTS_PER_THREAD is not a multiple of 4) vector loads
//  10  one pass: as 9, each block summing every gridDim.x-th tile (a grid stride) into
//      partial[blockIdx.x]; the last block to finish (a __threadfence and an atomicInc of a
//      counter) adds the partial sums and writes out[0], so one launch does the whole sum
// Steps 1-9: one launch reduces n values of `in` to one partial sum per block in out[blockIdx.x];
// the host launches it again on the partial sums until one value is left, as the lecture's
// "kernel decomposition" does (`partial` is unused). ktune defines BLOCK_SIZE, VARIANT,
// ELEMENTS_PER_THREAD, UNROLL and KTUNE_LAUNCH_BOUNDS; indices are 32-bit, so n is at most 2^31.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define KTUNE_PRAGMA_(x) _Pragma(#x)
#define KTUNE_UNROLL(n) KTUNE_PRAGMA_(unroll n)

// The lecture's warp-synchronous tail relied on a warp executing in lock step. Since Volta the
// threads of a warp may be scheduled independently, so every step reads, synchronises the warp,
// and only then writes (still one warp, still no __syncthreads). Shared memory holds at least 64
// elements, so the reads past a 32-thread block stay inside the allocation; their values only
// reach lanes whose results are discarded.
template <typename T>
__device__ __forceinline__ void warp_reduce(volatile T* s, unsigned tid, unsigned block_size) {
  T v = s[tid];
  if (block_size >= 64) {
    v += s[tid + 32];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  if (block_size >= 32) {
    v += s[tid + 16];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  if (block_size >= 16) {
    v += s[tid + 8];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  if (block_size >= 8) {
    v += s[tid + 4];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  if (block_size >= 4) {
    v += s[tid + 2];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  if (block_size >= 2) {
    v += s[tid + 1];
    __syncwarp();
    s[tid] = v;
  }
}

// Tree reduction of s[0, BlockSize) with the loop fully unrolled at compile time (steps 6, 7).
template <unsigned BlockSize, typename T>
__device__ __forceinline__ void block_reduce_unrolled(T* s, unsigned tid) {
  if (BlockSize >= 1024) {
    if (tid < 512) s[tid] += s[tid + 512];
    __syncthreads();
  }
  if (BlockSize >= 512) {
    if (tid < 256) s[tid] += s[tid + 256];
    __syncthreads();
  }
  if (BlockSize >= 256) {
    if (tid < 128) s[tid] += s[tid + 128];
    __syncthreads();
  }
  if (BlockSize >= 128) {
    if (tid < 64) s[tid] += s[tid + 64];
    __syncthreads();
  }
  if (tid < 32) warp_reduce<T>(s, tid, BlockSize);
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Block sum by warp shuffles: each warp reduces its values, the first warp reduces the warps'.
template <unsigned BlockSize, typename T>
__device__ __forceinline__ T block_sum_shuffle(T v, T* s, unsigned tid) {
  v = warp_sum(v);
  if (BlockSize > 32) {
    if (tid % 32 == 0) s[tid / 32] = v;
    __syncthreads();
    if (tid < 32) v = warp_sum(tid < BlockSize / 32 ? s[tid] : T(0));
  }
  return v;
}

template <typename T, int Width>
struct Vec;
template <>
struct Vec<int, 2> {
  using type = int2;
};
template <>
struct Vec<int, 4> {
  using type = int4;
};
template <>
struct Vec<float, 2> {
  using type = float2;
};
template <>
struct Vec<float, 4> {
  using type = float4;
};

template <typename V, typename T>
__device__ __forceinline__ T lane_sum(const V& x) {
  if constexpr (sizeof(V) / sizeof(T) == 4)
    return x.x + x.y + x.z + x.w;
  else
    return x.x + x.y;
}

// Sum of this thread's elements of tile `tile` (BlockSize * ElementsPerThread elements), read
// as 16-byte (or 8-byte) vectors; `in` is 16-byte aligned. The tail past n is read element-wise.
template <unsigned BlockSize, int ElementsPerThread, typename T>
__device__ __forceinline__ T tile_sum_vector(const T* __restrict__ in, unsigned n, unsigned tile,
                                             unsigned tid) {
  constexpr int kWidth = ElementsPerThread % 4 == 0 ? 4 : 2;
  using V = typename Vec<T, kWidth>::type;
  const V* vin = reinterpret_cast<const V*>(in);
  const unsigned base = tile * (BlockSize * (ElementsPerThread / kWidth)) + tid;
  T v = T(0);
  KTUNE_UNROLL(UNROLL)
  for (int k = 0; k < ElementsPerThread / kWidth; ++k) {
    const unsigned j = base + k * BlockSize;
    if ((j + 1) * kWidth <= n) {
      v += lane_sum<V, T>(vin[j]);
    } else {
      for (unsigned i = j * kWidth; i < n && i < (j + 1) * kWidth; ++i) v += in[i];
    }
  }
  return v;
}

// Blocks of the one-pass step that have written their partial sum in the current launch. The
// last block's atomicInc wraps it back to 0, so the next launch starts from 0 again.
__device__ unsigned ktune_reduce_blocks_done = 0;

// Step 10: grid-stride tiles, one partial sum per block, the last block adds them.
template <unsigned BlockSize, int ElementsPerThread, typename T>
__device__ __forceinline__ void reduce_one_pass(const T* __restrict__ in, T* __restrict__ out,
                                                unsigned n, T* __restrict__ partial, T* s) {
  __shared__ bool last;
  const unsigned tid = threadIdx.x;
  constexpr unsigned kTile = BlockSize * ElementsPerThread;
  const unsigned tiles = n / kTile + (n % kTile != 0);
  T v = T(0);
  for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x)
    v += tile_sum_vector<BlockSize, ElementsPerThread, T>(in, n, t, tid);
  v = block_sum_shuffle<BlockSize, T>(v, s, tid);
  if (tid == 0) {
    partial[blockIdx.x] = v;
    __threadfence();  // the partial sum is visible to every block before the count says so
    last = atomicInc(&ktune_reduce_blocks_done, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  T w = T(0);
  for (unsigned i = tid; i < gridDim.x; i += BlockSize) w += __ldcg(partial + i);  // from L2
  w = block_sum_shuffle<BlockSize, T>(w, s, tid);
  if (tid == 0) out[0] = w;
}

template <unsigned BlockSize, int Variant, int ElementsPerThread, typename T>
__global__ void KTUNE_LAUNCH_BOUNDS reduce(const T* __restrict__ in, T* __restrict__ out,
                                           unsigned n, T* __restrict__ partial) {
  extern __shared__ unsigned char smem_raw[];
  T* s = reinterpret_cast<T*>(smem_raw);
  const unsigned tid = threadIdx.x;

  if constexpr (Variant <= 3) {
    // One element per thread.
    const unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? in[i] : T(0);
    __syncthreads();
    if constexpr (Variant == 1) {
      for (unsigned k = 1; k < blockDim.x; k *= 2) {
        if (tid % (2 * k) == 0) s[tid] += s[tid + k];
        __syncthreads();
      }
    } else if constexpr (Variant == 2) {
      for (unsigned k = 1; k < blockDim.x; k *= 2) {
        const unsigned index = 2 * k * tid;
        if (index < blockDim.x) s[index] += s[index + k];
        __syncthreads();
      }
    } else {
      for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
      }
    }
  } else if constexpr (Variant <= 6) {
    // First add during load: two elements per thread.
    const unsigned bs = Variant == 6 ? BlockSize : blockDim.x;
    const unsigned i = blockIdx.x * (bs * 2) + tid;
    T v = i < n ? in[i] : T(0);
    if (i + bs < n) v += in[i + bs];
    s[tid] = v;
    __syncthreads();
    if constexpr (Variant == 4) {
      for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
      }
    } else if constexpr (Variant == 5) {
      for (unsigned k = blockDim.x / 2; k > 32; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
      }
      if (tid < 32) warp_reduce<T>(s, tid, blockDim.x);
    } else {
      block_reduce_unrolled<BlockSize, T>(s, tid);
    }
  } else if constexpr (Variant == 9) {
    // Vector loads; the host keeps every level's input 16-byte aligned.
    T v = tile_sum_vector<BlockSize, ElementsPerThread, T>(in, n, blockIdx.x, tid);
    v = block_sum_shuffle<BlockSize, T>(v, s, tid);
    if (tid == 0) out[blockIdx.x] = v;
    return;
  } else if constexpr (Variant == 10) {
    reduce_one_pass<BlockSize, ElementsPerThread, T>(in, out, n, partial, s);
    return;
  } else {
    // Several elements per thread, each pass over the block's tile coalesced.
    const unsigned base = blockIdx.x * (BlockSize * ElementsPerThread) + tid;
    T v = T(0);
    KTUNE_UNROLL(UNROLL)
    for (int k = 0; k < ElementsPerThread; ++k) {
      const unsigned i = base + k * BlockSize;
      if (i < n) v += in[i];
    }
    if constexpr (Variant == 8) {
      v = block_sum_shuffle<BlockSize, T>(v, s, tid);
      if (tid == 0) out[blockIdx.x] = v;
      return;
    }
    s[tid] = v;
    __syncthreads();
    block_reduce_unrolled<BlockSize, T>(s, tid);
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
