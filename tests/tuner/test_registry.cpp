// The kernel registry: explicit built-ins, shared-library plugins (good, wrong ABI, no entry,
// missing, not a library), directories and KTUNE_PLUGIN_PATH, ABI struct sizes, and manifests
// (the valid fixture field by field, every broken fixture naming its file and field).
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::expect_error;

std::vector<std::string> param_names(const KernelSpec& k) {
  std::vector<std::string> out;
  for (const auto& p : k.params) out.push_back(p.name);
  return out;
}

std::vector<std::string> kernel_names(const Registry& r) {
  std::vector<std::string> out;
  for (const KernelSpec* k : r.kernels()) out.push_back(k->name);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Built-in kernels

TEST(Registry, StartsEmptyWithoutStaticRegistration) {
  Registry r;
  EXPECT_TRUE(r.kernels().empty());
  EXPECT_FALSE(r.contains("reduce"));
}

TEST(Registry, BuiltinsAreRegisteredExplicitly) {
  Registry r;
  register_builtin_kernels(r);
  ASSERT_TRUE(r.contains("reduce"));
  const KernelSpec& k = r.get("reduce");
  EXPECT_NO_THROW(k.validate());
  EXPECT_EQ(k.origin, "builtin");
  EXPECT_EQ(param_names(k),
            (std::vector<std::string>{"block_size", "variant", "elements_per_thread", "unroll",
                                      "maxrregcount", "launch_bounds", "blocks_per_sm"}));
  ASSERT_EQ(k.problem.size(), 1u);
  EXPECT_EQ(k.problem[0].name, "n");
  // Its reference is a configuration (the inputs are then made on the GPU).
  EXPECT_EQ(k.reference, nullptr);
  EXPECT_FALSE(k.reference_config.empty());
  EXPECT_NE(k.run, nullptr);
  EXPECT_FALSE(k.source.empty());
  // Registering twice is a duplicate, not a silent no-op.
  expect_error(ErrorKind::kInput, {"reduce", "already registered"},
               [&] { register_builtin_kernels(r); });
}

TEST(Registry, UnknownKernelIsAUsageErrorListingKnownKernels) {
  Registry r;
  expect_error(ErrorKind::kUsage, {"unknown kernel 'nope'", "(none)"}, [&] { r.get("nope"); });
  register_builtin_kernels(r);
  r.load_library(test::good_plugin());
  expect_error(ErrorKind::kUsage,
               {"unknown kernel 'nope'", "known kernels: ", "reduce, reduce_f32, saxpy, "},
               [&] { r.get("nope"); });
}

TEST(Registry, KernelsAreSortedByName) {
  Registry r;
  r.load_library(test::good_plugin());
  r.load_manifest(test::valid_manifest());
  register_builtin_kernels(r);
  const std::vector<std::string> names = kernel_names(r);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names, test::with_builtins({"saxpy", "vecscale"}));
}

// ---------------------------------------------------------------------------------------------
// Shared-library plugins

TEST(RegistryLibrary, GoodPluginAddsItsKernel) {
  Registry r;
  r.load_library(test::good_plugin());
  ASSERT_TRUE(r.contains("saxpy"));
  const KernelSpec& k = r.get("saxpy");
  EXPECT_NO_THROW(k.validate());
  EXPECT_EQ(k.origin, test::good_plugin());
  EXPECT_EQ(k.entry, "saxpy");
  EXPECT_EQ(k.source_name, "saxpy.cu");
  EXPECT_EQ(param_names(k), (std::vector<std::string>{"block_size", "elements_per_thread"}));
  EXPECT_EQ(k.params[0].values[k.params[0].default_index], Value(256));
  EXPECT_EQ(k.params[1].values[k.params[1].default_index], Value(1));
  ASSERT_EQ(k.buffers.size(), 2u);
  EXPECT_EQ(k.buffers[0].role, BufferRole::kInput);
  EXPECT_EQ(k.buffers[1].role, BufferRole::kInOut);
  EXPECT_EQ(k.buffers[1].type, ElemType::kF32);
  ASSERT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[0].buffer, "x");
  EXPECT_EQ(k.args[2].value, "2.5");
  EXPECT_EQ(k.args[2].type, ElemType::kF32);
  EXPECT_EQ(k.args[3].type, ElemType::kU32);
  EXPECT_EQ(k.bytes, "12 * n");
  EXPECT_EQ(k.flops, "2 * n");
  EXPECT_EQ(k.launch.grid[1], "1");     // NULL entries mean "1"
  EXPECT_EQ(k.launch.shared_mem, "0");  // NULL means no dynamic shared memory
  EXPECT_NE(k.user_data, nullptr);
  ASSERT_NE(k.reference, nullptr);

  // The host reference computes y = 2.5 * x + y in place.
  std::vector<float> x = {1.0f, -2.0f, 0.5f}, y = {10.0f, 20.0f, 0.0f};
  ktune_host_buffer buffers[] = {
      {"x", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, x.size(), x.data()},
      {"y", KTUNE_TYPE_F32, KTUNE_BUFFER_INOUT, y.size(), y.data()},
  };
  const char* names[] = {"n"};
  const std::int64_t values[] = {3};
  ktune_reference_ctx ctx{sizeof(ktune_reference_ctx), 1, names, values, 2, buffers, k.user_data};
  char error[256] = {0};
  ASSERT_EQ(k.reference(&ctx, error, sizeof(error)), 0) << error;
  EXPECT_EQ(y, (std::vector<float>{12.5f, 15.0f, 1.25f}));
  // Missing buffers are reported through the error text, not a crash.
  ctx.buffer_count = 1;
  EXPECT_NE(k.reference(&ctx, error, sizeof(error)), 0);
  EXPECT_TRUE(contains(error, "saxpy")) << error;
}

TEST(RegistryLibrary, GoodPluginCompilesForSm90) {
  Registry r;
  r.load_library(test::good_plugin());
  KernelInstance instance(r.get("saxpy"), {{"n", 1 << 20}}, DeviceLimits::for_arch(90));
  const SearchSpace& space = instance.space();
  std::size_t compiled = 0;
  for (const Config& c : space.enumerate()) {
    if (space.value(c, 0) != Value(256) && space.value(c, 1) != Value(4)) continue;
    const CompileResult result = compile(render(instance, c, "sm_90"));
    EXPECT_TRUE(result.ok) << space.key(c) << ": " << result.error << "\n" << result.log;
    EXPECT_EQ(result.lowered_name, "saxpy");  // extern "C": the name expression is the name
    ++compiled;
  }
  EXPECT_GE(compiled, 5u);
}

TEST(RegistryLibrary, WrongAbiVersionNamesPathAndBothVersions) {
  Registry r;
  const std::string path = test::wrong_abi_plugin();
  expect_error(
      ErrorKind::kPlugin,
      {path, "ABI version 999", "supports version " + std::to_string(KTUNE_PLUGIN_ABI_VERSION)},
      [&] { r.load_library(path); });
  EXPECT_FALSE(r.contains("saxpy"));
}

TEST(RegistryLibrary, LibraryWithoutEntrySymbolIsNotAPlugin) {
  Registry r;
  const std::string path = test::no_entry_plugin();
  expect_error(ErrorKind::kPlugin, {path, "not a ktune plugin", KTUNE_PLUGIN_ENTRY_NAME},
               [&] { r.load_library(path); });
  EXPECT_TRUE(r.kernels().empty());
}

TEST(RegistryLibrary, APluginThatDescribesNoKernelsIsRefused) {
  Registry r;
  const std::string path = KTUNE_TEST_PLUGIN_EMPTY;
  expect_error(ErrorKind::kPlugin, {path, "describes no kernels"}, [&] { r.load_library(path); });
  EXPECT_TRUE(r.kernels().empty());
}

TEST(RegistryLibrary, MissingFileIsAPluginError) {
  Registry r;
  expect_error(ErrorKind::kPlugin, {"/nonexistent/libnothing.so", "not found"},
               [&] { r.load_library("/nonexistent/libnothing.so"); });
  expect_error(ErrorKind::kPlugin, {"/nonexistent/libnothing.so", "does not exist"},
               [&] { r.load_path("/nonexistent/libnothing.so"); });
}

TEST(RegistryLibrary, FileThatIsNotALibraryIsAPluginError) {
  test::TempDir dir;
  const std::string path = (dir / "libfake.so").string();
  test::write_file(path, "this is text, not an ELF shared object\n");
  Registry r;
  expect_error(ErrorKind::kPlugin, {path, "cannot load plugin"}, [&] { r.load_library(path); });
  expect_error(ErrorKind::kPlugin, {path, "cannot load plugin"}, [&] { r.load_path(path); });
  EXPECT_TRUE(r.kernels().empty());
}

TEST(RegistryLibrary, DuplicateKernelNameIsAnError) {
  Registry r;
  r.load_library(test::good_plugin());
  // Same library again (dlopen hands back the same handle, the kernel is added again).
  expect_error(ErrorKind::kInput, {"'saxpy'", "already registered"},
               [&] { r.load_library(test::good_plugin()); });
  // A copy of the library elsewhere: the message names both origins.
  test::TempDir dir;
  const fs::path copy = dir / "libsaxpy_copy.so";
  fs::copy_file(test::good_plugin(), copy);
  expect_error(ErrorKind::kInput, {"'saxpy'", copy.string(), test::good_plugin()},
               [&] { r.load_library(copy.string()); });
  EXPECT_EQ(r.get("saxpy").origin, test::good_plugin());
}

TEST(RegistryLibrary, DuplicateOfABuiltinIsAnError) {
  Registry r;
  register_builtin_kernels(r);
  KernelSpec copy = r.get("reduce");
  copy.origin = "a test";
  expect_error(ErrorKind::kInput, {"'reduce'", "a test", "already registered", "builtin"},
               [&] { r.add(copy); });
  // A kernel that does not validate is refused before it is added.
  KernelSpec broken = copy;
  broken.name = "reduce2";
  broken.entry.clear();
  expect_error(ErrorKind::kInput, {"reduce2", "entry is empty"}, [&] { r.add(broken); });
  EXPECT_FALSE(r.contains("reduce2"));
}

// ---------------------------------------------------------------------------------------------
// Directories and KTUNE_PLUGIN_PATH

// A plugin directory: the good library, the valid manifest with its template, and a file
// that is neither (ignored).
void fill_plugin_dir(const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(test::good_plugin(), dir / "libsaxpy.so");
  fs::copy_file(test::manifest_dir() / "vecscale.toml", dir / "vecscale.toml");
  fs::copy_file(test::manifest_dir() / "vecscale.cu", dir / "vecscale.cu");
  test::write_file(dir / "README.txt", "not a plugin\n");
}

TEST(RegistryPath, DirectoryLoadsEveryLibraryAndManifest) {
  test::TempDir dir;
  fill_plugin_dir(dir.path());
  Registry r;
  r.load_path(dir.path().string());
  EXPECT_EQ(kernel_names(r), (std::vector<std::string>{"saxpy", "vecscale"}));
  EXPECT_EQ(r.get("saxpy").origin, (dir / "libsaxpy.so").string());
  EXPECT_EQ(r.get("vecscale").origin, (dir / "vecscale.toml").string());
}

TEST(RegistryPath, DirectoryWithABrokenManifestFails) {
  test::TempDir dir;
  fs::copy_file(test::broken_manifest("missing_entry.toml"), dir / "missing_entry.toml");
  Registry r;
  expect_error(ErrorKind::kInput, {"missing_entry.toml", "'entry'"},
               [&] { r.load_path(dir.path().string()); });
}

TEST(RegistryPath, SingleFilesByExtension) {
  Registry r;
  r.load_path(test::valid_manifest());
  r.load_path(test::good_plugin());
  EXPECT_EQ(kernel_names(r), (std::vector<std::string>{"saxpy", "vecscale"}));
}

TEST(RegistryPath, EnvironmentPathIsHonoured) {
  test::TempDir dir;
  fill_plugin_dir(dir / "plugins");
  {
    // Directories and files, ':'-separated; empty items are skipped.
    test::EnvGuard env("KTUNE_PLUGIN_PATH", ":" + (dir / "plugins").string() + "::");
    Registry r;
    r.load_env_path();
    EXPECT_EQ(kernel_names(r), (std::vector<std::string>{"saxpy", "vecscale"}));
  }
  {
    test::EnvGuard env("KTUNE_PLUGIN_PATH", test::valid_manifest() + ":" + test::good_plugin());
    Registry r;
    register_builtin_kernels(r);
    r.load_env_path();
    EXPECT_EQ(kernel_names(r), test::with_builtins({"saxpy", "vecscale"}));
  }
  {
    test::EnvGuard env("KTUNE_PLUGIN_PATH", std::nullopt);
    Registry r;
    r.load_env_path();
    EXPECT_TRUE(r.kernels().empty());
  }
  {
    test::EnvGuard env("KTUNE_PLUGIN_PATH", "");
    Registry r;
    EXPECT_NO_THROW(r.load_env_path());
    EXPECT_TRUE(r.kernels().empty());
  }
}

TEST(RegistryPath, EnvironmentPathErrorsArePrefixed) {
  {
    test::EnvGuard env("KTUNE_PLUGIN_PATH", "/nonexistent/plugins");
    Registry r;
    const std::string msg =
        expect_error(ErrorKind::kPlugin, {"/nonexistent/plugins"}, [&] { r.load_env_path(); });
    EXPECT_EQ(msg.rfind("KTUNE_PLUGIN_PATH: ", 0), 0u) << msg;
  }
  {
    test::EnvGuard env("KTUNE_PLUGIN_PATH", test::good_plugin() + ":" + test::wrong_abi_plugin());
    Registry r;
    const std::string msg = expect_error(ErrorKind::kPlugin, {test::wrong_abi_plugin(), "999"},
                                         [&] { r.load_env_path(); });
    EXPECT_EQ(msg.rfind("KTUNE_PLUGIN_PATH: ", 0), 0u) << msg;
  }
  {
    // The kind of the underlying error is kept: a broken manifest stays an input error.
    test::EnvGuard env("KTUNE_PLUGIN_PATH", test::broken_manifest("missing_reference.toml"));
    Registry r;
    const std::string msg = expect_error(
        ErrorKind::kInput, {"missing_reference.toml", "[reference]"}, [&] { r.load_env_path(); });
    EXPECT_EQ(msg.rfind("KTUNE_PLUGIN_PATH: ", 0), 0u) << msg;
  }
}

// ---------------------------------------------------------------------------------------------
// ABI structs: sizes and checks

// A description of the built-in reduce kernel rebuilt from its KernelSpec, for tests that
// tamper with a copy (the built-in's own description is private to plugins/builtin).
ktune_kernel_desc builtin_reduce_desc() {
  // Everything the description points into lives as long as the test program.
  struct Storage {
    KernelSpec spec;
    std::vector<std::string> values, defaults;
    std::string problem_default;
    std::vector<ktune_param_desc> params;
    std::vector<ktune_problem_desc> problem;
    std::vector<ktune_buffer_desc> buffers;
    std::vector<ktune_arg_desc> args;
    std::vector<const char*> restrictions;
  };
  static const Storage* storage = [] {
    auto* s = new Storage;
    Registry r;
    register_builtin_kernels(r);
    s->spec = r.get("reduce");
    const KernelSpec& k = s->spec;
    for (const auto& p : k.params) {
      std::string values;
      for (const auto& v : p.values) values += (values.empty() ? "" : ",") + v.to_literal();
      s->values.push_back(values);
      s->defaults.push_back(p.values[p.default_index].to_literal());
    }
    for (std::size_t i = 0; i < k.params.size(); ++i)
      s->params.push_back(
          {k.params[i].name.c_str(), s->values[i].c_str(), s->defaults[i].c_str(), nullptr});
    s->problem_default = std::to_string(k.problem[0].default_value);
    s->problem.push_back({k.problem[0].name.c_str(), s->problem_default.c_str(), nullptr});
    for (const auto& b : k.buffers)
      s->buffers.push_back({b.name.c_str(), static_cast<int>(b.type), static_cast<int>(b.role),
                            b.size.c_str(), b.init.c_str(), b.abs_tol, b.rel_tol});
    for (const auto& a : k.args)
      s->args.push_back({a.is_buffer() ? a.buffer.c_str() : nullptr,
                         a.is_buffer() ? nullptr : a.value.c_str(), static_cast<int>(a.type)});
    for (const auto& rs : k.restrictions) s->restrictions.push_back(rs.c_str());
    return s;
  }();
  const KernelSpec& k = storage->spec;
  ktune_kernel_desc d{};
  d.struct_size = sizeof(ktune_kernel_desc);
  d.name = k.name.c_str();
  d.description = k.description.c_str();
  d.source = k.source.c_str();
  d.source_name = nullptr;  // defaults to NAME.cu
  d.entry = k.entry.c_str();
  d.params = storage->params.data();
  d.param_count = storage->params.size();
  d.restrictions = storage->restrictions.data();
  d.restriction_count = storage->restrictions.size();
  d.problem = storage->problem.data();
  d.problem_count = storage->problem.size();
  d.grid[0] = k.launch.grid[0].c_str();
  d.block[0] = k.launch.block[0].c_str();
  d.shared_mem = k.launch.shared_mem.c_str();
  d.buffers = storage->buffers.data();
  d.buffer_count = storage->buffers.size();
  d.args = storage->args.data();
  d.arg_count = storage->args.size();
  d.reference = k.reference;
  d.reference_config = k.reference_config.empty() ? nullptr : k.reference_config.c_str();
  d.bytes = k.bytes.c_str();
  return d;
}

TEST(RegistryAbi, KernelFromDescConvertsEveryField) {
  const ktune_kernel_desc d = builtin_reduce_desc();
  const KernelSpec k = kernel_from_desc(d, "test origin");
  EXPECT_NO_THROW(k.validate());
  EXPECT_EQ(k.origin, "test origin");
  EXPECT_EQ(k.name, "reduce");
  EXPECT_EQ(k.source_name, "reduce.cu");  // NULL source_name: NAME.cu
  EXPECT_EQ(param_names(k).size(), 7u);
  EXPECT_EQ(k.params[0].values.size(), 6u);
  EXPECT_EQ(k.params[0].values[k.params[0].default_index], Value(256));
  EXPECT_EQ(k.launch.grid[1], "1");
  EXPECT_EQ(k.launch.block[2], "1");
  EXPECT_EQ(k.buffers.size(), 3u);
  EXPECT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[2].type, ElemType::kU32);
  EXPECT_EQ(k.args[3].buffer, "partial");
  EXPECT_EQ(k.reference_config,
            "variant=1,block_size=256,elements_per_thread=1,unroll=1,maxrregcount=0,"
            "launch_bounds=0,blocks_per_sm=0");
  EXPECT_TRUE(k.flops.empty());
}

TEST(RegistryAbi, CategoricalValuesAndNullDefault) {
  ktune_kernel_desc d = builtin_reduce_desc();
  const ktune_param_desc params[] = {
      {"layout", "\"aos\", 'soa'", nullptr, "storage"},
      {"block_size", "64,128", "128", nullptr},
  };
  d.params = params;
  d.param_count = 2;
  d.restriction_count = 0;
  const ktune_buffer_desc buffers[] = {
      {"out", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "n", nullptr, 0, 0}};
  const ktune_arg_desc args[] = {{"out", nullptr, 0}};
  d.buffers = buffers;
  d.buffer_count = 1;
  d.args = args;
  d.arg_count = 1;
  d.grid[0] = "div_up(n, block_size)";
  d.block[0] = "block_size";
  d.shared_mem = nullptr;
  d.reference_config = "layout=aos,block_size=64";
  const KernelSpec k = kernel_from_desc(d, "test");
  EXPECT_NO_THROW(k.validate());
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_TRUE(k.params[0].categorical());
  EXPECT_EQ(k.params[0].values, (std::vector<Value>{Value("aos"), Value("soa")}));
  EXPECT_EQ(k.params[0].default_index, 0u);  // NULL default: the first value
  EXPECT_EQ(k.params[1].default_index, 1u);
  EXPECT_EQ(k.launch.shared_mem, "0");
}

TEST(RegistryAbi, BadValuesInADescriptionAreInputErrors) {
  ktune_kernel_desc d = builtin_reduce_desc();
  {
    ktune_param_desc params[] = {{"block_size", "64,,128", nullptr, nullptr}};
    d.params = params;
    d.param_count = 1;
    expect_error(ErrorKind::kInput, {"block_size", "empty value"},
                 [&] { kernel_from_desc(d, "o"); });
  }
  d = builtin_reduce_desc();
  {
    ktune_param_desc params[] = {{"block_size", "64,128", "96", nullptr}};
    d.params = params;
    d.param_count = 1;
    expect_error(ErrorKind::kInput, {"block_size", "default 96"},
                 [&] { kernel_from_desc(d, "o"); });
  }
  d = builtin_reduce_desc();
  {
    ktune_buffer_desc buffers[] = {{"out", 42, KTUNE_BUFFER_OUTPUT, "1", nullptr, 0, 0}};
    d.buffers = buffers;
    d.buffer_count = 1;
    expect_error(ErrorKind::kInput, {"'out'", "unknown type 42"},
                 [&] { kernel_from_desc(d, "o"); });
    buffers[0].type = KTUNE_TYPE_I32;
    buffers[0].role = 9;
    expect_error(ErrorKind::kInput, {"'out'", "unknown role 9"}, [&] { kernel_from_desc(d, "o"); });
  }
  d = builtin_reduce_desc();
  {
    ktune_arg_desc args[] = {{nullptr, "n", 0}};
    d.args = args;
    d.arg_count = 1;
    expect_error(ErrorKind::kInput, {"argument 1", "unknown type 0"},
                 [&] { kernel_from_desc(d, "o"); });
  }
  d = builtin_reduce_desc();
  {
    ktune_problem_desc problem[] = {{"n", "lots", nullptr}};
    d.problem = problem;
    expect_error(ErrorKind::kInput, {"'n'", "'lots' is not an integer"},
                 [&] { kernel_from_desc(d, "o"); });
  }
}

// Every field of ktune_kernel_desc is part of ABI version 1, so a description must hold all of
// them; one that is too small (a struct from a foreign header, a garbage size) is refused with
// a plugin error instead of reading past its end.
TEST(RegistryAbi, KernelDescriptionTooSmallIsRefused) {
  ktune_kernel_desc d = builtin_reduce_desc();
  for (std::size_t size : {std::size_t{0}, sizeof(std::size_t), offsetof(ktune_kernel_desc, run),
                           offsetof(ktune_kernel_desc, user_data)}) {
    d.struct_size = size;
    expect_error(ErrorKind::kPlugin, {"libold.so", "too small", std::to_string(size) + " bytes"},
                 [&] { kernel_from_desc(d, "libold.so"); });
  }
  d.struct_size = sizeof(ktune_kernel_desc);
  EXPECT_NO_THROW(kernel_from_desc(d, "libnow.so"));
}

// A plugin from a newer ktune with fields appended (same ABI version) is read: the fields this
// ktune knows are where it expects them, the rest is ignored.
TEST(RegistryAbi, LargerKernelDescriptionFromANewerPluginLoads) {
  struct Newer {
    ktune_kernel_desc v1;
    const char* appended_field;
  };
  Newer n{builtin_reduce_desc(), "new"};
  n.v1.struct_size = sizeof(Newer);
  const KernelSpec k = kernel_from_desc(n.v1, "libnewer.so");
  EXPECT_EQ(k.name, "reduce");
  EXPECT_NO_THROW(k.validate());
}

int test_generate(const ktune_generate_ctx*, char*, std::size_t) { return 0; }

// ABI 1.1 appended `generate`: a plugin built against 1.0 (a struct_size that ends before it)
// still loads, without a generate function; a 1.1 plugin's is carried into the KernelSpec.
TEST(RegistryAbi, GenerateIsReadOnlyWhenTheStructHasIt) {
  ktune_kernel_desc d = builtin_reduce_desc();
  d.generate = test_generate;
  d.struct_size = offsetof(ktune_kernel_desc, generate);
  const KernelSpec v10 = kernel_from_desc(d, "libv10.so");
  EXPECT_EQ(v10.generate, nullptr);
  EXPECT_NO_THROW(v10.validate());
  d.struct_size = sizeof(ktune_kernel_desc);
  EXPECT_EQ(kernel_from_desc(d, "libv11.so").generate, &test_generate);
  EXPECT_EQ(KTUNE_PLUGIN_ABI_VERSION, 1u);  // appending is not an ABI version change
  EXPECT_GE(KTUNE_PLUGIN_ABI_MINOR_VERSION, 1u);
}

// ABI 1.2 appended `arch_specific`: a 1.1 plugin's struct ends before it (false); a 1.2
// plugin's flag is carried into the KernelSpec.
TEST(RegistryAbi, ArchSpecificIsReadOnlyWhenTheStructHasIt) {
  ktune_kernel_desc d = builtin_reduce_desc();
  d.arch_specific = 1;
  d.struct_size = offsetof(ktune_kernel_desc, arch_specific);
  EXPECT_FALSE(kernel_from_desc(d, "libv11.so").arch_specific);
  d.struct_size = sizeof(ktune_kernel_desc);
  EXPECT_TRUE(kernel_from_desc(d, "libv12.so").arch_specific);
  d.arch_specific = 0;
  EXPECT_FALSE(kernel_from_desc(d, "libv12.so").arch_specific);
  EXPECT_GE(KTUNE_PLUGIN_ABI_MINOR_VERSION, 2u);
}

TEST(RegistryAbi, PluginStructChecks) {
  Registry r;
  expect_error(ErrorKind::kPlugin, {"origin-a", "no description"},
               [&] { r.add_plugin(nullptr, "origin-a"); });

  const ktune_kernel_desc d = builtin_reduce_desc();
  const ktune_kernel_desc* kernels[] = {&d};
  ktune_plugin p{KTUNE_PLUGIN_ABI_VERSION, sizeof(ktune_plugin), "p", "1", kernels, 1};

  ktune_plugin newer_abi = p;
  newer_abi.abi_version = KTUNE_PLUGIN_ABI_VERSION + 1;
  expect_error(ErrorKind::kPlugin,
               {"origin-b", "ABI version " + std::to_string(KTUNE_PLUGIN_ABI_VERSION + 1)},
               [&] { r.add_plugin(&newer_abi, "origin-b"); });

  ktune_plugin small = p;
  small.struct_size = offsetof(ktune_plugin, kernel_count);
  expect_error(ErrorKind::kPlugin, {"origin-c", "too small"},
               [&] { r.add_plugin(&small, "origin-c"); });

  const ktune_kernel_desc* null_kernels[] = {nullptr};
  ktune_plugin with_null = p;
  with_null.kernels = null_kernels;
  expect_error(ErrorKind::kPlugin, {"origin-d", "null pointer"},
               [&] { r.add_plugin(&with_null, "origin-d"); });
  EXPECT_TRUE(r.kernels().empty());

  r.add_plugin(&p, "origin-e");
  EXPECT_EQ(r.get("reduce").origin, "origin-e");
}

// ---------------------------------------------------------------------------------------------
// Manifests

TEST(Manifest, ValidFixtureLoadsEveryField) {
  Registry r;
  r.load_manifest(test::valid_manifest());
  ASSERT_TRUE(r.contains("vecscale"));
  const KernelSpec& k = r.get("vecscale");
  EXPECT_NO_THROW(k.validate());
  EXPECT_EQ(k.origin, test::valid_manifest());
  EXPECT_EQ(k.description, "p = alpha * p over 2-D float32 points (manifest fixture)");
  EXPECT_EQ(k.entry, "vecscale");
  EXPECT_EQ(k.source_name, "vecscale.cu");
  EXPECT_EQ(k.source, test::read_file(test::manifest_dir() / "vecscale.cu"));
  EXPECT_EQ(k.compile_options, (std::vector<std::string>{"-std=c++17", "-DVECSCALE_FIXTURE=1"}));

  ASSERT_EQ(param_names(k), (std::vector<std::string>{"block_size", "elements_per_thread", "layout",
                                                      "maxrregcount", "launch_bounds"}));
  EXPECT_EQ(k.params[0].values, (std::vector<Value>{64, 128, 256, 512, 1024}));
  EXPECT_EQ(k.params[0].default_index, 1u);
  EXPECT_EQ(k.params[0].description, "threads per block");
  EXPECT_EQ(k.params[1].default_index, 0u);  // no default: the first value
  EXPECT_TRUE(k.params[2].categorical());
  EXPECT_EQ(k.params[2].values, (std::vector<Value>{Value("aos"), Value("soa")}));
  EXPECT_EQ(k.params[2].default_index, 1u);
  EXPECT_FALSE(k.params[3].categorical());

  EXPECT_EQ(k.restrictions,
            (std::vector<std::string>{"block_size * elements_per_thread <= 2048",
                                      "launch_bounds == 0 or launch_bounds * block_size <= "
                                      "max_threads_per_multiprocessor"}));
  ASSERT_EQ(k.problem.size(), 1u);
  EXPECT_EQ(k.problem[0].name, "n");
  EXPECT_EQ(k.problem[0].default_value, 1000000);
  EXPECT_EQ(k.problem[0].description, "number of points");

  EXPECT_EQ(k.launch.grid,
            (std::array<std::string, 3>{"div_up(n, block_size * elements_per_thread)", "1", "1"}));
  EXPECT_EQ(k.launch.block, (std::array<std::string, 3>{"block_size", "1", "1"}));
  EXPECT_EQ(k.launch.shared_mem, "block_size * 4");

  ASSERT_EQ(k.buffers.size(), 3u);
  EXPECT_EQ(k.buffers[0].name, "in");
  EXPECT_EQ(k.buffers[0].type, ElemType::kF32);
  EXPECT_EQ(k.buffers[0].role, BufferRole::kInput);
  EXPECT_EQ(k.buffers[0].size, "2 * n");
  EXPECT_EQ(k.buffers[0].init, "random(-1, 1)");
  EXPECT_EQ(k.buffers[1].type, ElemType::kF32);  // "float" is an alias of float32
  EXPECT_EQ(k.buffers[1].role, BufferRole::kOutput);
  EXPECT_DOUBLE_EQ(k.buffers[1].abs_tol, 1e-6);
  EXPECT_DOUBLE_EQ(k.buffers[1].rel_tol, 1e-5);
  EXPECT_EQ(k.buffers[2].type, ElemType::kI32);
  EXPECT_EQ(k.buffers[2].role, BufferRole::kScratch);
  EXPECT_EQ(k.buffers[2].init, "zero");

  ASSERT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[0].buffer, "in");
  EXPECT_EQ(k.args[1].buffer, "out");
  EXPECT_FALSE(k.args[2].is_buffer());
  EXPECT_EQ(k.args[2].value, "n");
  EXPECT_EQ(k.args[2].type, ElemType::kU32);
  EXPECT_EQ(k.args[3].value, "0.5");
  EXPECT_EQ(k.args[3].type, ElemType::kF32);

  EXPECT_EQ(k.reference, nullptr);
  EXPECT_EQ(k.reference_config, "block_size=256,elements_per_thread=1,layout=aos");
  EXPECT_EQ(k.bytes, "16 * n");
  EXPECT_EQ(k.flops, "2 * n");
  EXPECT_EQ(k.run, nullptr);
}

TEST(Manifest, ValidFixtureCompilesForSm90) {
  Registry r;
  r.load_manifest(test::valid_manifest());
  KernelInstance instance(r.get("vecscale"), {}, DeviceLimits::for_arch(90));
  const SearchSpace& space = instance.space();
  for (const char* sets :
       {"layout=aos", "layout=soa,elements_per_thread=4,launch_bounds=2,maxrregcount=32"}) {
    std::map<std::string, std::string> assignments;
    std::string rest = sets;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string item = rest.substr(0, comma);
      assignments[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
    const Config c = space.from_assignments(assignments);
    ASSERT_TRUE(space.is_valid(c)) << space.key(c);
    const CompileResult result = compile(render(instance, c, "sm_90"));
    EXPECT_TRUE(result.ok) << space.key(c) << ": " << result.error << "\n" << result.log;
    EXPECT_EQ(result.lowered_name, "vecscale");
  }
}

struct BrokenManifest {
  const char* file;
  std::vector<std::string> needles;  // besides the file's path
};

void PrintTo(const BrokenManifest& m, std::ostream* os) { *os << m.file; }

class ManifestBroken : public ::testing::TestWithParam<BrokenManifest> {};

TEST_P(ManifestBroken, IsAnInputErrorNamingFileAndField) {
  const std::string path = test::broken_manifest(GetParam().file);
  ASSERT_TRUE(fs::exists(path)) << path;
  std::vector<std::string> needles = GetParam().needles;
  needles.push_back(path);
  Registry r;
  expect_error(ErrorKind::kInput, needles, [&] { r.load_manifest(path); });
  EXPECT_TRUE(r.kernels().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ManifestBroken,
    ::testing::Values(BrokenManifest{"missing_name.toml", {"[kernel]", "'name'"}},
                      BrokenManifest{"missing_entry.toml", {"[kernel]", "'entry'"}},
                      BrokenManifest{"bad_syntax.toml", {"line 12"}},
                      BrokenManifest{"bad_restriction.toml",
                                     {"restriction 2", "block_size * <= 256"}},
                      BrokenManifest{"undeclared_buffer.toml", {"'outt'", "not declared"}},
                      BrokenManifest{"bad_default.toml", {"block_size", "default 100"}},
                      BrokenManifest{"missing_reference.toml", {"[reference]"}},
                      BrokenManifest{"unknown_key.toml",
                                     {"[[param]] 'elements_per_thread'", "unknown key 'valuse'",
                                      "did you mean 'values'"}},
                      BrokenManifest{"bad_init.toml", {"buffer 'in'", "init 'gaussian'"}},
                      BrokenManifest{"bad_reference.toml", {"reference config", "96"}}),
    [](const ::testing::TestParamInfo<BrokenManifest>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(Manifest, MissingFileOrTemplateIsAnInputError) {
  Registry r;
  expect_error(ErrorKind::kInput, {"/nonexistent/k.toml", "not found"},
               [&] { r.load_manifest("/nonexistent/k.toml"); });
  test::TempDir dir;
  fs::copy_file(test::valid_manifest(), dir / "vecscale.toml");  // without its .cu
  expect_error(ErrorKind::kInput,
               {(dir / "vecscale.toml").string(), "[kernel].source", "vecscale.cu"},
               [&] { r.load_manifest((dir / "vecscale.toml").string()); });
}

// An entry that names a macro no parameter defines (a misspelt BLOCK_SIZE) would fail every
// compilation of a run; it is refused when the kernel registers.
TEST(Manifest, AnEntryNamingAnUndefinedMacroIsRefused) {
  test::TempDir dir;
  fs::copy_file(test::manifest_dir() / "vecscale.cu", dir / "vecscale.cu");
  std::string text = test::read_file(test::valid_manifest());
  const std::string from = "entry = \"vecscale\"";
  ASSERT_TRUE(contains(text, from));
  const std::string path = (dir / "m.toml").string();
  for (const auto& [entry, bad] :
       std::vector<std::pair<std::string, bool>>{{"vecscale<BLOCKSIZE>", true},
                                                 {"vecscale<BLOCK_SIZE, LAYOUT_SOA>", false},
                                                 {"vecscale<KTUNE_BLOCK_X, float>", false},
                                                 {"vecscale<ELEMENTS_PER_THREAD>", false}}) {
    std::string variant = text;
    variant.replace(variant.find(from), from.size(), "entry = \"" + entry + "\"");
    test::write_file(path, variant);
    Registry r;
    if (bad)
      expect_error(ErrorKind::kInput, {"BLOCKSIZE", "no parameter defines", "BLOCK_SIZE"},
                   [&] { r.load_manifest(path); });
    else
      EXPECT_NO_THROW(r.load_manifest(path)) << entry;
  }
}

// A constant buffer (role "constant") is an input that reaches the kernel as its __constant__
// variable of the same name, never as an argument.
TEST(Manifest, AConstantBufferIsAnInputButNotAnArgument) {
  const fs::path manifest = test::manifest_dir() / "constscale.toml";
  Registry r;
  r.load_manifest(manifest.string());
  const KernelSpec& k = r.get("constscale");
  const auto coeff = std::find_if(k.buffers.begin(), k.buffers.end(),
                                  [](const BufferSpec& b) { return b.name == "coeff"; });
  ASSERT_NE(coeff, k.buffers.end());
  EXPECT_EQ(coeff->role, BufferRole::kConstant);
  EXPECT_EQ(to_string(coeff->role), "constant");
  EXPECT_TRUE(std::none_of(k.args.begin(), k.args.end(),
                           [](const ArgSpec& a) { return a.buffer == "coeff"; }));

  test::TempDir dir;
  fs::copy_file(test::manifest_dir() / "constscale.cu", dir / "constscale.cu");
  std::string text = test::read_file(manifest);
  text += "\n[[arg]]\nbuffer = \"coeff\"\n";
  const std::string path = (dir / "m.toml").string();
  test::write_file(path, text);
  Registry bad;
  expect_error(ErrorKind::kInput, {"argument 5", "'coeff', a constant buffer", "__constant__"},
               [&] { bad.load_manifest(path); });
}

TEST(Manifest, WrongTypesAndUnknownEnumsNameTheField) {
  test::TempDir dir;
  fs::copy_file(test::manifest_dir() / "vecscale.cu", dir / "vecscale.cu");
  const std::string valid = test::read_file(test::valid_manifest());
  const auto load_variant = [&](const std::string& from, const std::string& to) {
    ASSERT_TRUE(contains(valid, from)) << from;
    std::string text = valid;
    text.replace(text.find(from), from.size(), to);
    const std::string path = (dir / "variant.toml").string();
    test::write_file(path, text);
    Registry r;
    r.load_manifest(path);
  };
  const std::string path = (dir / "variant.toml").string();
  expect_error(ErrorKind::kInput, {path, "[[buffer]] 'in'", "unknown type 'float16'"}, [&] {
    load_variant("type = \"float32\"\nrole = \"input\"", "type = \"float16\"\nrole = \"input\"");
  });
  expect_error(ErrorKind::kInput, {path, "role 'readonly'"},
               [&] { load_variant("role = \"input\"", "role = \"readonly\""); });
  expect_error(ErrorKind::kInput, {path, "[launch]", "'grid'"}, [&] {
    load_variant("grid = [\"div_up(n, block_size * elements_per_thread)\", 1, \"1\"]", "");
  });
  expect_error(ErrorKind::kInput, {path, "[[problem]] 'n'", "integer 'default'"},
               [&] { load_variant("default = 1000000", "default = \"1000000\""); });
  expect_error(ErrorKind::kInput, {path, "[[param]] 'layout'", "non-empty 'values'"},
               [&] { load_variant("values = [\"aos\", \"soa\"]", "values = []"); });
  expect_error(ErrorKind::kInput, {path, "[kernel]", "'entry'"},
               [&] { load_variant("entry = \"vecscale\"", ""); });
  expect_error(ErrorKind::kInput, {path, "grid[0]", "unknown name"}, [&] {
    load_variant("div_up(n, block_size * elements_per_thread)", "div_up(m, block_size)");
  });
  expect_error(ErrorKind::kInput, {path, "[kernel].arch_specific", "true or false"}, [&] {
    load_variant("entry = \"vecscale\"", "entry = \"vecscale\"\narch_specific = 1");
  });
}

// [kernel].arch_specific = true compiles the manifest's kernel for sm_90a on an sm_90 device.
TEST(Manifest, ArchSpecificKernelRendersForTheSpecificTarget) {
  test::TempDir dir;
  fs::copy_file(test::manifest_dir() / "vecscale.cu", dir / "vecscale.cu");
  std::string text = test::read_file(test::valid_manifest());
  const std::string entry = "entry = \"vecscale\"";
  ASSERT_TRUE(contains(text, entry));
  text.replace(text.find(entry), entry.size(), entry + "\narch_specific = true");
  const std::string path = (dir / "specific.toml").string();
  test::write_file(path, text);
  Registry r;
  r.load_manifest(path);
  const KernelSpec& k = r.get("vecscale");
  EXPECT_TRUE(k.arch_specific);
  const KernelInstance inst(k, {}, DeviceLimits::for_arch(90));
  const CompileRequest req = render(inst, inst.space().default_config(), "sm_90");
  EXPECT_EQ(req.arch, "sm_90a");
  EXPECT_NE(std::find(req.options.begin(), req.options.end(), "--gpu-architecture=sm_90a"),
            req.options.end());
  // Architectures without a specific target keep their own.
  EXPECT_EQ(render(inst, inst.space().default_config(), "sm_80").arch, "sm_80");
}

// A plugin file is checked before dlopen: a truncated library (dlopen maps pages past its end,
// and touching one was SIGBUS) and an ELF file of another class or machine get a plugin error.
TEST(RegistryLibrary, TruncatedOrForeignElfFilesAreRefusedBeforeLoading) {
  std::ifstream in(test::good_plugin(), std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), 4096u);
  test::TempDir dir;
  const auto try_load = [&](const std::string& name, const std::string& bytes,
                            const std::string& why) {
    const std::string path = (dir / name).string();
    test::write_file(path, bytes);
    Registry r;
    expect_error(ErrorKind::kPlugin, {path, "cannot load plugin", why},
                 [&] { r.load_library(path); });
    EXPECT_TRUE(r.kernels().empty()) << name;
  };
  try_load("libfirst1000.so", image.substr(0, 1000), "truncated");
  try_load("libhalf.so", image.substr(0, image.size() / 2), "truncated");
  try_load("libfour.so", image.substr(0, 4), "truncated");  // the magic number alone
  try_load("libempty.so", "", "no ELF magic");
  std::string elf32 = image;
  elf32[EI_CLASS] = ELFCLASS32;
  try_load("libelf32.so", elf32, "32-bit");
  std::string other = image;
  other[18] = static_cast<char>(EM_ARM);  // e_machine, little-endian
  other[19] = 0;
  try_load("libarm.so", other, "not this one");
}

}  // namespace
}  // namespace ktune
