// Files a user names as input (job files, manifests and kernel sources, plugins, buffer data,
// recordings): a regular file of a size checked before it is read. A FIFO, a device such as
// /dev/zero or a directory is refused by name rather than read until memory or patience runs
// out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ktune {

// Limits on what one input may hold.
inline constexpr std::uint64_t kMaxTextInputBytes = std::uint64_t{64}
                                                    << 20;  // job, manifest, source
inline constexpr std::uint64_t kMaxRecordingBytes = std::uint64_t{1} << 30;  // a recording, packed

// The size of `path` where it is a regular file of at most max_bytes; Error(kInput)
// "<what> '<path>': ..." ("<path>: ..." for an empty `what`) naming what it is instead (missing, a
// directory, a FIFO or another special file, too large). Never blocks: a FIFO is looked at, not
// opened.
std::uint64_t check_input_file(const std::filesystem::path& path, const std::string& what,
                               std::uint64_t max_bytes);

// The whole of such a file. The size is checked on the open file, so a file swapped for a FIFO
// between check and read is refused too.
std::string read_input_file(const std::filesystem::path& path, const std::string& what,
                            std::uint64_t max_bytes);

}  // namespace ktune
