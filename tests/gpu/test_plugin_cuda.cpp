// The CUDA example plugin (examples/plugin-cuda) through the real CLI on a GPU: verified against
// the reference and timed by the same timers as the built-in variants, in cold mode (CUPTI or
// events, the L2 flushed) and replayed in a CUDA graph. Without a CUDA device it skips with the
// reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "run/backend.h"

#include "test_support.h"

namespace gdn {
namespace {

namespace fs = std::filesystem;

std::string run_cli(const std::string& args, int& code) {
  test::ShellResult r = test::run_shell(std::string(GDN_BINARY) + " " + args + " 2>&1");
  code = r.code;
  return r.out;
}

TEST(PluginCuda, ExampleIsVerifiedAndTimedLikeOurs) {
  {
    std::string why;
    if (!make_cuda_backend(0, &why)) GTEST_SKIP() << "CUDA backend unavailable: " << why;
  }
  const auto dir = fs::temp_directory_path() / ("gdnbench_plugin_cuda_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto config = (dir / "decode.yaml").string();
  std::ofstream(config) << "defaults:\n  variant: \"*\"\ncases:\n  - op: decode\n    batch: [1, 33]\n"
                           "    layout: [vk, kv]\n    state_dtype: [f32, bf16]\n  - op: decode\n    batch: 16\n"
                           "    indices: padded\n    gate: raw\n    index_dtype: i32\n";
  const std::string so = (fs::path(GDN_BINARY).parent_path() / "plugins" / "libexample_cuda.so").string();
  for (const char* mode : {"cold", "graph"}) {
    SCOPED_TRACE(mode);
    const auto json = (dir / (std::string(mode) + ".json")).string();
    int code = -1;
    const auto out = run_cli("run --quiet --plugin " + so + " --config " + config + " --variant 'plugin:*' --mode " +
                                 mode + " --min-samples 5 --json " + json,
                             code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(std::ifstream(json));
    ASSERT_EQ(j["cases"].size(), 9u) << out;
    for (const auto& c : j["cases"]) {
      EXPECT_EQ(c["variant"], "plugin:example_cuda/decode_simple");
      EXPECT_EQ(c["status"], "ok") << c.dump();
      EXPECT_TRUE(c["verification"]["pass"].get<bool>()) << c.dump();
      ASSERT_TRUE(c["timed"].get<bool>()) << c.dump();
      const std::string timer = c["timing"]["timer"];
      EXPECT_TRUE(timer == "cupti" || timer == "events") << timer;
      if (timer == "cupti" && std::string(mode) == "cold")  // CUPTI names the plugin's kernel
        EXPECT_NE(c["timing"]["kernels"].dump().find("decode_kernel"), std::string::npos) << c["timing"].dump();
    }
  }
}

}  // namespace
}  // namespace gdn
