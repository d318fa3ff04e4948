// The on-disk CUBIN cache (see docs/compilation.md for its file layout).
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <system_error>

#include "compile/internal.h"
#include "ktune/compiler.h"
#include "ktune/hash.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::parse_int;
using detail::resource_fields;

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

}  // namespace ktune
