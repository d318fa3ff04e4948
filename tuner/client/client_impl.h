// The state behind ktune::Client (internal, not API): the connection, the device, and the
// caches of answers, kernel versions, binaries and loaded kernels, under one mutex.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/database.h"
#include "client/stored_kernel.h"
#include "ktune/client.h"
#include "ktune/compiler.h"
#include "ktune/selector.h"

namespace ktune {

namespace detail {

// A device of the client's major that has bests.
using DeviceRow = DeviceIdentity;

// One best row with what the lookup compares: its device and its problem.
struct Candidate {
  std::int64_t kernel_id = 0, device_id = 0, problem_id = 0, trial_id = 0;
  int rank = 0;  // 0: the most recently set best; ties in the lookup
  const DeviceRow* device = nullptr;
  Problem problem;
  bool problem_ok = false;  // its problem could be read
};

// The newest selector of one device (ktune/selector.h).
struct SelectorEntry {
  std::int64_t id = 0, kernel_id = 0, device_id = 0;
  const DeviceRow* device = nullptr;
  Selector selector;
};

// Everything the lookup needs about one kernel name, read once.
struct KernelEntry {
  std::vector<SelectorEntry> selectors;  // of this device's major, newest per device
  std::vector<Candidate>
      candidates;  // of this device's major; newest version per (device, problem)
  std::unordered_map<std::int64_t, DeviceRow> devices;
  bool defaults_loaded = false;
  std::vector<std::pair<std::string, std::int64_t>> problem_defaults;  // newest version's
};

// Whether a CUBIN built for `binary_arch` runs on `device`: the same arch; an arch-specific
// one ("sm_90a") on exactly that compute capability; a family one ("sm_100f") never (not
// modelled); else the same major and a minor at or below the device's.
bool cubin_runs_on(const std::string& binary_arch, const ClientDevice& device);

}  // namespace detail

struct Client::Impl {
  Impl(const std::filesystem::path& path, ClientDevice d, ClientOptions o);

  detail::KernelEntry& entry(const std::string& kernel);
  const std::vector<std::pair<std::string, std::int64_t>>& problem_defaults(
      const std::string& kernel, detail::KernelEntry& e);
  bool kernel_exists(const std::string& kernel);
  void load_selectors(const std::string& kernel, detail::KernelEntry& e);
  // The selector's pick for `query` as a best row: its trial at the family's problem nearest to
  // the query where it was measured. nullopt where the selector does not cover the query or
  // the trial is not there.
  std::optional<detail::Candidate> selector_answer(const std::string& kernel,
                                                   const detail::SelectorEntry& s,
                                                   const Problem& query);
  LookupResult lookup(const std::string& kernel, const Problem& asked,
                      const LookupOptions& options);
  std::shared_ptr<BestConfig> details(const detail::Candidate& c, const std::string& kernel,
                                      const Problem& query, DeviceMatch device_match,
                                      ProblemMatch problem_match, double distance,
                                      const EnergyPolicy& policy);
  // The trial `policy` chooses among the candidate's problem's Pareto set; the candidate's own
  // (the stored best) where there is none, with the reason in `note`.
  std::int64_t policy_trial(const detail::Candidate& c, const EnergyPolicy& policy,
                            std::string& note);
  std::string no_match_message(const std::string& kernel, const Problem& query,
                               const LookupOptions& options);

  ClientDevice device;
  std::vector<Value> limits;  // device limits in kLimitNames order
  ClientOptions options;
  detail::Database db;
  std::unique_ptr<CompileCache> disk_cache;

  std::mutex mutex;
  std::unordered_map<std::string, detail::KernelEntry> kernels;
  std::unordered_map<std::int64_t, std::shared_ptr<const detail::StoredKernel>> stored;
  std::unordered_map<std::string, LookupResult> answers;
  std::unordered_map<std::string, std::shared_ptr<const KernelBinary>> binaries;
  std::unordered_map<std::string, std::shared_ptr<const LoadedKernel>> loaded;
};

}  // namespace ktune
