// Ad-hoc sweeps from -a flags (config/adhoc_axes.h) and repro lines (config/repro.h): the flags
// give the same points as the same case in a YAML file, bad flags are exit 3 naming the flag,
// and every point of every shipped config reads back from its own repro flags.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/adhoc_axes.h"
#include "config/config.h"
#include "config/repro.h"
#include "core/axes.h"
#include "core/errors.h"

namespace gdn {
namespace {

std::vector<std::string> keys_of(const SweepConfig& cfg) {
  std::vector<std::string> out;
  for (const auto& c : cfg.cases)
    for (const auto& s : c.shapes) out.push_back(s.key());
  return out;
}

// The message and exit code of an ad-hoc sweep that must be refused.
std::string refusal(const std::string& op, const std::vector<std::string>& axes, const std::string& variant = "") {
  try {
    adhoc_config(op, axes, variant);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: --op " << op;
  return "";
}

TEST(AdhocAxes, FlagsGiveTheSamePointsAsTheSameCaseInYaml) {
  struct Pair {
    std::string op, variant;
    std::vector<std::string> flags;
    std::string yaml;
  };
  const std::vector<Pair> pairs{
      {"decode", "cpu", {"batch=1,8,64", "heads=16/32", "state_dtype=bf16"},
       "cases:\n  - op: decode\n    variant: cpu\n    batch: [1, 8, 64]\n    heads: \"16/32\"\n    state_dtype: bf16\n"},
      {"prefill", "", {"seqlens=1x64,4x16,5+11", "heads=2/4,4/8", "head_dim=32", "h0=false,true"},
       "cases:\n  - op: prefill\n    seqlens: [1x64, 4x16, \"5+11\"]\n    heads: [\"2/4\", \"4/8\"]\n    head_dim: 32\n"
       "    h0: [false, true]\n"},
      {"mtp", "mtp/*", {"tokens=2,4", "batch=3", "cache_intermediate=false,true", "layout=kv,vk", "scale=0.125", "pool=2x"},
       "cases:\n  - op: mtp\n    variant: mtp/*\n    tokens: [2, 4]\n    batch: 3\n"
       "    cache_intermediate: [false, true]\n    layout: [kv, vk]\n    scale: 0.125\n    pool: 2x\n"},
  };
  for (const auto& p : pairs) {
    const SweepConfig flags = adhoc_config(p.op, p.flags, p.variant);
    const SweepConfig yaml = parse_config(p.yaml, "same.yaml");
    ASSERT_EQ(flags.cases.size(), 1u);
    EXPECT_EQ(keys_of(flags), keys_of(yaml)) << p.yaml;
    EXPECT_EQ(flags.cases[0].variant_glob, yaml.cases[0].variant_glob);
    EXPECT_EQ(flags.cases[0].seed, yaml.cases[0].seed);
    for (std::size_t i = 0; i < flags.cases[0].shapes.size(); ++i)
      EXPECT_EQ(shape_to_json(flags.cases[0].shapes[i]), shape_to_json(yaml.cases[0].shapes[i]));
  }
}

TEST(AdhocAxes, OrderOfFlagsDoesNotChangeTheSweepOrItsHash) {
  const auto a = adhoc_config("decode", {"batch=1,2", "heads=2/4", "layout=kv"}, "");
  const auto b = adhoc_config("decode", {"layout=kv", "batch=1,2", "heads=2/4"}, "");
  EXPECT_EQ(keys_of(a), keys_of(b));
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.path, "command line: --op decode -a layout=kv -a heads=2/4 -a batch=1,2");
  EXPECT_NE(a.hash, adhoc_config("decode", {"batch=1,2,4", "heads=2/4", "layout=kv"}, "").hash);
}

TEST(AdhocAxes, PlanValuesSplitOnSemicolonsAndKeepTheirCommas) {
  const auto cfg = adhoc_config("prefill", {"seqlens=1x64", "plan=default;schedule=fused"}, "prefill/sm90");
  ASSERT_EQ(cfg.cases[0].shapes.size(), 2u);
  EXPECT_EQ(cfg.cases[0].shapes[0].plan, "");
  EXPECT_EQ(cfg.cases[0].shapes[1].plan, "schedule=fused");
}

TEST(AdhocAxes, BadFlagsAreExitThreeAndNameTheFlag) {
  EXPECT_NE(refusal("decode", {"bach=1"}).find("-a bach=1: unknown key; valid keys:"), std::string::npos);
  EXPECT_NE(refusal("decode", {"batch=1,x"}).find("-a batch=1,x: batch[1]: expected an integer (got x)"),
            std::string::npos);
  EXPECT_NE(refusal("decode", {"batch=0"}).find("-a batch=0: must be >= 1 (got 0)"), std::string::npos);
  EXPECT_NE(refusal("decode", {"heads=16/30"}).find("-a heads=16/30: h_v % h_qk must be 0 (got 16/30)"),
            std::string::npos);
  EXPECT_NE(refusal("decode", {"state_dtype=f64"}).find("-a state_dtype=f64: must be one of f32, bf16"),
            std::string::npos);
  EXPECT_NE(refusal("decode", {"seqlens=1x16"}).find("-a seqlens=1x16: does not apply to op decode"),
            std::string::npos);
  EXPECT_NE(refusal("decode", {"batch"}).find("-a batch: expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(refusal("decode", {"batch=1", "batch=2"}).find("-a batch=2: batch is given twice (first by -a batch=1)"),
            std::string::npos);
  EXPECT_NE(refusal("decode", {"op=mtp"}).find("-a op=mtp: op is set by --op"), std::string::npos);
  EXPECT_NE(refusal("decode", {"batch=1"}, "nosuch").find("--variant nosuch: matches no decode variant"),
            std::string::npos);
  EXPECT_NE(refusal("", {"batch=1"}).find("pass --op"), std::string::npos);
  EXPECT_NE(refusal("prefill", {"heads=2/4"}).find("--op prefill needs its sequences: -a seqlens="), std::string::npos);
  EXPECT_NE(refusal("mtp", {"batch=2"}).find("--op mtp needs its draft tokens"), std::string::npos);
  EXPECT_NE(refusal("prefill", {"seqlens=1x64", "plan=schedule=nosuch"}, "prefill/sm90").find("-a plan=schedule=nosuch:"),
            std::string::npos);
}

TEST(AdhocAxes, WithAConfigTheFlagsOverrideEveryCaseOfTheirOps) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("adhoc_" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string base = file("base.yaml",
                                "defaults:\n  heads: \"2/4\"\n  batch: 2\ncases:\n  - op: decode\n    batch: [1, 2]\n"
                                "  - op: mtp\n    tokens: 3\n  - op: prefill\n    seqlens: 1x64\n");
  const std::string edited = file("edited.yaml",
                                  "defaults:\n  heads: \"2/4\"\n  batch: 2\ncases:\n  - op: decode\n    batch: [4, 8]\n"
                                  "    state_dtype: bf16\n  - op: mtp\n    tokens: 3\n    batch: [4, 8]\n    state_dtype: bf16\n"
                                  "  - op: prefill\n    seqlens: 1x64\n    state_dtype: bf16\n");
  const SweepConfig over = config_with_axes(base, {"state_dtype=bf16", "batch=4,8"});
  EXPECT_EQ(keys_of(over), keys_of(load_config(edited)));
  EXPECT_EQ(over.path, base + " -a state_dtype=bf16 -a batch=4,8");
  EXPECT_NE(over.hash, load_config(base).hash);
  EXPECT_NE(over.hash, config_with_axes(base, {"batch=4"}).hash);
  EXPECT_EQ(over.hash, config_with_axes(base, {"batch=4,8", "state_dtype=bf16"}).hash);

  auto refused = [](const std::string& path, const std::vector<std::string>& axes) -> std::string {
    try {
      config_with_axes(path, axes);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitBadInput);
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(refused(base, {"batch=x"}).find("-a batch=x: cases[0].batch: expected an integer (got x)"),
            std::string::npos);
  const std::string only_prefill = file("prefill.yaml", "cases:\n  - op: prefill\n    seqlens: 1x64\n");
  EXPECT_NE(refused(only_prefill, {"batch=2"}).find("-a batch=2: no case of " + only_prefill + " is of an op that takes batch"),
            std::string::npos);
  // The file's own errors keep their FILE:LINE.
  const std::string bad = file("bad.yaml", "cases:\n  - op: decode\n    batch: -1\n");
  EXPECT_NE(refused(bad, {"heads=2/4"}).find(bad + ":3: cases[0].batch: must be >= 1"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Every point of every shipped config, rebuilt from its own -a flags alone: the same shape.
TEST(AdhocAxes, EveryShippedPointReadsBackFromItsReproFlags) {
  std::size_t points = 0;
  std::vector<std::filesystem::path> files{std::filesystem::path(GDN_SOURCE_DIR) / "tests/data/tiny.yaml"};
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(GDN_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  for (const auto& file : files) {
    const SweepConfig cfg = load_config(file.string());
    for (const auto& c : cfg.cases)
      for (const auto& s : c.shapes) {
        const auto axes = adhoc_axes_of(s);
        ASSERT_TRUE(axes) << file << " " << s.key();
        const SweepConfig one = adhoc_config(std::string(to_string(s.op)), *axes, c.variant_glob);
        ASSERT_EQ(one.total_points(), 1u) << file << " " << s.key();
        EXPECT_EQ(shape_to_json(one.cases[0].shapes[0]), shape_to_json(s)) << file << " " << s.key();
        ++points;
      }
  }
  EXPECT_GT(points, 300u);
}

TEST(Repro, LineNamesTheVariantSeedModeAndOnlyTheAxesThatDiffer) {
  Shape s;
  s.op = OpKind::decode;
  s.batch = 8, s.state_dtype = DType::bf16, s.layout = Layout::vk;
  const std::string line = repro_line({"build/gdnbench", "run", "decode/fast", s, 42, "hot", 2});
  EXPECT_EQ(line, "build/gdnbench run --op decode -a state_dtype=bf16 -a batch=8 -a verify_heads=2 "
                  "--variant decode/fast --seed 42 --mode hot");
  EXPECT_EQ(repro_line({"gdnbench", "verify", "decode/cpu", s, 1, "", {}}),
            "gdnbench verify --op decode -a state_dtype=bf16 -a batch=8 --variant decode/cpu --seed 1");
  s.dv = 64;  // K != V: no flag says it
  EXPECT_EQ(repro_line({"gdnbench", "run", "decode/cpu", s, 1, "cold", {}}), "");
}

TEST(Repro, ShellQuotingKeepsOddWordsWhole) {
  EXPECT_EQ(shell_quote("batch=1,8"), "batch=1,8");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(Repro, SequenceSetsKeepTheirCountWhenTheyHaveMoreSequencesThanTokens) {
  // 16 sequences of 8 tokens: "8x16" would read back as 8 sequences of 16.
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = std::vector<int64_t>(16, 8);
  const auto axes = adhoc_axes_of(s);
  ASSERT_TRUE(axes);
  const auto one = adhoc_config("prefill", *axes, "");
  EXPECT_EQ(one.cases[0].shapes[0].seqlens, s.seqlens);
}

}  // namespace
}  // namespace gdn
