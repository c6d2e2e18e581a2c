// A plain-text table with aligned columns, shared by the result tables and the compare table.
// Rows may be interleaved with free lines (stage breakdowns, notes) that do not set widths.
// Host-only (fmt); not for .cu files.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace gdn {

class TextTable {
 public:
  enum class Align { left, right };

  void column(std::string header, Align align = Align::left) {
    headers_.push_back(std::move(header));
    align_.push_back(align);
  }
  void row(std::vector<std::string> cells) {
    cells.resize(headers_.size());
    lines_.push_back({std::move(cells), {}});
  }
  // Printed as is between rows.
  void line(std::string text) { lines_.push_back({{}, std::move(text)}); }
  bool empty() const { return lines_.empty(); }

  std::string render(const std::string& indent = "") const {
    std::vector<std::size_t> width(headers_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
    for (const auto& l : lines_)
      for (std::size_t c = 0; c < l.cells.size(); ++c) width[c] = std::max(width[c], l.cells[c].size());

    std::string out;
    out += format_cells(headers_, width, indent);
    std::string rule;
    for (std::size_t c = 0; c < width.size(); ++c) rule += (c ? "  " : "") + std::string(width[c], '-');
    out += indent + rule + "\n";
    for (const auto& l : lines_) out += l.cells.empty() ? indent + l.text + "\n" : format_cells(l.cells, width, indent);
    return out;
  }

 private:
  struct Line {
    std::vector<std::string> cells;
    std::string text;
  };

  std::string format_cells(const std::vector<std::string>& cells, const std::vector<std::size_t>& width,
                           const std::string& indent) const {
    std::string s = indent;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c) s += "  ";
      s += align_[c] == Align::right ? pad + cells[c] : cells[c] + pad;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  }

  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<Line> lines_;
};

// A duration in the unit that keeps it readable: "368.12 us", "1.234 ms", "2.500 s"; "" for NaN.
inline std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "";
  if (std::fabs(s) < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (std::fabs(s) < 1.0) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

}  // namespace gdn
