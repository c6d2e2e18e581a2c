#include "prefill/sm90/plan.h"

#include "prefill/sm90/segments.h"
#include "prefill/sm90/workspace.h"
#include "core/plan_spec.h"
#include "core/state_quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace gdn::sm90 {

const char* to_string(Schedule s) { return s == Schedule::fused ? "fused" : "two_pass"; }

Batch Batch::of(const Shape& s) {
  Batch b;
  b.sequences = int64_t(s.seqlens.size());
  for (const int64_t len : s.seqlens) b.tokens += len;
  b.HV = s.h_v, b.K = s.dk, b.V = s.dv, b.H = s.h_qk;
  b.lens = s.seqlens;
  b.state_8bit = quant::is_8bit(s.state_dtype);
  return b;
}

int64_t Batch::max_len() const { return lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end()); }

int64_t Plan::prep_grid(const Batch& b) const { return slot_count(b.tokens, b.sequences) * (prep_group ? b.H : b.HV); }

int64_t Plan::ctas(const Batch& b) const {
  const int64_t slots = schedule == Schedule::two_pass ? segment_count(b.tokens, b.sequences, seg_chunks) : b.sequences;
  return int64_t(v_blocks(b.V)) * b.HV * slots;
}

std::string Plan::describe(const Batch& b, int sm_count) const {
  const bool two_pass = schedule == Schedule::two_pass;
  const std::string roles = two_pass ? fmt::format(", {} load", kPrepWarps)
                                     : fmt::format(", {} prepare the next chunk, {} copy and norm q/k", kPrepWarps, kPrepWarps);
  const char* inverse = "the inverse by 8 x 8 eliminations and f16 merges";
  const std::string how =
      two_pass ? fmt::format("two_pass: every chunk prepared first ({} x {} CTAs of {} threads{}, {:.1f} KiB smem, {} per SM; "
                             "{}; {:.1f} MiB workspace, written by {}), then the scan{}",
                             slot_count(b.tokens, b.sequences), prep_group ? b.H : b.HV, kPrepKernelThreads,
                             prep_group ? ", one per q/k head and its value heads in turn" : "",
                             SmemLayout(0, kPrepKernel).bytes / 1024.0, kPrepCtasPerSm, inverse,
                             workspace_bytes(b.tokens, b.sequences, b.HV) / 1048576.0,
                             bulk_slot_writes ? "bulk copies" : "every thread",
                             pdl ? " (each kernel after the first a programmatic dependent of the one before)" : "")
               : fmt::format("fused: a preparation warpgroup one chunk ahead in the CTA, fed by a producer warpgroup "
                             "(copies, q/k norms), no workspace; {}",
                             inverse);
  const std::string cp =
      two_pass && seg_chunks > 0
          ? fmt::format("; context parallel: segments of {} chunks ({} segment slots), transition pass at block_v {}, "
                        "fixup in fp32, {:.1f} MiB of segment states; bits depend on the segment length, so on the batch "
                        "(not batch-invariant); modelled scan {:.0f} us, {:.0f} us unsplit",
                        seg_chunks, segment_count(b.tokens, b.sequences, seg_chunks), cp_block_v,
                        3 * segment_buffer_bytes(b.tokens, b.sequences, b.HV, seg_chunks) / 1048576.0,
                        modeled_scan_us(b, *this, sm_count), modeled_scan_us(b, choose(b, sm_count, Schedule::two_pass), sm_count))
          : "";
  const std::string mma = !wgmma_at(block_v) ? "mma.sync, f16 operands"
                          : block_v == 64     ? "wgmma (the state warps one warpgroup), f16 operands"
                          : fmt::format("wgmma (the state warps two warpgroups, setmaxnreg {}{}), f16 operands",
                                        two_pass ? "208 / 88" : "192 / 104 / 24, one wgmma group in flight",
                                        pingpong_at(block_v) ? ", issuing in turn (ping-pong)" : "");
  const std::string cp_mma =
      two_pass && seg_chunks > 0 ? fmt::format("; transition pass on {}", wgmma_at(cp_block_v) ? "wgmma" : "mma.sync") : "";
  return fmt::format("chunk {}, block_v {} ({} warps, {} own the state{}), {} CTAs on {} SMs, {:.1f} KiB smem, "
                     "{}, {}, fp32 state in registers{}{}",
                     kChunk, block_v, warps(), state_warps(), roles, ctas(b), sm_count, smem_bytes() / 1024.0, how, mma,
                     cp, cp_mma);
}

std::string unsupported_reason(const Shape& s) {
  if (s.input_dtype != DType::bf16 && s.input_dtype != DType::f16)
    return fmt::format("inputs must be bf16 or f16 (got {})", to_string(s.input_dtype));
  if (s.dk != kHeadDim || s.dv != kHeadDim)
    return fmt::format("head sizes K = V = 128 only so far (got K = {}, V = {}; 64 and 256 are next)", s.dk, s.dv);
  if (s.seqlens.empty()) return "no sequences";
  // The grid is one-dimensional: V-blocks x value heads x sequences at the smallest block_v.
  const int64_t most_ctas = int64_t(kHeadDim / 32) * s.h_v * int64_t(s.seqlens.size());
  if (most_ctas > (int64_t(1) << 31) - 1) return fmt::format("too many (sequence, head) pairs for one grid ({})", most_ctas);
  return "";
}

bool prep_group_wins(const Batch& b, int sm_count) {
  return b.H > 0 && b.HV >= 2 * b.H && 2 * slot_count(b.tokens, b.sequences) * b.H >= 3 * int64_t(sm_count);
}

Plan choose(const Batch& b, int sm_count, Schedule schedule) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  Plan p;
  p.schedule = schedule;
  if (schedule == Schedule::fused) {
    p.block_v = kFusedBlockV;
    return p;
  }
  // The preparation per q/k head where GVA is 2 or more and its grid has one and a half CTAs per SM
  // (each CTA prepares its GVA value heads in turn). H200: 16/64 4096x8, 8320 CTAs, 703 -> 514 us;
  // 2/8 1x32768, 1026 CTAs, 106 -> 85 us; GVA 3, twelve cells 0.85-0.94x of the whole call. H100,
  // whole call against per value head: all 19 16/32 cells 0.92-0.97x; the 19 GVA 3-4 cells of
  // 258-544 CTAs 0.87-0.99x; 2/8 1x4096 (130 CTAs) 1.06x, 4/16 1x2048 (132) 1.08x, 2/8 1x2048 (66)
  // 1.10x.
  p.prep_group = prep_group_wins(b, sm_count);
  const bool prep_one_wave = p.prep_grid(b) <= int64_t(kPrepCtasPerSm) * sm_count;
  // Bulk slot writes where the preparation's grid is more than one wave of four CTAs per SM: the
  // single thread's wait for its copies is hidden by the other CTAs there, not in one wave (H100:
  // 0.98-0.99x the whole call on the wide cells, 1.01-1.02x on single-wave 2/8 cells).
  p.bulk_slot_writes = !prep_one_wave;
  // The scan a programmatic dependent of a preparation of one wave (choose_context_parallel: every
  // split). H100, same binary: 0.96-0.99x on the short unsplit cells (1x2048, 1024x8), but 16/32
  // 8192x4 (a preparation of 15 waves) 1.05x and the other deep ones within +-1 %.
  p.pdl = prep_one_wave;
  for (const int bv : {32, 64}) {
    p.block_v = bv;
    if (p.ctas(b) <= sm_count) return p;
  }
  // Several waves at block_v 64: two state warpgroups per CTA (block_v 128) read q, k and the
  // slot once per value head; taken where the modelled scan is 5 % shorter (fewer waves of
  // longer chunks; one wave of 64 CTAs loses to two of 128).
  Plan wide = p;
  wide.block_v = 128;
  if (modeled_scan_us(b, wide, sm_count) < 0.95 * modeled_scan_us(b, p, sm_count)) return wide;
  return p;
}

bool fused_wins(const Batch& b, const Plan& two_pass, int sm_count) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  if (b.H <= 0 || (b.HV != b.H && b.HV != 2 * b.H) || b.sequences < 1 || two_pass.seg_chunks > 0) return false;
  // One CTA per (sequence, value head) at block_v 128: the grid fills the GPU (GVA 1, where the
  // two-pass schedule reads and writes the most workspace and q/k bytes per value head), or nearly
  // two waves of it (GVA 2, where two_pass prepares per q/k head and moves fewer bytes), and no
  // sequence is more than twice the mean, so no CTA walks a chain much longer than the others'.
  const int64_t ctas = b.sequences * b.HV, fill = b.HV == b.H ? 9 : 18;
  return 10 * ctas >= fill * int64_t(sm_count) && b.max_len() * b.sequences <= 2 * b.tokens;
}

Plan choose(const Batch& b, int sm_count) {
  const Plan two_pass = choose_context_parallel(b, choose(b, sm_count, Schedule::two_pass), sm_count);
  if (b.state_8bit) return two_pass;
  return fused_wins(b, two_pass, sm_count) ? choose(b, sm_count, Schedule::fused) : two_pass;
}

std::string unrunnable_reason(const Batch& b, const Plan& p) {
  constexpr int64_t kMaxGrid = (int64_t(1) << 31) - 1;
  if (b.state_8bit && p.schedule == Schedule::fused)
    return "8-bit state pools run schedule=two_pass only (the fused kernel reads and writes f32 / bf16 states)";
  const int64_t ctas = p.ctas(b);
  const int64_t transition = p.schedule == Schedule::two_pass && p.seg_chunks > 0
                                 ? int64_t(2 * kHeadDim / p.cp_block_v) * b.HV * segment_count(b.tokens, b.sequences, p.seg_chunks)
                                 : 0;
  if (std::max(ctas, transition) > kMaxGrid)
    return fmt::format("plan needs {} CTAs in one grid, more than {} (a longer cp segment?)", std::max(ctas, transition), kMaxGrid);
  return "";
}

// ---- plan specs ------------------------------------------------------------------------------

namespace {

// One knob: its documentation (exported) and how its value sets a PlanSpec field.
struct KnobDef {
  PlanKnob doc;
  void (*set)(PlanSpec&, std::string_view value, int index);  // index: the value's place in doc.values
};

const std::vector<KnobDef>& knob_table() {
  static const std::vector<KnobDef> table{
      {{"schedule",
        {"two_pass", "fused"},
        "two_pass: a preparation kernel writes every chunk's A_g and P_g to a workspace, then the state scan (with "
        "context parallelism where the plan splits); fused: one kernel, a producer and a preparation warpgroup ahead "
        "of the state warpgroups, block_v 128, no split. Default: fused where GVA is 1 or 2, one CTA per (sequence, value head) "
        "fills the GPU and two_pass would not split"},
       [](PlanSpec& s, std::string_view, int i) { s.schedule = i; }},
      {{"block_v",
        {"32", "64", "128"},
        "value columns per scan CTA: 32 on mma.sync state warps, 64 and 128 on one or two wgmma state warpgroups; 32 "
        "and 64 run two_pass. Default: the smallest whose grid fits one wave, 128 where the modelled scan is 5 % shorter"},
       [](PlanSpec& s, std::string_view, int i) { s.block_v = 32 << i; }},
      {{"cp",
        {"off", "<n>"},
        "context parallelism (two_pass): each sequence's scan cut into segments of <n> chunks (1..65536) scanned in "
        "parallel, or off. Default: the split with the least modelled time where the unsplit grid is under four waves"},
       [](PlanSpec& s, std::string_view value, int i) {
         if (i == 0) {
           s.seg_chunks = 0;
           return;
         }
         int64_t chunks = 0;
         const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), chunks);
         if (ec != std::errc() || end != value.data() + value.size() || chunks < 1 || chunks > 65536)
           throw std::invalid_argument("cp takes off or a number of chunks per segment, 1..65536");
         s.seg_chunks = int(chunks);
       }},
      {{"cp_block_v", {"32", "64"}, "value columns per CTA of the transition pass (two_pass with cp): 32 on mma.sync, 64 on wgmma"},
       [](PlanSpec& s, std::string_view, int i) { s.cp_block_v = 32 << i; }},
      {{"prep",
        {"head", "group"},
        "the preparation kernel (two_pass): one CTA per value head, or per q/k head preparing its GVA group's value "
        "heads in turn. Default: group where GVA is 2 or more and its grid has 1.5 CTAs per SM"},
       [](PlanSpec& s, std::string_view, int i) { s.prep_group = i; }},
      {{"slot_write",
        {"threads", "bulk"},
        "how the preparation writes its workspace slots (two_pass): every thread's 16-byte stores, or bulk copies "
        "issued by one thread. Default: bulk where the preparation's grid is more than one wave"},
       [](PlanSpec& s, std::string_view, int i) { s.bulk_slot_writes = i; }},
      {{"pdl",
        {"off", "on"},
        "the kernels after the preparation as programmatic dependent launches (two_pass). Default: on where the plan "
        "splits or the preparation is one wave"},
       [](PlanSpec& s, std::string_view, int i) { s.pdl = i; }},
  };
  return table;
}

std::string knob_list() {
  std::string out;
  for (const KnobDef& k : knob_table()) out += (out.empty() ? "" : ", ") + k.doc.name;
  return out;
}

std::string value_list(const PlanKnob& k) {
  std::string out;
  for (const std::string& v : k.values) out += (out.empty() ? "" : "|") + v;
  return out;
}

// The place of `value` in k's values ("<n>": any value not listed by name), or -1.
int value_index(const PlanKnob& k, std::string_view value) {
  int any_number = -1;
  for (size_t i = 0; i < k.values.size(); ++i) {
    if (k.values[i] == value) return int(i);
    if (k.values[i] == "<n>") any_number = int(i);
  }
  return value.empty() ? -1 : any_number;
}

bool names_two_pass_knob(const PlanSpec& s) {
  return s.seg_chunks >= 0 || s.cp_block_v != 0 || s.prep_group >= 0 || s.bulk_slot_writes >= 0 || s.pdl == 1 ||
         s.block_v == 32 || s.block_v == 64;
}

}  // namespace

const std::vector<PlanKnob>& plan_knobs() {
  static const std::vector<PlanKnob> knobs = [] {
    std::vector<PlanKnob> out;
    for (const KnobDef& k : knob_table()) out.push_back(k.doc);
    return out;
  }();
  return knobs;
}

PlanSpec parse_spec(std::string_view spec) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("prefill/sm90 plan '{}': {}", spec, why));
  };
  // The shared parser splits the spec and refuses malformed pairs and a knob set twice; the
  // knobs, their values and the rules between them are this family's.
  std::vector<PlanSetting> settings;
  try {
    settings = parse_plan_spec(spec);
  } catch (const std::invalid_argument& e) {
    throw bad(fmt::format("{} (knobs: {})", e.what(), knob_list()));
  }
  PlanSpec out;
  for (const PlanSetting& setting : settings) {
    const std::string& name = setting.knob;
    const std::string& value = setting.value;
    const auto knob = std::find_if(knob_table().begin(), knob_table().end(), [&](const KnobDef& k) { return k.doc.name == name; });
    if (knob == knob_table().end()) throw bad(fmt::format("unknown knob '{}' (knobs: {})", name, knob_list()));
    const int index = value_index(knob->doc, value);
    if (index < 0) throw bad(fmt::format("{}={}: expected {}", name, value, value_list(knob->doc)));
    try {
      knob->set(out, value, index);
    } catch (const std::invalid_argument& e) {
      throw bad(fmt::format("{}={}: {}", name, value, e.what()));
    }
  }
  if (out.schedule == int(Schedule::fused)) {
    if (out.block_v != 0 && out.block_v != kFusedBlockV)
      throw bad(fmt::format("schedule=fused runs block_v {} only", kFusedBlockV));
    if (out.seg_chunks > 0 || out.cp_block_v != 0 || out.prep_group >= 0 || out.bulk_slot_writes >= 0 || out.pdl >= 0)
      throw bad("cp, cp_block_v, prep, slot_write and pdl are knobs of schedule=two_pass (fused has no split, "
                "preparation kernel or workspace)");
  }
  return out;
}

std::string check_spec(std::string_view spec) {
  try {
    parse_spec(spec);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

Plan plan_for(const Batch& b, int sm_count, std::string_view spec) {
  const PlanSpec s = parse_spec(spec);
  Plan p;
  if (s.schedule == int(Schedule::fused)) {
    p = choose(b, sm_count, Schedule::fused);
  } else if (s.schedule == int(Schedule::two_pass) || names_two_pass_knob(s)) {
    // cp=off keeps the unsplit block_v; otherwise the default's split rule.
    p = choose(b, sm_count, Schedule::two_pass);
    if (s.seg_chunks != 0) p = choose_context_parallel(b, p, sm_count);
  } else {
    p = choose(b, sm_count);
  }
  if (p.schedule == Schedule::fused) return p;  // what the spec may still name (block_v=128, pdl=off) is the fused plan's
  if (s.block_v != 0) p.block_v = s.block_v;
  if (s.seg_chunks >= 0) p.seg_chunks = s.seg_chunks;
  if (s.cp_block_v != 0) p.cp_block_v = s.cp_block_v;
  if (s.prep_group >= 0) p.prep_group = s.prep_group == 1;
  if (s.bulk_slot_writes >= 0) p.bulk_slot_writes = s.bulk_slot_writes == 1;
  if (s.pdl >= 0) p.pdl = s.pdl == 1;
  return p;
}

}  // namespace gdn::sm90
