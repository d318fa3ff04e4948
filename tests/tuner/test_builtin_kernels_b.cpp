// The built-in kernels from the lecture material, part b (convolution2d, stencil3d, soa_aos,
// streams), without a GPU: each registers and validates; a seeded sample of each space plus
// every variant compiles for sm_90 with NVRTC; the constant filter the convolution's run hook
// looks up is in the CUBIN under the name it builds, alone and in a batch; the host references
// are right on problems small enough to check by hand; and geometry, shared memory and buffer
// sizes come out right for sizes that are no multiple of the block.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/instance.h"
#include "ktune/registry.h"

namespace ktune {
namespace {

using Assignments = std::map<std::string, std::string>;

class BuiltinB : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_kernels(registry_); }
  KernelInstance instance(const std::string& kernel, const Problem& problem = {}) const {
    return KernelInstance(registry_.get(kernel), problem, DeviceLimits::for_arch(90));
  }
  Registry registry_;
};

// A reference context over hand-made buffers, as the GPU worker builds one.
struct HostBuffers {
  std::vector<std::string> problem_names;
  std::vector<const char*> name_ptrs;
  std::vector<std::int64_t> problem_values;
  std::vector<std::string> buffer_names;
  std::vector<ktune_host_buffer> buffers;

  HostBuffers(const Problem& problem, std::vector<std::pair<std::string, std::vector<float>*>> data,
              const KernelSpec& kernel) {
    for (const auto& [n, v] : problem) {
      problem_names.push_back(n);
      problem_values.push_back(v);
    }
    for (const auto& n : problem_names) name_ptrs.push_back(n.c_str());
    buffer_names.reserve(data.size());
    for (const auto& [name, vec] : data) {
      buffer_names.push_back(name);
      const auto spec = std::find_if(kernel.buffers.begin(), kernel.buffers.end(),
                                     [&](const BufferSpec& b) { return b.name == name; });
      EXPECT_NE(spec, kernel.buffers.end()) << name;
      const int role =
          spec == kernel.buffers.end() ? KTUNE_BUFFER_INPUT : static_cast<int>(spec->role);
      buffers.push_back(
          {buffer_names.back().c_str(), KTUNE_TYPE_F32, role, vec->size(), vec->data()});
    }
  }
  // Calls the kernel's reference; returns its error text, empty on success.
  std::string run(const KernelSpec& kernel) {
    ktune_reference_ctx ctx{sizeof(ktune_reference_ctx),
                            name_ptrs.size(),
                            name_ptrs.data(),
                            problem_values.data(),
                            buffers.size(),
                            buffers.data(),
                            kernel.user_data};
    char error[512] = {0};
    if (kernel.reference(&ctx, error, sizeof(error)) != 0)
      return error[0] ? error : "failed without a message";
    return {};
  }
};

const std::vector<std::string> kKernels = {"convolution2d", "stencil3d", "soa_aos", "streams"};

// ---------------------------------------------------------------------------------------------
// Registration

TEST_F(BuiltinB, EachKernelIsRegisteredValidAndHasAValidDefault) {
  for (const std::string& name : kKernels) {
    ASSERT_TRUE(registry_.contains(name)) << name;
    const KernelSpec& k = registry_.get(name);
    EXPECT_EQ(k.origin, "builtin");
    EXPECT_NO_THROW(k.validate()) << name;
    EXPECT_NE(k.reference, nullptr) << name << ": a host reference";
    EXPECT_FALSE(k.description.empty()) << name;
    EXPECT_FALSE(k.bytes.empty()) << name;
    EXPECT_EQ(k.source.find("#include"), std::string::npos)
        << name << ": blocks batched compilation";
    EXPECT_EQ(k.source.find("extern \"C\""), std::string::npos)
        << name << ": blocks batched compilation";
    const KernelInstance inst = instance(name);  // the default problem
    EXPECT_TRUE(inst.space().is_valid(inst.space().default_config()))
        << name << ": " << inst.space().violated(inst.space().default_config()).value_or("");
    EXPECT_GT(inst.space().enumerate().size(), 20u) << name;
  }
  // The hooks: the convolution fills its constant filter, streams runs the pipeline.
  EXPECT_NE(registry_.get("convolution2d").run, nullptr);
  EXPECT_NE(registry_.get("streams").run, nullptr);
  EXPECT_EQ(registry_.get("stencil3d").run, nullptr);
  EXPECT_EQ(registry_.get("soa_aos").run, nullptr);
}

TEST_F(BuiltinB, RestrictionsShapeTheSpaces) {
  // convolution2d: the compile-time filter size follows the problem; even f has no space.
  for (std::int64_t f : {3, 9, 15}) {
    const KernelInstance inst = instance("convolution2d", {{"h", 100}, {"w", 100}, {"f", f}});
    const std::size_t fs = inst.space().param_index("filter_size");
    const std::vector<Config> valid = inst.space().enumerate();
    ASSERT_FALSE(valid.empty()) << "f=" << f;
    for (const Config& c : valid) ASSERT_EQ(inst.space().value(c, fs).as_int(), f);
    for (const Config& c : valid) {
      const auto v = [&](const char* p) {
        return inst.space().value(c, inst.space().param_index(p)).as_int();
      };
      ASSERT_TRUE(v("use_padding") == 0 || (v("use_shmem") == 1 && v("block_size_x") % 32 != 0))
          << inst.space().key(c);
      ASSERT_GE(v("block_size_x") * v("block_size_y"), 32) << inst.space().key(c);
    }
  }
  EXPECT_TRUE(instance("convolution2d", {{"f", 4}}).space().enumerate().empty());
  EXPECT_TRUE(instance("convolution2d", {{"f", 17}}).space().enumerate().empty());

  // stencil3d: a z chunk of at least nz is one chunk; only the smallest such value remains.
  const KernelInstance st = instance("stencil3d", {{"nx", 64}, {"ny", 64}, {"nz", 100}});
  std::set<std::int64_t> chunks;
  for (const Config& c : st.space().enumerate())
    chunks.insert(st.space().value(c, st.space().param_index("z_chunk")).as_int());
  EXPECT_EQ(chunks, (std::set<std::int64_t>{4, 8, 16, 32, 64, 128}));
  // 32-bit offsets and the register cap are the vector variant's, and 32-bit offsets only where
  // the grid has fewer than 2^31 points.
  const auto offsets = [&](const KernelInstance& k) {
    std::set<std::string> seen;
    const SearchSpace& sp = k.space();
    for (const Config& c : sp.enumerate()) {
      const std::string variant = sp.value(c, sp.param_index("variant")).as_string();
      const std::int64_t bits = sp.value(c, sp.param_index("offsets")).as_int();
      const std::int64_t regs = sp.value(c, sp.param_index("maxrregcount")).as_int();
      EXPECT_TRUE(variant == "vector" || (bits == 64 && regs == 0)) << sp.key(c);
      seen.insert(std::to_string(bits));
    }
    return seen;
  };
  EXPECT_EQ(offsets(st), (std::set<std::string>{"32", "64"}));
  EXPECT_EQ(offsets(instance("stencil3d", {{"nx", 2048}, {"ny", 1024}, {"nz", 1024}})),
            (std::set<std::string>{"64"}));

  // soa_aos: shared-memory staging is an AoS remedy only.
  const KernelInstance sa = instance("soa_aos", {{"n", 1000}});
  EXPECT_FALSE(
      sa.space().is_valid(sa.space().from_assignments({{"layout", "soa"}, {"use_shmem", "1"}})));
  EXPECT_TRUE(
      sa.space().is_valid(sa.space().from_assignments({{"layout", "aos"}, {"use_shmem", "1"}})));

  // streams: one chunk is the baseline, with one stream; more streams than chunks are useless.
  const KernelInstance sm = instance("streams", {{"n", 1000}});
  EXPECT_TRUE(sm.space().is_valid(
      sm.space().from_assignments({{"chunks", "1"}, {"streams", "1"}, {"breadth_first", "0"}})));
  EXPECT_FALSE(
      sm.space().is_valid(sm.space().from_assignments({{"chunks", "2"}, {"streams", "4"}})));
  EXPECT_FALSE(sm.space().is_valid(
      sm.space().from_assignments({{"chunks", "8"}, {"streams", "1"}, {"breadth_first", "1"}})));
}

// ---------------------------------------------------------------------------------------------
// NVRTC compile-only: a seeded sample of each space and every variant

// `variants`: the parameters whose every value must be compiled at least once.
void compile_sample(const KernelInstance& inst, const std::vector<std::string>& variants,
                    std::size_t count, std::uint64_t seed) {
  const SearchSpace& space = inst.space();
  const std::vector<Config> valid = space.enumerate();
  ASSERT_GT(valid.size(), count) << inst.kernel().name;
  std::vector<Config> picked;
  std::mt19937_64 rng(seed);
  std::sample(valid.begin(), valid.end(), std::back_inserter(picked), count, rng);
  for (const std::string& p : variants) {
    const std::size_t index = space.param_index(p);
    for (const Value& v : space.params()[index].values) {
      const auto it = std::find_if(valid.begin(), valid.end(),
                                   [&](const Config& c) { return space.value(c, index) == v; });
      ASSERT_NE(it, valid.end()) << inst.kernel().name << ": no valid config with " << p << "="
                                 << v.to_string();
      picked.push_back(*it);
    }
  }
  CompilePool pool(2, nullptr);
  std::vector<std::shared_future<CompileResult>> futures;
  for (const Config& c : picked) futures.push_back(pool.submit(render(inst, c, "sm_90")));
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const CompileResult& r = futures[i].get();
    const std::string key = inst.kernel().name + "[" + space.key(picked[i]) + "]";
    EXPECT_TRUE(r.ok) << key << ": " << r.error << "\n" << r.log;
    if (!r.ok) continue;
    EXPECT_TRUE(r.cubin.starts_with("\177ELF")) << key;
    EXPECT_NE(r.lowered_name.find(inst.kernel().entry), std::string::npos)
        << key << ": " << r.lowered_name;
    EXPECT_GT(r.resources.registers, 0) << key;
    EXPECT_LE(r.resources.registers, 255) << key;
  }
}

TEST_F(BuiltinB, ConvolutionSampleCompilesForSm90) {
  // Small filters keep ptxas quick; the 15 x 15 filter of the default problem gets a few.
  compile_sample(instance("convolution2d", {{"h", 1000}, {"w", 1000}, {"f", 5}}),
                 {"use_shmem", "use_padding"}, 14, 20251);
  compile_sample(instance("convolution2d"), {"use_shmem"}, 4, 20252);
}

TEST_F(BuiltinB, Stencil3dSampleCompilesForSm90) {
  compile_sample(instance("stencil3d"), {"variant", "block_size_x", "block_size_y"}, 20, 20253);
}

TEST_F(BuiltinB, SoaAosSampleCompilesForSm90) {
  compile_sample(instance("soa_aos"), {"layout", "use_shmem", "elements_per_thread"}, 20, 20254);
}

TEST_F(BuiltinB, StreamsSampleCompilesForSm90) {
  compile_sample(instance("streams"), {"block_size"}, 20, 20255);
}

// The run hook names the constant filter after the configuration and finds it by that name:
// plain when compiled alone, as ktune_cfg_K::name (mangled) when configuration K of a batch.
TEST_F(BuiltinB, ConvolutionFilterSymbolIsInTheCubinAloneAndBatched) {
  const KernelInstance inst = instance("convolution2d", {{"h", 300}, {"w", 200}, {"f", 3}});
  const std::vector<Assignments> sets = {
      {{"block_size_x", "32"},
       {"block_size_y", "4"},
       {"tile_size_x", "1"},
       {"tile_size_y", "2"},
       {"use_shmem", "0"}},
      {{"block_size_x", "48"},
       {"block_size_y", "2"},
       {"tile_size_x", "2"},
       {"tile_size_y", "1"},
       {"use_shmem", "1"},
       {"use_padding", "1"}},
      {{"block_size_x", "16"},
       {"block_size_y", "8"},
       {"tile_size_x", "3"},
       {"tile_size_y", "3"},
       {"use_shmem", "1"}},
      {{"block_size_x", "16"},
       {"block_size_y", "4"},
       {"tile_size_x", "1"},
       {"tile_size_y", "2"},
       {"use_shmem", "1"},
       {"use_padding", "1"},
       {"reg_rows", "8"},
       {"full_unroll", "1"}},
  };
  std::vector<CompileRequest> requests;
  std::vector<std::string> names;
  for (Assignments a : sets) {
    a.emplace("filter_size", "3");  // the space pins it to the problem's f
    const Config c = inst.space().from_assignments(a);
    ASSERT_TRUE(inst.space().is_valid(c)) << inst.space().key(c);
    requests.push_back(render(inst, c, "sm_90"));
    ASSERT_FALSE(requests.back().batch_group.empty()) << "the template must allow batching";
    const auto v = [&](const char* p) {
      return inst.space().value(c, inst.space().param_index(p)).to_string();
    };
    names.push_back("conv_filter_" + v("block_size_x") + "_" + v("block_size_y") + "_" +
                    v("tile_size_x") + "_" + v("tile_size_y") + "_" + v("use_shmem") + "_" +
                    v("use_padding") + "_" + v("filter_size"));
    if (v("reg_rows") != "1") names.back() += "_r" + v("reg_rows") + "_u" + v("full_unroll");
  }
  EXPECT_EQ(names[1], "conv_filter_48_2_2_1_1_1_3");
  EXPECT_EQ(names[3], "conv_filter_16_4_1_2_1_1_3_r8_u1");

  const CompileResult alone = compile(requests[0]);
  ASSERT_TRUE(alone.ok) << alone.error << "\n" << alone.log;
  EXPECT_NE(alone.cubin.find(names[0] + '\0'), std::string::npos) << names[0];

  const std::vector<CompileResult> batch = compile_batch(requests);
  ASSERT_EQ(batch.size(), requests.size());
  for (std::size_t k = 0; k < batch.size(); ++k) {
    ASSERT_TRUE(batch[k].ok) << batch[k].error;
    const std::string ns = "ktune_cfg_" + std::to_string(k);
    const std::string mangled =
        "_ZN" + std::to_string(ns.size()) + ns + std::to_string(names[k].size()) + names[k] + "E";
    EXPECT_NE(batch[k].cubin.find(mangled + '\0'), std::string::npos) << mangled;
    // The entry of configuration k is in the same namespace.
    EXPECT_NE(batch[k].lowered_name.find(ns), std::string::npos) << batch[k].lowered_name;
  }
  EXPECT_EQ(batch[0].cubin, batch[2].cubin) << "one program for the batch";
}

// ---------------------------------------------------------------------------------------------
// Host references on tiny problems

// The definition, written out: zero outside the image, no flip.
std::vector<float> convolve(const std::vector<float>& img, const std::vector<float>& filt, int h,
                            int w, int f) {
  std::vector<float> out(img.size());
  const int r = (f - 1) / 2;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      double s = 0;
      for (int i = 0; i < f; ++i)
        for (int j = 0; j < f; ++j) {
          const int yy = y + i - r, xx = x + j - r;
          if (yy >= 0 && yy < h && xx >= 0 && xx < w)
            s += double(filt[i * f + j]) * img[yy * w + xx];
        }
      out[y * w + x] = static_cast<float>(s);
    }
  }
  return out;
}

TEST_F(BuiltinB, ConvolutionReferenceIsTheZeroPaddedSameConvolution) {
  const KernelSpec& k = registry_.get("convolution2d");
  const int h = 5, w = 7;
  std::vector<float> image(h * w);
  for (int i = 0; i < h * w; ++i) image[i] = static_cast<float>(i % 11) - 4.5f;

  // A centred delta filter reproduces the image.
  std::vector<float> delta(9, 0.0f), out(h * w, -1.0f);
  delta[4] = 1.0f;
  HostBuffers b1({{"h", h}, {"w", w}, {"f", 3}},
                 {{"image", &image}, {"filter", &delta}, {"out", &out}}, k);
  ASSERT_EQ(b1.run(k), "");
  EXPECT_EQ(out, image);

  // An all-ones 3 x 3 filter: corner and interior sums by hand (zeros beyond the border).
  std::vector<float> ones(9, 1.0f);
  HostBuffers b2({{"h", h}, {"w", w}, {"f", 3}},
                 {{"image", &image}, {"filter", &ones}, {"out", &out}}, k);
  ASSERT_EQ(b2.run(k), "");
  const auto px = [&](int y, int x) { return image[y * w + x]; };
  EXPECT_FLOAT_EQ(out[0], px(0, 0) + px(0, 1) + px(1, 0) + px(1, 1));
  float interior = 0;
  for (int y = 1; y <= 3; ++y)
    for (int x = 2; x <= 4; ++x) interior += px(y, x);
  EXPECT_FLOAT_EQ(out[2 * w + 3], interior);

  // An asymmetric 5 x 5 filter wider than the image is tall: no flip, borders everywhere.
  std::vector<float> f5(25);
  for (int i = 0; i < 25; ++i) f5[i] = 0.25f * static_cast<float>((i * 7) % 9) - 1.0f;
  const int h2 = 3, w2 = 9;
  std::vector<float> img2(h2 * w2), out2(h2 * w2, -1.0f);
  for (int i = 0; i < h2 * w2; ++i) img2[i] = std::sin(0.7f * static_cast<float>(i));
  HostBuffers b3({{"h", h2}, {"w", w2}, {"f", 5}},
                 {{"image", &img2}, {"filter", &f5}, {"out", &out2}}, k);
  ASSERT_EQ(b3.run(k), "");
  const std::vector<float> want = convolve(img2, f5, h2, w2, 5);
  for (int i = 0; i < h2 * w2; ++i) EXPECT_NEAR(out2[i], want[i], 1e-6) << "element " << i;

  // Sizes that do not match the problem are an error, not a crash.
  std::vector<float> small(3);
  HostBuffers bad({{"h", h}, {"w", w}, {"f", 3}},
                  {{"image", &small}, {"filter", &ones}, {"out", &out}}, k);
  EXPECT_NE(bad.run(k), "");
}

TEST_F(BuiltinB, StencilReferenceCopiesTheFacesAndWeighsTheInterior) {
  const KernelSpec& k = registry_.get("stencil3d");
  const int nx = 5, ny = 4, nz = 3;
  std::vector<float> in(nx * ny * nz), out(in.size(), -7.0f);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>((i * 13) % 17) * 0.125f - 1.0f;
  HostBuffers b({{"nx", nx}, {"ny", ny}, {"nz", nz}}, {{"in", &in}, {"out", &out}}, k);
  ASSERT_EQ(b.run(k), "");
  const auto at = [&](const std::vector<float>& a, int x, int y, int z) {
    return a[(z * ny + y) * nx + x];
  };
  int interior = 0;
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        const bool face = x == 0 || x == nx - 1 || y == 0 || y == ny - 1 || z == 0 || z == nz - 1;
        if (face) {
          EXPECT_EQ(at(out, x, y, z), at(in, x, y, z)) << x << "," << y << "," << z;
          continue;
        }
        ++interior;
        const float want = 0.4f * at(in, x, y, z) +
                           0.1f * (at(in, x - 1, y, z) + at(in, x + 1, y, z) + at(in, x, y - 1, z) +
                                   at(in, x, y + 1, z) + at(in, x, y, z - 1) + at(in, x, y, z + 1));
        EXPECT_NEAR(at(out, x, y, z), want, 1e-6) << x << "," << y << "," << z;
      }
  EXPECT_EQ(interior, 3 * 2 * 1);
}

TEST_F(BuiltinB, SoaAosReferenceFillsTheOutputOfTheLayoutInUse) {
  const KernelSpec& k = registry_.get("soa_aos");
  const int n = 3;
  // Particle i: p = (1, 2, 3) + i, v = (0.5, -0.5, 1), f = (2, 4, -8), m = 2 (i + 1).
  const auto field = [](int i, int f) -> float {
    const float values[10] = {1, 2, 3, 0.5f, -0.5f, 1, 2, 4, -8, 2};
    return f < 3    ? values[f] + static_cast<float>(i)
           : f == 9 ? 2.0f * static_cast<float>(i + 1)
                    : values[f];
  };
  const auto expected = [&](int i, int f) -> float {
    const float dt = 0.01f;
    if (f < 3) return field(i, f) + field(i, 3 + f) * dt;
    return field(i, f) + field(i, f + 3) / field(i, 9) * dt;
  };
  std::vector<float> in_aos(10 * n), in_soa(10 * n), none_in, none_out;
  for (int i = 0; i < n; ++i)
    for (int f = 0; f < 10; ++f) {
      in_aos[i * 10 + f] = field(i, f);
      in_soa[f * n + i] = field(i, f);
    }
  std::vector<float> out_aos(6 * n, -1.0f), out_soa(6 * n, -1.0f);
  HostBuffers aos(
      {{"n", n}},
      {{"in_aos", &in_aos}, {"out_aos", &out_aos}, {"in_soa", &none_in}, {"out_soa", &none_out}},
      k);
  ASSERT_EQ(aos.run(k), "");
  HostBuffers soa(
      {{"n", n}},
      {{"in_aos", &none_in}, {"out_aos", &none_out}, {"in_soa", &in_soa}, {"out_soa", &out_soa}},
      k);
  ASSERT_EQ(soa.run(k), "");
  for (int i = 0; i < n; ++i)
    for (int f = 0; f < 6; ++f) {
      EXPECT_NEAR(out_aos[i * 6 + f], expected(i, f), 1e-6)
          << "aos particle " << i << " field " << f;
      EXPECT_EQ(out_soa[f * n + i], out_aos[i * 6 + f]) << "soa particle " << i << " field " << f;
    }
  EXPECT_FLOAT_EQ(out_aos[3], 0.5f + 2.0f / 2.0f * 0.01f);  // vx of particle 0

  // Buffers that do not fit n are an error.
  std::vector<float> short_out(5);
  HostBuffers bad(
      {{"n", n}},
      {{"in_aos", &in_aos}, {"out_aos", &short_out}, {"in_soa", &none_in}, {"out_soa", &none_out}},
      k);
  EXPECT_NE(bad.run(k), "");
}

TEST_F(BuiltinB, StreamsReferenceIsAxPlusB) {
  const KernelSpec& k = registry_.get("streams");
  std::vector<float> x = {0.0f, 1.0f, -0.75f, 0.3f}, y(4, -1.0f), scratch(4);
  HostBuffers b({{"n", 4}}, {{"x", &x}, {"y", &y}, {"x_dev", &scratch}}, k);
  ASSERT_EQ(b.run(k), "");
  EXPECT_EQ(y, (std::vector<float>{0.5f, 2.5f, -1.0f, 2.0f * 0.3f + 0.5f}));
}

// ---------------------------------------------------------------------------------------------
// Geometry, shared memory and buffer sizes for sizes that are no multiple of the block

TEST_F(BuiltinB, ConvolutionGeometryForAnOddImage) {
  const KernelInstance inst = instance("convolution2d", {{"h", 1000}, {"w", 999}, {"f", 15}});
  const Config shared = inst.space().from_assignments({{"block_size_x", "48"},
                                                       {"block_size_y", "8"},
                                                       {"tile_size_x", "2"},
                                                       {"tile_size_y", "3"},
                                                       {"use_shmem", "1"},
                                                       {"use_padding", "1"}});
  ASSERT_TRUE(inst.space().is_valid(shared)) << inst.space().violated(shared).value_or("");
  const LaunchGeometry g = inst.geometry(shared);
  EXPECT_EQ(g.grid, (std::array<std::uint32_t, 3>{11, 42, 1}));  // ceil(999 / 96), ceil(1000 / 24)
  EXPECT_EQ(g.block, (std::array<std::uint32_t, 3>{48, 8, 1}));
  // Tile 110 x 38 floats; the stride 112 = 48 (mod 32) puts a warp's two rows in other banks.
  EXPECT_EQ(g.shared_mem, 4u * 38 * 112);
  const Config unpadded = inst.space().from_assignments({{"block_size_x", "48"},
                                                         {"block_size_y", "8"},
                                                         {"tile_size_x", "2"},
                                                         {"tile_size_y", "3"},
                                                         {"use_shmem", "1"},
                                                         {"use_padding", "0"}});
  EXPECT_EQ(inst.geometry(unpadded).shared_mem, 4u * 38 * 110);
  const Config global = inst.space().from_assignments({{"use_shmem", "0"}});
  EXPECT_EQ(inst.geometry(global).shared_mem, 0u);
  EXPECT_EQ(inst.buffer_sizes(shared), (std::vector<std::uint64_t>{999000, 225, 999000}));
  EXPECT_DOUBLE_EQ(inst.flops(shared), 2.0 * 999000 * 225);
  EXPECT_DOUBLE_EQ(inst.bytes(shared), (2.0 * 999000 + 225) * 4);
  const std::vector<ScalarArg> args = inst.scalar_args(shared);
  ASSERT_EQ(args.size(), 4u);
  std::int32_t h = 0, w = 0;
  std::memcpy(&h, args[2].bytes.data(), 4);
  std::memcpy(&w, args[3].bytes.data(), 4);
  EXPECT_EQ(h, 1000);
  EXPECT_EQ(w, 999);
}

TEST_F(BuiltinB, StencilGeometryForAnOddGrid) {
  const KernelInstance inst = instance("stencil3d", {{"nx", 100}, {"ny", 37}, {"nz", 33}});
  const Config c = inst.space().from_assignments(
      {{"block_size_x", "64"}, {"block_size_y", "4"}, {"z_chunk", "16"}, {"variant", "shared"}});
  const LaunchGeometry g = inst.geometry(c);
  EXPECT_EQ(g.grid, (std::array<std::uint32_t, 3>{2, 10, 3}));
  EXPECT_EQ(g.block, (std::array<std::uint32_t, 3>{64, 4, 1}));
  EXPECT_EQ(inst.buffer_sizes(c), (std::vector<std::uint64_t>{100 * 37 * 33, 100 * 37 * 33}));
  EXPECT_DOUBLE_EQ(inst.bytes(c), 8.0 * 100 * 37 * 33);
  EXPECT_DOUBLE_EQ(inst.flops(c), 8.0 * 98 * 35 * 31);
  EXPECT_DOUBLE_EQ(instance("stencil3d", {{"nx", 2}, {"ny", 9}, {"nz", 9}}).flops(c), 0.0);
}

TEST_F(BuiltinB, SoaAosBuffersExistOnlyForTheLayoutInUse) {
  const KernelInstance inst = instance("soa_aos", {{"n", 1001}});
  const Config aos = inst.space().from_assignments(
      {{"layout", "aos"}, {"use_shmem", "1"}, {"block_size", "256"}, {"elements_per_thread", "4"}});
  const Config soa = inst.space().from_assignments(
      {{"layout", "soa"}, {"block_size", "128"}, {"elements_per_thread", "8"}});
  // Buffers in declaration order: in_aos, out_aos, in_soa, out_soa.
  EXPECT_EQ(inst.buffer_sizes(aos), (std::vector<std::uint64_t>{10010, 6006, 0, 0}));
  EXPECT_EQ(inst.buffer_sizes(soa), (std::vector<std::uint64_t>{0, 0, 10010, 6006}));
  EXPECT_EQ(inst.geometry(aos).grid[0], 1u);  // ceil(1001 / 1024)
  EXPECT_EQ(inst.geometry(soa).grid[0], 1u);
  EXPECT_EQ(instance("soa_aos", {{"n", 1025}}).geometry(soa).grid[0], 2u);
  EXPECT_EQ(inst.geometry(aos).shared_mem, 256u * 4 * 16 * 4);
  EXPECT_EQ(inst.geometry(soa).shared_mem, 0u);
  EXPECT_DOUBLE_EQ(inst.bytes(soa), 64.0 * 1001);
  // The defines the kernel switches on.
  const auto defines = inst.defines(aos);
  EXPECT_NE(std::find(defines.begin(), defines.end(),
                      std::make_pair(std::string("LAYOUT_AOS"), std::string("1"))),
            defines.end());
}

TEST_F(BuiltinB, StreamsGeometryForAnOddSize) {
  const KernelInstance inst = instance("streams", {{"n", 1000003}});
  const Config c =
      inst.space().from_assignments({{"block_size", "256"}, {"chunks", "8"}, {"streams", "3"}});
  EXPECT_EQ(inst.geometry(c).grid[0], 3907u);  // ceil(1000003 / 256)
  EXPECT_EQ(inst.buffer_sizes(c), (std::vector<std::uint64_t>{1000003, 1000003, 1000003}));
  EXPECT_DOUBLE_EQ(inst.bytes(c), 8.0 * 1000003);
}

}  // namespace
}  // namespace ktune
