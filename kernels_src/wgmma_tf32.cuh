// What the two wgmma kernels (matmul_tf32_wgmma.cu, matmul_tf32_tma.cu) share, in namespace
// wgmma_tf32: the m64nBLOCK_Mk8 TF32 products, their descriptors and fences, rounding to TF32,
// mbarriers (within a block and across a cluster) and setmaxnreg. ktune puts this text before each
// of the two kernels' own (their descriptions do); a standalone driver includes it first. BLOCK_M
// selects the product's shape.

namespace wgmma_tf32 {

using u64 = unsigned long long;

#undef KTUNE_WGMMA_D8  // (several configurations may share one program)
#define KTUNE_WGMMA_D8(i)                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])

// d (64 x BLOCK_M, this thread's kAcc of it) += a (64 x 8, registers) * the 8 x BLOCK_M operand
// `desc` describes, asynchronously (until a wait_group).
#if BLOCK_M == 64
__device__ __forceinline__ void mma(float* d, const unsigned* a, u64 desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, 1, 1, 1;\n"
      : KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
#elif BLOCK_M == 128
__device__ __forceinline__ void mma(float* d, const unsigned* a, u64 desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, 1, 1, 1;\n"
      : KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24),
        KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48), KTUNE_WGMMA_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
#elif BLOCK_M == 192
__device__ __forceinline__ void mma(float* d, const unsigned* a, u64 desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, {%96, %97, %98, %99}, %100, 1, 1, 1;\n"
      : KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24),
        KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48), KTUNE_WGMMA_D8(56),
        KTUNE_WGMMA_D8(64), KTUNE_WGMMA_D8(72), KTUNE_WGMMA_D8(80), KTUNE_WGMMA_D8(88)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
#elif BLOCK_M == 256
__device__ __forceinline__ void mma(float* d, const unsigned* a, u64 desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, {%128, %129, %130, %131}, %132, 1, 1, 1;\n"
      : KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24),
        KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48), KTUNE_WGMMA_D8(56),
        KTUNE_WGMMA_D8(64), KTUNE_WGMMA_D8(72), KTUNE_WGMMA_D8(80), KTUNE_WGMMA_D8(88),
        KTUNE_WGMMA_D8(96), KTUNE_WGMMA_D8(104), KTUNE_WGMMA_D8(112), KTUNE_WGMMA_D8(120)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
#endif

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// x rounded to TF32 for the tensor cores, which read a TF32 operand's upper 19 bits and ignore
// the low 13: adding half a unit of the last TF32 place (0x1000) carries into those 19 bits
// exactly where cvt.rna.tf32.f32 (round to nearest, ties away from zero) rounds up, in one
// integer add where the conversion takes three instructions (an infinity check, the add, a
// mask). An infinity stays one (the add lands in the ignored bits); a NaN stays a NaN unless
// its payload lies wholly in the ignored bits, which the tensor cores read as an infinity
// with or without the add.
__device__ __forceinline__ unsigned to_tf32(float x) { return __float_as_uint(x) + 0x1000u; }
// The descriptor of an 8-deep slice of A's tile at shared address `addr`: 128-byte swizzle,
// 1024 bytes between groups of 8 rows (the leading offset is unused for this layout).
__device__ __forceinline__ u64 descriptor(unsigned addr) {
  return u64((addr & 0x3FFFF) >> 4) | u64(1) << 16 | u64(1024 >> 4) << 32 | u64(1) << 62;
}

__device__ __forceinline__ void mma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void mma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void mma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// mbarriers in shared memory.
__device__ __forceinline__ void barrier_init(unsigned addr, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void barrier_arrive(unsigned addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(addr) : "memory");
}
// Arrives on the mbarrier at `addr`, first raising the bytes its phase waits for by `bytes`.
__device__ __forceinline__ void barrier_arrive_expect(unsigned addr, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(addr), "r"(bytes)
               : "memory");
}
// Returns once the phase of parity `parity` has completed.
__device__ __forceinline__ void barrier_wait(unsigned addr, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(addr),
      "r"(parity)
      : "memory");
}
// Clusters. Arrives on the mbarrier at shared address `addr` of block `rank` of the cluster,
// with the default semantics (release at the CTA's scope), as a block's "I am done with this
// stage" to the block that copies into it; its waiter uses barrier_wait. The same hand-over at
// the cluster's scope (mbarrier.arrive.release.cluster, and try_wait ... acquire.cluster
// spinning on the other side) made both kernels' clusters about twice as slow on an H100
// (docs/kernels-matmul-hopper.md, matmul_tf32_tma).
__device__ __forceinline__ void barrier_arrive_remote(unsigned addr, unsigned rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(addr),
      "r"(rank)
      : "memory");
}
// The cluster's barrier (every thread of every block of the cluster), its release and acquire
// ordering the copies and reads of shared memory across the blocks.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
template <int N>
__device__ __forceinline__ void registers_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
// Keeps the compiler from moving accesses of `x` across the asynchronous products.
__device__ __forceinline__ void fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }

// Stores a thread's accumulators of one 64-column piece of C (m x n, row-major): acc[4j + v0 +
// 2v1] is column col + v1, row row0 + 8j + 2t + v0 (t = lane % 4), BLOCK_M rows in all; the two
// columns as one float2 where n is even (the pair 8-byte aligned and inside the row).
__device__ __forceinline__ void store_piece(float* c, const float* acc, unsigned row0, unsigned col,
                                            unsigned t, unsigned m, unsigned n) {
  if (col >= n) return;
  const bool pairs = n % 2 == 0;
#pragma unroll
  for (int j = 0; j < BLOCK_M / 8; ++j) {
#pragma unroll
    for (int v0 = 0; v0 < 2; ++v0) {
      const unsigned row = row0 + 8 * j + 2 * t + v0;
      if (row >= m) continue;
      float* const out = c + u64(row) * n + col;
      const float x = acc[4 * j + v0], y = acc[4 * j + v0 + 2];
      if (pairs) {
        *reinterpret_cast<float2*>(out) = make_float2(x, y);
      } else {
        out[0] = x;
        if (col + 1 < n) out[1] = y;
      }
    }
  }
}

}  // namespace wgmma_tf32
