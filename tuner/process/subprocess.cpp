// Subprocess: posix_spawn with the request/reply pipes on fds 3 and 4.
#include "ktune/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ktune/error.h"

extern char** environ;

namespace ktune {

namespace {
std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return "ended";
}
}  // namespace

void Subprocess::start(const std::vector<std::string>& argv, bool own_group) {
  stop(true);
  int req[2], rep[2], out[2];
  if (::pipe2(req, O_CLOEXEC) != 0)
    throw Error(ErrorKind::kInternal, fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(rep, O_CLOEXEC) != 0) {
    ::close(req[0]);
    ::close(req[1]);
    throw Error(ErrorKind::kInternal, fmt::format("pipe: {}", std::strerror(errno)));
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    for (int fd : {req[0], req[1], rep[0], rep[1]}) ::close(fd);
    throw Error(ErrorKind::kInternal, fmt::format("pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, req[0], 3);
  posix_spawn_file_actions_adddup2(&actions, rep[1], 4);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);  // nothing the child prints can reach
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);  // the protocol pipes
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(req[0]);
  ::close(rep[1]);
  ::close(out[1]);
  to_child_ = req[1];
  from_child_ = rep[0];
  output_fd_ = out[0];
  output_.clear();
  if (rc != 0) {
    pid_ = -1;
    close_fds();
    throw Error(ErrorKind::kInternal, fmt::format("cannot start '{}': {}",
                                                  argv.empty() ? "" : argv[0], std::strerror(rc)));
  }
  ::fcntl(output_fd_, F_SETFL, ::fcntl(output_fd_, F_GETFL) | O_NONBLOCK);
}

bool Subprocess::send(const ipc::Message& message) {
  return to_child_ >= 0 && ipc::write_message(to_child_, message);
}

ipc::ReadStatus Subprocess::receive(ipc::Message& message, double timeout_seconds) {
  if (from_child_ < 0) return ipc::ReadStatus::kClosed;
  return ipc::read_message(from_child_, message, timeout_seconds, output_fd_, &output_);
}

bool Subprocess::wait_for_answer(double timeout_seconds) {
  if (from_child_ < 0) return true;
  return ipc::wait_readable(from_child_, timeout_seconds, output_fd_, &output_) !=
         ipc::ReadStatus::kTimeout;
}

void Subprocess::close_fds() {
  for (int* fd : {&to_child_, &from_child_, &output_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

std::string Subprocess::stop(bool kill) {
  if (pid_ <= 0) {
    close_fds();
    return {};
  }
  if (!kill && to_child_ >= 0) ipc::write_message(to_child_, {nlohmann::json{{"op", "quit"}}, {}});
  close_fds();  // closing its request pipe also tells the child to finish
  int status = 0;
  if (!kill) {
    // A child that does not leave within a few seconds is killed. Most leave within
    // milliseconds, so the first checks come a millisecond apart.
    for (int i = 0; i < 250; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return describe_exit(status);
      }
      ::usleep(i < 50 ? 1000 : 25000);
    }
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return describe_exit(status);
}

}  // namespace ktune
