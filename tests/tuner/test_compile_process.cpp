// Compile processes (`ktune __compile`): they run below the tuning loop and the GPU worker in the
// scheduler (`nice` 5), keep the memory NVRTC frees for its next program, and a dead one costs
// one request.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/compile_request.h"
#include "ktune/compiler.h"
#include "ktune/ipc.h"

extern char** environ;

namespace ktune {
namespace {

using nlohmann::json;

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

// Starts `ktune __compile` with the test's environment, sends it `batches` one at a time, and
// after each answer calls `answered(pid, the answer's header)`. Ends it by closing its input, as
// the pool does, and checks that it exits.
void with_a_compile_process(const std::vector<json>& batches,
                            const std::function<void(pid_t, const json&)>& answered) {
  int to_child[2], from_child[2];
  high_pipe(to_child);
  high_pipe(from_child);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 3);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 4);
  std::string exe = KTUNE_EXE, op = "__compile";
  char* argv[] = {exe.data(), op.data(), nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (spawned == 0) {
    for (const json& batch : batches) {
      ipc::Message request;
      request.header = {{"op", "compile"}, {"batch", batch}};
      ipc::Message answer;
      if (!ipc::write_message(to_child[1], request) ||
          ipc::read_message(from_child[0], answer, 60) != ipc::ReadStatus::kOk) {
        ADD_FAILURE() << "the compile process did not answer";
        break;
      }
      answered(pid, answer.header);
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
}

// The priority of a compile process, once it has answered an empty batch (so it is past its
// start).
int priority_of_a_compile_process() {
  int priority = -100;
  with_a_compile_process({json::array()}, [&](pid_t pid, const json&) {
    errno = 0;
    priority = ::getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
  });
  return priority;
}

TEST(CompilePriority, ACompileProcessRunsBelowTheTuner) {
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  if (own + 5 > 19) GTEST_SKIP() << "this process already runs at nice " << own;
  EXPECT_EQ(priority_of_a_compile_process(), own + 5);
}

// The page faults a process has taken (minflt, the tenth field of /proc/PID/stat).
long minor_faults(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 10 && fields >> field; ++i) {
  }
  return field.empty() ? -1 : std::stol(field);
}

// Page faults per program over `programs` compilations of the same kernel, after a first one
// (which faults its heap in), in a compile process.
double faults_per_program(int programs) {
  const std::string arch = "sm_90";
  const json request = {
      {"source",
       "extern \"C\" __global__ void k(float* x, int n) {\n"
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n"
       "    x[i] = x[i] * 2.0f + 1.0f;\n"
       "}\n"},
      {"source_name", "k.cu"},
      {"entry", "k"},
      {"options", {"--gpu-architecture=" + arch}},
      {"arch", arch}};
  std::vector<json> batches(static_cast<std::size_t>(programs) + 1, json::array({request}));
  std::vector<long> faults;
  with_a_compile_process(batches, [&](pid_t pid, const json& answer) {
    const json& results = answer.at("results");
    EXPECT_TRUE(results.size() == 1 && results[0].value("ok", false)) << answer.dump();
    faults.push_back(minor_faults(pid));
  });
  if (faults.size() != batches.size() || faults.front() < 0) return -1;
  return static_cast<double>(faults.back() - faults.front()) / programs;
}

// With glibc's defaults a process gives NVRTC's memory back after each program and faults it in
// again for the next: 800-2,000 faults per program, measured on two machines. A compile process
// keeps its heap, so a program reuses the memory of the one before: about 50 faults, measured.
TEST(CompileProcessHeap, AProgramReusesTheMemoryOfTheOneBefore) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's, whose settings this measures";
#endif
  const double faults = faults_per_program(4);
  ASSERT_GE(faults, 0);
  RecordProperty("faults_per_program", std::to_string(faults));
  EXPECT_LT(faults, 250) << "page faults per program: the heap is given back between programs";
}

// The processes this one has started and not yet reaped.
std::vector<pid_t> child_processes() {
  std::vector<pid_t> out;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return out;
  while (const dirent* t = ::readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    std::ifstream children(std::string("/proc/self/task/") + t->d_name + "/children");
    for (pid_t pid; children >> pid;) out.push_back(pid);
  }
  ::closedir(tasks);
  return out;
}

// A compile process that died between two requests (killed, or out of memory) costs the request
// sent to it, as a failure that names it, and the pool starts another for the next: the write to
// its closed pipe must not end the tuner (SIGPIPE), whose disposition here is the default.
TEST(CompileProcessDeath, ADeadProcessFailsOneRequestAndTheNextGetsANewOne) {
  ASSERT_EQ(::signal(SIGPIPE, SIG_DFL), SIG_DFL) << "this test needs SIGPIPE's default";
  const std::vector<pid_t> before = child_processes();
  CompilePool pool(1, nullptr, {KTUNE_EXE, "__compile"});
  const auto request = [](int n) {
    return test::assembled_request({{"N", std::to_string(n)}},
                                   "extern \"C\" __global__ void k(int* p) { p[0] = N; }\n", "k",
                                   "sm_90", "");
  };
  ASSERT_TRUE(pool.submit(request(1)).get().ok);
  std::vector<pid_t> started;
  for (pid_t pid : child_processes())
    if (std::find(before.begin(), before.end(), pid) == before.end()) started.push_back(pid);
  ASSERT_EQ(started.size(), 1u);
  ASSERT_EQ(::kill(started[0], SIGKILL), 0);
  // Its pipe's reader is gone once it has died; wait for that.
  for (int i = 0; i < 500 && ::kill(started[0], 0) == 0; ++i) {
    char state = '?';
    std::ifstream stat("/proc/" + std::to_string(started[0]) + "/stat");
    std::string pid_text, name;
    stat >> pid_text >> name >> state;
    if (state == 'Z') break;
    ::usleep(2000);
  }
  const CompileResult lost = pool.submit(request(2)).get();
  EXPECT_FALSE(lost.ok);
  EXPECT_NE(lost.error.find("compile process"), std::string::npos) << lost.error;
  const CompileResult next = pool.submit(request(3)).get();
  EXPECT_TRUE(next.ok) << next.error;
}

// Steps<N> inlines N dependent steps through a tree of log2(N) templates (no loop for NVRTC to
// keep rolled): REPS = 1 compiles in about a second, each doubling of REPS takes NVRTC more than
// twice as long, and REPS = 256 takes it many minutes.
const char* const kEndless = R"(
template <int N> struct Steps {
  __device__ __forceinline__ static float run(float x) {
    return Steps<N - N / 2>::run(Steps<N / 2>::run(x));
  }
};
template <> struct Steps<1> {
  __device__ __forceinline__ static float run(float x) { return x * 0.999f + __sinf(x); }
};
extern "C" __global__ void endless(float* out) {
  out[threadIdx.x] = Steps<REPS * 4096>::run(static_cast<float>(threadIdx.x));
}
)";

CompileRequest endless_request(int reps, const std::string& group) {
  return test::assembled_request({{"REPS", std::to_string(reps)}}, kEndless, "endless", "sm_90",
                                 group);
}

TEST(CompileTimeout, TheAdaptiveLimitFollowsTheRunsCompileTimes) {
  const CompileTimeout adaptive;
  EXPECT_EQ(adaptive.limit({}), CompileTimeout::kFirst) << "before any compilation finished";
  EXPECT_EQ(adaptive.limit(std::vector<double>(20, 0.5)), CompileTimeout::kFloor);
  std::vector<double> slow(9, 1.0);
  slow.push_back(40);  // the 0.9 quantile of ten is the ninth: 1 s
  EXPECT_EQ(adaptive.limit(slow), CompileTimeout::kFloor);
  slow.assign(10, 20.0);
  EXPECT_EQ(adaptive.limit(slow), 100.0);
  EXPECT_EQ(CompileTimeout{7.5}.limit(slow), 7.5) << "a fixed limit is the limit";
}

// A compilation past the limit kills its compile process and fails its configuration alone:
// the quick ones compiled in the same batch come back compiled, and the next request gets a new
// process. The pool's destructor does not wait for the slow one either. The limit is 10 s: the
// quick ones take about a second, and past 3 s on a loaded 2-core machine (a fresh clone's
// suite beside two other jobs failed the first one at 3 s).
TEST(CompileTimeout, ACompilationPastTheLimitFailsItsConfigurationAndTheRestGoesOn) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<std::shared_future<CompileResult>> batch;
  {
    CompilePool pool(1, nullptr, {KTUNE_EXE, "__compile"});
    pool.set_timeout(CompileTimeout{10.0});
    EXPECT_EQ(pool.timeout_seconds(), 10.0);
    std::vector<CompileRequest> requests;
    requests.push_back(endless_request(1, "g"));
    requests.push_back(endless_request(256, "g"));
    requests.push_back(test::assembled_request(
        {{"N", "2"}}, "extern \"C\" __global__ void k(int* p) { p[0] = N; }\n", "k", "sm_90", "g"));
    batch = pool.submit(std::move(requests));
    const CompileResult slow = batch[1].get();
    EXPECT_FALSE(slow.ok);
    EXPECT_EQ(slow.error, "compile timed out after 10 s");
    EXPECT_TRUE(batch[0].get().ok) << batch[0].get().error;
    EXPECT_TRUE(batch[2].get().ok) << batch[2].get().error;
    const CompileResult next = pool.submit(endless_request(1, "")).get();
    EXPECT_TRUE(next.ok) << next.error;
  }
  // The slow one alone takes NVRTC many minutes; the batch, its retry alone and the rest fit
  // well within one.
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(60));
}

}  // namespace
}  // namespace ktune
