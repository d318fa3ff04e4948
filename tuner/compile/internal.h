// What the parts of ktune::compile share (internal, not API): the names of the resource fields
// (the cache file and the compile processes' protocol use them), and the compilation of a batch
// in a compile process, which the pool's threads call.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/compiler.h"

namespace ktune {
class Subprocess;
}

namespace ktune::detail {

// A decimal integer at the start of `text` (after spaces) into `value`; false if there is none.
bool parse_int(std::string_view text, int& value);

// Every CompiledResources field with its name ("registers", "spill-store-bytes" ...).
const std::vector<std::pair<std::string_view, int CompiledResources::*>>& resource_fields();

// A source that starts with `#include <...>` lines is rendered with them first, ended by
// kHeadersEnd, so that compile processes can reuse NVRTC's parse of them.
extern const char* const kHeadersEnd;
// Lets this process's compilations use NVRTC's precompiled headers, kept in `dir` (compile
// processes call it: NVRTC keeps them in one heap per process, which the tuner's threads would
// share).
void allow_precompiled_headers(const std::string& dir);
// Compiles a one-line kernel so that NVRTC's first-use cost (loading, its built-in headers) is
// paid before the first real request.
void warm_up_nvrtc();

// Compiles a batch in `process` (started with `command` when it is not running); a process that
// fails or dies fails the batch's configurations, each with the reason. `limits.batch` gives the
// batch's time limit in seconds, asked again while it waits (it may change meanwhile); past it
// the process is killed, each configuration fails with "compile timed out after N s" (N:
// `limits.per_config`'s answer) and `timed_out` is set.
struct CompileLimits {
  std::function<double(std::size_t configs)> batch;
  std::function<double()> per_config;
};
std::vector<CompileResult> remote_compile(Subprocess& process,
                                          const std::vector<std::string>& command,
                                          const std::vector<CompileRequest>& requests,
                                          const CompileLimits& limits, bool& timed_out);

}  // namespace ktune::detail
