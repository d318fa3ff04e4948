// What the fuzz targets share: a scratch directory for inputs that ktune reads from files, and
// the rule that a ktune::Error is the one accepted way to refuse an input. Anything else that
// escapes (another exception, a crash, a sanitizer report, a hang) is a finding.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ktune/error.h"

namespace ktune::fuzz {

// A directory of this process, made once, for files the target writes (on tmpfs where
// TMPDIR points there).
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "ktune-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline std::string write_input(const std::string& name, const std::uint8_t* data,
                               std::size_t size) {
  const std::filesystem::path path = scratch() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path.string();
}

// Runs `body`; a ktune::Error is a refusal and fine.
template <typename F>
void refusals_allowed(F&& body) {
  try {
    body();
  } catch (const ktune::Error&) {
  }
}

}  // namespace ktune::fuzz
