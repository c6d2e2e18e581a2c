// The dashboard's data side without a browser: which reports are series and which run is shown,
// the rows, ratios and marks per op, the heat map, the history's compare statuses, and the page's
// assembly (JSON that cannot end its script element, Chart.js found or refused).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "compare/compare.h"
#include "core/errors.h"
#include "dashboard/dashboard_data.h"
#include "dashboard/dashboard_page.h"

namespace gdn {
extern const char kDashboardPageJs[];
namespace {

using json = nlohmann::json;

std::string fixture(const std::string& name) { return std::string(GDN_SOURCE_DIR) + "/tests/data/reports/" + name; }

DashboardReport loaded(const std::string& name) { return {name, load_report(fixture(name))}; }

// ours.json, then new.json (a later run of the same config), then the peers.
std::vector<DashboardReport> fixture_reports() { return {loaded("ours.json"), loaded("new.json"), loaded("peers.json")}; }

const json& op_of(const json& data, const std::string& op) {
  for (const auto& o : data.at("ops"))
    if (o.at("op") == op) return o;
  throw std::runtime_error("no op " + op);
}

const CaseRecord& find_case(const RunReport& r, const std::string& variant, const std::string& shape_part) {
  for (const auto& c : r.cases)
    if (c.variant == variant && c.shape_key().find(shape_part) != std::string::npos) return c;
  throw std::runtime_error("no case " + variant + " " + shape_part);
}

TEST(Dashboard, OursAndPeersAreToldApartByTheVariantsName) {
  CaseRecord r;
  r.shape.op = OpKind::decode;
  r.variant = "decode/fast";
  EXPECT_TRUE(is_ours(r));
  r.variant = "flashinfer/decode";
  EXPECT_FALSE(is_ours(r));
  const auto reports = fixture_reports();
  EXPECT_EQ(report_source(reports[0].report), "gdnbench");
  EXPECT_EQ(report_source(reports[2].report), "fla+flashinfer+flashqla");
  EXPECT_EQ(report_device(reports[0].report), "NVIDIA H200");
}

TEST(Dashboard, SeriesGroupSourceConfigAndDeviceOldestFirst) {
  auto reports = fixture_reports();
  // Given newest first: the series still runs oldest first.
  reports[0].report.started_at = "2026-11-23T00:00:00Z";
  reports[1].report.started_at = "2026-11-22T00:00:00Z";
  auto series = group_series(reports);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].source, "gdnbench");
  EXPECT_EQ(series[0].runs, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(series[1].source, "fla+flashinfer+flashqla");
  // Another device or config is another series.
  reports[1].report.devices.front().name = "NVIDIA H100";
  EXPECT_EQ(group_series(reports).size(), 3u);
  reports[1].report.devices.front().name = "NVIDIA H200";
  reports[1].report.config_hash = "0000000000000000";
  EXPECT_EQ(group_series(reports).size(), 3u);
}

TEST(Dashboard, TablesShowTheNewestRunWithEveryPeerAndTheBestPeersRatio) {
  const auto reports = fixture_reports();
  const json data = dashboard_data(reports);
  ASSERT_EQ(data.at("ops").size(), 3u);
  EXPECT_EQ(data.at("ops")[0].at("op"), "prefill");  // prefill, decode, mtp
  const RunReport& newest = reports[1].report;
  for (const char* op : {"prefill", "decode", "mtp"}) {
    std::size_t want = 0;
    for (const auto& c : newest.cases) want += c.op() == op;
    EXPECT_EQ(op_of(data, op).at("rows").size(), want) << op;
  }
  const json& prefill = op_of(data, "prefill");
  EXPECT_EQ(prefill.at("columns"), (json{"fla/chunk", "flashinfer/chunk", "flashqla/chunk"}));
  // 16/32 at 1x8192: ours 448 us; FLA 640, FlashInfer 432, FlashQLA 388 -> FlashQLA is best.
  const json* row = nullptr;
  for (const auto& r : prefill.at("rows"))
    if (r.at("heads") == "16/32" && r.at("seqs") == "1x8192") row = &r;
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->at("best").get<int>(), 2);
  EXPECT_NEAR(row->at("ratio").get<double>(), 448.0 / 388.0, 1e-9);
  EXPECT_NEAR(row->at("peers")[0].at("t").get<double>(), 640e-6, 1e-12);
  EXPECT_EQ(row->at("report"), 1);  // from new.json
  EXPECT_TRUE(row->at("fastest").get<bool>());
  EXPECT_FALSE(row->at("rate").at("bandwidth_bound").get<bool>());
}

TEST(Dashboard, FailedVerificationAndSkipsAreMarkedWithTheirReasons) {
  const json data = dashboard_data(fixture_reports());
  const json& decode = op_of(data, "decode");
  int failed = 0;
  for (const auto& r : decode.at("rows"))
    if (r.at("status") == "verify_failed") {
      ++failed;
      EXPECT_EQ(r.at("variant"), "decode/fast");
      EXPECT_TRUE(r.at("t").is_null());
      EXPECT_TRUE(r.at("ratio").is_null());
      EXPECT_NE(r.at("why").get<std::string>().find("verify_failed"), std::string::npos) << r.at("why");
    }
  EXPECT_EQ(failed, 1);
  // A skipped peer: no number, its status and reason.
  const auto& columns = decode.at("columns");
  const auto col = std::find(columns.begin(), columns.end(), "flashinfer/decode") - columns.begin();
  int skipped = 0;
  for (const auto& r : decode.at("rows")) {
    const auto& cell = r.at("peers")[col];
    if (cell.is_null() || cell.at("status") != "skipped") continue;
    ++skipped;
    EXPECT_TRUE(cell.at("t").is_null());
    EXPECT_EQ(cell.at("why").get<std::string>().rfind("skipped: ", 0), 0u) << cell.at("why");
  }
  EXPECT_GT(skipped, 0);
  // A peer's failed verification never gives the best number.
  const auto fi_pt = std::find(columns.begin(), columns.end(), "flashinfer/decode_pretranspose") - columns.begin();
  for (const auto& r : decode.at("rows")) {
    const auto& cell = r.at("peers")[fi_pt];
    if (!cell.is_null() && cell.at("status") == "verify_failed") EXPECT_NE(r.at("best").get<int>(), int(fi_pt));
  }
}

TEST(Dashboard, RowsTimedOnTheHostAreNotComparedWithGpuPeers) {
  const json data = dashboard_data(fixture_reports());
  for (const auto& r : op_of(data, "decode").at("rows")) {
    if (r.at("variant") != "decode/cpu") continue;
    EXPECT_TRUE(r.at("ratio").is_null());
    for (const auto& cell : r.at("peers"))
      if (!cell.is_null() && cell.at("status") == "ok") EXPECT_TRUE(cell.at("t").is_null());
  }
}

TEST(Dashboard, HeatMapIsTheGeometricMeanOfOurFastestOverTheBestPeerPerCell) {
  auto reports = fixture_reports();
  const json data = dashboard_data(reports);
  const json& heat = data.at("heatmap");
  EXPECT_EQ(heat.at("heads"), (json{"8/16", "16/32"}));
  bool found = false;
  for (const auto& c : heat.at("cells"))
    if (c.at("heads") == "16/32" && c.at("seqs") == "1x8192") {
      found = true;
      EXPECT_NEAR(c.at("ratio").get<double>(), 448.0 / 388.0, 1e-9);
      EXPECT_EQ(c.at("points"), 1);
    }
  EXPECT_TRUE(found);
}

TEST(Dashboard, RooflinePointsCarryIntensityAndTheDevicesPeaks) {
  const json data = dashboard_data(fixture_reports());
  const json* h200 = nullptr;
  for (const auto& d : data.at("roofline"))
    if (d.at("device") == "NVIDIA H200") h200 = &d;
  ASSERT_NE(h200, nullptr);
  EXPECT_GT(h200->at("peaks").at("bf16_mma").get<double>(), 1e14);
  EXPECT_GT(h200->at("peaks").at("copy_bandwidth").get<double>(), 1e12);
  bool ours = false, peer = false;
  for (const auto& p : h200->at("points")) {
    EXPECT_GT(p.at("ai").get<double>(), 0);
    EXPECT_GT(p.at("tflops").get<double>(), 0);
    (p.at("ours").get<bool>() ? ours : peer) = true;
  }
  EXPECT_TRUE(ours && peer);
  EXPECT_NE(data.at("flop_convention").get<std::string>().find("6*B*T*HV*K*V"), std::string::npos);
}

TEST(Dashboard, HistoryJudgesEachRunAgainstThePreviousAsCompareDoes) {
  const auto reports = fixture_reports();
  const json data = dashboard_data(reports);
  ASSERT_EQ(data.at("history").size(), 1u);
  const json& h = data.at("history")[0];
  EXPECT_EQ(h.at("runs").size(), 2u);
  const CompareResult cmp = compare_reports(reports[0].report, reports[1].report, CompareOptions{});
  int slower = 0, failed = 0;
  for (const auto& row : cmp.rows) {
    slower += row.status == CompareStatus::slower;
    failed += row.status == CompareStatus::failed_verification;
  }
  ASSERT_GT(slower, 0);
  int flagged_slower = 0, flagged_failed = 0;
  for (const auto& g : h.at("regressions")) {
    flagged_slower += g.at("status") == "slower";
    flagged_failed += g.at("status") == "failed-verification";
    EXPECT_EQ(g.at("from"), 0);
    EXPECT_EQ(g.at("to"), 1);
  }
  EXPECT_EQ(flagged_slower, slower);
  EXPECT_EQ(flagged_failed, failed);
  // Each line has a point per run; the slower row's second point says so.
  for (const auto& row : cmp.rows) {
    if (row.status != CompareStatus::slower) continue;
    bool seen = false;
    for (const auto& l : h.at("lines"))
      if (l.at("variant") == row.variant && l.at("shape") == row.shape_key && l.at("device") == row.device) {
        seen = true;
        EXPECT_EQ(l.at("t").size(), 2u);
        EXPECT_EQ(l.at("status")[1], "slower");
        EXPECT_NEAR(l.at("t")[1].get<double>(), row.new_s, 1e-15);
      }
    EXPECT_TRUE(seen) << row.variant << " " << row.shape_key;
  }
  // One run alone has no history.
  EXPECT_TRUE(dashboard_data({loaded("ours.json"), loaded("peers.json")}).at("history").empty());
}

TEST(Dashboard, ANewerPeerRunTakesTheNumber) {
  auto reports = fixture_reports();
  DashboardReport newer = loaded("peers.json");
  newer.path = "peers-newer.json";
  newer.report.started_at = "2030-01-01T00:00:00Z";
  for (auto& c : newer.report.cases) c.timing.stats.median *= 2;
  reports.push_back(newer);
  const json data = dashboard_data(reports);
  const json& prefill = op_of(data, "prefill");
  for (const auto& r : prefill.at("rows"))
    if (r.at("heads") == "16/32" && r.at("seqs") == "1x8192") EXPECT_NEAR(r.at("peers")[0].at("t").get<double>(), 1280e-6, 1e-12);
  int current = 0;
  for (const auto& r : data.at("reports")) current += r.at("current").get<bool>();
  EXPECT_EQ(current, 2);  // new.json and the newer peer run
}

TEST(DashboardPage, DataCannotEndItsScriptElement) {
  json data = {{"reason", "skipped: </script><script>alert(1)</script>"}};
  const std::string page = dashboard_html(data, "/* Chart */", "t <&> \"x\"");
  const auto start = page.find("<script id=\"gdn-data\" type=\"application/json\">");
  ASSERT_NE(start, std::string::npos);
  const auto end = page.find("</script>", start);
  const std::string inside = page.substr(start, end - start);
  EXPECT_EQ(inside.find("</"), std::string::npos) << inside;
  EXPECT_NE(inside.find("<\\/script>"), std::string::npos);
  const auto body = inside.substr(inside.find('>') + 1);
  EXPECT_EQ(json::parse(body), data);  // "\/" reads back as "/"
  EXPECT_NE(page.find("<title>t &lt;&amp;&gt; &quot;x&quot;</title>"), std::string::npos);
  EXPECT_NE(page.find("/* Chart */"), std::string::npos);
  EXPECT_EQ(std::string(kDashboardPageJs).find("</script"), std::string::npos);
  EXPECT_NE(page.find(kDashboardPageJs), std::string::npos);
}

TEST(DashboardPage, ChartJsIsReadOrRefusedWithTheReason) {
  const auto dir = std::filesystem::temp_directory_path() / ("gdn_dash_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  try {
    read_chart_js((dir / "absent.js").string());
    ADD_FAILURE() << "a missing --chart-js file was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("absent.js"), std::string::npos);
  }
  std::ofstream(dir / "bad.js") << "var Chart = 1; // </script>";
  EXPECT_THROW(read_chart_js((dir / "bad.js").string()), Error);
  std::ofstream(dir / "ok.js") << "var Chart = 1;";
  EXPECT_EQ(read_chart_js((dir / "ok.js").string()), "var Chart = 1;");
  for (const auto& p : chart_js_candidates()) EXPECT_EQ(p.rfind("/usr/share/javascript/chart.js/", 0), 0u) << p;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gdn
