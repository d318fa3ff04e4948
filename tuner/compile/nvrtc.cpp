// NVRTC compilation of one request (or one batch) into CompileResults, failures kept as data,
// and what this NVRTC can target.
#include <cuda.h>  // CUDA_VERSION: the toolkit this is built with
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "compile/internal.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/hash.h"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;
// Thrown only inside compile(), where it becomes CompileResult::error; it never escapes.
struct NvrtcFailure {
  std::string message;
};

void check(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS) {
    throw NvrtcFailure{std::string(call) + ": " + nvrtcGetErrorString(result)};
  }
}

// nvrtcDestroyProgram must run on every path, including the failure ones.
class Program {
 public:
  explicit Program(const CompileRequest& request) {
    check(nvrtcCreateProgram(&program_, request.source.c_str(), request.source_name.c_str(), 0,
                             nullptr, nullptr),
          "nvrtcCreateProgram");
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// The first diagnostic that says "error", so a stored failure reads well without its log.
std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") != std::string::npos || line.find("fatal") != std::string::npos) {
      return line;
    }
  }
  return {};
}

}  // namespace

std::string CompileRequest::key() const {
  Hasher hasher;
  hasher.add("ktune-compile-1").add(source).add(entry);
  hasher.add(std::to_string(options.size()));
  for (const std::string& option : options) hasher.add(option);
  hasher.add(arch).add(nvrtc_version());
  return hasher.hex();
}

std::string nvrtc_version() {
  static const std::string version = [] {
    int major = 0;
    int minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return std::string("unknown");
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return version;
}

std::vector<std::string> nvrtc_supported_archs() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) {
    throw Error(ErrorKind::kCompile, "nvrtcGetNumSupportedArchs failed");
  }
  std::vector<int> numbers(static_cast<std::size_t>(count));
  if (nvrtcGetSupportedArchs(numbers.data()) != NVRTC_SUCCESS) {
    throw Error(ErrorKind::kCompile, "nvrtcGetSupportedArchs failed");
  }
  std::vector<std::string> archs;
  for (int number : numbers) archs.push_back("sm_" + std::to_string(number));
  return archs;
}

void check_arch(const std::string& arch) {
  std::vector<std::string> supported = nvrtc_supported_archs();
  std::string_view digits = arch;
  bool well_formed = digits.starts_with("sm_");
  if (well_formed) {
    digits.remove_prefix(3);
    if (digits.ends_with('a')) digits.remove_suffix(1);
    well_formed = !digits.empty() && std::all_of(digits.begin(), digits.end(),
                                                 [](char c) { return c >= '0' && c <= '9'; });
  }
  std::string base = "sm_" + std::string(digits);
  if (well_formed && std::find(supported.begin(), supported.end(), base) != supported.end()) {
    return;
  }
  std::string list;
  for (const std::string& name : supported) list += (list.empty() ? "" : ", ") + name;
  throw Error(ErrorKind::kUsage, "unsupported architecture '" + arch + "'; NVRTC " +
                                     nvrtc_version() + " supports " + list);
}

void detail::warm_up_nvrtc() {
  CompileRequest r;
  r.source = "extern \"C\" __global__ void ktune_warm_up(int* p) { if (p) *p = 0; }\n";
  r.source_name = "warm_up.cu";
  r.entry = "ktune_warm_up";
  r.options = {"--gpu-architecture=" + nvrtc_supported_archs().back()};
  (void)compile(r);
}

namespace {

std::atomic<bool> pch_allowed{false};
std::string pch_dir_option;  // "-pch-dir=...", set before pch_allowed

// NVRTC's precompiled headers (`-pch`): the first program whose text starts with a given header
// block (up to detail::kHeadersEnd) and options creates one in the process's PCH heap, and the
// programs after it that start the same way load it instead of parsing the headers again. That
// pays where the headers are heavy (cooperative_groups.h, CUB: 1.6-1.9x faster programs, measured
// in docs/compilation.md) and costs where they are light (cuda_fp16.h alone: 42 -> 70 ms). So each
// header block is measured once each way: its first program plain, the second with -pch (which
// creates the PCH), the third with it (which loads it); from the fourth on the faster of the first
// and third decides. The CUBIN is the same either way (tests/tuner/test_precompiled_headers.cpp).
struct HeaderBlock {
  int programs = 0;
  double plain_ms = -1;
  bool use = false;
};
std::mutex header_blocks_mutex;
std::unordered_map<std::string, HeaderBlock> header_blocks;

// Whether this program is compiled with -pch, and which step of its header block's trial it is
// (0 plain, 1 create, 2 load, 3 decided).
std::pair<bool, int> precompiled_header_plan(const CompileRequest& request, std::string& block) {
  if (!pch_allowed.load()) return {false, 3};
  const std::size_t end = request.source.find(detail::kHeadersEnd);
  if (end == std::string::npos) return {false, 3};
  Hasher h;
  h.add(request.source.substr(0, end));
  for (const auto& o : request.options) h.add(o);
  block = h.hex();
  std::lock_guard lock(header_blocks_mutex);
  HeaderBlock& b = header_blocks[block];
  const int step = std::min(b.programs++, 3);
  return {step == 1 || step == 2 || (step == 3 && b.use), step};
}

void record_header_block(const std::string& block, int step, double ms) {
  std::lock_guard lock(header_blocks_mutex);
  HeaderBlock& b = header_blocks[block];
  if (step == 0) b.plain_ms = ms;
  if (step == 2) b.use = b.plain_ms < 0 || ms < b.plain_ms;
}

}  // namespace

void detail::allow_precompiled_headers(const std::string& dir) {
  // Precompiled headers came with NVRTC 12.8; an older one refuses -pch as an unknown option.
#if CUDA_VERSION >= 12080
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS || major * 100 + minor < 1208) return;
  pch_dir_option = "-pch-dir=" + dir;
  pch_allowed = true;
#else
  (void)dir;
#endif
}

namespace {
CompileResult compile_once(const CompileRequest& request);
}  // namespace

CompileResult compile(const CompileRequest& request) {
  // A source compiled with -minimal that fails may use what -minimal leaves out (textures, the
  // runtime API's types, device-side launches): compile it again without, and keep that result.
  const auto minimal = std::find(request.options.begin(), request.options.end(), "-minimal");
  if (minimal != request.options.end()) {
    CompileResult first = compile_once(request);
    if (first.ok) return first;
    CompileRequest plain = request;
    plain.options.erase(plain.options.begin() + (minimal - request.options.begin()));
    CompileResult second = compile_once(plain);
    second.compile_ms += first.compile_ms;
    second.key = first.key;
    return second;
  }
  return compile_once(request);
}

namespace {

// The options NVRTC is given: the request's, and from NVRTC 12.9 on `--no-cache`. Since 12.9
// NVRTC keeps what it compiles in the CUDA driver's compute cache where a driver is installed,
// and a program found there comes back without running ptxas, so without the resource report
// of `--ptxas-options=-v` (registers, spills, shared memory unknown) and with a compile time
// that is not a compilation's. ktune's own CUBIN cache keeps the report with the CUBIN.
std::vector<const char*> nvrtc_options(const std::vector<std::string>& requested) {
  static const bool driver_cache = [] {
    int major = 0, minor = 0;
    return nvrtcVersion(&major, &minor) == NVRTC_SUCCESS &&
           (major > 12 || (major == 12 && minor >= 9));
  }();
  std::vector<const char*> options;
  options.reserve(requested.size() + 1);
  for (const std::string& option : requested) options.push_back(option.c_str());
  if (driver_cache) options.push_back("--no-cache");
  return options;
}

CompileResult compile_once(const CompileRequest& request) {
  CompileResult result;
  result.options = request.options;
  result.arch = request.arch;
  result.key = request.key();
  std::string block;
  const auto [pch, step] = precompiled_header_plan(request, block);
  Clock::time_point start = Clock::now();
  try {
    Program program(request);
    check(nvrtcAddNameExpression(program.get(), request.entry.c_str()), "nvrtcAddNameExpression");
    std::vector<const char*> options = nvrtc_options(request.options);
    if (pch) {
      // In a directory of the process's own, which NVRTC empties when the process ends; the
      // #line after the header block stops NVRTC's look for more headers, which it says.
      options.push_back("-pch");
      options.push_back(pch_dir_option.c_str());
      options.push_back("-diag-suppress=20283");
    }
    nvrtcResult compiled =
        nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
    result.log = program_log(program.get());
    check(compiled, "nvrtcCompileProgram");
#if CUDA_VERSION >= 12080
    if (pch && nvrtcGetPCHCreateStatus(program.get()) == NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) {
      // Too large for NVRTC's PCH heap: make room for it, so that the next program creates it.
      std::size_t need = 0;
      if (nvrtcGetPCHHeapSizeRequired(program.get(), &need) == NVRTC_SUCCESS && need > 0)
        nvrtcSetPCHHeapSize(need);
    }
#endif
    result.precompiled_header = pch;

    const char* lowered = nullptr;
    check(nvrtcGetLoweredName(program.get(), request.entry.c_str(), &lowered),
          "nvrtcGetLoweredName");
    result.lowered_name = lowered ? lowered : "";
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    if (size == 0) {
      // NVRTC succeeds for a virtual architecture (compute_NN) but then has PTX, not a CUBIN.
      throw NvrtcFailure{
          "nvrtcGetCUBIN: no CUBIN (was a virtual architecture given? use "
          "--gpu-architecture=sm_NN)"};
    }
    result.cubin.resize(size);
    check(nvrtcGetCUBIN(program.get(), result.cubin.data()), "nvrtcGetCUBIN");
    result.resources = parse_ptxas_resources(result.log, result.lowered_name);
    result.ok = true;
  } catch (const NvrtcFailure& failure) {
    result.ok = false;
    result.cubin.clear();
    result.lowered_name.clear();
    result.error =
        request.source_name + " '" + request.entry + "' " + request.arch + ": " + failure.message;
    if (std::string line = first_error_line(result.log); !line.empty()) {
      result.error += ": " + line;
    }
  }
  result.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!block.empty() && result.ok) record_header_block(block, step, result.compile_ms);
  return result;
}

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The entry with the configuration's macros replaced by their values: name expressions are
// resolved at the end of the program, after each namespace's #undefs.
std::string expand_macros(const std::string& text,
                          const std::vector<std::pair<std::string, std::string>>& defines) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (!is_identifier_char(text[i]) || (i > 0 && is_identifier_char(text[i - 1]))) {
      out += text[i++];
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_identifier_char(text[end])) ++end;
    const std::string word = text.substr(i, end - i);
    const auto it = std::find_if(defines.begin(), defines.end(),
                                 [&](const auto& d) { return d.first == word; });
    out += it == defines.end() ? word : it->second;
    i = end;
  }
  return out;
}

}  // namespace

std::vector<CompileResult> compile_batch(const std::vector<CompileRequest>& requests) {
  std::vector<CompileResult> results;
  if (requests.empty()) return results;
  const auto alone = [&] {
    results.clear();
    for (const CompileRequest& r : requests) results.push_back(compile(r));
    return results;
  };
  if (requests.size() == 1 || requests.front().batch_group.empty()) return alone();
  Clock::time_point start = Clock::now();
  // One namespace per configuration, its macros defined around the template and undefined after.
  CompileRequest combined = requests.front();
  combined.source.clear();
  std::vector<std::string> entries;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const CompileRequest& r = requests[i];
    if (r.batch_group != combined.batch_group) return alone();
    const std::string ns = "ktune_cfg_" + std::to_string(i);
    combined.source += "namespace " + ns + " {\n";
    for (const auto& [name, value] : r.defines)
      combined.source += "#define " + name + " " + value + "\n";
    combined.source += r.body + "\n}  // namespace " + ns + "\n";
    for (const auto& d : r.defines) combined.source += "#undef " + d.first + "\n";
    entries.push_back(ns + "::" + expand_macros(r.entry, r.defines));
  }
  try {
    Program program(combined);
    for (const std::string& e : entries)
      check(nvrtcAddNameExpression(program.get(), e.c_str()), "nvrtcAddNameExpression");
    const std::vector<const char*> options = nvrtc_options(combined.options);
    const nvrtcResult compiled =
        nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
    if (compiled != NVRTC_SUCCESS) return alone();
    const std::string log = program_log(program.get());
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    if (size == 0) return alone();
    std::string cubin(size, '\0');
    check(nvrtcGetCUBIN(program.get(), cubin.data()), "nvrtcGetCUBIN");
    const double share = std::chrono::duration<double, std::milli>(Clock::now() - start).count() /
                         static_cast<double>(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const char* lowered = nullptr;
      check(nvrtcGetLoweredName(program.get(), entries[i].c_str(), &lowered),
            "nvrtcGetLoweredName");
      CompileResult r;
      r.ok = true;
      r.cubin = cubin;
      r.lowered_name = lowered ? lowered : "";
      r.log = log;
      r.options = requests[i].options;
      r.arch = requests[i].arch;
      r.key = requests[i].key();
      r.resources = parse_ptxas_resources(log, r.lowered_name);
      r.compile_ms = share;
      // ptxas may compile a program's entries on several threads and interleave their reports;
      // an entry whose report cannot be told apart, or is missing from the log, is compiled
      // again on its own (its resources are never left unknown because of the batch).
      if (r.resources.registers < 0) {
        r = compile(requests[i]);
        r.compile_ms += share;
      }
      results.push_back(std::move(r));
    }
    return results;
  } catch (const NvrtcFailure&) {
    return alone();
  }
}

}  // namespace ktune
