// NVRTC's -minimal front end (added by the rendering rule to sources without #include) must not
// change what runs: for every built-in kernel, its default and a seeded sample of its valid
// space compile to byte-identical CUBINs with and without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "ktune/render.h"

namespace ktune {
namespace {

TEST(MinimalFrontEnd, GivesByteIdenticalCubinsForEveryBuiltinKernel) {
  Registry registry;
  register_builtin_kernels(registry);
  std::size_t compared = 0;
  for (const KernelSpec* spec : registry.kernels()) {
    const std::string& name = spec->name;
    const KernelInstance inst(*spec, {}, DeviceLimits::for_arch(90));
    const SearchSpace& space = inst.space();
    const std::vector<Config> valid = space.enumerate();
    std::vector<Config> picked{space.default_config()};
    std::mt19937_64 rng(20261125);
    std::sample(valid.begin(), valid.end(), std::back_inserter(picked), 2, rng);
    for (const Config& c : picked) {
      const CompileRequest with = render(inst, c, "sm_90");
      if (std::find(with.options.begin(), with.options.end(), "-minimal") == with.options.end())
        continue;  // a source with #include compiles as before
      CompileRequest without = with;
      std::erase(without.options, "-minimal");
      const CompileResult a = compile(with);
      const CompileResult b = compile(without);
      ASSERT_TRUE(a.ok && b.ok) << name << " " << space.key(c) << ": " << a.error << b.error;
      EXPECT_EQ(a.options, with.options) << "compiled without -minimal: " << name;
      EXPECT_TRUE(a.cubin == b.cubin) << name << " " << space.key(c);
      ++compared;
    }
  }
  EXPECT_GE(compared, registry.kernels().size());
}

// A source that needs what -minimal leaves out (the runtime API's types) still compiles: the
// compiler tries again without it.
TEST(MinimalFrontEnd, FallsBackForSourcesThatNeedTheFullDeclarations) {
  CompileRequest r;
  r.source =
      "extern \"C\" __global__ void k(int* out) { cudaError_t e = cudaSuccess; *out = (int)e; "
      "}\n";
  r.source_name = "needs_runtime.cu";
  r.entry = "k";
  r.options = {"--gpu-architecture=sm_90", "-minimal"};
  const CompileResult result = compile(r);
  EXPECT_TRUE(result.ok) << result.error << "\n" << result.log;
  EXPECT_EQ(std::count(result.options.begin(), result.options.end(), "-minimal"), 0);
  EXPECT_EQ(result.key, r.key());
}

}  // namespace
}  // namespace ktune
