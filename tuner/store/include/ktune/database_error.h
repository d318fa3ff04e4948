// The one translation of an SQLite failure into a ktune error, shared by the store and the
// run-time client (both read SQLite through SQLiteCpp).
#pragma once

#include <SQLiteCpp/Exception.h>

#include <filesystem>
#include <string>

#include "ktune/error.h"

namespace ktune::detail {

// "<where>: <what went wrong>" as Error(kDatabase), naming the cases a user can act on (locked,
// read-only, corrupt, not a database).
Error database_error(const std::string& where, const SQLite::Exception& e, bool read_only = false);

// A read-only reader of a WAL database needs the -shm file beside it: one that exists, or a
// folder that can take one. True where neither holds: the folder of `path` cannot be written (a
// read-only folder or file system) and there is no -shm.
bool cannot_take_shm(const std::filesystem::path& path);
// The SQLite URI of a file ("file://" + its absolute path, with '%', '?' and '#' escaped), with
// `query` ("mode=ro", ...) after a '?' where it is not empty. A connection reads it as a URI
// when opened with SQLITE_OPEN_URI; so does an ATTACH on such a connection.
std::string sqlite_uri(const std::filesystem::path& path, const std::string& query);
// For a file whose folder cannot take a -shm: the URI that reads it as immutable, which needs no
// -shm and is right when the file alone holds every committed change: there is no -wal, or an
// empty one (nobody can be writing it, as a writer needs the folder too). Throws
// Error(kDatabase) naming `where` when a -wal holds changes: an immutable read would answer
// from an older state, and they can be read only where a -shm can be made.
std::string immutable_read_uri(const std::filesystem::path& path, const std::string& where);
// A path as SQLite's open takes it on a connection that reads URIs: a name that starts with
// "file:" gets "./" in front, so that it stays the name of a file.
std::string sqlite_file_name(const std::filesystem::path& path);

}  // namespace ktune::detail
