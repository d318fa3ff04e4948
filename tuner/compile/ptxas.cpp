// The parser of ptxas' verbose resource report (--ptxas-options=-v) and the names of the
// resource fields, which the cache file and the compile processes' protocol use.
#include <charconv>
#include <sstream>
#include <string_view>

#include "compile/internal.h"
#include "ktune/compiler.h"

namespace ktune {

namespace detail {
bool parse_int(std::string_view text, int& value) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end != text.data();
}
}  // namespace detail

namespace {

using detail::parse_int;

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

namespace detail {
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

}  // namespace detail
}  // namespace ktune
