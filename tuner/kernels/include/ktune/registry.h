// The kernel registry: built-in kernels registered explicitly (no static constructors),
// shared-library plugins loaded by path, and declarative manifests (TOML + a .cu template).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/kernel.h"
#include "ktune/plugin.h"

namespace ktune {

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds a kernel; throws Error(kInput) if it does not validate or the name is taken.
  void add(KernelSpec kernel);
  // Adds every kernel of a plugin description (built-in or loaded); checks the ABI version.
  void add_plugin(const ktune_plugin* plugin, const std::string& origin);
  // dlopens a plugin library and adds its kernels; the library stays loaded as long as the
  // registry lives. Throws Error(kPlugin) naming the path for a missing file, a missing entry
  // symbol or an ABI mismatch.
  void load_library(const std::string& path);
  // Reads a manifest (TOML) and the template it names; throws Error(kInput) for missing or
  // malformed fields, naming the file and the field.
  void load_manifest(const std::string& path);
  // Loads a path: a directory (every *.so and *.toml in it), a .so, or a .toml manifest.
  void load_path(const std::string& path);
  // Loads the ':'-separated directories/files of KTUNE_PLUGIN_PATH, if set.
  void load_env_path();

  bool contains(std::string_view name) const;
  // Throws Error(kUsage) "unknown kernel 'x'; known kernels: a, b".
  const KernelSpec& get(std::string_view name) const;
  std::vector<const KernelSpec*> kernels() const;  // sorted by name
  // What the quick check (ktune/check.h) found in kernels loaded from plugins and manifests
  // (a parameter never read, a reference configuration outside the restrictions), one line each
  // starting with the origin; built-ins are checked by their tests.
  const std::vector<std::string>& warnings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Converts one ABI description into a KernelSpec (exposed for tests).
KernelSpec kernel_from_desc(const ktune_kernel_desc& desc, const std::string& origin);

// Registers ktune's built-in kernels (plugins/builtin).
void register_builtin_kernels(Registry& registry);

}  // namespace ktune
