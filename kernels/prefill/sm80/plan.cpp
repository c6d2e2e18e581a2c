#include "prefill/sm80/plan.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

#include "core/plan_spec.h"
#include "core/state_quant.h"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/workspace.h"

namespace gdn::sm80 {

// The scan's static shared memory (kScanStaticSmem) beside the dynamic: its stage barriers, which
// ptxas places in a 1024-byte block (the dynamic buffer's alignment).
constexpr int kSm80SmemOptin = 166912;

int scan_smem_bytes(int block_v, int stages, bool single_q) {
  if (single_q) return sm90::SmemLayout(block_v, sm90::kScanQ1Kernel).bytes;
  return sm90::SmemLayout(block_v, stages == 3 ? sm90::kScanKernel : sm90::kScan2Kernel).bytes;
}
int prep_smem_bytes() { return sm90::SmemLayout(0, sm90::kPrepKernel).bytes; }

int64_t Plan::ctas(const Batch& b) const {
  return int64_t(b.V / block_v) * b.HV * sm90::segment_count(b.tokens, b.sequences, seg_chunks);
}

std::string Plan::describe(const Batch& b, int sm_count) const {
  return fmt::format(
      "chunk {}, block_v {} ({} warps, {} own the state, {} load; {} stages{}), {} CTAs on {} SMs, {:.1f} KiB smem, "
      "two_pass: every chunk prepared first ({} x {} CTAs of {} threads{}, {:.1f} KiB smem; the inverse by 8 x 8 "
      "eliminations and f16 merges; {:.1f} MiB workspace), then the scan, mma.sync, f16 operands, fp32 state in registers",
      sm90::kChunk, block_v, sm90::warps_for(block_v), block_v / sm90::kColsPerWarp, sm90::kPrepWarps, stages == 3 ? "three" : "two",
      single_q ? ", one q tile" : "", ctas(b), sm_count, scan_smem_bytes(block_v, stages, single_q) / 1024.0, sm90::slot_count(b.tokens, b.sequences), prep_group ? b.H : b.HV, sm90::kPrepKernelThreads,
      prep_group ? ", one per q/k head and its value heads in turn" : "", prep_smem_bytes() / 1024.0,
      sm90::workspace_bytes(b.tokens, b.sequences, b.HV) / 1048576.0) + split(b);
}

std::string Plan::split(const Batch& b) const {
  if (seg_chunks == 0) return "; no context parallelism";
  return fmt::format(
      "; context parallel: segments of {} chunks ({} slots), a transition pass at block_v {} and a fixup with {} M "
      "buffer{} and {} threads ({:.1f} KiB smem) before the scan, {:.1f} MiB of segment buffers",
      seg_chunks, sm90::segment_count(b.tokens, b.sequences, seg_chunks), kBlockV, fixup_m_buffers,
      fixup_m_buffers == 1 ? "" : "s", fixup_threads, fixup_smem_bytes(fixup_m_buffers, fixup_threads) / 1024.0,
      3 * sm90::segment_buffer_bytes(b.tokens, b.sequences, b.HV, seg_chunks) / 1048576.0);
}

std::string unsupported_reason(const Shape& s) {
  if (auto why = sm90::unsupported_reason(s); !why.empty()) return why;
  if (quant::is_8bit(s.state_dtype))
    return fmt::format("{} state pools run on prefill/sm90 only so far", to_string(s.state_dtype));
  if (s.has_checkpoints()) return "checkpoints run on prefill/sm90 only so far";
  return "";
}

std::string unrunnable_reason(const Plan& p, int smem_optin) {
  const int need = scan_smem_bytes(p.block_v, p.stages, p.single_q) + kScanStaticSmem;
  if (smem_optin > 0 && smem_optin < need)
    return fmt::format("the scan needs {} bytes of shared memory per block ({} stages{} at block_v {}); this GPU allows {}",
                       need, p.stages, p.single_q ? ", one q tile" : "", p.block_v, smem_optin);
  if (const int fixup = fixup_smem_bytes(p.fixup_m_buffers, p.fixup_threads);
      p.seg_chunks > 0 && smem_optin > 0 && smem_optin < fixup)
    return fmt::format("the fixup needs {} bytes of shared memory per block ({} M buffers, {} threads); this GPU allows {}",
                       fixup, p.fixup_m_buffers, p.fixup_threads, smem_optin);
  return "";
}

Plan choose(const Batch& b, int sm_count, int smem_optin) {
  if (sm_count <= 0) sm_count = kDefaultSmCount;
  if (smem_optin <= 0) smem_optin = kSm80SmemOptin;
  Plan p;
  p.prep_group = sm90::prep_group_wins(b, sm_count);
  p.stages = smem_optin >= scan_smem_bytes(kBlockV, 3) + kScanStaticSmem ? 3 : 2;
  p.fixup_m_buffers = smem_optin >= fixup_smem_bytes(2) ? 2 : 1;
  p.fixup_threads = smem_optin >= fixup_smem_bytes(1, 256) ? 256 : 128;
  p.single_q = smem_optin < scan_smem_bytes(kBlockV, 2) + kScanStaticSmem;
  if (b.lens.empty()) return p;  // a spec checked without a batch
  // block_v 64: four state warps a CTA, where the device allows its block (not a 99 KiB one).
  Plan wide = p;
  wide.block_v = 64;
  wide.stages = smem_optin >= scan_smem_bytes(64, 3) + kScanStaticSmem ? 3 : 2;
  const bool wide_fits = !p.single_q && unrunnable_reason(wide, smem_optin).empty();
  // Unsplit, block_v 64 where block_v 32's grid needs more than one wave of one CTA per SM.
  const Plan unsplit = wide_fits && p.ctas(b) > sm_count ? wide : p;
  sm90::Plan base;
  base.schedule = sm90::Schedule::two_pass;
  base.block_v = unsplit.block_v, base.cp_block_v = kBlockV;
  base.prep_group = p.prep_group;
  const sm90::Plan cp = sm90::choose_context_parallel(b, base, sm_count, wide_fits ? 64 : kBlockV);
  if (cp.seg_chunks == 0) return unsplit;
  Plan split = cp.block_v == 64 ? wide : p;
  split.seg_chunks = cp.seg_chunks;
  return split;
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
       "173,056 bytes of shared memory (sm_90, sm_100), else 2"},
      {"block_v",
       {"32", "64"},
       "value columns per scan CTA: 32 (two mma.sync state warps) or 64 (four). Default: unsplit, 32 where its grid "
       "fits one wave (one CTA per SM), else 64; split, the one the split's model finds faster"},
      {"q_tile",
       {"staged", "single"},
       "the scan's q: a tile per stage, or one tile that the next chunk's copies wait for until this chunk's (Q S)^T "
       "has read it (98,304 bytes: two stages, block_v 32). Default: single where the device allows a block less than "
       "two full stages (115,712 bytes: sm_86, sm_89, sm_120), else staged"},
      {"cp",
       {"off", "<n>"},
       "context parallelism: each sequence's scan cut into segments of <n> chunks (1..65536) scanned in parallel, "
       "or off. Default: prefill/sm90's split on this family's scans, where the unsplit grid is under four waves"},
      {"fixup_m",
       {"1", "2"},
       "the split's fixup: one M buffer, or two (the next segment's M copied during this one's product). Default: 2 "
       "where the device allows a block 180,224 bytes of shared memory (sm_90, sm_100), else 1"},
      {"fixup_threads",
       {"128", "256"},
       "the split's fixup: 256 threads (eight k slices' partial sums) or 128 (four: 16 KiB less shared memory). "
       "Default: 256 where the device allows a block 112,640 bytes, else 128 (sm_86, sm_89, sm_120)"}};
  return knobs;
}

namespace {

// cp=off or a segment length in chunks, as prefill/sm90's knob takes it.
template <class Bad> int seg_chunks_of(const std::string& value, const Bad& bad) {
  if (value == "off") return 0;
  int64_t chunks = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), chunks);
  if (ec != std::errc() || end != value.data() + value.size() || chunks < 1 || chunks > 65536)
    throw bad(fmt::format("cp={}: expected off or a number of chunks per segment, 1..65536", value));
  return int(chunks);
}

}  // namespace

Plan plan_for(const Batch& b, int sm_count, int smem_optin, std::string_view spec) {
  auto bad = [&](const std::string& why) { return std::invalid_argument(fmt::format("prefill/sm80 plan '{}': {}", spec, why)); };
  std::vector<PlanSetting> settings;
  try {
    settings = parse_plan_spec(spec);
  } catch (const std::invalid_argument& e) {
    throw bad(fmt::format("{} (knobs: prep, stages, block_v, q_tile, cp, fixup_m, fixup_threads)", e.what()));
  }
  Plan p = sm80::choose(b, sm_count, smem_optin);
  for (const PlanSetting& s : settings) {
    if (s.knob == "prep") {
      if (s.value != "head" && s.value != "group") throw bad(fmt::format("prep={}: expected head|group", s.value));
      p.prep_group = s.value == "group";
    } else if (s.knob == "stages") {
      if (s.value != "2" && s.value != "3") throw bad(fmt::format("stages={}: expected 2|3", s.value));
      p.stages = s.value == "3" ? 3 : 2;
    } else if (s.knob == "block_v") {
      if (s.value != "32" && s.value != "64") throw bad(fmt::format("block_v={}: expected 32|64", s.value));
      p.block_v = s.value == "64" ? 64 : 32;
    } else if (s.knob == "q_tile") {
      if (s.value != "staged" && s.value != "single") throw bad(fmt::format("q_tile={}: expected staged|single", s.value));
      p.single_q = s.value == "single";
    } else if (s.knob == "cp") {
      p.seg_chunks = seg_chunks_of(s.value, bad);
    } else if (s.knob == "fixup_threads") {
      if (s.value != "128" && s.value != "256") throw bad(fmt::format("fixup_threads={}: expected 128|256", s.value));
      p.fixup_threads = s.value == "128" ? 128 : 256;
    } else if (s.knob == "fixup_m") {
      if (s.value != "1" && s.value != "2") throw bad(fmt::format("fixup_m={}: expected 1|2", s.value));
      p.fixup_m_buffers = s.value == "1" ? 1 : 2;
    } else {
      throw bad(fmt::format("unknown knob '{}' (knobs: prep, stages, block_v, q_tile, cp, fixup_m, fixup_threads)", s.knob));
    }
  }
  auto given = [&](const char* knob) {
    for (const PlanSetting& s : settings)
      if (s.knob == knob) return true;
    return false;
  };
  // One q tile is a two-stage layout at block_v 32: those follow from it unless the spec says otherwise.
  if (p.single_q) {
    if ((given("stages") && p.stages != 2) || (given("block_v") && p.block_v != 32))
      throw bad("q_tile=single is a layout of two stages at block_v 32");
    p.stages = 2, p.block_v = 32;
  }
  // The fixup of 128 threads is the small one: one M buffer.
  if (p.fixup_threads == 128) {
    if (given("fixup_m") && p.fixup_m_buffers != 1) throw bad("fixup_threads=128 keeps one M buffer (fixup_m=1)");
    p.fixup_m_buffers = 1;
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
