// The register budgets of the step kernel family, checked without a GPU. The build keeps ptxas'
// report of the family's one translation unit (cmake/keep-compiler-report.sh): every kernel it
// compiled, per architecture, with its registers and spills. Each kernel must fit the registers of
// the resident warps its plan budgets for (step/plan.h), since those budgets are the kernels'
// performance contract (kernels/step/README.md), and must not spill beyond the few measured
// spills plan.h lists (kKnownSpills).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/ptxas_report.h"
#include "core/state_quant.h"
#include "step/plan.h"

namespace gdn {
namespace {

using test::KernelUse;
using test::read_report;
using test::split_template;

// The plan a compiled kernel serves, from its template name and arguments.
std::optional<step::Plan> plan_of(const std::string& name, const std::vector<std::string>& args, DType& state) {
  using step::Kernel;
  if (args.empty()) return std::nullopt;
  state = args[0] == "float" ? DType::f32 : DType::bf16;
  if (args[0] == "gdn::step::Fp8Codes") state = DType::fp8e4m3;  // the 8-bit kernels' code formats
  if (args[0] == "gdn::step::Int8Codes") state = DType::i8;
  static const std::map<std::string, Kernel> kernels{
      {"decode_vk_kernel", Kernel::decode_vk},        {"decode_kv_kernel", Kernel::decode_kv},
      {"decode_vk_8bit_kernel", Kernel::decode_vk},   {"step_vk_8bit_kernel", Kernel::tokens_vk},
      {"step_vk_kernel", Kernel::tokens_vk},          {"step_kv_kernel", Kernel::tokens_kv},
      {"step_vk_read_only_kernel", Kernel::read_only_vk}, {"step_vk_mma_kernel", Kernel::mma},
      {"step_vk_mma_pipelined_kernel", Kernel::mma_pipelined}, {"step_vk_mma_8bit_kernel", Kernel::mma}};
  const auto it = kernels.find(name);
  if (it == kernels.end()) return std::nullopt;
  step::Plan p;
  p.kernel = it->second;
  if (name == "step_vk_mma_8bit_kernel") {  // <Codes, M, MINW>: the bf16-MMA update build
    p.form = step::MmaForm::bf16;
  } else if (p.kernel == Kernel::mma || p.kernel == Kernel::mma_pipelined) {
    p.read_only = args.at(5) == "true";
    p.form = p.kernel == Kernel::mma_pipelined && args.at(6) == "true" ? step::MmaForm::tf32 : step::MmaForm::bf16;
  } else {
    p.depth = std::stoi(args.at(1));
    if (p.kernel == Kernel::read_only_vk) p.tiles = std::stoi(args.at(2));
  }
  return p;
}

// Spill bytes step/plan.h accepts for this build (0 for all but the measured few).
int known_spill_bytes(const std::string& arch, const step::Plan& p, DType state) {
  for (const auto& k : step::kKnownSpills)
    if ("sm_" + std::to_string(k.arch) == arch && k.kernel == p.kernel && k.bf16 == (state == DType::bf16) &&
        k.depth == p.depth && k.tiles == p.tiles && k.read_only == p.read_only && k.form == p.form &&
        k.eight_bit == quant::is_8bit(state))
      return k.max_spill_bytes;
  return 0;
}

const std::string kReport = std::string(GDN_RESOURCE_USAGE_DIR) + "/step.txt";

TEST(RegisterBudgets, EveryStepKernelFitsItsPlanWithoutSpilling) {
  const auto uses = read_report(kReport);
  ASSERT_FALSE(uses.empty()) << "no kernels in " << kReport << " (the step family is built with RESOURCE_USAGE)";
  std::set<step::Kernel> seen;
  std::set<std::string> archs;
  int eight_bit_builds = 0;
  for (const auto& u : uses) {
    const auto [name, args] = split_template(u.name);
    DType state = DType::f32;
    const auto plan = plan_of(name, args, state);
    ASSERT_TRUE(plan.has_value()) << "a kernel no plan names: " << u.name;
    ASSERT_GE(u.registers, 0) << u.name << " " << u.arch << ": no register count in the report";
    seen.insert(plan->kernel);
    eight_bit_builds += name == "decode_vk_8bit_kernel" || name == "step_vk_8bit_kernel" ||
                        name == "step_vk_mma_8bit_kernel";
    archs.insert(u.arch);
    const int warps = plan->min_warps(state);
    const int budget = warps > 0 ? step::register_budget(warps) : 255;
    EXPECT_LE(u.spill_stores + u.spill_loads, known_spill_bytes(u.arch, *plan, state))
        << u.name << " on " << u.arch << " spills " << u.spill_stores << " + " << u.spill_loads << " bytes";
    EXPECT_LE(u.registers, budget) << u.name << " on " << u.arch << ": " << plan->describe(state);
  }
  // Every kernel of the family was found, so the checks above were not vacuous.
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(eight_bit_builds, 2 * (4 + 3 + 1) * int(archs.size()))
      << "2 formats x (decode at 4 depths + mtp at 3 + the tensor-core build) 8-bit builds per arch";
  EXPECT_TRUE(archs.count("sm_90")) << "the report has no sm_90 kernels";
}

TEST(RegisterBudgets, ReportParserReadsPtxasLines) {
  const std::string path = ::testing::TempDir() + "/report.txt";
  std::ofstream(path) << "ptxas info    : Compiling entry function '_ZN3gdn4step1kIfLi4EEEvPT_' for 'sm_90'\n"
                         "ptxas info    : Function properties for _ZN3gdn4step1kIfLi4EEEvPT_\n"
                         "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                         "ptxas info    : Used 128 registers, used 0 barriers, 360 bytes cmem[0]\n";
  const auto uses = read_report(path);
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].name, "void gdn::step::k<float, 4>(float*)");
  EXPECT_EQ(uses[0].arch, "sm_90");
  EXPECT_EQ(uses[0].registers, 128);
  EXPECT_EQ(uses[0].spill_stores, 4);
  EXPECT_EQ(uses[0].stack, 8);
  const auto [name, args] = split_template("void gdn::step::step_vk_kernel<unsigned short, 2, gdn::step::InPlaceMem, 16>(gdn::decode::Args)");
  EXPECT_EQ(name, "step_vk_kernel");
  EXPECT_EQ(args, (std::vector<std::string>{"unsigned short", "2", "gdn::step::InPlaceMem", "16"}));
}

}  // namespace
}  // namespace gdn
