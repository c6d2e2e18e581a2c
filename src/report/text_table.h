// A plain-text table with aligned columns, shared by the result, peer and compare tables.
// Rows may be interleaved with free lines (stage breakdowns, notes) that do not set widths.
// Rendered to a width, free lines fold at spaces and the last column folds onto continuation
// lines, so a note or a status never pushes a row past the terminal. A header may hold '\n':
// its column is as wide as its longest line ("flashinfer\nchunk").
// Host-only (fmt); not for .cu files.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace gdn {

// `text` cut into lines of at most `width` characters, at spaces where it can (a word longer
// than a line is cut). Continuation lines start with the text's own leading spaces plus `hang`.
inline std::vector<std::string> fold_lines(const std::string& text, std::size_t width, std::size_t hang = 2) {
  const std::size_t lead = std::min(text.find_first_not_of(' '), text.size());
  const std::string cont(lead + hang, ' ');
  std::vector<std::string> out;
  std::string line = text.substr(0, lead);
  bool line_has_word = false;
  std::size_t pos = lead;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    std::string word = text.substr(pos, end - pos);
    pos = std::min(text.find_first_not_of(' ', end), text.size());
    if (word.empty()) continue;
    while (true) {
      const std::size_t need = line.size() + (line_has_word ? 1 : 0) + word.size();
      if (need <= width || (!line_has_word && line.size() >= width)) {
        line += (line_has_word ? " " : "") + word;
        line_has_word = true;
        break;
      }
      if (!line_has_word) {  // a word longer than the room left on an empty line: cut it
        const std::size_t room = width - line.size();
        line += word.substr(0, room);
        word.erase(0, room);
      }
      out.push_back(line);
      line = cont, line_has_word = false;
    }
  }
  if (line_has_word || out.empty()) out.push_back(line);
  return out;
}

// The folded text as one string, each line ending in '\n'; width 0: as is.
inline std::string fold(const std::string& text, std::size_t width, std::size_t hang = 2) {
  if (width == 0 || text.size() <= width) return text + "\n";
  std::string out;
  for (const auto& l : fold_lines(text, width, hang)) out += l + "\n";
  return out;
}

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
  // Printed as is between rows (folded to the render width).
  void line(std::string text) { lines_.push_back({{}, std::move(text)}); }
  bool empty() const { return lines_.empty(); }

  // Whether the rows fit `max_width` with the last column folded to no less than kMinLastColumn.
  bool fits(const std::string& indent, std::size_t max_width) const {
    const auto w = widths();
    std::size_t total = indent.size();
    for (std::size_t c = 0; c < w.size(); ++c) total += (c ? kGap : 0) + (c + 1 == w.size() ? std::min(w[c], kMinLastColumn) : w[c]);
    return total <= max_width;
  }

  // max_width 0: no limit.
  std::string render(const std::string& indent = "", std::size_t max_width = 0) const {
    std::vector<std::size_t> width = widths();
    if (max_width && !width.empty()) {
      // The last column takes the room the others leave, but never less than kMinLastColumn.
      std::size_t before = indent.size();
      for (std::size_t c = 0; c + 1 < width.size(); ++c) before += width[c] + kGap;
      const std::size_t room = max_width > before ? max_width - before : 0;
      width.back() = std::min(width.back(), std::max(room, kMinLastColumn));
    }
    std::string out;
    std::size_t header_lines = 1;
    for (const auto& h : headers_) header_lines = std::max(header_lines, split(h).size());
    for (std::size_t i = 0; i < header_lines; ++i) {
      std::vector<std::string> cells;
      for (const auto& h : headers_) {
        auto parts = split(h);
        // Short headers sit on the last header line, next to the others' last parts.
        const std::size_t skip = header_lines - parts.size();
        cells.push_back(i < skip ? "" : parts[i - skip]);
      }
      out += format_cells(cells, width, indent);
    }
    std::string rule;
    for (std::size_t c = 0; c < width.size(); ++c) rule += (c ? std::string(kGap, ' ') : "") + std::string(width[c], '-');
    out += indent + rule + "\n";
    for (const auto& l : lines_) {
      if (l.cells.empty()) {
        out += fold(indent + l.text, max_width);
        continue;
      }
      out += format_cells(l.cells, width, indent);
    }
    return out;
  }

 private:
  static constexpr std::size_t kGap = 2;
  static constexpr std::size_t kMinLastColumn = 16;

  struct Line {
    std::vector<std::string> cells;
    std::string text;
  };

  static std::vector<std::string> split(const std::string& header) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t nl; (nl = header.find('\n', start)) != std::string::npos; start = nl + 1)
      parts.push_back(header.substr(start, nl - start));
    parts.push_back(header.substr(start));
    return parts;
  }

  std::vector<std::size_t> widths() const {
    std::vector<std::size_t> width(headers_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c)
      for (const auto& part : split(headers_[c])) width[c] = std::max(width[c], part.size());
    for (const auto& l : lines_)
      for (std::size_t c = 0; c < l.cells.size(); ++c) width[c] = std::max(width[c], l.cells[c].size());
    return width;
  }

  // One row; a last cell wider than its column continues on lines of its own under it.
  std::string format_cells(const std::vector<std::string>& cells, const std::vector<std::size_t>& width,
                           const std::string& indent) const {
    std::vector<std::string> last{cells.empty() ? "" : cells.back()};
    if (!cells.empty() && cells.back().size() > width.back()) last = fold_lines(cells.back(), width.back(), 1);
    std::string out;
    for (std::size_t i = 0; i < last.size(); ++i) {
      std::string s = indent;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const std::string& cell = c + 1 == cells.size() ? last[i] : (i ? std::string() : cells[c]);
        const std::string pad(width[c] > cell.size() ? width[c] - cell.size() : 0, ' ');
        if (c) s += std::string(kGap, ' ');
        s += align_[c] == Align::right ? pad + cell : cell + pad;
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
      out += s + "\n";
    }
    return out;
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
