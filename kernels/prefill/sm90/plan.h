// The launch plan of prefill/sm90 as data: kernel version, chunk size, value columns per CTA
// (block_v), warps, grid and shared memory for a call. Host code (C++17, no CUDA), so tests check
// it without a GPU and every report records it (Variant::plan). GDNBENCH_SM90_PLAN (e.g.
// "kernel=v1", "block_v=64", "kernel=v3,block_v=32", "slot=packed") replaces fields of the chosen
// plan for an A/B in one binary. Reasons: docs/notes/prefill-sm90.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
  static Batch of(const Shape& s);
  int64_t max_len() const;
};

struct Plan {
  int block_v = 128;       // value columns per CTA: 128, 64 or 32 (kColsPerWarp per state warp); v2, v3: 64 or 32
  int kernel = kKernelV1;  // kKernelV1 (kernel.cuh), kKernelV2 (kernel_v2.cuh), kKernelV3 (prep_kernel.cuh, kernel_v3.cuh)
                           // or kKernelV4 (kernel_v4.cuh, fused; override only)
  // Context parallelism (v3 only; segments.h): sequences cut into segments of seg_chunks chunks
  // (0: off), the transition pass at cp_block_v columns per CTA.
  int seg_chunks = 0;
  int cp_block_v = 64;
  // v3: the state warps of a block_v 64 (or 128, override only) pass as warpgroups on wgmma
  // (state_warpgroup.cuh); passes at block_v 32, and every pass when false, use mma.sync.
  bool wgmma = false;
  bool wgmma_at(int bv) const { return wgmma && (kernel == kKernelV3 || kernel == kKernelV4) && bv >= 64; }
  // v3: the preparation kernel as one CTA per (slot, q/k head), the GVA group's value heads in
  // turn (prep_kernel.cuh), instead of one per (slot, value head).
  bool prep_group = false;
  // v3: the workspace slot's form (workspace.h SlotForm). Override only: packed (the tiles' lower
  // pieces and the scan's vectors, 10112 bytes instead of 18448; slower where the scan is
  // latency-bound) and lean (no P_g: the scan's load warps compute it, 10368 bytes).
  int slot = kSlotFull;
  // v3: the preparation writes a full or lean slot by bulk copies from one thread (prep_kernel.cuh
  // write_slot) where its grid is more than one wave of CTAs, else by every thread's 16-byte stores
  // (ninth session, H100: 0.98-0.99x the whole call on the wide cells, 1.01-1.02x on single-wave
  // 2/8 cells). Override slot_write=bulk|threads.
  bool bulk_slot_writes = false;
  // The chunk inverse's form (smem_layout.h InverseForm): TF32 here (v1, v2); choose() gives v3 the
  // hier form (8 x 8 diagonal eliminations in registers, f16 merges) since the ninth session
  // (0.97-0.995x the TF32 form's whole call on the wide A/B set, H100), and v4 since the tenth;
  // tf32 and f16 by override.
  int inverse = kInverseTf32;
  // v3, v4: at block_v 128 on wgmma the two state warpgroups issue their products in turn
  // (state_warpgroup.cuh, "ping-pong"), so one's epilogue runs under the other's products.
  // Override wg_order=pingpong|free.
  bool pingpong = false;
  bool pingpong_at(int bv) const { return pingpong && bv == 128 && wgmma_at(bv); }
  // v3: the kernels after the preparation launch as programmatic dependents (PDL) of the one
  // before: their CTAs start as that one's retire and wait for its results, so no launch gap
  // separates them. Chosen for every split and where the preparation is one wave (choose).
  // Override pdl=on|off.
  bool pdl = false;

  int warps() const { return warps_for(block_v, kernel); }
  int state_warps() const { return block_v / kColsPerWarp; }
  int v_blocks(int V) const { return V / block_v; }
  // Scan CTAs (one per value block, value head and segment slot; segments.h).
  int64_t ctas(const Batch& b) const;
  // v3's preparation CTAs: one per (slot, value head), or per (slot, q/k head) with prep_group.
  int64_t prep_grid(const Batch& b) const;
  int smem_bytes() const { return SmemLayout(block_v, kernel).bytes; }
  // One line, e.g. "chunk 64, block_v 32 (6 warps, 2 own the state, 4 prepare the next chunk),
  // 128 CTAs on 132 SMs, 149.0 KiB smem, kernel v2 ...".
  std::string describe(const Batch& b, int sm_count) const;
  bool operator==(const Plan& o) const {
    return block_v == o.block_v && kernel == o.kernel && seg_chunks == o.seg_chunks &&
           (seg_chunks == 0 || cp_block_v == o.cp_block_v) && wgmma == o.wgmma && prep_group == o.prep_group &&
           slot == o.slot && bulk_slot_writes == o.bulk_slot_writes &&
           inverse == o.inverse && pingpong_at(block_v) == o.pingpong_at(o.block_v) &&
           pdl == o.pdl;
  }
};

// The scan's modelled time in microseconds (kernel v3; the preparation, the same with or without
// context parallelism, is left out): the scan's CTAs placed in grid order (segment slots in
// order, as the GPU starts them) on the SM that frees first, one CTA per SM, a chunk costing
// kChunkUs at its block_v; the transition pass as its longest chain or its chains spread over the
// SMs; plus the fixup's segment steps and the two extra launches. The constants are H200
// measurements (docs/notes/prefill-sm90.md).
double modeled_scan_us(const Batch& b, const Plan& p, int sm_count);

// "" when the kernel handles the shape, else why not (head sizes other than 128 are declined).
std::string unsupported_reason(const Shape& s);

// The block_v that gives the most CTAs one resident wave can hold (one CTA per SM): the
// smallest of 32, 64, 128 (v2: 32, 64) whose grid still fits on sm_count SMs, else the largest.
// A smaller block_v shortens each CTA's serial chunk chain (fewer state warps share the tensor
// cores) but repeats the chunk's state-independent work (K K^T, the inverse, Q K^T) once per
// V-block. v2 has no block_v 128: 8 state warps and 4 prep warps would not fit 255 registers a lane.
// v3 stops at 64 by that rule, then takes 128 (two wgmma state warpgroups) where its modelled
// scan is 5 % shorter: several waves at 64 that become fewer, fuller waves at 128.
Plan choose(const Batch& b, int sm_count, int kernel);
// The default: kernel v3 (H200, 2026-11-25, one call, ms v1 / v2 / v3: 16/32 1x32768 5.387 /
// 4.727 / 1.911; 16/32 1x2048 0.347 / 0.306 / 0.134; 16/64 4096x8 2.668 / 4.800 / 2.635; 16/32
// 1024x8 0.353 / 0.623 / 0.355: docs/notes/prefill-sm90.md), or kernel v4 at block_v 128 where
// fused_v4_wins.
Plan choose(const Batch& b, int sm_count);
// Kernel v4 (fused, no workspace) instead of v3's plan `v3`: GVA 1 (v3 reads and writes the most
// workspace and q/k bytes per value head there), v3 unsplit, one CTA per (sequence, value head)
// filling 0.9 of the SMs, and no sequence longer than twice the mean. H100, tenth session, same
// binary, the 38 GVA-1 cells of the qwen35 table: 0.807-0.833x v3 on all six such cells (16/16
// 4096x8 and 1024x8; 32/32 8192x4, 4096x8, 2048x4, 1024x8); v4 lost on every other GVA-1 cell
// (1.5-3.8x: too few CTAs at block_v 128, or no context parallelism) and on every GVA 3-4 cell of
// its grid (1.02-1.2x). GVA 2 where the grid is 1.8 x the SMs or more (twelfth session, the
// factored gate: 16/32 1024x8 0.92x, 4096x8 0.98x; one wave, 2048x4 0.99x and 8192x4 1.03x stay v3).
bool fused_v4_wins(const Batch& b, const Plan& v3, int sm_count);
// The fields of an override spec, comma-separated "key=value": block_v=32|64|128, kernel=v1|v2|v3|v4,
// cp=off|<chunks per segment, 1..65536>, cp_block_v=32|64, mma=wgmma|sync, prep=head|group,
// slot=full|packed|lean, slot_write=bulk|threads, inverse=tf32|f16|hier, wg_order=pingpong|free,
// pdl=on|off (0 / -1 where not given);
// throws std::invalid_argument naming the spec.
struct Override {
  int block_v = 0, kernel = 0;
  int seg_chunks = -1;  // cp=off (0) or cp=<chunks per segment>; -1 when not given
  int cp_block_v = 0;
  int wgmma = -1;  // mma=wgmma (1) or mma=sync (0); -1 when not given
  int prep_group = -1;  // prep=group (1) or prep=head (0); -1 when not given
  int slot = -1;         // slot=full|packed|lean (SlotForm); -1 when not given
  int bulk_slot_writes = -1;  // slot_write=bulk (1) or threads (0); -1 when not given
  int inverse = -1;      // inverse=tf32|f16|hier (InverseForm); -1 when not given
  int pingpong = -1;     // wg_order=pingpong (1) or free (0); -1 when not given
  int pdl = -1;          // pdl=on (1) or off (0); -1 when not given
};

Override parse_override(std::string_view spec);
// `chosen` with the fields of `spec` replaced ("" keeps it); throws std::invalid_argument for a
// malformed spec or a plan no kernel has (v2 or v3 with block_v 128, a split without v3).
Plan apply_override(const Plan& chosen, std::string_view spec);
// The context-parallel plan for a v3 plan `p` (its block_v for the scan): the segment length
// (8 .. 512 chunks: the powers of two, and for each segment count the shortest multiple of 8 that
// gives it, so that segments x heads can fill a wave) and block_v of both passes with the least
// modelled time, if it beats `p`'s by 10 % (or at all where the unsplit grid at block_v 32 fills
// at most a quarter of the SMs), else `p`; a split's kernels are programmatic dependents (pdl). Considered only when the
// unsplit grid at block_v 32 is under four waves (few heads x few sequences); a split makes a
// sequence's bits depend on the segment length, so on the batch.
Plan choose_context_parallel(const Batch& b, const Plan& p, int sm_count);
// choose() for the override's kernel (with none named: v3's choice where the spec names a field
// only v3 has, else the default choice), then the spec's fields, when GDNBENCH_SM90_PLAN is set.
Plan plan_for(const Batch& b, int sm_count);

}  // namespace gdn::sm90
