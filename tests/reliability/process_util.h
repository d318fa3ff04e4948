// Helpers of the reliability tests: `ktune` started as a child process (output to a log file),
// killed or waited for, and the checks read from a database with SQLite directly.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace ktune::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "ktune-reliability-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// `ktune ARGS` started in its own process group, stdout and stderr appended to `log`.
inline pid_t spawn_ktune(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> argv_s = {KTUNE_EXE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("posix_spawn of ktune failed");
  return pid;
}

// The exit code of a child, 128 + signal when a signal ended it.
inline int wait_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether the child has already exited (reaping it, its code in `code`).
inline bool exited(pid_t pid, int& code) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) != pid) return false;
  code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

inline int run_ktune_to_end(const std::vector<std::string>& args, const fs::path& log) {
  return wait_exit(spawn_ktune(args, log));
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What the reliability checks read from a database.
struct DbFacts {
  std::string integrity;              // PRAGMA integrity_check: "ok"
  std::set<std::string> search_keys;  // configurations with a search trial
  std::size_t search_trials = 0;      // search trials (a configuration measured twice: more)
  std::size_t measured_twice = 0;     // configurations with more than one search trial
  std::string best_key;               // the stored best's configuration
  std::size_t runs_running = 0;       // run rows still saying running
};

// The runs of a database, a line each (id, status, search trials, summary): what a failed
// comparison prints, so that a rare failure can be read from the log alone.
inline std::string runs_text(const fs::path& db) {
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(d,
                      "SELECT r.id, r.status, (SELECT count(*) FROM trials t WHERE t.run_id = r.id "
                      "AND t.kind = 0), r.summary FROM runs r ORDER BY r.id");
  std::string out;
  while (q.executeStep())
    out += "run " + q.getColumn(0).getString() + " " + q.getColumn(1).getString() + ", " +
           q.getColumn(2).getString() + " search trials: " + q.getColumn(3).getString() + "\n";
  return out;
}

inline DbFacts read_facts(const fs::path& db) {
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  DbFacts f;
  f.integrity = d.execAndGet("PRAGMA integrity_check").getString();
  SQLite::Statement keys(d, "SELECT config_key, count(*) FROM trials WHERE kind = 0 GROUP BY 1");
  while (keys.executeStep()) {
    f.search_keys.insert(keys.getColumn(0).getString());
    const int n = keys.getColumn(1).getInt();
    f.search_trials += static_cast<std::size_t>(n);
    if (n > 1) ++f.measured_twice;
  }
  SQLite::Statement best(d, "SELECT t.config_key FROM best b JOIN trials t ON t.id = b.trial_id");
  if (best.executeStep()) f.best_key = best.getColumn(0).getString();
  f.runs_running = static_cast<std::size_t>(
      d.execAndGet("SELECT count(*) FROM runs WHERE status = 'running'").getInt());
  return f;
}

}  // namespace ktune::test
