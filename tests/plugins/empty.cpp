// A plugin library whose description names no kernels: the registry refuses it rather than
// load nothing without a word.
#include "ktune/plugin.h"

extern "C" __attribute__((visibility("default"))) const ktune_plugin* ktune_plugin_entry(void) {
  static const ktune_plugin plugin = {
      KTUNE_PLUGIN_ABI_VERSION, sizeof(ktune_plugin), "empty", "1.0", nullptr, 0};
  return &plugin;
}
