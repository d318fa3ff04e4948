// Shared helpers of the built-in kernel plugins, and the list of their descriptions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ktune/plugin.h"

namespace ktune::builtin {

// What every C = A B kernel (matmul, matmul_tf32, matmul_tf32_wgmma) takes: A m x k, B k x n,
// C m x n, passed as (a, b, c, m, n, k).
inline constexpr ktune_problem_desc kMatmulProblem[] = {
    {"m", "4096", "rows of A and C"},
    {"n", "4096", "columns of B and C"},
    {"k", "4096", "columns of A, rows of B"},
};
inline constexpr ktune_arg_desc kMatmulArgs[] = {
    {"a", nullptr, 0},
    {"b", nullptr, 0},
    {"c", nullptr, 0},
    {nullptr, "m", KTUNE_TYPE_U32},
    {nullptr, "n", KTUNE_TYPE_U32},
    {nullptr, "k", KTUNE_TYPE_U32},
};

inline const ktune_host_buffer* find_buffer(const ktune_reference_ctx* ctx, const char* name) {
  for (std::size_t i = 0; i < ctx->buffer_count; ++i) {
    if (std::strcmp(ctx->buffers[i].name, name) == 0) return &ctx->buffers[i];
  }
  return nullptr;
}

// A problem value of a reference context; `fallback` where the problem has no such name.
inline std::int64_t problem_value(const ktune_reference_ctx* ctx, const char* name,
                                  std::int64_t fallback) {
  for (std::size_t i = 0; i < ctx->problem_count; ++i) {
    if (std::strcmp(ctx->problem_names[i], name) == 0) return ctx->problem_values[i];
  }
  return fallback;
}

// Runs fn(begin, end) over [0, n) split across the host's cores: host references of the larger
// kernels (a 4096^2 convolution with a 15x15 filter is 3.8 G multiply-adds) would otherwise take
// seconds in every worker. fn must not throw.
template <typename Fn>
void parallel_for(std::size_t n, Fn fn) {
  const std::size_t threads =
      std::min<std::size_t>(std::max(1u, std::min(std::thread::hardware_concurrency(), 64u)), n);
  if (threads <= 1) {
    if (n > 0) fn(std::size_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t begin = 0; begin < n; begin += chunk)
    pool.emplace_back([=] { fn(begin, std::min(n, begin + chunk)); });
  for (auto& t : pool) t.join();
}

// Device address of a __constant__ / __device__ variable of the configuration being run. A
// configuration compiled alone has it under its own name; batched compilation (compile_batch in
// tuner/compile/nvrtc.cpp) puts configuration k of a batch into `namespace ktune_cfg_k`,
// where `name` is mangled as _ZN<len>ktune_cfg_k<len>nameE. Several configurations share that
// CUBIN, so `name` must differ between them (spell the configuration into it); then the first
// namespace holding it is this configuration's. The last namespace found is tried first.
inline void* find_global(const ktune_run_ctx* ctx, const char* name, std::size_t* bytes) {
  if (ctx->struct_size < offsetof(ktune_run_ctx, global) + sizeof(ctx->global) || !ctx->global)
    return nullptr;
  if (void* p = ctx->global(ctx, name, bytes)) return p;
  constexpr int kNamespaces = 1024;  // far above CompilePool's batch size (16 by default)
  thread_local int last = 0;
  char mangled[512];
  const std::size_t length = std::strlen(name);
  for (int probe = 0; probe < kNamespaces; ++probe) {
    const int k = (last + probe) % kNamespaces;
    const std::string ns = "ktune_cfg_" + std::to_string(k);
    const int written = std::snprintf(mangled, sizeof(mangled), "_ZN%zu%s%zu%sE", ns.size(),
                                      ns.c_str(), length, name);
    if (written < 0 || written >= static_cast<int>(sizeof(mangled))) return nullptr;
    if (void* p = ctx->global(ctx, mangled, bytes)) {
      last = k;
      return p;
    }
  }
  return nullptr;
}

const ktune_kernel_desc* reduce_kernel();
const ktune_kernel_desc* reduce_f32_kernel();
const ktune_kernel_desc* transpose_kernel();
const ktune_kernel_desc* matmul_kernel();
const ktune_kernel_desc* matmul_tf32_kernel();
const ktune_kernel_desc* matmul_tf32_wgmma_kernel();
const ktune_kernel_desc* matmul_tf32_tma_kernel();
const ktune_kernel_desc* copy_kernel();

// Lecture material, part b: constant memory, z-marching stencil, data layout, streams.
const ktune_kernel_desc* convolution2d_kernel();
const ktune_kernel_desc* stencil3d_kernel();
const ktune_kernel_desc* soa_aos_kernel();
const ktune_kernel_desc* streams_kernel();

}  // namespace ktune::builtin
