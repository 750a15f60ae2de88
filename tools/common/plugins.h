// --plugin=PATH for kiln-run and kiln-bench: load user libraries of packed
// functions (env.linear, ...) through the C API's kiln_plugin_load before a
// module that calls them is loaded. The entry point a plugin exports and the
// errors are kiln.h's ("Plugins").
//
// An executable that loads plugins must carry the whole C API and export it
// (kiln_export_c_api in cmake/KilnHelpers.cmake), so that a plugin's calls
// of kiln_register_function reach this process's registry.
//
// Thread-safe (the registry is); plugins stay loaded for the process's life.
#ifndef KILN_TOOLS_COMMON_PLUGINS_H_
#define KILN_TOOLS_COMMON_PLUGINS_H_

#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tools {

// Loads each plugin in order; stops at the first failure, whose message
// names the flag and the plugin ("--plugin: cannot load plugin 'libx.so': ...").
Status LoadPlugins(const std::vector<std::string>& paths);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_PLUGINS_H_
