// libFuzzer target: kernel manifests (docs/plugins.md). Any bytes are read as a manifest beside
// a small template; a kernel that registers is instantiated and its space enumerated a little.
#include "fuzz_common.h"
#include "ktune/instance.h"
#include "ktune/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  static const bool source_written = [] {
    const char text[] = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = BLOCK; }\n";
    fuzz::write_input("k.cu", reinterpret_cast<const std::uint8_t*>(text), sizeof text - 1);
    return true;
  }();
  (void)source_written;
  const std::string path = fuzz::write_input("manifest.toml", data, size);
  fuzz::refusals_allowed([&] {
    Registry registry;
    registry.load_manifest(path);
    for (const KernelSpec* kernel : registry.kernels()) {
      const KernelInstance instance(*kernel, kernel->make_problem({}), DeviceLimits::for_arch(90));
      int seen = 0;
      instance.space().for_each_valid([&](const Config&) { return ++seen < 64; });
    }
  });
  return 0;
}
