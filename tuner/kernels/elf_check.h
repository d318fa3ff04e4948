// A plugin library is checked before dlopen maps it: dlopen of a truncated shared object maps
// pages past the end of the file, and the first touch of one kills the process with SIGBUS.
#pragma once

#include <string>

namespace ktune {

// Throws Error(kPlugin) "<path>: cannot load plugin: <why>" unless the file is an ELF shared
// object for this machine (class, byte order, machine) whose headers and loadable segments all
// lie inside the file.
void check_elf_library(const std::string& path);

}  // namespace ktune
