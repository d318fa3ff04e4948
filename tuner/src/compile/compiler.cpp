// NVRTC compilation of one request into a CompileResult (failures kept as data), the parser
// for ptxas' verbose resource report, the on-disk CUBIN cache and the thread pool.
#include "ktune/compiler.h"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "process/ipc.h"
#include "ktune/error.h"
#include "ktune/hash.h"
#include "process/subprocess.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
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

bool parse_int(std::string_view text, int& value) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end != text.data();
}

// The integer that ends just before `suffix` in `line` (e.g. "512" in "512 bytes smem").
bool number_before(std::string_view line, std::string_view suffix, int& value) {
  std::size_t at = line.find(suffix);
  if (at == std::string_view::npos) return false;
  std::size_t begin = at;
  while (begin > 0 && line[begin - 1] == ' ') --begin;
  std::size_t end = begin;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  return begin < end && parse_int(line.substr(begin, end - begin), value);
}

}  // namespace

// ptxas names the function a block of lines is about ("Compiling entry function '...'",
// "Function properties for ..."), then reports on it; lines are attributed to the last function
// named, so device functions and other entries in the same program do not leak into ours.
CompiledResources parse_ptxas_resources(const std::string& log, const std::string& lowered_name) {
  CompiledResources resources;
  if (lowered_name.empty()) return resources;
  std::istringstream in(log);
  std::string current;
  bool seen_usage = false;
  for (std::string text; std::getline(in, text);) {
    std::string_view line = text;
    constexpr std::string_view kEntry = "Compiling entry function '";
    constexpr std::string_view kProperties = "Function properties for ";
    if (std::size_t at = line.find(kEntry); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + kEntry.size());
      current = std::string(rest.substr(0, rest.find('\'')));
      continue;
    }
    if (std::size_t at = line.find(kProperties); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + kProperties.size());
      while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
      current = std::string(rest);
      continue;
    }
    if (current != lowered_name) continue;
    if (line.find("bytes stack frame") != std::string_view::npos) {
      number_before(line, " bytes stack frame", resources.stack_frame_bytes);
      number_before(line, " bytes spill stores", resources.spill_store_bytes);
      number_before(line, " bytes spill loads", resources.spill_load_bytes);
    } else if (!seen_usage && line.find("Used ") != std::string_view::npos &&
               number_before(line, " registers", resources.registers)) {
      // ptxas leaves out zero shared memory; constant banks are summed, and stay unknown where
      // ptxas does not report them (sm_90 and newer under CUDA 13).
      seen_usage = true;
      resources.static_shared_bytes = 0;
      number_before(line, " bytes smem", resources.static_shared_bytes);
      std::string_view rest = line;
      int bank = 0;
      while (number_before(rest, " bytes cmem[", bank)) {
        resources.constant_bytes = std::max(resources.constant_bytes, 0) + bank;
        rest = rest.substr(rest.find(" bytes cmem[") + 1);
      }
    }
  }
  return resources;
}

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

CompileResult compile(const CompileRequest& request) {
  CompileResult result;
  result.options = request.options;
  result.arch = request.arch;
  result.key = request.key();
  Clock::time_point start = Clock::now();
  try {
    Program program(request);
    check(nvrtcAddNameExpression(program.get(), request.entry.c_str()), "nvrtcAddNameExpression");
    std::vector<const char*> options;
    options.reserve(request.options.size());
    for (const std::string& option : request.options) options.push_back(option.c_str());
    nvrtcResult compiled =
        nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
    result.log = program_log(program.get());
    check(compiled, "nvrtcCompileProgram");

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
  return result;
}

namespace {

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
    const auto it = std::find_if(defines.begin(), defines.end(), [&](const auto& d) { return d.first == word; });
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
    for (const auto& [name, value] : r.defines) combined.source += "#define " + name + " " + value + "\n";
    combined.source += r.body + "\n}  // namespace " + ns + "\n";
    for (const auto& d : r.defines) combined.source += "#undef " + d.first + "\n";
    entries.push_back(ns + "::" + expand_macros(r.entry, r.defines));
  }
  try {
    Program program(combined);
    for (const std::string& e : entries) check(nvrtcAddNameExpression(program.get(), e.c_str()), "nvrtcAddNameExpression");
    std::vector<const char*> options;
    for (const std::string& option : combined.options) options.push_back(option.c_str());
    const nvrtcResult compiled =
        nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
    if (compiled != NVRTC_SUCCESS) return alone();
    const std::string log = program_log(program.get());
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    if (size == 0) return alone();
    std::string cubin(size, '\0');
    check(nvrtcGetCUBIN(program.get(), cubin.data()), "nvrtcGetCUBIN");
    const double share =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count() / static_cast<double>(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const char* lowered = nullptr;
      check(nvrtcGetLoweredName(program.get(), entries[i].c_str(), &lowered), "nvrtcGetLoweredName");
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
      results.push_back(std::move(r));
    }
    return results;
  } catch (const NvrtcFailure&) {
    return alone();
  }
}

// ---------------------------------------------------------------------------------------------
// The cache. One file per entry, <dir>/<key>.kcubin: a header line, then records
// "<name> <length>\n<bytes>\n", ending with "end 0\n\n". Length prefixes keep the CUBIN and the
// log binary-safe; the trailing end record and the CUBIN's hash let get() reject a truncated or
// damaged file as a miss. Layout is documented in docs/compilation.md.

namespace {

constexpr std::string_view kCacheMagic = "ktune-compile-cache 1\n";
constexpr std::string_view kElfMagic = "\177ELF";

void add_record(std::string& out, std::string_view name, std::string_view bytes) {
  out.append(name).append(" ").append(std::to_string(bytes.size())).append("\n");
  out.append(bytes).append("\n");
}

struct Record {
  std::string_view name;
  std::string_view bytes;
};

// Splits the file into records; nullopt for anything malformed or truncated.
std::optional<std::vector<Record>> parse_records(std::string_view file) {
  if (!file.starts_with(kCacheMagic)) return std::nullopt;
  file.remove_prefix(kCacheMagic.size());
  std::vector<Record> records;
  while (!file.empty()) {
    std::size_t space = file.find(' ');
    std::size_t newline = file.find('\n');
    if (space == std::string_view::npos || newline == std::string_view::npos || space > newline) {
      return std::nullopt;
    }
    std::size_t length = 0;
    std::string_view digits = file.substr(space + 1, newline - space - 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    Record record{file.substr(0, space), {}};
    file.remove_prefix(newline + 1);
    if (file.size() < length + 1 || file[length] != '\n') return std::nullopt;
    record.bytes = file.substr(0, length);
    file.remove_prefix(length + 1);
    if (record.name == "end") return file.empty() ? std::optional(records) : std::nullopt;
    records.push_back(record);
  }
  return std::nullopt;  // no end record: the file was cut short
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(bytes).str();
}

fs::path entry_path(const fs::path& dir, const std::string& key) { return dir / (key + ".kcubin"); }

// Resource fields by name, so the file stays readable and fields can be added later.
const std::vector<std::pair<std::string_view, int CompiledResources::*>>& resource_fields() {
  static const std::vector<std::pair<std::string_view, int CompiledResources::*>> fields = {
      {"registers", &CompiledResources::registers},
      {"spill-store-bytes", &CompiledResources::spill_store_bytes},
      {"spill-load-bytes", &CompiledResources::spill_load_bytes},
      {"stack-frame-bytes", &CompiledResources::stack_frame_bytes},
      {"static-shared-bytes", &CompiledResources::static_shared_bytes},
      {"constant-bytes", &CompiledResources::constant_bytes},
  };
  return fields;
}

}  // namespace

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path CompileCache::default_dir() {
  auto env = [](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
  };
  if (const char* dir = env("KTUNE_CACHE_DIR")) return dir;
  if (const char* dir = env("XDG_CACHE_HOME")) return fs::path(dir) / "ktune";
  if (const char* home = env("HOME")) return fs::path(home) / ".cache" / "ktune";
  return fs::temp_directory_path() / "ktune-cache";
}

std::optional<CompileResult> CompileCache::get(const CompileRequest& request) const {
  const std::string key = request.key();
  std::optional<std::string> file = read_file(entry_path(dir_, key));
  if (!file) return std::nullopt;
  std::optional<std::vector<Record>> records = parse_records(*file);
  if (!records) return std::nullopt;

  CompileResult result;
  std::string stored_key;
  std::string cubin_hash;
  for (const Record& record : *records) {
    if (record.name == "key") {
      stored_key = record.bytes;
    } else if (record.name == "lowered-name") {
      result.lowered_name = record.bytes;
    } else if (record.name == "log") {
      result.log = record.bytes;
    } else if (record.name == "cubin-hash") {
      cubin_hash = record.bytes;
    } else if (record.name == "cubin") {
      result.cubin = record.bytes;
    }
    for (const auto& [name, field] : resource_fields()) {
      if (record.name == name && !parse_int(record.bytes, result.resources.*field)) {
        return std::nullopt;
      }
    }
  }
  if (stored_key != key || result.lowered_name.empty() || !result.cubin.starts_with(kElfMagic) ||
      cubin_hash != content_hash(result.cubin)) {
    return std::nullopt;
  }
  result.ok = true;
  result.options = request.options;
  result.arch = request.arch;
  result.key = key;
  result.compile_ms = 0;
  result.from_cache = true;
  return result;
}

bool CompileCache::put(const CompileResult& result) {
  // Failed compiles are cheap to redo and may depend on the environment (headers, toolkit).
  if (!result.ok || result.key.empty() || result.cubin.empty()) return false;
  std::string bytes(kCacheMagic);
  add_record(bytes, "key", result.key);
  add_record(bytes, "nvrtc", nvrtc_version());
  add_record(bytes, "arch", result.arch);
  add_record(bytes, "lowered-name", result.lowered_name);
  for (const std::string& option : result.options) add_record(bytes, "option", option);
  for (const auto& [name, field] : resource_fields()) {
    add_record(bytes, name, std::to_string(result.resources.*field));
  }
  add_record(bytes, "log", result.log);
  add_record(bytes, "cubin-hash", content_hash(result.cubin));
  add_record(bytes, "cubin", result.cubin);
  add_record(bytes, "end", "");

  // A unique temporary name in the same directory, then rename(2): readers in any thread or
  // process see the old entry or the whole new one, never a partial file.
  static std::atomic<unsigned long> counter{0};
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return false;
  fs::path temp = dir_ / ("." + result.key + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1)));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      return false;
    }
  }
  fs::rename(temp, entry_path(dir_, result.key), ec);
  if (ec) {
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

CompileResult compile_cached(const CompileRequest& request, CompileCache* cache) {
  if (cache) {
    if (std::optional<CompileResult> hit = cache->get(request)) return std::move(*hit);
  }
  CompileResult result = compile(request);
  if (cache) cache->put(result);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Compile processes: the same compile(), in a child process, over the ipc framing. Some NVRTC
// builds serialise compilations inside one process; separate processes always run in parallel.

namespace {

using nlohmann::json;

json resources_json(const CompiledResources& r) {
  json j;
  for (const auto& [name, field] : resource_fields()) j[std::string(name)] = r.*field;
  return j;
}

CompiledResources resources_from(const json& j) {
  CompiledResources r;
  for (const auto& [name, field] : resource_fields()) r.*field = j.value(std::string(name), -1);
  return r;
}

// NVRTC logs and sources are text, but not necessarily valid UTF-8; replace what JSON cannot hold.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json request_json(const CompileRequest& r) {
  return json{{"source", r.source},   {"source_name", r.source_name}, {"entry", r.entry},
              {"options", r.options}, {"arch", r.arch},               {"batch_group", r.batch_group},
              {"body", r.body},       {"defines", r.defines}};
}

CompileRequest request_from(const json& h) {
  CompileRequest r;
  r.source = h.value("source", "");
  r.source_name = h.value("source_name", "");
  r.entry = h.value("entry", "");
  r.options = h.value("options", std::vector<std::string>{});
  r.arch = h.value("arch", "");
  r.batch_group = h.value("batch_group", "");
  r.body = h.value("body", "");
  r.defines = h.value("defines", std::vector<std::pair<std::string, std::string>>{});
  return r;
}

// The results of a batch travel as JSON headers plus one blob holding each distinct CUBIN once.
ipc::Message results_message(std::vector<CompileResult>& results) {
  json out = json::array();
  std::vector<std::string> cubins;
  std::string blob;
  json sizes = json::array();
  for (CompileResult& r : results) {
    int index = -1;
    if (!r.cubin.empty()) {
      auto it = std::find(cubins.begin(), cubins.end(), r.cubin);
      index = static_cast<int>(it - cubins.begin());
      if (it == cubins.end()) {
        cubins.push_back(r.cubin);
        sizes.push_back(r.cubin.size());
        blob += r.cubin;
      }
    }
    out.push_back({{"ok", r.ok},         {"lowered_name", r.lowered_name}, {"error", r.error},
                   {"log", r.log},       {"options", r.options},           {"arch", r.arch},
                   {"key", r.key},       {"resources", resources_json(r.resources)},
                   {"compile_ms", r.compile_ms}, {"cubin", index}});
  }
  return {json::parse(dump(json{{"results", out}, {"cubin_sizes", sizes}})), std::move(blob)};
}

std::vector<CompileResult> remote_compile(Subprocess& process, const std::vector<std::string>& command,
                                          const std::vector<CompileRequest>& requests) {
  const auto all_failed = [&](const std::string& error, const std::string& log) {
    std::vector<CompileResult> out;
    for (const CompileRequest& r : requests) {
      CompileResult failed;
      failed.arch = r.arch;
      failed.options = r.options;
      failed.key = r.key();
      failed.error = error;
      failed.log = log;
      out.push_back(std::move(failed));
    }
    return out;
  };
  if (!process.running()) {
    try {
      process.start(command, /*own_group=*/true);
    } catch (const Error& e) {
      return all_failed(e.what(), "");
    }
  }
  json batch = json::array();
  for (const CompileRequest& r : requests) batch.push_back(request_json(r));
  ipc::Message reply;
  // NVRTC does not hang on its own; the limit only guards against a wedged process.
  constexpr double kLimitSeconds = 600;
  if (!process.send({json::parse(dump(json{{"batch", batch}})), {}}) ||
      process.receive(reply, kLimitSeconds) != ipc::ReadStatus::kOk) {
    const std::string output = process.output_tail();
    return all_failed("compile process " + process.stop(true), output);
  }
  std::vector<std::string> cubins;
  std::size_t offset = 0;
  for (const auto& size : reply.header.value("cubin_sizes", json::array())) {
    const auto n = size.get<std::size_t>();
    cubins.push_back(reply.blob.substr(offset, n));
    offset += n;
  }
  std::vector<CompileResult> out;
  for (const json& h : reply.header.value("results", json::array())) {
    CompileResult r;
    r.ok = h.value("ok", false);
    const int index = h.value("cubin", -1);
    if (index >= 0 && static_cast<std::size_t>(index) < cubins.size()) r.cubin = cubins[static_cast<std::size_t>(index)];
    r.lowered_name = h.value("lowered_name", "");
    r.error = h.value("error", "");
    r.log = h.value("log", "");
    r.options = h.value("options", std::vector<std::string>{});
    r.arch = h.value("arch", "");
    r.key = h.value("key", "");
    r.resources = resources_from(h.value("resources", json::object()));
    r.compile_ms = h.value("compile_ms", 0.0);
    out.push_back(std::move(r));
  }
  if (out.size() != requests.size()) return all_failed("compile process answered a different number of results", "");
  return out;
}

}  // namespace

int compile_worker_main() {
  for (;;) {
    ipc::Message message;
    if (ipc::read_message(3, message, -1) != ipc::ReadStatus::kOk) return 0;
    const json& h = message.header;
    if (h.value("op", "") == "quit") return 0;
    std::vector<CompileRequest> requests;
    for (const json& r : h.value("batch", json::array())) requests.push_back(request_from(r));
    std::vector<CompileResult> results = compile_batch(requests);
    if (!ipc::write_message(4, results_message(results))) return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// The pool: a queue served by N threads. Submissions with a key already queued or compiling
// share that future, so a strategy that asks twice for one config pays once.

struct CompilePool::Impl {
  struct Task {
    CompileRequest request;
    std::string key;
    std::shared_ptr<std::promise<CompileResult>> promise;
  };

  std::shared_ptr<CompileCache> cache;
  std::vector<std::string> process_command;  // empty: compile in this process
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Task> queue;
  std::unordered_map<std::string, std::shared_future<CompileResult>> in_flight;
  bool stopping = false;
  std::vector<std::thread> workers;
  std::atomic<long long> busy_ns{0};
  std::atomic<std::size_t> compiles{0};

  std::size_t max_batch = 16;

  void work() {
    Subprocess process;  // this thread's compile process, when the pool uses processes
    for (;;) {
      std::vector<Task> tasks;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping and drained
        tasks.push_back(std::move(queue.front()));
        queue.pop_front();
        // Take queued requests of the same batch group along, sharing the queue fairly among
        // the threads so that batching never leaves threads idle.
        const std::string& group = tasks.front().request.batch_group;
        if (!group.empty() && max_batch > 1) {
          const std::size_t fair = (queue.size() + 1 + workers.size() - 1) / workers.size();
          const std::size_t limit = std::min(max_batch, std::max<std::size_t>(1, fair));
          for (auto it = queue.begin(); it != queue.end() && tasks.size() < limit;) {
            if (it->request.batch_group == group) {
              tasks.push_back(std::move(*it));
              it = queue.erase(it);
            } else {
              ++it;
            }
          }
        }
      }
      std::vector<CompileResult> results;
      std::exception_ptr failure;
      try {
        results = run(tasks, process);
      } catch (...) {
        failure = std::current_exception();
      }
      // Leave the in-flight map before the futures become ready, so a submission that follows
      // a finished one goes through the cache instead of holding on to a future.
      {
        std::lock_guard lock(mutex);
        for (const Task& t : tasks) in_flight.erase(t.key);
      }
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (failure) {
          tasks[i].promise->set_exception(failure);
        } else {
          tasks[i].promise->set_value(std::move(results[i]));
        }
      }
    }
  }

  std::vector<CompileResult> run(const std::vector<Task>& tasks, Subprocess& process) {
    std::vector<CompileResult> results(tasks.size());
    std::vector<std::size_t> misses;
    std::vector<CompileRequest> requests;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      std::optional<CompileResult> hit = cache ? cache->get(tasks[i].request) : std::nullopt;
      if (hit) {
        results[i] = std::move(*hit);
      } else {
        misses.push_back(i);
        requests.push_back(tasks[i].request);
      }
    }
    if (requests.empty()) return results;
    Clock::time_point start = Clock::now();
    std::vector<CompileResult> compiled =
        process_command.empty() ? compile_batch(requests) : remote_compile(process, process_command, requests);
    busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    compiles += requests.size();
    for (std::size_t k = 0; k < misses.size(); ++k) {
      if (cache) cache->put(compiled[k]);
      results[misses[k]] = std::move(compiled[k]);
    }
    return results;
  }
};

CompilePool::CompilePool(std::size_t threads, std::shared_ptr<CompileCache> cache,
                         std::vector<std::string> process_command)
    : impl_(std::make_unique<Impl>()) {
  impl_->cache = std::move(cache);
  impl_->process_command = std::move(process_command);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  impl_->workers.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    impl_->workers.emplace_back([impl = impl_.get()] { impl->work(); });
  }
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  for (std::thread& worker : impl_->workers) worker.join();
}

std::shared_future<CompileResult> CompilePool::submit(CompileRequest request) {
  std::string key = request.key();
  std::lock_guard lock(impl_->mutex);
  if (auto found = impl_->in_flight.find(key); found != impl_->in_flight.end()) {
    return found->second;
  }
  auto promise = std::make_shared<std::promise<CompileResult>>();
  std::shared_future<CompileResult> future = promise->get_future().share();
  impl_->in_flight.emplace(key, future);
  impl_->queue.push_back(Impl::Task{std::move(request), std::move(key), std::move(promise)});
  impl_->wake.notify_one();
  return future;
}

std::size_t CompilePool::threads() const { return impl_->workers.size(); }

void CompilePool::set_max_batch(std::size_t n) {
  std::lock_guard lock(impl_->mutex);
  impl_->max_batch = std::max<std::size_t>(1, n);
}

double CompilePool::busy_seconds() const { return impl_->busy_ns.load() * 1e-9; }

std::size_t CompilePool::compiles() const { return impl_->compiles.load(); }

}  // namespace ktune
