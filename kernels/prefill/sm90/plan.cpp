#include "prefill/sm90/plan.h"

#include "prefill/sm90/segments.h"
#include "prefill/sm90/workspace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <utility>
#include <stdexcept>

namespace gdn::sm90 {

Batch Batch::of(const Shape& s) {
  Batch b;
  b.sequences = int64_t(s.seqlens.size());
  for (const int64_t len : s.seqlens) b.tokens += len;
  b.HV = s.h_v, b.K = s.dk, b.V = s.dv, b.H = s.h_qk;
  b.lens = s.seqlens;
  return b;
}

int64_t Batch::max_len() const { return lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end()); }

int64_t Plan::prep_grid(const Batch& b) const { return slot_count(b.tokens, b.sequences) * (prep_group ? b.H : b.HV); }

int64_t Plan::ctas(const Batch& b) const {
  const int64_t slots = kernel == kKernelV3 ? segment_count(b.tokens, b.sequences, seg_chunks) : b.sequences;
  return int64_t(v_blocks(b.V)) * b.HV * slots;
}

std::string Plan::describe(const Batch& b, int sm_count) const {
  const std::string roles = kernel == kKernelV2 || kernel == kKernelV4 ? fmt::format(", {} prepare the next chunk", kPrepWarps)
                            : kernel == kKernelV3 ? fmt::format(", {} load", kPrepWarps)
                                                  : "";
  const std::string how =
      kernel == kKernelV3
          ? fmt::format("kernel v3: every chunk prepared first ({} x {} CTAs of {} threads{}, {:.1f} KiB smem, {} per SM; "
                        "the inverse {}; {:.1f} MiB workspace of {} slots{}), then the scan{}",
                        slot_count(b.tokens, b.sequences), prep_group ? b.H : b.HV, kPrepKernelThreads,
                        prep_group ? ", one per q/k head and its value heads in turn" : "",
                        SmemLayout(0, kPrepKernel).bytes / 1024.0, kPrepCtasPerSm,
                        inverse == kInverseHier  ? "by 8 x 8 eliminations and f16 merges"
                        : inverse == kInverseF16 ? "by 16 x 16 solves and f16 merges"
                                                 : "by 16 x 16 solves and three-product TF32 merges",
                        workspace_bytes(b.tokens, b.sequences, b.HV, slot) / 1048576.0,
                        slot == kSlotPacked ? "packed" : slot == kSlotLean ? "lean (P_g made by the scan's load warps)" : "full",
                        slot == kSlotPacked ? "" : bulk_slot_writes ? ", written by bulk copies" : ", written by every thread",
                        pdl ? " (each kernel after the first a programmatic dependent of the one before)" : "")
      : kernel == kKernelV4 ? fmt::format("kernel v4: fused, a preparation warpgroup one chunk ahead in the CTA, the state "
                                          "warpgroups doing the next chunk's q/k norms, no workspace; the inverse {}",
                                          inverse == kInverseHier ? "by 8 x 8 eliminations and f16 merges"
                                                                  : "by 16 x 16 solves and three-product TF32 merges")
      : kernel == kKernelV2 ? std::string("kernel v2: warp-specialised, the chunk's preparation one chunk ahead")
                            : std::string("kernel v1: the chunk's phases in series");
  const std::string cp =
      kernel == kKernelV3 && seg_chunks > 0
          ? fmt::format("; context parallel: segments of {} chunks ({} segment slots), transition pass at block_v {}, "
                        "fixup in fp32, {:.1f} MiB of segment states; bits depend on the segment length, so on the batch "
                        "(not batch-invariant); modelled scan {:.0f} us, {:.0f} us unsplit",
                        seg_chunks, segment_count(b.tokens, b.sequences, seg_chunks), cp_block_v,
                        3 * segment_buffer_bytes(b.tokens, b.sequences, b.HV, seg_chunks) / 1048576.0,
                        modeled_scan_us(b, *this, sm_count), modeled_scan_us(b, choose(b, sm_count, kKernelV3), sm_count))
          : "";
  const std::string mma = !wgmma_at(block_v) ? "mma.sync, f16 operands"
                          : block_v == 64     ? "wgmma (the state warps one warpgroup), f16 operands"
                          : fmt::format("wgmma (the state warps two warpgroups, setmaxnreg {}{}), f16 operands",
                                        kernel == kKernelV4 ? "192 / 120, one wgmma group in flight" : "208 / 88",
                                        pingpong_at(block_v) ? ", issuing in turn (ping-pong)" : "");
  const std::string cp_mma =
      kernel == kKernelV3 && seg_chunks > 0 ? fmt::format("; transition pass on {}", wgmma_at(cp_block_v) ? "wgmma" : "mma.sync") : "";
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

Plan choose(const Batch& b, int sm_count, int kernel) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  Plan p;
  p.kernel = kernel;
  p.wgmma = kernel == kKernelV3 || kernel == kKernelV4;  // at block_v 64; the same bits as mma.sync (GPU test), 1-9 % less scan time
  // The hier inverse in v3's preparation (ninth session, H100, one call each: the whole call
  // 0.970-0.995x the TF32 form's on the eleven wide cells, at or below it on the qwen, cp and GVA-3
  // sets; o and ht within 1 % of its rel-L2: docs/notes/prefill-sm90.md).
  // v4 too since the tenth session (ninth session, H100: v4 with hier 0.94-0.97x v4 with TF32 on
  // the ten qwen cells).
  if (kernel == kKernelV3 || kernel == kKernelV4) p.inverse = kInverseHier;
  p.pingpong = kernel == kKernelV3 || kernel == kKernelV4;
  // The preparation per q/k head where GVA is 2 or more and its grid has one and a half CTAs per SM
  // (each CTA prepares its GVA value heads in turn). H200, seventh session: 16/64 4096x8, 8320 CTAs,
  // 703 -> 514 us; 2/8 1x32768, 1026 CTAs, 106 -> 85 us; GVA 3, twelve cells 0.85-0.94x of the
  // whole call. H100, ninth session (the hier inverse), whole call against per value head: all 19
  // 16/32 cells 0.92-0.97x; the 19 GVA 3-4 cells of 258-544 CTAs 0.87-0.99x; 2/8 1x4096 (130
  // CTAs) 1.06x, 4/16 1x2048 (132) 1.08x, 2/8 1x2048 (66) 1.10x. docs/notes/prefill-sm90.md.
  p.prep_group = kernel == kKernelV3 && b.H > 0 && b.HV >= 2 * b.H &&
                 2 * slot_count(b.tokens, b.sequences) * b.H >= 3 * int64_t(sm_count);
  const bool prep_one_wave = p.prep_grid(b) <= int64_t(kPrepCtasPerSm) * sm_count;
  // Bulk slot writes where the preparation's grid is more than one wave of four CTAs per SM: the
  // single thread's wait for its copies is hidden by the other CTAs there, not in one wave.
  p.bulk_slot_writes = kernel == kKernelV3 && !prep_one_wave;
  // The scan a programmatic dependent of a preparation of one wave (choose_context_parallel: every
  // split). H100, eleventh session, same binary: 0.96-0.99x on the short unsplit cells (1x2048,
  // 1024x8), but 16/32 8192x4 (a preparation of 15 waves) 1.05x and the other deep ones within
  // +-1 %: docs/notes/prefill-sm90.md.
  p.pdl = kernel == kKernelV3 && prep_one_wave;
  // v4 has state warpgroups only (64 or 128); where no grid fits one wave it takes 128: one CTA per
  // head, each chunk prepared once.
  const int smallest = kernel == kKernelV4 ? 64 : 32, largest = kernel == kKernelV1 || kernel == kKernelV4 ? 128 : 64;
  for (int bv : {32, 64, 128}) {
    if (bv < smallest) continue;
    if (bv > largest) break;
    p.block_v = bv;
    if (p.ctas(b) <= sm_count) return p;
  }
  p.block_v = largest;
  if (kernel == kKernelV3) {
    // Several waves at block_v 64: two state warpgroups per CTA (block_v 128) read q, k and the
    // slot once per value head; taken where the modelled scan is 5 % shorter (fewer waves of
    // longer chunks; one wave of 64 CTAs loses to two of 128).
    Plan wide = p;
    wide.block_v = 128;
    if (modeled_scan_us(b, wide, sm_count) < 0.95 * modeled_scan_us(b, p, sm_count)) return wide;
  }
  return p;
}

bool fused_v4_wins(const Batch& b, const Plan& v3, int sm_count) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  if (b.H <= 0 || (b.HV != b.H && b.HV != 2 * b.H) || b.sequences < 1 || v3.seg_chunks > 0) return false;
  // One CTA per (sequence, value head) at block_v 128: the grid fills the GPU (GVA 1), or nearly
  // two waves of it (GVA 2, where v3 prepares per q/k head and moves fewer bytes), and no sequence
  // is more than twice the mean, so no CTA walks a chain much longer than the others'.
  const int64_t ctas = b.sequences * b.HV, fill = b.HV == b.H ? 9 : 18;
  return 10 * ctas >= fill * int64_t(sm_count) && b.max_len() * b.sequences <= 2 * b.tokens;
}

Plan choose(const Batch& b, int sm_count) {
  const Plan v3 = choose_context_parallel(b, choose(b, sm_count, kKernelV3), sm_count);
  if (!fused_v4_wins(b, v3, sm_count)) return v3;
  Plan v4 = choose(b, sm_count, kKernelV4);
  v4.block_v = 128;
  return v4;
}

Override parse_override(std::string_view spec) {
  auto bad = [&](std::string_view why) {
    return std::invalid_argument(fmt::format(
        "sm90 plan override '{}': {} (expected block_v=32|64|128, kernel=v1|v2|v3|v4, cp=off|<chunks per segment>, "
        "cp_block_v=32|64, mma=wgmma|sync, prep=head|group, slot=full|packed|lean, slot_write=bulk|threads, inverse=tf32|f16|hier, wg_order=pingpong|free, pdl=on|off, comma-separated)",
        spec, why));
  };
  Override o;
  for (size_t at = 0; !spec.empty() && at != std::string_view::npos;) {  // every field, empty ones too
    const size_t comma = spec.find(',', at);
    const std::string_view field = spec.substr(at, comma == std::string_view::npos ? comma : comma - at);
    at = comma == std::string_view::npos ? comma : comma + 1;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) throw bad(fmt::format("'{}' is not key=value", field));
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    // One of a key's values, or the error naming them.
    using Choices = std::initializer_list<std::pair<std::string_view, int>>;
    auto pick = [&](Choices choices, std::string_view expected) {
      for (const auto& [name, number] : choices)
        if (value == name) return number;
      throw bad(expected);
    };
    if (key == "block_v") {
      o.block_v = pick({{"32", 32}, {"64", 64}, {"128", 128}}, "block_v must be 32, 64 or 128");
    } else if (key == "kernel") {
      o.kernel = pick({{"v1", kKernelV1}, {"v2", kKernelV2}, {"v3", kKernelV3}, {"v4", kKernelV4}}, "kernel must be v1, v2, v3 or v4");
    } else if (key == "cp") {
      if (value == "off") {
        o.seg_chunks = 0;
      } else {
        int64_t chunks = 0;
        const char *first = value.data(), *last = value.data() + value.size();
        const auto [end, ec] = std::from_chars(first, last, chunks);
        if (ec != std::errc() || end != last || chunks < 1 || chunks > 65536)
          throw bad("cp must be off or a number of chunks per segment, 1..65536");
        o.seg_chunks = int(chunks);
      }
    } else if (key == "cp_block_v") {
      o.cp_block_v = pick({{"32", 32}, {"64", 64}}, "cp_block_v must be 32 or 64");
    } else if (key == "prep") {
      o.prep_group = pick({{"group", 1}, {"head", 0}}, "prep must be head or group");
    } else if (key == "slot") {
      o.slot = pick({{"packed", kSlotPacked}, {"lean", kSlotLean}, {"full", kSlotFull}}, "slot must be full, packed or lean");
    } else if (key == "slot_write") {
      o.bulk_slot_writes = pick({{"bulk", 1}, {"threads", 0}}, "slot_write must be bulk or threads");
    } else if (key == "inverse") {
      o.inverse = pick({{"tf32", kInverseTf32}, {"f16", kInverseF16}, {"hier", kInverseHier}}, "inverse must be tf32, f16 or hier");
    } else if (key == "wg_order") {
      o.pingpong = pick({{"pingpong", 1}, {"free", 0}}, "wg_order must be pingpong or free");
    } else if (key == "pdl") {
      o.pdl = pick({{"on", 1}, {"off", 0}}, "pdl must be on or off");
    } else if (key == "mma") {
      o.wgmma = pick({{"wgmma", 1}, {"sync", 0}}, "mma must be wgmma or sync");
    } else {
      throw bad(fmt::format("unknown key '{}'", key));
    }
  }
  return o;
}

namespace {
Plan checked(const Plan& p, std::string_view spec) {
  if (p.kernel == kKernelV2 && p.block_v == 128)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': kernel v2 has block_v 32 or 64", spec));
  if (p.kernel == kKernelV3 && p.block_v == 128 && !p.wgmma)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': kernel v3 runs block_v 128 on wgmma only", spec));
  if (p.kernel != kKernelV3 && p.seg_chunks > 0)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': context parallelism (cp) needs kernel v3", spec));
  if (p.kernel != kKernelV3 && p.prep_group)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': prep=group needs kernel v3", spec));
  if (p.kernel != kKernelV3 && p.bulk_slot_writes)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': slot_write=bulk needs kernel v3", spec));
  if (p.kernel != kKernelV3 && p.slot != kSlotFull)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': slot=packed and slot=lean need kernel v3", spec));
  if (p.slot == kSlotLean && p.inverse == kInverseF16)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': slot=lean is built with inverse=hier|tf32", spec));
  if (p.kernel != kKernelV3 && p.inverse != kInverseTf32 && !(p.kernel == kKernelV4 && p.inverse == kInverseHier))
    throw std::invalid_argument(
        fmt::format("sm90 plan override '{}': inverse=f16 needs kernel v3, inverse=hier kernel v3 or v4", spec));
  if (p.kernel != kKernelV3 && p.kernel != kKernelV4 && p.wgmma)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': mma=wgmma needs kernel v3 or v4", spec));
  if (p.kernel != kKernelV3 && p.kernel != kKernelV4 && p.pingpong)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': wg_order=pingpong needs kernel v3 or v4", spec));
  if (p.kernel != kKernelV3 && p.pdl)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': pdl=on needs kernel v3", spec));
  if (p.kernel == kKernelV4 && (p.block_v < 64 || !p.wgmma))
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': kernel v4 runs block_v 64 or 128 on wgmma", spec));
  return p;
}
}  // namespace

Plan apply_override(const Plan& chosen, std::string_view spec) {
  const Override o = parse_override(spec);
  Plan p = chosen;
  if (o.kernel != 0) p.kernel = o.kernel;
  if (o.block_v != 0) p.block_v = o.block_v;
  if (o.seg_chunks >= 0) p.seg_chunks = o.seg_chunks;
  if (o.cp_block_v != 0) p.cp_block_v = o.cp_block_v;
  if (o.wgmma >= 0) p.wgmma = o.wgmma == 1;
  if (o.prep_group >= 0) p.prep_group = o.prep_group == 1;
  if (o.slot >= 0) p.slot = o.slot;
  if (o.inverse >= 0) p.inverse = o.inverse;
  if (o.bulk_slot_writes >= 0) p.bulk_slot_writes = o.bulk_slot_writes == 1;
  if (o.pingpong >= 0) p.pingpong = o.pingpong == 1;
  if (o.pdl >= 0) p.pdl = o.pdl == 1;
  if (p.kernel != kKernelV3 && o.pdl < 0) p.pdl = false;
  if (p.kernel != kKernelV3 && p.kernel != kKernelV4 && o.pingpong < 0) p.pingpong = false;
  if (p.kernel != kKernelV3 && o.seg_chunks < 0) p.seg_chunks = 0;
  if (p.kernel != kKernelV3 && o.wgmma < 0) p.wgmma = p.kernel == kKernelV4;
  if (p.kernel != kKernelV3 && o.prep_group < 0) p.prep_group = false;
  if (p.kernel != kKernelV3 && o.slot < 0) p.slot = kSlotFull;
  if (p.kernel != kKernelV3 && o.bulk_slot_writes < 0) p.bulk_slot_writes = false;
  if (p.kernel != kKernelV3 && o.inverse < 0) p.inverse = p.kernel == kKernelV4 ? kInverseHier : kInverseTf32;
  return checked(p, spec);
}

Plan plan_for(const Batch& b, int sm_count) {
  const char* spec = std::getenv("GDNBENCH_SM90_PLAN");
  if (spec == nullptr || *spec == '\0') return choose(b, sm_count);
  const Override o = parse_override(spec);
  // The base: the named kernel's choice; with no kernel named, v3's where the spec names a field
  // only v3 has (the default may be v4), else the default plan.
  const bool v3_fields = o.seg_chunks >= 0 || o.cp_block_v != 0 || o.prep_group >= 0 || o.slot >= 0 ||
                         o.bulk_slot_writes >= 0 || o.wgmma == 0 || o.pdl == 1;
  const int kernel = o.kernel != 0 ? o.kernel : v3_fields ? kKernelV3 : 0;
  if (kernel == 0) return apply_override(choose(b, sm_count), spec);
  // cp=off: v3's unsplit choice of block_v; otherwise the kernel's own choice (v3's may split).
  if (kernel != kKernelV3 || o.seg_chunks == 0) return apply_override(choose(b, sm_count, kernel), spec);
  return apply_override(choose_context_parallel(b, choose(b, sm_count, kKernelV3), sm_count), spec);
}

}  // namespace gdn::sm90
