// KernelSpec helpers: element types, problems, validation, device limits and the search space
// a kernel has on a device.
#include "ktune/kernel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "ktune/error.h"
#include "ktune/expr.h"

namespace ktune {

namespace {
struct TypeName {
  ElemType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {ElemType::kI8, "int8"},     {ElemType::kU8, "uint8"},   {ElemType::kI16, "int16"},
    {ElemType::kU16, "uint16"},  {ElemType::kI32, "int32"},  {ElemType::kU32, "uint32"},
    {ElemType::kI64, "int64"},   {ElemType::kU64, "uint64"}, {ElemType::kF32, "float32"},
    {ElemType::kF64, "float64"},
};
// C spellings accepted as aliases in manifests.
constexpr TypeName kTypeAliases[] = {
    {ElemType::kI32, "int"},    {ElemType::kU32, "unsigned"}, {ElemType::kF32, "float"},
    {ElemType::kF64, "double"}, {ElemType::kI64, "long"},     {ElemType::kU8, "char"},
};

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string join_names(const std::vector<std::string>& names) {
  return names.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(names, ", "));
}
}  // namespace

std::string_view to_string(ElemType t) {
  for (const auto& tn : kTypeNames) {
    if (tn.type == t) return tn.name;
  }
  return "unknown";
}

std::optional<ElemType> elem_type_from_string(std::string_view name) {
  for (const auto& tn : kTypeNames) {
    if (tn.name == name) return tn.type;
  }
  for (const auto& tn : kTypeAliases) {
    if (tn.name == name) return tn.type;
  }
  return std::nullopt;
}

std::string_view to_string(BufferRole r) {
  switch (r) {
    case BufferRole::kInput:
      return "input";
    case BufferRole::kOutput:
      return "output";
    case BufferRole::kInOut:
      return "inout";
    case BufferRole::kScratch:
      return "scratch";
    case BufferRole::kConstant:
      return "constant";
  }
  return "unknown";
}

std::string problem_key(const Problem& problem, const std::vector<ProblemParam>& order) {
  std::vector<std::string> names;
  for (const auto& p : order) names.push_back(p.name);
  return problem_key(problem, names);
}

std::map<std::string, std::string> KernelSpec::reference_assignments() const {
  std::map<std::string, std::string> out;
  std::string_view rest = reference_config;
  const std::vector<Parameter>& space = declared_params.empty() ? params : declared_params;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    const auto eq = item.find('=');
    const auto param = std::find_if(space.begin(), space.end(), [&](const Parameter& p) {
      return eq != std::string::npos && p.name == item.substr(0, eq);
    });
    if (eq == std::string::npos || param == space.end())
      throw Error(ErrorKind::kInput,
                  fmt::format("kernel '{}': reference config '{}': '{}' is not NAME=VALUE of a "
                              "parameter",
                              name, reference_config, item));
    const std::string text = item.substr(eq + 1);
    const Value v = Value::parse(text);
    const bool known = std::any_of(param->values.begin(), param->values.end(), [&](const Value& x) {
      return x == v || (x.is_string() && x.as_string() == text);
    });
    if (!known)
      throw Error(ErrorKind::kInput,
                  fmt::format("kernel '{}': reference config: {} is not a value of '{}'", name,
                              text, param->name));
    out[param->name] = text;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

KernelSpec KernelSpec::declared() const {
  KernelSpec k = *this;
  if (!declared_params.empty()) {
    k.params = declared_params;
    k.restrictions = declared_restrictions;
    k.declared_params.clear();
    k.declared_restrictions.clear();
  }
  return k;
}

void KernelSpec::remember_declared() {
  if (!declared_params.empty()) return;
  declared_params = params;
  declared_restrictions = restrictions;
}

Problem KernelSpec::make_problem(const std::map<std::string, std::int64_t>& given) const {
  Problem out;
  for (const auto& p : problem) out[p.name] = p.default_value;
  for (const auto& [name, value] : given) {
    if (!out.count(name)) {
      std::vector<std::string> known;
      for (const auto& p : problem) known.push_back(p.name);
      throw Error(ErrorKind::kUsage, fmt::format("{}: unknown problem parameter '{}'; known: {}",
                                                 this->name, name, join_names(known)));
    }
    out[name] = value;
  }
  return out;
}

namespace {

// Checks a KernelSpec part by part; every failure names the kernel and where it came from.
std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The identifiers of a C++ text (words of letters, digits and '_' not starting with a digit).
std::set<std::string> identifiers(std::string_view text) {
  std::set<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isalpha(c) || c == '_') {
      std::size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
        ++j;
      out.emplace(text.substr(i, j - i));
      i = j;
    } else if (std::isdigit(c)) {
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) ||
                                 text[i] == '_' || text[i] == '.'))
        ++i;
    } else {
      ++i;
    }
  }
  return out;
}

class SpecChecker {
 public:
  explicit SpecChecker(const KernelSpec& k) : k_(k) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::kInput,
                fmt::format("kernel '{}' ({}): {}", k_.name.empty() ? "?" : k_.name,
                            k_.origin.empty() ? "no origin" : k_.origin, what));
  }

  // Names shared by every expression of the kernel: parameters, problem, device limits.
  void check_names() {
    std::set<std::string> seen;
    for (const auto& [name, value] : k_.user_defines.value_or(Defines{}))
      if (!is_identifier(name))
        fail(fmt::format("kernel_tuner_defines: name is not a valid identifier: '{}'", name));
    for (const auto& p : k_.params) {
      if (!is_identifier(p.name))
        fail(fmt::format("parameter name '{}' is not an identifier", p.name));
      if (!seen.insert(p.name).second) fail(fmt::format("parameter '{}' declared twice", p.name));
      if (p.values.empty()) fail(fmt::format("parameter '{}' has no values", p.name));
      if (p.default_index >= p.values.size())
        fail(fmt::format("parameter '{}': default index out of range", p.name));
      for (const auto& v : p.values) {
        // Categorical values become macros (LAYOUT soa, LAYOUT_SOA 1), so they must be
        // identifiers; Kernel Tuner's rule defines a value as it is.
        if (k_.define_style == DefineStyle::kKtune && v.is_string() &&
            !is_identifier(v.as_string()))
          fail(fmt::format("parameter '{}': categorical value '{}' is not an identifier", p.name,
                           v.as_string()));
      }
      scope_.add(p.name);
    }
    for (const auto& p : k_.problem) {
      if (!is_identifier(p.name))
        fail(fmt::format("problem parameter name '{}' is not an identifier", p.name));
      if (!seen.insert(p.name).second)
        fail(fmt::format("problem parameter '{}' clashes with another name", p.name));
      scope_.add(p.name);
    }
    for (const auto& [limit, value] : DeviceLimits{}.constants()) scope_.add(limit);
  }

  void check_expr(const std::string& field, const std::string& text) const {
    try {
      (void)Expr::parse(text, scope_);
    } catch (const Error& e) {
      fail(fmt::format("{}: {}", field, e.what()));
    }
  }

  void check_launch_and_metrics() const {
    for (std::size_t i = 0; i < k_.restrictions.size(); ++i)
      check_expr(fmt::format("restriction {}", i + 1), k_.restrictions[i]);
    for (int d = 0; d < 3; ++d) {
      check_expr(fmt::format("grid[{}]", d), k_.launch.grid[d]);
      check_expr(fmt::format("block[{}]", d), k_.launch.block[d]);
    }
    check_expr("shared_mem", k_.launch.shared_mem);
    if (!k_.bytes.empty()) check_expr("bytes", k_.bytes);
    if (!k_.flops.empty()) check_expr("flops", k_.flops);
  }

  // Returns the buffers' names.
  std::set<std::string> check_buffers() const {
    std::set<std::string> buffer_names;
    bool has_checked_output = false;
    for (const auto& b : k_.buffers) {
      if (!is_identifier(b.name))
        fail(fmt::format("buffer name '{}' is not an identifier", b.name));
      if (!buffer_names.insert(b.name).second)
        fail(fmt::format("buffer '{}' declared twice", b.name));
      check_expr(fmt::format("buffer '{}' size", b.name), b.size);
      if (b.role == BufferRole::kOutput || b.role == BufferRole::kInOut) has_checked_output = true;
      if (b.abs_tol < 0 || b.rel_tol < 0)
        fail(fmt::format("buffer '{}': negative tolerance", b.name));
      try {
        (void)KernelSpec::parse_init(b);
      } catch (const Error& e) {
        fail(e.what());
      }
    }
    if (!has_checked_output && !k_.unchecked) fail("no output buffer to verify");
    return buffer_names;
  }

  void check_args(const std::set<std::string>& buffer_names) const {
    for (std::size_t i = 0; i < k_.args.size(); ++i) {
      const auto& a = k_.args[i];
      if (a.is_buffer()) {
        for (const auto& b : k_.buffers)
          if (b.name == a.buffer && b.role == BufferRole::kConstant)
            fail(
                fmt::format("argument {} names buffer '{}', a constant buffer: it reaches the "
                            "kernel as its __constant__ variable '{}', not as an argument",
                            i + 1, a.buffer, a.buffer));
        if (!buffer_names.count(a.buffer))
          fail(fmt::format(
              "argument {} names buffer '{}', which is not declared; buffers: {}", i + 1, a.buffer,
              join_names(std::vector<std::string>(buffer_names.begin(), buffer_names.end()))));
      } else {
        check_expr(fmt::format("argument {}", i + 1), a.value);
      }
    }
  }

  // A macro the entry names must be one the rendering defines (a parameter's, its categorical
  // values', KTUNE_*) or a name the source itself has: `reduce<BLOCKSIZE>` for the parameter
  // block_size would otherwise fail every compilation of the run.
  void check_entry_macros() const {
    std::set<std::string> defined = {"KTUNE_BLOCK_X", "KTUNE_BLOCK_Y", "KTUNE_BLOCK_Z",
                                     "KTUNE_LAUNCH_BOUNDS"};
    for (const auto& p : k_.params) {
      defined.insert(upper(p.name));
      for (const auto& v : p.values)
        if (v.is_string()) defined.insert(upper(p.name) + "_" + upper(v.as_string()));
    }
    for (const std::string& word : identifiers(k_.entry)) {
      const bool macro_like =
          word.size() >= 2 &&
          std::none_of(word.begin(), word.end(),
                       [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
          std::any_of(word.begin(), word.end(),
                      [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
      if (macro_like && !defined.count(word) && !identifiers(k_.source).count(word))
        fail(fmt::format(
            "entry '{}' names {}, which no parameter defines and the source does not "
            "mention (parameters define {})",
            k_.entry, word, join_names(std::vector<std::string>(defined.begin(), defined.end()))));
    }
  }

  void check_reference() const {
    // An unchecked kernel's outputs are compared with nothing (its caller may check them).
    if (k_.unchecked) return;
    bool all_from_files = true;
    for (const auto& b : k_.buffers) {
      try {
        if (b.role != BufferRole::kOutput && b.role != BufferRole::kInOut) {
          if (!b.expected.empty()) (void)KernelSpec::expected_file(b);  // names the role
          continue;
        }
        if (KernelSpec::expected_file(b).empty()) all_from_files = false;
      } catch (const Error& e) {
        fail(e.what());
      }
    }
    if (k_.reference == nullptr && k_.reference_config.empty() && !all_from_files)
      fail("no reference: give a reference function, a reference config or expected files");
    if (k_.reference == nullptr && k_.reference_config.empty()) return;
    if (k_.reference == nullptr) {
      try {
        (void)k_.reference_assignments();
      } catch (const Error& e) {
        fail(e.what());
      }
    }
  }

 private:
  const KernelSpec& k_;
  Scope scope_;
};

}  // namespace

void KernelSpec::validate() const {
  SpecChecker check(*this);
  if (!is_identifier(name)) check.fail("name must be an identifier");
  if (source.empty()) check.fail("source is empty");
  if (entry.empty()) check.fail("entry is empty");
  if (params.empty()) check.fail("no tunable parameters");
  check.check_names();
  check.check_launch_and_metrics();
  check.check_args(check.check_buffers());
  check.check_entry_macros();
  check.check_reference();
}

namespace {

// KernelSpec::listed as configurations of the kernel's parameters.
std::vector<Config> listed_configs(const KernelSpec& kernel) {
  const auto& list = *kernel.listed;
  std::vector<int> column(kernel.params.size(), -1);
  for (std::size_t i = 0; i < kernel.params.size(); ++i)
    for (std::size_t j = 0; j < list.names.size(); ++j)
      if (list.names[j] == kernel.params[i].name) column[i] = static_cast<int>(j);
  std::vector<Config> out;
  for (const auto& row : list.rows) {
    Config c(kernel.params.size());
    bool fits = true;
    for (std::size_t i = 0; i < c.size() && fits; ++i) {
      const Parameter& p = kernel.params[i];
      if (column[i] < 0) {
        c[i] = static_cast<std::uint32_t>(p.default_index);
        continue;
      }
      const Value& v = row.at(static_cast<std::size_t>(column[i]));
      const auto it = std::find(p.values.begin(), p.values.end(), v);
      fits = it != p.values.end();
      c[i] = static_cast<std::uint32_t>(it - p.values.begin());
    }
    if (fits) out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

SearchSpace make_space(const KernelSpec& kernel, const Problem& problem,
                       const DeviceLimits& limits) {
  Constants constants;
  for (const auto& p : kernel.problem) {
    auto it = problem.find(p.name);
    constants.emplace_back(p.name, Value(it == problem.end() ? p.default_value : it->second));
  }
  for (auto& c : limits.constants()) constants.push_back(std::move(c));

  std::vector<std::string> restrictions = kernel.restrictions;
  // The launch geometry implies device limits; they are restrictions like any other, so an
  // impossible launch never reaches the compiler or the GPU.
  const auto& g = kernel.launch;
  const auto paren = [](const std::string& e) { return "(" + e + ")"; };
  restrictions.push_back(fmt::format("{} * {} * {} <= max_threads_per_block", paren(g.block[0]),
                                     paren(g.block[1]), paren(g.block[2])));
  static constexpr const char* kAxis[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d) {
    const auto is_literal_one = [](const std::string& e) { return e == "1"; };
    if (!is_literal_one(g.block[d]))
      restrictions.push_back(
          fmt::format("1 <= {} <= max_block_dim_{}", paren(g.block[d]), kAxis[d]));
    if (!is_literal_one(g.grid[d]))
      restrictions.push_back(fmt::format("1 <= {} <= max_grid_dim_{}", paren(g.grid[d]), kAxis[d]));
  }
  if (g.shared_mem != "0")
    restrictions.push_back(
        fmt::format("{} <= max_shared_memory_per_block_optin", paren(g.shared_mem)));
  SearchSpace space(kernel.params, std::move(restrictions), std::move(constants));
  if (kernel.listed) space.restrict_to(listed_configs(kernel));
  return space;
}

}  // namespace ktune
