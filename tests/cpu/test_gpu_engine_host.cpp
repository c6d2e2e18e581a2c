// The host side of the GPU engine, testable without a GPU: CUDA error messages, the CUPTI
// loader's off switch, the calibration cache, the L2 flush size, and graceful "no device".
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "core/errors.h"
#include "device/calibrate.h"
#include "core/cuda_check.h"
#include "device/info.h"
#include "run/backend.h"
#include "timing/cupti_loader.h"
#include "timing/cupti_timer.h"
#include "timing/l2_flush.h"

namespace gdn {
namespace {

using test::contains;
using test::ScopedEnv;

TEST(CudaCheck, MessageNamesCallErrorAndPlace) {
  try {
    CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), kExitRuntime);
    EXPECT_TRUE(contains(msg, "cudaErrorInvalidValue")) << msg;
    EXPECT_TRUE(contains(msg, "test_gpu_engine_host.cpp:")) << msg;
    EXPECT_TRUE(contains(msg, "invalid argument")) << msg;  // the runtime's own description
  }
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
}

TEST(CudaCheck, FailingRuntimeCallIsNamed) {
  try {
    CUDA_CHECK(cudaSetDevice(-1));  // fails with or without a driver
    FAIL() << "cudaSetDevice(-1) succeeded";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cudaSetDevice(-1)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cudaError")) << e.what();
  }
  cudaGetLastError();
}


TEST(CuptiLoader, DisableVariableForcesTheFallbackWithAReason) {
  ScopedEnv off(kDisableCuptiEnv, "1");
  EXPECT_TRUE(cupti_disabled_by_env());
  std::string why;
  EXPECT_EQ(load_cupti(&why), nullptr);
  EXPECT_TRUE(contains(why, kDisableCuptiEnv)) << why;
  why.clear();
  EXPECT_FALSE(start_cupti_tracing(&why));
  EXPECT_TRUE(contains(why, kDisableCuptiEnv)) << why;
  EXPECT_EQ(make_cupti_timer(nullptr, nullptr, &why), nullptr);
  EXPECT_TRUE(contains(cupti_unavailable_reason(), kDisableCuptiEnv)) << cupti_unavailable_reason();
}

TEST(CuptiLoader, LoadsTheLibraryWhenOneIsInstalled) {
  std::string why;
  const CuptiApi* api = load_cupti(&why);
  if (!api) GTEST_SKIP() << why;
  EXPECT_FALSE(api->library_path.empty());
  const std::string version = cupti_version_string();
  EXPECT_FALSE(version.empty());
  std::cout << "libcupti: " << api->library_path << ", version " << version << "\n";
}

TEST(CuptiLoader, OtherValuesDoNotDisable) {
  ScopedEnv off(kDisableCuptiEnv, "0");
  EXPECT_FALSE(cupti_disabled_by_env());
}

TEST(L2Flush, BufferIsTwiceL2WithA64MiBFloor) {
  EXPECT_EQ(L2Flush::buffer_bytes(60u << 20), 120u << 20);
  EXPECT_EQ(L2Flush::buffer_bytes(4u << 20), 64u << 20);
  EXPECT_EQ(L2Flush::buffer_bytes(0), 64u << 20);
  EXPECT_EQ(L2Flush::buffer_bytes((50u << 20) + 3) % 16, 0u);
}

Calibration sample_calibration(const std::string& uuid) {
  Calibration c;
  c.uuid = uuid;
  c.device_name = "NVIDIA H200";
  c.copy_bytes_per_s = 4.25e12;
  c.bf16_flops_per_s = 7.5e14;
  c.measured_at = "2025-01-01T00:00:00Z";
  c.mma_method = "wgmma m64n256k16";
  c.copy_buffer_bytes = 2147483648.0;
  return c;
}

TEST(Calibration, JsonRoundTripKeepsEveryFieldAndNaN) {
  Calibration c = sample_calibration("GPU-test-calibration");
  c.bf16_flops_per_s = std::nan("");  // sm_75: no bf16 tensor cores
  const nlohmann::json j = to_json(c);
  EXPECT_TRUE(j.at("bf16_flops_per_s").is_number() || j.at("bf16_flops_per_s").is_null());
  const Calibration back = calibration_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.uuid, c.uuid);
  EXPECT_EQ(back.device_name, c.device_name);
  EXPECT_DOUBLE_EQ(back.copy_bytes_per_s, c.copy_bytes_per_s);
  EXPECT_TRUE(std::isnan(back.bf16_flops_per_s));
  EXPECT_EQ(back.measured_at, c.measured_at);
  EXPECT_EQ(back.mma_method, c.mma_method);
  EXPECT_DOUBLE_EQ(back.copy_buffer_bytes, c.copy_buffer_bytes);
}

TEST(Calibration, MalformedEntryIsAnInputError) {
  try {
    calibration_from_json(nlohmann::json{{"copy_bytes_per_s", 1.0}});
    FAIL() << "missing uuid accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput);
    EXPECT_TRUE(contains(e.what(), "uuid")) << e.what();
  }
  EXPECT_THROW(calibration_from_json(nlohmann::json{{"uuid", "x"}, {"copy_bytes_per_s", "fast"}}), Error);
}

class CalibrationCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gdnbench-cal-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    env_ = std::make_unique<ScopedEnv>("XDG_CACHE_HOME", dir_.string());
  }
  void TearDown() override {
    env_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<ScopedEnv> env_;
};

TEST_F(CalibrationCache, PathFollowsXdgCacheHome) {
  EXPECT_EQ(calibration_cache_path(), (dir_ / "gdnbench" / "calibration.json").string());
}

TEST_F(CalibrationCache, EntriesAreKeptPerDeviceAndReplaced) {
  const std::string a = "GPU-test-device-a";
  const std::string b = "GPU-test-device-b";
  EXPECT_FALSE(load_cached_calibration(a).has_value());
  std::string why;
  ASSERT_TRUE(save_calibration(sample_calibration(a), &why)) << why;
  Calibration cb = sample_calibration(b);
  cb.copy_bytes_per_s = 3.0e12;
  ASSERT_TRUE(save_calibration(cb, &why)) << why;

  auto got_a = load_cached_calibration(a);
  auto got_b = load_cached_calibration(b);
  ASSERT_TRUE(got_a && got_b);
  EXPECT_DOUBLE_EQ(got_a->copy_bytes_per_s, 4.25e12);
  EXPECT_DOUBLE_EQ(got_b->copy_bytes_per_s, 3.0e12);

  cb.copy_bytes_per_s = 3.5e12;
  ASSERT_TRUE(save_calibration(cb, &why)) << why;
  EXPECT_DOUBLE_EQ(load_cached_calibration(b)->copy_bytes_per_s, 3.5e12);
  EXPECT_DOUBLE_EQ(load_cached_calibration(a)->copy_bytes_per_s, 4.25e12);
  // No temporary file is left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ / "gdnbench")) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(CalibrationCache, CorruptCacheCountsAsEmptyAndIsRepairedBySave) {
  const std::string a = "GPU-test-device-a";
  std::filesystem::create_directories(dir_ / "gdnbench");
  std::ofstream(dir_ / "gdnbench" / "calibration.json") << "{ not json";
  EXPECT_FALSE(load_cached_calibration(a).has_value());
  ASSERT_TRUE(save_calibration(sample_calibration(a)));
  EXPECT_TRUE(load_cached_calibration(a).has_value());
}

TEST(NoDevice, QueryAndBackendFailGracefullyWithAReason) {
  std::string why;
  const auto devices = query_devices(&why);
  if (!devices.empty()) GTEST_SKIP() << "a CUDA device is present; this test covers hosts without one";
  EXPECT_TRUE(contains(why, "no CUDA device")) << why;
  std::string backend_why;
  EXPECT_EQ(make_cuda_backend(0, &backend_why), nullptr);
  EXPECT_FALSE(backend_why.empty());
  std::cout << "query_devices: " << why << "\n";
}

}  // namespace
}  // namespace gdn
