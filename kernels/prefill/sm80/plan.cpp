#include "prefill/sm80/plan.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/plan_spec.h"
#include "core/state_quant.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/workspace.h"

namespace gdn::sm80 {

// The scan's static shared memory (kScanStaticSmem) beside the dynamic: its stage barriers, which
// ptxas places in a 1024-byte block (the dynamic buffer's alignment).
constexpr int kSm80SmemOptin = 166912;

int scan_smem_bytes(int stages) { return sm90::SmemLayout(kBlockV, stages == 3 ? sm90::kScanKernel : sm90::kScan2Kernel).bytes; }
int prep_smem_bytes() { return sm90::SmemLayout(0, sm90::kPrepKernel).bytes; }

int64_t Plan::ctas(const Batch& b) const { return int64_t(b.V / kBlockV) * b.HV * b.sequences; }

std::string Plan::describe(const Batch& b, int sm_count) const {
  return fmt::format(
      "chunk {}, block_v {} ({} warps, {} own the state, {} load; {} stages), {} CTAs on {} SMs, {:.1f} KiB smem, "
      "two_pass: every chunk prepared first ({} x {} CTAs of {} threads{}, {:.1f} KiB smem; the inverse by 8 x 8 "
      "eliminations and f16 merges; {:.1f} MiB workspace), then the scan, mma.sync, f16 operands, fp32 state in registers",
      sm90::kChunk, kBlockV, sm90::warps_for(kBlockV), kBlockV / sm90::kColsPerWarp, sm90::kPrepWarps, stages == 3 ? "three" : "two",
      ctas(b), sm_count, scan_smem_bytes(stages) / 1024.0, sm90::slot_count(b.tokens, b.sequences), prep_group ? b.H : b.HV, sm90::kPrepKernelThreads,
      prep_group ? ", one per q/k head and its value heads in turn" : "", prep_smem_bytes() / 1024.0,
      sm90::workspace_bytes(b.tokens, b.sequences, b.HV) / 1048576.0);
}

std::string unsupported_reason(const Shape& s) {
  if (auto why = sm90::unsupported_reason(s); !why.empty()) return why;
  if (quant::is_8bit(s.state_dtype))
    return fmt::format("{} state pools run on prefill/sm90 only so far", to_string(s.state_dtype));
  if (s.has_checkpoints()) return "checkpoints run on prefill/sm90 only so far";
  return "";
}

std::string unrunnable_reason(const Plan& p, int smem_optin) {
  const int need = scan_smem_bytes(p.stages) + kScanStaticSmem;
  if (smem_optin > 0 && smem_optin < need)
    return fmt::format("the scan needs {} bytes of shared memory per block ({} stages at block_v {}); this GPU allows {}",
                       need, p.stages, kBlockV, smem_optin);
  return "";
}

Plan choose(const Batch& b, int sm_count, int smem_optin) {
  Plan p;
  p.prep_group = sm90::prep_group_wins(b, sm_count > 0 ? sm_count : kDefaultSmCount);
  p.stages = (smem_optin > 0 ? smem_optin : kSm80SmemOptin) >= scan_smem_bytes(3) + kScanStaticSmem ? 3 : 2;
  return p;
}

const std::vector<PlanKnob>& plan_knobs() {
  static const std::vector<PlanKnob> knobs = {
      {"prep",
       {"head", "group"},
       "the preparation kernel: one CTA per value head, or per q/k head preparing its GVA group's value heads in turn. "
       "Default: group where GVA is 2 or more and its grid has 1.5 CTAs per SM"},
      {"stages",
       {"2", "3"},
       "the scan's stages (q, k, v and a workspace slot each). Default: 3 where the device allows a block their "
       "173,056 bytes of shared memory (sm_90, sm_100), else 2"}};
  return knobs;
}

Plan plan_for(const Batch& b, int sm_count, int smem_optin, std::string_view spec) {
  auto bad = [&](const std::string& why) { return std::invalid_argument(fmt::format("prefill/sm80 plan '{}': {}", spec, why)); };
  std::vector<PlanSetting> settings;
  try {
    settings = parse_plan_spec(spec);
  } catch (const std::invalid_argument& e) {
    throw bad(fmt::format("{} (knobs: prep, stages)", e.what()));
  }
  Plan p = sm80::choose(b, sm_count, smem_optin);
  for (const PlanSetting& s : settings) {
    if (s.knob == "prep") {
      if (s.value != "head" && s.value != "group") throw bad(fmt::format("prep={}: expected head|group", s.value));
      p.prep_group = s.value == "group";
    } else if (s.knob == "stages") {
      if (s.value != "2" && s.value != "3") throw bad(fmt::format("stages={}: expected 2|3", s.value));
      p.stages = s.value == "3" ? 3 : 2;
    } else {
      throw bad(fmt::format("unknown knob '{}' (knobs: prep, stages)", s.knob));
    }
  }
  return p;
}

std::string check_spec(std::string_view spec) {
  try {
    sm80::plan_for(Batch{}, kDefaultSmCount, 0, spec);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

}  // namespace gdn::sm80
