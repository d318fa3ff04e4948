// Export of every stored best for programs that want no database at run time: a C++ header of
// constexpr tables (one row per device and problem, the measurement in a comment, as CUB's
// tuning files keep theirs) with a lookup() that falls through as the client does, and JSON.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "client/database.h"
#include "ktune/client.h"
#include "ktune/error.h"
#include "ktune/stored_spec.h"

namespace ktune {

namespace {

struct Row {
  std::string kernel, problem_key, updated_at;
  std::int64_t kernel_id = 0, device_id = 0, problem_id = 0, trial_id = 0, run_id = 0;
  std::string device_name, device_arch;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  std::int64_t memory_bytes = 0;
  nlohmann::json problem, config;
  std::string config_key, measured_at, source_hash;
  double time_ms = 0, time_spread = 0, gbps = 0;
  int sample_count = 0;
};

struct KernelRows {
  std::vector<std::string> params;  // newest version's declaration order, then any others
  std::vector<std::string> problem;
  std::vector<Row> rows;
};

nlohmann::json parse_or(const std::string& text, nlohmann::json fallback) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

void add_name(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

// The columns of one row of the export query (read_bests) from its 7th on, into `r`; its first
// six, up to the problem's id, are read before, to skip an older version's row at once. Returns
// the kernel version's spec_json, the last column.
std::string read_row(const detail::Query& q, Row& r) {
  int i = 6;
  r.trial_id = q.integer(i++);
  r.device_name = q.text(i++);
  r.device_arch = q.text(i++);
  r.cc_major = static_cast<int>(q.integer(i++));
  r.cc_minor = static_cast<int>(q.integer(i++));
  r.sm_count = static_cast<int>(q.integer(i++));
  r.memory_bytes = q.integer(i++);
  r.problem = parse_or(q.text(i++), nlohmann::json::object());
  r.config_key = q.text(i++);
  r.config = parse_or(q.text(i++), nlohmann::json::object());
  r.time_ms = q.real(i++);
  r.time_spread = q.real(i++);
  r.sample_count = static_cast<int>(q.integer(i++));
  r.gbps = q.real(i++);
  r.run_id = q.integer(i++);
  r.measured_at = q.text(i++);
  r.source_hash = q.text(i++);
  return q.text(i++);
}

// The kernel's columns: the newest version's declaration order first (the spec_json of the
// first row of a kernel, and of its rows of the same version; rows come newest first), then any
// name the row's own values hold.
void add_columns(KernelRows& k, const Row& r, const std::string& spec_json, bool newest,
                 const std::string& where) {
  if (newest) {
    try {
      const StoredSpec spec = StoredSpec::parse(spec_json, where);
      for (const auto& p : spec.params) add_name(k.params, p.name);
      for (const auto& p : spec.problem) add_name(k.problem, p.name);
    } catch (const Error&) {
      // An unreadable spec: the columns come from the rows' own values below.
    }
  }
  for (const auto& [name, v] : r.config.items()) add_name(k.params, name);
  for (const auto& [name, v] : r.problem.items()) add_name(k.problem, name);
}

// A kernel's rows in the export's order: newest architecture first, device name, problem (by the
// kernel's problem parameters, then by key).
void sort_rows(KernelRows& k) {
  std::stable_sort(k.rows.begin(), k.rows.end(), [&](const Row& a, const Row& b) {
    const int ca = a.cc_major * 10 + a.cc_minor, cb = b.cc_major * 10 + b.cc_minor;
    if (ca != cb) return ca > cb;
    if (a.device_name != b.device_name) return a.device_name < b.device_name;
    for (const auto& p : k.problem) {
      const auto va = a.problem.value(p, std::int64_t{0}), vb = b.problem.value(p, std::int64_t{0});
      if (va != vb) return va < vb;
    }
    return a.problem_key < b.problem_key;
  });
}

// Every best of the database, newest kernel version per (kernel, device, problem), ordered by
// kernel, then newest architecture first, device name, problem.
std::map<std::string, KernelRows> read_bests(const std::filesystem::path& path,
                                             const ExportOptions& options) {
  detail::Database db(path, std::chrono::seconds(5), Client::kOldestSchemaVersion,
                      Client::kSchemaVersion);
  detail::ReadTransaction snapshot(db);
  auto q = db.query(
      "export",
      "SELECT b.kernel_name, b.problem_key, b.updated_at, b.kernel_id, b.device_id, b.problem_id, "
      "b.trial_id, d.name, d.arch, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes, p.json, "
      "t.config_key, t.config_json, t.time_ms, t.time_spread, t.sample_count, t.gbps, t.run_id, "
      "t.created_at, k.source_hash, k.spec_json "
      "FROM best b JOIN devices d ON d.id = b.device_id JOIN problems p ON p.id = b.problem_id "
      "JOIN trials t ON t.id = b.trial_id JOIN kernels k ON k.id = b.kernel_id "
      "JOIN runs r ON r.id = t.run_id "
      "WHERE (?1 IS NULL OR b.kernel_name = ?1) AND d.arch LIKE 'sm!_%' ESCAPE '!' "
      "AND r.replayed = 0 AND " +
          std::string(detail::kUsableTrialTime) +
          " "
          "ORDER BY b.kernel_name, b.updated_at DESC, b.kernel_id DESC");
  if (options.kernel) q.bind(1, *options.kernel);
  std::map<std::string, KernelRows> out;
  std::set<std::tuple<std::string, std::int64_t, std::int64_t>> seen;
  std::map<std::string, std::int64_t> newest_version;
  while (q.step()) {
    Row r;
    r.kernel = q.text(0);
    r.problem_key = q.text(1);
    r.updated_at = q.text(2);
    r.kernel_id = q.integer(3);
    r.device_id = q.integer(4);
    r.problem_id = q.integer(5);
    if (!seen.emplace(r.kernel, r.device_id, r.problem_id).second) continue;
    const std::string spec_json = read_row(q, r);
    KernelRows& k = out[r.kernel];
    const auto [it, fresh] = newest_version.emplace(r.kernel, r.kernel_id);
    add_columns(k, r, spec_json, fresh || it->second == r.kernel_id, db.where());
    k.rows.push_back(std::move(r));
  }
  for (auto& [name, k] : out) sort_rows(k);
  return out;
}

std::string identifier(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    out += ok ? c : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\%03o", static_cast<unsigned char>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double v, const char* format = "%.17g") {
  if (!std::isfinite(v)) return "NAN";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  std::string s = text;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

enum class Kind { kInt, kDouble, kString };

Kind column_kind(const KernelRows& k, const std::string& param) {
  Kind kind = Kind::kInt;
  for (const Row& r : k.rows) {
    if (!r.config.contains(param)) continue;
    const auto& v = r.config[param];
    if (v.is_string()) return Kind::kString;
    if (v.is_number_float()) kind = Kind::kDouble;
  }
  return kind;
}

std::string literal(const nlohmann::json& v, Kind kind) {
  switch (kind) {
    case Kind::kString:
      return v.is_string() ? quoted(v.get<std::string>()) : quoted(v.is_null() ? "" : v.dump());
    case Kind::kDouble:
      return v.is_number() ? number(v.get<double>()) : "0.0";
    case Kind::kInt:
      return v.is_number_integer() ? std::to_string(v.get<std::int64_t>()) : "0";
  }
  return "0";
}

std::string measured(const Row& r) {
  char text[256];
  std::snprintf(text, sizeof text, "%.4g ms median of %d runs (spread %.2f%%)", r.time_ms,
                r.sample_count, 100 * (std::isfinite(r.time_spread) ? r.time_spread : 0.0));
  std::string s = text;
  if (std::isfinite(r.gbps)) {
    std::snprintf(text, sizeof text, ", %.1f GB/s", r.gbps);
    s += text;
  }
  return s;
}

// A C++ name for a problem or parameter field that cannot clash with Config's fixed fields.
std::string field_name(const std::string& n) {
  static const std::set<std::string> kFixed = {"cc", "arch", "device", "time_ms"};
  std::string f = identifier(n);
  return kFixed.count(f) ? f + "_" : f;
}

void header_preamble(std::ostream& out, const std::filesystem::path& db, const std::string& ns) {
  out << "// Best configurations exported by `ktune export --header` from "
      << db.filename().string() << " (database schema " << Client::kSchemaVersion << ").\n"
      << "// Generated: do not edit; export again after tuning. Each row keeps the measurement "
         "that\n"
      << "// chose it (median time per run, spread, samples, bandwidth) and where it was "
         "measured.\n"
      << "#pragma once\n\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n\n"
      << "namespace " << ns << " {\n\n"
      << "namespace detail {\n"
      << "// One term of the client's problem distance: |log2(a / b)| for positive values; zero "
         "or\n"
      << "// negative values compare on sign(v) log2(1 + |v|).\n"
      << "inline double log_distance(std::int64_t a, std::int64_t b) {\n"
      << "  if (a > 0 && b > 0) return std::fabs(std::log2(static_cast<double>(a) / "
         "static_cast<double>(b)));\n"
      << "  const double la = std::log2(1.0 + std::fabs(static_cast<double>(a)));\n"
      << "  const double lb = std::log2(1.0 + std::fabs(static_cast<double>(b)));\n"
      << "  return std::fabs((a < 0 ? -la : la) - (b < 0 ? -lb : lb));\n}\n"
      << "}  // namespace detail\n";
}

void config_struct(std::ostream& out, const KernelRows& k, const std::vector<Kind>& kinds) {
  out << "struct Config {\n"
      << "  int cc;                // compute capability, major * 10 + minor (90: sm_90)\n"
      << "  const char* arch;      // \"sm_90\"\n"
      << "  const char* device;    // the device it was measured on\n";
  for (const auto& p : k.problem) out << "  std::int64_t " << field_name(p) << ";  // problem\n";
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const char* type = kinds[i] == Kind::kString   ? "const char*"
                       : kinds[i] == Kind::kDouble ? "double"
                                                   : "std::int64_t";
    out << "  " << type << " " << field_name(k.params[i]) << ";\n";
  }
  out << "  double time_ms;        // measured median time per run\n};\n\n";
}

void config_table(std::ostream& out, const KernelRows& k, const std::vector<Kind>& kinds) {
  out << "inline constexpr Config kConfigs[] = {\n";
  for (const Row& r : k.rows) {
    out << "    // " << r.device_name << " (" << r.device_arch << ", " << r.sm_count << " SMs), "
        << r.problem_key << ": " << measured(r) << "\n"
        << "    // run " << r.run_id << ", trial " << r.trial_id << ", measured " << r.measured_at
        << ", source " << r.source_hash.substr(0, 12) << "\n"
        << "    {" << r.cc_major * 10 + r.cc_minor << ", " << quoted(r.device_arch) << ", "
        << quoted(r.device_name);
    for (const auto& p : k.problem) {
      const auto& v = r.problem.contains(p) ? r.problem[p] : nlohmann::json(0);
      out << ", " << literal(v, Kind::kInt);
    }
    for (std::size_t i = 0; i < k.params.size(); ++i) {
      const auto& v = r.config.contains(k.params[i]) ? r.config[k.params[i]] : nlohmann::json();
      out << ", " << literal(v, kinds[i]);
    }
    out << ", " << number(r.time_ms, "%.6g") << "},\n";
  }
  out << "};\n\n";
}

void lookup_function(std::ostream& out, const KernelRows& k) {
  out << "// The row for a device of compute capability `cc` (and, optionally, name) and a "
         "problem,\n"
      << "// falling through as ktune::Client does: the newest tuned cc at or below `cc` of the "
         "same\n"
      << "// major (the same arch first); within it the named device, then the exact problem, "
         "else the\n"
      << "// nearest by log distance (ties: the larger problem). nullptr when no row has the "
         "same major.\n"
      << "inline const Config* lookup(int cc";
  for (const auto& p : k.problem) out << ", std::int64_t " << field_name(p);
  out << ", const char* device = nullptr) {\n"
      << "  const Config* found = nullptr;\n"
      << "  int found_cc = 0;\n  bool found_device = false;\n  double found_distance = 0;\n"
      << "  for (const Config& c : kConfigs) {\n"
      << "    if (c.cc / 10 != cc / 10 || c.cc > cc) continue;\n"
      << "    const bool same_device = device != nullptr && c.cc == cc && std::strcmp(c.device, "
         "device) == 0;\n"
      << "    const double distance = 0.0";
  for (const auto& p : k.problem) {
    out << "\n        + detail::log_distance(c." << field_name(p) << ", " << field_name(p) << ")";
  }
  out << ";\n"
      << "    const bool better = found == nullptr || c.cc > found_cc ||\n"
      << "        (c.cc == found_cc && (same_device > found_device ||\n"
      << "         (same_device == found_device && distance <= found_distance)));\n"
      << "    if (better) {\n"
      << "      found = &c;\n      found_cc = c.cc;\n      found_device = same_device;\n"
      << "      found_distance = distance;\n    }\n  }\n  return found;\n}\n\n";
}

}  // namespace

void export_header(const std::filesystem::path& db, std::ostream& out,
                   const ExportOptions& options) {
  const auto kernels = read_bests(db, options);
  const std::string ns = identifier(options.namespace_name);
  header_preamble(out, db, ns);
  for (const auto& [name, k] : kernels) {
    std::vector<Kind> kinds;
    for (const auto& p : k.params) kinds.push_back(column_kind(k, p));
    out << "\n// " << std::string(92, '-') << "\n// " << name << ": " << k.rows.size()
        << (k.rows.size() == 1 ? " row" : " rows") << "\nnamespace " << identifier(name)
        << " {\n\n";
    config_struct(out, k, kinds);
    config_table(out, k, kinds);
    lookup_function(out, k);
    out << "}  // namespace " << identifier(name) << "\n";
  }
  out << "\n}  // namespace " << ns << "\n";
}

void export_json(const std::filesystem::path& db, std::ostream& out, const ExportOptions& options) {
  const auto kernels = read_bests(db, options);
  const auto real = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
  };
  nlohmann::json j;
  j["format"] = "ktune-best-export";
  j["version"] = 1;
  j["database"] = db.filename().string();
  j["schema_version"] = Client::kSchemaVersion;
  j["kernels"] = nlohmann::json::object();
  for (const auto& [name, k] : kernels) {
    nlohmann::json kj;
    kj["parameters"] = k.params;
    kj["problem"] = k.problem;
    kj["configs"] = nlohmann::json::array();
    for (const Row& r : k.rows) {
      kj["configs"].push_back({
          {"device",
           {{"name", r.device_name},
            {"arch", r.device_arch},
            {"cc_major", r.cc_major},
            {"cc_minor", r.cc_minor},
            {"sm_count", r.sm_count},
            {"memory_bytes", r.memory_bytes}}},
          {"problem", r.problem},
          {"problem_key", r.problem_key},
          {"config", r.config},
          {"config_key", r.config_key},
          {"time_ms", real(r.time_ms)},
          {"time_spread", real(r.time_spread)},
          {"samples", r.sample_count},
          {"gbps", real(r.gbps)},
          {"run_id", r.run_id},
          {"trial_id", r.trial_id},
          {"measured_at", r.measured_at},
          {"updated_at", r.updated_at},
          {"source_hash", r.source_hash},
      });
    }
    j["kernels"][name] = std::move(kj);
  }
  out << j.dump(2) << "\n";
}

namespace {

template <typename Write>
void write_file(const std::filesystem::path& file, Write&& write) {
  std::ostringstream text;
  write(text);
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text.str();
    f.close();
    if (!f) throw Error(ErrorKind::kUsage, file.string() + ": cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(ErrorKind::kUsage, file.string() + ": cannot write (" + ec.message() + ")");
  }
}

}  // namespace

void export_header_file(const std::filesystem::path& db, const std::filesystem::path& file,
                        const ExportOptions& options) {
  write_file(file, [&](std::ostream& out) { export_header(db, out, options); });
}

void export_json_file(const std::filesystem::path& db, const std::filesystem::path& file,
                      const ExportOptions& options) {
  write_file(file, [&](std::ostream& out) { export_json(db, out, options); });
}

}  // namespace ktune
