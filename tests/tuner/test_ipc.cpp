// The pipe framing of the worker and compile-process protocols (process/ipc.h): messages with and
// without a blob, a blob larger than the pipe holds (written while the other end reads), several
// messages back to back, and a closed writer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>

#include "process/ipc.h"

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

TEST(Ipc, AWriteToAClosedReaderFails) {
  Pipe p;
  ::close(p.fd[0]);
  p.fd[0] = -1;
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(ipc::write_message(p.fd[1], {nlohmann::json{{"op", "x"}}, std::string(1000, 'a')}));
}

}  // namespace
}  // namespace ktune
