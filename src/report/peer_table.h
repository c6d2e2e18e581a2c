// Ours against the peers' reports (scripts/peers: FLA, FlashInfer, FlashQLA), row by row: the
// same op, shape and mode, measured in one run on one device. A view of the records: one
// section per op, one column per peer variant that has a record for a row of it, the fastest
// verified peer and ours / best per row. Only verified (ok) and timed peer records give numbers.
#pragma once

#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

struct PeerRow {
  const CaseRecord* ours = nullptr;
  std::vector<const CaseRecord*> peers;  // one per section column; nullptr: no record
  int best = -1;                         // column of the fastest verified peer; -1: none
  double best_s = kNaN;
  double ours_over_best = kNaN;          // > 1: the best peer is faster than ours
  // The least summed kernel time of a verified peer (its report's kernels_sum_median_s: the host's
  // gaps between its kernels left out), and ours (whole span) over it; NaN where no peer has one.
  double best_kernels_s = kNaN;
  double ours_over_best_kernels = kNaN;
};

// Ours against one peer variant alone, over the rows where it has a verified number on our device.
struct PeerSummary {
  std::string peer;
  int rows = 0;
  int ahead = 0;                    // rows where its span is below ours
  double geomean_ours_over = kNaN;  // ours / its span
  int rows_kernels = 0;             // rows where it has a summed kernel time
  int ahead_kernels = 0;            // rows where that sum is below our span
  double geomean_ours_over_kernels = kNaN;
  double worst_ours_over_kernels = kNaN;  // the largest ours / its kernel sum
};

struct PeerSection {
  std::string op;
  std::vector<std::string> columns;  // peer variants, first-seen order
  std::vector<PeerRow> rows;         // ours in report order
  int points = 0;                    // distinct points: the summaries count each once, ours its fastest variant
  int compared = 0;                  // points where a verified peer has a number on our device
  int compared_kernels = 0;          // points where one has a summed kernel time
  int peer_ahead = 0;                // points where the best peer is faster than our fastest
  int peer_ahead_kernels = 0;        // points where a peer's summed kernel time is below ours
  bool has_kernel_sums = false;      // some peer record of the section has one
  // Geometric means of ours / best over the points that have one (NaN: none): the figure a "1.25x
  // faster than the best peer" target reads.
  double geomean_ours_over_best = kNaN;
  double geomean_ours_over_best_kernels = kNaN;
  std::vector<std::string> other_devices;  // peer records matched from another device (not comparable)
  std::vector<PeerSummary> per_peer;       // one per column, in column order
};

// peers: the cases of every peer report (several reports, or one report with several peers).
std::vector<PeerSection> build_peer_sections(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peers);

// The text tables, fitted to `width` columns: a peer's column is headed by its name in two lines
// ("flashinfer" over "chunk"), the fastest verified peer's time is marked '*', long shape keys are
// factored or labelled (report/shape_column.h) and the summary lines fold.
std::string format_peer_table(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peers,
                              std::size_t width = 120);
// The same rows as markdown, each section with the rows where a peer is faster first.
std::string format_peer_markdown(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peers);

}  // namespace gdn
