// Compile processes (`ktune __compile`) run below the tuning loop and the GPU worker in the
// scheduler: `nice` 5 by default, KTUNE_COMPILE_NICE to change it, 0 to leave it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "process/ipc.h"

extern char** environ;

namespace ktune {
namespace {

// Starts `ktune __compile` with `nice_env` (or without KTUNE_COMPILE_NICE), has it answer an
// empty batch (so it is past its start), and returns its priority then.
// A pipe whose ends are close-on-exec and numbered above the child's 3 and 4, so that the child
// keeps only the two ends dup2 gives it (an inherited write end of its own input would keep it
// from ever seeing the end of its input).
void high_pipe(int fds[2]) {
  int raw[2];
  if (::pipe(raw) != 0) ADD_FAILURE() << "pipe";
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::fcntl(raw[i], F_DUPFD_CLOEXEC, 10);
    ::close(raw[i]);
  }
}

int priority_of_a_compile_process(const char* nice_env) {
  int to_child[2], from_child[2];
  high_pipe(to_child);
  high_pipe(from_child);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 3);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 4);
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("KTUNE_COMPILE_", 0) != 0) env_text.emplace_back(*e);
  env_text.emplace_back("KTUNE_COMPILE_WARMUP=0");
  if (nice_env) env_text.emplace_back(std::string("KTUNE_COMPILE_NICE=") + nice_env);
  std::vector<char*> env;
  for (auto& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  std::string exe = KTUNE_EXE, op = "__compile";
  char* argv[] = {exe.data(), op.data(), nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  int priority = -100;
  if (spawned == 0) {
    ipc::Message request;
    request.header = {{"op", "compile"}, {"batch", nlohmann::json::array()}};
    ipc::Message answer;
    if (ipc::write_message(to_child[1], request) &&
        ipc::read_message(from_child[0], answer, 30) == ipc::ReadStatus::kOk) {
      errno = 0;
      priority = ::getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
    } else {
      ADD_FAILURE() << "the compile process did not answer";
    }
  } else {
    ADD_FAILURE() << "posix_spawn: " << spawned;
  }
  ::close(to_child[1]);  // end of input: it exits
  ::close(from_child[0]);
  if (pid > 0) {
    int status = 0;
    bool ended = false;
    for (int i = 0; i < 200 && !ended; ++i) {
      ended = ::waitpid(pid, &status, WNOHANG) == pid;
      if (!ended) ::usleep(50'000);
    }
    if (!ended) {
      ADD_FAILURE() << "the compile process did not end at the end of its input";
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }
  return priority;
}

TEST(CompilePriority, ACompileProcessRunsBelowTheTuner) {
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  if (own + 5 > 19) GTEST_SKIP() << "this process already runs at nice " << own;
  EXPECT_EQ(priority_of_a_compile_process(nullptr), own + 5);
  EXPECT_EQ(priority_of_a_compile_process("2"), own + 2);
  EXPECT_EQ(priority_of_a_compile_process("0"), own);
}

}  // namespace
}  // namespace ktune
