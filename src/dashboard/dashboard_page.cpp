#include "dashboard/dashboard_page.h"

#include <sys/stat.h>

#include <cstddef>

#include "core/bounded_file.h"
#include "core/errors.h"

namespace gdn {

// The page's own script and style (src/dashboard/page.js, page.css), compiled in at build time.
extern const char kDashboardPageJs[];
extern const char kDashboardPageCss[];

namespace {

bool regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Chart.js' browser build is about 200 KB; a file many times that is not it.
constexpr std::size_t kMaxChartJsBytes = std::size_t(16) << 20;

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON inside <script type="application/json">: "</" could close the element, so '/' after '<' is
// written as the JSON escape "\/", which reads back the same.
std::string script_safe_json(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

bool closes_script(const std::string& text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 2)) {
    std::string tag = text.substr(at + 2, 6);
    for (auto& c : tag) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (tag == "script") return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& chart_js_candidates() {
  static const std::vector<std::string> paths{"/usr/share/javascript/chart.js/chart.umd.js",
                                              "/usr/share/javascript/chart.js/chart.min.js",
                                              "/usr/share/javascript/chart.js/chart.js"};
  return paths;
}

std::string read_chart_js(const std::string& path) {
  std::string from = path;
  if (from.empty()) {
    for (const auto& p : chart_js_candidates())
      if (regular_file(p)) {
        from = p;
        break;
      }
    if (from.empty()) {
      std::string tried;
      for (const auto& p : chart_js_candidates()) tried += (tried.empty() ? "" : ", ") + p;
      throw runtime_error("Chart.js not found (tried " + tried +
                          "); install Debian's libjs-chart.js (scripts/install-deps.sh does) or give --chart-js FILE");
    }
  }
  // A user's file is read as every named file is (core/bounded_file.h): regular files only, bounded.
  std::string text = read_bounded_file(from, "--chart-js file", kMaxChartJsBytes);
  if (text.size() > kMaxChartJsBytes) throw input_error("--chart-js: '" + from + "' is larger than Chart.js can be");
  if (text.find("Chart") == std::string::npos) throw input_error("--chart-js: '" + from + "' does not look like Chart.js");
  if (closes_script(text)) throw input_error("Chart.js from '" + from + "' contains '</script', which cannot be inlined");
  return text;
}

std::string dashboard_html(const nlohmann::json& data, const std::string& chart_js, const std::string& title) {
  std::string page;
  page.reserve(chart_js.size() + 1024 * 1024);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>" + html_escape(title) + "</title>\n<style>\n";
  page += kDashboardPageCss;
  page += "</style>\n</head>\n<body>\n<h1>" + html_escape(title) + "</h1>\n";
  page += "<noscript>This page draws its tables and charts with JavaScript; enable it to see them.</noscript>\n";
  page += "<div id=\"app\"></div>\n<script id=\"gdn-data\" type=\"application/json\">";
  page += script_safe_json(data);
  page += "</script>\n<script>\n";
  page += chart_js;
  page += "\n</script>\n<script>\n";
  page += kDashboardPageJs;
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace gdn
