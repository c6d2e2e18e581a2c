// C kernel plugins (include/gdnbench/kernel.h, docs/plugins.md): the ABI structs gdnbench fills,
// the checks of a table entry, the file hash a record keeps, and the CLI end to end with the
// example plugins (examples/plugin-cpu, examples/plugin-wrong) and two test-only ones
// (tests/plugins/): a good plugin verified and tabulated beside the CPU variants, a wrong one
// caught (exit 2), a wrong ABI version, a malformed table and a missing file refused (exit 3).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.h"
#include "plugin/c_abi.h"
#include "plugin/plugin_loader.h"
#include "plugin/sha256.h"
#include "report/baseline_table.h"
#include "report/report.h"

#include "test_support.h"

namespace gdn {
namespace {

namespace fs = std::filesystem;

// The plugins are built into plugins/ beside the programs (tests/CMakeLists.txt).
std::string plugin(const std::string& name) {
  return (fs::path(GDN_BINARY).parent_path() / "plugins" / ("lib" + name + ".so")).string();
}

using Result = test::ShellResult;

Result run(const std::string& args) {
  const std::string cmd = std::string(GDN_BINARY) + " " + args + " 2>&1";
  return test::run_shell(cmd);
}

std::string tmp(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("gdnbench_plugin_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string write(const std::string& name, const std::string& text) {
  const auto path = tmp(name);
  std::ofstream(path) << text;
  return path;
}

std::string src(const std::string& rel) { return std::string(GDN_SOURCE_DIR) + "/" + rel; }

TEST(PluginSha256, MatchesTheStandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the first padded block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(PluginSha256, UnreadableFileIsBadInputNamingIt) {
  try {
    sha256_file("/nonexistent/libx.so");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libx.so"), std::string::npos) << e.what();
  }
}

TEST(PluginNames, LibraryPartDropsLibAndSo) {
  EXPECT_EQ(plugin_library_name("/a/b/libmine.so"), "mine");
  EXPECT_EQ(plugin_library_name("libmine.so.2.1"), "mine");
  EXPECT_EQ(plugin_library_name("kernels.so"), "kernels");
  EXPECT_EQ(plugin_library_name("lib.so"), "lib");
}

TEST(PluginAbi, ShapeCarriesEveryFieldOfEachOp) {
  Shape d;
  d.op = OpKind::mtp, d.batch = 6, d.tokens = 3, d.pool = 10, d.dk = 64, d.dv = 32, d.h_qk = 2, d.h_v = 8;
  d.layout = Layout::kv, d.state_dtype = DType::bf16, d.index_dtype = DType::i32, d.gate = GateForm::raw;
  d.cache_intermediate = true, d.rollback = true, d.update_state = false, d.l2norm = false;
  const gdn_shape c = to_c_shape(d);
  EXPECT_EQ(c.op, GDN_OP_MTP);
  EXPECT_EQ(c.batch, 6);
  EXPECT_EQ(c.tokens, 3);
  EXPECT_EQ(c.pool_slots, 10);
  EXPECT_EQ(c.dk, 64);
  EXPECT_EQ(c.dv, 32);
  EXPECT_EQ(c.h_qk, 2);
  EXPECT_EQ(c.h_v, 8);
  EXPECT_EQ(c.layout, GDN_LAYOUT_KV);
  EXPECT_EQ(c.state_dtype, GDN_DTYPE_BF16);
  EXPECT_EQ(c.index_dtype, GDN_DTYPE_I32);
  EXPECT_EQ(c.gate, GDN_GATE_RAW);
  EXPECT_EQ(c.cache_intermediate, 1);
  EXPECT_EQ(c.rollback, 1);
  EXPECT_EQ(c.update_state, 0);
  EXPECT_EQ(c.l2norm, 0);
  EXPECT_FLOAT_EQ(c.scale, 0.125f);  // the default 1/sqrt(K) is filled in

  Shape p;
  p.op = OpKind::prefill, p.seqlens = {5, 0, 7};
  gdn_shape cp = to_c_shape(p);
  EXPECT_EQ(cp.op, GDN_OP_PREFILL);
  EXPECT_EQ(cp.num_seqs, 3);
  EXPECT_EQ(cp.total_tokens, 12);
  ASSERT_EQ(cp.seqlens, p.seqlens.data());
  EXPECT_EQ(cp.pool_slots, 0);  // the dense form
  EXPECT_EQ(cp.has_h0, 1);
  p.pool = 4;
  cp = to_c_shape(p);
  EXPECT_EQ(cp.pool_slots, 4);
  EXPECT_EQ(cp.has_h0, 0);  // the pool form has no h0
  EXPECT_EQ(to_c_shape(Shape{.op = OpKind::decode}).update_state, 1);
}

int refuse_all(const gdn_shape*, char* reason, size_t len) {
  std::snprintf(reason, len, "K = %d is too small", 3);
  return 0;
}
int fail_launch(const gdn_args* a, void*, char* error, size_t len) {
  std::snprintf(error, len, "saw %d threads", a->num_threads);
  return 7;
}

gdn_variant entry() {
  gdn_variant e{};
  e.name = "x", e.op = GDN_OP_DECODE, e.backend = GDN_BACKEND_CPU, e.launch = fail_launch;
  return e;
}

TEST(PluginAbi, SupportsReasonAndLaunchErrorReachTheRecord) {
  gdn_variant e = entry();
  e.supports = refuse_all;
  const Variant v = make_c_variant(e, "plugin:t/x", VariantOrigin{"plugin", "/p/libt.so", "ab"});
  EXPECT_EQ(v.name, "plugin:t/x");
  EXPECT_EQ(v.op, OpKind::decode);
  EXPECT_EQ(v.origin.path, "/p/libt.so");
  EXPECT_EQ(v.supports(Shape{.op = OpKind::decode}), "K = 3 is too small");
  LaunchContext ctx;
  ctx.num_threads = 5;
  try {
    v.launch(Shape{.op = OpKind::decode}, TensorSet{}, ctx);
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), kExitRuntime);
    EXPECT_STREQ(err.what(), "plugin:t/x: launch returned 7: saw 5 threads");
  }
}

TEST(PluginAbi, EntryChecksNameWhatIsWrong) {
  EXPECT_EQ(check_c_entry(entry()), "");
  gdn_variant e = entry();
  e.op = 3;
  EXPECT_NE(check_c_entry(e).find("op 3"), std::string::npos);
  e = entry(), e.launch = nullptr;
  EXPECT_NE(check_c_entry(e).find("no launch"), std::string::npos);
  e = entry(), e.backend = GDN_BACKEND_CUDA, e.min_arch = 90, e.max_arch = 80;
  EXPECT_NE(check_c_entry(e).find("90..80"), std::string::npos);
  const gdn_tolerance ht{"ht", 1e-3}, loose{"o", -1.0};
  e = entry(), e.tolerances = &ht, e.num_tolerances = 1;
  EXPECT_NE(check_c_entry(e).find("'ht', not an output of this op (o, pool)"), std::string::npos) << check_c_entry(e);
  e.tolerances = &loose;
  EXPECT_NE(check_c_entry(e).find("not a positive"), std::string::npos);
  e.tolerances = nullptr;
  EXPECT_NE(check_c_entry(e).find("NULL"), std::string::npos);
}

TEST(PluginReport, OriginIsWrittenForPluginRecordsOnly) {
  CaseRecord built_in;
  built_in.variant = "decode/cpu";
  EXPECT_FALSE(to_json(built_in).contains("origin"));
  CaseRecord r;
  r.variant = "plugin:mine/decode_loop";
  r.origin = {"plugin", "/x/libmine.so", std::string(64, 'f')};
  const auto j = to_json(r);
  EXPECT_EQ(j["origin"]["sha256"], std::string(64, 'f'));
  const CaseRecord back = record_from_json(j);
  EXPECT_EQ(back.origin.kind, "plugin");
  EXPECT_EQ(back.origin.path, "/x/libmine.so");
  EXPECT_EQ(back.origin.sha256, std::string(64, 'f'));
}

// `sha256sum`'s digest of a file: the record's hash is checked with the standard tool.
std::string sha256sum(const std::string& path) {
  const std::string out = test::run_shell("sha256sum '" + path + "'").out;
  return out.substr(0, out.find(' '));
}

TEST(PluginCli, ExamplePluginIsVerifiedTimedAndTabulatedBesideTheCpuVariants) {
  const auto config = src("configs/plugin-cpu.yaml"), json = tmp("plugin.json");
  const auto so = plugin("example_cpu");
  const auto r = run("run --plugin " + so + " --config " + config + " --json " + json +
                     " --min-samples 3 --min-time 0 --host-max-noise 50 --host-timeout 1"
                     " --baseline plugin:example_cpu/decode_loop");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("decode: plugin:example_cpu/decode_loop against every other variant"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode: another variant is faster on "), std::string::npos) << r.out;
  for (const char* v : {"plugin:example_cpu/prefill_loop", "plugin:example_cpu/decode_loop", "plugin:example_cpu/mtp_loop"})
    EXPECT_NE(r.out.find(v), std::string::npos) << v << " is not in the tables\n" << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  std::map<std::string, int> ok;  // variant -> verified and timed records
  int f16_skips = 0;
  for (const auto& c : j["cases"]) {
    const std::string v = c["variant"];
    // The example's supports() refuses f16 inputs with its reason; our decode/cpu runs them.
    if (c["shape"]["input_dtype"] == "f16" && v.rfind("plugin:", 0) == 0) {
      EXPECT_EQ(c["status"], "skipped") << c.dump();
      EXPECT_EQ(c["reason"], "bf16 inputs only (this point has f16)") << c.dump();
      ++f16_skips;
    } else {
      EXPECT_EQ(c["status"], "ok") << c.dump();
    }
    if (c["status"] == "ok" && c["verification"]["pass"] == true && c["timed"] == true) ++ok[v];
    if (v.rfind("plugin:", 0) != 0) {
      EXPECT_FALSE(c.contains("origin")) << v;
      continue;
    }
    ASSERT_TRUE(c.contains("origin")) << c.dump();
    EXPECT_EQ(c["origin"]["kind"], "plugin");
    EXPECT_EQ(c["origin"]["path"], fs::canonical(so).string());
    EXPECT_EQ(c["origin"]["sha256"], sha256sum(so));
    if (c["timed"] == true) EXPECT_EQ(c["timing"]["timer"], "host");
  }
  // Every point of each op ran for our CPU variant and the plugin's alike.
  for (const auto& [ours, theirs, points] : std::vector<std::tuple<std::string, std::string, int>>{
           {"prefill/cpu", "plugin:example_cpu/prefill_loop", 2 * 2 + 1},
           {"decode/cpu", "plugin:example_cpu/decode_loop", 2 * 2 * 2 * 2 + 4},
           {"mtp/cpu", "plugin:example_cpu/mtp_loop", 2 * 2 + 2}}) {
    EXPECT_EQ(ok[ours], points + (ours == "decode/cpu")) << ours;  // decode/cpu also runs the f16 point
    EXPECT_EQ(ok[theirs], points) << theirs;
  }
  EXPECT_EQ(f16_skips, 1);
}

CaseRecord timed(const std::string& variant, int64_t batch, double median_s) {
  CaseRecord r;
  r.variant = variant, r.shape.op = OpKind::decode, r.shape.batch = batch, r.mode = "cold", r.device = "host: x";
  r.timed = true, r.timing.stats.median = median_s;
  return r;
}

TEST(BaselineTable, EachPointAgainstTheFastestOther) {
  const std::vector<CaseRecord> records{timed("plugin:m/d", 1, 2e-6), timed("decode/cpu", 1, 1e-6),
                                        timed("fla/x", 1, 4e-6),      timed("plugin:m/d", 2, 3e-6),
                                        timed("decode/cpu", 2, 6e-6)};
  const std::string t = format_baseline_table("plugin:m/d", records, 200);
  EXPECT_NE(t.find("2.00x"), std::string::npos) << t;  // batch 1: 2 us over decode/cpu's 1 us
  EXPECT_NE(t.find("0.50x"), std::string::npos) << t;  // batch 2: 3 us over 6 us
  EXPECT_NE(t.find("1.00*"), std::string::npos) << t;  // the fastest other is marked
  EXPECT_NE(t.find("faster on 1 of 2 points"), std::string::npos) << t;
  EXPECT_NE(t.find("geometric mean 1.00x"), std::string::npos) << t;
  // Another device's record is no comparison; a baseline without records gives no table.
  auto other = records;
  for (auto& r : other)
    if (r.variant == "decode/cpu") r.device = "NVIDIA H100";
  EXPECT_NE(format_baseline_table("plugin:m/d", other, 200).find("4.00*"), std::string::npos);  // fla/x, batch 1 only
  EXPECT_EQ(format_baseline_table("plugin:none/x", records, 200), "");
}

TEST(PluginCli, UnknownBaselineExitsThree) {
  const auto r = run("run --baseline decode/nope --config " + write("b.yaml", "cases:\n  - op: decode\n"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("--baseline 'decode/nope'"), std::string::npos) << r.out;
}

TEST(PluginCli, ListAndPlanSeeThePluginVariants) {
  const auto so = plugin("example_cpu");
  auto r = run("list --plugin " + so);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("plugin:example_cpu/decode_loop"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[plugin " + fs::canonical(so).string() + "]"), std::string::npos) << r.out;
  const auto config = write("plan.yaml", "cases:\n  - op: decode\n    variant: \"plugin:*\"\n");
  r = run("plan --plugin " + so + " --config " + config);
  EXPECT_EQ(r.code, 0) << r.out;
  // Without the plugin the same config matches nothing: its glob is checked when it loads.
  r = run("plan --config " + config);
  EXPECT_EQ(r.code, 3) << r.out;
}

// --isolate runs each case in a child: the child loads the plugin from the same command line.
TEST(PluginCli, IsolatedCasesLoadThePluginInTheirChild) {
  const auto json = tmp("isolate.json");
  const auto r = run("run --quiet --isolate --plugin " + plugin("example_cpu") + " --config " +
                     src("configs/plugin-cpu.yaml") + " --op mtp --variant 'plugin:*' --min-samples 3 --min-time 0 "
                     "--host-timeout 1 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["cases"].size(), 6u);
  for (const auto& c : j["cases"]) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["origin"]["kind"], "plugin") << c.dump();
  }
}

// The CUDA example loads anywhere; without a device its variant is listed as unable to run, and
// a run records each of its points as skipped with the reason (tests/gpu/test_plugin_cuda.cpp
// runs it on a GPU).
TEST(PluginCli, CudaPluginLoadsAndSaysWhereItCannotRun) {
  const auto so = plugin("example_cuda");
  auto r = run("list --plugin " + so);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto at = r.out.find("plugin:example_cuda/decode_simple");
  ASSERT_NE(at, std::string::npos) << r.out;
  const auto line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find(" cuda "), std::string::npos) << line;
  EXPECT_NE(line.find("sm_75+"), std::string::npos) << line;
  const auto json = tmp("cuda.json");
  r = run("run --quiet --plugin " + so + " --config " + write("cuda.yaml", "cases:\n  - op: decode\n    variant: \"plugin:*\"\n") +
          " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["cases"].size(), 1u);
  const auto& c = j["cases"][0];
  if (c["status"] == "skipped") EXPECT_FALSE(c["reason"].get<std::string>().empty()) << c.dump();
  else EXPECT_EQ(c["status"], "ok") << c.dump();  // a machine with a GPU runs it
}

TEST(PluginCli, WrongPluginFailsVerificationWithExitTwo) {
  const auto config = write("wrong.yaml", "defaults:\n  heads: [2, 4]\n  head_dim: 16\ncases:\n  - op: decode\n"
                                          "    variant: \"plugin:*\"\n    batch: 2\n");
  const auto r = run("run --quiet --plugin " + plugin("example_wrong") + " --config " + config +
                     " --min-samples 3 --min-time 0 --host-timeout 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("1 failed verification"), std::string::npos) << r.out;
}

TEST(PluginCli, WrongAbiVersionExitsThreeNamingTheFile) {
  const auto so = plugin("plugin_abi_mismatch");
  const auto r = run("verify --plugin " + so + " --config " + write("any.yaml", "cases:\n  - op: decode\n"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find(fs::canonical(so).string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ABI version 2, this gdnbench reads version 1"), std::string::npos) << r.out;
}

TEST(PluginCli, MalformedTableExitsThreeNamingFileAndEntry) {
  const auto so = plugin("plugin_bad_table");
  const auto r = run("list --plugin " + so);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find(fs::canonical(so).string() + "': variants[0] ('decode/loop') has a name that holds '/'"),
            std::string::npos)
      << r.out;
}

TEST(PluginCli, MissingOrNonPluginFileExitsThree) {
  auto r = run("run --plugin /nonexistent/libmine.so --config x.yaml");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("--plugin '/nonexistent/libmine.so': no such file"), std::string::npos) << r.out;
  // A file that is not a shared library: dlopen's reason, and the file named.
  const auto text = write("libtext.so", "not an ELF file\n");
  r = run("list --plugin " + text);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("cannot load it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(text), std::string::npos) << r.out;
  // The same file twice would register each variant twice.
  r = run("list --plugin " + plugin("example_cpu") + " --plugin " + plugin("example_cpu"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("is given twice"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gdn
