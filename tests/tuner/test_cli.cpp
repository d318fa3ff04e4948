// The `ktune` program as a user runs it: the real binary in a temporary working directory with
// its own compile cache, stdout, stderr and exit code captured. Help and every command's option
// groups, list/space/compile output (text, JSON and golden files), usage errors (exit 2), input
// errors (3), plugin errors (4), database errors (5) and "no GPU" (7). Needs no GPU.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ktune/device.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "ktune/space.h"
#include "ktune/store.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CliResult;
using test::contains;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(work());
    fs::create_directories(cache());
  }
  fs::path work() const { return tmp_ / "work"; }
  fs::path cache() const { return tmp_ / "cache"; }
  CliResult run(const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env = {}) const {
    return test::run_ktune(args, work(), cache(), env);
  }
  // Files the command left in its working directory.
  std::vector<std::string> files_in_work() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(work()))
      out.push_back(e.path().filename().string());
    return out;
  }
  test::TempDir tmp_;
};

// The "no GPU" behaviour can only be seen where there is none; on a GPU host these tests step
// aside (the GPU tests in tests/gpu/ cover that side).
#define SKIP_IF_GPU()                                                                      \
  do {                                                                                     \
    if (!list_devices().devices.empty()) GTEST_SKIP() << "this machine has a CUDA device"; \
  } while (0)

json parse_json(const CliResult& r) {
  try {
    return json::parse(r.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r;
    return json();
  }
}

// ---------------------------------------------------------------------------------------------
// Help

TEST_F(Cli, HelpListsCommandsAndEnvironment) {
  for (const char* flag : {"--help", "-h", "help"}) {
    const CliResult r = run({flag});
    EXPECT_EQ(r.code, 0) << r;
    for (const char* command : {"list", "space", "compile", "devices", "tune", "best"})
      EXPECT_TRUE(contains(r.out, std::string("  ") + command + " ")) << command << "\n" << r;
    EXPECT_TRUE(contains(r.out, "KTUNE_PLUGIN_PATH")) << r;
    EXPECT_TRUE(contains(r.out, "KTUNE_CACHE_DIR")) << r;
  }
  const CliResult version = run({"--version"});
  EXPECT_EQ(version.code, 0) << version;
  EXPECT_TRUE(version.out.starts_with("ktune " KTUNE_VERSION)) << version;
}

// A malformed --devices list is refused whole, naming it, before anything is written; a
// trailing comma is no exception.
TEST_F(Cli, AMalformedDevicesListIsAUsageError) {
  const std::string conv =
      std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz";
  for (const char* list : {"0,", ",0", "0,,1", "", "x", "-1", "0,0"}) {
    const auto r = run({"tune", "--replay", conv, "--devices", list, "--db", "d.db"});
    EXPECT_EQ(r.code, 2) << list << "\n" << r;
    EXPECT_TRUE(contains(r.err, std::string("--devices '") + list + "'")) << r;
    EXPECT_FALSE(fs::exists(work() / "d.db")) << list;
  }
}

TEST_F(Cli, ACompileTimeoutThatIsNotAPositiveNumberOfSecondsIsRefused) {
  const std::string conv =
      std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz";
  for (const char* seconds : {"0", "-3", "nan", "inf"}) {
    const auto r = run({"tune", "--replay", conv, "--compile-timeout", seconds, "--db", "d.db"});
    EXPECT_EQ(r.code, 2) << seconds << "\n" << r;
    EXPECT_TRUE(contains(r.err, "--compile-timeout")) << r;
    EXPECT_FALSE(fs::exists(work() / "d.db")) << seconds;
  }
  std::ofstream(work() / "job.toml") << "kernel = \"reduce\"\n[compile]\ntimeout = \"long\"\n";
  const auto r = run({"tune", "--config", (work() / "job.toml").string(), "--db", "d.db"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "compile.timeout must be a number")) << r;
  EXPECT_FALSE(fs::exists(work() / "d.db"));
}

// A name of 100 KB is quoted by its start and its length, not whole (issue: a 10 MB line).
TEST_F(Cli, AnUnknownKernelOfAHundredKilobytesIsQuotedByItsStart) {
  const std::string name(100000, 'k');  // one argument holds at most 128 KiB
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tune", name, "--db", "d.db"},
        std::vector<std::string>{"space", name}}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << r.err.substr(0, 300);
    EXPECT_TRUE(contains(r.err, "unknown kernel 'kkkk")) << r.err.substr(0, 300);
    EXPECT_TRUE(contains(r.err, "(100000 characters)")) << r.err.substr(0, 300);
    EXPECT_LT(r.err.size(), 2000u) << r.err.substr(0, 300);
  }
  EXPECT_FALSE(fs::exists(work() / "d.db"));
}

TEST_F(Cli, NoArgumentsIsAUsageError) {
  const CliResult r = run({});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "usage: ktune COMMAND")) << r;
  EXPECT_TRUE(contains(r.err, "error: no command given")) << r;
  EXPECT_TRUE(r.out.empty()) << r;
}

TEST_F(Cli, HelpTunePrintsItsOptions) {
  const CliResult r = run({"help", "tune"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "usage: ktune tune KERNEL")) << r;
  EXPECT_TRUE(contains(r.out, "--strategy")) << r;
  EXPECT_TRUE(contains(r.out, "strategies: ")) << r;
  EXPECT_TRUE(contains(r.out, "brute_force")) << r;
  const CliResult unknown = run({"help", "frobnicate"});
  EXPECT_EQ(unknown.code, 2) << unknown;
  EXPECT_TRUE(contains(unknown.err, "unknown command 'frobnicate'")) << unknown;
}

TEST_F(Cli, EveryCommandHelpShowsItsOptionGroups) {
  const std::map<std::string, std::vector<std::string>> groups = {
      {"list", {"Kernels:", "--plugin", "Output:", "--json"}},
      {"space",
       {"Space:", "--sample", "--seed", "Problem:", "--problem", "Target:", "--arch",
        "Kernels:", "Output:"}},
      {"compile",
       {"Configuration:", "--set", "--output", "--source", "--no-cache",
        "Problem:", "Target:", "Kernels:", "Output:"}},
      {"devices", {"Output:", "--json"}},
      {"tune",
       {"Search:", "--strategy", "--budget-evals", "--budget-time", "--progress",
        "Measurement:", "--samples", "--flush-l2", "--timeout", "Problem:", "Device:", "--device",
        "Database:", "--db", "Kernels:", "Output:"}},
      {"best", {"Query:", "Problem:", "Target:", "Database:", "--db", "Kernels:", "Output:"}},
  };
  for (const auto& [command, needles] : groups) {
    const CliResult r = run({command, "--help"});
    EXPECT_EQ(r.code, 0) << r;
    EXPECT_TRUE(contains(r.out, "usage: ktune " + command)) << r;
    for (const auto& needle : needles) EXPECT_TRUE(contains(r.out, needle)) << needle << "\n" << r;
  }
}

// Help names what each option takes, and shows no option the command would then refuse.
TEST_F(Cli, HelpShowsValueNamesAndNoOptionTheCommandRejects) {
  for (const auto& c : {"list", "space", "compile", "devices", "tune", "best", "export", "report",
                        "bench-strategies", "merge"}) {
    const CliResult r = run({c, "--help"});
    EXPECT_EQ(r.code, 0) << r;
    EXPECT_FALSE(contains(r.out, " arg ")) << c << "\n" << r;
    EXPECT_FALSE(contains(r.out, " arg\n")) << c << "\n" << r;
  }
  EXPECT_FALSE(contains(run({"tune", "--help"}).out, "--arch"));
  const CliResult r = run({"tune", "reduce", "--arch", "sm_90"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unrecognised option '--arch'") ||
              contains(r.err, "unrecognized option '--arch'"))
      << r;
}

TEST_F(Cli, UnknownCommandOrOptionIsAUsageError) {
  CliResult r = run({"frobnicate"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown command 'frobnicate'")) << r;
  r = run({"list", "--frobnicate"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "frobnicate")) << r;
  r = run({"space"});  // the kernel is required
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "kernel")) << r;
}

// ---------------------------------------------------------------------------------------------
// list

TEST_F(Cli, ListGolden) {
  const CliResult r = run({"list"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(r.err.empty()) << r;
  test::expect_golden("list.txt", r.out);
}

TEST_F(Cli, ListJsonHasKernelsAndParameters) {
  const CliResult r = run({"list", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const json j = parse_json(r);
  ASSERT_TRUE(j.is_array()) << r;
  const json* reduce = nullptr;
  for (const auto& k : j)
    if (k.at("name") == "reduce") reduce = &k;
  ASSERT_NE(reduce, nullptr) << r;
  EXPECT_EQ(reduce->at("origin"), "builtin");
  std::vector<std::string> names;
  for (const auto& p : reduce->at("parameters")) names.push_back(p.at("name"));
  EXPECT_EQ(names,
            (std::vector<std::string>{"block_size", "variant", "elements_per_thread", "unroll",
                                      "maxrregcount", "launch_bounds", "blocks_per_sm"}));
  EXPECT_EQ(reduce->at("parameters")[0].at("values"), json({32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(reduce->at("parameters")[0].at("default"), 256);
  EXPECT_EQ(reduce->at("problem")[0].at("name"), "n");
  EXPECT_FALSE(reduce->at("restrictions").empty());
}

TEST_F(Cli, ListLoadsPluginsFromOptionAndEnvironment) {
  // As plugins/example/README.md says: ktune list --plugin path/libsaxpy.so
  CliResult r = run({"list", "--plugin", test::good_plugin(), "--plugin", test::valid_manifest()});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "saxpy  (" + test::good_plugin() + ")")) << r;
  EXPECT_TRUE(contains(r.out, "vecscale  (" + test::valid_manifest() + ")")) << r;
  EXPECT_TRUE(contains(r.out, "aos, soa (default soa)")) << r;

  r = run({"list", "--json"},
          {{"KTUNE_PLUGIN_PATH", test::good_plugin() + ":" + test::manifest_dir().string()}});
  ASSERT_EQ(r.code, 0) << r;
  std::vector<std::string> names;
  for (const auto& k : parse_json(r)) names.push_back(k.at("name"));
  EXPECT_EQ(names, test::with_builtins({"constscale", "saxpy", "vecscale"})) << r;
}

// ---------------------------------------------------------------------------------------------
// space

TEST_F(Cli, SpaceGolden) {
  const CliResult r =
      run({"space", "reduce", "--arch", "sm_90", "--problem", "n=2**25", "--sample", "3"});
  ASSERT_EQ(r.code, 0) << r;
  // The enumeration time varies from run to run.
  test::expect_golden("space_reduce_sm90.txt", test::drop_lines(r.out, "enumerated  in"));
}

TEST_F(Cli, SpaceTextAgreesWithTheLibrary) {
  Registry registry;
  register_builtin_kernels(registry);
  const KernelInstance inst(registry.get("reduce"), {{"n", 1 << 20}}, DeviceLimits::for_arch(90));
  const std::string valid = std::to_string(inst.space().enumerate().size());
  const std::string cartesian = std::to_string(inst.space().cartesian_size());

  const CliResult r = run({"space", "reduce", "--arch", "sm_90", "-p", "n=1048576"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "kernel      reduce\n")) << r;
  EXPECT_TRUE(contains(r.out, "problem     n=1048576\n")) << r;
  EXPECT_TRUE(contains(r.out, "cartesian   " + cartesian + "\n")) << r;
  EXPECT_TRUE(contains(r.out, "valid       " + valid + " (")) << r;
  EXPECT_TRUE(contains(r.out, "sample of 10:")) << r;
  EXPECT_TRUE(contains(r.out, "max_threads_per_block")) << r;
}

TEST_F(Cli, SpaceJson) {
  Registry registry;
  register_builtin_kernels(registry);
  const KernelInstance inst(registry.get("reduce"), {}, DeviceLimits::for_arch(90));

  const CliResult r =
      run({"space", "reduce", "--arch", "sm_90", "--json", "--sample", "4", "--seed", "7"});
  ASSERT_EQ(r.code, 0) << r;
  const json j = parse_json(r);
  EXPECT_EQ(j.at("kernel"), "reduce");
  EXPECT_EQ(j.at("cartesian"), inst.space().cartesian_size());
  EXPECT_EQ(j.at("valid"), inst.space().enumerate().size());
  EXPECT_GT(j.at("valid").get<int>(), 0);
  EXPECT_EQ(j.at("space_hash"), inst.space().hash());
  EXPECT_EQ(j.at("problem").at("n"), 16777216);  // the kernel's default
  EXPECT_EQ(j.at("target").at("arch"), "sm_90");
  EXPECT_EQ(j.at("sample").size(), 4u);
  EXPECT_EQ(j.at("sample")[0].size(), 7u);  // one value per parameter
  EXPECT_FALSE(j.at("space_hash").get<std::string>().empty());
  // The same seed gives the same sample.
  EXPECT_EQ(parse_json(run({"space", "reduce", "--arch", "sm_90", "--json", "--sample", "4",
                            "--seed", "7"}))
                .at("sample"),
            j.at("sample"));
}

TEST_F(Cli, SpaceWithoutArchOrGpuAssumesSm90AndSaysSo) {
  SKIP_IF_GPU();
  const CliResult r = run({"space", "reduce", "--sample", "0"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "no CUDA device")) << r;
  EXPECT_TRUE(contains(r.out, "assuming sm_90")) << r;
}

// ---------------------------------------------------------------------------------------------
// compile

TEST_F(Cli, CompileOneConfigPrintsResources) {
  CliResult r = run({"compile", "reduce", "--arch", "sm_90", "--set", "block_size=256"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(
      contains(r.out,
               "reduce[block_size=256,variant=7,elements_per_thread=8,unroll=1,maxrregcount=0,"
               "launch_bounds=0,blocks_per_sm=0] sm_90"))
      << r;
  EXPECT_TRUE(contains(r.out, "registers")) << r;
  EXPECT_TRUE(contains(r.out, "--gpu-architecture=sm_90")) << r;
  EXPECT_FALSE(contains(r.out, "(from cache)")) << r;
  EXPECT_FALSE(fs::is_empty(cache())) << "KTUNE_CACHE_DIR was not used";

  // The second time the cache answers.
  r = run({"compile", "reduce", "--arch", "sm_90", "--set", "block_size=256"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "(from cache)")) << r;
}

TEST_F(Cli, CompileJsonSourceAndOutput) {
  CliResult r = run({"compile", "reduce", "--arch", "sm_90", "-s", "block_size=128,maxrregcount=32",
                     "--json", "--no-cache", "-o", "reduce.cubin"});
  ASSERT_EQ(r.code, 0) << r;
  const json j = parse_json(r);
  EXPECT_EQ(j.at("ok"), true);
  EXPECT_EQ(j.at("config").at("block_size"), 128);
  EXPECT_GT(j.at("resources").at("registers").get<int>(), 0);
  EXPECT_LE(j.at("resources").at("registers").get<int>(), 32);
  EXPECT_EQ(j.at("from_cache"), false);
  bool has_limit = false;
  for (const auto& o : j.at("options")) has_limit |= o == "--maxrregcount=32";
  EXPECT_TRUE(has_limit) << r;
  ASSERT_TRUE(fs::exists(work() / "reduce.cubin"));
  EXPECT_EQ(fs::file_size(work() / "reduce.cubin"), j.at("cubin_bytes").get<std::uint64_t>());
  EXPECT_TRUE(test::read_file(work() / "reduce.cubin").starts_with("\177ELF"));

  r = run({"compile", "reduce", "--arch", "sm_90", "--set", "launch_bounds=2", "--source"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "#define BLOCK_SIZE 256\n")) << r;
  EXPECT_TRUE(contains(r.out, "#define KTUNE_LAUNCH_BOUNDS __launch_bounds__(256, 2)\n")) << r;
  EXPECT_TRUE(contains(r.out, "__global__ void KTUNE_LAUNCH_BOUNDS reduce(")) << r;
}

TEST_F(Cli, CompilePluginAndManifestKernels) {
  CliResult r = run({"compile", "saxpy", "--plugin", test::good_plugin(), "--arch", "sm_90",
                     "--set", "elements_per_thread=4"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "saxpy[block_size=256,elements_per_thread=4] sm_90")) << r;
  r = run({"compile", "vecscale", "--plugin", test::valid_manifest(), "--arch", "sm_90", "--set",
           "layout=aos"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "layout=aos")) << r;
}

TEST_F(Cli, CompileInvalidCombinationNamesTheRestriction) {
  const CliResult r =
      run({"compile", "reduce", "--arch", "sm_90", "--set", "variant=1,elements_per_thread=8"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "invalid configuration")) << r;
  EXPECT_TRUE(contains(r.err, "variant >= 7 or elements_per_thread == (1 if variant <= 3 else 2)"))
      << r;
  EXPECT_TRUE(r.out.empty()) << r;
}

TEST_F(Cli, CompileWithoutArchOrGpuNeedsADevice) {
  SKIP_IF_GPU();
  const CliResult r = run({"compile", "reduce"});
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_TRUE(contains(r.err, "no CUDA device")) << r;
  EXPECT_TRUE(contains(r.err, "--arch")) << r;
}

// ---------------------------------------------------------------------------------------------
// Usage errors: exit 2, naming what is wrong

TEST_F(Cli, UnknownKernel) {
  for (const char* command : {"space", "compile"}) {
    const CliResult r = run({command, "nope", "--arch", "sm_90"});
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(contains(r.err, "unknown kernel 'nope'")) << r;
    EXPECT_TRUE(contains(r.err, "reduce")) << r;
  }
}

TEST_F(Cli, UnknownParameterInSet) {
  const CliResult r = run({"compile", "reduce", "--arch", "sm_90", "--set", "blocksize=256"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown parameter 'blocksize'")) << r;
  EXPECT_TRUE(contains(r.err, "block_size")) << r;  // the known ones are listed
}

TEST_F(Cli, ValueNotInTheList) {
  const CliResult r = run({"compile", "reduce", "--arch", "sm_90", "--set", "block_size=100"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "block_size")) << r;
  EXPECT_TRUE(contains(r.err, "100")) << r;
}

TEST_F(Cli, MalformedSetAndProblem) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"space", "reduce", "--arch", "sm_90", "--problem", "n=abc"},
        std::vector<std::string>{"space", "reduce", "--arch", "sm_90", "--problem", "n="},
        std::vector<std::string>{"space", "reduce", "--arch", "sm_90", "--problem", "=5"},
        std::vector<std::string>{"space", "reduce", "--arch", "sm_90", "--problem", "n=1.5"},
        std::vector<std::string>{"space", "reduce", "--arch", "sm_90", "--problem", "m=5"},
        std::vector<std::string>{"compile", "reduce", "--arch", "sm_90", "--set", "block_size"}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(r.err.starts_with("error: ")) << r;
  }
  const CliResult abc = run({"space", "reduce", "--arch", "sm_90", "--problem", "n=abc"});
  EXPECT_TRUE(contains(abc.err, "--problem n: expression 'abc': column 1: unknown name 'abc'"))
      << abc;
  // Not an integer a problem can hold: a usage error too, never an input error (exit 3).
  for (const char* v : {"n=1e300", "n=2.5", "n=2**63"}) {
    const CliResult r = run({"space", "reduce", "--arch", "sm_90", "--problem", v});
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(contains(r.err, "is not a 64-bit integer") || contains(r.err, "overflow")) << r;
  }
  const CliResult m = run({"space", "reduce", "--arch", "sm_90", "--problem", "m=5"});
  EXPECT_TRUE(contains(m.err, "unknown problem parameter 'm'")) << m;
}

TEST_F(Cli, BadArch) {
  const CliResult r = run({"space", "reduce", "--arch", "sm_9000"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "sm_9000")) << r;
}

// ---------------------------------------------------------------------------------------------
// Plugin (4) and input (3) errors

TEST_F(Cli, MissingPluginPath) {
  const CliResult r = run({"list", "--plugin", "/nonexistent"});
  EXPECT_EQ(r.code, 4) << r;
  EXPECT_TRUE(contains(r.err, "/nonexistent")) << r;
}

TEST_F(Cli, WrongAbiAndNoEntryPlugins) {
  CliResult r = run({"list", "--plugin", test::wrong_abi_plugin()});
  EXPECT_EQ(r.code, 4) << r;
  EXPECT_TRUE(contains(r.err, "999")) << r;
  r = run({"list", "--plugin", test::no_entry_plugin()});
  EXPECT_EQ(r.code, 4) << r;
  EXPECT_TRUE(contains(r.err, "not a ktune plugin")) << r;
  r = run({"list"}, {{"KTUNE_PLUGIN_PATH", "/nonexistent/dir"}});
  EXPECT_EQ(r.code, 4) << r;
  EXPECT_TRUE(contains(r.err, "KTUNE_PLUGIN_PATH: /nonexistent/dir")) << r;
}

TEST_F(Cli, BrokenManifestIsAnInputError) {
  const std::string path = test::broken_manifest("missing_entry.toml");
  CliResult r = run({"list", "--plugin", path});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, path)) << r;
  EXPECT_TRUE(contains(r.err, "'entry'")) << r;
  r = run({"space", "reduce", "--arch", "sm_90"},
          {{"KTUNE_PLUGIN_PATH", test::broken_manifest("bad_syntax.toml")}});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "bad_syntax.toml")) << r;
}

// ---------------------------------------------------------------------------------------------
// No GPU (7)

TEST_F(Cli, DevicesWithoutGpu) {
  SKIP_IF_GPU();
  CliResult r = run({"devices"});
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_TRUE(contains(r.err, "no CUDA device")) << r;
  r = run({"devices", "--json"});
  EXPECT_EQ(r.code, 7) << r;
  const json j = parse_json(r);
  EXPECT_TRUE(j.at("devices").empty());
  EXPECT_FALSE(j.at("problem").get<std::string>().empty());
}

TEST_F(Cli, TuneWithoutGpuCreatesNoDatabase) {
  SKIP_IF_GPU();
  CliResult r = run({"tune", "reduce", "--budget-evals", "3"});
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_TRUE(contains(r.err, "no CUDA device")) << r;
  EXPECT_FALSE(fs::exists(work() / "ktune.db"));
  r = run({"tune", "reduce", "--db", "results.db"});
  EXPECT_EQ(r.code, 7) << r;
  r = run({"tune", "reduce"}, {{"KTUNE_DB", (work() / "env.db").string()}});
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_EQ(files_in_work(), std::vector<std::string>{}) << "tune without a GPU left files behind";
  // Usage errors come before the device check.
  r = run({"tune", "nope"});
  EXPECT_EQ(r.code, 2) << r;
  r = run({"tune", "reduce", "--strategy", "no_such_strategy"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "no_such_strategy")) << r;
}

// -q prints only errors: the notes said before a replayed run are left out, its warnings are
// kept. cn_pnpoly is known to ktune only from a recording, so it is replayed with or without a
// GPU; with no replay job to give its restrictions, the replay warns.
TEST_F(Cli, QuietTuneLeavesOutNotesButKeepsWarnings) {
  const fs::path recordings = tmp_ / "recordings", jobs = tmp_ / "jobs";
  fs::create_directories(recordings);
  fs::create_directories(jobs);
  fs::copy_file(fs::path(KTUNE_TEST_DATA_DIR) / "replay" / "pnpoly_small.json.gz",
                recordings / "cn_pnpoly-Laptop-problem_size=20000000.json.gz");
  const std::map<std::string, std::optional<std::string>> env = {
      {"KTUNE_RECORDINGS", recordings.string()}, {"KTUNE_REPLAY_JOBS", jobs.string()}};
  const std::string warning = "warning: no restrictions known for cn_pnpoly";
  CliResult r = run({"tune", "cn_pnpoly", "--db", "notes.db"}, env);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, "note: cn_pnpoly is known to ktune only from recorded measurements"))
      << r;
  EXPECT_TRUE(contains(r.err, warning)) << r;
  r = run({"tune", "cn_pnpoly", "--db", "quiet.db", "-q"}, env);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_FALSE(contains(r.err, "note:")) << r;
  EXPECT_TRUE(contains(r.err, warning)) << r;
  EXPECT_EQ(r.out, "") << r;
}

// A replay job that does not read stops the run naming the file: the run does not go on with
// the recorded values as its space.
TEST_F(Cli, AReplayJobThatDoesNotReadIsAnError) {
  const fs::path recordings = tmp_ / "recordings", jobs = tmp_ / "jobs";
  fs::create_directories(recordings);
  fs::create_directories(jobs);
  fs::copy_file(fs::path(KTUNE_TEST_DATA_DIR) / "replay" / "pnpoly_small.json.gz",
                recordings / "cn_pnpoly-Laptop-problem_size=20000000.json.gz");
  test::write_file(jobs / "cn_pnpoly.toml", "[space\nblock_size_x = [32, 64\n");
  const std::map<std::string, std::optional<std::string>> env = {
      {"KTUNE_RECORDINGS", recordings.string()}, {"KTUNE_REPLAY_JOBS", jobs.string()}};
  const CliResult r = run({"tune", "cn_pnpoly", "--db", "job.db"}, env);
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, (jobs / "cn_pnpoly.toml").string())) << r;
  EXPECT_FALSE(contains(r.err, "define the space")) << r;
  EXPECT_EQ(files_in_work(), std::vector<std::string>{});
}

// A recording without a measurement is refused: replaying it would be a run of invalid trials.
TEST_F(Cli, ARecordingWithoutMeasurementsIsRefused) {
  const fs::path empty = work() / "empty.json";
  test::write_file(empty,
                   R"({"device_name": "Laptop", "kernel_name": "cn_pnpoly", "problem_size": 20, )"
                   R"("tune_params_keys": ["block_size_x"], "tune_params": {"block_size_x": )"
                   R"([32, 64]}, "objective": "time", "cache": {}})");
  const CliResult r = run({"tune", "--replay", empty.string(), "--db", "empty.db"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "empty.json: the recording holds no measurements")) << r;
  EXPECT_EQ(files_in_work(), std::vector<std::string>{"empty.json"});
}

// Inputs that are not regular files are refused by name, without a wait: a FIFO as the job
// file, a manifest, a kernel source, a plugin or a buffer's file(...), and /dev/zero as a source.
TEST_F(Cli, InputsThatAreNotRegularFilesAreRefusedWithoutAWait) {
  const fs::path fifo = work() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string manifest = test::read_file(test::valid_manifest());
  const auto manifest_with = [&](const std::string& name, const std::string& from,
                                 const std::string& to) {
    std::string text = manifest;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    test::write_file(work() / name, text);
    fs::copy_file(test::manifest_dir() / "vecscale.cu", work() / "vecscale.cu",
                  fs::copy_options::overwrite_existing);
    return (work() / name).string();
  };
  const std::string fifo_source =
      manifest_with("fifo_source.toml", "source = \"vecscale.cu\"", "source = \"fifo\"");
  const std::string zero_source =
      manifest_with("zero_source.toml", "source = \"vecscale.cu\"", "source = \"/dev/zero\"");
  const std::string fifo_input = manifest_with("fifo_input.toml", "init = \"random(-1, 1)\"",
                                               "init = \"file(" + fifo.string() + ")\"");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"tune", "reduce", "--config", fifo.string()}, 3, "FIFO"},
      {{"list", "--plugin", (work() / "fifo.toml").string()}, 3, "FIFO"},
      {{"list", "--plugin", fifo_source}, 3, "FIFO"},
      {{"list", "--plugin", zero_source}, 3, "is a device"},
      {{"check", "vecscale", "--plugin", fifo_input}, 1, "FIFO"},
  };
  fs::create_symlink(fifo, work() / "fifo.toml");
  fs::create_symlink(fifo, work() / "fifo.so");
  for (const Case& c : cases) {
    const CliResult r = run(c.args);
    EXPECT_EQ(r.code, c.code) << r;
    EXPECT_TRUE(contains(r.out + r.err, c.says)) << r;
  }
  const CliResult r = run({"list", "--plugin", (work() / "fifo.so").string()});
  EXPECT_EQ(r.code, 4) << r;
  EXPECT_TRUE(contains(r.err, "FIFO")) << r;
}

// A space too large to count (64 two-valued parameters: 2^64 configurations) is counted to a
// stated limit in bounded memory: `space` says "at least", `check` finishes.
TEST_F(Cli, ASpaceTooLargeToCountIsCountedToTheLimit) {
  std::string text = test::read_file(test::valid_manifest());
  std::string params;
  for (int i = 0; i < 64; ++i)
    params += "[[param]]\nname = \"p" + std::to_string(i) + "\"\nvalues = [0, 1]\n\n";
  text.insert(text.find("[[param]]"), params);
  test::write_file(work() / "big.toml", text);
  fs::copy_file(test::manifest_dir() / "vecscale.cu", work() / "vecscale.cu");
  CliResult r = run({"space", "vecscale", "--plugin", "big.toml", "--sample", "3", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const json j = parse_json(r);
  EXPECT_EQ(j["valid"], kValidCountLimit);
  EXPECT_EQ(j["valid_counted_all"], false);
  EXPECT_EQ(j["sample"].size(), 3u);
  r = run({"space", "vecscale", "--plugin", "big.toml"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "valid       at least 67108864")) << r;
  r = run({"check", "vecscale", "--plugin", "big.toml", "--arch", "sm_90"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "over the first 1000000 valid configurations")) << r;
}

// ---------------------------------------------------------------------------------------------
// best: database errors (5) leave files alone

TEST_F(Cli, BestOnAMissingDatabase) {
  CliResult r = run({"best", "reduce", "--db", "missing.db"});
  EXPECT_EQ(r.code, 5) << r;
  EXPECT_TRUE(contains(r.err, "missing.db")) << r;
  EXPECT_FALSE(fs::exists(work() / "missing.db"));
  r = run({"best", "reduce"}, {{"KTUNE_DB", "from-env.db"}});
  EXPECT_EQ(r.code, 5) << r;
  EXPECT_TRUE(contains(r.err, "from-env.db")) << r;
  EXPECT_EQ(files_in_work(), std::vector<std::string>{});
}

TEST_F(Cli, BestOnATextFileLeavesItUnchanged) {
  const fs::path path = work() / "notes.db";
  const std::string text = "these are notes, not a database\n";
  test::write_file(path, text);
  const CliResult r = run({"best", "reduce", "--db", path.string()});
  EXPECT_EQ(r.code, 5) << r;
  EXPECT_TRUE(contains(r.err, path.string())) << r;
  EXPECT_EQ(test::read_file(path), text);
  EXPECT_EQ(files_in_work(), std::vector<std::string>{"notes.db"});
}

TEST_F(Cli, BestOnSomeoneElsesSqliteDatabaseLeavesItUnchanged) {
  const fs::path path = work() / "other.db";
  {
    SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE recipes (id INTEGER PRIMARY KEY, name TEXT)");
    db.exec("INSERT INTO recipes (name) VALUES ('soup')");
  }
  const std::string before = test::read_file(path);
  const CliResult r = run({"best", "reduce", "--db", path.string()});
  EXPECT_EQ(r.code, 5) << r;
  EXPECT_TRUE(contains(r.err, path.string())) << r;
  EXPECT_EQ(test::read_file(path), before);
  EXPECT_EQ(files_in_work(), std::vector<std::string>{"other.db"});
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// A small recorded convolution space that `tune --replay` runs in a moment.
std::string small_convolution_recording() {
  return std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz";
}

// `ktune merge`: two replayed runs of the same job (two "hosts") merged into one database,
// merged again without a change, the best the faster host's; bad sources merge nothing.
TEST(CliMerge, MergesDatabasesOnceAndRefusesBadSources) {
  test::TempDir dir;
  const std::string conv = small_convolution_recording();
  auto run = [&](const std::vector<std::string>& args) {
    return test::run_ktune(args, dir.path(), dir / "cache");
  };
  for (const std::string seed : {"1", "2"}) {
    const test::CliResult r =
        run({"tune", "convolution_kernel", "--replay", conv, "--strategy", "random",
             "--budget-evals", "20", "--seed", seed, "--db", "host" + seed + ".db", "-q"});
    ASSERT_EQ(r.code, 0) << r;
  }
  test::CliResult r = run({"merge", "host1.db", "host2.db", "-o", "fleet.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("merged").size(), 2u);
  EXPECT_EQ(j["merged"][0].at("runs"), 1);
  EXPECT_GE(j["merged"][0].at("trials"), 20);
  r = run({"merge", "host1.db", "host2.db", "--into", "fleet.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  j = nlohmann::json::parse(r.out);
  for (const auto& m : j.at("merged")) {
    EXPECT_EQ(m.at("runs"), 0);
    EXPECT_EQ(m.at("trials"), 0);
    EXPECT_EQ(m.at("bests"), 0);
  }
  // The fleet's best is the faster of the two hosts' bests.
  auto best_ms = [&](const std::string& db) {
    Store store = Store::open(dir / db, Store::Mode::kReadOnly);
    const auto bests = store.bests();
    EXPECT_EQ(bests.size(), 1u) << db;
    return bests.empty() ? -1.0 : bests.front().trial.time_ms;
  };
  EXPECT_EQ(best_ms("fleet.db"), std::min(best_ms("host1.db"), best_ms("host2.db")));

  test::write_file(dir / "notes.db", "not a database, only text long enough to be read");
  const std::string before = test::read_file(dir / "fleet.db");
  r = run({"merge", "host1.db", "notes.db", "-o", "fleet.db"});
  EXPECT_EQ(r.code, 5) << r;
  EXPECT_TRUE(test::contains(r.err, "notes.db")) << r;
  EXPECT_EQ(test::read_file(dir / "fleet.db"), before);
  r = run({"merge", "missing.db", "-o", "other.db"});
  EXPECT_NE(r.code, 0) << r;
  EXPECT_FALSE(fs::exists(dir / "other.db"));
  EXPECT_FALSE(fs::exists(dir / "missing.db"));
  r = run({"merge", "-o", "other.db"});
  EXPECT_EQ(r.code, 2) << r;
}

// `tune --trace FILE`: the timeline is written where asked (the replayed trials on the GPU's
// row); a folder that does not exist is refused before the run, with nothing stored.
TEST(CliTrace, TheTimelineIsWrittenWhereAskedOrRefusedBeforeTheRun) {
  test::TempDir dir;
  const std::vector<std::string> args = {"tune",           "convolution_kernel",
                                         "--replay",       small_convolution_recording(),
                                         "--budget-evals", "7",
                                         "--db",           "t.db"};
  std::vector<std::string> with = args;
  with.insert(with.end(), {"--trace", "run.trace.json"});
  test::CliResult r = test::run_ktune(with, dir.path(), dir / "cache");
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(test::contains(r.err, "timeline written to run.trace.json")) << r;
  const auto j = nlohmann::json::parse(test::read_file(dir / "run.trace.json"));
  int gpu_lane = -1;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name" &&
        e.at("args").at("name") == "GPU worker")
      gpu_lane = e.at("tid").get<int>();
  ASSERT_GT(gpu_lane, 0) << j.dump();
  std::size_t trials = 0;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("tid") == gpu_lane && e.at("name") != "prepare") ++trials;
  EXPECT_EQ(trials, 7u);

  std::vector<std::string> bad = args;
  bad[bad.size() - 1] = "u.db";
  bad.insert(bad.end(), {"--trace", "missing/run.trace.json"});
  r = test::run_ktune(bad, dir.path(), dir / "cache");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(test::contains(r.err,
                             "--trace missing/run.trace.json: the folder missing does "
                             "not exist"))
      << r;
  EXPECT_FALSE(fs::exists(dir / "u.db"));

  // --devices: one timeline per worker, beside the name given.
  std::vector<std::string> devices = args;
  devices[devices.size() - 1] = "d.db";
  devices.insert(devices.end(), {"--devices", "0,1", "--trace", "fleet.json", "-q"});
  r = test::run_ktune(devices, dir.path(), dir / "cache");
  ASSERT_EQ(r.code, 0) << r;
  for (const char* name : {"fleet.gpu0.json", "fleet.gpu1.json"})
    EXPECT_TRUE(nlohmann::json::parse(test::read_file(dir / name)).contains("traceEvents")) << name;
  EXPECT_FALSE(fs::exists(dir / "fleet.json"));
}

}  // namespace
}  // namespace ktune
