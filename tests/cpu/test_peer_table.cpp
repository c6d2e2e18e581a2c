// The peer tables of `gdnbench run --peer ...` and `gdnbench peers`: several peer reports (or one
// with several peers) beside ours, the best verified peer and ours/best per row.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "report/peer_table.h"

namespace gdn {
namespace {

CaseRecord rec(const std::string& variant, int64_t batch, double median_us, CaseStatus status = CaseStatus::ok,
               const std::string& device = "NVIDIA H200") {
  CaseRecord r;
  r.case_name = "decode";
  r.variant = variant;
  r.shape.op = OpKind::decode;
  r.shape.batch = batch;
  r.mode = "cold";
  r.device = device;
  r.status = status;
  r.timed = status == CaseStatus::ok || status == CaseStatus::verify_failed;
  r.timing.stats.n = 50;
  r.timing.stats.median = median_us * 1e-6;
  return r;
}

TEST(PeerTable, BestPeerAndRatioPerRowAcrossReports) {
  const std::vector<CaseRecord> ours{rec("decode/fast", 1, 3.0), rec("decode/fast", 256, 250.0)};
  const std::vector<CaseRecord> peers{
      rec("fla/fused_recurrent", 1, 3.5), rec("fla/fused_recurrent", 256, 360.0),                // report 1
      rec("flashinfer/decode_pretranspose", 1, 2.5), rec("flashinfer/decode_pretranspose", 256, 265.0)};  // report 2
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  const auto& s = sections[0];
  EXPECT_EQ(s.op, "decode");
  ASSERT_EQ(s.columns, (std::vector<std::string>{"fla/fused_recurrent", "flashinfer/decode_pretranspose"}));
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].best, 1);  // FlashInfer at B = 1
  EXPECT_NEAR(s.rows[0].ours_over_best, 3.0 / 2.5, 1e-12);
  EXPECT_EQ(s.rows[1].best, 1);
  EXPECT_NEAR(s.rows[1].ours_over_best, 250.0 / 265.0, 1e-12);
  EXPECT_EQ(s.peer_ahead, 1);
  const auto text = format_peer_table(ours, peers);
  // A peer's column is headed by its name over two lines; the fastest verified peer is marked.
  EXPECT_NE(text.find("decode_pretranspose"), std::string::npos) << text;
  EXPECT_EQ(text.find("flashinfer/decode_pretranspose us"), std::string::npos) << text;
  EXPECT_NE(text.find("2.50*"), std::string::npos) << text;
  EXPECT_NE(text.find("1.20x"), std::string::npos) << text;
  EXPECT_NE(text.find("a peer is faster on 1 of 2 points"), std::string::npos) << text;
}

TEST(PeerTable, OnlyVerifiedTimedPeerRecordsGiveNumbers) {
  const std::vector<CaseRecord> ours{rec("decode/fast", 32, 50.0)};
  const std::vector<CaseRecord> peers{rec("flashinfer/decode_pretranspose", 32, 10.0, CaseStatus::verify_failed),
                                      rec("flashinfer/decode", 32, 0.0, CaseStatus::skipped),
                                      rec("fla/fused_recurrent", 32, 60.0)};
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  const auto& row = sections[0].rows[0];
  ASSERT_GE(row.best, 0);
  EXPECT_EQ(sections[0].columns[row.best], "fla/fused_recurrent");  // the faster FAIL is no number
  EXPECT_NEAR(row.ours_over_best, 50.0 / 60.0, 1e-12);
  const auto md = format_peer_markdown(ours, peers);
  EXPECT_NE(md.find("| FAIL |"), std::string::npos) << md;
  EXPECT_NE(md.find("| skip |"), std::string::npos) << md;
  EXPECT_NE(md.find("**60.00**"), std::string::npos) << md;
}

TEST(PeerTable, MarkdownListsRowsWherePeersAreAheadFirst) {
  const std::vector<CaseRecord> ours{rec("decode/fast", 1, 10.0), rec("decode/fast", 2, 10.0),
                                     rec("decode/fast", 4, 10.0)};
  const std::vector<CaseRecord> peers{rec("flashinfer/decode_pretranspose", 1, 12.0),
                                      rec("flashinfer/decode_pretranspose", 2, 8.0),
                                      rec("flashinfer/decode_pretranspose", 4, 5.0)};
  const auto md = format_peer_markdown(ours, peers);
  const auto b4 = md.find("B=4 "), b2 = md.find("B=2 "), b1 = md.find("B=1 ");
  ASSERT_NE(b4, std::string::npos) << md;
  EXPECT_LT(b4, b2) << md;  // 2.00x before 1.25x
  EXPECT_LT(b2, b1) << md;  // then the rows where we are ahead
  EXPECT_NE(md.find("a peer is faster on 2 of 3 points"), std::string::npos) << md;
  EXPECT_NE(md.find("**2.00x**"), std::string::npos) << md;
}

TEST(PeerTable, AnotherDevicesNumbersAreNotCompared) {
  const std::vector<CaseRecord> ours{rec("decode/fast", 8, 10.0)};
  const std::vector<CaseRecord> peers{rec("fla/fused_recurrent", 8, 5.0, CaseStatus::ok, "NVIDIA H100 80GB HBM3")};
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  EXPECT_EQ(sections[0].rows[0].best, -1);
  EXPECT_EQ(sections[0].other_devices, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  EXPECT_NE(format_peer_table(ours, peers).find("another device"), std::string::npos);
}

TEST(PeerTable, RowsTimedOnTheHostStandBesideNoPeer) {
  CaseRecord cpu = rec("decode/cpu", 8, 900.0, CaseStatus::ok, "AMD EPYC");
  cpu.timer = "host";
  const std::vector<CaseRecord> ours{cpu, rec("decode/fast", 8, 10.0)};
  const std::vector<CaseRecord> peers{rec("fla/fused_recurrent", 8, 20.0)};
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  ASSERT_EQ(sections[0].rows.size(), 1u);
  EXPECT_EQ(sections[0].rows[0].ours->variant, "decode/fast");
  EXPECT_TRUE(sections[0].other_devices.empty());  // no warning about the CPU's "device"
}

TEST(PeerTable, FirstRecordOfAVariantWinsAndUnmatchedRowsAreLeftOut) {
  const std::vector<CaseRecord> ours{rec("decode/fast", 8, 10.0), rec("decode/fast", 16, 10.0)};
  const std::vector<CaseRecord> peers{rec("fla/fused_recurrent", 8, 20.0), rec("fla/fused_recurrent", 8, 1.0)};
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  ASSERT_EQ(sections[0].rows.size(), 1u);  // B = 16 has no peer record
  EXPECT_NEAR(sections[0].rows[0].best_s, 20e-6, 1e-15);
  EXPECT_NE(format_peer_table({}, peers).find("no shape of this run"), std::string::npos);
}

// Peer reports record each call's summed kernel time (scripts/peers: kernels_sum_median_s), which
// leaves out the host's gaps between a peer's kernels. The tables then also give the least one per
// row and ours over it, and count the rows where it is below ours; without sums, no such columns.
TEST(PeerTable, PeerKernelSumsBesideTheSpans) {
  const std::vector<CaseRecord> ours{rec("prefill/sm90", 1, 400.0), rec("prefill/sm90", 2, 100.0)};
  auto q1 = rec("flashqla/chunk", 1, 850.0), q2 = rec("flashqla/chunk", 2, 700.0);
  auto f1 = rec("fla/chunk", 1, 1250.0), f2 = rec("fla/chunk", 2, 90.0);
  q1.timing.kernels_sum_median_s = 410e-6, q2.timing.kernels_sum_median_s = 170e-6;
  f1.timing.kernels_sum_median_s = 930e-6;  // f2 has none
  const std::vector<CaseRecord> peers{q1, q2, f1, f2};
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  const auto& s = sections[0];
  EXPECT_TRUE(s.has_kernel_sums);
  EXPECT_NEAR(s.rows[0].best_kernels_s, 410e-6, 1e-15);
  EXPECT_NEAR(s.rows[0].ours_over_best_kernels, 400.0 / 410.0, 1e-12);
  EXPECT_NEAR(s.rows[1].best_kernels_s, 170e-6, 1e-15);  // a peer without a sum gives none
  EXPECT_EQ(s.peer_ahead, 1);          // FLA's 90 us span beats our 100 on row 2
  EXPECT_EQ(s.peer_ahead_kernels, 0);  // no peer's kernels are below ours
  const auto text = format_peer_table(ours, peers);
  EXPECT_NE(text.find("kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("410.00"), std::string::npos) << text;
  EXPECT_NE(text.find("0.98x"), std::string::npos) << text;
  EXPECT_NE(text.find("is below ours on 0 of 2 points"), std::string::npos) << text;
  const auto md = format_peer_markdown(ours, peers);
  EXPECT_NE(md.find("| peer kernels | ours / kernels |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 410.00 | 0.98x |"), std::string::npos) << md;
  // Without sums in any report: the table is as before.
  const std::vector<CaseRecord> plain{rec("flashqla/chunk", 1, 850.0)};
  EXPECT_FALSE(build_peer_sections(ours, plain)[0].has_kernel_sums);
  EXPECT_EQ(format_peer_table(ours, plain).find("kernels"), std::string::npos);
}

TEST(PeerTable, GeometricMeansAndOurRate) {
  auto o1 = rec("prefill/sm90", 1, 400.0), o2 = rec("prefill/sm90", 2, 100.0);
  for (auto* o : {&o1, &o2}) o->shape.op = OpKind::prefill, o->tflops = 250.4, o->tflops_fi = 99.6, o->roofline_pct = 27.44;
  o2.roofline_pct = kNaN;  // withheld: shown as "-"
  auto q1 = rec("flashqla/chunk", 1, 850.0), q2 = rec("flashqla/chunk", 2, 90.0);
  for (auto* q : {&q1, &q2}) q->shape.op = OpKind::prefill;
  o1.shape.seqlens = q1.shape.seqlens = {1024};  // a prefill row's key is its sequence lengths
  o2.shape.seqlens = q2.shape.seqlens = {2048};
  q1.timing.kernels_sum_median_s = 410e-6, q2.timing.kernels_sum_median_s = 50e-6;
  const std::vector<CaseRecord> ours{o1, o2}, peers{q1, q2};
  const auto s = build_peer_sections(ours, peers);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0].geomean_ours_over_best, std::sqrt(400.0 / 850.0 * 100.0 / 90.0), 1e-12);
  EXPECT_NEAR(s[0].geomean_ours_over_best_kernels, std::sqrt(400.0 / 410.0 * 100.0 / 50.0), 1e-12);
  const auto md = format_peer_markdown(ours, peers);
  EXPECT_NE(md.find("geometric mean 0.72x"), std::string::npos) << md;  // sqrt(0.4706 x 1.111)
  EXPECT_NE(md.find("geometric mean 1.40x"), std::string::npos) << md;  // sqrt(0.9756 x 2.0)
  EXPECT_NE(md.find("| ours rate | roof % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 250 / 100 TFLOP/s | 27.4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 250 / 100 TFLOP/s | - |"), std::string::npos) << md;
  EXPECT_NE(format_peer_table(ours, peers).find("geometric mean 0.72x"), std::string::npos);
  // Decode rows read in TB/s; no ratio at all gives no mean.
  auto d = rec("decode/fast", 8, 10.0);
  d.tbps = 2.345;
  const auto dmd = format_peer_markdown({d}, {rec("fla/fused_recurrent", 8, 0.0, CaseStatus::skipped)});
  EXPECT_NE(dmd.find("| 2.35 TB/s |"), std::string::npos) << dmd;
  EXPECT_NE(dmd.find("geometric mean -"), std::string::npos) << dmd;
}

// Each peer alone: ours / it over the rows it measured (span and kernel sums), how often it is
// faster, the worst row; a row of another device or without a verified number does not count.
TEST(PeerTable, PerPeerSummaries) {
  auto o1 = rec("prefill/sm90", 1, 400.0), o2 = rec("prefill/sm90", 2, 100.0), o3 = rec("prefill/sm90", 3, 50.0);
  auto a1 = rec("fla/chunk", 1, 800.0), a2 = rec("fla/chunk", 2, 200.0), a3 = rec("fla/chunk", 3, 0.0, CaseStatus::skipped);
  auto b1 = rec("flashinfer/chunk", 1, 300.0), b2 = rec("flashinfer/chunk", 2, 120.0),
       b3 = rec("flashinfer/chunk", 3, 10.0, CaseStatus::ok, "NVIDIA H100");
  int n = 0;
  for (auto* r : {&o1, &o2, &o3, &a1, &a2, &a3, &b1, &b2, &b3}) r->shape.op = OpKind::prefill, r->shape.seqlens = {1024 << (n++ % 3)};
  b1.timing.kernels_sum_median_s = 250e-6, b2.timing.kernels_sum_median_s = 80e-6;
  const std::vector<CaseRecord> ours{o1, o2, o3}, peers{a1, a2, a3, b1, b2, b3};
  const auto s = build_peer_sections(ours, peers);
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].per_peer.size(), 2u);
  const PeerSummary& fla = s[0].per_peer[0];
  EXPECT_EQ(fla.peer, "fla/chunk");
  EXPECT_EQ(fla.rows, 2);
  EXPECT_EQ(fla.ahead, 0);
  EXPECT_NEAR(fla.geomean_ours_over, 0.5, 1e-12);
  EXPECT_EQ(fla.rows_kernels, 0);
  const PeerSummary& fi = s[0].per_peer[1];
  EXPECT_EQ(fi.rows, 2);  // the H100 row is not compared
  EXPECT_EQ(fi.ahead, 1);
  EXPECT_NEAR(fi.geomean_ours_over, std::sqrt(400.0 / 300.0 * 100.0 / 120.0), 1e-12);
  EXPECT_EQ(fi.rows_kernels, 2);
  EXPECT_EQ(fi.ahead_kernels, 2);
  EXPECT_NEAR(fi.geomean_ours_over_kernels, std::sqrt(1.6 * 1.25), 1e-12);
  EXPECT_NEAR(fi.worst_ours_over_kernels, 1.6, 1e-12);
  const auto md = format_peer_markdown(ours, peers);
  EXPECT_NE(md.find("| peer | points | ours / peer (span) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fla/chunk | 2 | 0.50x | 0 | - | - | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("| flashinfer/chunk | 2 | 1.05x | 1 | 1.41x | 2 | 1.60x |"), std::string::npos) << md;
  const auto text = format_peer_table(ours, peers, 1000);  // wide: the summary line is not folded
  EXPECT_NE(text.find("flashinfer/chunk: ours / it 1.05x over 2 points, it is faster on 1; ours / its kernel sums 1.41x over 2 "
                      "points, below ours on 2, at most 1.60x"),
            std::string::npos)
      << text;
  // At 120 columns it folds, and no line is wider.
  const auto folded = format_peer_table(ours, peers, 120);
  for (std::size_t start = 0, end; (end = folded.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 120u) << folded.substr(start, end - start);
  EXPECT_NE(folded.find("at most 1.60x"), std::string::npos) << folded;
}

// Two of our variants at one point (decode/fast and decode/cuda_simple here, prefill/sm90 and
// prefill/sm75_legacy on a real sweep): both keep their rows, but the summaries count the point
// once, with ours its fastest variant, so a slow baseline cannot pull the geometric mean.
TEST(PeerTable, SummariesCountEachPointOnceWithOurFastestVariant) {
  const std::vector<CaseRecord> ours{rec("decode/fast", 1, 2.0), rec("decode/cuda_simple", 1, 20.0),
                                     rec("decode/fast", 256, 250.0), rec("decode/cuda_simple", 256, 900.0)};
  const std::vector<CaseRecord> peers{rec("fla/fused_recurrent", 1, 4.0), rec("fla/fused_recurrent", 256, 500.0)};
  const auto sections = build_peer_sections(ours, peers);
  ASSERT_EQ(sections.size(), 1u);
  const auto& s = sections[0];
  EXPECT_EQ(s.rows.size(), 4u);
  EXPECT_EQ(s.points, 2);
  EXPECT_EQ(s.peer_ahead, 0);  // cuda_simple's rows are slower than FLA, but fast's are not
  EXPECT_NEAR(s.geomean_ours_over_best, std::sqrt(0.5 * 0.5), 1e-12);
  ASSERT_EQ(s.per_peer.size(), 1u);
  EXPECT_EQ(s.per_peer[0].rows, 2);
  EXPECT_EQ(s.per_peer[0].ahead, 0);
  const auto text = format_peer_table(ours, peers);
  EXPECT_NE(text.find("a peer is faster on 0 of 2 points"), std::string::npos) << text;
}

}  // namespace
}  // namespace gdn
