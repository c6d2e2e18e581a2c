// The free-memory check of a CPU case holds what the case really takes: the host footprint the
// skip rule uses (Problem::footprint with Backend::cpu) against the peak RSS a `run` of that one
// case reaches, over the three ops and several sizes, less the RSS of the same op at a tiny size
// (the program, its workers and buffers). The estimate must be within 1.5x of the measured peak
// either way: under it a case that passes the check can be killed for lack of memory; far over
// it a case that fits is skipped.
#include <gtest/gtest.h>

#include <string>

#include "bounded_child.h"
#include "config/config.h"
#include "run/problem.h"
#include "test_support.h"

namespace gdn {
namespace {

struct Sized {
  std::string name;
  std::string keys;  // the case's YAML keys besides op, variant and heads
};

double peak_of_run(const test::Scratch& dir, const std::string& op, const std::string& heads, const std::string& head_dim,
                   const std::string& keys, Shape* shape) {
  const std::string text = "cases:\n  - name: m\n    op: " + op + "\n    variant: \"" + op + "/cpu\"\n    heads: " + heads +
                           "\n    head_dim: " + head_dim + "\n" + keys;
  const auto config = dir.put(op + ".yaml", text);
  if (shape) *shape = load_config(config).cases.at(0).shapes.at(0);
  auto r = test::gdnbench({"run", "--quiet", "--config", config, "--mode", "hot", "--threads", "2", "--min-samples", "3",
                           "--max-samples", "3", "--host-timeout", "1"},
                          300);
  EXPECT_EQ(r.code, 0) << text << r.out;
  return r.peak_mib * double(1 << 20);
}

void expect_honest(const std::string& op, const std::vector<Sized>& sizes) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's shadow memory and quarantine are not the program's own use";
#endif
  test::Scratch dir("memory_" + op);
  const double base = peak_of_run(dir, op, "[2, 4]", "32", sizes.front().keys, nullptr);
  for (const auto& s : sizes) {
    Shape shape;
    const double peak = peak_of_run(dir, op, "[8, 16]", "128", s.keys, &shape);
    const double est = double(Problem::footprint(shape, Backend::cpu));
    const double used = peak - base;
    const double gib = double(1 << 30);
    std::printf("memory %s %-28s estimate %.3f GiB (tensors once: %.3f), measured %.3f GiB (peak %.3f, base %.3f), "
                "ratio %.2f\n",
                op.c_str(), s.name.c_str(), est / gib, double(Problem::footprint(shape, Backend::cuda)) / gib, used / gib,
                peak / gib, base / gib, est / used);
    EXPECT_LE(est, 1.5 * used) << op << " " << s.name << ": the estimate is far over what the case takes";
    EXPECT_GE(est * 1.5, used) << op << " " << s.name << ": the case takes more than the check allows for";
  }
}

TEST(MemoryModel, DecodeEstimateHoldsThePeak) {
  expect_honest("decode", {{"batch 64", "    batch: 64\n"}, {"batch 256", "    batch: 256\n"}});
}

TEST(MemoryModel, MtpEstimateHoldsThePeak) {
  expect_honest("mtp", {{"batch 32 tokens 4", "    batch: 32\n    tokens: 4\n"},
                        {"batch 32 tokens 4 intermediate", "    batch: 32\n    tokens: 4\n    cache_intermediate: true\n"}});
}

TEST(MemoryModel, PrefillEstimateHoldsThePeak) {
  expect_honest("prefill", {{"seqlens 4096", "    seqlens: [4096]\n"}, {"seqlens 4x4096", "    seqlens: [\"4x4096\"]\n"}});
}

}  // namespace
}  // namespace gdn
