// Exit codes of the CLI per error kind (documented in docs/cli.md).
#include "ktune/error.h"

namespace ktune {

std::string excerpt(std::string_view text, std::size_t keep) {
  if (text.size() <= keep) return std::string(text);
  return std::string(text.substr(0, keep)) + "... (" + std::to_string(text.size()) + " characters)";
}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return 2;
    case ErrorKind::kInput:
      return 3;
    case ErrorKind::kPlugin:
      return 4;
    case ErrorKind::kDatabase:
      return 5;
    case ErrorKind::kCompile:
      return 6;
    case ErrorKind::kDevice:
      return 7;
    case ErrorKind::kInternal:
      return 70;
  }
  return 70;
}

}  // namespace ktune
