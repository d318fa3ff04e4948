// The kernel registry: converts plugin descriptions (C ABI) and manifests (TOML) into
// KernelSpecs, loads plugin libraries, and answers lookups by name.
#include "ktune/registry.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "kernels/elf_check.h"
#include "ktune/check.h"
#include "ktune/error.h"
#include "ktune/input_file.h"
#include "ktune/suggest.h"

namespace ktune {

namespace fs = std::filesystem;

namespace {

// Splits "32, 64, \"a,b\"" at commas outside quotes.
std::vector<std::string> split_literals(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      cur += c;
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
      cur += c;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    const auto b = s.find_first_not_of(" \t\n");
    const auto e = s.find_last_not_of(" \t\n");
    s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  }
  return out;
}

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

Parameter make_parameter(const std::string& kernel, const std::string& origin,
                         const std::string& name, std::vector<Value> values,
                         const std::optional<Value>& default_value,
                         const std::string& description) {
  Parameter p;
  p.name = name;
  p.values = std::move(values);
  p.description = description;
  if (default_value) {
    auto it = std::find(p.values.begin(), p.values.end(), *default_value);
    if (it == p.values.end())
      throw Error(
          ErrorKind::kInput,
          fmt::format("kernel '{}' ({}): parameter '{}': default {} is not one of its values",
                      kernel, origin, name, default_value->to_literal()));
    p.default_index = static_cast<std::size_t>(it - p.values.begin());
  }
  return p;
}

std::int64_t parse_int(const std::string& context, const std::string& text) {
  const Value v = Value::parse(text);
  if (!v.is_int())
    throw Error(ErrorKind::kInput, fmt::format("{}: '{}' is not an integer", context, text));
  return v.as_int();
}

// True if the plugin's struct is large enough to hold `field` (fields are only appended).
template <typename Struct, typename Field>
bool has_field(const Struct& s, const Field& field) {
  const auto offset = reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&s);
  return s.struct_size >= static_cast<std::size_t>(offset) + sizeof(Field);
}

void params_from_desc(const ktune_kernel_desc& d, const std::string& origin, KernelSpec& k) {
  for (std::size_t i = 0; i < d.param_count; ++i) {
    const auto& p = d.params[i];
    std::vector<Value> values;
    for (const auto& lit : split_literals(str(p.values))) {
      if (lit.empty())
        throw Error(ErrorKind::kInput,
                    fmt::format("kernel '{}' ({}): parameter '{}': empty value in "
                                "list '{}'",
                                k.name, origin, str(p.name), str(p.values)));
      values.push_back(Value::parse(lit));
    }
    std::optional<Value> def;
    if (p.default_value) def = Value::parse(p.default_value);
    k.params.push_back(
        make_parameter(k.name, origin, str(p.name), std::move(values), def, str(p.description)));
  }
}

void buffers_from_desc(const ktune_kernel_desc& d, KernelSpec& k) {
  for (std::size_t i = 0; i < d.buffer_count; ++i) {
    const auto& b = d.buffers[i];
    BufferSpec s;
    s.name = str(b.name);
    if (b.type < KTUNE_TYPE_I8 || b.type > KTUNE_TYPE_F64)
      throw Error(ErrorKind::kInput,
                  fmt::format("kernel '{}': buffer '{}': unknown type {}", k.name, s.name, b.type));
    if (b.role < KTUNE_BUFFER_INPUT || b.role > KTUNE_BUFFER_CONSTANT)
      throw Error(ErrorKind::kInput,
                  fmt::format("kernel '{}': buffer '{}': unknown role {}", k.name, s.name, b.role));
    s.type = static_cast<ElemType>(b.type);
    s.role = static_cast<BufferRole>(b.role);
    s.size = str(b.size);
    s.init = str(b.init);
    s.abs_tol = b.abs_tol;
    s.rel_tol = b.rel_tol;
    k.buffers.push_back(std::move(s));
  }
}

void args_from_desc(const ktune_kernel_desc& d, KernelSpec& k) {
  for (std::size_t i = 0; i < d.arg_count; ++i) {
    const auto& a = d.args[i];
    ArgSpec s;
    if (a.buffer) {
      s.buffer = a.buffer;
    } else {
      s.value = str(a.value);
      if (a.type < KTUNE_TYPE_I8 || a.type > KTUNE_TYPE_F64)
        throw Error(ErrorKind::kInput, fmt::format("kernel '{}': argument {}: unknown type {}",
                                                   k.name, i + 1, a.type));
      s.type = static_cast<ElemType>(a.type);
    }
    k.args.push_back(std::move(s));
  }
}

}  // namespace

KernelSpec kernel_from_desc(const ktune_kernel_desc& d, const std::string& origin) {
  KernelSpec k;
  k.origin = origin;
  if (!has_field(d, d.user_data))
    throw Error(ErrorKind::kPlugin,
                fmt::format("{}: kernel description too small ({} bytes)", origin, d.struct_size));
  k.name = str(d.name);
  k.description = str(d.description);
  k.source = str(d.source);
  k.source_name = d.source_name ? d.source_name : k.name + ".cu";
  k.entry = str(d.entry);
  for (std::size_t i = 0; i < d.compile_option_count; ++i)
    k.compile_options.push_back(str(d.compile_options[i]));
  params_from_desc(d, origin, k);
  for (std::size_t i = 0; i < d.restriction_count; ++i)
    k.restrictions.push_back(str(d.restrictions[i]));
  for (std::size_t i = 0; i < d.problem_count; ++i) {
    const auto& p = d.problem[i];
    k.problem.push_back(
        {str(p.name),
         parse_int(fmt::format("kernel '{}': problem parameter '{}'", k.name, str(p.name)),
                   p.default_value ? p.default_value : "0"),
         str(p.description)});
  }
  for (int a = 0; a < 3; ++a) {
    if (d.grid[a]) k.launch.grid[a] = d.grid[a];
    if (d.block[a]) k.launch.block[a] = d.block[a];
  }
  if (d.shared_mem) k.launch.shared_mem = d.shared_mem;
  buffers_from_desc(d, k);
  args_from_desc(d, k);
  k.reference = d.reference;
  k.reference_config = str(d.reference_config);
  k.bytes = str(d.bytes);
  k.flops = str(d.flops);
  k.run = d.run;
  k.user_data = d.user_data;
  if (has_field(d, d.generate)) k.generate = d.generate;                      // ABI 1.1
  if (has_field(d, d.arch_specific)) k.arch_specific = d.arch_specific != 0;  // ABI 1.2
  return k;
}

struct Registry::Impl {
  std::map<std::string, KernelSpec, std::less<>> kernels;
  // Plugin libraries stay loaded for the life of the process: KernelSpecs copied out of the
  // registry keep function pointers into them.
  std::vector<void*> libraries;
  std::vector<std::string> warnings;
};

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

void Registry::add(KernelSpec kernel) {
  kernel.validate();
  if (kernel.origin != "builtin")
    for (const auto& w : quick_check_kernel(kernel))
      impl_->warnings.push_back(fmt::format("{}: {}", kernel.origin, w.message));
  auto it = impl_->kernels.find(kernel.name);
  if (it != impl_->kernels.end())
    throw Error(ErrorKind::kInput,
                fmt::format("kernel '{}' from {} is already registered (from {})", kernel.name,
                            kernel.origin, it->second.origin));
  const std::string name = kernel.name;
  impl_->kernels.emplace(name, std::move(kernel));
}

void Registry::add_plugin(const ktune_plugin* plugin, const std::string& origin) {
  if (plugin == nullptr)
    throw Error(ErrorKind::kPlugin,
                fmt::format("{}: plugin entry returned no description", origin));
  if (plugin->abi_version != KTUNE_PLUGIN_ABI_VERSION)
    throw Error(ErrorKind::kPlugin,
                fmt::format("{}: plugin built for ABI version {}, this ktune supports version {}; "
                            "rebuild the plugin against this ktune's ktune/plugin.h",
                            origin, plugin->abi_version, KTUNE_PLUGIN_ABI_VERSION));
  if (!has_field(*plugin, plugin->kernel_count))
    throw Error(ErrorKind::kPlugin, fmt::format("{}: plugin description too small ({} bytes)",
                                                origin, plugin->struct_size));
  if (plugin->kernel_count == 0 || plugin->kernels == nullptr)
    throw Error(ErrorKind::kPlugin,
                fmt::format("{}: plugin describes no kernels (kernel_count {}, kernels {})", origin,
                            plugin->kernel_count, plugin->kernels ? "set" : "null"));
  for (std::size_t i = 0; i < plugin->kernel_count; ++i) {
    if (plugin->kernels[i] == nullptr)
      throw Error(ErrorKind::kPlugin, fmt::format("{}: kernel {} is a null pointer", origin, i));
    KernelSpec k = kernel_from_desc(*plugin->kernels[i], origin);
    // file(...) inits name files beside the library (built-ins: the working directory).
    if (fs::exists(origin)) k.resolve_data_paths(fs::absolute(origin).parent_path().string());
    add(std::move(k));
  }
}

void Registry::load_library(const std::string& path) {
  if (!fs::exists(path))
    throw Error(ErrorKind::kPlugin, fmt::format("{}: plugin library not found", path));
  try {
    check_input_file(path, "", std::numeric_limits<std::uint64_t>::max());
  } catch (const Error& e) {
    throw Error(ErrorKind::kPlugin, e.what());  // a FIFO would block the ELF check and dlopen
  }
  // An absolute path, so a bare "libfoo.so" means the file here, not a library-path search.
  const std::string absolute = fs::absolute(path).string();
  check_elf_library(path);
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw Error(ErrorKind::kPlugin, fmt::format("{}: cannot load plugin: {}", path, dlerror()));
  impl_->libraries.push_back(handle);
  void* sym = dlsym(handle, KTUNE_PLUGIN_ENTRY_NAME);
  if (sym == nullptr)
    throw Error(ErrorKind::kPlugin, fmt::format("{}: not a ktune plugin (no {} symbol)", path,
                                                KTUNE_PLUGIN_ENTRY_NAME));
  auto entry = reinterpret_cast<ktune_plugin_entry_fn>(sym);
  add_plugin(entry(), path);
}

namespace {

// Reads a manifest field with a message that names the file and the field.
class ManifestReader {
 public:
  explicit ManifestReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::kInput, fmt::format("{}: {}", path_, what));
  }

  // A misspelt or misplaced key (a `restrictions = [...]` written under a [[param]] header
  // belongs to that table) is an error, not silently ignored.
  void known_keys(const toml::table& t, std::string_view section,
                  std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, node] : t) {
      if (std::find(keys.begin(), keys.end(), key.str()) != keys.end()) continue;
      const std::vector<std::string> known(keys.begin(), keys.end());
      fail(fmt::format("{}: unknown key '{}'{} (known: {})", section, key.str(),
                       did_you_mean(std::string(key.str()), known), fmt::join(keys, ", ")));
    }
  }

  std::string required_string(const toml::table& t, std::string_view section,
                              std::string_view key) const {
    const auto* node = t.get(key);
    if (node == nullptr) fail(fmt::format("{} is missing '{}'", section, key));
    if (auto s = node->value<std::string>()) return *s;
    fail(fmt::format("{}.{} must be a string", section, key));
  }

  std::string optional_string(const toml::table& t, std::string_view section, std::string_view key,
                              std::string fallback = {}) const {
    const auto* node = t.get(key);
    if (node == nullptr) return fallback;
    if (auto s = node->value<std::string>()) return *s;
    // Numbers are accepted where an expression is expected: size = 1024.
    if (auto i = node->value<std::int64_t>()) return std::to_string(*i);
    fail(fmt::format("{}.{} must be a string", section, key));
  }

  double optional_number(const toml::table& t, std::string_view section,
                         std::string_view key) const {
    const auto* node = t.get(key);
    if (node == nullptr) return 0;
    if (auto d = node->value<double>()) return *d;
    fail(fmt::format("{}.{} must be a number", section, key));
  }

  Value to_value(const toml::node& n, std::string_view where) const {
    if (auto i = n.value_exact<std::int64_t>()) return Value(*i);
    if (auto d = n.value_exact<double>()) return Value(*d);
    if (auto s = n.value_exact<std::string>()) return Value(*s);
    if (auto b = n.value_exact<bool>()) return Value(std::int64_t{*b ? 1 : 0});
    fail(fmt::format("{}: values must be numbers or strings", where));
  }

  // Accepts a string or an array of up to three strings/integers (missing axes are "1").
  std::array<std::string, 3> dims(const toml::table& t, std::string_view key) const {
    std::array<std::string, 3> out{"1", "1", "1"};
    const auto* node = t.get(key);
    if (node == nullptr) {
      if (key == "grid" || key == "block") fail(fmt::format("[launch] is missing '{}'", key));
      return out;
    }
    if (auto s = node->value<std::string>()) {
      out[0] = *s;
      return out;
    }
    if (auto i = node->value_exact<std::int64_t>()) {
      out[0] = std::to_string(*i);
      return out;
    }
    const auto* arr = node->as_array();
    if (arr == nullptr || arr->empty() || arr->size() > 3)
      fail(fmt::format("launch.{} must be an expression or a list of 1 to 3 expressions", key));
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const auto& e = (*arr)[i];
      if (auto s = e.value<std::string>())
        out[i] = *s;
      else if (auto n = e.value_exact<std::int64_t>())
        out[i] = std::to_string(*n);
      else
        fail(fmt::format("launch.{}[{}] must be an expression", key, i));
    }
    return out;
  }

  const toml::array* array_of_tables(const toml::table& t, std::string_view key,
                                     bool required) const {
    const auto* node = t.get(key);
    if (node == nullptr) {
      if (required) fail(fmt::format("missing [[{}]] entries", key));
      return nullptr;
    }
    const auto* arr = node->as_array();
    if (arr == nullptr || !arr->is_array_of_tables())
      fail(fmt::format("'{}' must be written as [[{}]] tables", key, key));
    return arr;
  }

 private:
  std::string path_;
};

ElemType parse_type(const ManifestReader& r, const std::string& where, const std::string& name) {
  auto t = elem_type_from_string(name);
  if (!t)
    r.fail(fmt::format("{}: unknown type '{}' (int8 .. int64, uint8 .. uint64, float32, float64)",
                       where, name));
  return *t;
}

toml::table parse_manifest(const ManifestReader& r, const std::string& path) {
  if (!fs::exists(path)) r.fail("manifest not found");
  toml::table root;
  std::string text;
  try {
    text = read_input_file(path, "", kMaxTextInputBytes);
  } catch (const Error& e) {
    r.fail(e.what());
  }
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    r.fail(fmt::format("line {}, column {}: {}", where.line, where.column, e.description()));
  }
  r.known_keys(root, "manifest",
               {"kernel", "param", "restrictions", "problem", "launch", "buffer", "arg",
                "reference", "metrics"});
  return root;
}

// [kernel].defines = "kernel_tuner" (with block_names): rendered as Kernel Tuner does.
void read_define_style(const ManifestReader& r, const toml::table& kt, KernelSpec& k) {
  const std::string style = r.optional_string(kt, "[kernel]", "defines", "ktune");
  if (style == "kernel_tuner")
    k.define_style = DefineStyle::kKernelTuner;
  else if (style != "ktune")
    r.fail(fmt::format("[kernel].defines: '{}' is not one of ktune, kernel_tuner", style));
  if (const auto* names = kt["block_names"].as_array()) {
    if (names->size() > 3) r.fail("[kernel].block_names: at most 3 names");
    for (std::size_t d = 0; d < names->size(); ++d) {
      const auto s = (*names)[d].value<std::string>();
      if (!s) r.fail("[kernel].block_names must be a list of strings");
      k.block_names[d] = *s;
    }
  }
  // Kernel Tuner's `defines`: [[name, value], ...], the values with parameter names in them.
  if (const toml::node* node = kt.get("kernel_tuner_defines")) {
    if (k.define_style != DefineStyle::kKernelTuner)
      r.fail("[kernel].kernel_tuner_defines needs defines = \"kernel_tuner\"");
    const auto* list = node->as_array();
    if (list == nullptr) r.fail("[kernel].kernel_tuner_defines must be a list of [name, value]");
    k.user_defines.emplace();
    for (const toml::node& item : *list) {
      const auto* pair = item.as_array();
      const auto name = pair && pair->size() == 2 ? (*pair)[0].value<std::string>() : std::nullopt;
      const auto value = pair && pair->size() == 2 ? (*pair)[1].value<std::string>() : std::nullopt;
      if (!name || !value)
        r.fail("[kernel].kernel_tuner_defines must be a list of [name, value], both strings");
      k.user_defines->emplace_back(*name, *value);
    }
  }
}

// [kernel]: the names, and the source read from beside the manifest.
void read_kernel_table(const ManifestReader& r, const toml::table& root, const std::string& path,
                       KernelSpec& k) {
  const toml::table* kt = root["kernel"].as_table();
  if (kt == nullptr) r.fail("missing [kernel] table");
  r.known_keys(*kt, "[kernel]",
               {"name", "description", "source", "entry", "compile_options", "arch_specific",
                "defines", "block_names", "kernel_tuner_defines"});
  read_define_style(r, *kt, k);

  k.name = r.required_string(*kt, "[kernel]", "name");
  k.description = r.optional_string(*kt, "[kernel]", "description");
  const std::string source_file = r.required_string(*kt, "[kernel]", "source");
  k.entry = r.required_string(*kt, "[kernel]", "entry");
  const fs::path source_path = fs::path(path).parent_path() / source_file;
  try {
    k.source = read_input_file(source_path, "[kernel].source", kMaxTextInputBytes);
  } catch (const Error& e) {
    r.fail(e.what());
  }
  k.source_name = source_path.filename().string();
  if (const auto* opts = (*kt)["compile_options"].as_array()) {
    for (const auto& o : *opts) {
      auto s = o.value<std::string>();
      if (!s) r.fail("[kernel].compile_options must be a list of strings");
      k.compile_options.push_back(*s);
    }
  }
  if (const auto node = (*kt)["arch_specific"]) {
    if (!node.is_boolean()) r.fail("[kernel].arch_specific must be true or false");
    k.arch_specific = node.as_boolean()->get();
  }
}

void read_params(const ManifestReader& r, const toml::table& root, const std::string& path,
                 KernelSpec& k) {
  for (const auto& node : *r.array_of_tables(root, "param", true)) {
    const auto& t = *node.as_table();
    const std::string name = r.required_string(t, "[[param]]", "name");
    r.known_keys(t, fmt::format("[[param]] '{}'", name),
                 {"name", "values", "default", "description"});
    const auto* values = t["values"].as_array();
    if (values == nullptr || values->empty())
      r.fail(fmt::format("[[param]] '{}' needs a non-empty 'values' list", name));
    std::vector<Value> vs;
    for (const auto& v : *values) vs.push_back(r.to_value(v, fmt::format("[[param]] '{}'", name)));
    std::optional<Value> def;
    if (const auto* d = t.get("default"))
      def = r.to_value(*d, fmt::format("[[param]] '{}' default", name));
    k.params.push_back(make_parameter(k.name, path, name, std::move(vs), def,
                                      r.optional_string(t, "[[param]]", "description")));
  }
}

void read_restrictions(const ManifestReader& r, const toml::table& root, KernelSpec& k) {
  if (const auto* rs = root["restrictions"].as_array()) {
    for (const auto& e : *rs) {
      auto s = e.value<std::string>();
      if (!s) r.fail("restrictions must be a list of strings (expressions)");
      k.restrictions.push_back(*s);
    }
  } else if (root.contains("restrictions")) {
    r.fail("restrictions must be a list of strings (expressions)");
  }
}

void read_problem(const ManifestReader& r, const toml::table& root, KernelSpec& k) {
  const auto* problems = r.array_of_tables(root, "problem", false);
  if (problems == nullptr) return;
  for (const auto& node : *problems) {
    const auto& t = *node.as_table();
    r.known_keys(t, "[[problem]]", {"name", "default", "description"});
    ProblemParam p;
    p.name = r.required_string(t, "[[problem]]", "name");
    const auto* d = t.get("default");
    if (d == nullptr || !d->value_exact<std::int64_t>())
      r.fail(fmt::format("[[problem]] '{}' needs an integer 'default'", p.name));
    p.default_value = *d->value_exact<std::int64_t>();
    p.description = r.optional_string(t, "[[problem]]", "description");
    k.problem.push_back(std::move(p));
  }
}

void read_launch(const ManifestReader& r, const toml::table& root, KernelSpec& k) {
  const toml::table* launch = root["launch"].as_table();
  if (launch == nullptr) r.fail("missing [launch] table");
  r.known_keys(*launch, "[launch]", {"grid", "block", "shared_mem"});
  k.launch.grid = r.dims(*launch, "grid");
  k.launch.block = r.dims(*launch, "block");
  k.launch.shared_mem = r.optional_string(*launch, "[launch]", "shared_mem", "0");
}

BufferRole parse_role(const ManifestReader& r, const std::string& where, const std::string& role) {
  if (role == "input") return BufferRole::kInput;
  if (role == "output") return BufferRole::kOutput;
  if (role == "inout") return BufferRole::kInOut;
  if (role == "scratch") return BufferRole::kScratch;
  if (role == "constant") return BufferRole::kConstant;
  r.fail(fmt::format("{}: role '{}' is not one of input, output, inout, scratch, constant", where,
                     role));
}

void read_buffers(const ManifestReader& r, const toml::table& root, KernelSpec& k) {
  for (const auto& node : *r.array_of_tables(root, "buffer", true)) {
    const auto& t = *node.as_table();
    BufferSpec b;
    b.name = r.required_string(t, "[[buffer]]", "name");
    const std::string where = fmt::format("[[buffer]] '{}'", b.name);
    r.known_keys(t, where,
                 {"name", "type", "role", "size", "init", "expected", "abs_tol", "rel_tol"});
    b.type = parse_type(r, where, r.required_string(t, where, "type"));
    b.role = parse_role(r, where, r.required_string(t, where, "role"));
    b.size = r.optional_string(t, where, "size");
    if (b.size.empty()) r.fail(fmt::format("{} is missing 'size'", where));
    b.init = r.optional_string(t, where, "init");
    b.expected = r.optional_string(t, where, "expected");
    b.abs_tol = r.optional_number(t, where, "abs_tol");
    b.rel_tol = r.optional_number(t, where, "rel_tol");
    k.buffers.push_back(std::move(b));
  }
}

void read_args(const ManifestReader& r, const toml::table& root, KernelSpec& k) {
  for (const auto& node : *r.array_of_tables(root, "arg", true)) {
    const auto& t = *node.as_table();
    r.known_keys(t, "[[arg]]", {"buffer", "value", "type"});
    ArgSpec a;
    a.buffer = r.optional_string(t, "[[arg]]", "buffer");
    if (a.buffer.empty()) {
      a.value = r.optional_string(t, "[[arg]]", "value");
      if (a.value.empty()) r.fail("[[arg]] needs 'buffer' or 'value'");
      a.type = parse_type(r, fmt::format("[[arg]] '{}'", a.value),
                          r.required_string(t, "[[arg]]", "type"));
    }
    k.args.push_back(std::move(a));
  }
}

void read_reference_and_metrics(const ManifestReader& r, const toml::table& root, KernelSpec& k) {
  // Without [reference], every output needs an expected file (KernelSpec::validate says so);
  // `unchecked = true` declares a kernel whose outputs are not checked.
  if (const toml::table* ref = root["reference"].as_table()) {
    r.known_keys(*ref, "[reference]", {"config", "unchecked"});
    k.unchecked = (*ref)["unchecked"].value_or(false);
    if (!k.unchecked) k.reference_config = r.required_string(*ref, "[reference]", "config");
  } else if (std::none_of(k.buffers.begin(), k.buffers.end(),
                          [](const BufferSpec& b) { return !b.expected.empty(); })) {
    r.fail(
        "missing [reference] table (a manifest kernel is checked against a reference config "
        "or expected files)");
  }
  if (const toml::table* metrics = root["metrics"].as_table()) {
    r.known_keys(*metrics, "[metrics]", {"bytes", "flops"});
    k.bytes = r.optional_string(*metrics, "[metrics]", "bytes");
    k.flops = r.optional_string(*metrics, "[metrics]", "flops");
  }
}

}  // namespace

void Registry::load_manifest(const std::string& path) {
  ManifestReader r(path);
  const toml::table root = parse_manifest(r, path);
  KernelSpec k;
  k.origin = path;
  read_kernel_table(r, root, path, k);
  read_params(r, root, path, k);
  read_restrictions(r, root, k);
  read_problem(r, root, k);
  read_launch(r, root, k);
  read_buffers(r, root, k);
  read_args(r, root, k);
  read_reference_and_metrics(r, root, k);
  k.resolve_data_paths(fs::absolute(path).parent_path().string());
  add(std::move(k));
}

void Registry::load_path(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(p)) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    for (const auto& e : entries) {
      if (e.extension() == ".so")
        load_library(e.string());
      else if (e.extension() == ".toml")
        load_manifest(e.string());
    }
    return;
  }
  if (!fs::exists(p, ec))
    throw Error(ErrorKind::kPlugin, fmt::format("{}: plugin path does not exist", path));
  if (p.extension() == ".toml")
    load_manifest(path);
  else
    load_library(path);
}

void Registry::load_env_path() {
  const char* env = std::getenv("KTUNE_PLUGIN_PATH");
  if (env == nullptr || *env == '\0') return;
  std::string_view rest(env);
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string item(rest.substr(0, colon));
    if (!item.empty()) {
      try {
        load_path(item);
      } catch (const Error& e) {
        throw Error(e.kind(), fmt::format("KTUNE_PLUGIN_PATH: {}", e.what()));
      }
    }
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
}

const std::vector<std::string>& Registry::warnings() const { return impl_->warnings; }

bool Registry::contains(std::string_view name) const { return impl_->kernels.count(name) > 0; }

const KernelSpec& Registry::get(std::string_view name) const {
  auto it = impl_->kernels.find(name);
  if (it == impl_->kernels.end()) {
    std::vector<std::string> names;
    for (const auto& [n, k] : impl_->kernels) names.push_back(n);
    throw Error(ErrorKind::kUsage,
                fmt::format("unknown kernel '{}'; known kernels: {}", excerpt(name),
                            names.empty() ? "(none)" : fmt::format("{}", fmt::join(names, ", "))));
  }
  return it->second;
}

std::vector<const KernelSpec*> Registry::kernels() const {
  std::vector<const KernelSpec*> out;
  for (const auto& [n, k] : impl_->kernels) out.push_back(&k);
  return out;
}

}  // namespace ktune
