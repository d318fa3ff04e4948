// A child process that speaks the ipc framing: requests on its fd 3, replies on its fd 4, its
// stdout and stderr collected in one pipe. Used for the GPU worker and the compile processes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "ktune/ipc.h"

namespace ktune {

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess() { stop(true); }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts argv[0] with argv. With own_group, the child gets its own process group, so a Ctrl-C
  // at the terminal reaches only the parent. Throws Error(kInternal) when it cannot start.
  void start(const std::vector<std::string>& argv, bool own_group);
  bool running() const { return pid_ > 0; }

  bool send(const ipc::Message& message);
  ipc::ReadStatus receive(ipc::Message& message, double timeout_seconds);
  // Waits up to timeout_seconds for the child's answer to begin (or its pipe to close), without
  // reading it: false when nothing came in that time.
  bool wait_for_answer(double timeout_seconds);

  // Ends the child: a "quit" request and a short wait, or SIGKILL. Returns how it ended
  // ("worker exited with code 3", "worker killed by signal 9 (Killed)"); empty if not running.
  std::string stop(bool kill);
  // The last few KiB the child wrote to stdout/stderr.
  const std::string& output_tail() const { return output_; }

 private:
  void close_fds();
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int output_fd_ = -1;
  std::string output_;
};

}  // namespace ktune
