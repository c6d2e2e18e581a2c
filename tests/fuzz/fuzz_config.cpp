// libFuzzer target: the config reader (YAML and JSON) on arbitrary bytes. Bad input must end in
// gdn::Error with exit 3 (input_error); anything else, a crash, a hang or unbounded memory is a
// finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/config.h"
#include "core/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"fuzz.yaml", "fuzz.json"}) {
    try {
      gdn::parse_config(text, name);
    } catch (const gdn::Error& e) {
      if (e.code() != gdn::kExitBadInput) {
        std::fprintf(stderr, "config reader: exit %d, not 3, for bad input: %s\n", e.code(), e.what());
        std::abort();
      }
    }
  }
  return 0;
}
