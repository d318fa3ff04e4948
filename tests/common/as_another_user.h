// Runs a check as a user who cannot write a folder: the calling user after chmod, or, for root
// (whom permissions do not stop), a forked child that has become `nobody`. What the check
// returns comes back through a pipe.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace ktune::test {

// Makes `folder` and everything in it readable but not writable by anyone but root (root sees
// it through as_another_user), runs `check` as a user it stops, and gives the folder back its
// write permission. Returns the check's text, or nullopt when the check could not be run (the
// message says why in `why`).
inline std::optional<std::string> in_read_only_folder(const std::filesystem::path& folder,
                                                      const std::function<std::string()>& check,
                                                      std::string& why) {
  namespace fs = std::filesystem;
  // Every folder above must let `nobody` through.
  for (fs::path p = folder.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if ((fs::status(p).permissions() & fs::perms::others_exec) == fs::perms::none)
      fs::permissions(p, fs::perms::others_exec, fs::perm_options::add);
  for (const auto& e : fs::directory_iterator(folder))
    fs::permissions(e.path(), fs::perms(0644), fs::perm_options::replace);
  fs::permissions(folder, fs::perms(0555), fs::perm_options::replace);
  struct Restore {
    fs::path folder;
    ~Restore() {
      std::error_code ec;
      fs::permissions(folder, fs::perms(0755), fs::perm_options::replace, ec);
    }
  } restore{folder};
  if (::geteuid() != 0) return check();
  int fds[2];
  if (::pipe(fds) != 0) {
    why = "pipe failed";
    return std::nullopt;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    why = "fork failed";
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    std::string out;
    try {
      out = check();
    } catch (...) {
      out = "unexpected exception";
    }
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    why = WIFEXITED(status) && WEXITSTATUS(status) == 3 ? "cannot become the user nobody"
                                                        : "the check's process failed";
    return std::nullopt;
  }
  return out;
}

}  // namespace ktune::test
