// The register budgets of the step kernel family, checked without a GPU. The build keeps ptxas'
// report of the family's one translation unit (cmake/keep-compiler-report.sh): every kernel it
// compiled, per architecture, with its registers and spills. Each kernel must fit the registers of
// the resident warps its plan budgets for (step/plan.h), since those budgets are the kernels'
// performance contract (docs/notes/decode-mtp.md), and must not spill beyond the few measured
// spills plan.h lists (kKnownSpills).
#include <cxxabi.h>
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

#include "step/plan.h"

namespace gdn {
namespace {

struct KernelUse {
  std::string name;  // demangled
  std::string arch;  // sm_90, ...
  int registers = -1, stack = -1, spill_stores = -1, spill_loads = -1;
};

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

// ptxas --resource-usage: "Compiling entry function 'NAME' for 'sm_XX'", then "N bytes stack
// frame, S bytes spill stores, L bytes spill loads", then "Used R registers".
std::vector<KernelUse> read_report(const std::string& path) {
  std::ifstream in(path);
  std::vector<KernelUse> out;
  const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)')");
  const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::regex used(R"(Used (\d+) registers)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, entry)) {
      std::string arch = m[2];
      if (arch.back() == 'a') arch.pop_back();  // sm_90a: the sm_90 budgets
      out.push_back({demangle(m[1]), arch});
    } else if (!out.empty() && std::regex_search(line, m, frame)) {
      out.back().stack = std::stoi(m[1]), out.back().spill_stores = std::stoi(m[2]), out.back().spill_loads = std::stoi(m[3]);
    } else if (!out.empty() && std::regex_search(line, m, used)) {
      out.back().registers = std::stoi(m[1]);
    }
  }
  return out;
}

// "void gdn::step::name<a, b<c, d>, e>(args)" -> name and {a, b<c, d>, e}.
std::pair<std::string, std::vector<std::string>> split_template(const std::string& demangled) {
  const std::size_t open = demangled.find('<');
  std::string head = demangled.substr(0, open);
  head = head.substr(head.rfind(':') == std::string::npos ? 0 : head.rfind(':') + 1);
  std::vector<std::string> args;
  int depth = 0;
  std::string cur;
  for (std::size_t i = open + 1; open != std::string::npos && i < demangled.size(); ++i) {
    const char c = demangled[i];
    if (c == '<') ++depth;
    if (c == '>' && depth-- == 0) {
      args.push_back(cur);
      break;
    }
    if (c == ',' && depth == 0) {
      args.push_back(cur), cur.clear();
      continue;
    }
    if (!(c == ' ' && cur.empty())) cur += c;
  }
  return {head, args};
}

// The plan a compiled kernel serves, from its template name and arguments.
std::optional<step::Plan> plan_of(const std::string& name, const std::vector<std::string>& args, DType& state) {
  using step::Kernel;
  if (args.empty()) return std::nullopt;
  state = args[0] == "float" ? DType::f32 : DType::bf16;
  static const std::map<std::string, Kernel> kernels{
      {"decode_vk_kernel", Kernel::decode_vk},        {"decode_kv_kernel", Kernel::decode_kv},
      {"step_vk_kernel", Kernel::tokens_vk},          {"step_kv_kernel", Kernel::tokens_kv},
      {"step_vk_read_only_kernel", Kernel::read_only_vk}, {"step_vk_mma_kernel", Kernel::mma},
      {"step_vk_mma_pipelined_kernel", Kernel::mma_pipelined}};
  const auto it = kernels.find(name);
  if (it == kernels.end()) return std::nullopt;
  step::Plan p;
  p.kernel = it->second;
  if (p.kernel == Kernel::mma || p.kernel == Kernel::mma_pipelined) {
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
        k.depth == p.depth && k.tiles == p.tiles && k.read_only == p.read_only && k.form == p.form)
      return k.max_spill_bytes;
  return 0;
}

const std::string kReport = std::string(GDN_RESOURCE_USAGE_DIR) + "/step.txt";

TEST(RegisterBudgets, EveryStepKernelFitsItsPlanWithoutSpilling) {
  const auto uses = read_report(kReport);
  ASSERT_FALSE(uses.empty()) << "no kernels in " << kReport << " (the step family is built with RESOURCE_USAGE)";
  std::set<step::Kernel> seen;
  std::set<std::string> archs;
  for (const auto& u : uses) {
    const auto [name, args] = split_template(u.name);
    DType state = DType::f32;
    const auto plan = plan_of(name, args, state);
    ASSERT_TRUE(plan.has_value()) << "a kernel no plan names: " << u.name;
    ASSERT_GE(u.registers, 0) << u.name << " " << u.arch << ": no register count in the report";
    seen.insert(plan->kernel);
    archs.insert(u.arch);
    const int warps = plan->min_warps(state);
    const int budget = warps > 0 ? step::register_budget(warps) : 255;
    EXPECT_LE(u.spill_stores + u.spill_loads, known_spill_bytes(u.arch, *plan, state))
        << u.name << " on " << u.arch << " spills " << u.spill_stores << " + " << u.spill_loads << " bytes";
    EXPECT_LE(u.registers, budget) << u.name << " on " << u.arch << ": " << plan->describe(state);
  }
  // Every kernel of the family was found, so the checks above were not vacuous.
  EXPECT_EQ(seen.size(), 7u);
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
