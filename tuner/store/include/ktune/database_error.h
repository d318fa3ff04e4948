// The one translation of an SQLite failure into a ktune error, shared by the store and the
// run-time client (both read SQLite through SQLiteCpp).
#pragma once

#include <SQLiteCpp/Exception.h>

#include <string>

#include "ktune/error.h"

namespace ktune::detail {

// "<where>: <what went wrong>" as Error(kDatabase), naming the cases a user can act on (locked,
// read-only, corrupt, not a database).
Error database_error(const std::string& where, const SQLite::Exception& e, bool read_only = false);

}  // namespace ktune::detail
