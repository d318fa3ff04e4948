// register_builtin_kernels: the explicit list of the kernels ktune ships (no static
// constructors); each is a plugin description, loaded through the same path as a library.
#include "builtin.h"

#include "ktune/registry.h"

namespace ktune {

void register_builtin_kernels(Registry& registry) {
  static const ktune_kernel_desc* const kKernels[] = {
      builtin::reduce_kernel(),
      builtin::reduce_f32_kernel(),
      builtin::transpose_kernel(),
      builtin::matmul_kernel(),
      builtin::copy_kernel(),
      builtin::convolution2d_kernel(),
      builtin::stencil3d_kernel(),
      builtin::soa_aos_kernel(),
      builtin::streams_kernel(),
      builtin::matmul_tf32_kernel(),
      builtin::matmul_tf32_wgmma_kernel(),
      builtin::matmul_tf32_tma_kernel(),
  };
  static const ktune_plugin kPlugin = {
      KTUNE_PLUGIN_ABI_VERSION,
      sizeof(ktune_plugin),
      "builtin",
      KTUNE_VERSION,
      kKernels,
      sizeof(kKernels) / sizeof(kKernels[0]),
  };
  registry.add_plugin(&kPlugin, "builtin");
}

}  // namespace ktune
