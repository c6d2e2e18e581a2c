// The launch plan of prefill/sm90 as data: the schedule, value columns per CTA (block_v), context
// parallelism, grid and shared memory for a call. Host code (C++17, no CUDA), so tests check it
// without a GPU and every report records it (Variant::plan). A plan spec (Shape::plan, the `plan`
// axis: "knob=value,...", e.g. "schedule=fused" or "cp=off,block_v=64") replaces fields of the
// default plan; the knobs are one table (plan_knobs). Design and measurements:
// kernels/prefill/sm90/README.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"
#include "core/shape.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/workspace.h"

namespace gdn::sm90 {

constexpr int kDefaultSmCount = 132;  // H100/H200, when the device cannot be asked (plan on a CPU host)

// What the plan reads of a call: the number of sequences and tokens, and the head sizes.
struct Batch {
  int64_t sequences = 0, tokens = 0;
  int HV = 0, K = 0, V = 0;
  int H = 0;  // q/k heads
  std::vector<int64_t> lens;  // tokens per sequence (the context-parallel plan and its cost model)
  // An 8-bit state pool (pool_8bit.cuh): the two-pass scan and the fixup read and write one, the
  // fused kernel does not, so its plans are two_pass (context parallel where the rule splits).
  bool state_8bit = false;
  static Batch of(const Shape& s);
  int64_t max_len() const;
};

// two_pass: the preparation kernel (prep_kernel.cuh) writes every chunk's A_g, P_g and scalars to a
// workspace, then the scan (scan_kernel.cuh) carries the state chain, with context parallelism
// (segments.h: transition pass, fixup) where the plan splits. fused: one kernel (fused_kernel.cuh),
// a preparation warpgroup one chunk ahead of the state warpgroups, no workspace, no split.
enum class Schedule { two_pass, fused };
const char* to_string(Schedule s);

struct Plan {
  Schedule schedule = Schedule::two_pass;
  // Value columns per scan CTA (kColsPerWarp per state warp): two_pass 32 (mma.sync state warps),
  // 64 or 128 (one or two wgmma state warpgroups); fused kFusedBlockV.
  int block_v = 64;
  // Context parallelism (two_pass; segments.h): sequences cut into segments of seg_chunks chunks
  // (0: off), the transition pass at cp_block_v columns per CTA (32 on mma.sync, 64 on wgmma).
  int seg_chunks = 0;
  int cp_block_v = 64;
  // The preparation kernel as one CTA per (slot, q/k head), the GVA group's value heads in turn
  // (prep_kernel.cuh), instead of one per (slot, value head).
  bool prep_group = false;
  // The preparation writes its slots by bulk copies from one thread (prep_kernel.cuh write_slot)
  // instead of every thread's 16-byte stores.
  bool bulk_slot_writes = false;
  // The two-pass kernels after the preparation launch as programmatic dependents (PDL) of the one
  // before: their CTAs start as that one's retire and wait for its results, so no launch gap
  // separates them.
  bool pdl = false;

  // The state warps are wgmma warpgroups at block_v 64 and 128, mma.sync warps at 32.
  static bool wgmma_at(int bv) { return bv >= 64; }
  // At block_v 128 the two state warpgroups issue their products in turn (state_warpgroup.cuh,
  // "ping-pong"), so one's epilogue runs under the other's products.
  static bool pingpong_at(int bv) { return bv == 128; }
  int warps() const { return schedule == Schedule::fused ? kFusedThreads / 32 : warps_for(block_v); }
  int state_warps() const { return block_v / kColsPerWarp; }
  int v_blocks(int V) const { return V / block_v; }
  // Scan (or fused) CTAs: one per value block, value head and segment slot (segments.h).
  int64_t ctas(const Batch& b) const;
  // The preparation's CTAs: one per (slot, value head), or per (slot, q/k head) with prep_group.
  int64_t prep_grid(const Batch& b) const;
  int smem_bytes() const { return SmemLayout(block_v, schedule == Schedule::fused ? kFusedKernel : kScanKernel).bytes; }
  // One line, e.g. "chunk 64, block_v 32 (6 warps, 2 own the state, 4 load), 128 CTAs on 132 SMs,
  // ..., two_pass: every chunk prepared first ...".
  std::string describe(const Batch& b, int sm_count) const;
  bool operator==(const Plan& o) const {
    return schedule == o.schedule && block_v == o.block_v && seg_chunks == o.seg_chunks &&
           (seg_chunks == 0 || cp_block_v == o.cp_block_v) && prep_group == o.prep_group &&
           bulk_slot_writes == o.bulk_slot_writes && pdl == o.pdl;
  }
  bool operator!=(const Plan& o) const { return !(*this == o); }
};

// The scan's modelled time in microseconds (two_pass; the preparation, the same with or without
// context parallelism, is left out): the scan's CTAs placed in grid order (segment slots in
// order, as the GPU starts them) on the SM that frees first, one CTA per SM, a chunk costing
// kChunkUs at its block_v; the transition pass as its longest chain or its chains spread over the
// SMs; plus the fixup's segment steps and the two extra launches. The constants are H200
// measurements (cp_plan.cpp). mma_sync: block_v 64 is prefill/sm80's four mma.sync state warps.
double modeled_scan_us(const Batch& b, const Plan& p, int sm_count, bool mma_sync = false);

// "" when the kernels handle the shape, else why not (head sizes other than 128 are declined).
std::string unsupported_reason(const Shape& s);

// The schedule's own plan. two_pass: the block_v that gives the most CTAs one resident wave can
// hold (one CTA per SM): the smallest of 32 and 64 whose grid still fits on sm_count SMs, else 64;
// then 128 (two wgmma state warpgroups) where its modelled scan is 5 % shorter: several waves at 64
// that become fewer, fuller waves at 128. A smaller block_v shortens each CTA's serial chunk chain
// (fewer state warps share the tensor cores) but repeats the chunk's state-independent work
// (K K^T, the inverse, Q K^T) once per V-block. Unsplit (choose_context_parallel splits). fused:
// block_v 128, one CTA per (sequence, value head), each chunk prepared once.
Plan choose(const Batch& b, int sm_count, Schedule schedule);
// The preparation kernel per q/k head (Plan::prep_group): GVA 2 or more and one and a half CTAs
// per SM in its grid (plan.cpp has the measurements).
bool prep_group_wins(const Batch& b, int sm_count);
// The default plan: two_pass (choose_context_parallel of its own plan), or fused where fused_wins.
Plan choose(const Batch& b, int sm_count);
// The fused schedule instead of the two-pass plan `two_pass`: GVA 1 or 2, two_pass unsplit, one
// CTA per (sequence, value head) filling 0.9 of the SMs (GVA 1) or 1.8 x the SMs (GVA 2), and no
// sequence longer than twice the mean. H100, same binary: 0.81-0.83x the two-pass call on the six
// such GVA-1 cells of the qwen35 table, 0.92-0.98x on the GVA-2 ones of two waves or more; slower
// on every other cell (1.5-3.8x on GVA 1: too few CTAs at block_v 128, or no context parallelism;
// 1.02-1.2x on GVA 3-4; 0.99-1.03x on GVA 2 in one wave).
bool fused_wins(const Batch& b, const Plan& two_pass, int sm_count);
// The context-parallel plan for a two-pass plan `p` (its block_v for the scan): the segment length
// (8 .. 512 chunks: the powers of two, and for each segment count the shortest multiple of 8 that
// gives it, so that segments x heads can fill a wave) and block_v of both passes with the least
// modelled time, if it beats `p`'s by 10 % (or at all where the unsplit grid at block_v 32 fills
// at most a quarter of the SMs), else `p`; a split's kernels are programmatic dependents (pdl).
// Considered only when the unsplit grid at block_v 32 is under four waves (few heads x few
// sequences); a split makes a sequence's bits depend on the segment length, so on the batch.
// mma_sync_block_v > 0: prefill/sm80, which has no wgmma: the scan on mma.sync at block_v 32 up to
// this (32 or 64), the transition pass at 32.
Plan choose_context_parallel(const Batch& b, const Plan& p, int sm_count, int mma_sync_block_v = 0);

// ---- plan specs: "knob=value,..." over plan_knobs() ----------------------------------------

// The knobs a spec may set, one table: name, values, what each changes and when the default takes
// which. Exported as Variant::knobs.
const std::vector<PlanKnob>& plan_knobs();

// The fields a spec names (0 / -1 where it names none).
struct PlanSpec {
  int schedule = -1;     // Schedule, or -1
  int block_v = 0;       // 32, 64, 128
  int seg_chunks = -1;   // cp=off (0) or cp=<chunks per segment, 1..65536>
  int cp_block_v = 0;    // 32, 64
  int prep_group = -1;   // prep=group (1) or prep=head (0)
  int bulk_slot_writes = -1;  // slot_write=bulk (1) or threads (0)
  int pdl = -1;          // pdl=on (1) or off (0)
};
// Throws std::invalid_argument naming the spec, the field and the values expected, for a
// malformed spec, an unknown knob, a bad value, a knob given twice, or knobs no schedule has
// together (schedule=fused with block_v 32 or 64 or a two-pass knob other than cp=off).
PlanSpec parse_spec(std::string_view spec);
// "" when parse_spec accepts the spec, else its message (Variant::check_plan).
std::string check_spec(std::string_view spec);
// The plan a shape runs for `spec` ("" is the default plan). The base: the named schedule's own
// plan; with none named, the two-pass plan where the spec names a two-pass knob (cp, cp_block_v,
// prep, slot_write, pdl=on, block_v 32 or 64), else the default plan; cp=off takes the two-pass
// plan unsplit, any other two-pass base the default's split rule. Then the spec's fields.
// Throws std::invalid_argument as parse_spec does.
Plan plan_for(const Batch& b, int sm_count, std::string_view spec);
// "" when the kernels can launch plan p for batch b, else why not (a grid past 2^31 - 1 CTAs: a
// forced split too fine for the batch). The variant's supports() returns it as a skip.
std::string unrunnable_reason(const Batch& b, const Plan& p);

}  // namespace gdn::sm90
