// Shared pieces of the ktune command-line program: the command table, option groups that
// several commands use, and helpers to turn options into kernels, problems and targets.
#pragma once

#include <boost/program_options.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/problem_set.h"
#include "ktune/registry.h"
#include "ktune/store.h"

namespace ktune::cli {

// When this process started (before main).
std::chrono::steady_clock::time_point started();

namespace po = boost::program_options;

// An unsigned option value, parsed strictly: Boost reads "-1" into an unsigned type as 2^64-1
// (lexical_cast's rule); this refuses a sign, a fraction and anything out of range, naming the
// value.
struct Unsigned {
  std::uint64_t value = 0;
};
void validate(boost::any& out, const std::vector<std::string>& values, Unsigned*, int);
std::ostream& operator<<(std::ostream& os, const Unsigned& u);  // for default values in help

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};
const std::vector<Command>& commands();

// Parses args against options (+ positional names); prints help and returns true on --help.
bool parse(const std::vector<std::string>& args, const char* command, const char* usage,
           const po::options_description& options,
           const po::positional_options_description& positional, po::variables_map& vm);

// Option groups.
po::options_description plugin_options();    // --plugin
po::options_description problem_options();   // --problem
po::options_description device_options();    // --device
po::options_description target_options();    // --device, --arch
po::options_description output_options();    // --json, --quiet
po::options_description database_options();  // --db

// Registry with built-ins, KTUNE_PLUGIN_PATH and every --plugin.
std::unique_ptr<Registry> make_registry(const po::variables_map& vm);
// "n=2**28,m=4" (repeatable) -> values; integers or constant expressions. A set (a list, a range:
// ktune/problem_set.h) is refused here: only `tune` takes one, through parse_problem_set.
std::map<std::string, std::int64_t> parse_problem(const std::vector<std::string>& items);
ProblemSet parse_problem_set(const std::vector<std::string>& items);
// Gives `set` the values of --problem's items, over what it held, by name.
void add_problem_items(ProblemSet& set, const std::vector<std::string>& items);
// "NAME=VALUE" -> (NAME, VALUE); Error(kUsage) naming --option otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& item, const char* option);
// "block_size=256,variant=7" (repeatable) -> name -> text.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* option);

// Where a command compiles for and what limits its space has: --arch, else --device / the
// first GPU. `need_arch` makes "no GPU and no --arch" an error; otherwise sm_90 limits are
// assumed and `note` says so.
struct Target {
  std::string arch;
  DeviceLimits limits;
  std::optional<DeviceInfo> device;
  std::string note;
};
Target resolve_target(const po::variables_map& vm, bool need_arch);

// The kernel named by --kernel or the job file (--config), with the job applied, bound to the
// job's problem overridden by --problem, and to the target's limits.
KernelInstance job_instance(const po::variables_map& vm, const Registry& registry,
                            const Target& target);
// "grid (4096, 1, 1)  block (256, 1, 1)  shared 0 B" of a configuration; the error's text
// when its expressions cannot be evaluated.
std::string geometry_text(const KernelInstance& instance, const Config& config);
nlohmann::json geometry_json(const KernelInstance& instance, const Config& config);

// The kernel a database query names, as far as the query needs it (its name and problem
// parameters): the registered kernel, else the latest version of a kernel of that name the
// database holds (one known only from a recording, or from a plugin not loaded now), its problem
// parameters from the stored spec and, where the spec has none, from its latest run's problem.
// Error(kUsage) when it is neither, naming the kernels the database holds.
KernelSpec query_kernel(const std::string& name, const Registry& registry, const Store& store);
// Whether the database holds runs or bests of a kernel of that name.
bool stored_kernel(const Store& store, const std::string& name);
// Error(kUsage) "unknown kernel 'X': not registered and not in DB; it holds a (2 runs), b (1 run)".
Error unknown_kernel(const std::string& name, const Store& store);

bool json_output(const po::variables_map& vm);
void print_json(const nlohmann::json& j);

int cmd_list(const std::vector<std::string>& args);
int cmd_space(const std::vector<std::string>& args);
int cmd_compile(const std::vector<std::string>& args);
int cmd_devices(const std::vector<std::string>& args);
int cmd_tune(const std::vector<std::string>& args);
int cmd_best(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_bench_strategies(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_merge(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_worker(const std::vector<std::string>& args);
// `ktune tune --devices`: one `ktune tune` worker per device (tune_devices.cpp); exe is ktune.
int tune_on_devices(const std::vector<std::string>& args, const po::variables_map& vm,
                    const std::string& exe);

}  // namespace ktune::cli
