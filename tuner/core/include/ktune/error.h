// ktune's exception type. Inside the library errors are thrown; the CLI and the plugin C entry
// points turn them into messages and exit codes. Messages follow one style: context first, lower
// case, no trailing period ("reduce[block_size=1024] sm_90: too many resources requested").
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace ktune {

// What kind of failure, so the CLI can pick an exit code and tests can assert on it.
enum class ErrorKind {
  kUsage,     // bad command line, unknown kernel/parameter, malformed value
  kInput,     // malformed file: manifest, config, expression, replay data
  kPlugin,    // plugin could not be loaded, wrong ABI version
  kDatabase,  // not a ktune database, newer schema, corrupt, locked
  kCompile,   // NVRTC itself failed (not a compile error of a config: that is data)
  kDevice,    // no GPU / driver, CUDA error outside a trial
  kInternal,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// What a message quotes of a name the user gave: the name itself, or where it is longer than
// `keep` characters its start, "...", and its length ("aaaa... (10485760 characters)").
std::string excerpt(std::string_view text, std::size_t keep = 64);

// Process exit codes of the ktune CLI, one per ErrorKind (documented in docs/cli.md).
int exit_code(ErrorKind kind);

}  // namespace ktune
