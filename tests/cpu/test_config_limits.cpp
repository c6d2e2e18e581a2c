// The config reader's hard limits (src/config/config_limits.h, docs/config.md "Limits"): alias bombs,
// deep nesting, huge files, values and node counts stop the read with FILE:LINE and exit 3.
// tests/cpu/test_config_bombs.cpp runs the same inputs through the binary under a memory cap.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <string>

#include "config/config.h"
#include "config/config_limits.h"
#include "config/config_tree.h"
#include "core/errors.h"

namespace gdn {
namespace {

// Expects input_error (exit 3) starting with "FILE:LINE: " and containing `fragment`.
::testing::AssertionResult rejects_tree(const std::string& text, const std::string& file, int line,
                                        const std::string& fragment) {
  try {
    parse_config_tree(text, file);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (e.code() != kExitBadInput) return ::testing::AssertionFailure() << "exit code " << e.code() << ": " << msg;
    const std::string where = file + ":" + std::to_string(line) + ": ";
    if (msg.rfind(where, 0) != 0) return ::testing::AssertionFailure() << "expected prefix '" << where << "' in: " << msg;
    if (msg.find(fragment) == std::string::npos)
      return ::testing::AssertionFailure() << "expected '" << fragment << "' in: " << msg.substr(0, 300);
    if (msg.size() > 400) return ::testing::AssertionFailure() << "message of " << msg.size() << " bytes";
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "accepted";
}

// Ten lines that YAML::Load would expand into 9^9 (387 million) scalars.
std::string billion_laughs() {
  std::string text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const char prev = char(c - 1);
    text += fmt::format("{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n", c, prev);
  }
  return text + "cases: *i\n";
}

std::string nested_flow(std::size_t depth, const std::string& open, const std::string& close) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += open;
  for (std::size_t i = 0; i < depth; ++i) text += close;
  return text;
}

TEST(ConfigLimits, AliasBombStopsAtTheFirstAnchor) {
  EXPECT_TRUE(rejects_tree(billion_laughs(), "laughs.yaml", 1, "YAML anchors and aliases are not supported (got &a)"));
}

TEST(ConfigLimits, EveryAnchorAndMergeKeyIsRefusedWhereItIsWritten) {
  const std::string merge =
      "defaults: &d\n"
      "  heads: 16/32\n"
      "cases:\n"
      "  - <<: *d\n"
      "    op: decode\n";
  EXPECT_TRUE(rejects_tree(merge, "merge.yaml", 1, "(got &d)"));
  EXPECT_TRUE(rejects_tree("cases:\n  - op: decode\n    batch: &b 8\n", "scalar.yaml", 3, "(got &b)"));
  // An alias with no anchor is a syntax error before it could be anything else.
  EXPECT_TRUE(rejects_tree("cases:\n  - op: decode\n    batch: *b\n", "alias.yaml", 3, "YAML syntax error"));
  // A long anchor name is shortened in the message.
  EXPECT_TRUE(rejects_tree("x: &" + std::string(5000, 'n') + " 1\n", "long.yaml", 1, "nnn..."));
}

TEST(ConfigLimits, NestingIsCappedInBothFormats) {
  const std::size_t deep = kMaxConfigDepth + 1;
  EXPECT_NO_THROW(parse_config_tree(nested_flow(kMaxConfigDepth, "[", "]"), "ok.yaml"));
  EXPECT_NO_THROW(parse_config_tree(nested_flow(kMaxConfigDepth, "[", "]"), "ok.json"));
  EXPECT_TRUE(rejects_tree(nested_flow(deep, "[", "]"), "deep.yaml", 1, "nesting deeper than 64 levels"));
  EXPECT_TRUE(rejects_tree(nested_flow(deep, "[", "]"), "deep.json", 1, "nesting deeper than 64 levels"));
  EXPECT_TRUE(rejects_tree(nested_flow(100000, "{\"a\":", "}"), "deep_map.json", 1, "nesting deeper than 64 levels"));

  // Block style: key k<i> sits on line i + 1, in the map at depth i; key k63 is the first node
  // below 64 levels.
  std::string block;
  for (std::size_t i = 0; i < 200; ++i) block += std::string(2 * i, ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_TRUE(rejects_tree(block, "deep_block.yaml", 64, "nesting deeper than 64 levels"));
}

TEST(ConfigLimits, HugeValuesAreRefused) {
  const std::string big(kMaxScalarBytes + 1, 'x');
  EXPECT_NO_THROW(parse_config_tree("description: " + std::string(kMaxScalarBytes, 'x') + "\n", "ok.yaml"));
  EXPECT_TRUE(rejects_tree("cases: []\ndescription: " + big + "\n", "plain.yaml", 2, "more than the 64 KiB limit"));
  EXPECT_TRUE(rejects_tree("cases: []\ndescription: \"" + big + "\"\n", "quoted.yaml", 2, "more than the 64 KiB limit"));
  EXPECT_TRUE(rejects_tree("{\"cases\": [],\n\"description\": \"" + big + "\"}", "value.json", 2, "more than the 64 KiB limit"));
  EXPECT_TRUE(rejects_tree("{\"cases\": [],\n\"" + big + "\": 1}", "key.json", 2, "more than the 64 KiB limit"));
}

TEST(ConfigLimits, NodeCountIsCapped) {
  std::string items;
  for (std::size_t i = 0; i < kMaxConfigNodes; ++i) items += "1,";
  EXPECT_TRUE(rejects_tree("description: x\ncases: [" + items + "1]\n", "many.yaml", 2, "more than 100000 keys, values, lists and maps"));
  EXPECT_TRUE(rejects_tree("{\"cases\":\n[" + items + "1]}", "many.json", 2, "more than 100000 keys, values, lists and maps"));
}

// yaml-cpp keeps every token of a flow collection that could still be a mapping key, and emits no
// event meanwhile: without the lookahead bound these take 150-250 MB for 1 MiB of text.
TEST(ConfigLimits, FlowCollectionsThatMightBeKeysCannotQueueTheWholeFile) {
  const std::string brackets(kMaxConfigBytes - 16, '[');
  EXPECT_TRUE(rejects_tree(brackets, "brackets.yaml", 1, "without a complete value"));
  // A single-line flow list on a line of its own may be a key too: past 128 KiB it is refused.
  EXPECT_TRUE(rejects_tree("cases:\n  [" + std::string(3 * kMaxScalarBytes, '1') + "]\n", "line.yaml", 1,
                           "without a complete value"));
  std::string inner = "[[";
  while (inner.size() < 3 * kMaxScalarBytes) inner += "a,";
  EXPECT_TRUE(rejects_tree("description: ok\ncases:\n  " + inner + "]]\n", "key.yaml", 2, "without a complete value"));
}

TEST(ConfigLimits, HugeTextNamesTheLineWhereTheLimitIsCrossed) {
  std::string text = "cases:\n";
  while (text.size() <= kMaxConfigBytes) text += "  - op: decode\n";
  const int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(kMaxConfigBytes), '\n'));
  EXPECT_TRUE(rejects_tree(text, "huge.yaml", line, "larger than the 1 MiB limit"));
  EXPECT_TRUE(rejects_tree(text, "huge.json", line, "larger than the 1 MiB limit"));
}

TEST(ConfigLimits, ReadingAnEndlessFileIsRefusedUnread) {
  try {
    read_config_file("/dev/zero");
    FAIL() << "accepted /dev/zero";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("'/dev/zero': it is a character device"), std::string::npos) << e.what();
  }
}

// The schema sees the same tree as before: shipped configs still load.
TEST(ConfigLimits, ShippedConfigsAreFarInsideTheLimits) {
  for (const char* name : {"default.yaml", "ci.yaml", "ci.json", "decode.yaml", "mtp.yaml", "qwen35-prefill.yaml",
                           "legacy-sm75.yaml"}) {
    const std::string path = std::string(GDN_SOURCE_DIR) + "/configs/" + name;
    EXPECT_NO_THROW(load_config(path)) << path;
  }
}

}  // namespace
}  // namespace gdn
