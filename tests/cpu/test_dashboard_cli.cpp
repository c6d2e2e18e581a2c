// `gdnbench dashboard` as a user meets it: a page from good reports, and for a malformed report, a
// report of another schema, a report given twice or an output over an input, exit 3 naming the
// file and no page written (an old page stays as it was). A stand-in Chart.js (--chart-js) keeps
// these tests free of the libjs-chart.js package; the browser test uses the real one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"

namespace {

using Result = gdn::test::ShellResult;

// `gdnbench dashboard ARGS`, run in `cwd` when given (the shell expands globs there).
Result run(const std::string& args, const std::string& cwd = "") {
  const std::string cmd =
      (cwd.empty() ? "" : "cd '" + cwd + "' && ") + std::string(GDN_PRODUCT_BINARY) + " dashboard " + args + " 2>&1";
  return gdn::test::run_shell(cmd);
}

class DashboardCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gdn_dash_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    write("chart.js", "/* stand-in Chart */ window.Chart = function () {};");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path(name));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string chart() const { return " --chart-js " + path("chart.js"); }
  static std::string fixture(const std::string& name) { return std::string(GDN_SOURCE_DIR) + "/tests/data/reports/" + name; }
  std::filesystem::path dir_;
};

TEST_F(DashboardCli, WritesOnePageFromReports) {
  auto r = run(fixture("ours.json") + " " + fixture("new.json") + " " + fixture("peers.json") + " -o " + path("d.html") + chart());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 reports, 79 records"), std::string::npos) << r.out;
  const std::string page = read("d.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("stand-in Chart"), std::string::npos);
  EXPECT_NE(page.find("\"flashqla/chunk\""), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);  // nothing to fetch when viewed
  EXPECT_EQ(page.find("https://"), std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(dir_))  // no temp file left behind
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(DashboardCli, BadReportsExitThreeNamingTheFileAndWriteNothing) {
  write("old.html", "the previous page");
  const std::string good = fixture("ours.json");
  struct Bad {
    const char* name;
    std::string text;
    const char* says;
  };
  const Bad bad[] = {
      {"truncated.json", "{\"schema_version\": 1, \"cases\": [", "truncated.json"},
      {"gbench.json", "{\"context\": {}, \"benchmarks\": []}", "not a gdnbench report"},
      {"newer.json", "{\"schema_version\": 3, \"cases\": []}", "newer than this gdnbench reads"},
      {"badcase.json", "{\"schema_version\": 1, \"cases\": [{\"variant\": \"decode/fast\"}]}", "badcase.json"},
  };
  for (const auto& b : bad) {
    const std::string file = write(b.name, b.text);
    auto r = run(good + " " + file + " -o " + path("old.html") + chart());
    EXPECT_EQ(r.code, 3) << b.name << "\n" << r.out;
    EXPECT_NE(r.out.find(b.name), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(b.says), std::string::npos) << r.out;
    EXPECT_EQ(read("old.html"), "the previous page") << b.name;
    r = run(file + " -o " + path("new.html") + chart());
    EXPECT_EQ(r.code, 3) << r.out;
    EXPECT_FALSE(std::filesystem::exists(path("new.html"))) << b.name;
  }
}

TEST_F(DashboardCli, ARepeatedReportOrAnOutputOverAnInputIsRefused) {
  std::filesystem::copy_file(fixture("ours.json"), path("a.json"));
  std::filesystem::create_symlink(path("a.json"), path("link.json"));
  auto r = run(path("a.json") + " " + path("link.json") + " -o " + path("d.html") + chart());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("given twice"), std::string::npos) << r.out;
  r = run(path("a.json") + " -o " + path("a.json") + chart());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("destroy an input"), std::string::npos) << r.out;
  r = run(path("a.json") + " -o " + path("d.html") + " --chart-js " + path("absent.js"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("absent.js"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(path("d.html")));
  r = run("");
  EXPECT_EQ(r.code, 3) << r.out;  // at least one report
}

// The page with Chart.js left out (the text between the data's script element and page.js'):
// what the committed page must share with one made now from the committed reports, whichever
// Chart.js this machine has.
std::string without_chart_js(const std::string& page) {
  const std::string open = "</script>\n<script>\n", close = "\n</script>\n<script>\n";
  const auto from = page.find(open);
  const auto to = from == std::string::npos ? from : page.find(close, from + open.size());
  return to == std::string::npos ? page : page.substr(0, from + open.size()) + page.substr(to);
}

// The results page (README) is made from the committed reports by one command; it is not committed
// itself, since it inlines Chart.js. Every committed report must read, and the page must name each.
TEST_F(DashboardCli, ResultsPageIsMadeFromEveryCommittedReport) {
  const std::string root = GDN_SOURCE_DIR;
  auto r = run("results/*/*.json -o " + path("results.html") + " --title 'gdnbench results'" + chart(), root);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = read("results.html");
  int reports = 0;
  for (const auto& gpu : std::filesystem::directory_iterator(root + "/results")) {
    if (!gpu.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(gpu.path())) {
      if (f.path().extension() != ".json") continue;
      ++reports;
      EXPECT_NE(page.find(f.path().filename().string()), std::string::npos) << f.path() << " is not on the page";
    }
  }
  EXPECT_GT(reports, 0);
}

}  // namespace
