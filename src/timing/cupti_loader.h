// CUPTI loaded at run time (dlopen), so a host without libcupti only loses the CUPTI timer.
// The function pointer types come from the toolkit's CUPTI headers; nothing links libcupti.
#pragma once

#include <cupti.h>

#include <string>

namespace gdn {

// The CUPTI entry points gdnbench uses, resolved with dlsym.
struct CuptiApi {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&cuptiActivityFlushAll) activity_flush_all = nullptr;
  std::string library_path;  // what dlopen accepted

  // "CUPTI_ERROR_..." text for a result code.
  std::string result_text(CUptiResult r) const;
};

// Environment variable that forces the event-timer fallback ("1", "true", "yes").
constexpr const char* kDisableCuptiEnv = "GDNBENCH_DISABLE_CUPTI";
// Environment variable naming a libcupti file (or a folder holding one), tried first.
constexpr const char* kCuptiPathEnv = "GDNBENCH_CUPTI_PATH";

// True when GDNBENCH_DISABLE_CUPTI asks for the fallback. Read on every call, so a test can set
// it at run time.
bool cupti_disabled_by_env();

// The loaded API, or null with `why` set (every path tried, or the disabling variable). Loading
// happens once per process; the result is cached.
const CuptiApi* load_cupti(std::string* why = nullptr);

// "13.0.1"-style text of cuptiGetVersion (the CUPTI API version), "" when CUPTI is not loadable.
std::string cupti_version_string();

}  // namespace gdn
