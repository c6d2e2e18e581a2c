// Where a variant's code came from. Variants linked into gdnbench have an empty origin; one
// loaded at run time (a C plugin, docs/plugins.md) names its kind, its file and the file's
// SHA-256, and every record of that variant carries them, so a report says which build it timed.
#pragma once

#include <string>

namespace gdn {

struct VariantOrigin {
  std::string kind;    // "" (built in) or "plugin"
  std::string path;    // absolute path of the loaded file
  std::string sha256;  // hex digest of the file's bytes as loaded
  bool external() const { return !kind.empty(); }
};

}  // namespace gdn
