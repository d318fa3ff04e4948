// ktune::client: what application code links to use tuned kernels at run time. It opens the
// results database read-only, answers "the best configuration of kernel K for problem P on this
// GPU" with the measurement that justifies it, its provenance and which fallback answered, and
// hands out the winner's kernel (the stored CUBIN, or the stored source compiled with NVRTC)
// with a launch helper that evaluates the stored launch geometry. docs/client.md is the manual.
//
// Call order: construct a Client (throws Error(kDatabase) for a database it cannot read), call
// best() for each (kernel, problem) you need (cheap after the first call: results are cached),
// then load() the answer on the GPU and launch it; binary() and render() work without a GPU.
//
// Lookup order, first hit wins (LookupOptions can switch the fallbacks off):
//   device:  exact device (name, arch, SMs, memory) -> same architecture (sm_90) -> same major
//            architecture, newest minor at or below the device's (sm_9x), as CUB's policies
//            fall through
//   problem: at each device level, the exact problem, then the selector of a family tuned on
//            that level's device whose range holds the problem (ktune/selector.h: one of the
//            candidates measured at every problem of the family, answered with its trial at
//            the family's problem nearest to the one asked), then the nearest problem of the
//            same kernel with the same parameter names, by log distance
//            d(a, b) = sum over parameters of |log2(a_i / b_i)|
//            (a zero or negative value compares on sign(v) log2(1 + |v|) instead); ties go to
//            the device most like this one, then to the larger problem.
// No answer is a LookupResult whose status says why, never an exception.
//
// Thread safety: a Client may be shared by threads (one mutex guards its connection and
// caches). It never writes to the database: SQLITE_OPEN_READONLY, PRAGMA query_only, bound
// parameters only.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/device_identity.h"
#include "ktune/device_limits.h"
#include "ktune/energy.h"
#include "ktune/problem.h"
#include "ktune/value.h"

namespace ktune {

// The device a client answers for. Limits are the constants launch-geometry expressions may
// name (max_threads_per_block, multiprocessor_count ...: ktune/device_limits.h, as the tuner).
struct ClientDevice : DeviceIdentity {
  int ordinal = -1;  // CUDA device ordinal; -1 for a device described by hand
  DeviceLimits limits;

  // A device described by hand (tests, tools, export): compute capability from arch ("sm_90",
  // "sm_90a"), limits of that generation. Throws Error(kUsage) for a malformed arch.
  static ClientDevice describe(std::string name, std::string arch, int sm_count,
                               std::int64_t memory_bytes);
  // The CUDA device `ordinal` from cudaGetDeviceProperties; nullopt without a driver or device,
  // with the reason in *problem.
  static std::optional<ClientDevice> find_current(int ordinal = 0, std::string* problem = nullptr);
  // As find_current, but throws Error(kDevice) "no CUDA device: ..." without one.
  static ClientDevice current(int ordinal = 0);
};

enum class DeviceMatch { kExactDevice, kSameArch, kSameMajor };
enum class ProblemMatch { kExact, kSelector, kNearest };
std::string_view to_string(DeviceMatch match);   // "exact device", "same architecture" ...
std::string_view to_string(ProblemMatch match);  // "exact problem", "selector", "nearest problem"

// The log distance of two problems with the same parameter names (see the top of this file);
// infinity when the names differ.
double problem_distance(const Problem& a, const Problem& b);

// How the winner measured (milliseconds per kernel run; NaN where not measured).
struct BestMeasurement {
  double time_ms = 0;  // median: what trials are ranked by
  double time_min_ms = 0;
  double time_mean_ms = 0;
  double time_spread = 0;  // relative spread (IQR / median)
  int sample_count = 0;
  double gbps = 0;
  double gflops = 0;
  // The trial's value of the objective the best was chosen by, where that is not time (NaN).
  double objective = std::numeric_limits<double>::quiet_NaN();
  // Joules per run and the board's mean watts, where energy was measured (schema 11; NaN).
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
};

// Where the answer comes from.
struct BestProvenance {
  std::string device_name;  // the device the winner was measured on
  std::string device_arch;
  int device_sm_count = 0;
  std::int64_t device_memory_bytes = 0;
  std::int64_t device_id = 0;
  std::int64_t kernel_id = 0;  // kernel version (source + space)
  std::int64_t problem_id = 0;
  std::int64_t run_id = 0;
  std::int64_t trial_id = 0;
  std::string source_hash;
  std::string space_hash;
  std::string measured_at;  // the trial's created_at
  std::string best_updated_at;
  std::string run_started_at;
  std::string run_finished_at;
  std::string strategy;
  std::string host;
  std::string ktune_version;
  std::string nvrtc_version;
  int driver_version = 0;
  std::string compile_arch;  // what the winner was compiled for
  std::string compile_options;
  std::string binary_key;  // CompileRequest::key of the winner (binaries.key)
};

namespace detail {
struct StoredKernel;  // source, entry, parameters and parsed geometry of one kernel version
}

// One answer of Client::best.
struct BestConfig {
  std::string kernel;
  std::map<std::string, Value> config;  // parameter name -> value
  std::string config_key;               // "block_size=256,variant=9,..." in declaration order
  Problem problem;                      // the problem the winner was tuned for
  std::string problem_key;
  Problem query;  // the problem asked for, defaults filled in
  DeviceMatch device_match = DeviceMatch::kExactDevice;
  ProblemMatch problem_match = ProblemMatch::kExact;
  double problem_distance = 0;  // 0 for an exact problem
  // For a selector's answer: how many problems its family tuned, and how fast its pick was at
  // each of them left out of the others, on average and at worst (1: that problem's best).
  struct SelectorInfo {
    std::size_t problems = 0;
    std::size_t candidates = 0;
    double held_out_mean = std::numeric_limits<double>::quiet_NaN();
    double held_out_worst = std::numeric_limits<double>::quiet_NaN();
  };
  SelectorInfo selector;
  BestMeasurement measurement;  // of the answer's trial (a selector's: at `problem`)
  // What the best was chosen by (the database's best.objective): "time", or the objective of
  // the run that chose it ("GFLOP/s", higher is better).
  std::string objective = "time";
  bool objective_higher_is_better = false;
  // The policy the answer was chosen by among the problem's time-energy Pareto set
  // (LookupOptions::policy), and where it could not be applied, why ("no energy was measured
  // for this problem: the fastest"); empty when it was.
  std::string policy = "fastest";
  std::string policy_note;
  BestProvenance provenance;
  std::shared_ptr<const detail::StoredKernel> stored;

  // An integer parameter; throws Error(kUsage) for an unknown name or a non-integer value.
  std::int64_t value(std::string_view name) const;
  // "exact device, nearest problem (n=16777216, distance 1)".
  std::string describe() const;
};

struct LookupOptions {
  bool other_devices = true;    // allow same-architecture and same-major fallbacks
  bool nearest_problem = true;  // allow a problem other than the one asked for
  bool selector = true;         // allow a family's selector (with nearest_problem)
  double max_problem_distance = std::numeric_limits<double>::infinity();
  // Which configuration of the matched problem's time-energy Pareto set answers (ktune/energy.h;
  // docs/energy.md): the fastest (the stored best), the least energy, or the least energy
  // within a slowdown. Where the problem has no set the stored best answers, with
  // BestConfig::policy_note saying so.
  EnergyPolicy policy;
};

class LookupResult {
 public:
  enum class Status {
    kFound,
    kNoKernel,  // the database has no kernel of that name
    kNoMatch,   // the kernel is there, but no best fits this device and problem
  };
  Status status = Status::kNoMatch;
  std::shared_ptr<const BestConfig> best;  // set when found
  std::string message;                     // why not, when not found

  explicit operator bool() const { return status == Status::kFound; }
  const BestConfig& operator*() const { return *best; }
  const BestConfig* operator->() const { return best.get(); }
};

// Launch dimensions and dynamic shared memory (bytes) of one launch.
struct LaunchShape {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint64_t shared_mem = 0;
};

// How a kernel binary was obtained.
enum class KernelOrigin {
  kStoredBinary,  // the winner's CUBIN from the database's binaries table (no NVRTC)
  kCompiled,      // the stored source and configuration compiled now with NVRTC
  kDiskCache,     // an earlier NVRTC compile found in the cache directory
};
std::string_view to_string(KernelOrigin origin);  // "stored binary", "compiled with NVRTC" ...

struct KernelBinary {
  std::string cubin;
  std::string lowered_name;  // the mangled entry to look up in the CUBIN
  std::string arch;          // what the CUBIN is for
  std::string key;           // CompileRequest::key of the CUBIN
  KernelOrigin origin = KernelOrigin::kStoredBinary;
  std::string reason;    // why NVRTC when it was used ("the stored binary is sm_80 ...")
  double obtain_ms = 0;  // reading it from the database, or compiling it
};

// A best kernel loaded on the GPU (cudaLibraryLoadData), ready to launch on the current device.
class LoadedKernel {
 public:
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  const KernelBinary& binary() const { return binary_; }
  KernelOrigin origin() const { return binary_.origin; }
  double load_ms() const { return load_ms_; }  // cudaLibraryLoadData + GetKernel
  const BestConfig& best() const { return *best_; }
  void* handle() const { return kernel_; }  // the cudaKernel_t

  // The launch for a problem: the stored grid, block and shared-memory expressions evaluated
  // with this configuration, the problem (missing names from the tuned problem) and the
  // device's limits. Throws Error(kInput) naming the field that cannot be evaluated.
  LaunchShape shape(const Problem& problem) const;
  // cudaLaunchKernel on `stream` (a cudaStream_t; null: the default stream). `args` as for
  // cudaLaunchKernel. Throws Error(kDevice) "reduce[...]: launch failed: <CUDA error>".
  void launch(const LaunchShape& shape, void** args, void* stream = nullptr) const;
  void launch(const Problem& problem, void** args, void* stream = nullptr) const {
    launch(shape(problem), args, stream);
  }

 private:
  friend class Client;
  LoadedKernel() = default;
  std::shared_ptr<const BestConfig> best_;
  std::vector<Value> limits_;  // the device's limits as expression slots
  KernelBinary binary_;
  double load_ms_ = 0;
  void* library_ = nullptr;  // cudaLibrary_t
  void* kernel_ = nullptr;   // cudaKernel_t
};

struct ClientOptions {
  // How long a query waits for another process's lock before Error(kDatabase) "locked".
  std::chrono::milliseconds busy_timeout{1000};
  // NVRTC results are kept in memory; with a directory, also on disk (a CompileCache, shared
  // with the tuner when it is the tuner's cache directory).
  std::optional<std::filesystem::path> cache_dir;
};

class Client {
 public:
  // The newest schema this client reads (a newer database is refused) and the oldest: schemas 3,
  // 4 and 5 only added the tuner's claims, run heartbeats and the re-timings' ranking times,
  // which the client does not read; 7 added the families' selectors (read where present); 8
  // the early cut-off's flag on trials (a cut trial is never a best, so never an answer).
  static constexpr int kSchemaVersion = 11;
  static constexpr int kOldestSchemaVersion = 2;

  // Opens `db` read-only for the current CUDA device (Error(kDevice) without one) or for a
  // device described by hand. Throws Error(kDatabase) "<path>: ..." for a missing file, a file
  // that is not a ktune database, a newer (or older) schema, or a database locked past the
  // busy timeout; the file is never changed.
  explicit Client(const std::filesystem::path& db, ClientOptions options = {});
  Client(const std::filesystem::path& db, ClientDevice device, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  const ClientDevice& device() const;
  const std::filesystem::path& path() const;
  int schema_version() const;
  // The flags given to sqlite3_open_v2 (SQLITE_OPEN_READONLY, never READWRITE or CREATE), and
  // whether SQLite reports the connection read-only.
  int open_flags() const;
  bool read_only() const;

  // The best configuration of `kernel` for `problem` on this client's device (see the lookup
  // order above). Missing problem parameters take the kernel's defaults. Results are cached
  // until clear_cache(); a database failure during the query (locked, corrupt) throws
  // Error(kDatabase).
  LookupResult best(std::string_view kernel, const Problem& problem,
                    const LookupOptions& options = {});
  // Drops every cached answer, binary and loaded kernel, so later calls see new results.
  void clear_cache();

  // The launch shape of a best for a problem (no GPU needed); see LoadedKernel::shape.
  LaunchShape shape(const BestConfig& best, const Problem& problem) const;
  // The NVRTC request that compiles `best` for `arch`, rendered exactly as the tuner renders a
  // configuration (same source text, options and therefore the same CompileRequest::key).
  CompileRequest render(const BestConfig& best, const std::string& arch) const;
  // The kernel's CUBIN for this device, no GPU needed: the stored binary when there is one that
  // runs on this device (same arch, or same major and an older minor), else the stored source
  // compiled with NVRTC (through the cache directory when set). Cached in memory. Throws
  // Error(kCompile) when NVRTC fails.
  std::shared_ptr<const KernelBinary> binary(const BestConfig& best);
  // binary(), loaded into the CUDA context (cached): throws Error(kDevice) for CUDA failures.
  std::shared_ptr<const LoadedKernel> load(const BestConfig& best);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Export for programs that want no database at run time (`ktune export --header / --json`).
struct ExportOptions {
  std::optional<std::string> kernel;  // one kernel, or every kernel
  std::string namespace_name = "ktune_tuned";
};
// Every best of the database (the newest kernel version per kernel, device and problem).
// export_header writes a self-contained C++17 header: per kernel a constexpr table with one
// row per device and problem (parameters, problem, measured time in a comment, as CUB's tuning
// files do) and a lookup() with the client's fall-through; export_json writes the same as JSON.
// Both open the database as the client does (read-only) and throw Error(kDatabase) likewise.
void export_header(const std::filesystem::path& db, std::ostream& out,
                   const ExportOptions& options = {});
void export_json(const std::filesystem::path& db, std::ostream& out,
                 const ExportOptions& options = {});
// The same into a file (written whole, then renamed into place).
void export_header_file(const std::filesystem::path& db, const std::filesystem::path& file,
                        const ExportOptions& options = {});
void export_json_file(const std::filesystem::path& db, const std::filesystem::path& file,
                      const ExportOptions& options = {});

}  // namespace ktune
