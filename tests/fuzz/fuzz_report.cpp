// libFuzzer target: the report reader (parse with its depth and number limits, the schema check,
// the records, the unique keys) on arbitrary bytes. Bad input must end in gdn::Error with exit 3;
// anything else, a crash, a hang or unbounded memory is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const gdn::RunReport r = gdn::read_report(in, "fuzz.json");
    // What compare and peers do next with a report that loads: print and rewrite it.
    (void)gdn::to_json(r).dump();
  } catch (const gdn::Error& e) {
    if (e.code() != gdn::kExitBadInput) {
      std::fprintf(stderr, "report reader: exit %d, not 3, for bad input: %s\n", e.code(), e.what());
      std::abort();
    }
  }
  return 0;
}
