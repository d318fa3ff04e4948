// The pipe framing of the worker and compile-process protocols (process/ipc.h): messages with and
// without a blob, a blob larger than the pipe holds (written while the other end reads), several
// messages back to back, a closed writer, a closed reader, a descriptor that is not open and a
// side channel whose writer is gone.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include "ktune/ipc.h"

namespace ktune {
namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe(fd), 0); }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_writer() {
    ::close(fd[1]);
    fd[1] = -1;
  }
};

TEST(Ipc, MessagesArriveWholeAndInOrder) {
  Pipe p;
  std::string big(3 << 20, '\0');  // far more than a pipe holds
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + i / 4096);
  std::thread writer([&] {
    EXPECT_TRUE(ipc::write_message(p.fd[1], {nlohmann::json{{"op", "first"}}, {}}));
    EXPECT_TRUE(ipc::write_message(p.fd[1], {nlohmann::json{{"op", "big"}, {"n", 3}}, big}));
    EXPECT_TRUE(ipc::write_message(p.fd[1], {nlohmann::json{{"op", "last"}}, "xyz"}));
    p.close_writer();
  });
  ipc::Message m;
  ASSERT_EQ(ipc::read_message(p.fd[0], m, 30), ipc::ReadStatus::kOk);
  EXPECT_EQ(m.header.at("op"), "first");
  EXPECT_TRUE(m.blob.empty());
  ASSERT_EQ(ipc::read_message(p.fd[0], m, 30), ipc::ReadStatus::kOk);
  EXPECT_EQ(m.header.at("op"), "big");
  EXPECT_EQ(m.header.at("n"), 3);
  EXPECT_TRUE(m.blob == big) << "the blob came back changed (" << m.blob.size() << " bytes)";
  ASSERT_EQ(ipc::read_message(p.fd[0], m, 30), ipc::ReadStatus::kOk);
  EXPECT_EQ(m.header.at("op"), "last");
  EXPECT_EQ(m.blob, "xyz");
  writer.join();
  EXPECT_EQ(ipc::read_message(p.fd[0], m, 30), ipc::ReadStatus::kClosed);
}

// A write to a pipe whose reader is gone (a child that died) fails, and the writer lives on with
// SIGPIPE's default disposition (which ends a process): in a child process, so that a writer
// killed by the signal shows as that child's death.
TEST(Ipc, AWriteToAClosedReaderFailsAndTheWriterLives) {
  EXPECT_EXIT(
      {
        ::signal(SIGPIPE, SIG_DFL);
        Pipe p;
        ::close(p.fd[0]);
        p.fd[0] = -1;
        const bool written =
            ipc::write_message(p.fd[1], {nlohmann::json{{"op", "x"}}, std::string(1000, 'a')});
        sigset_t pending;
        sigemptyset(&pending);
        ::sigpending(&pending);
        // 0: the write failed and left no SIGPIPE pending for later.
        std::_Exit(written ? 1 : sigismember(&pending, SIGPIPE) == 1 ? 2 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

// This thread's CPU time in seconds.
double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// A descriptor that is not open (a process started without its protocol pipe) is the end of
// the conversation: kClosed at once, not a wait that spins on poll's POLLNVAL until the deadline
// (or for ever, with no deadline: a compile process spun at full speed so).
TEST(Ipc, ADescriptorThatIsNotOpenEndsTheRead) {
  Pipe p;
  const int gone = p.fd[0];
  ::close(gone);
  p.fd[0] = -1;
  ipc::Message m;
  const double cpu0 = thread_cpu_seconds();
  EXPECT_EQ(ipc::read_message(gone, m, 2.0), ipc::ReadStatus::kClosed);
  EXPECT_LT(thread_cpu_seconds() - cpu0, 0.5);
  EXPECT_EQ(ipc::read_message(gone, m, -1), ipc::ReadStatus::kClosed);
}

// A side channel whose writer has gone (the child closed its stdout) is drained and then left
// alone: the read waits for the message without spinning on the side channel's POLLHUP, keeps
// what the side channel said, and still gets the message when it comes.
TEST(Ipc, AClosedSideChannelIsNotPolledAgain) {
  Pipe messages, side;
  ASSERT_EQ(::write(side.fd[1], "last words", 10), 10);
  side.close_writer();
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    EXPECT_TRUE(ipc::write_message(messages.fd[1], {nlohmann::json{{"op", "late"}}, {}}));
  });
  ipc::Message m;
  std::string said;
  const double cpu0 = thread_cpu_seconds();
  ASSERT_EQ(ipc::read_message(messages.fd[0], m, 30, side.fd[0], &said), ipc::ReadStatus::kOk);
  const double cpu = thread_cpu_seconds() - cpu0;
  writer.join();
  EXPECT_EQ(m.header.at("op"), "late");
  EXPECT_EQ(said, "last words");
  // Spinning would have used most of the 0.6 s the message took to come.
  EXPECT_LT(cpu, 0.2) << "CPU seconds spent waiting";
  // And with nothing coming: a timeout after waiting, not after spinning.
  const double cpu1 = thread_cpu_seconds();
  EXPECT_EQ(ipc::read_message(messages.fd[0], m, 0.5, side.fd[0], &said),
            ipc::ReadStatus::kTimeout);
  EXPECT_LT(thread_cpu_seconds() - cpu1, 0.2);
}

}  // namespace
}  // namespace ktune
