// Shared helpers of the built-in kernel plugins, and the list of their descriptions.
#pragma once

#include <cstring>

#include "ktune/plugin.h"

namespace ktune::builtin {

inline const ktune_host_buffer* find_buffer(const ktune_reference_ctx* ctx, const char* name) {
  for (std::size_t i = 0; i < ctx->buffer_count; ++i) {
    if (std::strcmp(ctx->buffers[i].name, name) == 0) return &ctx->buffers[i];
  }
  return nullptr;
}

const ktune_kernel_desc* reduce_kernel();

}  // namespace ktune::builtin
