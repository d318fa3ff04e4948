// ktune::Store on SQLite: opening (with the refusals of docs/database.md), migrations, and
// the reads and writes of devices, kernels, problems, runs, trials, bests and binaries.
#include "ktune/store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "ktune/error.h"
#include "store/merge.h"
#include "store/migrate.h"
#include "store/pareto.h"

namespace ktune {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using detail::kClosedDeadRun;

std::int64_t unix_seconds() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

// SQLite has no NaN: NULL stands for "not measured" in every REAL column.
void bind_real(SQLite::Statement& q, int index, double value) {
  if (std::isnan(value)) {
    q.bind(index);
  } else {
    q.bind(index, value);
  }
}

// A REAL column's value; NaN for NULL and for a text or blob a damaged row holds instead.
double column_real(SQLite::Statement& q, int index) {
  SQLite::Column c = q.getColumn(index);
  return c.isInteger() || c.isFloat() ? c.getDouble() : kNaN;
}

// An energy or a power is stored where it is a finite number above zero, else NULL.
double usable_energy(double v) { return std::isfinite(v) && v > 0 ? v : kNaN; }

// SQL that holds for a trial `t` whose time can be a best: a number above zero and finite
// (9e999 is SQLite's +Inf); not NULL, text or a blob.
constexpr const char* kUsableTime =
    "typeof(t.time_ms) IN ('integer', 'real') AND t.time_ms > 0 AND t.time_ms < 9e999";
// A trial's value of its run's objective that can rank it (schema 10): a finite number above 0.
constexpr const char* kUsableObjective =
    "(typeof(t.objective) IN ('integer', 'real') AND t.objective > 0 AND t.objective < 9e999)";

// SQL that holds for a best row whose trial's time can be a best: a damaged one never is.
std::string usable_best() {
  return std::string("trial_id IN (SELECT t.id FROM trials t WHERE t.id = best.trial_id AND ") +
         kUsableTime + ")";
}

std::string samples_to_json(const std::vector<double>& samples) {
  nlohmann::json array = nlohmann::json::array();
  for (double s : samples) {
    if (std::isnan(s)) {
      array.push_back(nullptr);
    } else {
      array.push_back(s);
    }
  }
  return array.dump();
}

std::vector<double> samples_from_json(const std::string& text) {
  std::vector<double> samples;
  for (const nlohmann::json& s : nlohmann::json::parse(text)) {
    samples.push_back(s.is_null() ? kNaN : s.get<double>());
  }
  return samples;
}

// Resets a cached statement when the caller is done with it: a SELECT left mid-way would keep
// the connection's read transaction (and its stale WAL snapshot) open.
class Cached {
 public:
  explicit Cached(SQLite::Statement& statement) : statement_(&statement) {}
  ~Cached() {
    statement_->tryReset();
    try {
      statement_->clearBindings();  // drops copies of large bound texts (compile logs, cubins)
    } catch (...) {
    }
  }
  Cached(const Cached&) = delete;
  Cached& operator=(const Cached&) = delete;
  SQLite::Statement* operator->() const { return statement_; }
  SQLite::Statement& operator*() const { return *statement_; }

 private:
  SQLite::Statement* statement_;
};

constexpr const char* kDeviceColumns =
    "id, name, arch, cc_major, cc_minor, sm_count, memory_bytes, l2_bytes, driver_version, "
    "nvrtc_version";
constexpr const char* kKernelColumns =
    "id, name, source_hash, space_hash, source, entry, spec_json";
constexpr const char* kProblemColumns = "id, kernel_name, key, json";
constexpr const char* kRunColumns =
    "id, kernel_id, device_id, problem_id, backend, strategy, strategy_options, budget, status, "
    "started_at, finished_at, ktune_version, nvrtc_version, driver_version, host, command_line, "
    "seed, summary, replayed, flush_l2, boot_id, pid, process_start, heartbeat_unix, "
    "strategy_chosen, objective, objective_higher_is_better";
// The order read_trial and add_trial use; id comes first and is not inserted.
constexpr const char* kTrialColumns =
    "id, run_id, kernel_id, device_id, problem_id, config_key, config_json, status, error, "
    "time_ms, time_min_ms, time_mean_ms, time_spread, sample_count, samples_ms, gbps, gflops, "
    "registers, local_bytes, spill_bytes, static_shared_bytes, dynamic_shared_bytes, "
    "max_threads_per_block, occupancy, arch, compile_options, compile_log, cubin_hash, "
    "compile_ms, eval_ms, created_at, kind, l2_flushed, rank_ms, cut, objective, sm_clock_mhz, "
    "temperature_c, power_w, energy_j";
constexpr const char* kBestColumns =
    "kernel_id, device_id, problem_id, trial_id, kernel_name, problem_key, updated_at, "
    "objective, objective_higher_is_better";

DeviceRecord read_device(SQLite::Statement& q) {
  DeviceRecord d;
  int c = 0;
  d.id = q.getColumn(c++).getInt64();
  d.name = q.getColumn(c++).getString();
  d.arch = q.getColumn(c++).getString();
  d.cc_major = q.getColumn(c++).getInt();
  d.cc_minor = q.getColumn(c++).getInt();
  d.sm_count = q.getColumn(c++).getInt();
  d.memory_bytes = q.getColumn(c++).getInt64();
  d.l2_bytes = q.getColumn(c++).getInt64();
  d.driver_version = q.getColumn(c++).getInt();
  d.nvrtc_version = q.getColumn(c++).getString();
  return d;
}

KernelRecord read_kernel(SQLite::Statement& q) {
  KernelRecord k;
  int c = 0;
  k.id = q.getColumn(c++).getInt64();
  k.name = q.getColumn(c++).getString();
  k.source_hash = q.getColumn(c++).getString();
  k.space_hash = q.getColumn(c++).getString();
  k.source = q.getColumn(c++).getString();
  k.entry = q.getColumn(c++).getString();
  k.spec_json = q.getColumn(c++).getString();
  return k;
}

ProblemRecord read_problem(SQLite::Statement& q) {
  ProblemRecord p;
  int c = 0;
  p.id = q.getColumn(c++).getInt64();
  p.kernel_name = q.getColumn(c++).getString();
  p.key = q.getColumn(c++).getString();
  p.json = q.getColumn(c++).getString();
  return p;
}

RunRecord read_run(SQLite::Statement& q) {
  RunRecord r;
  int c = 0;
  r.id = q.getColumn(c++).getInt64();
  r.kernel_id = q.getColumn(c++).getInt64();
  r.device_id = q.getColumn(c++).getInt64();
  r.problem_id = q.getColumn(c++).getInt64();
  r.backend = q.getColumn(c++).getString();
  r.strategy = q.getColumn(c++).getString();
  r.strategy_options = q.getColumn(c++).getString();
  r.budget = q.getColumn(c++).getString();
  const std::string status = q.getColumn(c++).getString();
  // The schema's triggers admit only the four names.
  r.status = run_status_from_string(status).value_or(RunStatus::kFailed);
  r.started_at = q.getColumn(c++).getString();
  r.finished_at = q.getColumn(c++).getString();
  r.ktune_version = q.getColumn(c++).getString();
  r.nvrtc_version = q.getColumn(c++).getString();
  r.driver_version = q.getColumn(c++).getInt();
  r.host = q.getColumn(c++).getString();
  r.command_line = q.getColumn(c++).getString();
  r.seed = static_cast<std::uint64_t>(q.getColumn(c++).getInt64());
  r.summary = q.getColumn(c++).getString();
  r.replayed = q.getColumn(c++).getInt() != 0;
  r.flush_l2 = flush_l2_from_string(q.getColumn(c++).getString());
  r.boot_id = q.getColumn(c++).getString();
  r.pid = q.getColumn(c++).getInt64();
  r.process_start = q.getColumn(c++).getInt64();
  r.heartbeat_unix = q.getColumn(c++).getInt64();
  r.strategy_chosen = q.getColumn(c++).getString();
  r.objective = q.getColumn(c++).getString();
  r.objective_higher_is_better = q.getColumn(c++).getInt() != 0;
  // A run is only as live as its process.
  if (r.status == RunStatus::kRunning &&
      !ProcessIdentity{r.host, r.boot_id, r.pid, r.process_start}.alive(r.heartbeat_unix))
    r.status = RunStatus::kInterrupted;
  return r;
}

TrialRecord read_trial(SQLite::Statement& q) {
  TrialRecord t;
  int c = 0;
  t.id = q.getColumn(c++).getInt64();
  t.run_id = q.getColumn(c++).getInt64();
  t.kernel_id = q.getColumn(c++).getInt64();
  t.device_id = q.getColumn(c++).getInt64();
  t.problem_id = q.getColumn(c++).getInt64();
  t.config_key = q.getColumn(c++).getString();
  t.config_json = q.getColumn(c++).getString();
  // Statuses are only ever appended, so a value this ktune does not name is kept as is.
  t.status = static_cast<TrialStatus>(q.getColumn(c++).getInt());
  t.error = q.getColumn(c++).getString();
  t.time_ms = column_real(q, c++);
  t.time_min_ms = column_real(q, c++);
  t.time_mean_ms = column_real(q, c++);
  t.time_spread = column_real(q, c++);
  t.sample_count = q.getColumn(c++).getInt();
  t.samples_ms = samples_from_json(q.getColumn(c++).getString());
  t.gbps = column_real(q, c++);
  t.gflops = column_real(q, c++);
  t.registers = q.getColumn(c++).getInt();
  t.local_bytes = q.getColumn(c++).getInt();
  t.spill_bytes = q.getColumn(c++).getInt();
  t.static_shared_bytes = q.getColumn(c++).getInt();
  t.dynamic_shared_bytes = q.getColumn(c++).getInt();
  t.max_threads_per_block = q.getColumn(c++).getInt();
  t.occupancy = column_real(q, c++);
  t.arch = q.getColumn(c++).getString();
  t.compile_options = q.getColumn(c++).getString();
  t.compile_log = q.getColumn(c++).getString();
  t.cubin_hash = q.getColumn(c++).getString();
  t.compile_ms = column_real(q, c++);
  t.eval_ms = column_real(q, c++);
  t.created_at = q.getColumn(c++).getString();
  // Kinds are only ever appended, so a value this ktune does not name is kept as is.
  t.kind = static_cast<TrialKind>(q.getColumn(c++).getInt());
  t.l2_flushed = q.getColumn(c++).getInt();
  t.rank_ms = column_real(q, c++);
  t.cut = q.getColumn(c++).getInt() != 0;
  t.objective = column_real(q, c++);
  t.sm_clock_mhz = q.getColumn(c++).getInt();
  t.temperature_c = q.getColumn(c++).getInt();
  t.power_w = column_real(q, c++);
  t.energy_j = column_real(q, c++);
  return t;
}

BestRecord read_best(SQLite::Statement& q) {
  BestRecord b;
  int c = 0;
  b.kernel_id = q.getColumn(c++).getInt64();
  b.device_id = q.getColumn(c++).getInt64();
  b.problem_id = q.getColumn(c++).getInt64();
  b.trial_id = q.getColumn(c++).getInt64();
  b.kernel_name = q.getColumn(c++).getString();
  b.problem_key = q.getColumn(c++).getString();
  b.updated_at = q.getColumn(c++).getString();
  b.objective = q.getColumn(c++).getString();
  b.objective_higher_is_better = q.getColumn(c++).getInt() != 0;
  return b;
}

std::string select_from(const char* columns, const char* table, const std::string& rest) {
  return std::string("SELECT ") + columns + " FROM " + table + " " + rest;
}

}  // namespace

struct Store::Impl {
  // The connection reads URIs (SQLITE_OPEN_URI), so that a merge can attach its source read-only
  // (detail::sqlite_uri); `uri`, where given, is what it opens instead of the file's name.
  Impl(const std::filesystem::path& p, Mode m, std::chrono::milliseconds busy_timeout,
       const std::string& uri = {})
      : path(p),
        where(p.string()),
        mode(m),
        db(uri.empty() ? detail::sqlite_file_name(p) : uri,
           (m == Mode::kReadOnly ? SQLite::OPEN_READONLY
                                 : SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE) |
               SQLite::OPEN_URI,
           static_cast<int>(busy_timeout.count())) {}

  // One prepared statement per SQL text, prepared on first use.
  Cached statement(const std::string& sql) {
    auto it = statements.find(sql);
    if (it == statements.end()) {
      it = statements.emplace(sql, std::make_unique<SQLite::Statement>(db, sql)).first;
    }
    it->second->tryReset();
    return Cached(*it->second);
  }

  // Runs one public operation, turning SQLite failures into ktune errors with their context.
  template <typename F>
  auto guard(const char* op, F&& body) -> decltype(body()) {
    try {
      return body();
    } catch (const SQLite::Exception& e) {
      throw detail::database_error(where + ": " + op, e, mode == Mode::kReadOnly);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorKind::kDatabase,
                  where + ": " + op + ": unreadable samples_ms (" + e.what() + ")");
    }
  }

  // Refuse before touching SQLite, so a read-only store provably never writes.
  void require_writable(const char* op) const {
    if (mode == Mode::kReadOnly) {
      throw Error(ErrorKind::kDatabase, where + ": " + op + ": database is open read-only");
    }
  }

  // The id of a device or problem by its identity; nullopt where there is none.
  std::optional<std::int64_t> device_id(const DeviceRecord& device) {
    Cached id = statement(
        "SELECT id FROM devices WHERE name = ? AND arch = ? AND sm_count = ? AND memory_bytes = ?");
    id->bind(1, device.name);
    id->bind(2, device.arch);
    id->bind(3, device.sm_count);
    id->bind(4, device.memory_bytes);
    if (!id->executeStep()) return std::nullopt;
    return id->getColumn(0).getInt64();
  }
  std::optional<std::int64_t> problem_id(const std::string& kernel_name, const std::string& key) {
    Cached id = statement("SELECT id FROM problems WHERE kernel_name = ? AND key = ?");
    id->bind(1, kernel_name);
    id->bind(2, key);
    if (!id->executeStep()) return std::nullopt;
    return id->getColumn(0).getInt64();
  }

  std::optional<TrialRecord> trial(std::int64_t id) {
    Cached q = statement(select_from(kTrialColumns, "trials", "WHERE id = ?"));
    q->bind(1, id);
    if (!q->executeStep()) return std::nullopt;
    return read_trial(*q);
  }

  std::optional<DeviceRecord> device(std::int64_t id) {
    Cached q = statement(select_from(kDeviceColumns, "devices", "WHERE id = ?"));
    q->bind(1, id);
    if (!q->executeStep()) return std::nullopt;
    return read_device(*q);
  }

  std::optional<KernelRecord> kernel(std::int64_t id) {
    Cached q = statement(select_from(kKernelColumns, "kernels", "WHERE id = ?"));
    q->bind(1, id);
    if (!q->executeStep()) return std::nullopt;
    return read_kernel(*q);
  }

  void fill_best(BestRecord& b) {
    // Foreign keys guarantee all three rows where ktune wrote the file; a damaged one may lack
    // them.
    const auto missing = [&](const char* what, std::int64_t id) {
      return Error(ErrorKind::kDatabase, where + ": damaged database: the best of " +
                                             b.kernel_name + " [" + b.problem_key + "] names " +
                                             what + " " + std::to_string(id) +
                                             ", which it does not hold");
    };
    auto t = trial(b.trial_id);
    if (!t) throw missing("trial", b.trial_id);
    auto d = device(b.device_id);
    if (!d) throw missing("device", b.device_id);
    auto k = kernel(b.kernel_id);
    if (!k) throw missing("kernel version", b.kernel_id);
    b.trial = std::move(*t);
    b.device = std::move(*d);
    b.kernel = std::move(*k);
  }

  std::vector<TrialRecord> trials(const std::string& sql, std::int64_t a) {
    Cached q = statement(sql);
    q->bind(1, a);
    std::vector<TrialRecord> out;
    while (q->executeStep()) out.push_back(read_trial(*q));
    return out;
  }

  // Runs whose row says running but whose process is gone were killed: they are written down
  // as interrupted, finished at their last trial (or their start).
  void close_dead_runs() {
    std::vector<std::int64_t> dead;
    {
      Cached q = statement(
          "SELECT id, host, boot_id, pid, process_start, heartbeat_unix FROM runs "
          "WHERE status = 'running'");
      while (q->executeStep()) {
        const ProcessIdentity p{q->getColumn(1).getString(), q->getColumn(2).getString(),
                                q->getColumn(3).getInt64(), q->getColumn(4).getInt64()};
        if (!p.alive(q->getColumn(5).getInt64())) dead.push_back(q->getColumn(0).getInt64());
      }
    }
    for (const std::int64_t id : dead) {
      Cached q = statement(
          "UPDATE runs SET status = 'interrupted', summary = ?2, finished_at = coalesce("
          "(SELECT max(created_at) FROM trials WHERE run_id = ?1), started_at) "
          "WHERE id = ?1 AND status = 'running'");
      q->bind(1, id);
      q->bind(2, kClosedDeadRun);
      q->exec();
    }
  }

  // The latest search (or warm-start) trial of a configuration: what resume answers with.
  std::optional<TrialRecord> latest_trial(std::int64_t kernel_id, std::int64_t device_id,
                                          std::int64_t problem_id, const std::string& config_key,
                                          bool replayed) {
    // Walks the (kernel, device, problem, config_key) index from the newest trial, passing over
    // re-timings and trials of the other kind of run.
    Cached q = statement(
        select_from(kTrialColumns, "trials",
                    "WHERE kernel_id = ? AND device_id = ? AND problem_id = ? AND config_key = ? "
                    "AND kind != 1 AND run_id IN (SELECT id FROM runs WHERE replayed = ?) "
                    "ORDER BY id DESC LIMIT 1"));
    q->bind(1, kernel_id);
    q->bind(2, device_id);
    q->bind(3, problem_id);
    q->bind(4, config_key);
    q->bind(5, replayed ? 1 : 0);
    if (!q->executeStep()) return std::nullopt;
    return read_trial(*q);
  }

  // Whether a claim row (its columns from `first` on: host, boot id, pid, start, owner, time)
  // still holds against this store: another store's, and its process alive (or, on another
  // host, where that cannot be checked, younger than Store::claim_seconds).
  bool claim_holds(SQLite::Statement& q, int first) const {
    const ProcessIdentity holder{q.getColumn(first).getString(), q.getColumn(first + 1).getString(),
                                 q.getColumn(first + 2).getInt64(),
                                 q.getColumn(first + 3).getInt64()};
    if (q.getColumn(first + 4).getInt64() == owner) return false;
    if (holder.host != self.host)
      return unix_seconds() - q.getColumn(first + 5).getInt64() < Store::claim_seconds;
    return holder.alive();
  }

  void insert_claim(std::int64_t kernel_id, std::int64_t device_id, std::int64_t problem_id,
                    const std::string& config_key, bool replayed) {
    Cached q = statement(
        "INSERT OR REPLACE INTO claims (kernel_id, device_id, problem_id, replayed, config_key, "
        "host, boot_id, pid, process_start, owner, claimed_unix) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    int c = 1;
    q->bind(c++, kernel_id);
    q->bind(c++, device_id);
    q->bind(c++, problem_id);
    q->bind(c++, replayed ? 1 : 0);
    q->bind(c++, config_key);
    q->bind(c++, self.host);
    q->bind(c++, self.boot_id);
    q->bind(c++, self.pid);
    q->bind(c++, self.start);
    q->bind(c++, owner);
    q->bind(c++, unix_seconds());
    q->exec();
    claimed_any = true;
  }

  // add_trial's steps, inside its transaction. A run tunes one (kernel, device, problem), and a
  // trial filed under another would be invisible to resume and mislead reports: the trial must
  // name its run's. Returns whether the run is replayed.
  bool check_run_of(const TrialRecord& trial) {
    int replayed = 0;
    Cached run =
        statement("SELECT kernel_id, device_id, problem_id, replayed FROM runs WHERE id = ?");
    run->bind(1, trial.run_id);
    if (!run->executeStep()) {
      throw Error(ErrorKind::kInternal,
                  where + ": add_trial: no run " + std::to_string(trial.run_id));
    }
    const std::int64_t kernel = run->getColumn(0).getInt64();
    const std::int64_t device = run->getColumn(1).getInt64();
    const std::int64_t problem = run->getColumn(2).getInt64();
    replayed = run->getColumn(3).getInt();
    if (kernel != trial.kernel_id || device != trial.device_id || problem != trial.problem_id) {
      throw Error(
          ErrorKind::kInternal,
          where + ": add_trial: trial " + trial.config_key + " names kernel " +
              std::to_string(trial.kernel_id) + ", device " + std::to_string(trial.device_id) +
              ", problem " + std::to_string(trial.problem_id) + " but its run " +
              std::to_string(trial.run_id) + " is for kernel " + std::to_string(kernel) +
              ", device " + std::to_string(device) + ", problem " + std::to_string(problem));
    }
    return replayed != 0;
  }

  void insert_trial(const TrialRecord& trial) {
    Cached q = statement(std::string("INSERT INTO trials (") +
                         (kTrialColumns + std::string_view("id, ").size()) +
                         ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    int c = 1;
    q->bind(c++, trial.run_id);
    q->bind(c++, trial.kernel_id);
    q->bind(c++, trial.device_id);
    q->bind(c++, trial.problem_id);
    q->bind(c++, trial.config_key);
    q->bind(c++, trial.config_json);
    q->bind(c++, static_cast<int>(trial.status));
    q->bind(c++, trial.error);
    bind_real(*q, c++, trial.time_ms);
    bind_real(*q, c++, trial.time_min_ms);
    bind_real(*q, c++, trial.time_mean_ms);
    bind_real(*q, c++, trial.time_spread);
    q->bind(c++, trial.sample_count);
    q->bind(c++, samples_to_json(trial.samples_ms));
    bind_real(*q, c++, trial.gbps);
    bind_real(*q, c++, trial.gflops);
    q->bind(c++, trial.registers);
    q->bind(c++, trial.local_bytes);
    q->bind(c++, trial.spill_bytes);
    q->bind(c++, trial.static_shared_bytes);
    q->bind(c++, trial.dynamic_shared_bytes);
    q->bind(c++, trial.max_threads_per_block);
    bind_real(*q, c++, trial.occupancy);
    q->bind(c++, trial.arch);
    q->bind(c++, trial.compile_options);
    q->bind(c++, trial.compile_log);
    q->bind(c++, trial.cubin_hash);
    bind_real(*q, c++, trial.compile_ms);
    bind_real(*q, c++, trial.eval_ms);
    q->bind(c++, trial.created_at.empty() ? utc_now() : trial.created_at);
    q->bind(c++, static_cast<int>(trial.kind));
    q->bind(c++, trial.l2_flushed);
    bind_real(*q, c++, trial.rank_ms);
    q->bind(c++, trial.cut ? 1 : 0);
    bind_real(*q, c++, trial.objective);
    q->bind(c++, trial.sm_clock_mhz);
    q->bind(c++, trial.temperature_c);
    bind_real(*q, c++, usable_energy(trial.power_w));
    bind_real(*q, c++, usable_energy(trial.energy_j));
    q->exec();
  }

  // The configuration is answered now: whoever claimed it is done with it.
  void release_claim(const TrialRecord& trial, bool replayed) {
    Cached q = statement(
        "DELETE FROM claims WHERE kernel_id = ? AND device_id = ? AND problem_id = ? "
        "AND replayed = ? AND config_key = ?");
    q->bind(1, trial.kernel_id);
    q->bind(2, trial.device_id);
    q->bind(3, trial.problem_id);
    q->bind(4, replayed ? 1 : 0);
    q->bind(5, trial.config_key);
    q->exec();
  }

  // Declaration order matters: statements must be finalised before the database closes.
  std::filesystem::path path;
  std::string where;
  Mode mode;
  SQLite::Database db;
  int schema_version = 0;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> statements;
  // Who holds this store's claims: the process, and a number that tells apart two stores of
  // one process.
  const ProcessIdentity self = ProcessIdentity::current();
  const std::int64_t owner = static_cast<std::int64_t>(
      (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}());
  bool claimed_any = false;
};

namespace {

// The first line of a quick_check report that names a problem, as one lower-case line
// ("page 772: btreeInitPage() returns error code 11"), to fit a one-line message.
std::string first_problem(const std::string& report) {
  std::size_t begin = 0;
  while (begin < report.size()) {
    std::size_t end = report.find('\n', begin);
    if (end == std::string::npos) end = report.size();
    std::string line = report.substr(begin, end - begin);
    if (!line.empty() && line.rfind("***", 0) != 0) {
      line[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(line[0])));
      return line;
    }
    begin = end + 1;
  }
  return report;
}

// Checks an existing database without writing to it and returns its schema version (0: an
// empty database that may be initialised). Throws for every refusal of docs/database.md.
int inspect(SQLite::Database& db, const std::string& where) {
  // A read transaction so every check sees one snapshot; it never takes a write lock.
  SQLite::Transaction snapshot(db, SQLite::TransactionBehavior::DEFERRED);
  // The first read of the file: a non-SQLite file fails here with SQLITE_NOTADB.
  const int objects = db.execAndGet("SELECT count(*) FROM sqlite_master").getInt();
  if (objects == 0) return 0;
  if (!db.tableExists("ktune_meta")) {
    throw Error(ErrorKind::kDatabase,
                where + ": not a ktune database (it has tables but no ktune_meta)");
  }
  std::string application;
  try {
    SQLite::Statement q(db, "SELECT value FROM ktune_meta WHERE key = 'application'");
    if (q.executeStep()) application = q.getColumn(0).getString();
  } catch (const SQLite::Exception& e) {
    if ((e.getErrorCode() & 0xff) != SQLITE_ERROR) throw;
    throw Error(ErrorKind::kDatabase,
                where + ": not a ktune database (its ktune_meta is not ktune's: " + e.what() + ")");
  }
  if (application != "ktune") {
    throw Error(ErrorKind::kDatabase, where +
                                          ": not a ktune database (ktune_meta.application is '" +
                                          application + "', not 'ktune')");
  }
  const int version = detail::read_schema_version(db, where);
  const int latest = Store::latest_schema_version();
  if (version > latest) {
    throw Error(ErrorKind::kDatabase, where + ": was written by a newer ktune (schema " +
                                          std::to_string(version) + ", this ktune knows up to " +
                                          std::to_string(latest) + "); upgrade ktune");
  }
  // quick_check reads every page: O(size), but corruption found later would be found mid-run.
  SQLite::Statement check(db, "PRAGMA quick_check(1)");
  const std::string verdict = check.executeStep() ? check.getColumn(0).getString() : "no answer";
  if (verdict != "ok") {
    throw Error(ErrorKind::kDatabase, where + ": database is corrupt (quick_check: " +
                                          first_problem(verdict) + "); it was left as is");
  }
  return version;
}

}  // namespace

Store Store::open(const std::filesystem::path& path, Mode mode,
                  std::chrono::milliseconds busy_timeout) {
  const std::string where = path.string();
  if (path.empty())
    throw Error(ErrorKind::kDatabase,
                "'': an empty path names no database file (SQLite would open a temporary one)");
  std::error_code ec;
  const auto file = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(file)) {
    throw Error(ErrorKind::kDatabase, where + ": is a directory, not a database file");
  }
  if (mode == Mode::kReadOnly && !std::filesystem::exists(file)) {
    throw Error(ErrorKind::kDatabase,
                where + ": no such database (a read-only open does not create one)");
  }
  const bool read_only = mode == Mode::kReadOnly;
  try {
    auto impl = std::make_unique<Impl>(path, mode, busy_timeout);
    int version = 0;
    try {
      impl->db.exec("PRAGMA foreign_keys = ON");
      version = inspect(impl->db, where);
    } catch (const SQLite::Exception& e) {
      // A folder that cannot take the -shm (a read-only folder or file system): the file is
      // read as immutable where it alone holds the committed state, else refused.
      const int code = e.getErrorCode() & 0xff;
      if (!read_only || (code != SQLITE_CANTOPEN && code != SQLITE_READONLY) ||
          !detail::cannot_take_shm(path))
        throw;
      impl =
          std::make_unique<Impl>(path, mode, busy_timeout, detail::immutable_read_uri(path, where));
      impl->db.exec("PRAGMA foreign_keys = ON");
      version = inspect(impl->db, where);
    }
    SQLite::Database& db = impl->db;
    const int latest = latest_schema_version();
    if (read_only) {
      if (version == 0) {
        throw Error(ErrorKind::kDatabase,
                    where + ": empty database (no ktune schema yet); open it read-write first");
      }
      if (version < latest) {
        throw Error(ErrorKind::kDatabase,
                    where + ": database has schema " + std::to_string(version) +
                        " but this ktune needs " + std::to_string(latest) +
                        "; open it once read-write (any ktune command that writes) to migrate it");
      }
      impl->schema_version = version;
    } else {
      // Migrations come first: until they commit, an older database gets no other change.
      impl->schema_version =
          version < latest ? detail::apply_migrations(db, detail::embedded_migrations(), where)
                           : version;
      if (db.execAndGet("PRAGMA journal_mode").getString() != "wal") {
        const std::string journal = db.execAndGet("PRAGMA journal_mode = WAL").getString();
        if (journal != "wal") {
          throw Error(ErrorKind::kDatabase,
                      where + ": cannot switch to the WAL journal (SQLite kept '" + journal + "')");
        }
      }
      // In WAL, NORMAL survives a crash of the process (only power loss can drop the last
      // commits) and saves an fsync per trial.
      db.exec("PRAGMA synchronous = NORMAL");
    }
    Store store(std::move(impl));
    if (!read_only) store.impl_->close_dead_runs();
    return store;
  } catch (const SQLite::Exception& e) {
    throw detail::database_error(where, e, read_only);
  }
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() {
  try {
    if (impl_) release_claims();
  } catch (...) {
    // A destructor never throws; a claim left behind expires with its process.
  }
}

int Store::latest_schema_version() {
  return static_cast<int>(detail::embedded_migrations().size());
}

int Store::schema_version() const { return impl_->schema_version; }

const std::filesystem::path& Store::path() const { return impl_->path; }

std::int64_t Store::upsert_device(const DeviceRecord& device) {
  impl_->require_writable("upsert_device");
  return impl_->guard("upsert_device", [&] {
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    const std::string now = utc_now();
    {
      Cached q = impl_->statement(
          "INSERT INTO devices (name, arch, cc_major, cc_minor, sm_count, memory_bytes, l2_bytes, "
          "driver_version, nvrtc_version, created_at, updated_at) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (name, arch, sm_count, memory_bytes) DO UPDATE SET "
          "cc_major = excluded.cc_major, cc_minor = excluded.cc_minor, "
          "l2_bytes = excluded.l2_bytes, driver_version = excluded.driver_version, "
          "nvrtc_version = excluded.nvrtc_version, updated_at = excluded.updated_at");
      int c = 1;
      q->bind(c++, device.name);
      q->bind(c++, device.arch);
      q->bind(c++, device.cc_major);
      q->bind(c++, device.cc_minor);
      q->bind(c++, device.sm_count);
      q->bind(c++, device.memory_bytes);
      q->bind(c++, device.l2_bytes);
      q->bind(c++, device.driver_version);
      q->bind(c++, device.nvrtc_version);
      q->bind(c++, now);
      q->bind(c++, now);
      q->exec();
    }
    const std::int64_t result = impl_->device_id(device).value();  // the row just upserted
    tx.commit();
    return result;
  });
}

std::int64_t Store::upsert_kernel(const KernelRecord& kernel) {
  impl_->require_writable("upsert_kernel");
  return impl_->guard("upsert_kernel", [&] {
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    {
      Cached q = impl_->statement(
          "INSERT INTO kernels (name, source_hash, space_hash, source, entry, spec_json, "
          "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (name, source_hash, space_hash) DO UPDATE SET source = excluded.source, "
          "entry = excluded.entry, spec_json = excluded.spec_json");
      int c = 1;
      q->bind(c++, kernel.name);
      q->bind(c++, kernel.source_hash);
      q->bind(c++, kernel.space_hash);
      q->bind(c++, kernel.source);
      q->bind(c++, kernel.entry);
      q->bind(c++, kernel.spec_json);
      q->bind(c++, utc_now());
      q->exec();
    }
    Cached id = impl_->statement(
        "SELECT id FROM kernels WHERE name = ? AND source_hash = ? AND space_hash = ?");
    id->bind(1, kernel.name);
    id->bind(2, kernel.source_hash);
    id->bind(3, kernel.space_hash);
    id->executeStep();
    const std::int64_t result = id->getColumn(0).getInt64();
    id->tryReset();
    tx.commit();
    return result;
  });
}

std::int64_t Store::upsert_problem(const ProblemRecord& problem) {
  impl_->require_writable("upsert_problem");
  return impl_->guard("upsert_problem", [&] {
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    {
      Cached q = impl_->statement(
          "INSERT INTO problems (kernel_name, key, json) VALUES (?, ?, ?) "
          "ON CONFLICT (kernel_name, key) DO UPDATE SET json = excluded.json");
      q->bind(1, problem.kernel_name);
      q->bind(2, problem.key);
      q->bind(3, problem.json);
      q->exec();
    }
    const std::int64_t result = impl_->problem_id(problem.kernel_name, problem.key).value();
    tx.commit();
    return result;
  });
}

std::optional<std::int64_t> Store::find_device(const DeviceRecord& device) const {
  return impl_->guard("find_device", [&] { return impl_->device_id(device); });
}

std::optional<std::int64_t> Store::find_problem(const std::string& kernel_name,
                                                const std::string& key) const {
  return impl_->guard("find_problem", [&] { return impl_->problem_id(kernel_name, key); });
}

std::int64_t Store::begin_run(const RunRecord& run) {
  impl_->require_writable("begin_run");
  return impl_->guard("begin_run", [&] {
    Cached q = impl_->statement(
        "INSERT INTO runs (kernel_id, device_id, problem_id, backend, strategy, "
        "strategy_options, budget, status, started_at, finished_at, ktune_version, "
        "nvrtc_version, driver_version, host, command_line, seed, summary, replayed, flush_l2, "
        "boot_id, pid, process_start, heartbeat_unix, strategy_chosen, objective, "
        "objective_higher_is_better) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, '', ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const ProcessIdentity self = ProcessIdentity::current();
    int c = 1;
    q->bind(c++, run.kernel_id);
    q->bind(c++, run.device_id);
    q->bind(c++, run.problem_id);
    q->bind(c++, run.backend);
    q->bind(c++, run.strategy);
    q->bind(c++, run.strategy_options);
    q->bind(c++, run.budget);
    q->bind(c++, utc_now());
    q->bind(c++, run.ktune_version);
    q->bind(c++, run.nvrtc_version);
    q->bind(c++, run.driver_version);
    q->bind(c++, self.host);
    q->bind(c++, run.command_line);
    q->bind(c++, static_cast<std::int64_t>(run.seed));  // bits kept; read back as uint64
    q->bind(c++, run.summary);
    q->bind(c++, run.replayed ? 1 : 0);
    q->bind(c++, run.flush_l2 ? std::string(to_string(*run.flush_l2)) : std::string());
    q->bind(c++, self.boot_id);
    q->bind(c++, self.pid);
    q->bind(c++, self.start);
    q->bind(c++, unix_seconds());
    q->bind(c++, run.strategy_chosen);
    q->bind(c++, run.objective.empty() ? std::string("time") : run.objective);
    q->bind(c++, run.objective_higher_is_better ? 1 : 0);
    q->exec();
    return impl_->db.getLastInsertRowid();
  });
}

void Store::heartbeat(std::int64_t run_id) {
  impl_->require_writable("heartbeat");
  impl_->guard("heartbeat", [&] {
    Cached beat = impl_->statement("UPDATE runs SET heartbeat_unix = ? WHERE id = ?");
    beat->bind(1, unix_seconds());
    beat->bind(2, run_id);
    beat->exec();
    // Closed by a reader while this process was silent: running again.
    Cached reopen = impl_->statement(
        "UPDATE runs SET status = 'running', finished_at = '', summary = '' "
        "WHERE id = ? AND status = 'interrupted' AND summary = ?");
    reopen->bind(1, run_id);
    reopen->bind(2, kClosedDeadRun);
    reopen->exec();
  });
}

void Store::finish_run(std::int64_t run_id, RunStatus status, const std::string& summary) {
  impl_->require_writable("finish_run");
  if (status == RunStatus::kRunning) {
    throw Error(ErrorKind::kInternal, impl_->where + ": finish_run: run " + std::to_string(run_id) +
                                          ": a run ends finished, interrupted or failed");
  }
  impl_->guard("finish_run", [&] {
    Cached q =
        impl_->statement("UPDATE runs SET status = ?, finished_at = ?, summary = ? WHERE id = ?");
    q->bind(1, std::string(to_string(status)));
    q->bind(2, utc_now());
    q->bind(3, summary);
    q->bind(4, run_id);
    if (q->exec() == 0) {
      throw Error(ErrorKind::kInternal,
                  impl_->where + ": finish_run: no run " + std::to_string(run_id));
    }
  });
}

std::optional<RunRecord> Store::run(std::int64_t run_id) const {
  return impl_->guard("run", [&]() -> std::optional<RunRecord> {
    Cached q = impl_->statement(select_from(kRunColumns, "runs", "WHERE id = ?"));
    q->bind(1, run_id);
    if (!q->executeStep()) return std::nullopt;
    return read_run(*q);
  });
}

std::vector<RunRecord> Store::runs(std::optional<std::string> kernel_name) const {
  return impl_->guard("runs", [&] {
    Cached q = impl_->statement(
        "SELECT r.id, r.kernel_id, r.device_id, r.problem_id, r.backend, r.strategy, "
        "r.strategy_options, r.budget, r.status, r.started_at, r.finished_at, r.ktune_version, "
        "r.nvrtc_version, r.driver_version, r.host, r.command_line, r.seed, r.summary, "
        "r.replayed, r.flush_l2, r.boot_id, r.pid, r.process_start, r.heartbeat_unix, "
        "r.strategy_chosen, r.objective, r.objective_higher_is_better FROM runs r JOIN kernels k "
        "ON k.id = r.kernel_id "
        "WHERE ?1 IS NULL OR k.name = ?1 ORDER BY r.id");
    if (kernel_name) q->bind(1, *kernel_name);
    std::vector<RunRecord> out;
    while (q->executeStep()) out.push_back(read_run(*q));
    return out;
  });
}

std::int64_t Store::add_trial(const TrialRecord& trial) {
  impl_->require_writable("add_trial");
  return impl_->guard("add_trial", [&] {
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    const bool replayed = impl_->check_run_of(trial);
    impl_->insert_trial(trial);
    const std::int64_t id = impl_->db.getLastInsertRowid();
    impl_->release_claim(trial, replayed);
    tx.commit();
    return id;
  });
}

std::vector<TrialRecord> Store::trials_of_run(std::int64_t run_id) const {
  return impl_->guard("trials_of_run", [&] {
    return impl_->trials(select_from(kTrialColumns, "trials", "WHERE run_id = ? ORDER BY id"),
                         run_id);
  });
}

std::vector<TrialRecord> Store::trials_for(std::int64_t kernel_id, std::int64_t device_id,
                                           std::int64_t problem_id,
                                           std::optional<bool> replayed) const {
  return impl_->guard("trials_for", [&] {
    Cached q = impl_->statement(
        select_from(kTrialColumns, "trials",
                    "WHERE kernel_id = ?1 AND device_id = ?2 AND problem_id = ?3 AND (?4 IS NULL "
                    "OR run_id IN (SELECT id FROM runs WHERE replayed = ?4)) ORDER BY id"));
    q->bind(1, kernel_id);
    q->bind(2, device_id);
    q->bind(3, problem_id);
    if (replayed) q->bind(4, *replayed ? 1 : 0);
    std::vector<TrialRecord> out;
    while (q->executeStep()) out.push_back(read_trial(*q));
    return out;
  });
}

std::vector<TrialRecord> Store::leaders(std::int64_t kernel_id, std::int64_t device_id,
                                        std::int64_t problem_id, bool replayed, std::size_t limit,
                                        const Objective& objective) const {
  return impl_->guard("leaders", [&] {
    // Each configuration's latest trial through the identity index (max(id) per config key),
    // where its time is a number above zero and finite (9e999 is SQLite's +Inf). Another
    // objective than time ranks the trials of the runs that have it by their value of it.
    const bool by_time = objective.is_time();
    const std::string runs = by_time ? "replayed = ?4"
                                     : "replayed = ?4 AND objective = ?7 AND "
                                       "objective_higher_is_better = ?8";
    const std::string order = by_time                      ? "t.time_ms"
                              : objective.higher_is_better ? "t.objective DESC"
                                                           : "t.objective";
    Cached q = impl_->statement(
        "SELECT t.id FROM trials t WHERE t.id IN (SELECT max(id) FROM trials WHERE kernel_id = ?1 "
        "AND device_id = ?2 AND problem_id = ?3 AND kind != 1 AND run_id IN (SELECT id FROM runs "
        "WHERE " +
        runs + ") GROUP BY config_key) AND t.status = ?5 AND t.cut = 0 AND " + kUsableTime +
        (by_time ? "" : std::string(" AND ") + kUsableObjective) + " ORDER BY " + order +
        ", t.config_key LIMIT ?6");
    if (!by_time) {
      q->bind(7, objective.name);
      q->bind(8, objective.higher_is_better ? 1 : 0);
    }
    q->bind(1, kernel_id);
    q->bind(2, device_id);
    q->bind(3, problem_id);
    q->bind(4, replayed ? 1 : 0);
    q->bind(5, static_cast<int>(TrialStatus::kOk));
    q->bind(6, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
    std::vector<std::int64_t> ids;
    while (q->executeStep()) ids.push_back(q->getColumn(0).getInt64());
    std::vector<TrialRecord> out;
    for (std::int64_t id : ids)
      if (std::optional<TrialRecord> t = impl_->trial(id)) out.push_back(std::move(*t));
    return out;
  });
}

std::optional<TrialRecord> Store::find_trial(std::int64_t kernel_id, std::int64_t device_id,
                                             std::int64_t problem_id, const std::string& config_key,
                                             bool replayed) const {
  return impl_->guard("find_trial", [&] {
    return impl_->latest_trial(kernel_id, device_id, problem_id, config_key, replayed);
  });
}

Store::Claim Store::claim(std::int64_t kernel_id, std::int64_t device_id, std::int64_t problem_id,
                          const std::string& config_key, bool replayed) {
  impl_->require_writable("claim");
  return impl_->guard("claim", [&] {
    // IMMEDIATE: the check and the claim are one step for every writer of the file.
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    Claim out;
    out.trial = impl_->latest_trial(kernel_id, device_id, problem_id, config_key, replayed);
    if (out.trial) {
      out.state = Claim::State::kMeasured;
      return out;  // nothing written: the transaction rolls back
    }
    {
      Cached q = impl_->statement(
          "SELECT host, boot_id, pid, process_start, owner, claimed_unix FROM claims "
          "WHERE kernel_id = ? AND device_id = ? AND problem_id = ? AND replayed = ? "
          "AND config_key = ?");
      q->bind(1, kernel_id);
      q->bind(2, device_id);
      q->bind(3, problem_id);
      q->bind(4, replayed ? 1 : 0);
      q->bind(5, config_key);
      if (q->executeStep() && impl_->claim_holds(*q, 0)) {
        out.state = Claim::State::kBusy;
        return out;
      }
    }
    impl_->insert_claim(kernel_id, device_id, problem_id, config_key, replayed);
    tx.commit();
    out.state = Claim::State::kClaimed;
    return out;
  });
}

void Store::release_claims() {
  if (impl_->mode == Mode::kReadOnly || !impl_->claimed_any) return;
  impl_->guard("release_claims", [&] {
    Cached q = impl_->statement("DELETE FROM claims WHERE owner = ?");
    q->bind(1, impl_->owner);
    q->exec();
    impl_->claimed_any = false;
  });
}

void Store::set_best(std::int64_t trial_id, const Objective& objective) {
  impl_->require_writable("set_best");
  impl_->guard("set_best", [&] {
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    const std::string context = impl_->where + ": set_best: ";
    std::int64_t kernel_id = 0, device_id = 0, problem_id = 0;
    std::string kernel_name, problem_key;
    {
      Cached q = impl_->statement(
          std::string("SELECT t.status, t.kernel_id, t.device_id, t.problem_id, k.name, p.key, ") +
          kUsableTime + ", " + kUsableObjective +
          " FROM trials t JOIN kernels k ON k.id = t.kernel_id "
          "JOIN problems p ON p.id = t.problem_id WHERE t.id = ?");
      q->bind(1, trial_id);
      if (!q->executeStep()) {
        throw Error(ErrorKind::kInternal, context + "no trial " + std::to_string(trial_id));
      }
      const auto status = static_cast<TrialStatus>(q->getColumn(0).getInt());
      if (!is_ok(status)) {
        throw Error(ErrorKind::kInternal, context + "trial " + std::to_string(trial_id) +
                                              " has status " + std::string(to_string(status)) +
                                              "; only an ok trial can be a best");
      }
      if (q->getColumn(6).getInt() == 0)
        throw Error(ErrorKind::kInternal, context + "trial " + std::to_string(trial_id) +
                                              " has no time above zero; it cannot be a best");
      kernel_id = q->getColumn(1).getInt64();
      device_id = q->getColumn(2).getInt64();
      problem_id = q->getColumn(3).getInt64();
      kernel_name = q->getColumn(4).getString();
      problem_key = q->getColumn(5).getString();
      // Chosen by another objective than time (schema 10), the trial has a value of it.
      if (!objective.is_time() && q->getColumn(7).getInt() == 0)
        throw Error(ErrorKind::kInternal, context + "trial " + std::to_string(trial_id) +
                                              " has no value of the objective '" + objective.name +
                                              "'; it cannot be its best");
    }
    {
      Cached q = impl_->statement(
          "INSERT INTO best (kernel_id, device_id, problem_id, trial_id, kernel_name, "
          "problem_key, updated_at, objective, objective_higher_is_better) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (kernel_id, device_id, problem_id) DO UPDATE SET "
          "trial_id = excluded.trial_id, updated_at = excluded.updated_at, "
          "objective = excluded.objective, "
          "objective_higher_is_better = excluded.objective_higher_is_better");
      int c = 1;
      q->bind(c++, kernel_id);
      q->bind(c++, device_id);
      q->bind(c++, problem_id);
      q->bind(c++, trial_id);
      q->bind(c++, kernel_name);
      q->bind(c++, problem_key);
      q->bind(c++, utc_now());
      q->bind(c++, objective.name);
      q->bind(c++, objective.higher_is_better ? 1 : 0);
      q->exec();
    }
    tx.commit();
  });
}

std::optional<BestRecord> Store::best(const std::string& kernel_name,
                                      const std::string& problem_key,
                                      std::int64_t device_id) const {
  return impl_->guard("best", [&]() -> std::optional<BestRecord> {
    BestRecord b;
    {
      Cached q = impl_->statement(
          select_from(kBestColumns, "best",
                      "WHERE kernel_name = ? AND problem_key = ? AND device_id = ? AND " +
                          usable_best() + " ORDER BY updated_at DESC, kernel_id DESC LIMIT 1"));
      q->bind(1, kernel_name);
      q->bind(2, problem_key);
      q->bind(3, device_id);
      if (!q->executeStep()) return std::nullopt;
      b = read_best(*q);
    }
    impl_->fill_best(b);
    return b;
  });
}

std::vector<BestRecord> Store::bests(std::optional<std::string> kernel_name) const {
  return impl_->guard("bests", [&] {
    std::vector<BestRecord> out;
    {
      Cached q = impl_->statement(select_from(
          kBestColumns, "best",
          "WHERE (?1 IS NULL OR kernel_name = ?1) AND " + usable_best() +
              " ORDER BY kernel_name, problem_key, device_id, updated_at DESC, kernel_id DESC"));
      if (kernel_name) q->bind(1, *kernel_name);
      while (q->executeStep()) out.push_back(read_best(*q));
    }
    for (BestRecord& b : out) impl_->fill_best(b);
    return out;
  });
}

std::size_t Store::update_pareto(std::int64_t kernel_id, std::int64_t device_id,
                                 std::int64_t problem_id, bool replayed) {
  impl_->require_writable("update_pareto");
  return impl_->guard("update_pareto", [&] {
    SQLite::Transaction tx(impl_->db, SQLite::TransactionBehavior::IMMEDIATE);
    const std::size_t n =
        detail::update_pareto(impl_->db, kernel_id, device_id, problem_id, replayed);
    tx.commit();
    return n;
  });
}

std::vector<TrialRecord> Store::pareto(std::int64_t kernel_id, std::int64_t device_id,
                                       std::int64_t problem_id, bool replayed) const {
  if (impl_->schema_version < 11) return {};
  return impl_->guard("pareto", [&] {
    Cached q = impl_->statement(select_from(
        kTrialColumns, "trials",
        "WHERE id IN (SELECT trial_id FROM pareto WHERE kernel_id = ?1 AND device_id = ?2 AND "
        "problem_id = ?3) AND run_id IN (SELECT id FROM runs WHERE replayed = ?4) "
        "ORDER BY time_ms, id"));
    q->bind(1, kernel_id);
    q->bind(2, device_id);
    q->bind(3, problem_id);
    q->bind(4, replayed ? 1 : 0);
    std::vector<TrialRecord> out;
    while (q->executeStep()) out.push_back(read_trial(*q));
    return out;
  });
}

std::int64_t Store::add_selector(const SelectorRecord& selector) {
  impl_->require_writable("add_selector");
  return impl_->guard("add_selector", [&] {
    const Selector& s = selector.selector;
    Cached q = impl_->statement(
        "INSERT INTO selectors (kernel_name, kernel_id, device_id, replayed, created_at, method, "
        "problems, candidates, held_out_mean, held_out_worst, json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    int c = 1;
    q->bind(c++, selector.kernel_name);
    q->bind(c++, selector.kernel_id);
    q->bind(c++, selector.device_id);
    q->bind(c++, selector.replayed ? 1 : 0);
    q->bind(c++, selector.created_at.empty() ? utc_now() : selector.created_at);
    q->bind(c++, s.method);
    q->bind(c++, static_cast<std::int64_t>(s.rows.size()));
    q->bind(c++, static_cast<std::int64_t>(s.candidates.size()));
    if (s.held_out.empty()) {
      q->bind(c++);
      q->bind(c++);
    } else {
      q->bind(c++, s.held_out_mean());
      q->bind(c++, s.held_out_worst());
    }
    q->bind(c++, s.to_json().dump());
    q->exec();
    return impl_->db.getLastInsertRowid();
  });
}

std::optional<SelectorRecord> Store::selector(const std::string& kernel_name,
                                              std::int64_t device_id) const {
  if (impl_->schema_version < 7) return std::nullopt;
  return impl_->guard("selector", [&]() -> std::optional<SelectorRecord> {
    Cached q = impl_->statement(
        "SELECT id, kernel_id, device_id, kernel_name, replayed, created_at, json FROM selectors "
        "WHERE kernel_name = ? AND device_id = ? ORDER BY created_at DESC, id DESC LIMIT 1");
    q->bind(1, kernel_name);
    q->bind(2, device_id);
    if (!q->executeStep()) return std::nullopt;
    SelectorRecord r;
    r.id = q->getColumn(0).getInt64();
    r.kernel_id = q->getColumn(1).getInt64();
    r.device_id = q->getColumn(2).getInt64();
    r.kernel_name = q->getColumn(3).getString();
    r.replayed = q->getColumn(4).getInt() != 0;
    r.created_at = q->getColumn(5).getString();
    try {
      r.selector = Selector::parse(q->getColumn(6).getString(),
                                   impl_->where + ": selector " + std::to_string(r.id));
    } catch (const Error& e) {
      throw Error(ErrorKind::kDatabase, e.what());  // a selector the database holds
    }
    return r;
  });
}

double DeviceCeilings::bandwidth_gbps() const {
  if (std::isnan(read_gbps)) return copy_gbps;
  if (std::isnan(copy_gbps)) return read_gbps;
  return std::max(read_gbps, copy_gbps);
}

void Store::set_ceilings(std::int64_t device_id, const DeviceCeilings& c) {
  impl_->require_writable("set_ceilings");
  for (const auto& [name, v] :
       {std::pair{"read", c.read_gbps}, {"copy", c.copy_gbps}, {"fma", c.fma_gflops}})
    if (!std::isnan(v) && !(std::isfinite(v) && v > 0))
      throw Error(ErrorKind::kUsage, std::string("ceilings: the ") + name + " ceiling " +
                                         std::to_string(v) + " is not a rate above 0");
  impl_->guard("set_ceilings", [&] {
    Cached q = impl_->statement(
        "INSERT INTO ceilings (device_id, read_gbps, copy_gbps, fma_gflops, measured_at, source) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET read_gbps = "
        "excluded.read_gbps, copy_gbps = excluded.copy_gbps, fma_gflops = excluded.fma_gflops, "
        "measured_at = excluded.measured_at, source = excluded.source");
    int k = 1;
    q->bind(k++, device_id);
    for (double v : {c.read_gbps, c.copy_gbps, c.fma_gflops}) bind_real(*q, k++, v);
    q->bind(k++, c.measured_at.empty() ? utc_now() : c.measured_at);
    q->bind(k++, c.source);
    q->exec();
  });
}

std::optional<DeviceCeilings> Store::ceilings(std::int64_t device_id) const {
  if (impl_->schema_version < 9) return std::nullopt;
  return impl_->guard("ceilings", [&]() -> std::optional<DeviceCeilings> {
    Cached q = impl_->statement(
        "SELECT read_gbps, copy_gbps, fma_gflops, measured_at, source FROM ceilings WHERE "
        "device_id = ?");
    q->bind(1, device_id);
    if (!q->executeStep()) return std::nullopt;
    DeviceCeilings c;
    c.read_gbps = column_real(*q, 0);
    c.copy_gbps = column_real(*q, 1);
    c.fma_gflops = column_real(*q, 2);
    c.measured_at = q->getColumn(3).getString();
    c.source = q->getColumn(4).getString();
    return c;
  });
}

std::vector<DeviceRecord> Store::devices() const {
  return impl_->guard("devices", [&] {
    Cached q = impl_->statement(select_from(kDeviceColumns, "devices", "ORDER BY id"));
    std::vector<DeviceRecord> out;
    while (q->executeStep()) out.push_back(read_device(*q));
    return out;
  });
}

std::optional<DeviceRecord> Store::device(std::int64_t id) const {
  return impl_->guard("device", [&] { return impl_->device(id); });
}

std::optional<KernelRecord> Store::kernel(std::int64_t id) const {
  return impl_->guard("kernel", [&] { return impl_->kernel(id); });
}

std::optional<ProblemRecord> Store::problem(std::int64_t id) const {
  return impl_->guard("problem", [&]() -> std::optional<ProblemRecord> {
    Cached q = impl_->statement(select_from(kProblemColumns, "problems", "WHERE id = ?"));
    q->bind(1, id);
    if (!q->executeStep()) return std::nullopt;
    return read_problem(*q);
  });
}

void Store::put_binary(const std::string& key, const std::string& arch,
                       const std::string& lowered_name, const std::string& cubin) {
  impl_->require_writable("put_binary");
  impl_->guard("put_binary", [&] {
    Cached q = impl_->statement(
        "INSERT INTO binaries (key, arch, lowered_name, cubin, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET arch = excluded.arch, "
        "lowered_name = excluded.lowered_name, cubin = excluded.cubin, "
        "created_at = excluded.created_at");
    q->bind(1, key);
    q->bind(2, arch);
    q->bind(3, lowered_name);
    q->bind(4, cubin.data(), static_cast<int>(cubin.size()));
    q->bind(5, utc_now());
    q->exec();
  });
}

std::optional<std::string> Store::binary(const std::string& key) const {
  return impl_->guard("binary", [&]() -> std::optional<std::string> {
    Cached q = impl_->statement("SELECT cubin FROM binaries WHERE key = ?");
    q->bind(1, key);
    if (!q->executeStep()) return std::nullopt;
    SQLite::Column c = q->getColumn(0);
    const auto* data = static_cast<const char*>(c.getBlob());
    return std::string(data, data + c.getBytes());
  });
}

MergeReport Store::merge_from(const std::filesystem::path& source) {
  impl_->require_writable("merge");
  // The refusals of a read-only open (not a ktune database, another schema, corrupt ...).
  { Store::open(source, Mode::kReadOnly, std::chrono::milliseconds(5000)); }
  std::error_code ec;
  if (std::filesystem::equivalent(source, impl_->path, ec))
    throw Error(ErrorKind::kUsage,
                impl_->where + ": merge: " + source.string() + " is this database itself");
  try {
    return detail::merge_database(impl_->db, source);
  } catch (const SQLite::Exception& e) {
    throw detail::database_error(impl_->where + ": merge " + source.string(), e);
  }
}

namespace {

template <typename E, std::size_t N>
std::optional<E> from_name(const std::array<std::pair<E, std::string_view>, N>& names,
                           std::string_view name) {
  for (const auto& [value, text] : names)
    if (text == name) return value;
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view to_name(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, text] : names)
    if (v == value) return text;
  return "unknown";
}

constexpr std::array<std::pair<RunStatus, std::string_view>, 4> kRunStatusNames{{
    {RunStatus::kRunning, "running"},
    {RunStatus::kFinished, "finished"},
    {RunStatus::kInterrupted, "interrupted"},
    {RunStatus::kFailed, "failed"},
}};
constexpr std::array<std::pair<TrialKind, std::string_view>, 3> kTrialKindNames{{
    {TrialKind::kSearch, "search"},
    {TrialKind::kRetime, "retime"},
    {TrialKind::kWarmStart, "warm_start"},
}};

std::string read_text_file(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return "";
  char buffer[4096];
  const std::size_t n = std::fread(buffer, 1, sizeof buffer, f);
  std::fclose(f);
  return std::string(buffer, n);
}

// Field 22 of /proc/<pid>/stat, the process's start time in clock ticks since boot; 0 when the
// process does not exist or is a zombie.
std::int64_t process_start_time(std::int64_t pid) {
  const std::string stat = read_text_file(("/proc/" + std::to_string(pid) + "/stat").c_str());
  // The command name (field 2) is in parentheses and may hold spaces; fields follow the last ')'.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::size_t field = 2, i = close + 1;
  std::string state;
  while (i < stat.size() && field < 22) {
    while (i < stat.size() && stat[i] == ' ') ++i;
    const std::size_t end = stat.find(' ', i);
    ++field;
    if (field == 3) state = stat.substr(i, end - i);
    if (field == 22) return state == "Z" ? 0 : std::strtoll(stat.c_str() + i, nullptr, 10);
    i = end;
  }
  return 0;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

std::string_view to_string(RunStatus status) { return to_name(kRunStatusNames, status); }
std::optional<RunStatus> run_status_from_string(std::string_view name) {
  return from_name(kRunStatusNames, name);
}
std::string_view to_string(TrialKind kind) { return to_name(kTrialKindNames, kind); }
std::optional<TrialKind> trial_kind_from_int(int value) {
  for (const auto& [kind, text] : kTrialKindNames)
    if (static_cast<int>(kind) == value) return kind;
  return std::nullopt;
}

ProcessIdentity ProcessIdentity::current() {
  ProcessIdentity p;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  p.host = host;
  p.boot_id = trim(read_text_file("/proc/sys/kernel/random/boot_id"));
  p.pid = static_cast<std::int64_t>(::getpid());
  p.start = process_start_time(p.pid);
  return p;
}

namespace {
const ProcessIdentity& this_process() {
  static const ProcessIdentity self = ProcessIdentity::current();
  return self;
}
}  // namespace

bool ProcessIdentity::alive() const {
  if (pid <= 0 || boot_id.empty()) return true;  // nothing to check it by
  const ProcessIdentity& self = this_process();
  if (host != self.host) return true;         // another machine's process: cannot tell
  if (boot_id != self.boot_id) return false;  // this machine has rebooted since
  return start != 0 && process_start_time(pid) == start;
}

bool ProcessIdentity::alive(std::int64_t heartbeat_unix) const {
  if (host == this_process().host || heartbeat_unix <= 0) return alive();
  return unix_seconds() - heartbeat_unix < Store::run_silence_seconds;
}

std::string utc_now() {
  using namespace std::chrono;
  const auto now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(now / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[80];  // roomy enough for any int fields, which silences -Wformat-truncation
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(now % 1000));
  return text;
}

}  // namespace ktune
