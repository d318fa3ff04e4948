#include "store/pareto.h"

#include <SQLiteCpp/Statement.h>

#include <vector>

#include "ktune/energy.h"

namespace ktune::detail {

std::size_t update_pareto(SQLite::Database& db, std::int64_t kernel_id, std::int64_t device_id,
                          std::int64_t problem_id, bool replayed) {
  std::vector<std::int64_t> ids;
  std::vector<TimeEnergy> points;
  {
    // Each configuration by its latest trial that has an energy: a re-timing after its search
    // trial, a later run after an earlier one.
    SQLite::Statement q(
        db,
        "SELECT t.id, t.time_ms, t.energy_j FROM trials t WHERE t.id IN ("
        "SELECT max(u.id) FROM trials u JOIN runs r ON r.id = u.run_id "
        "WHERE u.kernel_id = ?1 AND u.device_id = ?2 AND u.problem_id = ?3 AND r.replayed = ?4 "
        "AND u.status = 0 AND u.cut = 0 AND typeof(u.energy_j) = 'real' AND u.energy_j > 0 "
        "AND typeof(u.time_ms) IN ('integer', 'real') AND u.time_ms > 0 AND u.time_ms < 9e999 "
        "GROUP BY u.config_key) ORDER BY t.id");
    q.bind(1, kernel_id);
    q.bind(2, device_id);
    q.bind(3, problem_id);
    q.bind(4, replayed ? 1 : 0);
    while (q.executeStep()) {
      ids.push_back(q.getColumn(0).getInt64());
      points.push_back({q.getColumn(1).getDouble(), q.getColumn(2).getDouble()});
    }
  }
  const std::vector<std::size_t> front = pareto_front(points);
  if (front.empty()) return 0;
  SQLite::Statement clear(
      db,
      "DELETE FROM pareto WHERE kernel_id = ? AND device_id = ? AND problem_id = ? AND trial_id IN "
      "(SELECT t.id FROM trials t JOIN runs r ON r.id = t.run_id WHERE r.replayed = ?)");
  clear.bind(1, kernel_id);
  clear.bind(2, device_id);
  clear.bind(3, problem_id);
  clear.bind(4, replayed ? 1 : 0);
  clear.exec();
  SQLite::Statement add(db,
                        "INSERT INTO pareto (kernel_id, device_id, problem_id, trial_id) "
                        "VALUES (?, ?, ?, ?)");
  for (std::size_t i : front) {
    add.bind(1, kernel_id);
    add.bind(2, device_id);
    add.bind(3, problem_id);
    add.bind(4, ids[i]);
    add.exec();
    add.reset();
  }
  return front.size();
}

}  // namespace ktune::detail
