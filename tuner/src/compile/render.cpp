// The rendering rule (ktune/render.h).
#include "ktune/render.h"

#include <fmt/format.h>

#include <cctype>

#include "compile/internal.h"
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

}  // namespace

Defines render_defines(const std::vector<Setting>& settings,
                       const std::array<std::uint32_t, 3>& block) {
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

CompileRequest render(const KernelText& k, const std::vector<Setting>& settings,
                      const std::array<std::uint32_t, 3>& block, const std::string& config_key,
                      const std::string& arch) {
  const Defines defines = render_defines(settings, block);
  const std::string body = fmt::format("#line 1 \"{}\"\n", k.source_name) + k.source;
  CompileRequest r;
  r.source = fmt::format("// ktune: {}[{}] for {}\n", k.name, config_key, arch);
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
  // template would break there: an #include or #pragma once inside a namespace, or extern "C"
  // names that would clash between the copies.
  const bool batchable = k.source.find("#include") == std::string::npos &&
                         k.source.find("extern \"C\"") == std::string::npos &&
                         k.source.find("#pragma once") == std::string::npos;
  // Without headers the source needs none of NVRTC's built-in runtime declarations: -minimal
  // skips them (half the front end's time, the same CUBIN); nvrtc.cpp compiles again without it
  // where a kernel uses what it leaves out.
  if (k.source.find("#include") == std::string::npos && detail::minimal_front_end_enabled())
    r.options.push_back("-minimal");
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
