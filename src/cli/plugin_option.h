// `--plugin FILE` (repeatable), as run, verify, list and plan take it: a kernel library loaded
// before the command reads its config or lists anything (docs/plugins.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gdn::cli {

inline void add_plugin_option(CLI::App* cmd, std::vector<std::string>& plugins, const std::string& help) {
  cmd->add_option("--plugin", plugins, help)
      ->allow_extra_args(false)  // one path per --plugin: what follows is the next argument
      ->default_str("");
}

}  // namespace gdn::cli
