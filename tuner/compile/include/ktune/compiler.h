// NVRTC compilation as a chain of values: a config is rendered into a CompileRequest (source
// with #defines, name expression, options, arch), compiled into a CompileResult that holds
// either a CUBIN or the failure as data (status, log, options, arch). Results are cached on
// disk by (source hash, options, arch, NVRTC version), and a CompilePool runs compilations on
// CPU threads ahead of the GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ktune {

struct CompileRequest {
  std::string source;                // full text: #defines, then the kernel template
  std::string source_name;           // for compiler messages
  std::string entry;                 // NVRTC name expression
  std::vector<std::string> options;  // complete NVRTC option list (includes --gpu-architecture)
  std::string arch;                  // "sm_90"

  // Batching (optional). Requests with the same non-empty batch_group (same template, entry,
  // options and arch) may be compiled together in one NVRTC program, each configuration in a
  // namespace of its own with its #defines around the template `body`; NVRTC's fixed cost per
  // program is then paid once per batch. render() fills these for templates that allow it (no
  // #include, no extern "C", no #pragma once).
  std::string batch_group;
  std::string body;                                          // the template, after a #line
  std::vector<std::pair<std::string, std::string>> defines;  // the configuration's macros

  // Cache key: hash of (source, entry, options, arch, NVRTC version).
  std::string key() const;
};

// What ptxas reported about the compiled entry (from its verbose log); -1 where unknown.
struct CompiledResources {
  int registers = -1;
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  int stack_frame_bytes = -1;
  int static_shared_bytes = -1;
  int constant_bytes = -1;
};

struct CompileResult {
  bool ok = false;
  std::string cubin;         // bytes of the CUBIN when ok
  std::string lowered_name;  // mangled name of the entry when ok
  std::string error;         // short reason when !ok, e.g. "NVRTC_ERROR_COMPILATION"
  std::string log;           // full NVRTC log (warnings too)
  std::vector<std::string> options;
  std::string arch;
  std::string key;
  CompiledResources resources;
  double compile_ms = 0;  // wall time of this compilation (0 for a cache hit)
  bool from_cache = false;
  // Whether NVRTC compiled it with a precompiled header (created or loaded; compile processes
  // only, for sources that start with `#include <...>` lines). The CUBIN is the same either way.
  bool precompiled_header = false;
};

// "13.0": the NVRTC library this process uses.
std::string nvrtc_version();
// Architectures NVRTC can target, as "sm_XX".
std::vector<std::string> nvrtc_supported_archs();
// Throws Error(kUsage) unless arch is "sm_NN" (or "sm_NNa") and supported by this NVRTC.
void check_arch(const std::string& arch);

// Compiles with NVRTC; thread-safe. Compile errors come back as data, never as exceptions.
CompileResult compile(const CompileRequest& request);

// Compiles requests of one batch_group as one program; every result carries the shared CUBIN
// and its own entry's lowered name and resources, and compile_ms is its share of the time. If
// the batch fails, each request is compiled alone, so an error belongs to its configuration.
std::vector<CompileResult> compile_batch(const std::vector<CompileRequest>& requests);

// Resources of the function `lowered_name` from an NVRTC log made with --ptxas-options=-v;
// fields ptxas did not report stay -1.
CompiledResources parse_ptxas_resources(const std::string& log, const std::string& lowered_name);

// A directory of compiled CUBINs; safe for several threads and processes (atomic renames).
class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir);
  // Default location: $KTUNE_CACHE_DIR, else $XDG_CACHE_HOME/ktune, else ~/.cache/ktune.
  static std::filesystem::path default_dir();
  std::optional<CompileResult> get(const CompileRequest& request) const;
  // Only successful results are kept. False where nothing was stored (a failed compile, or the
  // directory is not writable): the cache is an optimisation, so that is never an error.
  bool put(const CompileResult& result);
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// What one pool thread did with the requests it took together: one NVRTC program (a batch), or
// cache hits only. For timelines (ktune/trace.h).
struct CompileBatchRecord {
  std::size_t thread = 0;  // the pool's thread, from 0
  std::chrono::steady_clock::time_point begin, end;
  std::size_t requests = 0;  // taken together
  std::size_t compiled = 0;  // of them compiled (the others were cache hits)
  std::size_t failed = 0;    // of them that did not compile
};
using CompileObserver = std::function<void(const CompileBatchRecord&)>;

// How long one configuration's compilation in a compile process may take: past it the process
// is killed, the configuration fails with "compile timed out after N s" and a new process takes
// the pool thread's next request. Adaptive (the default): kFactor times the 0.9 quantile of the
// pool's compilations so far (seconds per configuration), at least kFloor, and kFirst while none
// has finished. A batch of n configurations may take the limit plus n - 1 times the median; one
// that times out is compiled again a configuration at a time, so only the slow one fails. Threads
// of this process cannot be stopped: compilations in process have no limit.
struct CompileTimeout {
  static constexpr double kFloor = 30, kFactor = 5, kFirst = 120;
  std::optional<double> fixed;  // seconds; none: adaptive
  // The limit per configuration, given the compile times (seconds per configuration) so far.
  double limit(std::vector<double> seconds) const;
};

// Compiles through the cache (when given) with a pool of threads.
class CompilePool {
 public:
  // With a process command (e.g. {"/usr/bin/ktune", "__compile"}), each thread hands its
  // compilations to a child process of its own that runs compile_worker_main(): some NVRTC
  // builds serialise compilations within one process (measured on the GPU host: 1 thread 72,
  // 16 threads 56 compilations/s), separate processes do not.
  CompilePool(std::size_t threads, std::shared_ptr<CompileCache> cache,
              std::vector<std::string> process_command = {});
  ~CompilePool();  // finishes queued work
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  std::shared_future<CompileResult> submit(CompileRequest request);
  // Queues a group at once, so that the threads share it out fairly (each takes its share of
  // what is queued, up to the batch limit) instead of taking each request as it arrives. One
  // future per request, in order.
  std::vector<std::shared_future<CompileResult>> submit(std::vector<CompileRequest> requests);
  std::size_t threads() const;
  // Requests compiled together at most (1: no batching). Default 16.
  void set_max_batch(std::size_t n);
  // Called on the pool's threads after each group of requests, before their results are
  // handed out; an empty function stops the calls. It must not throw.
  void set_observer(CompileObserver observer);
  // The compile processes' time limit (default: adaptive), and the limit per configuration now.
  void set_timeout(CompileTimeout timeout);
  double timeout_seconds() const;
  // Seconds the pool's threads spent compiling (cache hits excluded), summed over threads.
  double busy_seconds() const;
  // NVRTC compilations the pool ran (cache hits and shared in-flight submissions excluded).
  std::size_t compiles() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Entry of a compile process: reads requests on fd 3, answers on fd 4, until EOF or "quit".
int compile_worker_main();

// Compiles synchronously through the cache when given.
CompileResult compile_cached(const CompileRequest& request, CompileCache* cache);

}  // namespace ktune
