// The client renders a stored configuration exactly as the tuner does (same source text,
// options and CompileRequest::key), uses the stored binary when it runs on the device and
// compiles the stored source with NVRTC otherwise (no GPU needed for either), with memory and
// disk caches; and its device limits are the tuner's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client_test_util.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "ktune/tuner.h"

namespace ktune::test {
namespace {

using ::testing::HasSubstr;

class Render : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    register_builtin_kernels(registry_);
  }

  // Stores `config` of the real reduce as the best for `device` at n, with the spec_json the
  // tuner writes; with `binary_arch`, also a binary of that arch under the trial's key.
  struct Stored {
    std::shared_ptr<KernelInstance> instance;
    Config config;
    CompileRequest request;  // the tuner's rendering for the device's arch
  };
  Stored store_best(const std::map<std::string, std::string>& assignments,
                    const DeviceRecord& device, std::int64_t n,
                    const std::string& binary_arch = "") {
    Stored s;
    s.instance = std::make_shared<KernelInstance>(
        registry_.get("reduce"), Problem{{"n", n}},
        DeviceLimits::for_arch(device.cc_major * 10 + device.cc_minor));
    s.config = s.instance->space().from_assignments(assignments);
    EXPECT_TRUE(s.instance->space().is_valid(s.config)) << s.instance->space().key(s.config);
    s.request = ktune::render(*s.instance, s.config, device.arch);
    Store store = Store::open(db_path_);
    BestSpec b;
    b.kernel_id = store.upsert_kernel(kernel_record(*s.instance));
    b.device = device;
    b.problem = {{"n", n}};
    nlohmann::json config;
    for (std::size_t i = 0; i < s.instance->space().size(); ++i) {
      const Value v = s.instance->space().value(s.config, i);
      config[s.instance->space().params()[i].name] = v.as_int();
    }
    b.config_json = config.dump();
    b.config_key = s.instance->space().key(s.config);
    b.binary_key = s.request.key();
    add_best(store, b);
    if (!binary_arch.empty()) {
      store.put_binary(b.binary_key, binary_arch, "lowered_name_of_the_stored_binary",
                       "stored cubin bytes");
    }
    return s;
  }

  Registry registry_;
};

TEST_F(Render, SameRequestAsTheTuner) {
  const std::vector<std::map<std::string, std::string>> configs = {
      {{"block_size", "256"}, {"variant", "9"}, {"elements_per_thread", "8"}, {"unroll", "4"}},
      // launch bounds and a register limit: a macro and an option of their own
      {{"block_size", "128"},
       {"variant", "7"},
       {"elements_per_thread", "16"},
       {"launch_bounds", "2"},
       {"maxrregcount", "64"}},
      {{"block_size", "32"}, {"variant", "1"}, {"elements_per_thread", "1"}},
  };
  for (const auto& assignments : configs) {
    std::error_code ec;
    std::filesystem::remove(db_path_, ec);
    const Stored s = store_best(assignments, h200(), 1 << 24);
    Client c(db_path_, client_device(h200()));
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r) << r.message;
    for (const std::string arch : {"sm_90", "sm_80"}) {
      const CompileRequest tuner = ktune::render(*s.instance, s.config, arch);
      const CompileRequest client = c.render(*r, arch);
      EXPECT_EQ(client.source, tuner.source) << arch;
      EXPECT_EQ(client.source_name, tuner.source_name);
      EXPECT_EQ(client.entry, tuner.entry);
      EXPECT_EQ(client.options, tuner.options);
      EXPECT_EQ(client.arch, tuner.arch);
      EXPECT_EQ(client.key(), tuner.key()) << s.instance->space().key(s.config) << " " << arch;
    }
    // The winner's own binary key, as the tuner stored it on the trial.
    EXPECT_EQ(c.render(*r, "sm_90").key(), r->provenance.binary_key);
    // And the launch shape is the instance's geometry.
    const LaunchGeometry g = s.instance->geometry(s.config);
    const LaunchShape shape = c.shape(*r, {{"n", 1 << 24}});
    EXPECT_EQ(shape.grid, g.grid);
    EXPECT_EQ(shape.block, g.block);
    EXPECT_EQ(shape.shared_mem, g.shared_mem);
  }
}

TEST_F(Render, ASourceNameInTheSpecIsUsed) {
  Store store = Store::open(db_path_);
  KernelRecord k = reduce_record();
  nlohmann::json spec = nlohmann::json::parse(k.spec_json);
  spec["source_name"] = "kernels/my_reduce.cu";
  k.spec_json = spec.dump();
  BestSpec b;
  b.kernel_id = store.upsert_kernel(k);
  b.device = h200();
  b.problem = {{"n", 1 << 24}};
  add_best(store, b);
  Client c(db_path_, client_device(h200()));
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r);
  const CompileRequest req = c.render(*r, "sm_90");
  EXPECT_EQ(req.source_name, "kernels/my_reduce.cu");
  EXPECT_THAT(req.source, HasSubstr("#line 1 \"kernels/my_reduce.cu\"\n"));
  EXPECT_THAT(
      req.source,
      HasSubstr("#define BLOCK_SIZE 256\n#define VARIANT 9\n#define ELEMENTS_PER_THREAD 8\n"));
  EXPECT_THAT(req.source, HasSubstr("#define KTUNE_BLOCK_X 256\n"));
  EXPECT_EQ(req.options, (std::vector<std::string>{"-std=c++17", "--gpu-architecture=sm_90",
                                                   "--ptxas-options=-v", "-minimal"}));
}

TEST_F(Render, ClientLimitsAreTheTunersDeviceLimits) {
  for (int cc : {70, 75, 80, 86, 89, 90, 100}) {
    const DeviceLimits tuner = DeviceLimits::for_arch(cc);
    const std::string arch = "sm_" + std::to_string(cc);
    const ClientDevice d =
        ClientDevice::describe("x", arch, static_cast<int>(tuner.multiprocessor_count), 1);
    EXPECT_EQ(d.cc_major * 10 + d.cc_minor, cc);
    const Constants expected = tuner.constants();
    const Constants got = d.limits.constants();
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(got[i].first, expected[i].first) << arch;
      EXPECT_EQ(got[i].second, expected[i].second) << arch << " " << expected[i].first;
    }
  }
  expect_error(ErrorKind::kUsage, "'gfx90a' is not an architecture",
               [] { (void)ClientDevice::describe("x", "gfx90a", 1, 1); });
}

TEST_F(Render, NvrtcWhenTheStoredBinaryIsForAnotherArchThenFromTheCacheDirectory) {
  const Stored s =
      store_best({{"block_size", "256"}, {"variant", "9"}, {"elements_per_thread", "8"}}, h200(),
                 1 << 24, "sm_90");
  ClientOptions o;
  o.cache_dir = dir_ / "cubins";
  // Another sm_90 device takes the stored sm_90 binary as it is.
  {
    Client c(db_path_, client_device(h100_sxm()), o);
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r);
    EXPECT_EQ(c.binary(*r)->origin, KernelOrigin::kStoredBinary);
  }
  // The stored binary marked as sm_100 (another major): compile for sm_90 with NVRTC.
  {
    Store store = Store::open(db_path_);
    store.put_binary(s.request.key(), "sm_100", "x", "not for this device");
  }
  {
    Client c(db_path_, client_device(h200()), o);
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r);
    const auto bin = c.binary(*r);
    EXPECT_EQ(bin->origin, KernelOrigin::kCompiled);
    EXPECT_EQ(bin->reason, "the stored binary is for sm_100, this device is sm_90");
    EXPECT_EQ(bin->arch, "sm_90");
    EXPECT_EQ(bin->key, s.request.key());
    EXPECT_THAT(bin->lowered_name, HasSubstr("reduce"));
    EXPECT_GT(bin->cubin.size(), 1000u);
    EXPECT_EQ(bin->cubin.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_GT(bin->obtain_ms, 0);
    EXPECT_EQ(c.binary(*r).get(), bin.get()) << "memory cache";
  }
  {
    Client c(db_path_, client_device(h200()), o);
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r);
    const auto bin = c.binary(*r);
    EXPECT_EQ(bin->origin, KernelOrigin::kDiskCache);
    EXPECT_EQ(to_string(bin->origin), "NVRTC result from the cache directory");
  }
}

TEST_F(Render, NvrtcForAnOlderDeviceOfTheSameMajor) {
  // Tuned on sm_86 with its binary; an sm_80 device takes nothing (sm_86 is newer), an sm_87
  // device takes the sm_86 binary as is (same major, older minor: binary compatible).
  store_best({{"block_size", "128"}, {"variant", "8"}, {"elements_per_thread", "4"}}, a40(),
             1 << 20, "sm_86");
  {
    Client c(db_path_, client_device(device("Orin", "sm_87", 16, 1)));
    const LookupResult r = c.best("reduce", {{"n", 1 << 20}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->device_match, DeviceMatch::kSameMajor);
    const auto bin = c.binary(*r);
    EXPECT_EQ(bin->origin, KernelOrigin::kStoredBinary);
    EXPECT_EQ(bin->arch, "sm_86");
  }
  {
    Client c(db_path_, client_device(a100()));
    EXPECT_FALSE(c.best("reduce", {{"n", 1 << 20}}));
  }
}

// A kernel compiled for the architecture-specific target (matmul_tf32_wgmma, sm_90a): the client
// renders it as the tuner did (sm_90a on an sm_90 device) and takes a stored sm_90a binary on
// another sm_90 device (it used to refuse every 'a' binary and compile again).
TEST_F(Render, AnArchSpecificKernelRendersAndLoadsForThatArchitectureAlone) {
  const Problem problem{{"m", 4096}, {"n", 4096}, {"k", 4096}};
  KernelInstance instance(registry_.get("matmul_tf32_wgmma"), problem, DeviceLimits::for_arch(90));
  const Config config = instance.space().default_config();
  const CompileRequest request = ktune::render(instance, config, "sm_90");
  ASSERT_EQ(request.arch, "sm_90a");
  {
    Store store = Store::open(db_path_);
    BestSpec b;
    b.kernel_id = store.upsert_kernel(kernel_record(instance));
    b.device = h200();
    b.problem = problem;
    nlohmann::json json;
    for (std::size_t i = 0; i < instance.space().size(); ++i)
      json[instance.space().params()[i].name] = instance.space().value(config, i).as_int();
    b.config_json = json.dump();
    b.config_key = instance.space().key(config);
    b.binary_key = request.key();
    add_best(store, b);
    store.put_binary(b.binary_key, "sm_90a", "lowered_name_of_the_stored_binary", "cubin bytes");
  }
  Client c(db_path_, client_device(h100_sxm()));
  const LookupResult r = c.best("matmul_tf32_wgmma", problem);
  ASSERT_TRUE(r) << r.message;
  const CompileRequest client = c.render(*r, "sm_90");
  EXPECT_EQ(client.arch, "sm_90a");
  EXPECT_EQ(client.options, request.options);
  EXPECT_EQ(client.key(), request.key());
  EXPECT_EQ(c.binary(*r)->origin, KernelOrigin::kStoredBinary);
  EXPECT_EQ(c.binary(*r)->arch, "sm_90a");
}

TEST_F(Render, NoStoredBinaryMeansNvrtc) {
  store_best({{"block_size", "64"}, {"variant", "8"}, {"elements_per_thread", "2"}}, h200(),
             1 << 20);
  Client c(db_path_, client_device(h200()));
  const LookupResult r = c.best("reduce", {{"n", 1 << 20}});
  ASSERT_TRUE(r);
  const auto bin = c.binary(*r);
  EXPECT_EQ(bin->origin, KernelOrigin::kCompiled);
  EXPECT_EQ(bin->reason, "the database keeps no binary of the winner");
  EXPECT_EQ(bin->key, r->provenance.binary_key) << "rendered exactly as the tuner did";
}

TEST_F(Render, ACompileFailureIsAnErrorWithTheLog) {
  Store store = Store::open(db_path_);
  KernelRecord k = reduce_record();
  k.source = "__global__ void reduce_broken( { this is not C++ }\n";
  k.entry = "reduce_broken";
  BestSpec b;
  b.kernel_id = store.upsert_kernel(k);
  b.device = h200();
  b.problem = {{"n", 1 << 24}};
  add_best(store, b);
  Client c(db_path_, client_device(h200()));
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r);
  expect_error(ErrorKind::kCompile,
               "reduce[block_size=256,variant=9,elements_per_thread=8] sm_90: ", [&] {
                 (void)c.binary(*r);
               });
}

}  // namespace
}  // namespace ktune::test
