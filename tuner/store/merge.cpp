// Merging results databases (Store::merge_from): the source is attached to the destination's
// connection and copied with INSERT ... SELECT in one transaction, mapping ids by identity, so
// a merge of many thousands of trials is a handful of statements and a failure leaves the
// destination as it was. Columns are read from the schema, so a migration that adds a column
// is merged without a change here. The rule for bests is docs/database.md, "Merging databases".
#include "store/merge.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ktune/database_error.h"
#include "store/pareto.h"

namespace ktune::detail {
namespace {

std::string join(const std::vector<std::string>& items, const std::string& prefix = "") {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += prefix + item;
  }
  return out;
}

// Every column of a table of the destination but its id, in schema order.
std::vector<std::string> columns_of(SQLite::Database& db, const std::string& table) {
  std::vector<std::string> out;
  SQLite::Statement q(db, "PRAGMA main.table_info(" + table + ")");
  while (q.executeStep()) {
    std::string name = q.getColumn(1).getString();
    if (name != "id") out.push_back(std::move(name));
  }
  return out;
}

// The source's value of each column (alias.column), or the mapped expression given for it.
std::string select_list(const std::vector<std::string>& columns, const std::string& alias,
                        const std::map<std::string, std::string>& mapped) {
  std::vector<std::string> items;
  for (const std::string& c : columns) {
    const auto it = mapped.find(c);
    items.push_back(it == mapped.end() ? alias + "." + c : it->second);
  }
  return join(items);
}

std::int64_t count(SQLite::Database& db, const std::string& table) {
  return db.execAndGet("SELECT count(*) FROM main." + table).getInt64();
}

// A column's number; NaN for NULL, text or a blob (a damaged row: never a time).
double number_or_nan(const SQLite::Column& c) {
  return c.isInteger() || c.isFloat() ? c.getDouble() : NAN;
}

// A time a trial can win with: a finite number of milliseconds above zero.
bool is_time(double ms) { return std::isfinite(ms) && ms > 0; }

// One trial as evidence for the best of its (kernel, device, problem).
struct Evidence {
  std::int64_t id = 0;
  std::string key;
  TrialStatus status = TrialStatus::kOk;
  double time_ms = 0;
  double rank_ms = NAN;  // a re-timing's ranking rounds (schema 5); NaN: ranked by time_ms
  bool retime = false;
  bool replayed = false;
  std::string created_at;
  double objective = NAN;  // its value of its run's objective (schema 10); NaN: none
  Objective ranked_by;     // its run's objective
  std::string run_started_at;
};

// What a (kernel, device, problem) is ranked by: the objective of its newest run (ties: the
// name), so that merging in any order gives the same answer. Every trial has a time, so time
// ranks every trial; another objective only the trials of runs with it.
Objective ranking_objective(const std::vector<Evidence>& all) {
  const Evidence* newest = nullptr;
  for (const Evidence& e : all)
    if (!newest || std::tie(e.run_started_at, e.ranked_by.name, e.ranked_by.higher_is_better) >
                       std::tie(newest->run_started_at, newest->ranked_by.name,
                                newest->ranked_by.higher_is_better))
      newest = &e;
  return newest ? newest->ranked_by : Objective{};
}

// The merge rule: a configuration with a wrong result anywhere is never a best; measured runs
// answer before replayed ones; re-timing trials (the runs' interleaved final measurements)
// answer before search trials; a configuration's time is the median of its trials of that kind
// (the lower middle one, so it is a real measurement), and the fastest wins, ties going to the
// smaller config key. A re-timing trial counts with its ranking rounds' time where it has one
// (rank_ms), as the run that made it chose: the winner's stored time (time_ms) is then not the
// draw that made it win. With another objective than time (ranking_objective), the trials of
// runs with that objective rank by their value of it instead, the best first. Returns the trial
// that carries the winning time.
std::optional<const Evidence*> choose_best(const std::vector<Evidence>& all,
                                           const Objective& objective) {
  std::set<std::string> wrong;
  for (const Evidence& e : all)
    if (e.status == TrialStatus::kWrongResult) wrong.insert(e.key);
  const auto counts = [&](const Evidence& e) {
    return objective.is_time() || (e.ranked_by == objective && is_time(e.objective));
  };
  const auto rank = [&](const Evidence* e) {
    if (objective.is_time()) return retime_ranking_ms(e->rank_ms, e->time_ms);
    return objective.higher_is_better ? -e->objective : e->objective;
  };
  for (const bool replayed : {false, true}) {
    for (const bool retime : {true, false}) {
      std::map<std::string, std::vector<const Evidence*>> by_config;
      for (const Evidence& e : all)
        if (e.replayed == replayed && e.retime == retime && is_ok(e.status) && is_time(e.time_ms) &&
            counts(e) && !wrong.count(e.key))
          by_config[e.key].push_back(&e);
      const Evidence* best = nullptr;
      for (auto& [key, trials] : by_config) {
        std::sort(trials.begin(), trials.end(), [&](const Evidence* a, const Evidence* b) {
          return std::make_tuple(rank(a), a->created_at, a->id) <
                 std::make_tuple(rank(b), b->created_at, b->id);
        });
        const Evidence* median = trials[(trials.size() - 1) / 2];
        if (!best || rank(median) < rank(best)) best = median;  // keys come in order
      }
      if (best) return best;
    }
  }
  return std::nullopt;
}

struct Merger {
  SQLite::Database& db;
  MergeReport report;

  // src id -> main id of a table whose rows have an identity (the UNIQUE columns).
  void map_ids(const std::string& table, const std::vector<std::string>& identity) {
    std::string on;
    for (const std::string& c : identity)
      on += (on.empty() ? "" : " AND ") + ("d." + c + " = s." + c);
    db.exec("DROP TABLE IF EXISTS temp.merge_" + table);
    db.exec("CREATE TEMP TABLE merge_" + table + " AS SELECT s.id AS src, d.id AS dst FROM src." +
            table + " s JOIN main." + table + " d ON " + on);
  }

  void identities() {
    const std::vector<std::string> devices = columns_of(db, "devices");
    std::vector<std::string> refresh;
    for (const std::string& c : devices)
      if (c != "name" && c != "arch" && c != "sm_count" && c != "memory_bytes" && c != "created_at")
        refresh.push_back(c + " = excluded." + c);
    std::int64_t before = count(db, "devices");
    // A device's provenance is its last registration: the newer of the two rows wins.
    db.exec("INSERT INTO main.devices (" + join(devices) + ") SELECT " + join(devices) +
            " FROM src.devices WHERE true ON CONFLICT (name, arch, sm_count, memory_bytes) DO "
            "UPDATE SET " +
            join(refresh) + " WHERE excluded.updated_at > devices.updated_at");
    report.devices = count(db, "devices") - before;
    map_ids("devices", {"name", "arch", "sm_count", "memory_bytes"});

    const std::vector<std::string> kernels = columns_of(db, "kernels");
    before = count(db, "kernels");
    db.exec("INSERT OR IGNORE INTO main.kernels (" + join(kernels) + ") SELECT " + join(kernels) +
            " FROM src.kernels ORDER BY id");
    report.kernels = count(db, "kernels") - before;
    map_ids("kernels", {"name", "source_hash", "space_hash"});

    const std::vector<std::string> problems = columns_of(db, "problems");
    before = count(db, "problems");
    db.exec("INSERT OR IGNORE INTO main.problems (" + join(problems) + ") SELECT " +
            join(problems) + " FROM src.problems ORDER BY id");
    report.problems = count(db, "problems") - before;
    map_ids("problems", {"kernel_name", "key"});
  }

  // A run is the same run when its kernel, device and problem map to the same rows, it was
  // started by the same process at the same millisecond, with the same strategy, seed and
  // command line, and its first trial is the same (configuration and time stored), which tells
  // apart two runs one program started at once.
  void find_runs() {
    db.exec(
        "UPDATE temp.merge_runs SET dst = (SELECT r.id FROM main.runs r JOIN src.runs s "
        "ON s.id = merge_runs.src WHERE r.kernel_id = merge_runs.kernel_id "
        "AND r.device_id = merge_runs.device_id AND r.problem_id = merge_runs.problem_id "
        "AND r.host = s.host AND r.boot_id = s.boot_id AND r.pid = s.pid "
        "AND r.process_start = s.process_start AND r.started_at = s.started_at "
        "AND r.seed = s.seed AND r.strategy = s.strategy AND r.command_line = s.command_line "
        "AND coalesce((SELECT t.config_key || '@' || t.created_at FROM main.trials t "
        "WHERE t.run_id = r.id ORDER BY t.id LIMIT 1), '') = "
        "coalesce((SELECT t.config_key || '@' || t.created_at FROM src.trials t "
        "WHERE t.run_id = s.id ORDER BY t.id LIMIT 1), '') "
        "ORDER BY r.id LIMIT 1) WHERE dst IS NULL");
  }

  // The runs the destination lacks, in the source's order, each mapped to its new id.
  void insert_new_runs() {
    std::vector<std::int64_t> fresh;
    {
      SQLite::Statement q(db, "SELECT src FROM temp.merge_runs WHERE dst IS NULL ORDER BY src");
      while (q.executeStep()) fresh.push_back(q.getColumn(0).getInt64());
    }
    const std::vector<std::string> columns = columns_of(db, "runs");
    SQLite::Statement insert(
        db, "INSERT INTO main.runs (" + join(columns) + ") SELECT " +
                select_list(columns, "s",
                            {{"kernel_id", "m.kernel_id"},
                             {"device_id", "m.device_id"},
                             {"problem_id", "m.problem_id"}}) +
                " FROM src.runs s JOIN temp.merge_runs m ON m.src = s.id WHERE s.id = ?");
    SQLite::Statement map(db, "UPDATE temp.merge_runs SET dst = ? WHERE src = ?");
    for (const std::int64_t src : fresh) {
      insert.bind(1, src);
      insert.exec();
      insert.reset();
      map.bind(1, db.getLastInsertRowid());
      map.bind(2, src);
      map.exec();
      map.reset();
      ++report.runs;
    }
  }

  void runs() {
    db.exec("DROP TABLE IF EXISTS temp.merge_runs");
    db.exec(
        "CREATE TEMP TABLE merge_runs AS SELECT s.id AS src, NULL AS dst, k.dst AS kernel_id, "
        "d.dst AS device_id, p.dst AS problem_id, 0 AS existed, 0 AS have FROM src.runs s "
        "JOIN temp.merge_kernels k ON k.src = s.kernel_id "
        "JOIN temp.merge_devices d ON d.src = s.device_id "
        "JOIN temp.merge_problems p ON p.src = s.problem_id");
    find_runs();
    db.exec("UPDATE temp.merge_runs SET existed = dst IS NOT NULL");
    insert_new_runs();
    // A run merged while it was still running has moved on since: running here, or closed as
    // interrupted by this database's own open because its process (on another host) could not
    // be seen, and ended in the source since.
    SQLite::Statement moved_on(
        db,
        "UPDATE main.runs AS r SET status = s.status, finished_at = s.finished_at, "
        "summary = s.summary FROM temp.merge_runs m JOIN src.runs s ON s.id = m.src "
        "WHERE r.id = m.dst AND m.existed AND (r.status = 'running' OR (r.status = "
        "'interrupted' AND r.summary = ?1)) AND s.status <> 'running' AND (s.status <> r.status "
        "OR s.summary <> r.summary)");
    moved_on.bind(1, kClosedDeadRun);
    report.runs_updated = moved_on.exec();
    db.exec(
        "UPDATE temp.merge_runs SET have = (SELECT count(*) FROM main.trials t "
        "WHERE t.run_id = merge_runs.dst)");
  }

  // Trials are append-only, so a run's trials beyond the number already merged are the new ones.
  // A trial of a run that is not among the merged runs (deleted from the source, or its kernel,
  // device or problem deleted) has nothing to belong to: counted, not copied.
  void trials() {
    report.skipped_runs = db.execAndGet(
                                "SELECT count(*) FROM src.runs WHERE id NOT IN (SELECT src FROM "
                                "temp.merge_runs)")
                              .getInt64();
    report.skipped_trials =
        db.execAndGet(
              "SELECT count(*) FROM src.trials WHERE run_id NOT IN (SELECT src FROM "
              "temp.merge_runs)")
            .getInt64();
    const std::vector<std::string> columns = columns_of(db, "trials");
    report.trials =
        db.exec("INSERT INTO main.trials (" + join(columns) + ") SELECT " +
                select_list(columns, "t",
                            {{"run_id", "m.dst"},
                             {"kernel_id", "m.kernel_id"},
                             {"device_id", "m.device_id"},
                             {"problem_id", "m.problem_id"}}) +
                " FROM (SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY id) AS merge_n "
                "FROM src.trials) t JOIN temp.merge_runs m ON m.src = t.run_id "
                "WHERE t.merge_n > m.have ORDER BY t.id");
    if (report.trials > 0) {
      const std::int64_t grown =
          db.execAndGet(
                "SELECT count(*) FROM temp.merge_runs m WHERE m.existed AND m.have < "
                "(SELECT count(*) FROM main.trials t WHERE t.run_id = m.dst)")
              .getInt64();
      report.runs_updated = std::max(report.runs_updated, grown);
    }
    const std::vector<std::string> binaries = columns_of(db, "binaries");
    const std::int64_t before = count(db, "binaries");
    db.exec("INSERT OR IGNORE INTO main.binaries (" + join(binaries) + ") SELECT " +
            join(binaries) + " FROM src.binaries");
    report.binaries = count(db, "binaries") - before;
  }

  // Selectors name problems and configurations by key: only their kernel and device ids map.
  void selectors() {
    if (db.execAndGet("SELECT count(*) FROM src.sqlite_master WHERE name = 'selectors'")
            .getInt64() == 0)
      return;
    const std::int64_t before = count(db, "selectors");
    db.exec(
        "INSERT OR IGNORE INTO main.selectors (kernel_name, kernel_id, device_id, replayed, "
        "created_at, method, problems, candidates, held_out_mean, held_out_worst, json) "
        "SELECT s.kernel_name, k.dst, d.dst, s.replayed, s.created_at, s.method, s.problems, "
        "s.candidates, s.held_out_mean, s.held_out_worst, s.json FROM src.selectors s "
        "JOIN temp.merge_kernels k ON k.src = s.kernel_id "
        "JOIN temp.merge_devices d ON d.src = s.device_id ORDER BY s.id");
    report.selectors = count(db, "selectors") - before;
  }

  // A device's ceilings: the newer measurement wins.
  void ceilings() {
    if (db.execAndGet("SELECT count(*) FROM src.sqlite_master WHERE name = 'ceilings'")
            .getInt64() == 0)
      return;
    report.ceilings = db.exec(
        "INSERT INTO main.ceilings (device_id, read_gbps, copy_gbps, fma_gflops, measured_at, "
        "source) SELECT d.dst, c.read_gbps, c.copy_gbps, c.fma_gflops, c.measured_at, c.source "
        "FROM src.ceilings c JOIN temp.merge_devices d ON d.src = c.device_id WHERE true "
        "ON CONFLICT (device_id) DO UPDATE SET read_gbps = excluded.read_gbps, copy_gbps = "
        "excluded.copy_gbps, fma_gflops = excluded.fma_gflops, measured_at = "
        "excluded.measured_at, source = excluded.source WHERE excluded.measured_at > "
        "main.ceilings.measured_at");
  }

  std::vector<Evidence> evidence(std::int64_t kernel, std::int64_t device, std::int64_t problem) {
    SQLite::Statement q(db,
                        "SELECT t.id, t.config_key, t.status, t.time_ms, t.kind, t.created_at, "
                        "r.replayed, t.rank_ms, t.objective, r.objective, "
                        "r.objective_higher_is_better, r.started_at FROM main.trials t JOIN "
                        "main.runs r "
                        "ON r.id = t.run_id "
                        "WHERE t.kernel_id = ? AND t.device_id = ? AND t.problem_id = ? "
                        "AND t.cut = 0");
    q.bind(1, kernel);
    q.bind(2, device);
    q.bind(3, problem);
    std::vector<Evidence> out;
    while (q.executeStep()) {
      Evidence e;
      e.id = q.getColumn(0).getInt64();
      e.key = q.getColumn(1).getString();
      e.status = static_cast<TrialStatus>(q.getColumn(2).getInt());
      e.time_ms = number_or_nan(q.getColumn(3));
      e.retime = q.getColumn(4).getInt() == static_cast<int>(TrialKind::kRetime);
      e.created_at = q.getColumn(5).getString();
      e.replayed = q.getColumn(6).getInt() != 0;
      e.rank_ms = number_or_nan(q.getColumn(7));
      if (!is_time(e.rank_ms)) e.rank_ms = NAN;
      e.objective = number_or_nan(q.getColumn(8));
      e.ranked_by = {q.getColumn(9).getString(), q.getColumn(10).getInt() != 0};
      e.run_started_at = q.getColumn(11).getString();
      out.push_back(std::move(e));
    }
    return out;
  }

  void best(std::int64_t kernel, std::int64_t device, std::int64_t problem) {
    const std::vector<Evidence> all = evidence(kernel, device, problem);
    const Objective objective = ranking_objective(all);
    const std::optional<const Evidence*> chosen = choose_best(all, objective);
    if (!chosen) {
      // Nothing may be a best (say, every candidate gave a wrong result somewhere).
      SQLite::Statement q(db,
                          "DELETE FROM main.best WHERE kernel_id = ? AND device_id = ? AND "
                          "problem_id = ?");
      q.bind(1, kernel);
      q.bind(2, device);
      q.bind(3, problem);
      report.bests += q.exec();
      return;
    }
    SQLite::Statement q(
        db,
        "INSERT INTO main.best (kernel_id, device_id, problem_id, trial_id, kernel_name, "
        "problem_key, updated_at, objective, objective_higher_is_better) "
        "SELECT ?1, ?2, ?3, ?4, k.name, p.key, ?5, ?6, ?7 FROM main.kernels k, main.problems p "
        "WHERE k.id = ?1 AND p.id = ?3 "
        "ON CONFLICT (kernel_id, device_id, problem_id) DO UPDATE SET "
        "trial_id = excluded.trial_id, updated_at = excluded.updated_at, "
        "objective = excluded.objective, "
        "objective_higher_is_better = excluded.objective_higher_is_better "
        "WHERE best.trial_id <> excluded.trial_id");
    q.bind(1, kernel);
    q.bind(2, device);
    q.bind(3, problem);
    q.bind(4, (*chosen)->id);
    q.bind(5, (*chosen)->created_at);  // so the newest kernel version still answers first
    q.bind(6, objective.name);
    q.bind(7, objective.higher_is_better ? 1 : 0);
    report.bests += q.exec();
  }

  void bests() {
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> touched;
    {
      SQLite::Statement q(db,
                          "SELECT DISTINCT kernel_id, device_id, problem_id FROM temp.merge_runs "
                          "ORDER BY 1, 2, 3");
      while (q.executeStep())
        touched.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
                             q.getColumn(2).getInt64());
    }
    for (const auto& [kernel, device, problem] : touched) {
      best(kernel, device, problem);
      for (const bool replayed : {false, true})
        update_pareto(db, kernel, device, problem, replayed);
    }
  }

  void drop_temporaries() {
    for (const char* t : {"merge_devices", "merge_kernels", "merge_problems", "merge_runs"})
      db.exec(std::string("DROP TABLE IF EXISTS temp.") + t);
  }
};

// Attaches the source for reading (mode=ro), and detaches it however the merge ends. The source
// is only read: detaching it must not checkpoint a write-ahead log that a killed writer left (that
// would write its pages into the source file and delete its -wal), so the connection does not
// checkpoint on close while the source is attached (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, which
// SQLite applies to every database the connection closes, the detached one included).
struct Attached {
  SQLite::Database& db;
  int checkpointed_on_close = 0;  // the connection's setting before, restored after
  Attached(SQLite::Database& d, const std::filesystem::path& source) : db(d) {
    int previous = 0;
    sqlite3_db_config(db.getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, -1, &previous);
    checkpointed_on_close = previous;
    sqlite3_db_config(db.getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    // Read-only, as the source's own read-only open reads it (immutable where its folder cannot
    // take a -shm and the file holds every committed change).
    SQLite::Statement q(db, "ATTACH DATABASE ? AS src");
    q.bind(1, cannot_take_shm(source) ? immutable_read_uri(source, source.string())
                                      : sqlite_uri(source, "mode=ro"));
    q.exec();
  }
  ~Attached() {
    try {
      db.exec("DETACH DATABASE src");
    } catch (...) {
    }
    sqlite3_db_config(db.getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, checkpointed_on_close,
                      nullptr);
  }
};

}  // namespace

MergeReport merge_database(SQLite::Database& db, const std::filesystem::path& source) {
  Attached attached(db, source);
  Merger m{db, {}};
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  m.identities();
  m.runs();
  m.trials();
  m.bests();
  m.selectors();
  m.ceilings();
  m.drop_temporaries();
  tx.commit();
  return m.report;
}

}  // namespace ktune::detail
