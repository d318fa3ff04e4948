// Commands that describe what ktune knows: `list` (kernels) and `devices` (GPUs).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "cli.h"

namespace ktune::cli {

int cmd_list(const std::vector<std::string>& args) {
  po::options_description opts;
  opts.add(plugin_options()).add(output_options());
  po::variables_map vm;
  if (parse(args, "list", "[options]", opts, {}, vm)) return 0;
  auto registry = make_registry(vm);

  if (json_output(vm)) {
    nlohmann::json out = nlohmann::json::array();
    for (const KernelSpec* k : registry->kernels()) {
      nlohmann::json j;
      j["name"] = k->name;
      j["description"] = k->description;
      j["origin"] = k->origin;
      j["entry"] = k->entry;
      for (const auto& p : k->params) {
        nlohmann::json pj;
        pj["name"] = p.name;
        pj["values"] = nlohmann::json::array();
        for (const auto& v : p.values) pj["values"].push_back(to_json(v));
        pj["default"] = to_json(p.values[p.default_index]);
        pj["description"] = p.description;
        j["parameters"].push_back(pj);
      }
      for (const auto& p : k->problem)
        j["problem"].push_back(
            {{"name", p.name}, {"default", p.default_value}, {"description", p.description}});
      j["restrictions"] = k->restrictions;
      out.push_back(j);
    }
    print_json(out);
    return 0;
  }
  for (const KernelSpec* k : registry->kernels()) {
    std::cout << fmt::format("{}  ({})\n  {}\n  entry: {}\n  parameters:\n", k->name, k->origin,
                             k->description, k->entry);
    for (const auto& p : k->params) {
      std::vector<std::string> vals;
      for (const auto& v : p.values) vals.push_back(v.to_string());
      std::cout << fmt::format("    {:<22} {} (default {}){}\n", p.name, fmt::join(vals, ", "),
                               p.values[p.default_index].to_string(),
                               p.description.empty() ? "" : "  " + p.description);
    }
    std::cout << "  problem:\n";
    for (const auto& p : k->problem)
      std::cout << fmt::format("    {:<22} default {}{}\n", p.name, p.default_value,
                               p.description.empty() ? "" : "  " + p.description);
    if (!k->restrictions.empty()) {
      std::cout << "  restrictions:\n";
      for (const auto& r : k->restrictions) std::cout << "    " << r << "\n";
    }
    std::cout << "\n";
  }
  return 0;
}

int cmd_devices(const std::vector<std::string>& args) {
  po::options_description opts;
  opts.add(output_options());
  po::variables_map vm;
  if (parse(args, "devices", "[options]", opts, {}, vm)) return 0;
  const DeviceQuery q = list_devices();
  if (json_output(vm)) {
    nlohmann::json out;
    out["devices"] = nlohmann::json::array();
    for (const auto& d : q.devices)
      out["devices"].push_back(
          {{"ordinal", d.ordinal},
           {"name", d.name},
           {"arch", d.arch},
           {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
           {"multiprocessors", d.sm_count},
           {"memory_bytes", d.memory_bytes},
           {"l2_bytes", d.l2_bytes},
           {"driver_version", d.driver_version},
           {"uuid", d.uuid}});
    if (q.devices.empty()) out["problem"] = q.problem;
    print_json(out);
    return q.devices.empty() ? 7 : 0;
  }
  if (q.devices.empty()) {
    std::cerr << "no CUDA device: " << q.problem << "\n";
    return 7;
  }
  std::cout << fmt::format("{:<3} {:<28} {:<6} {:>5} {:>10} {:>8} {}\n", "id", "name", "arch",
                           "SMs", "memory", "L2", "driver");
  for (const auto& d : q.devices)
    std::cout << fmt::format("{:<3} {:<28} {:<6} {:>5} {:>7.1f}GiB {:>5.1f}MiB {}.{}\n", d.ordinal,
                             d.name, d.arch, d.sm_count, d.memory_bytes / double(1 << 30),
                             d.l2_bytes / double(1 << 20), d.driver_version / 1000,
                             d.driver_version % 1000 / 10);
  return 0;
}

}  // namespace ktune::cli
