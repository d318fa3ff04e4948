// Recordings from ktune databases, kernels synthesized from recordings, where shipped
// recordings and replay jobs are found, and the replay backend (see ktune/replay.h).
#include "ktune/replay.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <thread>

#include "ktune/cutoff.h"
#include "ktune/error.h"
#include "ktune/input_file.h"
#include "ktune/instance.h"
#include "ktune/sample_stats.h"
#include "ktune/stored_spec.h"

namespace ktune {

using nlohmann::json;
namespace fs = std::filesystem;

// --- Recording --------------------------------------------------------------------------------

void Recording::reindex() {
  index_.clear();
  index_.reserve(trials.size());
  // A key recorded twice: the later entry wins, as later trials do in a database.
  for (std::size_t i = 0; i < trials.size(); ++i) index_[recording_key(trials[i].values)] = i;
}

const RecordedTrial* Recording::find(const std::vector<Value>& values) const {
  auto it = index_.find(recording_key(values));
  return it == index_.end() ? nullptr : &trials[it->second];
}

const RecordedTrial* Recording::optimum() const {
  const RecordedTrial* best = nullptr;
  for (const auto& t : trials)
    if (t.status == TrialStatus::kOk && std::isfinite(t.time_ms) &&
        (!best || t.time_ms < best->time_ms ||
         // Ties go to the smaller key, so the optimum does not hang on the order of trials.
         (t.time_ms == best->time_ms && recording_key(t.values) < recording_key(best->values))))
      best = &t;
  return best;
}

std::size_t Recording::count(TrialStatus status) const {
  return static_cast<std::size_t>(std::count_if(
      trials.begin(), trials.end(), [&](const RecordedTrial& t) { return t.status == status; }));
}

std::string Recording::problem_key() const { return ktune::problem_key(problem, problem_params); }

// --- Devices ----------------------------------------------------------------------------------

std::string arch_from_device_name(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // Longer names first where one contains another (A100 before A10, L40 before L4).
  static const std::pair<const char*, const char*> kKnown[] = {
      {"GH200", "sm_90"},  {"H100", "sm_90"}, {"H200", "sm_90"}, {"H800", "sm_90"},
      {"B200", "sm_100"},  {"A100", "sm_80"}, {"A800", "sm_80"}, {"RTX A", "sm_86"},
      {"A30", "sm_80"},    {"A40", "sm_86"},  {"A10", "sm_86"},  {"RTX 30", "sm_86"},
      {"RTX 40", "sm_89"}, {"L40", "sm_89"},  {"L4", "sm_89"},   {"RTX 20", "sm_75"},
      {"T4", "sm_75"},     {"V100", "sm_70"},
  };
  if (upper.find("NVIDIA") == std::string::npos && upper.find("TESLA") == std::string::npos &&
      upper.find("GEFORCE") == std::string::npos)
    return "";
  for (const auto& [pattern, arch] : kKnown)
    if (upper.find(pattern) != std::string::npos) return arch;
  return "";
}

DeviceLimits recording_limits(const Recording& r) {
  if (r.arch.rfind("sm_", 0) == 0) {
    try {
      return DeviceLimits::for_arch(compute_capability_of(r.arch));
    } catch (const Error&) {
      // An arch this ktune does not know: fall through to the defaults.
    }
  }
  return DeviceLimits{};
}

// --- ktune databases --------------------------------------------------------------------------

namespace {

std::string problem_text(const ProblemRecord& p) {
  return p.key.empty() ? "(no problem parameters)" : p.key;
}

// The kernel, device and problem of a recording, and its latest run.
struct Identity {
  std::string kernel;
  std::int64_t device_id = 0, problem_id = 0, kernel_id = 0, run_id = 0;
};
using Identities = std::map<std::tuple<std::string, std::int64_t, std::int64_t>, Identity>;

bool problem_matches(const ProblemRecord& problem, const RecordingQuery& query) {
  if (query.problem.empty()) return true;
  const json pj = json::parse(problem.json.empty() ? "{}" : problem.json, nullptr, false);
  bool match = pj.is_object();
  for (const auto& [name, value] : query.problem)
    match = match && pj.contains(name) && pj[name].is_number_integer() &&
            pj[name].get<std::int64_t>() == value;
  return match;
}

// The recordings (kernel, device, problem) whose runs the query matches.
Identities matching_recordings(Store& store, const RecordingQuery& query) {
  Identities found;
  for (const RunRecord& run :
       store.runs(query.kernel.empty() ? std::nullopt : std::optional(query.kernel))) {
    const auto kernel = store.kernel(run.kernel_id);
    const auto device = store.device(run.device_id);
    const auto problem = store.problem(run.problem_id);
    if (!kernel || !device || !problem) continue;
    if (!query.device.empty() && device->name != query.device) continue;
    if (!problem_matches(*problem, query)) continue;
    Identity& id = found[{kernel->name, run.device_id, run.problem_id}];
    if (run.id > id.run_id)
      id = {kernel->name, run.device_id, run.problem_id, run.kernel_id, run.id};
  }
  return found;
}

// The one recording found; none or several is the user's to resolve.
Identity only_recording(Store& store, const Identities& found, const std::string& path,
                        const RecordingQuery& query) {
  const std::string what = query.kernel.empty() ? "any kernel" : "kernel '" + query.kernel + "'";
  if (found.empty())
    throw Error(ErrorKind::kUsage,
                fmt::format("{}: no runs of {}{}{} in the database", path, what,
                            query.device.empty() ? "" : " on device '" + query.device + "'",
                            query.problem.empty() ? "" : " for the problem given"));
  if (found.size() > 1) {
    std::vector<std::string> choices;
    for (const auto& [key, id] : found)
      choices.push_back(fmt::format("{} [{}] on '{}'", id.kernel,
                                    problem_text(*store.problem(id.problem_id)),
                                    store.device(id.device_id)->name));
    throw Error(ErrorKind::kUsage,
                fmt::format("{}: {} recordings match ({}); choose one with the kernel name, "
                            "--problem or the device name",
                            path, found.size(), fmt::join(choices, "; ")));
  }
  return found.begin()->second;
}

void describe_device(const DeviceRecord& device, Recording& r) {
  r.device_name = device.name;
  r.sm_count = device.sm_count;
  r.memory_bytes = device.memory_bytes;
  r.cc_major = device.cc_major;
  r.cc_minor = device.cc_minor;
  if (device.arch.rfind("sm_", 0) == 0)
    r.arch = device.arch;
  else if (device.cc_major > 0)
    r.arch = fmt::format("sm_{}{}", device.cc_major, device.cc_minor);
  else
    r.arch = arch_from_device_name(device.name);
}

// The parameters from the kernel's stored spec, the problem from the problem's record (the
// spec's order first).
void read_space(const KernelRecord& kernel, const ProblemRecord& problem, const std::string& path,
                Recording& r) {
  const StoredSpec spec =
      StoredSpec::parse(kernel.spec_json, fmt::format("{}: kernel '{}'", path, kernel.name));
  if (spec.params.empty())
    throw Error(
        ErrorKind::kInput,
        fmt::format("{}: kernel '{}' has no parameter list in its spec_json", path, kernel.name));
  for (const auto& p : spec.params) {
    Parameter param;
    param.name = p.name;
    param.values = p.values;
    for (std::size_t i = 0; i < param.values.size(); ++i)
      if (param.values[i] == p.default_value) param.default_index = i;
    r.params.push_back(std::move(param));
  }
  const json pj = json::parse(problem.json.empty() ? "{}" : problem.json, nullptr, false);
  std::vector<std::string> order;
  for (const auto& p : spec.problem) order.push_back(p.name);
  if (pj.is_object())
    for (const auto& [name, v] : pj.items())
      if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  for (const auto& name : order) {
    if (!pj.is_object() || !pj.contains(name) || !pj[name].is_number_integer()) continue;
    r.problem_params.push_back({name, pj[name].get<std::int64_t>(), ""});
    r.problem[name] = pj[name].get<std::int64_t>();
  }
}

RecordedTrial recorded_trial(const TrialRecord& t, const std::string& key,
                             const std::vector<Parameter>& params, const std::string& path) {
  const json cj = json::parse(t.config_json.empty() ? "{}" : t.config_json, nullptr, false);
  RecordedTrial rt;
  for (const auto& p : params) {
    if (!cj.is_object() || !cj.contains(p.name))
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: trial {} ({}) has no value of '{}'", path, t.id, key, p.name));
    rt.values.push_back(value_from_json(cj[p.name]));
  }
  rt.status = t.status;
  rt.error = t.error;
  rt.samples_ms = t.samples_ms;
  rt.time_ms = t.time_ms;
  rt.time_min_ms = t.time_min_ms;
  rt.time_mean_ms = t.time_mean_ms;
  rt.time_spread = t.time_spread;
  rt.recorded_ms = t.time_ms;
  rt.cut = t.cut;
  rt.energy_j = t.energy_j;
  rt.power_w = t.power_w;
  rt.compile_ms = t.compile_ms;
  rt.eval_ms = t.compile_ms + t.eval_ms;
  return rt;
}

// The latest search trial of each configuration (re-timings are not what a search saw), in
// the order configurations were first tried.
void read_trials(Store& store, const Identity& id, const std::string& path, Recording& r) {
  std::vector<std::string> keys;
  std::map<std::string, TrialRecord> latest;
  for (auto& t : store.trials_for(id.kernel_id, id.device_id, id.problem_id)) {
    if (t.kind == TrialKind::kRetime) continue;
    if (!latest.count(t.config_key)) keys.push_back(t.config_key);
    latest[t.config_key] = std::move(t);
  }
  for (const auto& key : keys) r.trials.push_back(recorded_trial(latest[key], key, r.params, path));
}

}  // namespace

Recording read_db_recording(const std::string& path, const RecordingQuery& query) {
  Store store = Store::open(path, Store::Mode::kReadOnly);
  const Identity id = only_recording(store, matching_recordings(store, query), path, query);
  const KernelRecord kernel = *store.kernel(id.kernel_id);
  const DeviceRecord device = *store.device(id.device_id);
  const ProblemRecord problem = *store.problem(id.problem_id);

  Recording r;
  r.path = path;
  r.format = "ktune-db";
  r.kernel_name = kernel.name;
  r.source_hash = kernel.source_hash;
  r.space_hash = kernel.space_hash;
  describe_device(device, r);
  read_space(kernel, problem, path, r);
  read_trials(store, id, path, r);
  r.reindex();
  return r;
}

Recording read_recording(const std::string& path, const RecordingQuery& query) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(ErrorKind::kInput, fmt::format("{}: no such file", path));
  if (!fs::is_directory(path, ec)) check_input_file(path, "", kMaxRecordingBytes);
  char head[16] = {0};
  {
    std::ifstream in(path, std::ios::binary);
    in.read(head, sizeof(head));
  }
  if (std::memcmp(head, "SQLite format 3", 16) == 0) return read_db_recording(path, query);
  return read_kt_cache(path, query.device);
}

// --- Synthesized kernels ----------------------------------------------------------------------

namespace {
// A recorded kernel is never run, so nothing is ever compared with this reference.
int no_reference(const ktune_reference_ctx*, char*, size_t) { return 0; }
}  // namespace

KernelSpec kernel_from_recording(const Recording& r) {
  KernelSpec k;
  k.name = r.kernel_name;
  k.description =
      fmt::format("known only from recorded measurements ({}, measured on {})",
                  r.format == "ktune-db" ? "ktune database" : "Kernel Tuner cache", r.device_name);
  // The same placeholder for every recording of a kernel, so its replays share a kernel version.
  k.source = fmt::format(
      "// {}: no source; a kernel known only from recorded measurements cannot be compiled\n",
      r.kernel_name);
  k.source_name = r.kernel_name + ".replay";
  k.entry = r.kernel_name;
  k.params = r.params;
  for (auto& p : k.params)
    p.default_index = std::min(p.default_index, p.values.empty() ? 0 : p.values.size() - 1);
  k.problem = r.problem_params;
  k.buffers.push_back({"out", ElemType::kF32, BufferRole::kOutput, "1", "zero", 0, 0});
  k.reference = &no_reference;
  k.origin = "recording " + r.path;
  k.validate();
  return k;
}

// --- Shipped data -----------------------------------------------------------------------------

namespace {

std::mutex data_program_mutex;
fs::path data_program;  // use_shipped_data_of(); empty: the running executable

fs::path shipped_data_program() {
  {
    std::lock_guard lock(data_program_mutex);
    if (!data_program.empty()) return data_program;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

std::vector<fs::path> data_dirs(const char* env, const char* installed_subdir,
                                const char* source_dir) {
  std::vector<fs::path> out;
  if (const char* e = std::getenv(env); e != nullptr && *e != '\0') {
    std::string_view rest = e;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon != 0) out.emplace_back(std::string(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
    return out;
  }
  // Installed: <prefix>/bin/ktune next to <prefix>/share/ktune/... (cmake --install), or
  // <prefix>/lib/ktune/... (a wheel: pip removes that folder whole, with the Optuna module in
  // it); otherwise the source tree this binary was built from.
  if (const fs::path program = shipped_data_program(); !program.empty()) {
    const fs::path prefix = program.parent_path().parent_path();
    for (const char* dir : {KTUNE_INSTALL_DATADIR, KTUNE_INSTALL_LIBDIR}) {
      std::error_code ec;
      const fs::path installed = prefix / dir / "ktune" / installed_subdir;
      if (fs::is_directory(installed, ec)) return {installed};
    }
  }
  return {fs::path(source_dir)};
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), std::string::npos, tail) == 0;
}

}  // namespace

void use_shipped_data_of(const fs::path& program) {
  std::error_code ec;
  fs::path resolved = fs::canonical(program, ec);
  std::lock_guard lock(data_program_mutex);
  data_program = ec ? program : std::move(resolved);
}

std::vector<fs::path> recording_dirs() {
  return data_dirs("KTUNE_RECORDINGS", "recordings", KTUNE_SHIPPED_RECORDINGS_DIR);
}

std::vector<fs::path> replay_job_dirs() {
  return data_dirs("KTUNE_REPLAY_JOBS", "configs/replay", KTUNE_SHIPPED_REPLAY_JOBS_DIR);
}

std::string recording_file_name(const std::string& kernel, const std::string& device,
                                const std::string& problem_key) {
  std::string dev = device;
  for (auto& c : dev)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::strchr("._=,+", c) == nullptr) c = '_';
  return fmt::format("{}-{}-{}.json.gz", kernel, dev, problem_key);
}

std::optional<fs::path> find_shipped_recording(const std::string& kernel,
                                               const std::optional<std::string>& problem_key) {
  for (const fs::path& dir : recording_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files, matches;
    for (const auto& e : fs::directory_iterator(dir, ec)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::string stem = f.filename().string();
      if (ends_with(stem, ".json.gz"))
        stem.resize(stem.size() - 8);
      else if (ends_with(stem, ".json"))
        stem.resize(stem.size() - 5);
      else
        continue;
      if (stem.rfind(kernel + "-", 0) != 0) continue;
      if (problem_key && !ends_with(stem, "-" + *problem_key)) continue;
      matches.push_back(f);
    }
    if (matches.size() == 1) return matches.front();
    if (matches.empty()) continue;
    std::optional<fs::path> best;
    std::size_t most = 0;
    for (const fs::path& f : matches) {
      const std::size_t n = read_kt_cache(f.string()).trials.size();
      if (!best || n > most) best = f, most = n;
    }
    return best;
  }
  return std::nullopt;
}

std::optional<fs::path> replay_job_for(const std::string& kernel) {
  for (const fs::path& dir : replay_job_dirs()) {
    std::error_code ec;
    const fs::path p = dir / (kernel + ".toml");
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

KernelSpec recorded_kernel(const Recording& r, std::vector<std::string>& notes) {
  KernelSpec base = kernel_from_recording(r);
  const auto path = replay_job_for(r.kernel_name);
  if (!path) {
    notes.push_back(fmt::format(
        "warning: no restrictions known for {} (no {}.toml among the replay jobs): the space is "
        "the Cartesian product of the recorded values; configurations missing from the recording "
        "are answered invalid",
        r.kernel_name, r.kernel_name));
    return base;
  }
  // A job that does not read is an error to fix, not a reason to search another space.
  const JobFile job = load_job(path->string());
  try {
    KernelSpec k = apply_job(base, job);
    (void)make_space(k, k.make_problem(r.problem), recording_limits(r));
    notes.push_back(fmt::format("restrictions of {} from {}", r.kernel_name, path->string()));
    return k;
  } catch (const Error& e) {
    // A recording of another version of the kernel (other parameters): the job's restrictions
    // cannot describe it, the recorded configurations can.
    auto list = std::make_shared<KernelSpec::ConfigList>();
    for (const auto& p : r.params) list->names.push_back(p.name);
    for (const auto& t : r.trials) list->rows.push_back(t.values);
    base.listed = std::move(list);
    notes.push_back(
        fmt::format("{}: the replay job {} does not fit this recording ({}); its {} recorded "
                    "configurations define the space",
                    r.path, path->string(), e.what(), r.trials.size()));
    return base;
  }
}

JobFile pin_unrecorded_params(const KernelSpec& known, const Recording& r,
                              std::vector<std::string>& notes) {
  JobFile pin;
  for (const Parameter& q : known.params)
    if (std::none_of(r.params.begin(), r.params.end(),
                     [&](const Parameter& p) { return p.name == q.name; })) {
      pin.space.emplace_back(q.name, std::vector<Value>{q.values.at(q.default_index)});
      notes.push_back(
          fmt::format("{}: parameter '{}' of kernel '{}' is not in the recording: kept at {}",
                      r.path, q.name, r.kernel_name, q.values.at(q.default_index).to_string()));
    }
  return pin;
}

void fit_to_recording(KernelSpec& kernel, const Recording& r, std::vector<std::string>& notes) {
  const JobFile pin = pin_unrecorded_params(kernel, r, notes);
  if (pin.space.empty()) return;  // the recording is of this version of the kernel
  kernel = apply_job(kernel, pin);
  for (Parameter& q : kernel.params) {
    const auto rec = std::find_if(r.params.begin(), r.params.end(),
                                  [&](const Parameter& p) { return p.name == q.name; });
    if (rec == r.params.end()) continue;
    const Value def = q.values.at(q.default_index);
    std::vector<Value> kept;
    for (const Value& v : q.values)
      if (std::find(rec->values.begin(), rec->values.end(), v) != rec->values.end())
        kept.push_back(v);
    if (kept.empty() || kept.size() == q.values.size()) continue;
    const auto d = std::find(kept.begin(), kept.end(), def);
    q.default_index = d == kept.end() ? 0 : std::size_t(d - kept.begin());
    q.values = std::move(kept);
  }
}

ReplayTarget replay_target(const Recording& r, const Registry* registry, const JobFile* job) {
  ReplayTarget t;
  t.limits = recording_limits(r);
  bool registered = registry != nullptr && registry->contains(r.kernel_name);
  if (registered) {
    const KernelSpec& known = registry->get(r.kernel_name);
    for (const auto& p : r.params)
      if (std::none_of(known.params.begin(), known.params.end(),
                       [&](const Parameter& q) { return q.name == p.name; })) {
        t.notes.push_back(fmt::format(
            "{}: kernel '{}' has no parameter '{}': replaying it as a kernel of its own", r.path,
            r.kernel_name, p.name));
        registered = false;
        break;
      }
  }
  if (registered) {
    // The registered kernel over exactly the recorded values: its restrictions and device
    // limits then select what was measured. A parameter the kernel gained after the recording
    // was made stays at its default, the value that keeps the kernel as it was measured.
    const KernelSpec& known = registry->get(r.kernel_name);
    JobFile narrow = pin_unrecorded_params(known, r, t.notes);
    for (const auto& p : r.params) narrow.space.emplace_back(p.name, p.values);
    t.kernel = apply_job(known, narrow);
    if (job) t.kernel = apply_job(t.kernel, *job);
  } else {
    t.kernel = job ? apply_job(kernel_from_recording(r), *job) : recorded_kernel(r, t.notes);
  }
  t.problem = t.kernel.make_problem(r.problem);
  return t;
}

// --- The backend ------------------------------------------------------------------------------

ReplayBackend::ReplayBackend(std::shared_ptr<const Recording> recording)
    : recording_(std::move(recording)) {
  if (!recording_) throw Error(ErrorKind::kInternal, "replay backend without a recording");
}

DeviceInfo ReplayBackend::device() const {
  DeviceInfo d;
  d.name = recording_->device_name;
  d.arch = recording_->arch;
  d.cc_major = recording_->cc_major;
  d.cc_minor = recording_->cc_minor;
  d.limits = recording_limits(*recording_);
  return d;
}

void ReplayBackend::prepare(const KernelInstance& instance, const MeasureOptions&) {
  bind(instance.space());
}

void ReplayBackend::bind(const SearchSpace& space) {
  const Recording& r = *recording_;
  std::vector<std::size_t> columns;
  for (const auto& p : r.params) {
    const auto i = space.find_param(p.name);
    if (!i)
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: the recording has parameter '{}', which kernel '{}' does not",
                              r.path, p.name, r.kernel_name));
    columns.push_back(*i);
  }
  for (std::size_t j = 0; j < space.size(); ++j) {
    if (std::find(columns.begin(), columns.end(), j) != columns.end()) continue;
    // A parameter the recording never varied cannot tell configurations apart; one with a single
    // value changes nothing.
    if (space.params()[j].values.size() > 1)
      throw Error(ErrorKind::kInput,
                  fmt::format("{}: parameter '{}' of kernel '{}' is not in the recording", r.path,
                              space.params()[j].name, r.kernel_name));
  }
  space_ = &space;
  columns_ = std::move(columns);
}

const RecordedTrial* ReplayBackend::find(const Config& config) const {
  if (space_ == nullptr)
    throw Error(ErrorKind::kInternal, "replay backend: evaluate() before prepare()");
  std::vector<Value> values;
  values.reserve(columns_.size());
  for (std::size_t c : columns_) values.push_back(space_->value(config, c));
  return recording_->find(values);
}

Measurement ReplayBackend::evaluate(const Config& config, const CompileResult*) {
  bool recorded = false;
  Measurement m = look_up(config, recorded);
  if (delay_ms_ > 0 && recorded)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms_));
  return m;
}

void ReplayBackend::submit(const Config& config, const CompileResult*) {
  bool recorded = false;
  Measurement m = look_up(config, recorded);
  Clock::time_point done = Clock::now();
  if (delay_ms_ > 0 && recorded) {
    done = std::max(done, device_free_) + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double, std::milli>(delay_ms_));
    device_free_ = done;
  }
  submitted_.emplace_back(done, std::move(m));
}

Measurement ReplayBackend::collect() {
  if (submitted_.empty())
    throw Error(ErrorKind::kInternal, "replay backend: collect() with nothing submitted");
  std::this_thread::sleep_until(submitted_.front().first);
  Measurement m = std::move(submitted_.front().second);
  submitted_.pop_front();
  return m;
}

Measurement ReplayBackend::look_up(const Config& config, bool& recorded, bool may_cut) const {
  Measurement m;
  m.from_cache = true;
  const RecordedTrial* t = find(config);
  recorded = t != nullptr;
  if (t == nullptr) {
    m.status = TrialStatus::kInvalid;
    m.error = "not in the recording";
    return m;
  }
  m.status = t->status;
  if (t->status != TrialStatus::kOk)
    m.error = fmt::format("replayed: recorded as {}", to_string(t->status));
  m.eval_ms = t->eval_ms;
  if (t->status == TrialStatus::kOk) {
    m.samples_ms = t->samples_ms;
    m.time_ms = t->time_ms;
    m.time_min_ms = t->time_min_ms;
    m.time_mean_ms = t->time_mean_ms;
    m.time_spread = t->time_spread;
    m.cut = t->cut;  // cut where it was recorded
    if (!t->cut) {
      m.energy_j = t->energy_j;
      m.power_w = t->power_w;
      m.energy_source = std::isfinite(t->energy_j) ? "recorded" : "not in the recording";
    }
    // As the GPU worker: only where more samples were recorded than the cut-off's first ones.
    if (may_cut && t->samples_ms.size() > MeasureOptions::kCutoffSamples &&
        cut_off(t->samples_ms, cut_above_ms_)) {
      m.samples_ms.resize(MeasureOptions::kCutoffSamples);
      const SampleStats st = sample_stats(m.samples_ms);
      m.time_ms = st.median;
      m.time_min_ms = st.min;
      m.time_mean_ms = st.mean;
      m.time_spread = st.spread;
      m.cut = true;
      m.energy_j = m.power_w = std::nan("");
    }
    m.timed_ms = std::accumulate(m.samples_ms.begin(), m.samples_ms.end(), 0.0);
    m.gpu_ms = m.timed_ms;
  }
  return m;
}

std::vector<Measurement> ReplayBackend::retime(const std::vector<RetimeCandidate>& candidates,
                                               int) {
  // Recorded values cannot be measured again; they are what a re-timing would have found.
  std::vector<Measurement> out;
  for (const auto& c : candidates) {
    bool recorded = false;
    out.push_back(look_up(c.config, recorded, false));
    if (delay_ms_ > 0 && recorded)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms_));
  }
  return out;
}

std::uint64_t ReplayBackend::missing(const SearchSpace& space) {
  bind(space);
  std::uint64_t n = 0;
  std::uint64_t visited = 0;
  space.for_each_valid([&](const Config& c) {
    if (find(c) == nullptr) ++n;
    return ++visited < kValidCountLimit;
  });
  return n;
}

TransferSource transfer_source(const Recording& recording) {
  TransferSource s;
  s.name = recording.device_name.empty() ? recording.path : recording.device_name;
  for (const auto& p : recording.params) s.params.push_back(p.name);
  for (const auto& t : recording.trials) {
    s.configs.push_back(t.values);
    s.times.push_back(t.status == TrialStatus::kOk && std::isfinite(t.time_ms)
                          ? t.time_ms
                          : std::numeric_limits<double>::quiet_NaN());
  }
  return s;
}

}  // namespace ktune
