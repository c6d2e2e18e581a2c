#include "plugin/plugin_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "core/errors.h"
#include "plugin/c_abi.h"
#include "plugin/external_variant.h"
#include "plugin/sha256.h"

namespace gdn {
namespace {

constexpr uint32_t kMaxEntries = 1024;  // more is a corrupt table, not a library of kernels

std::string absolute_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw input_error(fmt::format("--plugin '{}': no such file", path));
  if (!std::filesystem::is_regular_file(status)) throw input_error(fmt::format("--plugin '{}': not a regular file", path));
  return std::filesystem::canonical(path).string();
}

// The library's table, its version checked before any other field is read.
const gdn_kernel_table& open_table(const std::string& file) {
  // An absolute path: dlopen searches the library path for a bare name, never the working directory.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw input_error(fmt::format("--plugin '{}': cannot load it: {}", file, why ? why : "unknown dlopen error"));
  }
  dlerror();
  auto entry = reinterpret_cast<gdnbench_kernels_fn>(dlsym(handle, "gdnbench_kernels"));
  if (!entry)
    throw input_error(fmt::format("--plugin '{}': exports no gdnbench_kernels() (include gdnbench/kernel.h and define it "
                                  "with C linkage)",
                                  file));
  const gdn_kernel_table* table = entry();
  if (!table) throw input_error(fmt::format("--plugin '{}': gdnbench_kernels() returned NULL", file));
  if (table->abi_version != GDNBENCH_KERNEL_ABI_VERSION)
    throw input_error(fmt::format("--plugin '{}': built for kernel ABI version {}, this gdnbench reads version {}; rebuild "
                                  "it against this gdnbench's include/gdnbench/kernel.h",
                                  file, table->abi_version, GDNBENCH_KERNEL_ABI_VERSION));
  if (table->num_variants == 0) throw input_error(fmt::format("--plugin '{}': its table lists no variants", file));
  if (table->num_variants > kMaxEntries)
    throw input_error(fmt::format("--plugin '{}': its table lists {} variants, more than {}", file, table->num_variants, kMaxEntries));
  if (!table->variants) throw input_error(fmt::format("--plugin '{}': num_variants is {} but variants is NULL", file, table->num_variants));
  return *table;
}

void load_plugin(const std::string& path, std::set<std::string>& loaded) {
  const std::string file = absolute_file(path);
  if (!loaded.insert(file).second) throw input_error(fmt::format("--plugin '{}' is given twice", path));
  const std::string library = plugin_library_name(file);
  if (auto why = check_external_name_part(library); !why.empty())
    throw input_error(fmt::format("--plugin '{}': its name gives the library part '{}' of its variants' names, which {}",
                                  file, library, why));
  const VariantOrigin origin{"plugin", file, sha256_file(file)};
  const gdn_kernel_table& table = open_table(file);
  // Every entry is checked before any is registered: a bad table adds nothing.
  std::vector<Variant> variants;
  std::set<std::string> names;
  for (uint32_t i = 0; i < table.num_variants; ++i) {
    const gdn_variant& e = table.variants[i];
    const std::string entry = e.name ? e.name : "";
    auto fail = [&](const std::string& why) {
      throw input_error(fmt::format("--plugin '{}': variants[{}] ('{}') {}", file, i, entry, why));
    };
    if (auto why = check_external_name_part(entry); !why.empty()) fail("has a name that " + why);
    if (!names.insert(entry).second) fail("has the name of an earlier entry");
    if (auto why = check_c_entry(e); !why.empty()) fail(why);
    variants.push_back(make_c_variant(e, external_variant_name("plugin", library, entry), origin));
  }
  for (auto& v : variants) register_external(std::move(v), "--plugin '" + file + "'");
}

}  // namespace

std::string plugin_library_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  if (auto so = name.find(".so"); so != std::string::npos) name.erase(so);
  if (name.rfind("lib", 0) == 0 && name.size() > 3) name.erase(0, 3);
  return name;
}

void load_plugins(const std::vector<std::string>& paths) {
  std::set<std::string> loaded;
  for (const auto& p : paths) load_plugin(p, loaded);
}

}  // namespace gdn
