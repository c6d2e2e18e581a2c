// The dashboard's data: the reports in, one JSON document out that the page (page.js) draws. The
// page computes nothing a reader must trust: ratios, best peers, roofline inputs, heat-map cells
// and history statuses are decided here, by the code the `peers` and `compare` commands use.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "dashboard/dashboard_series.h"

namespace gdn {

// The FLOP convention the roofline and the rates use, as the page states it.
extern const char kDashboardFlopConvention[];

// The whole document: `reports` (the header), `ops` (ours against every peer per shape, with each
// op's summary), `roofline` (per device: its calibrated peaks and every timed record's point),
// `heatmap` (prefill: ours / best peer over heads x sequence sets) and `history`.
// Only the newest run of each series (dashboard_series.h) gives the tables, heat map and roofline.
nlohmann::json dashboard_data(const std::vector<DashboardReport>& reports);

}  // namespace gdn
