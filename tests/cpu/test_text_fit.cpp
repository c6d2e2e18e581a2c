// Text that fits a terminal: folded lines, a table whose last column folds, shape keys in their
// three forms (report/text_table.h, report/shape_column.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/shape_column.h"
#include "report/text_table.h"

namespace gdn {
namespace {

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0;
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    widest = std::max(widest, end - start);
  return widest;
}

const std::vector<std::string> kDecodeKeys{
    "h16/32 d128x128 B=1 state=f32 layout=vk pool=1 idx=identity gate=log",
    "h16/32 d128x128 B=8 state=f32 layout=vk pool=8 idx=identity gate=log",
    "h16/32 d128x128 B=8 state=bf16 layout=kv pool=8 idx=identity gate=log",
};

TextTable decode_table(const ShapeColumn& shapes) {
  TextTable t;
  t.column("variant");
  t.column("shape");
  t.column("flashinfer\ndecode_pretranspose", TextTable::Align::right);
  t.column("status");
  for (const auto& k : kDecodeKeys) t.row({"fast", shapes.cell(k), "12.34*", "ok (timeout) throttled"});
  return t;
}

TEST(Fold, WrapsAtSpacesWithAHangingIndent) {
  const auto lines = fold_lines("    error: the kernel launch failed with an unspecified launch failure", 34);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "    error: the kernel launch");
  EXPECT_EQ(lines[1], "      failed with an unspecified");
  EXPECT_EQ(lines[2], "      launch failure");
  // A word longer than a line is cut rather than left to overflow.
  for (const auto& l : fold_lines(std::string(70, 'x'), 30)) EXPECT_LE(l.size(), 30u);
  EXPECT_EQ(fold("short", 30), "short\n");
  EXPECT_EQ(fold(std::string(50, 'y'), 0), std::string(50, 'y') + "\n");  // width 0: as is
}

TEST(TextTableFit, TwoLineHeadersAndAFoldingLastColumn) {
  TextTable t;
  t.column("name");
  t.column("fla\nchunk", TextTable::Align::right);
  t.column("note");
  t.row({"a", "1.00", "a note long enough that it has to fold onto a second line"});
  t.line("    a free line that is also far too long for the width it is given here");
  const std::string out = t.render("", 40);
  EXPECT_LE(widest_line(out), 40u) << out;
  EXPECT_NE(out.find("fla"), std::string::npos) << out;
  EXPECT_NE(out.find("chunk"), std::string::npos) << out;
  EXPECT_NE(out.find("a note long enough"), std::string::npos) << out;
  EXPECT_NE(out.find("fold onto a second"), std::string::npos) << out;
  EXPECT_TRUE(t.fits("", 40));        // the note folds
  EXPECT_FALSE(t.fits("", 20));       // the first columns alone leave no room for it
  EXPECT_LE(widest_line(t.render()), 200u);
  EXPECT_NE(t.render().find("a note long enough that it has to fold onto a second line"), std::string::npos);
}

TEST(ShapeColumnFit, ThePlainestFormThatFitsWins) {
  // Wide enough: the whole keys.
  std::string wide = render_fitted(kDecodeKeys, "  ", 200, decode_table);
  EXPECT_NE(wide.find(kDecodeKeys[2]), std::string::npos) << wide;
  EXPECT_EQ(wide.find("every shape here"), std::string::npos) << wide;

  // Narrower: the parts every key shares go above the table.
  std::string factored = render_fitted(kDecodeKeys, "  ", 100, decode_table);
  EXPECT_LE(widest_line(factored), 100u) << factored;
  EXPECT_NE(factored.find("every shape here: h16/32 d128x128 idx=identity gate=log"), std::string::npos) << factored;
  EXPECT_NE(factored.find("B=8 state=bf16 layout=kv pool=8"), std::string::npos) << factored;
  EXPECT_EQ(factored.find("s1"), std::string::npos) << factored;

  // Narrower still: labels and a legend.
  std::string labelled = render_fitted(kDecodeKeys, "  ", 72, decode_table);
  EXPECT_LE(widest_line(labelled), 72u) << labelled;
  EXPECT_NE(labelled.find("  s3: B=8 state=bf16 layout=kv pool=8"), std::string::npos) << labelled;
  EXPECT_NE(labelled.find("fast     s1"), std::string::npos) << labelled;
}

TEST(ShapeColumnFit, OneShapeAndRepeatedShapes) {
  const std::vector<std::string> same{kDecodeKeys[0], kDecodeKeys[0]};
  const ShapeColumn factored(same, ShapeColumn::Form::factored);
  EXPECT_EQ(factored.cell(kDecodeKeys[0]), "-");  // all of it is above the table
  EXPECT_NE(factored.above("", 200).find(kDecodeKeys[0]), std::string::npos);
  const ShapeColumn labelled(kDecodeKeys, ShapeColumn::Form::labelled);
  EXPECT_EQ(labelled.cell(kDecodeKeys[1]), "s2");
  EXPECT_EQ(labelled.cell(kDecodeKeys[1]), labelled.cell(kDecodeKeys[1]));  // one label per distinct key
  const ShapeColumn full(kDecodeKeys, ShapeColumn::Form::full);
  EXPECT_EQ(full.cell(kDecodeKeys[1]), kDecodeKeys[1]);
  EXPECT_EQ(full.above("", 80), "");
  EXPECT_EQ(full.below("", 80), "");
}

}  // namespace
}  // namespace gdn
