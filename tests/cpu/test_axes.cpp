// The axis table (src/core/axes.h): the shape key it builds (the identity compare matches on),
// the JSON round trip of every axis, the config keys and their order, the per-op defaults, and the
// peer harness's copy of the fields and defaults (scripts/peers/peerlib/shapes.py) checked against it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.h"
#include "core/axes.h"
#include "core/op.h"

namespace gdn {
namespace {

Shape step(OpKind op) {
  Shape s = op_def(op).default_shape();
  s.batch = 8;
  s.tokens = op == OpKind::mtp ? 4 : 1;
  return s;
}

TEST(Axes, KeysPrintEveryAxisThatMattersInAFixedOrder) {
  Shape p = op_def(OpKind::prefill).default_shape();
  p.seqlens = {100, 37};
  EXPECT_EQ(p.key(), "h16/32 d128x128 seq=100+37 layout=kv gate=log");
  p.has_h0 = false, p.l2norm = false, p.input_dtype = DType::f16, p.inputs = InputDist::no_decay, p.scale = 0.5;
  EXPECT_EQ(p.key(), "h16/32 d128x128 seq=100+37 layout=kv no_h0 gate=log no_l2norm in=f16 inputs=no_decay scale=0.5");
  p.seqlens = std::vector<int64_t>(9, 1);
  p.seqlens.back() = 2;
  EXPECT_NE(p.key().find("seq=9seqs/10tok#"), std::string::npos) << p.key();
  EXPECT_EQ(step(OpKind::decode).key(), "h16/32 d128x128 B=8 state=f32 layout=vk pool=8 idx=identity gate=log");
  Shape m = step(OpKind::mtp);
  m.index_dtype = DType::i32, m.cache_intermediate = true, m.rollback = true, m.pool = 32;
  EXPECT_EQ(m.key(), "h16/32 d128x128 T=4 B=8 state=f32 layout=vk pool=32 idx=identity/i32 cache=1 update=1 "
                     "rollback=1 gate=log");
}

TEST(Axes, EveryAxisRoundTripsThroughJson) {
  Shape s = step(OpKind::mtp);
  s.h_qk = 8, s.h_v = 24, s.dk = 64, s.dv = 96, s.input_dtype = DType::f16, s.l2norm = false, s.gate = GateForm::raw;
  s.inputs = InputDist::beta_one, s.scale = 0.25, s.seqlens = {3, 4}, s.has_h0 = false, s.batch = 5, s.tokens = 7;
  s.state_dtype = DType::bf16, s.layout = Layout::kv, s.pool = 11, s.indices = IndexPattern::high;
  s.index_dtype = DType::i32, s.cache_intermediate = true, s.update_state = false, s.rollback = true;
  const nlohmann::json j = shape_to_json(s);
  const Shape back = shape_from_json_object(j);
  EXPECT_EQ(shape_to_json(back), j);
  std::size_t fields = 1;  // op
  for (const auto& a : shape_axes()) fields += a.json.size();
  EXPECT_EQ(j.size(), fields);
  // Every field a shape object holds is named by exactly one axis (and "op").
  for (const auto& [name, value] : j.items()) {
    int owners = name == "op" ? 1 : 0;
    for (const auto& a : shape_axes())
      for (auto f : a.json) owners += f == name;
    EXPECT_EQ(owners, 1) << name;
  }
}

TEST(Axes, ConfigKeysFollowTheTable) {
  const auto keys = case_keys();
  std::vector<std::string> axes(keys.end() - std::ptrdiff_t(shape_axes().size()), keys.end());
  ASSERT_EQ(axes.size(), shape_axes().size());
  for (std::size_t i = 0; i < axes.size(); ++i) EXPECT_EQ(axes[i], shape_axes()[i].key);
  EXPECT_EQ(find_axis("batch")->ops, unsigned(kBitSteps));
  EXPECT_EQ(find_axis("seqlens")->ops, unsigned(kBitPrefill));
}

TEST(Axes, OpsOwnTheirDefaults) {
  EXPECT_EQ(op_def(OpKind::prefill).default_shape().layout, Layout::kv);
  EXPECT_EQ(op_def(OpKind::decode).default_shape().layout, Layout::vk);
  EXPECT_EQ(op_def(OpKind::mtp).default_shape().op, OpKind::mtp);
  const nlohmann::json t = axes_to_json();
  EXPECT_EQ(t["defaults"]["prefill"]["layout"], "kv");
  EXPECT_EQ(t["axes"].size(), shape_axes().size());
}

int run_shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(Axes, PeerHarnessAgreesWithTheTable) {
  if (run_shell("python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 (>= 3.8) not found";
  const auto dir = std::filesystem::temp_directory_path();
  const std::string table = (dir / ("axes." + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(table) << axes_to_json().dump();
  const std::string log = table + ".log";
  const std::string cmd = "cd '" + std::string(GDN_SOURCE_DIR) +
                          "/scripts/peers' && python3 -c 'import json, sys; from peerlib import shapes; "
                          "p = shapes.check_axes(json.load(open(sys.argv[1]))); print(*p, sep=\"\\n\"); "
                          "sys.exit(1 if p else 0)' '" + table + "' > '" + log + "' 2>&1";
  const int rc = run_shell(cmd);
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(table), std::filesystem::remove(log);
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace gdn
