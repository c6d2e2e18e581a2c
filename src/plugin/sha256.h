// SHA-256 (FIPS 180-4) of a file, as lowercase hex: what `sha256sum` prints, so a report's record
// of a plugin can be checked against the file on disk with standard tools.
#pragma once

#include <string>
#include <string_view>

namespace gdn {

std::string sha256_hex(std::string_view bytes);
// The file's digest; throws input_error (exit 3) naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace gdn
