// `gdnbench list` as a user sees it (the binary, run like tests/cpu/test_cli.cpp does): every
// line fits the width COLUMNS gives, a reason a variant cannot run here is printed once however
// many variants share it, and the knobs of the plan axis are shown.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "test_support.h"

namespace {

// `env` is a command prefix such as "COLUMNS=80" or "env -u COLUMNS".
std::string run_list(const std::string& env, const std::string& args) {
  const std::string cmd = env + " " + GDN_BINARY + " list" + args + " 2>&1";
  const gdn::test::ShellResult r = gdn::test::run_shell(cmd);
  EXPECT_EQ(r.code, 0) << cmd << "\n" << r.out;
  return r.out;
}

// Columns of a UTF-8 line: its code points (every character the descriptions use is one column).
std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

void expect_fits(const std::string& out, std::size_t width, const std::string& what) {
  std::istringstream lines(out);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count)
    EXPECT_LE(columns(line), width) << what << ": " << line;
  EXPECT_GT(count, 10) << what;
}

TEST(ListCommand, EveryLineFitsTheWidth) {
  for (const char* args : {"", " --all"}) {
    expect_fits(run_list("COLUMNS=120", args), 120, std::string("list") + args + " at 120");
    expect_fits(run_list("COLUMNS=80", args), 80, std::string("list") + args + " at 80");
  }
  // Off a terminal and without COLUMNS: 120.
  expect_fits(run_list("env -u COLUMNS", ""), 120, "list without COLUMNS");
}

TEST(ListCommand, ReasonsAreFoldedIntoNotesAndKnobsShown) {
  const std::string out = run_list("COLUMNS=120", " --all");
  std::istringstream lines(out);
  std::map<std::string, int> notes;
  for (std::string line; std::getline(lines, line);)
    if (line.find("] cannot run here: ") != std::string::npos) ++notes[line.substr(line.find(':'))];
  for (const auto& [text, n] : notes) EXPECT_EQ(n, 1) << "a reason printed " << n << " times: " << text;
  // A note exists exactly when some variant says "no [N]".
  EXPECT_EQ(notes.empty(), out.find(" no [1]") == std::string::npos) << out;
  EXPECT_NE(out.find("Knobs a config's plan axis sets"), std::string::npos) << out;
  EXPECT_NE(out.find("  decode/fast, mtp/fast\n"), std::string::npos) << out;
  for (const char* knob : {"    kernel ", "    depth ", "    tiles ", "    form ", "    read_only "})
    EXPECT_NE(out.find(knob), std::string::npos) << knob;
  EXPECT_NE(out.find("takes a plan"), std::string::npos);
}

}  // namespace
