// The rendering rule (ktune/render.h).
#include "ktune/render.h"

#include <fmt/format.h>

#include <cctype>
#include <regex>

#include "compile/internal.h"
#include "ktune/device_limits.h"
#include "ktune/hash.h"

namespace ktune {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const Value* setting(const std::vector<Setting>& settings, std::string_view name) {
  for (const auto& [n, v] : settings)
    if (n == name) return &v;
  return nullptr;
}

bool is_unroll_factor(std::string_view name) {
  return name.find("loop_unroll_factor") != std::string_view::npos;
}

// Kernel Tuner's replace_param_occurrences: each run of letters, digits and underscores in
// `text` that names a parameter becomes the parameter's value.
std::string replace_param_occurrences(const std::string& text,
                                      const std::vector<Setting>& settings) {
  std::string out;
  std::size_t i = 0;
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < text.size()) {
    if (!word(text[i])) {
      out += text[i++];
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && word(text[end])) ++end;
    const std::string_view token(text.data() + i, end - i);
    const Value* v = setting(settings, token);
    out += v ? v->to_string() : std::string(token);
    i = end;
  }
  return out;
}

// The user's `defines` as Kernel Tuner renders them: values with the parameters replaced and
// newlines escaped (loop_unroll_factor names included; kernel_tuner_defines leaves them out).
Defines user_defines(const Defines& defines, const std::vector<Setting>& settings) {
  Defines out;
  for (const auto& [name, text] : defines) {
    std::string value;
    for (const char c : replace_param_occurrences(text, settings)) {
      if (c == '\n') value += '\\';
      value += c;
    }
    out.emplace_back(name, std::move(value));
  }
  return out;
}

// What Kernel Tuner prepends (its util.prepare_kernel_string): without user `defines`, the grid,
// block and parameters and kernel_tuner 1; with them, those alone.
Defines kernel_tuner_defines(const KernelText& k, const std::vector<Setting>& settings,
                             const RenderDims& dims) {
  if (k.user_defines) {
    Defines out;
    for (auto& [name, value] : user_defines(*k.user_defines, settings))
      if (!is_unroll_factor(name)) out.emplace_back(std::move(name), std::move(value));
    return out;
  }
  Defines out;
  static constexpr const char* kGrid[3] = {"grid_size_x", "grid_size_y", "grid_size_z"};
  const auto set = [&out](const std::string& name, std::string value) {
    for (auto& [n, v] : out)
      if (n == name) {
        v = std::move(value);
        return;
      }
    out.emplace_back(name, std::move(value));
  };
  for (int d = 0; d < 3; ++d) set(kGrid[d], std::to_string(dims.grid[d]));
  for (int d = 0; d < 3; ++d) set(k.block_names[d], std::to_string(dims.block[d]));
  for (const auto& [name, value] : settings)
    if (!is_unroll_factor(name)) set(name, value.to_string());
  set("kernel_tuner", "1");
  return out;
}

// Kernel Tuner's loop_unroll_factor parameters (or user defines): `#pragma unroll NAME` needs a
// constant expression, not a macro, so a non-zero factor becomes `constexpr int NAME = N;` and a
// zero one removes the pragma. Returns the body without those pragmas and sets `prefix` to the
// constants; `edited` says whether there was anything to do.
std::string kernel_tuner_unroll(const KernelText& k, const std::vector<Setting>& settings,
                                std::string& prefix, bool& edited) {
  Defines factors;
  if (k.user_defines)
    factors = user_defines(*k.user_defines, settings);
  else
    for (const auto& [name, value] : settings) factors.emplace_back(name, value.to_string());
  std::string out = k.source;
  edited = false;
  for (const auto& [name, value] : factors) {
    if (!is_unroll_factor(name)) continue;
    edited = true;
    if (value != "0") {
      prefix += fmt::format("constexpr int {} = {};\n", name, value);
      continue;
    }
    const std::regex pragma("\n\\s*#pragma\\s+unroll\\s+" + name + "\\b");
    out = std::regex_replace(out, pragma, "\n");
  }
  return out;
}

// The end of the source's leading `#include <...>` lines (blank and `//` comment lines may come
// between them), and how many lines that is; {0, 0} when the source does not start with one.
std::pair<std::size_t, int> leading_system_includes(const std::string& source) {
  std::size_t pos = 0, end = 0;
  int lines = 0, block_lines = 0;
  while (pos < source.size()) {
    std::size_t next = source.find('\n', pos);
    next = next == std::string::npos ? source.size() : next + 1;
    const std::string_view line(source.data() + pos, next - pos);
    const std::size_t first = line.find_first_not_of(" \t\r\n");
    ++lines;
    if (first != std::string_view::npos) {
      const std::string_view text = line.substr(first);
      if (text.rfind("//", 0) != 0) {
        static const std::regex include(R"(#\s*include\s*<[^>\n]+>\s*(//.*)?)");
        const std::size_t last = text.find_last_not_of(" \t\r\n");
        if (!std::regex_match(std::string(text.substr(0, last + 1)), include)) break;
        end = next;
        block_lines = lines;
      }
    }
    pos = next;
  }
  return {end, block_lines};
}

}  // namespace

const char* const detail::kHeadersEnd = "namespace ktune_headers_end {}\n";

Defines render_defines(const KernelText& k, const std::vector<Setting>& settings,
                       const RenderDims& dims) {
  if (k.define_style == DefineStyle::kKernelTuner) return kernel_tuner_defines(k, settings, dims);
  const auto& block = dims.block;
  Defines out;
  for (const auto& [name, value] : settings) {
    const std::string macro = upper(name);
    out.emplace_back(macro, value.to_string());
    if (value.is_string()) out.emplace_back(macro + "_" + upper(value.as_string()), "1");
  }
  out.emplace_back("KTUNE_BLOCK_X", std::to_string(block[0]));
  out.emplace_back("KTUNE_BLOCK_Y", std::to_string(block[1]));
  out.emplace_back("KTUNE_BLOCK_Z", std::to_string(block[2]));
  std::string bounds;
  if (const Value* min_blocks = setting(settings, "launch_bounds");
      min_blocks != nullptr && min_blocks->as_int() > 0) {
    const std::uint64_t threads = std::uint64_t{block[0]} * block[1] * block[2];
    bounds = fmt::format("__launch_bounds__({}, {})", threads, min_blocks->as_int());
  }
  out.emplace_back("KTUNE_LAUNCH_BOUNDS", bounds);
  return out;
}

std::vector<std::string> render_options(const std::vector<Setting>& settings) {
  std::vector<std::string> out;
  if (const Value* regs = setting(settings, "maxrregcount"); regs != nullptr && regs->as_int() > 0)
    out.push_back(fmt::format("--maxrregcount={}", regs->as_int()));
  return out;
}

std::string arch_specific_target(const std::string& arch) {
  const auto cc = parse_arch(arch);
  const bool plain = cc && arch.back() >= '0' && arch.back() <= '9';  // not sm_90a or sm_100f
  return plain && cc->first >= 9 ? arch + "a" : arch;
}

CompileRequest render(const KernelText& k, const std::vector<Setting>& settings,
                      const RenderDims& dims, const std::string& config_key,
                      const std::string& device_arch) {
  const std::string arch = k.arch_specific ? arch_specific_target(device_arch) : device_arch;
  const Defines defines = render_defines(k, settings, dims);
  bool edited = false;
  std::string constants;
  const std::string source = k.define_style == DefineStyle::kKernelTuner
                                 ? kernel_tuner_unroll(k, settings, constants, edited)
                                 : k.source;
  // A source that starts with `#include <...>` lines gets them before the configuration's macros,
  // ended by a declaration, so that every configuration's program starts with the same text and
  // a compile process can reuse NVRTC's parse of those headers (a precompiled header; nvrtc.cpp).
  // No #line before them (NVRTC creates no precompiled header past one): they keep their line
  // numbers anyway, the program being named after the source.
  const auto [headers_end, header_lines] = leading_system_includes(source);
  const std::string body = constants +
                           fmt::format("#line {} \"{}\"\n", header_lines + 1, k.source_name) +
                           source.substr(headers_end);
  CompileRequest r;
  if (headers_end > 0) {
    r.source = source.substr(0, headers_end);
    if (r.source.back() != '\n') r.source += '\n';
    r.source += detail::kHeadersEnd;
  }
  r.source += fmt::format("// ktune: {}[{}] for {}\n", k.name, config_key, arch);
  for (const auto& [name, value] : defines) r.source += fmt::format("#define {} {}\n", name, value);
  r.source += body;
  r.source_name = k.source_name;
  r.entry = k.entry;
  r.arch = arch;
  r.options = k.compile_options;
  for (auto& o : render_options(settings)) r.options.push_back(std::move(o));
  r.options.push_back("--gpu-architecture=" + arch);
  r.options.push_back("--ptxas-options=-v");
  // Several configurations can share one NVRTC program, each in its own namespace, unless the
  // template would break there: an #include or #pragma once inside a namespace, extern "C"
  // names that would clash between the copies, or a constant buffer, whose __constant__ variable
  // the GPU worker finds by its name, which a namespace would change.
  const bool batchable = !edited && !k.constants_by_name &&
                         k.source.find("#include") == std::string::npos &&
                         k.source.find("extern \"C\"") == std::string::npos &&
                         k.source.find("#pragma once") == std::string::npos;
  // Without headers the source needs none of NVRTC's built-in runtime declarations: -minimal
  // skips them (half the front end's time, the same CUBIN); nvrtc.cpp compiles again without it
  // where a kernel uses what it leaves out.
  if (k.source.find("#include") == std::string::npos) r.options.push_back("-minimal");
  if (batchable) {
    Hasher group;
    group.add(k.source).add(k.source_name).add(r.entry).add(arch);
    for (const auto& o : r.options) group.add(o);
    r.batch_group = group.hex();
    r.body = body;
    r.defines = defines;
  }
  return r;
}

}  // namespace ktune
