// A CompileRequest put together by hand the way render() puts one together for a configuration:
// the configuration's #defines, then the template body, for the compile and batch tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ktune/compiler.h"

namespace ktune::test {

inline CompileRequest assembled_request(std::vector<std::pair<std::string, std::string>> defines,
                                        std::string body, std::string entry,
                                        const std::string& arch, std::string group) {
  CompileRequest r;
  r.defines = std::move(defines);
  r.body = std::move(body);
  for (const auto& [name, value] : r.defines) r.source += "#define " + name + " " + value + "\n";
  r.source += r.body;
  r.source_name = "k.cu";
  r.entry = std::move(entry);
  r.options = {"--gpu-architecture=" + arch, "--ptxas-options=-v"};
  r.arch = arch;
  r.batch_group = std::move(group);
  return r;
}

}  // namespace ktune::test
