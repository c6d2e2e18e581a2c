// Shape keys in a table that has to fit a width. Three forms; the plainest whose rows fit wins:
//   full      every row shows its whole key;
//   factored  the parts every key shares move to one line above the table, rows show the rest;
//   labelled  as factored, and each distinct rest becomes a short label (s1, s2, ...) explained
//             once in a legend under the table.
// Keys are the space-separated parts of Shape::key(), so a part is never cut in two.
// Host-only (fmt); not for .cu files.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/text_table.h"

namespace gdn {

class ShapeColumn {
 public:
  enum class Form { full, factored, labelled };

  ShapeColumn(const std::vector<std::string>& keys, Form form) : form_(form) {
    if (form_ == Form::full) return;
    std::vector<std::string> first = parts(keys.empty() ? std::string() : keys.front());
    for (const auto& part : first)
      if (std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return has_part(k, part); }))
        common_.push_back(part);
    for (const auto& k : keys) {
      const std::string rest = remainder(k);
      if (form_ == Form::labelled && !rest.empty() && !labels_.count(rest)) {
        labels_[rest] = fmt::format("s{}", legend_.size() + 1);
        legend_.push_back(rest);
      }
    }
  }

  Form form() const { return form_; }

  std::string cell(const std::string& key) const {
    if (form_ == Form::full) return key;
    const std::string rest = remainder(key);
    if (rest.empty()) return "-";
    return form_ == Form::labelled ? labels_.at(rest) : rest;
  }

  // The line above the table: the parts every row shares ("" in the full form or when none).
  std::string above(const std::string& indent, std::size_t width) const {
    if (form_ == Form::full || common_.empty()) return "";
    return fold(indent + "every shape here: " + join(common_), width);
  }

  // The legend under the table ("" unless labelled).
  std::string below(const std::string& indent, std::size_t width) const {
    std::string out;
    for (std::size_t i = 0; i < legend_.size(); ++i) out += fold(fmt::format("{}s{}: {}", indent, i + 1, legend_[i]), width, 4);
    return out;
  }

 private:
  static std::vector<std::string> parts(const std::string& key) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < key.size()) {
      const std::size_t end = std::min(key.find(' ', start), key.size());
      if (end > start) out.push_back(key.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }
  static bool has_part(const std::string& key, const std::string& part) {
    const auto p = parts(key);
    return std::find(p.begin(), p.end(), part) != p.end();
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
    return out;
  }
  std::string remainder(const std::string& key) const {
    std::vector<std::string> rest;
    for (const auto& part : parts(key))
      if (std::find(common_.begin(), common_.end(), part) == common_.end()) rest.push_back(part);
    return join(rest);
  }

  Form form_;
  std::vector<std::string> common_;
  std::map<std::string, std::string> labels_;  // rest -> label
  std::vector<std::string> legend_;            // rests in label order
};

// The plainest form in which the table build(shapes) makes fits `width`; none when even the
// labelled form does not (its other columns are too wide).
template <class Build>
std::optional<ShapeColumn::Form> fitting_form(const std::vector<std::string>& keys, const std::string& indent,
                                              std::size_t width, Build build) {
  for (auto form : {ShapeColumn::Form::full, ShapeColumn::Form::factored, ShapeColumn::Form::labelled})
    if (build(ShapeColumn(keys, form)).fits(indent, width)) return form;
  return std::nullopt;
}

// That table with its shape lines, in the plainest form that fits (the labelled form when none
// does: a row then runs past `width`, but no further than it must).
template <class Build>
std::string render_fitted(const std::vector<std::string>& keys, const std::string& indent, std::size_t width,
                          Build build) {
  const ShapeColumn shapes(keys, fitting_form(keys, indent, width, build).value_or(ShapeColumn::Form::labelled));
  return shapes.above(indent, width) + build(shapes).render(indent, width) + shapes.below(indent, width);
}

}  // namespace gdn
