// Pipe framing for the worker protocol (see ipc.h).
#include "ktune/ipc.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>

namespace ktune::ipc {

namespace {

// A write to a pipe whose reader is gone (a worker or compile process that died) raises SIGPIPE,
// whose default ends the writer: the tuner, for one dead child. So the signal is blocked on this
// thread while it writes, and one that the write raised is taken back before it is unblocked;
// the write then fails with EPIPE and the caller turns it into that child's failure. (Blocking
// per write, not ignoring the signal process-wide: the library does not change its host's
// signal dispositions.)
class SigpipeHeld {
 public:
  SigpipeHeld() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~SigpipeHeld() {
    if (!blocked_) return;
    if (raised_ && !was_pending_) {
      const timespec now{};
      while (::sigtimedwait(&pipe_, nullptr, &now) == -1 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  void raised() { raised_ = true; }
  SigpipeHeld(const SigpipeHeld&) = delete;
  SigpipeHeld& operator=(const SigpipeHeld&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false, blocked_ = false, raised_ = false;
};

// Writes every byte of the pieces, in as few system calls as the pipe allows: a message goes
// out in one writev where it fits the pipe, so the reader wakes once for it. (Four writes, one per
// field, woke it four times; under a loaded machine the GPU worker took 0.07-0.34 ms per reply,
// measured with the worker's `previous_reply` phase.)
bool write_all(int fd, iovec* pieces, int count) {
  SigpipeHeld held;
  while (count > 0) {
    const ssize_t written = ::writev(fd, pieces, count);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) held.raised();
      return false;
    }
    auto n = static_cast<std::size_t>(written);
    while (count > 0 && n >= pieces->iov_len) {
      n -= pieces->iov_len;
      ++pieces;
      --count;
    }
    if (count > 0) {
      pieces->iov_base = static_cast<char*>(pieces->iov_base) + n;
      pieces->iov_len -= n;
    }
  }
  return true;
}

// Reads what the side channel holds; false once it has nothing more to give (its writers are
// gone, or the descriptor is bad), so that the caller stops polling it.
bool drain(int side_fd, std::string* side_text) {
  char buf[4096];
  const ssize_t n = ::read(side_fd, buf, sizeof(buf));
  if (n > 0 && side_text) {
    side_text->append(buf, static_cast<std::size_t>(n));
    constexpr std::size_t kKeep = 8192;
    if (side_text->size() > kKeep) side_text->erase(0, side_text->size() - kKeep);
  }
  return n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN));
}

// Reads exactly size bytes, waiting until the deadline; drains the side channel meanwhile.
ReadStatus read_all(int fd, void* data, std::size_t size,
                    std::chrono::steady_clock::time_point deadline, bool forever, int side_fd,
                    std::string* side_text) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {side_fd, POLLIN, 0}};
    const nfds_t nfds = side_fd >= 0 ? 2 : 1;
    int wait_ms = -1;
    if (!forever) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ReadStatus::kTimeout;
      wait_ms = static_cast<int>(std::min<long long>(left.count(), 1 << 30));
    }
    const int rc = ::poll(fds, nfds, wait_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return ReadStatus::kClosed;
    }
    if (rc == 0) return ReadStatus::kTimeout;
    // A descriptor that is not open never becomes readable: poll would report it at once, for
    // ever (a process started without its protocol pipe spun at full speed here).
    if (fds[0].revents & POLLNVAL) return ReadStatus::kClosed;
    // A side channel whose writers are gone reports POLLHUP at every poll: once it is drained,
    // stop watching it rather than spin until the message comes.
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) &&
        ((fds[1].revents & POLLNVAL) || !drain(side_fd, side_text)))
      side_fd = -1;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::read(fd, p, size);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return ReadStatus::kClosed;
      }
      if (n == 0) return ReadStatus::kClosed;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }
  return ReadStatus::kOk;
}

}  // namespace

bool write_message(int fd, const Message& message) {
  std::string header = message.header.dump();
  auto header_size = static_cast<std::uint32_t>(header.size());
  auto blob_size = static_cast<std::uint64_t>(message.blob.size());
  iovec pieces[] = {{&header_size, sizeof(header_size)},
                    {header.data(), header.size()},
                    {&blob_size, sizeof(blob_size)},
                    {const_cast<char*>(message.blob.data()), message.blob.size()}};
  return write_all(fd, pieces, message.blob.empty() ? 3 : 4);
}

ReadStatus read_message(int fd, Message& out, double timeout_seconds, int side_fd,
                        std::string* side_text) {
  const bool forever = timeout_seconds < 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(forever ? 0 : timeout_seconds));
  std::uint32_t header_size = 0;
  if (auto s =
          read_all(fd, &header_size, sizeof(header_size), deadline, forever, side_fd, side_text);
      s != ReadStatus::kOk)
    return s;
  std::string header(header_size, '\0');
  if (auto s = read_all(fd, header.data(), header.size(), deadline, forever, side_fd, side_text);
      s != ReadStatus::kOk)
    return s;
  std::uint64_t blob_size = 0;
  if (auto s = read_all(fd, &blob_size, sizeof(blob_size), deadline, forever, side_fd, side_text);
      s != ReadStatus::kOk)
    return s;
  out.blob.assign(blob_size, '\0');
  if (auto s =
          read_all(fd, out.blob.data(), out.blob.size(), deadline, forever, side_fd, side_text);
      s != ReadStatus::kOk)
    return s;
  out.header = nlohmann::json::parse(header);
  return ReadStatus::kOk;
}

ReadStatus wait_readable(int fd, double timeout_seconds, int side_fd, std::string* side_text) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::max(timeout_seconds, 0.0)));
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {side_fd, POLLIN, 0}};
    const nfds_t nfds = side_fd >= 0 ? 2 : 1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const int rc = ::poll(fds, nfds, static_cast<int>(std::max<long long>(left.count(), 0)));
    if (rc < 0 && errno != EINTR) return ReadStatus::kClosed;
    if (rc > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
      return ReadStatus::kOk;
    if (rc > 0 && nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) &&
        ((fds[1].revents & POLLNVAL) || !drain(side_fd, side_text)))
      side_fd = -1;
    if (std::chrono::steady_clock::now() >= deadline) return ReadStatus::kTimeout;
  }
}

}  // namespace ktune::ipc
