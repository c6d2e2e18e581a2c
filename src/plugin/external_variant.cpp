#include "plugin/external_variant.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace gdn {

namespace {
constexpr std::size_t kMaxNamePart = 64;
}

std::string check_external_name_part(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNamePart) return fmt::format("is {} bytes, longer than {}", name.size(), kMaxNamePart);
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '+' || c == '-';
    if (!ok) return fmt::format("holds '{}' (byte 0x{:02x}); use [A-Za-z0-9_.+-]", c, static_cast<unsigned char>(c));
  }
  return "";
}

std::string external_variant_name(const std::string& kind, const std::string& library, const std::string& entry) {
  return kind + ":" + library + "/" + entry;
}

void register_external(Variant v, const std::string& source) {
  if (const Variant* old = Registry::instance().find(v.name)) {
    const std::string from = old->origin.external() ? "'" + old->origin.path + "'" : "gdnbench itself";
    throw input_error(fmt::format("{}: variant '{}' is already registered (from {}); rename the file or the entry",
                                  source, v.name, from));
  }
  Registry::instance().add(std::move(v));
}

}  // namespace gdn
