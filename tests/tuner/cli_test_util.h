// Helpers of the tuner and CLI tests: temporary directories, file snapshots, an environment
// guard, Error expectations, golden files, and running the real `ktune` binary with its output
// and exit code captured.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/env_guard.h"
#include "ktune/error.h"
#include "ktune/registry.h"

extern char** environ;

namespace ktune::test {

namespace fs = std::filesystem;

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ktune-tuner-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Runs `body`, expecting Error(kind) whose message contains every needle; returns the message.
template <typename F>
std::string expect_error(ErrorKind kind, const std::vector<std::string>& needles, F&& body) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << "message: " << e.what();
    for (const auto& needle : needles)
      EXPECT_TRUE(contains(e.what(), needle))
          << "message: " << e.what() << "\nexpected to contain: " << needle;
    return e.what();
  }
  ADD_FAILURE() << "expected an Error; nothing was thrown";
  return {};
}

// Compares text with tests/golden/<name>. KTUNE_UPDATE_GOLDEN=1 rewrites the file instead (to
// approve a deliberate change; review the diff before committing it).
inline void expect_golden(const std::string& name, const std::string& actual) {
  const fs::path path = fs::path(KTUNE_GOLDEN_DIR) / name;
  const char* update = std::getenv("KTUNE_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    write_file(path, actual);
    std::cout << "[ golden   ] rewrote " << path.string() << "\n";
    return;
  }
  if (!fs::exists(path)) {
    ADD_FAILURE() << path << " is missing; run with KTUNE_UPDATE_GOLDEN=1 to create it. Output:\n"
                  << actual;
    return;
  }
  const std::string expected = read_file(path);
  EXPECT_EQ(expected, actual) << "output differs from " << path
                              << "; if the change is intended, re-approve with "
                                 "KTUNE_UPDATE_GOLDEN=1";
}

// Drops every line that contains `needle` (for lines that vary between runs, like timings).
inline std::string drop_lines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line))
    if (!contains(line, needle)) out += line + "\n";
  return out;
}

struct CliResult {
  int code = -1;    // exit status; 128 + signal if it was killed
  std::string out;  // stdout
  std::string err;  // stderr
  std::string command;
};

inline std::ostream& operator<<(std::ostream& os, const CliResult& r) {
  return os << "$ " << r.command << "\nexit " << r.code << "\n--- stdout\n"
            << r.out << "--- stderr\n"
            << r.err;
}

// Runs the real ktune binary in `cwd` with stdout and stderr captured. The child's environment
// is this process's without any KTUNE_* variable, plus KTUNE_CACHE_DIR=<cache_dir> and `env`
// (a nullopt value leaves a variable unset). Killed after `timeout`.
inline CliResult run_ktune(const std::vector<std::string>& args, const fs::path& cwd,
                           const fs::path& cache_dir,
                           const std::map<std::string, std::optional<std::string>>& env = {},
                           std::chrono::seconds timeout = std::chrono::seconds(300)) {
  CliResult r;
  r.command = "ktune";
  for (const auto& a : args) r.command += " " + a;

  static int counter = 0;
  const fs::path capture =
      fs::temp_directory_path() /
      ("ktune-cli-capture-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(capture);
  const std::string out_path = (capture / "stdout").string();
  const std::string err_path = (capture / "stderr").string();

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string item(*e);
    if (item.rfind("KTUNE_", 0) == 0) continue;
    const std::string name = item.substr(0, item.find('='));
    if (env.count(name)) continue;
    env_strings.push_back(item);
  }
  env_strings.push_back("KTUNE_CACHE_DIR=" + cache_dir.string());
  for (const auto& [name, value] : env)
    if (value) env_strings.push_back(name + "=" + *value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::vector<std::string> argv_strings = {KTUNE_EXE};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string cwd_string = cwd.string();

  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed: " << std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (out_fd < 0 || err_fd < 0 || null_fd < 0 || chdir(cwd_string.c_str()) != 0) _exit(126);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      ADD_FAILURE() << "waitpid failed: " << std::strerror(errno);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << r.command << ": killed after " << timeout.count() << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status))
    r.code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.code = 128 + WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  std::error_code ec;
  fs::remove_all(capture, ec);
  return r;
}

// Paths of the test plugins and fixtures.
// The names of the built-in kernels together with `extra`, sorted as the registry lists them.
inline std::vector<std::string> with_builtins(std::vector<std::string> extra) {
  Registry r;
  register_builtin_kernels(r);
  for (const auto& k : r.kernels()) extra.push_back(k->name);
  std::sort(extra.begin(), extra.end());
  return extra;
}

inline std::string good_plugin() { return KTUNE_TEST_PLUGIN_GOOD; }
inline std::string wrong_abi_plugin() { return KTUNE_TEST_PLUGIN_WRONG_ABI; }
inline std::string no_entry_plugin() { return KTUNE_TEST_PLUGIN_NO_ENTRY; }
inline fs::path manifest_dir() { return fs::path(KTUNE_TEST_DATA_DIR) / "manifests"; }
inline std::string valid_manifest() { return (manifest_dir() / "vecscale.toml").string(); }
inline std::string broken_manifest(const std::string& name) {
  return (manifest_dir() / "broken" / name).string();
}

}  // namespace ktune::test
