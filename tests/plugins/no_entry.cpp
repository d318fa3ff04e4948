// A shared library that is not a ktune plugin: it exports a function, but not
// ktune_plugin_entry.
extern "C" __attribute__((visibility("default"))) int ktune_not_a_plugin(void) { return 42; }
