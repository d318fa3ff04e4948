// Kernel Tuner cache files: reading them (plain or gzip) into a Recording, and writing a
// Recording back in that format. The format and its quirks (an empty device_name, a problem_size
// that is a bare number, failures as strings in `time`) are documented in docs/replay.md.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/input_file.h"
#include "ktune/replay.h"
#include "ktune/sample_stats.h"

namespace ktune {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw Error(ErrorKind::kInput, fmt::format("{}: {}", origin, what));
}

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& bytes, const std::string& origin) {
  z_stream z{};
  // 15 + 32: zlib detects the gzip header itself.
  if (inflateInit2(&z, 15 + 32) != Z_OK) fail(origin, "zlib: cannot initialise inflate");
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int rc = Z_OK;
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
    if (out.size() > kMaxRecordingBytes) {
      inflateEnd(&z);
      fail(origin, fmt::format("unpacks to more than {} MiB; a recording is read whole",
                               kMaxRecordingBytes >> 20));
    }
    if (rc == Z_STREAM_END) {
      // gzip allows several members one after the other.
      if (z.avail_in == 0) break;
      inflateReset(&z);
      continue;
    }
    if (rc != Z_OK) break;
    if (z.avail_in == 0 && z.avail_out != 0) {
      rc = Z_DATA_ERROR;  // input ended inside the stream
      break;
    }
  }
  const std::string msg = z.msg ? z.msg : (rc == Z_DATA_ERROR ? "truncated data" : zError(rc));
  inflateEnd(&z);
  if (rc != Z_STREAM_END) fail(origin, fmt::format("not a valid gzip file (zlib: {})", msg));
  return out;
}

std::string gzip(const std::string& text, const std::string& origin) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail(origin, "zlib: cannot initialise deflate");
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = deflate(&z, Z_FINISH);
    out.append(buf, sizeof(buf) - z.avail_out);
  } while (rc == Z_OK);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) fail(origin, "zlib: compression failed");
  return out;
}

Value value_of(const json& j, const std::string& origin, const std::string& where) {
  if (j.is_boolean())
    return Value(std::string(j.get<bool>() ? "True" : "False"));  // Python's str()
  if (j.is_number_integer()) return Value(j.get<std::int64_t>());
  if (j.is_number_float()) return Value(j.get<double>());
  if (j.is_string()) return Value(j.get<std::string>());
  fail(origin, fmt::format("{}: expected a number or a string, found {}", where, j.dump()));
}

nlohmann::ordered_json json_of(const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_double()) return v.as_double();
  return v.as_string();
}

// A recorded energy or power: a finite number above zero, else NaN (not recorded).
double positive_or_nan(const json& entry, const char* key) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_number()) return std::nan("");
  const double v = it->get<double>();
  return std::isfinite(v) && v > 0 ? v : std::nan("");
}

double number_or_zero(const json& entry, const char* key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_number() ? it->get<double>() : 0.0;
}

TrialStatus status_of_kt_string(const std::string& s) {
  if (s == "InvalidConfig") return TrialStatus::kInvalid;
  if (s == "CompilationFailedConfig") return TrialStatus::kCompileFailed;
  if (s == "RuntimeFailedConfig") return TrialStatus::kLaunchFailed;
  return TrialStatus::kCrashed;  // any other failure Kernel Tuner names; the string is kept
}

void fill_stats(RecordedTrial& t) {
  const SampleStats s = sample_stats(t.samples_ms);
  t.time_ms = s.median;
  t.time_min_ms = s.min;
  t.time_mean_ms = s.mean;
  t.time_spread = s.spread;
}

std::vector<std::string> split_key(std::string_view key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const auto comma = key.find(',', start);
    parts.emplace_back(key.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

std::string match_text(const Value& v) {
  if (v.is_double() && std::isfinite(v.as_double()) && std::floor(v.as_double()) == v.as_double() &&
      std::fabs(v.as_double()) < 9e15)
    return std::to_string(static_cast<long long>(v.as_double()));
  return v.to_string();
}

}  // namespace

std::string recording_key(const std::vector<Value>& values) {
  std::string key;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) key += ',';
    key += match_text(values[i]);
  }
  return key;
}

std::string read_maybe_gzip(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "no such file");
  if (fs::is_directory(path, ec)) fail(path, "is a directory, not a file");
  const std::string bytes = read_input_file(path, "", kMaxRecordingBytes);
  return is_gzip(bytes) ? gunzip(bytes, path) : bytes;
}

void write_maybe_gzip(const std::string& path, const std::string& text) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  const std::string bytes = gz ? gzip(text, path) : text;
  // Written next to the target and renamed, so a reader never sees half a file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, "cannot create the file");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail(path, "cannot write the file");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(path, fmt::format("cannot write the file ({})", ec.message()));
  }
}

Recording read_kt_cache(const std::string& path, const std::string& device_name) {
  const std::string text = read_maybe_gzip(path);
  Recording r = parse_kt_cache(text, path, device_name);
  r.path = path;
  if (r.device_name.empty()) {
    // Kernel Tuner leaves device_name empty for some devices (HIP on an MI250X): take the name
    // of the file, whose convention (<kernel>-<device>-<problem>) holds it or which at least
    // tells recordings apart.
    std::string stem = fs::path(path).filename().string();
    for (const char* ext : {".gz", ".json"})
      if (stem.size() > std::strlen(ext) &&
          stem.compare(stem.size() - std::strlen(ext), std::string::npos, ext) == 0)
        stem.resize(stem.size() - std::strlen(ext));
    const std::string prefix = r.kernel_name + "-";
    const std::string suffix = "-" + r.problem_key();
    if (stem.size() > prefix.size() + suffix.size() &&
        stem.compare(0, prefix.size(), prefix) == 0 &&
        stem.compare(stem.size() - suffix.size(), std::string::npos, suffix) == 0)
      stem = stem.substr(prefix.size(), stem.size() - prefix.size() - suffix.size());
    r.device_name = stem;
    r.notes.push_back(
        fmt::format("{}: the file names no device; calling it '{}' (--replay-device NAME names it)",
                    path, stem));
  }
  return r;
}

namespace {
json parse_json_text(std::string_view text, const std::string& origin) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1...".
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    fail(origin, fmt::format("not a Kernel Tuner cache: not JSON ({})", what));
  }
}

void check_header(const json& d, const std::string& origin) {
  if (!d.is_object()) fail(origin, "not a Kernel Tuner cache: the JSON is not an object");
  for (const char* key : {"tune_params_keys", "tune_params", "cache"})
    if (!d.contains(key)) fail(origin, fmt::format("not a Kernel Tuner cache: no '{}'", key));
  const json& keys = d["tune_params_keys"];
  const json& tune_params = d["tune_params"];
  const json& cache = d["cache"];
  if (!keys.is_array() || keys.empty())
    fail(origin, "tune_params_keys must be a non-empty list of names");
  if (!tune_params.is_object())
    fail(origin, "tune_params must be an object of name -> list of values");
  if (!cache.is_object()) fail(origin, "cache must be an object of key -> entry");
}

void read_objective(const json& d, const std::string& origin, Recording& r) {
  if (!d.contains("objective")) return;
  if (!d["objective"].is_string()) fail(origin, "objective must be a string");
  r.objective = d["objective"].get<std::string>();
  if (r.objective != "time")
    r.notes.push_back(
        fmt::format("{}: the recording's objective is '{}'; its times are replayed, and the run "
                    "ranks by its own objective (time unless it is given another)",
                    origin, r.objective));
}

void read_params(const json& keys, const json& tune_params, const std::string& origin,
                 Recording& r) {
  for (const auto& k : keys) {
    if (!k.is_string()) fail(origin, "tune_params_keys must be a list of names");
    const std::string name = k.get<std::string>();
    auto it = tune_params.find(name);
    if (it == tune_params.end())
      fail(origin, fmt::format("tune_params has no values for '{}'", name));
    if (!it->is_array() || it->empty())
      fail(origin, fmt::format("tune_params '{}' must be a non-empty list", name));
    Parameter p;
    p.name = name;
    for (const auto& v : *it)
      p.values.push_back(value_of(v, origin, fmt::format("tune_params '{}'", name)));
    r.params.push_back(std::move(p));
  }
  if (tune_params.size() != r.params.size())
    fail(origin, "tune_params and tune_params_keys name different parameters");
}

// The problem as ktune wrote it, in its declared order (names missing from the order follow).
void read_ktune_problem(const json& meta, const std::string& origin, Recording& r) {
  std::vector<std::string> order;
  if (meta.contains("problem_order") && meta["problem_order"].is_array())
    for (const auto& n : meta["problem_order"]) order.push_back(n.get<std::string>());
  for (const auto& [name, v] : meta["problem"].items())
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  for (const auto& name : order) {
    const json& v = meta["problem"].at(name);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      fail(origin, fmt::format("ktune.problem.{} must be an integer of at least 0", name));
    r.problem_params.push_back({name, v.get<std::int64_t>(), ""});
    r.problem[name] = v.get<std::int64_t>();
  }
}

void read_problem(const json* meta, const json& size, const std::string& origin, Recording& r) {
  if (meta && meta->contains("problem") && (*meta)["problem"].is_object()) {
    read_ktune_problem(*meta, origin, r);
  } else if (size.is_number_integer()) {
    if (size.get<std::int64_t>() < 0) fail(origin, "problem_size must not be negative");
    r.scalar_problem_size = true;
    r.problem_params.push_back(
        {"problem_size", size.get<std::int64_t>(), "Kernel Tuner's problem_size"});
  } else if (size.is_array()) {
    static const char* const kAxes[] = {"x", "y", "z"};
    for (std::size_t i = 0; i < size.size(); ++i) {
      if (!size[i].is_number_integer() || size[i].get<std::int64_t>() < 0)
        fail(origin, "problem_size must hold integers of at least 0");
      const std::string name =
          i < 3 ? fmt::format("problem_size_{}", kAxes[i]) : fmt::format("problem_size_{}", i);
      r.problem_params.push_back(
          {name, size[i].get<std::int64_t>(), fmt::format("Kernel Tuner's problem_size[{}]", i)});
    }
  } else if (!size.is_null()) {
    fail(origin, "problem_size must be an integer or a list of integers");
  }
  for (const auto& p : r.problem_params) r.problem[p.name] = p.default_value;
}

void read_device(const json* meta, const std::string& device_name, Recording& r) {
  if (meta) {
    r.source_hash = meta->value("source_hash", std::string());
    r.space_hash = meta->value("space_hash", std::string());
    if (meta->contains("device") && (*meta)["device"].is_object()) {
      const json& dev = (*meta)["device"];
      if (device_name.empty() && r.device_name.empty())
        r.device_name = dev.value("name", std::string());
      r.arch = dev.value("arch", std::string());
      r.sm_count = dev.value("sm_count", 0);
      r.memory_bytes = dev.value("memory_bytes", std::int64_t{0});
    }
  }
  if (r.arch.rfind("sm_", 0) != 0) r.arch = arch_from_device_name(r.device_name);
  if (!r.arch.empty()) {
    const int cc = std::atoi(r.arch.c_str() + 3);
    r.cc_major = cc / 10;
    r.cc_minor = cc % 10;
  }
}

// Values of each parameter by their text, so a key's parts map onto the declared values.
using ValuesByText = std::vector<std::map<std::string, std::size_t>>;

ValuesByText values_by_text(const Recording& r) {
  ValuesByText by_text(r.params.size());
  for (std::size_t i = 0; i < r.params.size(); ++i)
    for (std::size_t j = 0; j < r.params[i].values.size(); ++j)
      by_text[i].emplace(match_text(r.params[i].values[j]), j);
  return by_text;
}

// Reads a cache entry's fields; `fail_entry` throws with the entry named.
class EntryReader {
 public:
  EntryReader(const std::string& key, const json& entry, const std::string& origin)
      : key_(key), entry_(entry), origin_(origin) {}

  RecordedTrial read(const Recording& r, const ValuesByText& by_text) const {
    if (!entry_.is_object()) fail_entry("not an object");
    RecordedTrial t;
    read_values(r, by_text, t);
    read_time(t);
    if (auto s = entry_.find("ktune_status"); s != entry_.end() && s->is_string()) {
      if (auto st = trial_status_from_string(s->get<std::string>())) t.status = *st;
    }
    if (auto e = entry_.find("ktune_error"); e != entry_.end() && e->is_string())
      t.error = e->get<std::string>();
    if (auto c = entry_.find("ktune_cut"); c != entry_.end() && c->is_boolean())
      t.cut = c->get<bool>();
    t.energy_j = positive_or_nan(entry_, "nvml_energy");
    t.power_w = positive_or_nan(entry_, "nvml_power");
    t.compile_ms = number_or_zero(entry_, "compile_time");
    t.eval_ms = t.compile_ms + number_or_zero(entry_, "verification_time") +
                number_or_zero(entry_, "benchmark_time") + number_or_zero(entry_, "strategy_time") +
                number_or_zero(entry_, "framework_time");
    return t;
  }

 private:
  [[noreturn]] void fail_entry(const std::string& what) const {
    fail(origin_, fmt::format("cache entry '{}': {}", key_, what));
  }

  void read_values(const Recording& r, const ValuesByText& by_text, RecordedTrial& t) const {
    const std::vector<std::string> parts = split_key(key_);
    if (parts.size() != r.params.size())
      fail_entry(fmt::format("expected {} comma-separated values (tune_params_keys), found {}",
                             r.params.size(), parts.size()));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto it = by_text[i].find(match_text(Value::parse(parts[i])));
      if (it == by_text[i].end()) it = by_text[i].find(parts[i]);
      if (it == by_text[i].end())
        fail_entry(
            fmt::format("{} is not a value of '{}' in tune_params", parts[i], r.params[i].name));
      t.values.push_back(r.params[i].values[it->second]);
    }
  }

  void read_time(RecordedTrial& t) const {
    auto time = entry_.find("time");
    if (time == entry_.end()) fail_entry("no 'time'");
    if (time->is_string()) {
      t.error = time->get<std::string>();
      t.status = status_of_kt_string(t.error);
      t.time_ms = t.time_min_ms = t.time_mean_ms = t.time_spread = t.recorded_ms = std::nan("");
    } else if (time->is_number()) {
      t.recorded_ms = time->get<double>();
      if (!(t.recorded_ms >= 0) || !std::isfinite(t.recorded_ms))
        fail_entry(
            fmt::format("'time' {} is not a time (a finite number of at least 0)", time->dump()));
      if (auto times = entry_.find("times"); times != entry_.end()) {
        if (!times->is_array()) fail_entry("'times' must be a list of numbers");
        for (const auto& s : *times) {
          if (!s.is_number() || !(s.get<double>() >= 0) || !std::isfinite(s.get<double>()))
            fail_entry("'times' must be a list of finite numbers of at least 0");
          t.samples_ms.push_back(s.get<double>());
        }
      }
      if (t.samples_ms.empty()) t.samples_ms.push_back(t.recorded_ms);
      fill_stats(t);
    } else {
      fail_entry(fmt::format("'time' must be a number or a failure name, found {}", time->dump()));
    }
  }

  const std::string& key_;
  const json& entry_;
  const std::string& origin_;
};

Recording parse_kt_cache_json(std::string_view text, const std::string& origin,
                              const std::string& device_name) {
  const json d = parse_json_text(text, origin);
  check_header(d, origin);
  const json& cache = d["cache"];

  Recording r;
  r.path = origin;
  r.format = "kt-cache";
  r.kernel_name = d.value("kernel_name", std::string());
  if (r.kernel_name.empty()) fail(origin, "no kernel_name");
  r.device_name = device_name.empty() ? d.value("device_name", std::string()) : device_name;
  read_objective(d, origin, r);
  read_params(d["tune_params_keys"], d["tune_params"], origin, r);

  // ktune's own details, when ktune wrote the file.
  const json* meta = d.contains("ktune") && d["ktune"].is_object() ? &d["ktune"] : nullptr;
  const json& size = d.contains("problem_size") ? d["problem_size"] : json();
  read_problem(meta, size, origin, r);
  read_device(meta, device_name, r);

  const ValuesByText by_text = values_by_text(r);
  r.trials.reserve(cache.size());
  for (const auto& [key, entry] : cache.items())
    r.trials.push_back(EntryReader(key, entry, origin).read(r, by_text));
  r.reindex();
  return r;
}
}  // namespace

Recording parse_kt_cache(std::string_view text, const std::string& origin,
                         const std::string& device_name) {
  try {
    return parse_kt_cache_json(text, origin, device_name);
  } catch (const json::exception& e) {
    // A field of the wrong type somewhere nlohmann noticed first.
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    fail(origin, fmt::format("not a valid Kernel Tuner cache ({})", what));
  }
}

namespace {
nlohmann::ordered_json problem_size_json(const Recording& r) {
  nlohmann::ordered_json problem_size;
  if (r.scalar_problem_size && r.problem_params.size() == 1) {
    problem_size = r.problem.at(r.problem_params[0].name);
  } else {
    problem_size = nlohmann::ordered_json::array();
    for (const auto& p : r.problem_params) problem_size.push_back(r.problem.at(p.name));
  }
  return problem_size;
}

nlohmann::ordered_json tune_params_json(const Recording& r) {
  nlohmann::ordered_json tune_params = nlohmann::ordered_json::object();
  for (const auto& p : r.params) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const auto& v : p.values) values.push_back(json_of(v));
    tune_params[p.name] = values;
  }
  return tune_params;
}

// ktune's own details, which Kernel Tuner ignores and ktune reads back.
nlohmann::ordered_json ktune_meta(const Recording& r) {
  nlohmann::ordered_json meta;
  meta["format"] = 1;
  meta["kernel"] = r.kernel_name;
  meta["problem"] = nlohmann::ordered_json::object();
  nlohmann::ordered_json order = nlohmann::ordered_json::array();
  for (const auto& p : r.problem_params) {
    meta["problem"][p.name] = r.problem.at(p.name);
    order.push_back(p.name);
  }
  meta["problem_order"] = order;
  meta["device"] = {{"name", r.device_name},
                    {"arch", r.arch},
                    {"sm_count", r.sm_count},
                    {"memory_bytes", r.memory_bytes}};
  meta["source_hash"] = r.source_hash;
  meta["space_hash"] = r.space_hash;
  meta["ktune_version"] = KTUNE_VERSION;
  meta["exported_at"] = utc_now();
  return meta;
}

// One cache entry: its key (the values joined by commas) and the line after it.
std::string cache_entry_text(const Recording& r, const RecordedTrial& t) {
  std::string key;
  nlohmann::ordered_json e;
  for (std::size_t i = 0; i < r.params.size(); ++i) {
    key += (i ? "," : "") + t.values[i].to_string();
    e[r.params[i].name] = json_of(t.values[i]);
  }
  if (t.status == TrialStatus::kOk) {
    const double mean = t.samples_ms.empty() ? t.time_ms : sample_stats(t.samples_ms).mean;
    e["time"] = mean;  // Kernel Tuner's statistic is the mean of `times`
    e["times"] = t.samples_ms.empty() ? std::vector<double>{t.time_ms} : t.samples_ms;
    if (t.cut) e["ktune_cut"] = true;  // its samples stopped at the early cut-off
    if (std::isfinite(t.energy_j)) e["nvml_energy"] = t.energy_j;  // as Kernel Tuner names them
    if (std::isfinite(t.power_w)) e["nvml_power"] = t.power_w;
  } else {
    const char* name = kernel_tuner_error(t.status);
    e["time"] = name;
    if (status_of_kt_string(name) != t.status) e["ktune_status"] = std::string(to_string(t.status));
  }
  // The error says why a trial failed, or notes something of an ok one (a re-timing).
  // A failure without a message is written as such, or it would read back as the failure name.
  if (t.status == TrialStatus::kOk ? !t.error.empty() : t.error != kernel_tuner_error(t.status))
    e["ktune_error"] = t.error;
  e["compile_time"] = t.compile_ms;
  e["verification_time"] = 0;
  e["benchmark_time"] = std::max(0.0, t.eval_ms - t.compile_ms);
  e["strategy_time"] = 0;
  e["framework_time"] = 0;
  return json(key).dump() + ": " + e.dump();
}
}  // namespace

std::string kt_cache_text(const Recording& r) {
  // Header fields in Kernel Tuner's order, then one cache entry per line, as Kernel Tuner writes
  // its caches.
  nlohmann::ordered_json keys = nlohmann::ordered_json::array();
  for (const auto& p : r.params) keys.push_back(p.name);

  std::string out = "{\n";
  out += fmt::format("\"device_name\": {},\n", json(r.device_name).dump());
  out += fmt::format("\"kernel_name\": {},\n", json(r.kernel_name).dump());
  out += fmt::format("\"problem_size\": {},\n", problem_size_json(r).dump());
  out += fmt::format("\"tune_params_keys\": {},\n", keys.dump());
  out += fmt::format("\"tune_params\": {},\n", tune_params_json(r).dump());
  out +=
      fmt::format("\"objective\": {},\n", json(r.objective.empty() ? "time" : r.objective).dump());
  out += fmt::format("\"ktune\": {},\n", ktune_meta(r).dump());
  out += "\"cache\": {";
  bool first = true;
  for (const auto& t : r.trials) {
    out += first ? "\n" : ",\n";
    first = false;
    out += cache_entry_text(r, t);
  }
  out += "\n}\n}\n";
  return out;
}

void write_kt_cache(const Recording& recording, const std::string& path) {
  write_maybe_gzip(path, kt_cache_text(recording));
}

const char* kernel_tuner_error(TrialStatus s) {
  switch (s) {
    case TrialStatus::kOk:
      return "";
    case TrialStatus::kInvalid:
      return "InvalidConfig";
    case TrialStatus::kCompileFailed:
      return "CompilationFailedConfig";
    default:
      return "RuntimeFailedConfig";
  }
}

}  // namespace ktune
