#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/op.h"
#include "device/info.h"
#include "report/report.h"

namespace gdn {
namespace {

namespace fs = std::filesystem;

Shape decode_b256() {
  Shape s;
  s.op = OpKind::decode;
  s.h_qk = 16, s.h_v = 32, s.dk = 128, s.dv = 128;
  s.batch = 256;
  s.state_dtype = DType::f32;
  return s;
}

Shape prefill_8k() {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = {8192};
  s.has_h0 = true;
  return s;
}

Measurement timing_with_median(double median) {
  Measurement m;
  m.samples_s = {median * 0.99, median, median, median * 1.01, median, median * 1.02, median};
  m.stats = compute_stats(m.samples_s);
  m.converged = true;
  m.stop_reason = "noise";
  m.wall_s = 0.75;
  m.kernels = {{"gdn_chunk_fwd", median * 0.7, 0.7}, {"gdn_state_pass", median * 0.25, 0.25}};
  m.sm_clock_mhz = 1755;
  return m;
}

CaseRecord timed_case(const Shape& s, const std::string& variant, double median) {
  CaseRecord r;
  r.case_name = s.op == OpKind::prefill ? "prefill_anchor" : "decode_anchor";
  r.variant = variant;
  r.shape = s;
  r.mode = "cold";
  r.device = "NVIDIA H200";
  r.seed = 1234567890123ull;
  r.status = CaseStatus::ok;
  r.verify.ran = true;
  r.verify.pass = true;
  r.verify.scope = "full";
  r.verify.seconds = 0.5;
  r.verify.checks = {{"o", 2.5e-3, 0.03, 5e-3, 1000, 0, 0, 0, true}, {"ht", 1.25e-4, 0.001, 5e-3, 2000, 0, 0, 0, true}};
  r.timed = true;
  r.timer = "cupti";
  r.timing = timing_with_median(median);
  r.work = op_def(s.op).work(s);
  r.peak = s.op == OpKind::prefill ? Peak{"bf16_mma", 700e12, "calibrate cache"}
                                   : Peak{"copy_bandwidth", 4.25e12, "measured now"};
  r.wall_s = 2.5;
  r.repro = "gdnbench run --op " + r.op() + " --variant " + variant + " --seed 7";
  compute_metrics(r);
  return r;
}

CaseRecord skipped_case(const std::string& variant, const std::string& reason) {
  CaseRecord r;
  r.case_name = "prefill_anchor";
  r.variant = variant;
  r.shape = prefill_8k();
  r.mode = "cold";
  r.device = "NVIDIA H200";
  r.status = CaseStatus::skipped;
  r.reason = reason;
  return r;
}

RunReport full_report() {
  RunReport r;
  r.tool_version = "0.1.0";
  r.git_sha = "abcdef123456-dirty";
  r.argv = {"gdnbench", "run", "--config", "configs/anchors.yaml", "--json", "out.json"};
  r.command = "run";
  r.config_path = "configs/anchors.yaml";
  r.config_hash = "cbf29ce484222325";
  r.mode = "cold";
  r.started_at = "2026-09-01T12:00:00Z";
  r.finished_at = "2026-09-01T12:03:10Z";
  r.complete = true;
  r.shard_index = 1, r.shard_count = 3;
  r.host = {"gpu-node-7", "AMD EPYC 9654", 192, 1584ull << 30, 384ull << 20, "Linux 6.8.0", 600ull << 20};
  DeviceInfo d;
  d.index = 0, d.name = "NVIDIA H200", d.uuid = "GPU-1234", d.cc_major = 9, d.cc_minor = 0;
  d.sm_count = 132, d.l2_bytes = 60ull << 20, d.memory_bytes = 141ull << 30, d.memory_free_bytes = 140ull << 30;
  d.sm_clock_max_mhz = 1980, d.mem_clock_mhz = 3201, d.mem_bus_width = 6144;
  d.driver_version = "13.0", d.runtime_version = "13.0", d.cupti_version = "13.0.85";
  r.devices = {d};
  r.calibration = {{"NVIDIA H200", {{"copy_bandwidth", 4.25e12}, {"bf16_mma", 700e12}}}};

  auto prefill = timed_case(prefill_8k(), "prefill/sm90", 280e-6);
  prefill.threshold_pct = 7.5;
  auto decode = timed_case(decode_b256(), "decode/cuda_simple", 368e-6);
  decode.plan = "mma_pipelined form=tf32 (1 warp/block, 11 warps/SM, <= 184 registers)";
  decode.throttled = true;
  decode.timing.converged = false;
  decode.timing.stop_reason = "timeout";
  auto failed = timed_case(decode_b256(), "decode/broken", 100e-6);
  failed.status = CaseStatus::verify_failed;
  failed.verify.pass = false;
  failed.verify.checks[0].pass = false;
  failed.verify.checks[0].rel_l2 = 0.5;
  failed.verify.checks[0].unwritten = 12;
  failed.verify.checks[1].max_abs = kNaN;  // non-finite values must survive as NaN
  auto few = timed_case(decode_b256(), "decode/cpu", 2e-3);
  few.timing.samples_s.resize(3);
  few.timing.stats = compute_stats(few.timing.samples_s);  // noise = inf
  few.timing.max_noise = 0.02, few.timing.timeout_s = 3;
  few.peak = {};
  compute_metrics(few);
  auto over = timed_case(decode_b256(), "decode/cpu", 368e-6);
  over.timer = "host";
  over.device = "host: test CPU";  // a report holds each (variant, shape, mode, device) once
  over.peak = {"host_bandwidth", 2.0e12, "measured now", "its working set fits in the host's caches"};
  compute_metrics(over);
  r.cases = {prefill, decode, failed, few, skipped_case("prefill/sm100", "needs sm_100 (device is sm_90)"), over};
  return r;
}

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

#define EXPECT_SAME(a, b) EXPECT_PRED2(same_number, a, b)

void expect_same_record(const CaseRecord& a, const CaseRecord& b) {
  EXPECT_EQ(a.case_name, b.case_name);
  EXPECT_EQ(a.variant, b.variant);
  EXPECT_EQ(a.shape_key(), b.shape_key());
  EXPECT_EQ(to_json(a.shape), to_json(b.shape));
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.threshold_pct, b.threshold_pct);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.verify.ran, b.verify.ran);
  EXPECT_EQ(a.verify.pass, b.verify.pass);
  EXPECT_EQ(a.verify.scope, b.verify.scope);
  EXPECT_SAME(a.verify.seconds, b.verify.seconds);
  ASSERT_EQ(a.verify.checks.size(), b.verify.checks.size());
  for (std::size_t i = 0; i < a.verify.checks.size(); ++i) {
    const auto &x = a.verify.checks[i], &y = b.verify.checks[i];
    EXPECT_EQ(x.tensor, y.tensor);
    EXPECT_SAME(x.rel_l2, y.rel_l2);
    EXPECT_SAME(x.max_abs, y.max_abs);
    EXPECT_SAME(x.tolerance, y.tolerance);
    EXPECT_EQ(x.checked, y.checked);
    EXPECT_EQ(x.nonfinite, y.nonfinite);
    EXPECT_EQ(x.unwritten, y.unwritten);
    EXPECT_EQ(x.untouched_diff, y.untouched_diff);
    EXPECT_EQ(x.pass, y.pass);
  }
  EXPECT_EQ(a.timed, b.timed);
  EXPECT_EQ(a.timer, b.timer);
  const auto &s = a.timing.stats, &t = b.timing.stats;
  EXPECT_EQ(s.n, t.n);
  for (auto [x, y] : std::initializer_list<std::pair<double, double>>{{s.min, t.min}, {s.p10, t.p10}, {s.p25, t.p25}, {s.median, t.median},
                      {s.mean, t.mean}, {s.p75, t.p75}, {s.p90, t.p90}, {s.max, t.max}, {s.stdev, t.stdev},
                      {s.rel_stdev, t.rel_stdev}})
    EXPECT_SAME(x, y);
  // Infinite noise is written as null and comes back as NaN.
  if (std::isinf(s.noise)) EXPECT_TRUE(std::isnan(t.noise));
  else EXPECT_SAME(s.noise, t.noise);
  ASSERT_EQ(a.timing.samples_s.size(), b.timing.samples_s.size());
  for (std::size_t i = 0; i < a.timing.samples_s.size(); ++i)
    EXPECT_NEAR(a.timing.samples_s[i], b.timing.samples_s[i], 1e-9);
  EXPECT_EQ(a.timing.converged, b.timing.converged);
  EXPECT_EQ(a.timing.stop_reason, b.timing.stop_reason);
  EXPECT_SAME(a.timing.max_noise, b.timing.max_noise);
  EXPECT_SAME(a.timing.timeout_s, b.timing.timeout_s);
  EXPECT_SAME(a.timing.wall_s, b.timing.wall_s);
  ASSERT_EQ(a.timing.kernels.size(), b.timing.kernels.size());
  for (std::size_t i = 0; i < a.timing.kernels.size(); ++i) {
    EXPECT_EQ(a.timing.kernels[i].name, b.timing.kernels[i].name);
    EXPECT_SAME(a.timing.kernels[i].median_s, b.timing.kernels[i].median_s);
    EXPECT_SAME(a.timing.kernels[i].share, b.timing.kernels[i].share);
  }
  EXPECT_SAME(a.timing.sm_clock_mhz, b.timing.sm_clock_mhz);
  EXPECT_SAME(a.work.bytes, b.work.bytes);
  EXPECT_SAME(a.work.flops, b.work.flops);
  EXPECT_SAME(a.work.flops_fi, b.work.flops_fi);
  EXPECT_EQ(a.work.bandwidth_bound, b.work.bandwidth_bound);
  EXPECT_SAME(a.tflops, b.tflops);
  EXPECT_SAME(a.tflops_fi, b.tflops_fi);
  EXPECT_SAME(a.tbps, b.tbps);
  EXPECT_SAME(a.roofline_pct, b.roofline_pct);
  EXPECT_EQ(a.roofline_note, b.roofline_note);
  EXPECT_EQ(a.peak.kind, b.peak.kind);
  EXPECT_SAME(a.peak.value, b.peak.value);
  EXPECT_EQ(a.peak.source, b.peak.source);
  EXPECT_EQ(a.throttled, b.throttled);
  EXPECT_SAME(a.wall_s, b.wall_s);
  EXPECT_EQ(a.repro, b.repro);
}

void expect_same_report(const RunReport& a, const RunReport& b) {
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.git_sha, b.git_sha);
  EXPECT_EQ(a.argv, b.argv);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.config_path, b.config_path);
  EXPECT_EQ(a.config_hash, b.config_hash);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.finished_at, b.finished_at);
  EXPECT_EQ(a.complete, b.complete);
  EXPECT_EQ(a.shard_index, b.shard_index);
  EXPECT_EQ(a.shard_count, b.shard_count);
  EXPECT_EQ(a.host.hostname, b.host.hostname);
  EXPECT_EQ(a.host.cpu_model, b.host.cpu_model);
  EXPECT_EQ(a.host.logical_cores, b.host.logical_cores);
  EXPECT_EQ(a.host.memory_bytes, b.host.memory_bytes);
  EXPECT_EQ(a.host.llc_bytes, b.host.llc_bytes);
  EXPECT_EQ(a.host.cache_bytes, b.host.cache_bytes);
  EXPECT_EQ(a.host.os, b.host.os);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    const auto &x = a.devices[i], &y = b.devices[i];
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.uuid, y.uuid);
    EXPECT_EQ(x.arch(), y.arch());
    EXPECT_EQ(x.sm_count, y.sm_count);
    EXPECT_EQ(x.l2_bytes, y.l2_bytes);
    EXPECT_EQ(x.memory_bytes, y.memory_bytes);
    EXPECT_EQ(x.memory_free_bytes, y.memory_free_bytes);
    EXPECT_EQ(x.sm_clock_max_mhz, y.sm_clock_max_mhz);
    EXPECT_EQ(x.mem_clock_mhz, y.mem_clock_mhz);
    EXPECT_EQ(x.mem_bus_width, y.mem_bus_width);
    EXPECT_EQ(x.driver_version, y.driver_version);
    EXPECT_EQ(x.runtime_version, y.runtime_version);
    EXPECT_EQ(x.cupti_version, y.cupti_version);
  }
  EXPECT_EQ(a.calibration, b.calibration);
  ASSERT_EQ(a.cases.size(), b.cases.size());
  for (std::size_t i = 0; i < a.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_same_record(a.cases[i], b.cases[i]);
  }
}

// A scratch directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("gdn_test_report_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  fs::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int error_code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return 0;
}

// ---- metrics (docs/method.md 5, worked by hand) -----------------------------------------

TEST(Metrics, DecodeB256AgainstCopyBandwidth) {
  // bytes = 256*(2*16*128 + 32*128)*2 + 256*32*128*2 + 8*256*32 + 2*256*32*128*128*4 = 1'080'098'816
  // flops = 6*256*32*128*128 = 805'306'368
  const CaseRecord r = timed_case(decode_b256(), "decode/cuda_simple", 368e-6);
  EXPECT_DOUBLE_EQ(r.work.bytes, 1080098816.0);
  EXPECT_DOUBLE_EQ(r.work.flops, 805306368.0);
  EXPECT_NEAR(r.tbps, 2.9350511304347826, 1e-12);        // 1.080 GB / 368 us
  EXPECT_NEAR(r.tflops, 2.1883325217391305, 1e-12);
  EXPECT_NEAR(r.tflops_fi, r.tflops, 1e-12);
  EXPECT_NEAR(r.roofline_pct, 69.06002659846547, 1e-9);  // of 4.25 TB/s
}

TEST(Metrics, PrefillAgainstMmaRate) {
  // T = 8192, HV = 32: flops = T*HV*(6*128*128 + 4*64*256) = 42'949'672'960; FlashInfer 4*T*HV*K*V.
  const CaseRecord r = timed_case(prefill_8k(), "prefill/sm90", 280e-6);
  EXPECT_DOUBLE_EQ(r.work.flops, 42949672960.0);
  EXPECT_DOUBLE_EQ(r.work.flops_fi, 17179869184.0);
  EXPECT_DOUBLE_EQ(r.work.bytes, 207618048.0);
  EXPECT_NEAR(r.tflops, 153.39168914285716, 1e-9);
  EXPECT_NEAR(r.tflops_fi, 17179869184.0 / 280e-6 / 1e12, 1e-9);
  EXPECT_NEAR(r.roofline_pct, 21.913098448979593, 1e-9);  // of 700 TFLOP/s
}

TEST(Metrics, HostBandwidthAndUnknownPeaks) {
  CaseRecord r = timed_case(decode_b256(), "decode/cpu", 368e-6);
  r.peak = {"host_bandwidth", 2 * 4.25e12, "measured now"};
  compute_metrics(r);
  EXPECT_NEAR(r.roofline_pct, 69.06002659846547 / 2, 1e-9);
  r.peak = {"copy_bandwidth", kNaN, ""};
  compute_metrics(r);
  EXPECT_TRUE(std::isnan(r.roofline_pct));
  EXPECT_NEAR(r.tbps, 2.9350511304347826, 1e-12);
  r.timed = false;
  compute_metrics(r);
  EXPECT_TRUE(std::isnan(r.tbps) && std::isnan(r.tflops) && std::isnan(r.roofline_pct));
}

// A figure above the peak is a wrong peak or byte model, never a result (docs/method.md 5).
TEST(Metrics, AboveThePeakIsWithheldAndExplained) {
  CaseRecord r = timed_case(decode_b256(), "decode/cpu", 368e-6);  // 2.935 TB/s
  r.peak = {"host_bandwidth", 2.0e12, "measured now", "its working set (64.0 MiB) fits in the host's caches (332.0 MiB)"};
  compute_metrics(r);
  EXPECT_TRUE(std::isnan(r.roofline_pct));
  EXPECT_NEAR(r.tbps, 2.9350511304347826, 1e-12) << "the bandwidth itself is still reported";
  EXPECT_NE(r.roofline_note.find("measured 2935 GB/s is above the 2000 GB/s peak (host_bandwidth)"), std::string::npos)
      << r.roofline_note;
  EXPECT_NE(r.roofline_note.find("fits in the host's caches (332.0 MiB)"), std::string::npos) << r.roofline_note;

  r.peak = {"copy_bandwidth", 2.0e12, "calibrate cache"};  // no caveat: the generic reason
  compute_metrics(r);
  EXPECT_NE(r.roofline_note.find("the peak or the byte model does not hold for this case"), std::string::npos);

  r.peak = {"copy_bandwidth", r.tbps * 1e12, "calibrate cache"};  // exactly at the peak: shown
  compute_metrics(r);
  EXPECT_NEAR(r.roofline_pct, 100.0, 1e-9);
  EXPECT_TRUE(r.roofline_note.empty());

  CaseRecord p = timed_case(prefill_8k(), "prefill/sm90", 280e-6);  // 153 TFLOP/s
  p.peak = {"bf16_mma", 100e12, "calibrate cache"};
  compute_metrics(p);
  EXPECT_TRUE(std::isnan(p.roofline_pct));
  EXPECT_NE(p.roofline_note.find("GFLOP/s"), std::string::npos) << p.roofline_note;
}

TEST(Metrics, CaseStatusNames) {
  EXPECT_EQ(to_string(CaseStatus::ok), "ok");
  EXPECT_EQ(to_string(CaseStatus::skipped), "skipped");
  EXPECT_EQ(to_string(CaseStatus::verify_failed), "verify_failed");
  EXPECT_EQ(to_string(CaseStatus::error), "error");
}

// ---- JSON ------------------------------------------------------------------------------

TEST(Json, ShapeRoundTripKeepsEveryField) {
  Shape s = decode_b256();
  s.op = OpKind::mtp;
  s.tokens = 4, s.layout = Layout::kv, s.state_dtype = DType::bf16, s.pool = 1024;
  s.indices = IndexPattern::padded, s.index_dtype = DType::i32, s.cache_intermediate = true, s.update_state = false;
  s.gate = GateForm::raw, s.inputs = InputDist::strong_decay, s.l2norm = false, s.scale = 0.125;
  s.input_dtype = DType::f16, s.seqlens = {3, 5}, s.has_h0 = false;
  const auto j = to_json(s);
  EXPECT_EQ(j["op"], "mtp");
  EXPECT_EQ(j["layout"], "kv");
  EXPECT_EQ(j["seqlens"], nlohmann::json::array({3, 5}));
  const Shape back = shape_from_json(j);
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.key(), s.key());
}

TEST(Json, RecordFieldsAreNumbersAndNullsNotStrings) {
  const RunReport r = full_report();
  const auto j = to_json(r.cases[3]);  // three samples: infinite noise, no peak
  EXPECT_TRUE(j["timing"]["stats"]["median"].is_number());
  EXPECT_TRUE(j["timing"]["stats"]["noise"].is_null());
  EXPECT_TRUE(j["metrics"]["roofline_pct"].is_null());
  EXPECT_EQ(j["shape_key"], r.cases[3].shape_key());
  EXPECT_EQ(j["status"], "ok");
  const auto skipped = to_json(r.cases[4]);
  EXPECT_TRUE(skipped["timing"].is_null());
  EXPECT_EQ(skipped["reason"], "needs sm_100 (device is sm_90)");
}

TEST(Json, FullReportRoundTripThroughAFile) {
  TempDir dir;
  const RunReport r = full_report();
  const std::string path = dir.file("report.json");
  write_report(path, r);
  const auto j = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["tool"]["name"], "gdnbench");
  EXPECT_EQ(j["devices"][0]["arch"], 90);
  const RunReport back = load_report(path);
  expect_same_report(r, back);
  EXPECT_EQ(j["cases"][1]["plan"], r.cases[1].plan);
  EXPECT_EQ(back.cases[1].plan, r.cases[1].plan);
  // A second trip is exact: nothing drifts.
  EXPECT_EQ(to_json(back), to_json(report_from_json(to_json(back))));
}

// A prefill record with explicit checkpoint positions (a list per sequence) reads back as written:
// the reader's schema check takes a list of lists of counts.
TEST(Json, CheckpointListsRoundTripThroughAFile) {
  TempDir dir;
  RunReport r = full_report();
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = {1100, 64};
  s.pool = 8;
  s.checkpoint_at = {{128, 1088}, {64}};
  r.cases.push_back(timed_case(s, "prefill/cpu", 1e-3));
  const std::string path = dir.file("checkpoints.json");
  write_report(path, r);
  const RunReport back = load_report(path);
  ASSERT_EQ(back.cases.size(), r.cases.size());
  EXPECT_EQ(back.cases.back().shape.checkpoint_at, s.checkpoint_at);
  EXPECT_EQ(back.cases.back().shape_key(), r.cases.back().shape_key());
}

TEST(Json, AtomicWriteReplacesAndLeavesNoTempFile) {
  TempDir dir;
  const std::string path = dir.file("out.json");
  write_file_atomic(path, "first\n");
  write_file_atomic(path, "second\n");
  EXPECT_EQ(slurp(path), "second\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"out.json"});

  std::string msg;
  EXPECT_EQ(error_code_of([&] { write_file_atomic(dir.file("no/such/dir/x.json"), "x"); }, &msg), kExitRuntime);
  EXPECT_NE(msg.find("no/such/dir/x.json"), std::string::npos) << msg;
}

TEST(Json, LoadErrorsAreInputErrorsNamingTheFile) {
  TempDir dir;
  std::string msg;
  const std::string missing = dir.file("missing.json");
  EXPECT_EQ(error_code_of([&] { load_report(missing); }, &msg), kExitBadInput);
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;

  const std::string bad = dir.file("bad.json");
  write_file_atomic(bad, "{\n  \"schema_version\": 1,\n  \"cases\": [,]\n}\n");
  EXPECT_EQ(error_code_of([&] { load_report(bad); }, &msg), kExitBadInput);
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;

  const std::string future = dir.file("future.json");
  write_file_atomic(future, nlohmann::json{{"schema_version", kSchemaVersion + 1}, {"cases", nlohmann::json::array()}}.dump());
  EXPECT_EQ(error_code_of([&] { load_report(future); }, &msg), kExitBadInput);
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  EXPECT_NE(msg.find(future), std::string::npos) << msg;

  auto j = to_json(full_report());
  j["cases"][1]["shape"]["layout"] = "diagonal";
  const std::string odd = dir.file("odd.json");
  write_file_atomic(odd, j.dump());
  EXPECT_EQ(error_code_of([&] { load_report(odd); }, &msg), kExitBadInput);
  EXPECT_NE(msg.find("diagonal"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cases[1]"), std::string::npos) << msg;

  const std::string wrong_type = dir.file("wrong_type.json");
  write_file_atomic(wrong_type, R"({"schema_version": 1, "cases": [{"seed": "seven"}]})");
  EXPECT_EQ(error_code_of([&] { load_report(wrong_type); }, &msg), kExitBadInput);
}

// ---- views -----------------------------------------------------------------------------

TEST(Views, AWithheldRooflineIsMarkedAndExplained) {
  const RunReport r = full_report();
  const std::string t = format_tables(r.cases, false);
  EXPECT_NE(t.find(">peak*"), std::string::npos) << t;
  EXPECT_NE(t.find("    * roof%: measured 2935 GB/s is above the 2000 GB/s peak"), std::string::npos) << t;
  EXPECT_EQ(t.find("146.8"), std::string::npos) << "the figure itself is not printed\n" << t;
  const auto j = to_json(r);
  const auto& over = j["cases"][5];
  EXPECT_TRUE(over["metrics"]["roofline_pct"].is_null());
  EXPECT_NE(over["metrics"]["roofline_note"].get<std::string>().find("fits in the host's caches"), std::string::npos);
  EXPECT_EQ(j["cases"][1]["metrics"]["roofline_note"], "");
  EXPECT_EQ(j["cases"][3]["timing"]["max_noise"], 0.02);
  EXPECT_EQ(j["cases"][3]["timing"]["timeout_s"], 3);
}

TEST(Views, TablesPerOpWithSkipsAndBreakdown) {
  const RunReport r = full_report();
  const std::string t = format_tables(r.cases, true, 1000);  // wide: nothing folds
  const auto prefill_at = t.find("prefill ("), decode_at = t.find("decode (");
  ASSERT_NE(prefill_at, std::string::npos) << t;
  ASSERT_NE(decode_at, std::string::npos) << t;
  EXPECT_LT(prefill_at, decode_at);
  EXPECT_EQ(t.find("mtp ("), std::string::npos);
  EXPECT_NE(t.find("280.00 us"), std::string::npos) << t;
  EXPECT_NE(t.find("368.00 us"), std::string::npos) << t;
  EXPECT_NE(t.find("2.000 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("153"), std::string::npos) << t;     // prefill TFLOPS
  EXPECT_NE(t.find("2.94"), std::string::npos) << t;    // decode TB/s
  EXPECT_NE(t.find("69.1"), std::string::npos) << t;    // decode roofline %
  EXPECT_NE(t.find("PASS"), std::string::npos) << t;
  EXPECT_NE(t.find("FAIL"), std::string::npos) << t;
  EXPECT_NE(t.find("5.0e-01"), std::string::npos) << t;  // worst rel-L2 of the broken variant
  EXPECT_NE(t.find("12 unwritten"), std::string::npos) << t;
  EXPECT_NE(t.find("ok (timeout) throttled"), std::string::npos) << t;
  EXPECT_NE(t.find("sm100 x1: needs sm_100 (device is sm_90)"), std::string::npos) << t;
  EXPECT_NE(t.find("gdn_chunk_fwd"), std::string::npos) << t;
  EXPECT_NE(t.find("  - gdn_chunk_fwd (70.0%)"), std::string::npos) << t;
  EXPECT_NE(t.find(decode_b256().key()), std::string::npos) << t;
  EXPECT_EQ(format_tables(r.cases, false).find("gdn_chunk_fwd"), std::string::npos);
  // The breakdown's plan column shows the plan up to its budget note.
  EXPECT_NE(t.find("  mma_pipelined form=tf32\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("11 warps/SM"), std::string::npos) << t;
  EXPECT_EQ(format_tables(r.cases, false).find("mma_pipelined"), std::string::npos);
  // At the default 120 columns every line of the tables fits (the breakdown, asked for, adds a
  // column and rows of stages, and may run wider).
  const std::string fitted = format_tables(r.cases, false);
  for (std::size_t start = 0, end; (end = fitted.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 120u) << fitted.substr(start, end - start);
}

TEST(Views, CsvHeaderRowsAndQuoting) {
  RunReport r = full_report();
  r.cases[0].case_name = "anchor, \"8k\"";
  const std::string csv = format_csv(r.cases);
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = csv.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(csv.substr(start, end - start));
  ASSERT_EQ(lines.size(), 1 + r.cases.size());
  EXPECT_EQ(lines[0].rfind("case,op,variant,shape_key,mode,device,seed,status", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("median_s"), std::string::npos);
  EXPECT_NE(lines[0].find("worst_rel_l2"), std::string::npos);
  EXPECT_EQ(lines[1].rfind("\"anchor, \"\"8k\"\"\",prefill,prefill/sm90,", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(",0.00028,"), std::string::npos) << lines[1];  // median in seconds
  EXPECT_NE(lines[3].find(",verify_failed,"), std::string::npos) << lines[3];
  EXPECT_NE(lines[5].find(",skipped,needs sm_100 (device is sm_90),"), std::string::npos) << lines[5];
}

TEST(Views, GoogleBenchmarkShape) {
  const RunReport r = full_report();
  const auto g = to_gbench(r);
  EXPECT_EQ(g["context"]["executable"], "gdnbench");
  EXPECT_EQ(g["context"]["json_schema_version"], 1);
  EXPECT_EQ(g["context"]["num_cpus"], 192);
  EXPECT_EQ(g["context"]["host_name"], "gpu-node-7");
  const auto& b = g["benchmarks"];
  ASSERT_EQ(b.size(), 4u);  // ok cases only: not the failed one, not the skipped one
  const std::string name = "prefill/sm90/" + prefill_8k().key() + "/cold@NVIDIA H200";
  EXPECT_EQ(b[0]["name"], name);
  EXPECT_EQ(b[0]["run_name"], name);
  EXPECT_EQ(b[0]["run_type"], "iteration");
  EXPECT_EQ(b[0]["repetitions"], 1);
  EXPECT_EQ(b[0]["repetition_index"], 0);
  EXPECT_EQ(b[0]["threads"], 1);
  EXPECT_EQ(b[0]["iterations"], 7);
  EXPECT_EQ(b[0]["time_unit"], "us");
  EXPECT_NEAR(b[0]["real_time"].get<double>(), 280.0, 1e-9);
  EXPECT_NEAR(b[0]["cpu_time"].get<double>(), 280.0, 1e-9);
  EXPECT_NEAR(b[0]["TFLOPS"].get<double>(), 153.39168914285716, 1e-9);
  EXPECT_TRUE(b[0]["TBps"].is_number());
  EXPECT_NEAR(b[1]["roofline_pct"].get<double>(), 69.06002659846547, 1e-9);
  EXPECT_FALSE(b[2].contains("roofline_pct"));  // unknown peak: left out, not null
  EXPECT_FALSE(b[3].contains("roofline_pct"));  // above the peak: withheld
}

TEST(Views, BiggerIsBetterUnitsFollowTheBound) {
  const auto a = to_bigger_is_better(full_report());
  ASSERT_TRUE(a.is_array());
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0]["unit"], "TFLOPS");  // prefill is compute bound
  EXPECT_NEAR(a[0]["value"].get<double>(), 153.39168914285716, 1e-9);
  EXPECT_EQ(a[1]["unit"], "TB/s");  // decode is bandwidth bound
  EXPECT_NEAR(a[1]["value"].get<double>(), 2.9350511304347826, 1e-12);
  EXPECT_EQ(a[1]["name"], "decode/cuda_simple/" + decode_b256().key() + "/cold@NVIDIA H200");
  EXPECT_TRUE(a[1]["extra"].is_string());
  EXPECT_NE(a[1]["extra"].get<std::string>().find("368.00 us"), std::string::npos);
}

// ---- host ------------------------------------------------------------------------------

TEST(HostInfo, DescribesThisMachine) {
  const HostInfo h = query_host();
  EXPECT_FALSE(h.hostname.empty());
  EXPECT_GT(h.logical_cores, 0);
  EXPECT_GT(h.memory_bytes, uint64_t(64) << 20);
  EXPECT_FALSE(h.os.empty());
  EXPECT_FALSE(h.cpu_model.empty());
  if (h.llc_bytes > 0) EXPECT_GE(h.cache_bytes, h.llc_bytes) << "every cache together holds at least the LLC";
}

}  // namespace
}  // namespace gdn
