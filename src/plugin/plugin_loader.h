// `--plugin FILE`: a shared library implementing include/gdnbench/kernel.h, loaded before the
// config is read so that its variants are listed, matched by the config's globs, verified,
// timed and recorded like the built-in ones (docs/plugins.md).
#pragma once

#include <string>
#include <vector>

namespace gdn {

// Loads each file (never unloaded), checks its ABI version and table, and registers each entry
// as "plugin:<library>/<name>". Any problem is an input_error (exit 3) naming the file.
void load_plugins(const std::vector<std::string>& paths);

// "libmine.so.2" -> "mine": the library part of its variants' names.
std::string plugin_library_name(const std::string& path);

}  // namespace gdn
