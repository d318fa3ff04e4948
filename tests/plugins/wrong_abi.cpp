// The example plugin (plugins/example/saxpy.cpp) built as if against a future plugin ABI: the
// registry must refuse it and name both versions.
#include "ktune/plugin.h"

#undef KTUNE_PLUGIN_ABI_VERSION
#define KTUNE_PLUGIN_ABI_VERSION 999u

#include "saxpy.cpp"
