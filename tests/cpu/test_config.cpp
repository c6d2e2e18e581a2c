// Sweep config loading: both formats, the schema, expansion order, and every class of bad input
// (exit code 3 with FILE:LINE: KEY.PATH in the message).
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/errors.h"
#include "core/fnv.h"
#include "core/plan_spec.h"
#include "core/registry.h"

namespace gdn {
namespace {

// Stand-ins with names no shipped variant uses, so the glob tests do not depend on which real
// variants are linked into this executable.
Variant stand_in(const std::string& name, OpKind op, bool test_only = false) {
  Variant v;
  v.name = name;
  v.op = op;
  v.description = "config test stand-in";
  v.test_only = test_only;
  return v;
}
const VariantRegistration kPrefillStandIn(stand_in("prefill/cfgtest_alpha", OpKind::prefill));
const VariantRegistration kDecodeStandIn(stand_in("decode/cfgtest_alpha", OpKind::decode));
const VariantRegistration kMtpStandIn(stand_in("mtp/cfgtest_alpha", OpKind::mtp));
const VariantRegistration kHiddenStandIn(stand_in("prefill/cfgtest_hidden", OpKind::prefill, true));

// A stand-in with knobs (test-only: named exactly, never by a wildcard), and a rule between its
// knobs that its check_plan adds to the table's.
Variant knobbed_stand_in() {
  Variant v = stand_in("decode/cfgtest_knobs", OpKind::decode, true);
  v.knobs = {{"tile", {"1", "2", "4"}, "rows per lane"}, {"mode", {"fast", "safe"}, "the build"}};
  v.check_plan = [knobs = v.knobs](const std::string& spec) {
    if (auto why = check_plan_knobs(knobs, spec); !why.empty()) return why;
    return spec.find("tile=4") != std::string::npos && spec.find("mode=safe") != std::string::npos
               ? std::string("tile 4 has no safe build")
               : std::string();
  };
  return v;
}
const VariantRegistration kKnobbedStandIn(knobbed_stand_in());

SweepConfig yaml(const std::string& text) { return parse_config(text, "t.yaml"); }

// Expects an input_error (exit 3) whose message names the file and line, the key path, and
// contains `fragment`.
::testing::AssertionResult rejects(const std::string& text, const std::string& file, int line, const std::string& path,
                                   const std::string& fragment) {
  try {
    parse_config(text, file);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (e.code() != kExitBadInput) return ::testing::AssertionFailure() << "exit code " << e.code() << ": " << msg;
    std::string where = fmt::format("{}:{}: ", file, line);
    if (msg.rfind(where, 0) != 0) return ::testing::AssertionFailure() << "expected prefix '" << where << "' in: " << msg;
    if (!path.empty() && msg.find(path + ": ") == std::string::npos)
      return ::testing::AssertionFailure() << "expected key path '" << path << "' in: " << msg;
    if (msg.find(fragment) == std::string::npos)
      return ::testing::AssertionFailure() << "expected '" << fragment << "' in: " << msg;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "config was accepted";
}

::testing::AssertionResult rejects_yaml(const std::string& text, int line, const std::string& path,
                                        const std::string& fragment) {
  return rejects(text, "bad.yaml", line, path, fragment);
}

// Everything an expansion produced, one line per point, to compare two configs exactly.
std::string render(const SweepConfig& cfg) {
  std::string out;
  for (const auto& c : cfg.cases) {
    std::string head = fmt::format("{}|{}|{}|{}|{}|{}", c.name, to_string(c.op), c.variant_glob, c.seed,
                                   c.threshold_pct ? *c.threshold_pct : -1.0, c.verify_heads ? *c.verify_heads : -1);
    for (const auto& s : c.shapes) out += head + "|" + s.key() + "\n";
  }
  return out;
}

// ---- expansion ---------------------------------------------------------------------------------

TEST(Config, MinimalCaseGetsDefaults) {
  auto cfg = yaml("cases:\n  - op: prefill\n    seqlens: 1x64\n");
  ASSERT_EQ(cfg.cases.size(), 1u);
  const auto& c = cfg.cases[0];
  EXPECT_EQ(c.name, "prefill#0");
  EXPECT_EQ(c.op, OpKind::prefill);
  EXPECT_EQ(c.variant_glob, "*");
  EXPECT_EQ(c.seed, 20260101u);
  EXPECT_FALSE(c.threshold_pct.has_value());
  EXPECT_FALSE(c.verify_heads.has_value());
  ASSERT_EQ(c.shapes.size(), 1u);
  const Shape& s = c.shapes[0];
  EXPECT_EQ(s.h_qk, 16);
  EXPECT_EQ(s.h_v, 32);
  EXPECT_EQ(s.dk, 128);
  EXPECT_EQ(s.dv, 128);
  EXPECT_EQ(s.layout, Layout::kv);  // prefill default
  EXPECT_TRUE(s.has_h0);
  EXPECT_EQ(s.seqlens, std::vector<int64_t>{64});
  EXPECT_EQ(cfg.total_points(), 1u);
  EXPECT_EQ(cfg.path, "t.yaml");
}

TEST(Config, DecodeAndMtpDefaultToVkLayout) {
  auto cfg = yaml("cases:\n  - op: decode\n  - op: mtp\n    tokens: 4\n");
  ASSERT_EQ(cfg.cases.size(), 2u);
  EXPECT_EQ(cfg.cases[0].name, "decode#0");
  EXPECT_EQ(cfg.cases[1].name, "mtp#1");
  EXPECT_EQ(cfg.cases[0].shapes.at(0).layout, Layout::vk);
  EXPECT_EQ(cfg.cases[0].shapes.at(0).batch, 1);
  EXPECT_EQ(cfg.cases[1].shapes.at(0).layout, Layout::vk);
  EXPECT_EQ(cfg.cases[1].shapes.at(0).tokens, 4);
}

TEST(Config, CartesianProductInFixedAxisOrder) {
  // Keys written in an arbitrary order: the expansion order is the documented axis order
  // (state_dtype, layout, ..., batch last and fastest), not the file order.
  const std::string a = "cases:\n  - op: decode\n    batch: [1, 2, 3]\n    layout: [vk, kv]\n    state_dtype: [f32, bf16]\n";
  const std::string b = "cases:\n  - op: decode\n    state_dtype: [f32, bf16]\n    batch: [1, 2, 3]\n    layout: [vk, kv]\n";
  auto cfg = yaml(a);
  EXPECT_EQ(render(cfg), render(yaml(b)));
  const auto& s = cfg.cases.at(0).shapes;
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(cfg.total_points(), 12u);
  auto at = [&](size_t i) { return std::tuple(s[i].state_dtype, s[i].layout, s[i].batch); };
  EXPECT_EQ(at(0), std::tuple(DType::f32, Layout::vk, int64_t(1)));
  EXPECT_EQ(at(1), std::tuple(DType::f32, Layout::vk, int64_t(2)));
  EXPECT_EQ(at(2), std::tuple(DType::f32, Layout::vk, int64_t(3)));
  EXPECT_EQ(at(3), std::tuple(DType::f32, Layout::kv, int64_t(1)));
  EXPECT_EQ(at(6), std::tuple(DType::bf16, Layout::vk, int64_t(1)));
  EXPECT_EQ(at(11), std::tuple(DType::bf16, Layout::kv, int64_t(3)));
}

TEST(Config, CaseKeysListAxesInExpansionOrder) {
  const auto& keys = case_keys();
  auto pos = [&](const std::string& k) { return std::find(keys.begin(), keys.end(), k) - keys.begin(); };
  for (const char* k : {"name", "op", "variant", "heads", "head_dim", "seqlens", "h0", "batch", "tokens", "state_dtype",
                        "layout", "gate", "l2norm", "inputs", "input_dtype", "scale", "pool", "indices", "index_dtype",
                        "cache_intermediate", "update_state", "rollback", "seed", "threshold", "verify_heads"})
    EXPECT_LT(size_t(pos(k)), keys.size()) << k;
  EXPECT_LT(pos("state_dtype"), pos("layout"));
  EXPECT_LT(pos("heads"), pos("seqlens"));
  EXPECT_LT(pos("tokens"), pos("batch"));
  EXPECT_LT(pos("batch"), pos("plan"));
  EXPECT_EQ(keys.back(), "plan");  // the plans of one shape run one after another
}

TEST(Config, HeadsForms) {
  auto heads = [](const std::string& value) {
    std::vector<std::pair<int, int>> out;
    auto cfg = yaml("cases:\n  - op: decode\n    heads: " + value + "\n");
    for (const auto& s : cfg.cases.at(0).shapes) out.emplace_back(s.h_qk, s.h_v);
    return out;
  };
  using P = std::vector<std::pair<int, int>>;
  EXPECT_EQ(heads("[16, 32]"), (P{{16, 32}}));  // one pair, not two values
  EXPECT_EQ(heads("16/32"), (P{{16, 32}}));
  EXPECT_EQ(heads("\"8/16\""), (P{{8, 16}}));
  EXPECT_EQ(heads("[[16, 32], [8, 16]]"), (P{{16, 32}, {8, 16}}));
  EXPECT_EQ(heads("[\"16/32\", \"4/8\", [2, 8]]"), (P{{16, 32}, {4, 8}, {2, 8}}));
}

TEST(Config, SeqlensForms) {
  auto sets = [](const std::string& value) {
    std::vector<std::vector<int64_t>> out;
    auto cfg = yaml("cases:\n  - op: prefill\n    seqlens: " + value + "\n");
    for (const auto& s : cfg.cases.at(0).shapes) out.push_back(s.seqlens);
    return out;
  };
  using S = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(sets("1x32768"), (S{{32768}}));
  EXPECT_EQ(sets("\"8192x4\""), (S{{8192, 8192, 8192, 8192}}));
  EXPECT_EQ(sets("4x8192"), (S{{8192, 8192, 8192, 8192}}));
  EXPECT_EQ(sets("28672+4096"), (S{{28672, 4096}}));
  EXPECT_EQ(sets("100"), (S{{100}}));
  EXPECT_EQ(sets("[100, 200]"), (S{{100}, {200}}));  // a list of two one-sequence sets
  EXPECT_EQ(sets("[[100, 200, 37]]"), (S{{100, 200, 37}}));  // explicit lengths are nested
  EXPECT_EQ(sets("[\"1x64\", 5, [1, 2]]"), (S{{64}, {5}, {1, 2}}));
  // Empty sequences (repeated cu_seqlens entries) beside others, in both explicit forms.
  EXPECT_EQ(sets("0+40+0+70+0"), (S{{0, 40, 0, 70, 0}}));
  EXPECT_EQ(sets("[[0, 5, 0]]"), (S{{0, 5, 0}}));
}

TEST(Config, ScalarAxesAndCaseScalars) {
  auto cfg = yaml(
      "cases:\n"
      "  - op: mtp\n"
      "    name: spec\n"
      "    variant: \"mtp/*\"\n"
      "    seed: 0\n"
      "    threshold: 2.5\n"
      "    verify_heads: 4\n"
      "    tokens: 3\n"
      "    batch: 2\n"
      "    heads: 4/8\n"
      "    head_dim: 64\n"
      "    gate: raw\n"
      "    l2norm: false\n"
      "    inputs: positive_keys\n"
      "    input_dtype: f16\n"
      "    scale: 0.125\n"
      "    state_dtype: bf16\n"
      "    layout: kv\n"
      "    indices: high\n"
      "    index_dtype: i32\n"
      "    pool: 64\n"
      "    cache_intermediate: true\n"
      "    update_state: false\n");
  const auto& c = cfg.cases.at(0);
  EXPECT_EQ(c.name, "spec");
  EXPECT_EQ(c.variant_glob, "mtp/*");
  EXPECT_EQ(c.seed, 0u);
  EXPECT_DOUBLE_EQ(c.threshold_pct.value(), 2.5);
  EXPECT_EQ(c.verify_heads.value(), 4);
  ASSERT_EQ(c.shapes.size(), 1u);
  const Shape& s = c.shapes[0];
  EXPECT_EQ(s.op, OpKind::mtp);
  EXPECT_EQ(s.tokens, 3);
  EXPECT_EQ(s.batch, 2);
  EXPECT_EQ(s.h_qk, 4);
  EXPECT_EQ(s.h_v, 8);
  EXPECT_EQ(s.dk, 64);
  EXPECT_EQ(s.dv, 64);
  EXPECT_EQ(s.gate, GateForm::raw);
  EXPECT_FALSE(s.l2norm);
  EXPECT_EQ(s.inputs, InputDist::positive_keys);
  EXPECT_EQ(s.input_dtype, DType::f16);
  EXPECT_DOUBLE_EQ(s.scale, 0.125);
  EXPECT_EQ(s.state_dtype, DType::bf16);
  EXPECT_EQ(s.layout, Layout::kv);
  EXPECT_EQ(s.indices, IndexPattern::high);
  EXPECT_EQ(s.index_dtype, DType::i32);
  EXPECT_EQ(s.pool, 64);
  EXPECT_TRUE(s.cache_intermediate);
  EXPECT_FALSE(s.update_state);
}

TEST(Config, PoolAsSlotsOrPerRowFactor) {
  auto cfg = yaml("cases:\n  - op: decode\n    pool: [\"4x\", 16]\n    batch: [2, 8]\n");
  const auto& s = cfg.cases.at(0).shapes;
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].pool_slots(), 8);   // 4x, batch 2
  EXPECT_EQ(s[1].pool_slots(), 32);  // 4x, batch 8
  EXPECT_EQ(s[2].pool_slots(), 16);
  EXPECT_EQ(s[3].pool_slots(), 16);
  EXPECT_EQ(yaml("cases:\n  - op: decode\n    batch: 5\n").cases[0].shapes[0].pool_slots(), 5);  // default = batch
  // prefill: "Nx" counts sequences and selects the pool form; without pool the point is dense and
  // the pool axes are reset.
  auto pf = yaml(
      "defaults:\n  state_dtype: bf16\n  seqlens: 100+37+5\n"
      "cases:\n  - op: prefill\n    pool: \"2x\"\n  - op: prefill\n");
  const auto& pooled = pf.cases.at(0).shapes.at(0);
  EXPECT_TRUE(pooled.prefill_pool());
  EXPECT_EQ(pooled.pool_slots(), 6);
  EXPECT_EQ(pooled.state_dtype, DType::bf16);
  const auto& dense = pf.cases.at(1).shapes.at(0);
  EXPECT_FALSE(dense.prefill_pool());
  EXPECT_EQ(dense.state_dtype, DType::f32);
  EXPECT_EQ(dense.key(), "h16/32 d128x128 seq=100+37+5 layout=kv gate=log");
}

TEST(Config, DefaultsOverlayAndPerOpIgnoreRule) {
  auto cfg = yaml(
      "defaults:\n"
      "  heads: 8/16\n"
      "  batch: 8\n"         // ignored by the prefill case
      "  tokens: 4\n"        // used by mtp only
      "  seqlens: 1x64\n"    // ignored by decode and mtp
      "  h0: false\n"
      "  seed: 5\n"
      "  variant: \"*alpha*\"\n"
      "cases:\n"
      "  - op: prefill\n"
      "  - op: decode\n"
      "    heads: 16/32\n"
      "    seed: 9\n"
      "  - op: mtp\n");
  ASSERT_EQ(cfg.cases.size(), 3u);
  const auto& p = cfg.cases[0].shapes.at(0);
  EXPECT_EQ(p.h_v, 16);
  EXPECT_FALSE(p.has_h0);
  EXPECT_EQ(p.seqlens, std::vector<int64_t>{64});
  EXPECT_EQ(p.batch, 1);  // batch from defaults does not reach prefill
  EXPECT_EQ(cfg.cases[0].seed, 5u);
  EXPECT_EQ(cfg.cases[0].variant_glob, "*alpha*");
  const auto& d = cfg.cases[1].shapes.at(0);
  EXPECT_EQ(d.h_v, 32);  // the case overrides defaults
  EXPECT_EQ(d.batch, 8);
  EXPECT_TRUE(d.seqlens.empty());
  EXPECT_EQ(cfg.cases[1].seed, 9u);
  const auto& m = cfg.cases[2].shapes.at(0);
  EXPECT_EQ(m.tokens, 4);
  EXPECT_EQ(m.batch, 8);
  EXPECT_EQ(cfg.cases[2].seed, 5u);
}

TEST(Config, YamlAndJsonExpandIdentically) {
  const std::string y =
      "description: twin\n"
      "defaults:\n  seed: 3\n  heads: [[16, 32], \"8/16\"]\n"
      "cases:\n"
      "  - op: prefill\n    name: p\n    seqlens: [\"1x128\", [100, 37], 64]\n    h0: [true, false]\n    scale: 0.5\n"
      "  - op: decode\n    batch: [1, 4]\n    state_dtype: [f32, bf16]\n    pool: \"2x\"\n    threshold: 3\n"
      "  - op: mtp\n    tokens: [2, 8]\n    cache_intermediate: [false, true]\n    verify_heads: 2\n";
  const std::string j = R"({
  "description": "twin",
  "defaults": {"seed": 3, "heads": [[16, 32], "8/16"]},
  "cases": [
    {"op": "prefill", "name": "p", "seqlens": ["1x128", [100, 37], 64], "h0": [true, false], "scale": 0.5},
    {"op": "decode", "batch": [1, 4], "state_dtype": ["f32", "bf16"], "pool": "2x", "threshold": 3},
    {"op": "mtp", "tokens": [2, 8], "cache_intermediate": [false, true], "verify_heads": 2}
  ]
})";
  auto a = parse_config(y, "twin.yaml");
  auto b = parse_config(j, "twin.json");
  EXPECT_EQ(a.total_points(), 2u * 3 * 2 + 2 * 2 * 2 + 2 * 2 * 2);
  EXPECT_EQ(render(a), render(b));
  EXPECT_NE(a.hash, b.hash);
}

TEST(Config, FormatIsSniffedWithoutAKnownExtension) {
  auto j = parse_config("  {\"cases\": [{\"op\": \"decode\"}]}", "stdin");
  auto y = parse_config("cases: [{op: decode}]", "stdin");
  EXPECT_EQ(render(j), render(y));
  EXPECT_TRUE(rejects("{\"cases\": [{\"op\": \"decode\",}]}", "sniffed.txt", 1, "", "JSON syntax error"));
}

TEST(Config, HashIsFnv1aOfTheBytes) {
  const std::string text = "cases: [{op: decode}]\n";
  auto cfg = yaml(text);
  EXPECT_EQ(cfg.hash, fmt::format("{:016x}", fnv1a(text)));
  EXPECT_EQ(cfg.hash.size(), 16u);
  EXPECT_NE(yaml(text + "# comment\n").hash, cfg.hash);
}

TEST(Config, VariantGlobs) {
  EXPECT_EQ(yaml("cases: [{op: prefill, seqlens: 1x8, variant: \"prefill/cfgtest_*\"}]").cases[0].variant_glob,
            "prefill/cfgtest_*");
  EXPECT_NO_THROW(yaml("cases: [{op: decode, variant: \"cfgtest_alph?\"}]"));  // no '/': matched against the stem
  // Test-only variants answer to their exact name only.
  EXPECT_NO_THROW(yaml("cases: [{op: prefill, seqlens: 1x8, variant: prefill/cfgtest_hidden}]"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: 1x8\n    variant: \"*hidden*\"\n", 4, "cases[0].variant",
                           "matches no prefill variant"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: 1x8\n    variant: \"decode/*\"\n", 4, "cases[0].variant",
                           "prefill/cfgtest_alpha"));
  // A glob from defaults is checked against each case's op, and blamed on defaults.
  EXPECT_TRUE(rejects_yaml("defaults:\n  variant: \"mtp/*\"\ncases:\n  - op: decode\n", 2, "defaults.variant",
                           "(got mtp/*)"));
}

TEST(Config, ShippedConfigsLoadAndExpand) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(GDN_SOURCE_DIR) / "configs";
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    auto ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".yml" && ext != ".json")) continue;
    SCOPED_TRACE(entry.path().string());
    SweepConfig cfg;
    ASSERT_NO_THROW(cfg = load_config(entry.path().string())) << entry.path();
    EXPECT_GT(cfg.total_points(), 0u);
    EXPECT_EQ(cfg.path, entry.path().string());
    ++loaded;
  }
  EXPECT_GE(loaded, 7);
  EXPECT_EQ(load_config((dir / "qwen35-prefill.yaml").string()).total_points(), 171u);
  auto def = load_config((dir / "default.yaml").string()).total_points();
  EXPECT_GE(def, 20u);
  EXPECT_LE(def, 30u);
  auto ci_yaml = load_config((dir / "ci.yaml").string());
  auto ci_json = load_config((dir / "ci.json").string());
  EXPECT_EQ(render(ci_yaml), render(ci_json));
}

TEST(Config, LoadConfigReadsFilesAndNamesMissingOnes) {
  const std::string path = ::testing::TempDir() + "gdn_config_test.yml";
  const std::string text = "cases:\n  - op: decode\n    batch: [1, 2]\n";
  { std::ofstream(path, std::ios::binary) << text; }
  auto cfg = load_config(path);
  EXPECT_EQ(cfg.total_points(), 2u);
  EXPECT_EQ(cfg.hash, parse_config(text, "other").hash);
  std::filesystem::remove(path);

  try {
    load_config(path);
    FAIL() << "a missing file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// ---- bad input -----------------------------------------------------------------------------------

TEST(ConfigErrors, SyntaxErrorsGiveFileAndLine) {
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: [1, 2\n", 4, "", "YAML syntax error"));
  EXPECT_TRUE(rejects("{\n  \"cases\": [\n    {\"op\": \"prefill\",}\n  ]\n}\n", "bad.json", 3, "", "JSON syntax error"));
  EXPECT_TRUE(rejects("{\n  \"cases\": [\n    {\"op\": \"decode\"}\n  ]\n\n", "bad.json", 6, "", "JSON syntax error"));
  EXPECT_TRUE(rejects("", "empty.yaml", 1, "", "empty"));
}

TEST(ConfigErrors, JsonValuesCarryTheirLines) {
  const std::string j = "{\n  \"cases\": [\n    {\n      \"op\": \"decode\",\n      \"heads\": [[16, 32],\n                [16, 24]]\n    }\n  ]\n}\n";
  EXPECT_TRUE(rejects(j, "lines.json", 6, "cases[0].heads[1]", "h_v % h_qk must be 0 (got 16/24)"));
  EXPECT_TRUE(rejects("{\"cases\": [{\"op\": \"decode\",\n\n  \"bach\": 3}]}", "lines.json", 3, "cases[0].bach",
                      "unknown key"));
  EXPECT_TRUE(rejects("{\"cases\": [{\"op\": \"decode\",\n  \"batch\": 3\n\n}, {\"op\": \"decode\", \"batch\":\n -1}]}",
                      "lines.json", 5, "cases[1].batch", "must be >= 1 (got -1)"));
}

TEST(ConfigErrors, UnknownKeysListTheValidOnes) {
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\nsweep: 1\n", 3, "sweep", "valid keys: description, defaults, cases"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    bach: 8\n", 3, "cases[0].bach", "valid keys: name, op"));
  EXPECT_TRUE(rejects_yaml("defaults:\n  heeds: 16/32\ncases:\n  - op: decode\n", 2, "defaults.heeds", "batch"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    batch: 1\n    batch: 2\n", 4, "cases[0].batch", "duplicate key"));
}

TEST(ConfigErrors, StructureProblems) {
  EXPECT_TRUE(rejects_yaml("- op: decode\n", 1, "", "top level must be a map"));
  EXPECT_TRUE(rejects_yaml("description: x\n", 1, "", "missing key cases"));
  EXPECT_TRUE(rejects_yaml("cases: []\n", 1, "cases", "at least one case"));
  EXPECT_TRUE(rejects_yaml("cases:\n  op: decode\n", 2, "cases", "expected a list of cases"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - decode\n", 2, "cases[0]", "must be a map"));
  EXPECT_TRUE(rejects_yaml("defaults: [1]\ncases:\n  - op: decode\n", 1, "defaults", "expected a map"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - batch: 1\n", 2, "cases[0]", "missing key op"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n", 2, "cases[0]", "prefill needs seqlens"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: mtp\n", 2, "cases[0]", "mtp needs tokens"));
}

TEST(ConfigErrors, WrongTypes) {
  const std::string d = "cases:\n  - op: decode\n";
  EXPECT_TRUE(rejects_yaml(d + "    batch: eight\n", 3, "cases[0].batch", "expected an integer (got eight)"));
  EXPECT_TRUE(rejects_yaml(d + "    batch: \"8\"\n", 3, "cases[0].batch", "expected an integer"));  // quoted = string
  EXPECT_TRUE(rejects_yaml(d + "    batch: 8.0\n", 3, "cases[0].batch", "expected an integer"));
  EXPECT_TRUE(rejects_yaml(d + "    batch:\n", 3, "cases[0].batch", "(got null)"));
  EXPECT_TRUE(rejects_yaml(d + "    batch: [1, [2]]\n", 3, "cases[0].batch[1]", "not a list"));
  EXPECT_TRUE(rejects_yaml(d + "    l2norm: 1\n", 3, "cases[0].l2norm", "expected true or false"));
  EXPECT_TRUE(rejects_yaml(d + "    scale: big\n", 3, "cases[0].scale", "expected a number"));
  EXPECT_TRUE(rejects_yaml(d + "    heads: {q: 16}\n", 3, "cases[0].heads", "not a map"));
  EXPECT_TRUE(rejects_yaml(d + "    heads: 16\n", 3, "cases[0].heads", "heads pair"));
  EXPECT_TRUE(rejects_yaml(d + "    heads: [16, 32, 64]\n", 3, "cases[0].heads[0]", "heads pair"));
  EXPECT_TRUE(rejects_yaml(d + "    seed: [1, 2]\n", 3, "cases[0].seed", "single value"));
  EXPECT_TRUE(rejects_yaml(d + "    seed: -1\n", 3, "cases[0].seed", "must be >= 0"));
  EXPECT_TRUE(rejects_yaml(d + "    threshold: 0\n", 3, "cases[0].threshold", "must be > 0"));
  EXPECT_TRUE(rejects_yaml(d + "    verify_heads: all\n", 3, "cases[0].verify_heads", "expected an integer"));
  EXPECT_TRUE(rejects_yaml(d + "    layout: kvv\n", 3, "cases[0].layout", "must be one of vk, kv (got kvv)"));
  EXPECT_TRUE(rejects_yaml(d + "    state_dtype: f16\n", 3, "cases[0].state_dtype", "must be one of f32, bf16"));
  EXPECT_TRUE(rejects_yaml(d + "    index_dtype: i16\n", 3, "cases[0].index_dtype", "must be one of i64, i32"));
  EXPECT_TRUE(rejects_yaml(d + "    inputs: [standard, gaussian]\n", 3, "cases[0].inputs[1]", "strong_decay"));
  EXPECT_TRUE(rejects_yaml(d + "    pool: 4y\n", 3, "cases[0].pool", "\"Nx\""));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: 1.5\n", 3, "cases[0].seqlens", "sequence set"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: 1x8\n    h0: yes please\n", 4, "cases[0].h0",
                           "true or false"));
}

TEST(ConfigErrors, ImpossibleValues) {
  const std::string d = "cases:\n  - op: decode\n";
  EXPECT_TRUE(rejects_yaml(d + "    heads: [[16, 32], [16, 24]]\n", 3, "cases[0].heads[1]",
                           "h_v % h_qk must be 0 (got 16/24)"));
  EXPECT_TRUE(rejects_yaml(d + "    heads: 0/8\n", 3, "cases[0].heads", ">= 1"));
  EXPECT_TRUE(rejects_yaml(d + "    heads: [0, 8]\n", 3, "cases[0].heads[0]", "must be >= 1 (got 0)"));
  EXPECT_TRUE(rejects_yaml(d + "    batch: -4\n", 3, "cases[0].batch", "must be >= 1 (got -4)"));
  EXPECT_TRUE(rejects_yaml(d + "    batch: []\n", 3, "cases[0].batch", "empty list"));
  EXPECT_TRUE(rejects_yaml(d + "    head_dim: 0\n", 3, "cases[0].head_dim", "must be >= 1"));
  EXPECT_TRUE(rejects_yaml(d + "    batch: 99999999999999999999\n", 3, "cases[0].batch", "out of range"));
  EXPECT_TRUE(rejects_yaml(d + "    scale: -1\n", 3, "cases[0].scale", "must be >= 0"));
  EXPECT_TRUE(rejects_yaml(d + "    pool: 4\n    batch: [2, 8]\n", 3, "cases[0].pool", "4 slots < batch 8"));
  EXPECT_TRUE(rejects_yaml(d + "    pool: 0x\n", 3, "cases[0].pool", ">= 1"));
  const std::string p = "cases:\n  - op: prefill\n";
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: [[100, -1]]\n", 3, "cases[0].seqlens[0][1]", "must be >= 0 (got -1)"));
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: [[0, 0]]\n", 3, "cases[0].seqlens[0]", "at least one token"));
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: [\"0+0\"]\n", 3, "cases[0].seqlens[0]", "at least one token"));
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: [\"0x8\"]\n", 3, "cases[0].seqlens[0]", "counts and lengths must be >= 1"));
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: 0\n", 3, "cases[0].seqlens", "must be >= 1"));
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: [[]]\n", 3, "cases[0].seqlens[0]", "empty list"));
  EXPECT_TRUE(rejects_yaml(p + "    seqlens: 12x\n", 3, "cases[0].seqlens", "empty number"));
  const std::string m = "cases:\n  - op: mtp\n";
  EXPECT_TRUE(rejects_yaml(m + "    tokens: [2, 65]\n", 3, "cases[0].tokens[1]", "must be <= 64 (got 65)"));
  EXPECT_TRUE(rejects_yaml(m + "    tokens: 1\n", 3, "cases[0].tokens", "must be >= 2"));
}

TEST(ConfigErrors, UnknownOpAndKeysOfOtherOps) {
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: attention\n", 2, "cases[0].op",
                           "must be one of prefill, decode, mtp (got attention)"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: 1x8\n    batch: 4\n", 4, "cases[0].batch",
                           "does not apply to op prefill"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    tokens: 4\n", 3, "cases[0].tokens", "does not apply to op decode"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    h0: false\n", 3, "cases[0].h0", "keys for decode:"));
  // Bad values in defaults are rejected even when no case uses them.
  EXPECT_TRUE(rejects_yaml("defaults:\n  batch: 0\ncases:\n  - op: prefill\n    seqlens: 1x8\n", 2, "defaults.batch",
                           "must be >= 1"));
}

TEST(ConfigErrors, SizesThatOverflow) {
  // q of 2^60 rows x 16 x 128 elements: more than int64 can count.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    batch: 1152921504606846976\n", 2, "cases[0]",
                           "tensor q [1152921504606846976, 16, 128] has more elements than int64 can count"));
  // 2^28 slots x 2^19 fp32 elements = 2^49 bytes: countable, but over the 2^48-byte limit.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    batch: 268435456\n", 2, "cases[0]", "2^48-byte limit"));
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    batch: 1099511627776\n    pool: 999999999999x\n", 4,
                           "cases[0].pool", "overflows int64"));
  // A prefill whose explicit lengths sum past int64.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    seqlens: [[9223372036854775807, 1]]\n", 3, "cases[0].seqlens[0]",
                           "overflow int64"));
}

TEST(ConfigErrors, TheOpsOwnValidation) {
  // head_dim 2048 parses, but the op contract allows 1..1024.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n  - op: decode\n    head_dim: [128, 2048]\n", 3, "cases[1]",
                           "head dims must be in 1..1024"));
  // Prefill totals must fit int32 cu_seqlens.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: prefill\n    heads: 1/1\n    head_dim: 1\n    seqlens: 2x2147483647\n", 2,
                           "cases[0]", "overflow int32"));
}

TEST(ConfigErrors, TooManyPoints) {
  std::string batches;
  for (int b = 1; b <= 1001; ++b) batches += (b > 1 ? ", " : "") + std::to_string(b);
  const std::string text = "cases:\n  - op: decode\n    inputs: [standard, strong_decay, no_decay, beta_one, positive_keys]\n"
                           "    gate: [log, raw]\n    l2norm: [true, false]\n    state_dtype: [f32, bf16]\n"
                           "    layout: [vk, kv]\n    indices: [identity, random, padded, high]\n"
                           "    index_dtype: [i64, i32]\n    head_dim: [64, 128]\n    batch: [" +
                           batches + "]\n";
  EXPECT_TRUE(rejects_yaml(text, 2, "cases[0]", "more than 100000 points"));
}

// ---- the plan axis (docs/plans.md) -------------------------------------------------------------------

TEST(ConfigPlans, SpecsAreNormalisedAndTurnFastest) {
  auto cfg = yaml("cases:\n  - op: decode\n    variant: cfgtest_knobs\n    batch: [1, 2]\n"
                  "    plan: [default, \" tile = 2 , mode=fast \", \"\"]\n");
  const auto& s = cfg.cases.at(0).shapes;
  ASSERT_EQ(s.size(), 6u);
  std::vector<std::pair<int64_t, std::string>> got;
  for (const auto& x : s) got.emplace_back(x.batch, x.plan);
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, std::string>>{
                     {1, ""}, {1, "tile=2,mode=fast"}, {1, ""}, {2, ""}, {2, "tile=2,mode=fast"}, {2, ""}}));
  // The default plan keeps the key it always had; another plan adds one part, last.
  EXPECT_EQ(s[1].key(), s[0].key() + " plan=tile=2,mode=fast");
  EXPECT_EQ(s[0].key().find("plan"), std::string::npos);
  // One value, from defaults, JSON: the same rules.
  EXPECT_EQ(yaml("defaults:\n  plan: mode=safe\ncases:\n  - op: decode\n    variant: cfgtest_knobs\n")
                .cases[0].shapes.at(0).plan, "mode=safe");
  EXPECT_EQ(parse_config(R"({"cases": [{"op": "decode", "variant": "cfgtest_knobs", "plan": ["tile=1"]}]})", "t.json")
                .cases[0].shapes.at(0).plan, "tile=1");
}

TEST(ConfigPlans, VariantsWithoutKnobsMayShareTheCase) {
  // decode/fast declares knobs, decode/cpu does not: the load accepts the plan (decode/cpu
  // skips those points when the sweep runs).
  auto cfg = yaml("cases:\n  - op: decode\n    variant: \"*\"\n    plan: [default, \"kernel=mma, form=bf16\"]\n");
  EXPECT_EQ(cfg.cases.at(0).shapes.at(1).plan, "kernel=mma,form=bf16");
}

TEST(ConfigErrors, BadPlansNameFileLineKeyAndValue) {
  const std::string head = "cases:\n  - op: decode\n    variant: cfgtest_knobs\n";
  // Malformed specs, whatever the variants.
  EXPECT_TRUE(rejects_yaml(head + "    plan: tile\n", 4, "cases[0].plan", "'tile' is not knob=value (got tile)"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: \"tile=1,tile=2\"\n", 4, "cases[0].plan", "knob 'tile' is set twice"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: \"tile=1,\"\n", 4, "cases[0].plan", "empty knob=value pair"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: \"tile=1;mode=fast\"\n", 4, "cases[0].plan", "letters, digits"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: {tile: 1}\n", 4, "cases[0].plan", "not a map"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: []\n", 4, "cases[0].plan", "empty list"));
  // Specs the matched variant does not take: an unknown knob, a value, the family's own rule.
  EXPECT_TRUE(rejects_yaml(head + "    plan:\n      - default\n      - colour=red\n", 6, "cases[0].plan[1]",
                           "decode/cfgtest_knobs does not take this plan: unknown knob 'colour' (knobs: tile, mode)"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: tile=3\n", 4, "cases[0].plan", "knob tile takes 1, 2, 4, not '3'"));
  EXPECT_TRUE(rejects_yaml(head + "    plan: \"tile=4,mode=safe\"\n", 4, "cases[0].plan", "tile 4 has no safe build"));
  // No matched variant declares knobs: the plan could never run.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: decode\n    variant: cfgtest_alpha\n    plan: tile=2\n", 4, "cases[0].plan",
                           "no matched variant takes a plan (variant 'cfgtest_alpha'; decode variants with knobs:"));
  // From defaults: blamed on defaults, checked against each case's variants.
  EXPECT_TRUE(rejects_yaml("defaults:\n  plan: kernel=mma\ncases:\n  - op: decode\n    variant: cfgtest_knobs\n", 2,
                           "defaults.plan", "unknown knob 'kernel'"));
  // Shipped variants: a knob value the step family does not have.
  EXPECT_TRUE(rejects_yaml("cases:\n  - op: mtp\n    tokens: 4\n    variant: mtp/fast\n    plan: depth=3\n", 5,
                           "cases[0].plan", "mtp/fast does not take this plan: knob depth takes 1, 2, 4"));
}

}  // namespace
}  // namespace gdn
