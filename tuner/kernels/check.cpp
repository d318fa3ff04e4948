// Checks of a kernel description (ktune/check.h).
#include "ktune/check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <set>

#include "ktune/error.h"

namespace ktune {

namespace {

using Level = CheckFinding::Level;

std::uint64_t count_valid(const SearchSpace& space, std::uint64_t cap, bool& capped) {
  std::uint64_t n = 0;
  space.for_each_valid([&](const Config&) {
    if (++n < cap) return true;
    capped = true;
    return false;
  });
  return n;
}

std::string count_text(std::uint64_t n, bool capped) {
  return capped ? fmt::format("at least {}", n) : fmt::to_string(n);
}

// Whether `name` occurs in `text` as a whole identifier.
bool names_identifier(std::string_view text, std::string_view name) {
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t pos = text.find(name); pos != std::string_view::npos;
       pos = text.find(name, pos + 1)) {
    const std::size_t end = pos + name.size();
    if ((pos == 0 || !ident(text[pos - 1])) && (end == text.size() || !ident(text[end])))
      return true;
  }
  return false;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The first macro-like name (capitals, digits and '_') among the entry's template arguments that
// nothing defines: not a parameter's or problem parameter's macro (ktune's rendering), not
// KTUNE_..., not #defined in the source. Kernel Tuner's rendering (names as they are) is not
// looked at.
std::optional<std::string> undefined_entry_macro(const KernelSpec& k) {
  if (k.define_style != DefineStyle::kKtune || k.run != nullptr) return std::nullopt;
  const auto open = k.entry.find('<');
  if (open == std::string::npos) return std::nullopt;
  std::set<std::string> defined;
  for (const auto& p : k.params) defined.insert(upper(p.name));
  for (const auto& p : k.problem) defined.insert(upper(p.name));
  const std::string_view args = std::string_view(k.entry).substr(open + 1);
  for (std::size_t i = 0; i < args.size();) {
    const auto word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    };
    if (!word(args[i]) || (i > 0 && word(args[i - 1]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < args.size() && word(args[end])) ++end;
    const std::string name(args.substr(i, end - i));
    i = end;
    const bool macro_like = std::isupper(static_cast<unsigned char>(name[0])) &&
                            std::none_of(name.begin(), name.end(), [](char c) {
                              return std::islower(static_cast<unsigned char>(c));
                            });
    if (!macro_like || defined.count(name) || name.rfind("KTUNE_", 0) == 0) continue;
    const std::regex define("#[ \t]*define[ \t]+" + name + "\\b");
    if (!std::regex_search(k.source, define)) return name;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(CheckFinding::Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarning:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "?";
}

std::vector<RestrictionImpact> restriction_impacts(const SearchSpace& space, std::uint64_t cap) {
  std::vector<RestrictionImpact> out;
  const auto& all = space.restrictions();
  for (std::size_t i = 0; i < all.size(); ++i) {
    RestrictionImpact r;
    r.restriction = all[i];
    r.cartesian = space.cartesian_size();
    r.valid_alone =
        count_valid(SearchSpace(space.params(), {all[i]}, space.constants()), cap, r.capped);
    std::vector<std::string> others = all;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    r.valid_without =
        count_valid(SearchSpace(space.params(), others, space.constants()), cap, r.capped);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> explain_empty_space(const SearchSpace& space) {
  std::vector<std::string> lines;
  std::vector<std::string> culprits;
  for (const auto& r : restriction_impacts(space)) {
    lines.push_back(fmt::format("'{}' removes {} of {} on its own; without it {} valid",
                                r.restriction, count_text(r.cartesian - r.valid_alone, r.capped),
                                r.cartesian, count_text(r.valid_without, r.capped)));
    if (r.valid_without > 0) culprits.push_back("'" + r.restriction + "'");
  }
  if (space.restrictions().empty())
    lines.insert(lines.begin(), "no restrictions: a parameter has no values");
  else if (culprits.empty())
    lines.insert(lines.begin(),
                 "it stays empty without any one of its restrictions: several empty it");
  else
    lines.insert(
        lines.begin(),
        fmt::format("emptied by {}", fmt::join(culprits, culprits.size() == 2 ? " and " : ", ")));
  return lines;
}

std::vector<CheckFinding> quick_check_kernel(const KernelSpec& k) {
  std::vector<CheckFinding> out;
  std::vector<std::string> expressions = {k.launch.shared_mem, k.bytes, k.flops};
  for (const auto& e : k.launch.grid) expressions.push_back(e);
  for (const auto& e : k.launch.block) expressions.push_back(e);
  for (const auto& b : k.buffers) expressions.push_back(b.size);
  for (const auto& a : k.args) expressions.push_back(a.value);
  std::string code = k.source + "\n" + k.entry;
  for (const auto& o : k.compile_options) code += "\n" + o;
  for (const auto& p : k.params) {
    if (p.name == "maxrregcount" || p.name == "launch_bounds") continue;  // ktune applies them
    const bool in_expression =
        std::any_of(expressions.begin(), expressions.end(),
                    [&](const auto& e) { return names_identifier(e, p.name); });
    if (in_expression || names_identifier(code, upper(p.name)) || k.run != nullptr) continue;
    out.push_back({Level::kWarning, fmt::format("parameter '{}'", p.name),
                   fmt::format("kernel '{}': parameter '{}' is never read: the source has no "
                               "macro {} and no launch, buffer or argument expression names it",
                               k.name, p.name, upper(p.name))});
  }
  if (auto undefined = undefined_entry_macro(k))
    out.push_back({Level::kWarning, "entry",
                   fmt::format("kernel '{}': the entry '{}' names {}, which no parameter or "
                               "problem parameter defines and the source does not #define: "
                               "every configuration would fail to compile",
                               k.name, excerpt(k.entry, 200), *undefined)});
  if (!k.reference_config.empty()) {
    Constants constants;
    for (const auto& p : k.problem) constants.emplace_back(p.name, Value(p.default_value));
    for (auto& c : DeviceLimits::for_arch(90).constants()) constants.push_back(std::move(c));
    const KernelSpec declared = k.declared();
    const SearchSpace space(declared.params, declared.restrictions, constants);
    const Config ref = space.from_assignments(k.reference_assignments());
    if (auto v = space.violated(ref))
      out.push_back({Level::kWarning, "reference",
                     fmt::format("kernel '{}': the reference configuration {} breaks the "
                                 "restriction '{}' (default problem), so it is never tuned and "
                                 "may not launch",
                                 k.name, space.key(ref), *v)});
  }
  return out;
}

namespace {

constexpr std::uint64_t kScanCap = 1'000'000;  // configurations visited per check

CheckFinding check_space(const SearchSpace& space, std::uint64_t& valid) {
  bool capped = false;
  valid = count_valid(space, kScanCap, capped);
  if (valid > 0)
    return {Level::kOk, "space",
            fmt::format("{} of {} configurations valid", count_text(valid, capped),
                        space.cartesian_size())};
  return {Level::kError, "space",
          fmt::format("empty: none of the {} configurations meets every restriction\n  {}",
                      space.cartesian_size(), fmt::join(explain_empty_space(space), "\n  "))};
}

CheckFinding check_reference(const KernelInstance& instance) {
  const KernelSpec& k = instance.kernel();
  if (k.reference_config.empty()) {
    const bool files = std::any_of(k.buffers.begin(), k.buffers.end(),
                                   [](const BufferSpec& b) { return !b.expected.empty(); });
    return {Level::kOk, "reference",
            k.reference ? "the kernel's host reference function" : (files ? "expected files" : "")};
  }
  // A configuration of the kernel's declared space (a job's narrowing does not apply to it).
  const KernelInstance declared(k.declared(), instance.problem(), instance.limits());
  const SearchSpace& space = declared.space();
  const Config ref = space.from_assignments(k.reference_assignments());
  if (auto v = space.violated(ref))
    return {Level::kError, "reference",
            fmt::format("the reference configuration {} is not in the kernel's space: it breaks "
                        "'{}'",
                        space.key(ref), *v)};
  return {Level::kOk, "reference",
          fmt::format("configuration {} is in the kernel's space", space.key(ref))};
}

// Every valid configuration's geometry evaluates, and how many the device limits leave out.
CheckFinding check_geometry(const KernelInstance& instance, std::uint64_t valid) {
  const SearchSpace& space = instance.space();
  std::optional<CheckFinding> failure;
  std::uint64_t max_threads = 0, max_smem = 0, visited = 0;
  space.for_each_valid([&](const Config& c) {
    try {
      const LaunchGeometry g = instance.geometry(c);
      max_threads = std::max(max_threads, g.threads_per_block());
      max_smem = std::max(max_smem, g.shared_mem);
      return ++visited < kScanCap;
    } catch (const Error& e) {
      failure =
          CheckFinding{Level::kError, "geometry", fmt::format("{}: {}", space.key(c), e.what())};
      return false;
    }
  });
  if (failure) return *failure;
  const std::size_t own = instance.kernel().restrictions.size();
  const std::vector<std::string> kernel_only(
      space.restrictions().begin(),
      space.restrictions().begin() + static_cast<std::ptrdiff_t>(own));
  bool capped = false;
  const std::uint64_t allowed =
      count_valid(SearchSpace(space.params(), kernel_only, space.constants()), kScanCap, capped);
  const DeviceLimits& l = instance.limits();
  std::string text = fmt::format(
      "within the device limits (at most {} of {} threads per block, {} of {} bytes of dynamic "
      "shared memory{})",
      max_threads, l.max_threads_per_block, max_smem, l.max_shared_memory_per_block_optin,
      visited >= kScanCap ? fmt::format(" over the first {} valid configurations", kScanCap) : "");
  if (allowed > valid)
    text += fmt::format(
        "; the limits leave out {}{} configurations the kernel's restrictions "
        "allow",
        capped ? "at least " : "", allowed - valid);
  return {valid == 0 && allowed > 0 ? Level::kError : Level::kOk, "geometry", text};
}

CheckFinding check_inputs(const KernelInstance& instance) {
  try {
    check_data_files(instance);
  } catch (const Error& e) {
    return {Level::kError, "inputs", e.what()};
  }
  std::vector<std::string> kinds;
  for (const auto& b : instance.kernel().buffers)
    if (b.role != BufferRole::kOutput && b.role != BufferRole::kScratch)
      kinds.push_back(fmt::format("{} {}", b.name, b.init.empty() ? "random" : b.init));
  return {Level::kOk, "inputs", fmt::format("{}", fmt::join(kinds, ", "))};
}

// Up to `want` pairs of valid configurations that differ only in parameter p, each from another
// setting of the others (the default's first), the second value as far from the first as valid.
std::vector<std::pair<Config, Config>> pairs_in(const SearchSpace& space, std::size_t p, int want) {
  std::vector<std::pair<Config, Config>> out;
  std::set<Config> contexts;
  const auto try_config = [&](const Config& c) {
    Config context = c;
    context[p] = 0;
    if (!contexts.insert(context).second) return;
    for (std::size_t j = space.params()[p].values.size(); j-- > 0;) {
      if (j == c[p]) continue;
      Config other = c;
      other[p] = static_cast<std::uint32_t>(j);
      if (space.is_valid(other)) {
        out.emplace_back(c, other);
        return;
      }
    }
  };
  if (space.is_valid(space.default_config())) try_config(space.default_config());
  std::uint64_t visited = 0;
  space.for_each_valid([&](const Config& c) {
    if (static_cast<int>(out.size()) >= want) return false;
    try_config(c);
    return ++visited < kScanCap;
  });
  return out;
}

// What a configuration does apart from its code: geometry, scalar arguments and buffer sizes.
std::string launch_of(const KernelInstance& instance, const Config& c) {
  try {
    const LaunchGeometry g = instance.geometry(c);
    std::string text =
        fmt::format("{} {} {}", fmt::join(g.grid, ","), fmt::join(g.block, ","), g.shared_mem);
    for (const auto& s : instance.scalar_args(c))
      text += fmt::format(" {}", fmt::join(s.bytes, ""));
    for (auto n : instance.buffer_sizes(c)) text += fmt::format(" {}", n);
    return text;
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

CheckFinding check_parameter(const KernelInstance& instance, std::size_t p,
                             const CheckOptions& options) {
  const SearchSpace& space = instance.space();
  const std::string& name = space.params()[p].name;
  const std::string topic = fmt::format("parameter '{}'", name);
  const auto pairs = pairs_in(space, p, options.pairs_per_param);
  if (pairs.empty())
    return {Level::kWarning, topic,
            "no two valid configurations differ only in it: it is fixed by the restrictions"};
  std::vector<std::string> tried;
  for (const auto& [a, b] : pairs) {
    const std::string what =
        fmt::format("{} vs {}", space.value(a, p).to_literal(), space.value(b, p).to_literal());
    if (launch_of(instance, a) != launch_of(instance, b))
      return {Level::kOk, topic, fmt::format("changes the launch ({})", what)};
    if (!options.compile) continue;
    const CompileResult ca = compile_cached(render(instance, a, options.arch), options.cache);
    const CompileResult cb = compile_cached(render(instance, b, options.arch), options.cache);
    if (!ca.ok && !cb.ok) continue;  // says nothing about the parameter
    if (ca.ok != cb.ok || ca.cubin != cb.cubin)
      return {Level::kOk, topic, fmt::format("changes the code ({})", what)};
    tried.push_back(what);
  }
  if (tried.empty())
    return {Level::kOk, topic, options.compile ? "no pair compiled; not checked" : "not compiled"};
  const KernelSpec& k = instance.kernel();
  return {Level::kWarning, topic,
          fmt::format("changes nothing: configurations that differ only in it ({}) compile to the "
                      "same CUBIN for {} and launch alike{}; is its macro {} spelt so in the "
                      "source?",
                      fmt::join(tried, ", "), options.arch,
                      k.run ? " (the kernel's run hook may still read it)" : "", upper(name))};
}

}  // namespace

std::vector<CheckFinding> check_kernel(const KernelInstance& instance,
                                       const CheckOptions& options) {
  std::vector<CheckFinding> out;
  std::uint64_t valid = 0;
  out.push_back(check_space(instance.space(), valid));
  out.push_back(check_reference(instance));
  out.push_back(check_geometry(instance, valid));
  out.push_back(check_inputs(instance));
  if (valid == 0) return out;
  for (std::size_t p = 0; p < instance.space().params().size(); ++p)
    if (instance.space().params()[p].values.size() > 1)
      out.push_back(check_parameter(instance, p, options));
  return out;
}

}  // namespace ktune
