// run --devices on two GPUs of this host against the same sweep on one: the same records, every
// one verified and timed, and medians within noise of each other. Skips without two GPUs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "device/info.h"

#include "test_support.h"

namespace {

using nlohmann::json;

int run(const std::string& args, std::string& out) {
  gdn::test::ShellResult r = gdn::test::run_shell(std::string(GDN_BINARY) + " " + args + " 2>&1");
  out += r.out;
  return r.code;
}

TEST(Devices, TwoGpusGiveTheRecordsOfOne) {
  const auto devices = gdn::query_devices();
  if (devices.size() < 2) GTEST_SKIP() << "needs 2 CUDA devices, this host has " << devices.size();
  const auto dir = std::filesystem::temp_directory_path() / ("gdnbench_devices_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string sweep = " --quiet --op decode -a batch=1,8,64,256 -a heads=16/32 -a state_dtype=f32,bf16 "
                            "--variant decode/fast --max-noise 1 --json ";
  std::string out;
  ASSERT_EQ(run("run" + sweep + (dir / "one.json").string(), out), 0) << out;
  ASSERT_EQ(run("run --devices 0,1" + sweep + (dir / "two.json").string(), out), 0) << out;
  const json one = json::parse(std::ifstream(dir / "one.json")), two = json::parse(std::ifstream(dir / "two.json"));
  ASSERT_EQ(one["cases"].size(), two["cases"].size());
  for (std::size_t i = 0; i < one["cases"].size(); ++i) {
    const json &a = one["cases"][i], &b = two["cases"][i];
    EXPECT_EQ(a["shape_key"], b["shape_key"]);
    EXPECT_EQ(b["status"], "ok") << b.dump();
    EXPECT_TRUE(b["verification"]["pass"].get<bool>()) << b.dump();
    // Same GPU model: the medians agree within a generous band (separate boards differ a little).
    if (devices[0].name == devices[1].name) {
      const double ma = a["timing"]["stats"]["median"], mb = b["timing"]["stats"]["median"];
      EXPECT_LT(std::abs(mb / ma - 1), 0.15) << a["shape_key"] << ": " << ma << " s vs " << mb << " s";
    }
  }
}

}  // namespace
