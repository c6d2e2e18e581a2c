#include "cli/output_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <optional>

#include "core/bounded_file.h"
#include "core/errors.h"

namespace gdn::cli {
namespace {

namespace fs = std::filesystem;

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// Two paths name one file: the same inode, or (not there yet) the same absolute path.
bool same_file(const std::string& a, const std::string& b) {
  auto ia = file_id(a), ib = file_id(b);
  if (ia && ib) return *ia == *ib;
  if (ia || ib) return false;
  std::error_code e1, e2;
  return fs::weakly_canonical(a, e1) == fs::weakly_canonical(b, e2) && !e1 && !e2;
}

void check_writable(const NamedPath& out) {
  struct stat st {};
  if (::stat(out.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw input_error(fmt::format("{} '{}' is {}: gdnbench writes its outputs to regular files only", out.flag, out.path,
                                  file_kind(st.st_mode)));
  const fs::path parent = fs::path(out.path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw runtime_error(fmt::format("cannot write {} '{}': the directory '{}' does not exist", out.flag, out.path, dir));
  // The file is written as a temp file beside it and renamed: the directory must take both.
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw runtime_error(fmt::format("cannot write {} '{}': the directory '{}' is not writable ({})", out.flag, out.path,
                                    dir, std::strerror(errno)));
}

}  // namespace

void check_output_paths(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty()) continue;
    for (const NamedPath& in : inputs) {
      if (in.path.empty() || (out.flag == "--json" && in.flag == "--resume")) continue;
      if (same_file(out.path, in.path))
        throw input_error(fmt::format("{} '{}' is the {} file '{}': writing it would destroy an input", out.flag,
                                      out.path, in.flag, in.path));
    }
    for (std::size_t k = 0; k < i; ++k)
      if (!outputs[k].path.empty() && same_file(out.path, outputs[k].path))
        throw input_error(fmt::format("{} '{}' is the same file as {} '{}': each output needs its own path", out.flag,
                                      out.path, outputs[k].flag, outputs[k].path));
    check_writable(out);
  }
}

}  // namespace gdn::cli
