// Repetitions in a record: how they join, and how they survive the JSON report (schema 2).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.h"
#include "report/report.h"
#include "timing/repetitions.h"

namespace gdn {
namespace {

Measurement measured(std::vector<double> samples, bool converged = true, const std::string& reason = "noise") {
  Measurement m;
  m.samples_s = samples;
  m.stats = compute_stats(samples);
  m.converged = converged;
  m.stop_reason = reason;
  m.wall_s = 0.5;
  return m;
}

TEST(Repetitions, JoinPoolsSamplesAndKeepsEachMedian) {
  Measurement total = measured({1, 1, 1, 1, 1, 1});
  EXPECT_EQ(repetition_count(total), 1u);
  ASSERT_EQ(repetition_stats(total).size(), 1u);  // a record of one repetition gives itself
  EXPECT_DOUBLE_EQ(repetition_stats(total)[0].median_s, 1.0);

  add_repetition(total, measured({2, 2, 2, 2, 2, 2}));
  add_repetition(total, measured({3, 3, 3, 3, 3, 3}, false, "timeout"));
  ASSERT_EQ(total.repetitions.size(), 3u);
  EXPECT_EQ(repetition_count(total), 3u);
  EXPECT_DOUBLE_EQ(total.repetitions[0].median_s, 1.0);
  EXPECT_DOUBLE_EQ(total.repetitions[1].median_s, 2.0);
  EXPECT_DOUBLE_EQ(total.repetitions[2].median_s, 3.0);
  EXPECT_EQ(total.repetitions[2].n, 6u);
  EXPECT_FALSE(total.repetitions[2].converged);
  EXPECT_EQ(total.samples_s.size(), 18u);
  EXPECT_EQ(total.stats.n, 18u);
  EXPECT_DOUBLE_EQ(total.stats.median, 2.0);
  EXPECT_FALSE(total.converged);  // one repetition stopped early
  EXPECT_EQ(total.stop_reason, "timeout");
  EXPECT_DOUBLE_EQ(total.wall_s, 1.5);
}

TEST(Repetitions, SpreadIsSlowestOverFastest) {
  Measurement m = measured({1, 1, 1});
  EXPECT_TRUE(std::isnan(repetition_spread(m)));  // one repetition: no spread
  add_repetition(m, measured({1.8, 1.8, 1.8}));
  add_repetition(m, measured({1.2, 1.2, 1.2}));
  EXPECT_NEAR(repetition_spread(m), 0.8, 1e-12);
}

CaseRecord timed_record() {
  CaseRecord r;
  r.case_name = "d";
  r.variant = "decode/cpu";
  r.shape.op = OpKind::decode;
  r.shape.batch = 2;
  r.mode = "cold";
  r.device = "host: test CPU";
  r.timed = true;
  r.timer = "host";
  r.timing = measured({1e-3, 1.1e-3, 0.9e-3, 1e-3, 1e-3});
  add_repetition(r.timing, measured({2e-3, 2e-3, 2e-3, 2e-3, 2e-3}));
  return r;
}

RunReport parse(const std::string& text) {
  std::istringstream in(text);
  return read_report(in, "mem.json");
}

TEST(Repetitions, SurviveTheReport) {
  RunReport r;
  r.complete = true;
  r.cases = {timed_record()};
  const auto j = to_json(r);
  EXPECT_EQ(j["schema_version"], 2);
  const auto& reps = j["cases"][0]["timing"]["repetitions"];
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_DOUBLE_EQ(reps[1]["median_s"].get<double>(), 2e-3);
  EXPECT_EQ(reps[1]["n"], 5);
  EXPECT_EQ(reps[1]["converged"], true);

  const RunReport back = parse(j.dump());
  ASSERT_EQ(back.cases[0].timing.repetitions.size(), 2u);
  EXPECT_DOUBLE_EQ(back.cases[0].timing.repetitions[0].median_s, 1e-3);
  EXPECT_DOUBLE_EQ(back.cases[0].timing.repetitions[1].noise, r.cases[0].timing.repetitions[1].noise);

  // One repetition writes no list (schema 1's shape of a record).
  RunReport once = r;
  once.cases[0].timing.repetitions.clear();
  EXPECT_FALSE(to_json(once)["cases"][0]["timing"].contains("repetitions"));
}

TEST(Repetitions, TablesShowCountAndSpread) {
  const CaseRecord r = timed_record();  // medians 1 and 2 ms
  const std::string t = format_tables({r}, false);
  EXPECT_NE(t.find("reps"), std::string::npos) << t;
  EXPECT_NE(t.find("2 (100%)"), std::string::npos) << t;
  CaseRecord once = r;
  once.timing.repetitions.clear();
  EXPECT_EQ(format_tables({once}, false).find("reps"), std::string::npos);  // no column without repetitions
}

TEST(Repetitions, SchemaOneReportsReadAsOneRepetition) {
  RunReport r;
  r.cases = {timed_record()};
  r.cases[0].timing.repetitions.clear();
  auto j = to_json(r);
  j["schema_version"] = 1;
  const RunReport back = parse(j.dump());
  EXPECT_EQ(repetition_count(back.cases[0].timing), 1u);
}

TEST(Repetitions, MalformedListsAreRefusedNamingThePath) {
  RunReport r;
  r.cases = {timed_record()};
  for (const auto& [field, value] : {std::pair{"n", nlohmann::json(-1)}, std::pair{"median_s", nlohmann::json("fast")},
                                     std::pair{"converged", nlohmann::json(1)}}) {
    auto j = to_json(r);
    j["cases"][0]["timing"]["repetitions"][1][field] = value;
    try {
      parse(j.dump());
      ADD_FAILURE() << field << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitBadInput);
      EXPECT_NE(std::string(e.what()).find(std::string("cases[0].timing.repetitions[1].") + field), std::string::npos)
          << e.what();
    }
  }
  auto j = to_json(r);
  j["cases"][0]["timing"]["repetitions"] = "many";
  EXPECT_THROW(parse(j.dump()), Error);
}

}  // namespace
}  // namespace gdn
