// GPU tests of the built-in kernels transpose, matmul, copy and reduce_f32: every variant, and a
// spread of tiles, vector widths and unroll depths, verifies through the CUDA backend (the
// path of a tuning run: worker process, poisoned outputs, the kernel's own reference and
// tolerance) at a size that tiles evenly and at sizes no block, tile or vector divides. The
// matmul reference configuration, and the other matmul configurations with it, are also checked
// against a double-precision host product with a rigorous error bound. Without a CUDA device
// every test skips, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "builtin/builtin.h"
#include "common/npy_file.h"
#include "ktune/cuda_backend.h"
#include "ktune/device.h"
#include "ktune/gpu_evaluator.h"
#include "ktune/registry.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

using Sets = std::map<std::string, std::string>;

class GpuKernelsA : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceQuery q = list_devices();
    if (q.devices.empty()) GTEST_SKIP() << "no CUDA device: " << q.problem;
    register_builtin_kernels(registry_);
    cache_ = std::make_shared<CompileCache>(CompileCache::default_dir());
  }
  CudaBackend::Options backend_options() const {
    CudaBackend::Options o;
    o.worker_command = {KTUNE_EXE, "__worker"};
    o.cache = cache_;
    return o;
  }

  // Verifies each configuration of `configs` (assignments over the defaults) on `problem`
  // through the backend; returns how many ran.
  int verify(CudaBackend& backend, const std::string& kernel, const Problem& problem,
             const std::vector<Sets>& configs) {
    KernelInstance instance(registry_.get(kernel), problem, backend.device().limits);
    MeasureOptions m;
    m.samples = 2;
    m.warmup = 0;
    backend.prepare(instance, m);
    int checked = 0;
    for (const Sets& sets : configs) {
      const Config c = instance.space().from_assignments(sets);
      const std::string key = instance.space().key(c);
      if (!instance.space().is_valid(c)) {
        ADD_FAILURE() << kernel << ": " << key
                      << " is not valid: " << instance.space().violated(c).value_or("");
        continue;
      }
      const CompileResult r =
          compile_cached(render(instance, c, backend.device().arch), cache_.get());
      if (!r.ok) {
        ADD_FAILURE() << kernel << " " << key << ": " << r.error << "\n" << r.log;
        continue;
      }
      const Measurement meas = backend.evaluate(c, &r);
      EXPECT_EQ(meas.status, TrialStatus::kOk)
          << kernel << " " << problem_key(instance.problem(), instance.kernel().problem) << " "
          << key << ": " << meas.error;
      EXPECT_GT(meas.time_ms, 0) << key;
      ++checked;
    }
    return checked;
  }

  // `kernel` checked against a host function instead of its reference configuration.
  KernelSpec with_host_reference(const std::string& kernel, ktune_reference_fn reference) const {
    KernelSpec spec = registry_.get(kernel);
    spec.reference = reference;
    spec.reference_config.clear();
    return spec;
  }

  // Evaluates each configuration of `configs` of `spec` (a kernel with its reference or
  // tolerances changed) on `problem` in this process, expecting each to verify.
  void expect_each_verifies(const KernelSpec& spec, const Problem& problem,
                            const std::vector<Sets>& configs) {
    MeasureOptions m;
    m.samples = 1;
    m.warmup = 0;
    GpuEvaluator evaluator(spec, problem, 0, m);
    const SearchSpace& space = evaluator.instance().space();
    for (const Sets& sets : configs) {
      const Config c = space.from_assignments(sets);
      ASSERT_TRUE(space.is_valid(c)) << spec.name << " " << space.key(c);
      const CompileResult r =
          compile_cached(render(evaluator.instance(), c, evaluator.device().arch), cache_.get());
      ASSERT_TRUE(r.ok) << space.key(c) << ": " << r.error << "\n" << r.log;
      const Measurement meas = evaluator.evaluate(c, r);
      EXPECT_EQ(meas.status, TrialStatus::kOk)
          << spec.name << " " << problem_key(evaluator.instance().problem(), spec.problem) << " "
          << space.key(c) << ": " << meas.error;
    }
  }

  // Every valid configuration of a kernel whose space is small.
  std::vector<Sets> whole_space(const std::string& kernel, const Problem& problem) const {
    KernelInstance instance(registry_.get(kernel), problem, DeviceLimits::for_arch(90));
    std::vector<Sets> out;
    const SearchSpace& space = instance.space();
    space.for_each_valid([&](const Config& c) {
      Sets s;
      for (std::size_t p = 0; p < space.size(); ++p)
        s[space.params()[p].name] = space.value(c, p).to_string();
      out.push_back(std::move(s));
      return true;
    });
    return out;
  }

  Registry registry_;
  std::shared_ptr<CompileCache> cache_;
};

TEST_F(GpuKernelsA, TransposeWholeSpaceVerifiesAtThreeShapes) {
  CudaBackend backend(backend_options());
  const std::vector<Sets> all = whole_space("transpose", {});
  ASSERT_GE(all.size(), 40u);  // every variant, tile, rows per block and padding
  // Square and tiled evenly; tall with both sides odd; a single row (one tile row, mostly guards).
  for (const Problem& p :
       {Problem{{"rows", 1024}, {"cols", 2048}}, Problem{{"rows", 1000}, {"cols", 777}},
        Problem{{"rows", 1}, {"cols", 333}}}) {
    EXPECT_EQ(verify(backend, "transpose", p, all), static_cast<int>(all.size()));
  }
}

TEST_F(GpuKernelsA, CopyVerifiesEveryVariantWidthUnrollAndHintWithTails) {
  CudaBackend backend(backend_options());
  std::vector<Sets> configs;
  for (const char* width : {"1", "2", "4"}) {
    for (const char* unroll : {"1", "2", "4", "8"}) {
      for (const auto& [block, per_sm] : std::vector<std::pair<const char*, const char*>>{
               {"64", "1"}, {"256", "8"}, {"1024", "2"}, {"128", "16"}}) {
        configs.push_back({{"vector_width", width},
                           {"unroll", unroll},
                           {"block_size", block},
                           {"blocks_per_sm", per_sm}});
      }
    }
  }
  // Every cache hint; the bulk variant with small and large chunks, shallow and deep rings.
  for (const char* hint : {"1", "2"})
    configs.push_back({{"cache_hint", hint}, {"vector_width", "4"}, {"unroll", "4"}});
  for (const auto& [chunk, stages, per_sm] :
       std::vector<std::tuple<const char*, const char*, const char*>>{{"4", "2", "1"},
                                                                      {"16", "4", "2"},
                                                                      {"32", "2", "2"},
                                                                      {"8", "8", "2"},
                                                                      {"4", "2", "16"}}) {
    configs.push_back({{"variant", "1"},
                       {"block_size", "128"},
                       {"chunk_kb", chunk},
                       {"stages", stages},
                       {"blocks_per_sm", per_sm}});
  }
  // The one-pass variant: every width, a whole and a partial last piece, every hint.
  for (const char* width : {"1", "2", "4"}) {
    for (const auto& [block, unroll, hint] :
         std::vector<std::tuple<const char*, const char*, const char*>>{
             {"64", "1", "0"}, {"1024", "8", "1"}, {"256", "4", "2"}}) {
      configs.push_back({{"variant", "2"},
                         {"vector_width", width},
                         {"block_size", block},
                         {"unroll", unroll},
                         {"cache_hint", hint},
                         {"blocks_per_sm", "1"}});
    }
  }
  // 2^22 divides into every vector and chunk; 3000017 leaves a tail of 1 (width 2, 4) and a
  // partial chunk; 7 is a tail and one float4 only, far fewer elements than threads, and no
  // whole chunk; 2^24 + 5 gives each block of the bulk variant several rounds of its ring.
  for (std::int64_t n : {std::int64_t{1} << 22, std::int64_t{3000017}, std::int64_t{7},
                         (std::int64_t{1} << 24) + 5}) {
    EXPECT_EQ(verify(backend, "copy", {{"n", n}}, configs), static_cast<int>(configs.size()));
  }
}

TEST_F(GpuKernelsA, ReduceF32EveryVariantVerifiesAtTwoSizes) {
  CudaBackend backend(backend_options());
  for (std::int64_t n : {std::int64_t{1} << 22, std::int64_t{3000017}}) {
    KernelInstance instance(registry_.get("reduce_f32"), {{"n", n}}, backend.device().limits);
    std::vector<Sets> configs;
    for (int variant = 1; variant <= 9; ++variant) {
      for (int block : {32, 64, 256, 1024}) {
        for (int per_thread : {1, 2, 8, 32}) {
          const Sets s{{"variant", std::to_string(variant)},
                       {"block_size", std::to_string(block)},
                       {"elements_per_thread", std::to_string(per_thread)}};
          if (instance.space().is_valid(instance.space().from_assignments(s))) configs.push_back(s);
        }
      }
    }
    configs.push_back({{"variant", "9"}, {"elements_per_thread", "16"}, {"unroll", "4"}});
    configs.push_back(
        {{"variant", "7"}, {"unroll", "8"}, {"maxrregcount", "32"}, {"launch_bounds", "2"}});
    ASSERT_GE(configs.size(), 9u * 4);
    EXPECT_EQ(verify(backend, "reduce_f32", {{"n", n}}, configs), static_cast<int>(configs.size()));
  }
}

// Matmul configurations: every variant, every vector width, odd padding, partial unrolling,
// thread tiles from 1 x 16 to 16 x 4, dynamic shared memory above 48 KiB, register limits.
std::vector<Sets> matmul_configs(const KernelSpec& k) {
  std::vector<Sets> out;
  out.push_back(k.reference_assignments());  // variant 1, 32 x 32
  out.push_back({});                         // the default: 128 x 128 x 8, 8 x 8 per thread, float4
  const auto tiled = [](const char* tile, const char* padding, const char* unroll) {
    return Sets{{"variant", "1"},      {"block_m", tile},    {"block_n", tile},
                {"block_k", tile},     {"thread_m", "1"},    {"thread_n", "1"},
                {"vector_width", "1"}, {"padding", padding}, {"unroll", unroll}};
  };
  out.push_back(tiled("16", "1", "16"));
  out.push_back(tiled("16", "4", "2"));
  out.push_back(tiled("32", "1", "1"));
  const auto blocked = [](const char* bm, const char* bn, const char* bk, const char* tm,
                          const char* tn, const char* padding, const char* unroll,
                          const char* width) {
    return Sets{{"variant", "2"},     {"block_m", bm},    {"block_n", bn},
                {"block_k", bk},      {"thread_m", tm},   {"thread_n", tn},
                {"padding", padding}, {"unroll", unroll}, {"vector_width", width}};
  };
  out.push_back(blocked("64", "64", "8", "4", "4", "1", "8", "4"));
  out.push_back(blocked("128", "64", "16", "8", "4", "0", "4", "2"));
  out.push_back(blocked("32", "128", "32", "2", "8", "4", "32", "4"));
  out.push_back(blocked("16", "256", "8", "1", "16", "1", "2", "1"));
  out.push_back(blocked("256", "128", "8", "16", "4", "4", "8", "4"));
  out.push_back(blocked("256", "256", "32", "16", "4", "4", "4", "4"));  // 66.5 KiB shared
  out.push_back(blocked("64", "32", "16", "2", "2", "1", "16", "2"));    // 512 threads, 2 x 2
  Sets limited = blocked("128", "128", "8", "8", "8", "4", "8", "4");
  limited["maxrregcount"] = "64";  // spills, still correct
  out.push_back(limited);
  Sets bounded = blocked("128", "128", "16", "8", "8", "4", "16", "4");
  bounded["launch_bounds"] = "2";
  out.push_back(bounded);
  // Variant 3: two stages, 4 x 4 pieces; every vector width, no padding, 48 KiB and more.
  const auto staged = [&](const char* bm, const char* bn, const char* bk, const char* tm,
                          const char* tn, const char* padding, const char* unroll,
                          const char* width) {
    Sets s = blocked(bm, bn, bk, tm, tn, padding, unroll, width);
    s["variant"] = "3";
    return s;
  };
  out.push_back(staged("128", "128", "16", "8", "8", "4", "16", "4"));
  out.push_back(staged("64", "128", "8", "4", "8", "0", "8", "1"));
  out.push_back(staged("128", "64", "32", "8", "4", "4", "32", "2"));
  out.push_back(staged("256", "128", "16", "16", "4", "4", "4", "4"));  // 50 KiB shared
  out.push_back(staged("32", "64", "8", "4", "4", "4", "2", "4"));      // 128 threads
  // Variant 3 with its warps as 2, 4 and 8 rows of threads.
  for (const char* rows : {"2", "4", "8"}) {
    Sets s = staged("128", "128", "16", "4", "4", "4", "16", "4");  // 32 x 32 threads
    s["warp_rows"] = rows;
    out.push_back(s);
  }
  Sets square = staged("128", "128", "16", "8", "8", "4", "16", "4");  // 16 x 16 threads
  square["warp_rows"] = "4";
  out.push_back(square);
  Sets tall = staged("256", "128", "8", "16", "4", "0", "8", "2");  // 32 x 16 threads
  tall["warp_rows"] = "8";
  out.push_back(tall);
  // 128 accumulators per thread, 128 threads (8 x 16 and 16 x 8 thread tiles).
  Sets tall_tile = staged("128", "128", "8", "16", "8", "4", "8", "4");  // 16 x 8 threads
  tall_tile["warp_rows"] = "4";
  out.push_back(tall_tile);
  out.push_back(staged("128", "128", "16", "8", "16", "0", "16", "4"));  // 8 x 16 threads
  return out;
}

TEST_F(GpuKernelsA, MatmulVerifiesAgainstItsReferenceConfiguration) {
  CudaBackend backend(backend_options());
  const std::vector<Sets> configs = matmul_configs(registry_.get("matmul"));
  // Tiles evenly; guards with vectors still aligned (k, n multiples of 4); guards and no vectors.
  for (const Problem& p :
       {Problem{{"m", 512}, {"n", 512}, {"k", 512}}, Problem{{"m", 1000}, {"n", 780}, {"k", 516}},
        Problem{{"m", 333}, {"n", 777}, {"k", 513}}}) {
    EXPECT_EQ(verify(backend, "matmul", p, configs), static_cast<int>(configs.size()));
  }
}

// The TF32 tensor-core kernel against its host product in double: every block and warp shape
// class, 2 to 4 stages, tile depths 16 and 32; sizes that tile evenly, that leave partial tiles
// with aligned rows (16-byte copies), and with k and n not multiples of 4 (4-byte copies, no
// paired stores).
TEST_F(GpuKernelsA, MatmulTf32VerifiesAtSizesNoTileDivides) {
  CudaBackend backend(backend_options());
  const auto tf32 = [](const char* bm, const char* bn, const char* bk, const char* wm,
                       const char* wn, const char* stages) {
    return Sets{{"block_m", bm}, {"block_n", bn}, {"block_k", bk},
                {"warps_m", wm}, {"warps_n", wn}, {"stages", stages}};
  };
  std::vector<Sets> configs = {
      {},  // the default: 128 x 128 x 32, 2 x 4 warps, 3 stages
      tf32("128", "128", "32", "2", "2", "2"),  // 64 x 64 per warp: 128 accumulators
      tf32("256", "128", "16", "4", "2", "4"),  // 8 warps, 4 stages
      tf32("64", "256", "32", "1", "4", "3"),   // one warp row
      tf32("32", "32", "16", "2", "4", "2"),    // 16 x 8 per warp: one tile
      tf32("256", "256", "16", "4", "4", "2"),  // 512 threads
      tf32("128", "64", "32", "4", "1", "4"),   // one warp column
  };
  // The same shapes with the inputs rounded to TF32 in shared memory.
  for (std::size_t i = 0, count = configs.size(); i < count; ++i) {
    Sets s = configs[i];
    s["convert_in_smem"] = "1";
    configs.push_back(s);
  }
  for (const Problem& p :
       {Problem{{"m", 512}, {"n", 512}, {"k", 512}}, Problem{{"m", 1000}, {"n", 780}, {"k", 516}},
        Problem{{"m", 333}, {"n", 777}, {"k", 513}}}) {
    EXPECT_EQ(verify(backend, "matmul_tf32", p, configs), static_cast<int>(configs.size()));
  }
}

// The warpgroup (wgmma, sm_90a) kernel: every block height (wgmma's n), piece count, warpgroup
// count, pipeline depth, tile depth, wait depth, producer, cluster and A's path,
// at sizes no
// tile divides (k not a multiple of the 32-deep tile, n and k not multiples of 4: the 4-byte
// copies), against the product in double.
TEST_F(GpuKernelsA, MatmulTf32WgmmaVerifiesAtSizesNoTileDivides) {
  CudaBackend backend(backend_options());
  if (backend.device().arch != "sm_90")
    GTEST_SKIP() << "wgmma needs an sm_90 device, this is " << backend.device().arch;
  const auto wg = [](const char* bm, const char* tiles, const char* groups, const char* stages) {
    return Sets{{"block_m", bm},
                {"tiles_n", tiles},
                {"warpgroups", groups},
                {"stages", stages},
                {"a_registers", "0"}};
  };
  std::vector<Sets> configs = {
      {},                        // the default (128 x 256, 4 warpgroups, 3 stages)
      wg("64", "1", "1", "3"),   // the smallest block, 3 stages
      wg("64", "2", "4", "3"),   // 64 x 512
      wg("192", "1", "3", "4"),  // wgmma n = 192, 3 warpgroups
      wg("256", "1", "2", "3"),  // 128 accumulators from one piece
      wg("128", "2", "1", "6"),  // 6 stages
      wg("192", "1", "4", "3"),  // 512 threads
  };
  // 64-deep tiles (two swizzled column blocks) and no products left running (2 stages, one
  // loading ahead).
  Sets deep = wg("192", "1", "2", "2");
  deep["block_k"] = "64";
  deep["wait_depth"] = "0";
  configs.push_back(deep);
  Sets shallow = wg("128", "1", "2", "2");
  shallow["wait_depth"] = "0";
  configs.push_back(shallow);
  Sets both = wg("64", "2", "2", "2");
  both["block_k"] = "64";
  both["wait_depth"] = "0";
  configs.push_back(both);
  // A producer warpgroup handing tiles to one or two consumers through mbarriers, with each
  // wait depth, and 64-deep tiles.
  for (const Sets& base : {wg("128", "2", "2", "4"), wg("192", "1", "2", "3"),
                           wg("64", "1", "1", "6"), wg("256", "1", "1", "2")}) {
    Sets s = base;
    s["producer"] = "1";
    s["products_first"] = "0";
    if (base.at("stages") == "2") s["wait_depth"] = "0";
    configs.push_back(s);
  }
  // Clusters of 2 and 4 blocks sharing B's tiles (the last cluster partly past m).
  for (const char* cluster : {"2", "4"}) {
    Sets s = wg("128", "1", "4", "2");
    s["wait_depth"] = "0";
    s["cluster_m"] = cluster;
    configs.push_back(s);
  }
  Sets deep_cluster = wg("192", "1", "2", "2");
  deep_cluster["block_k"] = "64";
  deep_cluster["wait_depth"] = "0";
  deep_cluster["cluster_m"] = "2";
  configs.push_back(deep_cluster);
  Sets deep_producer = wg("128", "1", "2", "3");
  deep_producer["block_k"] = "64";
  deep_producer["producer"] = "1";
  deep_producer["products_first"] = "0";
  deep_producer["wait_depth"] = "0";
  configs.push_back(deep_producer);
  // The step's other order (copies and rounding before the products) for the default, the
  // smallest block, 64-deep tiles and a cluster.
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{14}}) {
    Sets s = configs[i];
    s["products_first"] = "0";
    configs.push_back(s);
  }
  // Each again with A's tiles through registers, where that is allowed.
  const KernelInstance space(registry_.get("matmul_tf32_wgmma"), {}, DeviceLimits::for_arch(90));
  for (std::size_t i = 0, count = configs.size(); i < count; ++i) {
    Sets s = configs[i];
    s["a_registers"] = "1";
    if (space.space().is_valid(space.space().from_assignments(s))) configs.push_back(s);
  }
  EXPECT_GE(configs.size(), 29u);
  for (const Problem& p :
       {Problem{{"m", 512}, {"n", 512}, {"k", 512}}, Problem{{"m", 1000}, {"n", 780}, {"k", 516}},
        Problem{{"m", 333}, {"n", 777}, {"k", 513}}}) {
    EXPECT_EQ(verify(backend, "matmul_tf32_wgmma", p, configs), static_cast<int>(configs.size()));
  }
}

// matmul_tf32_tma (warp-specialised, the TMA's tensor maps from its run hook) at sizes no tile
// divides (m, n and k past whole tiles: the TMA's zero fill; k not a multiple of the 32-deep
// tile), against the product in double: the default, every consumer count and block height,
// the shallowest and deepest pipelines, both wait depths, every lag and round batch, and each
// cluster size.
TEST_F(GpuKernelsA, MatmulTf32TmaVerifiesAtSizesNoTileDivides) {
  CudaBackend backend(backend_options());
  if (backend.device().arch != "sm_90")
    GTEST_SKIP() << "wgmma and this kernel's TMA need an sm_90 device, this is "
                 << backend.device().arch;
  const std::vector<Sets> configs = {
      {},  // the default (128 x 256, 4 consumers, 4 stages, lag 2)
      {{"block_m", "64"}, {"warpgroups", "4"}, {"stages", "5"}, {"lag", "3"}, {"wait_depth", "1"}},
      {{"block_m", "128"},
       {"warpgroups", "4"},
       {"stages", "2"},
       {"lag", "1"},
       {"round_batch", "4"}},
      {{"block_m", "192"},
       {"warpgroups", "3"},
       {"stages", "3"},
       {"lag", "1"},
       {"round_batch", "8"}},
      {{"block_m", "128"}, {"warpgroups", "3"}, {"stages", "4"}, {"wait_depth", "1"}, {"lag", "2"}},
      {{"block_m", "256"}, {"warpgroups", "2"}, {"stages", "3"}, {"wait_depth", "1"}, {"lag", "1"}},
      {{"block_m", "64"}, {"warpgroups", "2"}, {"stages", "6"}, {"round_batch", "1"}},
      // Clusters sharing B's boxes (multicast): of 2 and 4 blocks, with 3 consumers (3 boxes
      // each), and blocks of the last cluster lying past m (333 rows: 3 of 128, 2 of 256).
      {{"block_m", "128"}, {"stages", "3"}, {"lag", "1"}, {"round_batch", "4"}, {"cluster_m", "2"}},
      {{"block_m", "192"}, {"warpgroups", "3"}, {"stages", "3"}, {"lag", "1"}, {"cluster_m", "2"}},
      {{"block_m", "128"}, {"warpgroups", "4"}, {"stages", "4"}, {"lag", "2"}, {"cluster_m", "4"}},
      {{"block_m", "256"},
       {"warpgroups", "2"},
       {"stages", "3"},
       {"wait_depth", "1"},
       {"lag", "1"},
       {"cluster_m", "4"}},
  };
  for (const Problem& p :
       {Problem{{"m", 512}, {"n", 512}, {"k", 512}}, Problem{{"m", 1000}, {"n", 780}, {"k", 516}},
        Problem{{"m", 333}, {"n", 260}, {"k", 1000}}}) {
    EXPECT_EQ(verify(backend, "matmul_tf32_tma", p, configs), static_cast<int>(configs.size()));
  }
}

// A run hook reaches CUDA runtime functions ktune carries and the driver's functions by name
// (cuTensorMapEncodeTiled, as matmul_tf32_tma's hook uses it); unknown names of either kind
// give nullptr. The hook below fails its run (and so the trial) where one answer is wrong.
int run_checking_cuda_functions(const ktune_run_ctx* ctx, char* error, std::size_t error_size) {
  const struct {
    const char* name;
    bool found;
  } expected[] = {{"cudaMemcpyAsync", true},     {"cuTensorMapEncodeTiled", true},
                  {"cuGetErrorString", true},    {"cuNoSuchFunction", false},
                  {"cudaNoSuchFunction", false}, {"", false}};
  for (const auto& e : expected) {
    if ((ctx->cuda_function(e.name) != nullptr) != e.found) {
      std::snprintf(error, error_size, "cuda_function(\"%s\") %s", e.name,
                    e.found ? "is NULL" : "is not NULL");
      return 1;
    }
  }
  return ctx->launch(ctx, nullptr, ctx->grid, ctx->block, ctx->shared_mem, ctx->args);
}

TEST_F(GpuKernelsA, ARunHookReachesRuntimeAndDriverFunctionsByName) {
  KernelSpec spec = registry_.get("copy");
  spec.run = &run_checking_cuda_functions;
  expect_each_verifies(spec, Problem{{"n", 1 << 20}}, {{}});
}

// The float data of buffer `name` of a reference context, or nullptr.
float* buffer_data(const ktune_reference_ctx* ctx, const char* name) {
  const ktune_host_buffer* b = builtin::find_buffer(ctx, name);
  return b ? static_cast<float*>(b->data) : nullptr;
}

// The exact product in double, rounded once to float.
int matmul_host_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const std::int64_t m = builtin::problem_value(ctx, "m", -1),
                     n = builtin::problem_value(ctx, "n", -1),
                     k = builtin::problem_value(ctx, "k", -1);
  const float *a = buffer_data(ctx, "a"), *b = buffer_data(ctx, "b");
  float* c = buffer_data(ctx, "c");
  if (!a || !b || !c || m < 1 || n < 1 || k < 1) {
    std::snprintf(error, error_size, "matmul host reference: missing m, n, k or a buffer");
    return 1;
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t kk = 0; kk < k; ++kk)
        s += static_cast<double>(a[i * k + kk]) * b[kk * n + j];
      c[i * n + j] = static_cast<float>(s);
    }
  }
  return 0;
}

// x rounded to TF32 as cvt.rna.tf32.f32 rounds a finite value: to nearest, ties away from zero.
float tf32_nearest(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xffffe000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// The reference of the rounding test below: B is the identity, so C is A with each element
// rounded to TF32 (one product by 1 and sums of zeros: exact in fp32).
int tf32_rounded_a_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const std::int64_t m = builtin::problem_value(ctx, "m", -1),
                     n = builtin::problem_value(ctx, "n", -1);
  const float* a = buffer_data(ctx, "a");
  float* c = buffer_data(ctx, "c");
  if (!a || !c || m < 1 || n < 1) {
    std::snprintf(error, error_size, "rounding reference: missing m, n, a or c");
    return 1;
  }
  for (std::int64_t i = 0; i < m * n; ++i) c[i] = tf32_nearest(a[i]);  // k == n
  return 0;
}

// The tensor-core kernels round each input to the nearest TF32 value (ties away from zero, as
// cuBLAS's TF32 mode and cvt.rna do) by adding half a unit of the last TF32 place and letting
// the tensor cores ignore the low 13 bits. A times the identity, compared exactly: values just
// below half a unit (which truncation and rounding both take down, but a read of all 32 bits
// after the add would not), at half a unit (ties: away from zero) and above it (which
// truncation would take down), both signs.
TEST_F(GpuKernelsA, TensorCoreKernelsRoundEveryInputToTheNearestTf32Value) {
  const std::int64_t m = 200, n = 136, k = 136;
  const float u = std::ldexp(1.0f, -10);  // a unit of the last TF32 place at 1
  const std::vector<float> values = {1 + u / 4,    1 + u / 2,    1 + 3 * u / 4,    1 + u + u / 2,
                                     -(1 + u / 4), -(1 + u / 2), -(1 + 3 * u / 4), 0.75f + u / 4,
                                     0.5f + u / 2, -3.0f + 3 * u};
  std::vector<float> a(m * k), b(k * n, 0.0f);
  for (std::int64_t i = 0; i < m * k; ++i) a[i] = values[(i * 7 + 3) % values.size()];
  for (std::int64_t i = 0; i < k; ++i) b[i * n + i] = 1.0f;
  test::TempDir dir;
  test::write_npy(dir / "a.npy", "<f4", "(" + std::to_string(m * k) + ",)", a.data(), a.size() * 4);
  test::write_npy(dir / "b.npy", "<f4", "(" + std::to_string(k * n) + ",)", b.data(), b.size() * 4);
  const Problem p{{"m", m}, {"n", n}, {"k", k}};
  const DeviceQuery q = list_devices();
  std::vector<std::pair<std::string, std::vector<Sets>>> kernels = {
      {"matmul_tf32", {{}, {{"convert_in_smem", "1"}}}}};
  if (q.devices.front().arch == "sm_90")
    kernels.push_back(
        {"matmul_tf32_wgmma",
         {{},
          {{"a_registers", "1"}, {"warpgroups", "2"}, {"tiles_n", "2"}},
          {{"producer", "1"}, {"warpgroups", "2"}, {"tiles_n", "2"}, {"products_first", "0"}},
          {{"cluster_m", "2"}, {"wait_depth", "0"}, {"stages", "2"}}}});
  if (q.devices.front().arch == "sm_90")
    kernels.push_back({"matmul_tf32_tma", {{}, {{"warpgroups", "2"}, {"block_m", "64"}}}});
  for (const auto& [kernel, configs] : kernels) {
    KernelSpec spec = with_host_reference(kernel, &tf32_rounded_a_reference);
    for (BufferSpec& buf : spec.buffers) {
      if (buf.name == "a") buf.init = "file(" + (dir / "a.npy").string() + ")";
      if (buf.name == "b") buf.init = "file(" + (dir / "b.npy").string() + ")";
      if (buf.name == "c") buf.abs_tol = buf.rel_tol = 0;  // exact
    }
    expect_each_verifies(spec, p, configs);
  }
}

// A host reference from the buffers 'in' and 'out': `f(in, out)`, or 1 with an error where
// either is missing or `f` refuses their sizes (returns false).
template <typename F>
int host_in_out(const ktune_reference_ctx* ctx, char* error, std::size_t error_size,
                const char* who, F&& f) {
  const ktune_host_buffer* in = builtin::find_buffer(ctx, "in");
  const ktune_host_buffer* out = builtin::find_buffer(ctx, "out");
  if (in != nullptr && out != nullptr && f(*in, *out)) return 0;
  std::snprintf(error, error_size, "%s: buffers 'in' and 'out' of the sizes it needs", who);
  return 1;
}

// copy's reference on the host: out = in.
int copy_host_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  return host_in_out(ctx, error, error_size, "copy host reference",
                     [](const ktune_host_buffer& in, const ktune_host_buffer& out) {
                       if (in.count != out.count) return false;
                       std::memcpy(out.data, in.data, in.count * sizeof(float));
                       return true;
                     });
}

TEST_F(GpuKernelsA, CopyReferenceConfigurationCopiesItsInputExactly) {
  // copy with the host's copy as its reference: the configuration that is copy's reference must
  // give its input back bit for bit (tolerance zero) at sizes that no vector, block or grid
  // divides, down to fewer floats than one warp.
  const Sets reference = registry_.get("copy").reference_assignments();
  const KernelSpec spec = with_host_reference("copy", &copy_host_reference);
  for (std::int64_t n : {std::int64_t{7}, std::int64_t{3000017}, std::int64_t{1} << 22})
    expect_each_verifies(spec, Problem{{"n", n}}, {reference});
}

// reduce's reference on the host: the int32 sum with wrap-around, as the GPU adds.
int reduce_host_sum(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  return host_in_out(ctx, error, error_size, "reduce host sum",
                     [](const ktune_host_buffer& in, const ktune_host_buffer& out) {
                       if (out.count < 1) return false;
                       const auto* x = static_cast<const std::int32_t*>(in.data);
                       std::uint32_t sum = 0;
                       for (std::size_t i = 0; i < in.count; ++i)
                         sum += static_cast<std::uint32_t>(x[i]);
                       const auto result = static_cast<std::int32_t>(sum);
                       std::memcpy(out.data, &result, sizeof(result));
                       return true;
                     });
}

TEST_F(GpuKernelsA, ReduceReferenceConfigurationIsTheHostsSum) {
  // reduce with the host's sum as its reference: the configuration that is reduce's reference
  // must return it exactly (the kernel's random int32 inputs), from one element and fewer than a
  // warp to sizes that take three and four levels of partial sums; and the kernel's most used
  // configurations with it.
  const KernelSpec spec = with_host_reference("reduce", &reduce_host_sum);
  const std::vector<Sets> configs = {
      registry_.get("reduce").reference_assignments(),
      {},  // the default: step 7
      {{"variant", "9"}, {"elements_per_thread", "32"}, {"unroll", "8"}},
      {{"variant", "10"}, {"elements_per_thread", "16"}, {"blocks_per_sm", "4"}}};
  for (std::int64_t n :
       {std::int64_t{1}, std::int64_t{31}, std::int64_t{3000017}, (std::int64_t{1} << 24) + 5})
    expect_each_verifies(spec, Problem{{"n", n}}, configs);
}

TEST_F(GpuKernelsA, MatmulReferenceConfigurationMatchesADoubleHostProduct) {
  const std::vector<Sets> configs = matmul_configs(registry_.get("matmul"));
  for (const Problem& p :
       {Problem{{"m", 128}, {"n", 256}, {"k", 64}}, Problem{{"m", 200}, {"n", 100}, {"k", 68}},
        Problem{{"m", 131}, {"n", 97}, {"k", 75}}}) {
    // matmul with the host product as its reference. A fp32 dot product of length k (FMA or
    // not) is off by at most gamma_k sum |a_i b_i| <= 1.01 k u * k here (|a|, |b| < 1,
    // u = 2^-24), plus u |c| for rounding the exact value: a rigorous bound, yet far below the
    // |a b| ~ 0.25 that one wrong or missing product costs.
    KernelSpec spec = with_host_reference("matmul", &matmul_host_reference);
    const double k = static_cast<double>(p.at("k"));
    for (BufferSpec& b : spec.buffers) {
      if (b.name == "c") {
        b.abs_tol = 1.01 * k * k * std::ldexp(1.0, -24);
        b.rel_tol = std::ldexp(1.0, -23);
      }
    }
    expect_each_verifies(spec, p, configs);
  }
}

}  // namespace
}  // namespace ktune
