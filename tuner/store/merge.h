// Merging one results database into another (internal, not API): Store::merge_from calls it on
// its own connection. The rule it follows is written in docs/database.md ("Merging databases").
#pragma once

#include <SQLiteCpp/Database.h>

#include <filesystem>

#include "ktune/store.h"

namespace ktune::detail {

// The summary of a run a reader closed as interrupted because its process was gone (or silent too
// long): a merge still takes the source's later status for it.
inline constexpr const char* kClosedDeadRun =
    R"({"closed":"its process ended without finishing the run"})";

// Copies what `source` holds and `db` does not (devices, kernels, problems, runs, the trials a
// run has beyond those already copied, binaries) and recomputes the bests of every (kernel,
// device, problem) the source has runs of, all in one transaction. The source must be a ktune
// database of this schema (checked by the caller); it is attached read-only by path.
MergeReport merge_database(SQLite::Database& db, const std::filesystem::path& source);

}  // namespace ktune::detail
