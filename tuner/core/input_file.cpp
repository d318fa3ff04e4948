// Input files of a checked kind and size (ktune/input_file.h).
#include "ktune/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ktune/error.h"

namespace ktune {

namespace {

[[noreturn]] void refuse(const std::string& what, const std::filesystem::path& path,
                         const std::string& why) {
  throw Error(ErrorKind::kInput, what.empty()
                                     ? fmt::format("{}: {}", path.string(), why)
                                     : fmt::format("{} '{}': {}", what, path.string(), why));
}

// What a file that is not a regular one is, for the message.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory, not a file";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

std::uint64_t checked_size(const struct stat& st, const std::string& what,
                           const std::filesystem::path& path, std::uint64_t max_bytes) {
  if (!S_ISREG(st.st_mode)) refuse(what, path, kind_of(st.st_mode));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    refuse(what, path, fmt::format("{} bytes; at most {} MiB are read", size, max_bytes >> 20));
  return size;
}

}  // namespace

std::uint64_t check_input_file(const std::filesystem::path& path, const std::string& what,
                               std::uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    refuse(
        what, path,
        fmt::format("cannot be read: {}", errno == ENOENT ? "no such file" : std::strerror(errno)));
  return checked_size(st, what, path, max_bytes);
}

std::string read_input_file(const std::filesystem::path& path, const std::string& what,
                            std::uint64_t max_bytes) {
  check_input_file(path, what, max_bytes);
  // O_NONBLOCK: were it a FIFO by now, the open would not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) refuse(what, path, fmt::format("cannot be read ({})", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) refuse(what, path, std::strerror(errno));
  const std::uint64_t size = checked_size(st, what, path, max_bytes);
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) refuse(what, path, fmt::format("cannot be read ({})", std::strerror(errno)));
    if (n == 0) break;  // shorter than it was: what it holds now
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace ktune
