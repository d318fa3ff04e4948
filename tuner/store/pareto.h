// The stored time-energy Pareto set (internal, not API): Store::update_pareto and merge both
// rewrite it with this, on their own connection inside their own transaction.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstddef>
#include <cstdint>

namespace ktune::detail {

// Rewrites pareto for (kernel, device, problem) from each configuration's latest ok, uncut trial
// with an energy among runs whose replayed flag is `replayed` (ktune/energy.h pareto_front).
// Returns the set's size; 0 where no trial has an energy (the stored set is then left alone).
std::size_t update_pareto(SQLite::Database& db, std::int64_t kernel_id, std::int64_t device_id,
                          std::int64_t problem_id, bool replayed);

}  // namespace ktune::detail
