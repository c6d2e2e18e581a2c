// The dashboard as one self-contained HTML file: the data as JSON, Chart.js and the page's own
// script and style inlined, nothing fetched when it is viewed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gdn {

// Where Debian's libjs-chart.js keeps the browser build of Chart.js, newest layout first (4.x ships
// chart.umd.js, 3.x chart.min.js).
const std::vector<std::string>& chart_js_candidates();

// Chart.js' text: from `path` when given (a missing or unreadable file is bad input, exit 3), else
// from the first of chart_js_candidates() that exists; none found is runtime_error (exit 4) naming
// the paths tried and the package that provides them. Text that would end the inline <script>
// early ("</script") is refused.
std::string read_chart_js(const std::string& path);

// The page: `data` (dashboard_data.h) in a JSON script element, then Chart.js, then page.js.
std::string dashboard_html(const nlohmann::json& data, const std::string& chart_js, const std::string& title);

}  // namespace gdn
