// kernels.spec_json: writing and reading the stored kernel description (ktune/stored_spec.h).
#include "ktune/stored_spec.h"

#include <nlohmann/json.hpp>

#include "ktune/error.h"

namespace ktune {

namespace {

// A value written as its canonical text, or (by other writers) as a JSON number.
Value stored_value(const nlohmann::json& j) {
  return j.is_string() ? Value::parse(j.get<std::string>()) : value_from_json(j);
}

std::string expression_text(const nlohmann::json& j, const std::string& fallback) {
  if (j.is_null()) return fallback;
  return j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace

std::string StoredSpec::to_json() const {
  nlohmann::json spec;
  spec["parameters"] = nlohmann::json::array();
  for (const Param& p : params) {
    nlohmann::json values = nlohmann::json::array();
    for (const Value& v : p.values) values.push_back(v.to_string());
    spec["parameters"].push_back(
        {{"name", p.name}, {"values", values}, {"default", p.default_value.to_string()}});
  }
  spec["problem"] = nlohmann::json::array();
  for (const ProblemParam& p : problem)
    spec["problem"].push_back({{"name", p.name}, {"default", p.default_value}});
  spec["restrictions"] = restrictions;
  spec["grid"] = grid;
  spec["block"] = block;
  spec["shared_mem"] = shared_mem;
  spec["bytes"] = bytes;
  spec["flops"] = flops;
  spec["compile_options"] = compile_options;
  spec["source_name"] = source_name;
  if (arch_specific) spec["arch_specific"] = true;
  if (!defines.empty()) {
    spec["defines"] = defines;
    spec["block_names"] = block_names;
    if (user_defines) spec["kernel_tuner_defines"] = *user_defines;
  }
  return spec.dump();
}

StoredSpec StoredSpec::parse(std::string_view text, const std::string& where) {
  StoredSpec s;
  try {
    const nlohmann::json spec = nlohmann::json::parse(text.empty() ? std::string_view("{}") : text);
    if (!spec.is_object()) throw Error(ErrorKind::kInput, "not a JSON object");
    for (const auto& p : spec.value("parameters", nlohmann::json::array())) {
      Param param;
      param.name = p.at("name").get<std::string>();
      for (const auto& v : p.value("values", nlohmann::json::array()))
        param.values.push_back(stored_value(v));
      if (p.contains("default")) param.default_value = stored_value(p.at("default"));
      s.params.push_back(std::move(param));
    }
    for (const auto& p : spec.value("problem", nlohmann::json::array()))
      s.problem.push_back({p.at("name").get<std::string>(), p.value("default", std::int64_t{0})});
    s.restrictions = spec.value("restrictions", std::vector<std::string>{});
    const nlohmann::json grid = spec.value("grid", nlohmann::json::array());
    const nlohmann::json block = spec.value("block", nlohmann::json::array());
    for (std::size_t d = 0; d < 3; ++d) {
      s.grid[d] = expression_text(d < grid.size() ? grid[d] : nlohmann::json(), "1");
      s.block[d] = expression_text(d < block.size() ? block[d] : nlohmann::json(), "1");
    }
    s.shared_mem = expression_text(spec.value("shared_mem", nlohmann::json()), "0");
    s.bytes = expression_text(spec.value("bytes", nlohmann::json()), "");
    s.flops = expression_text(spec.value("flops", nlohmann::json()), "");
    s.compile_options = spec.value("compile_options", std::vector<std::string>{});
    s.source_name = spec.value("source_name", std::string());
    s.arch_specific = spec.value("arch_specific", false);
    s.defines = spec.value("defines", std::string());
    if (spec.contains("block_names"))
      s.block_names = spec.at("block_names").get<std::array<std::string, 3>>();
    if (spec.contains("kernel_tuner_defines"))
      s.user_defines = spec.at("kernel_tuner_defines").get<Defines>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInput, where + ": unreadable spec_json (" + e.what() + ")");
  } catch (const Error& e) {
    throw Error(ErrorKind::kInput, where + ": unreadable spec_json (" + e.what() + ")");
  }
  return s;
}

}  // namespace ktune
