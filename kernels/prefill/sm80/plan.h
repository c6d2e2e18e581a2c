// The launch plan of prefill/sm80 as data: the two-pass schedule of prefill/sm90 on mma.sync alone
// (no wgmma, TMA, bulk copies or programmatic launches), its scan at block_v 32 or 64 with two or
// three stages, and its context-parallel split (transition pass at block_v 32, fixup). Host code (C++17,
// no CUDA), so tests check it without a GPU and every report records it. A plan spec (the `plan`
// axis) sets the knobs, prep=head|group, stages=2|3, block_v=32|64, q_tile=staged|single, cp=off|<n>
// fixup_m=1|2 and fixup_threads=128|256. Design:
// kernels/prefill/sm80/README.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"
#include "core/shape.h"
#include "prefill/sm90/fixup_layout.h"
#include "prefill/sm90/plan.h"

namespace gdn::sm80 {

using sm90::Batch;

constexpr int kBlockV = 32;             // the transition pass's value columns per CTA, and the scan's unless it takes 64
constexpr int kDefaultSmCount = 108;    // A100, when the device cannot be asked (plan on a CPU host)

// Shared memory a scan CTA of block_v columns and `stages` stages (single_q: one q tile) asks for
// (dynamic), and its static block beside it.
int scan_smem_bytes(int block_v, int stages, bool single_q = false);
constexpr int kScanStaticSmem = 1024;
// The preparation kernel's dynamic shared memory.
int prep_smem_bytes();
// The fixup's dynamic shared memory with one or two M buffers and 256 or 128 threads (the
// kernel's own count).
using sm90::fixup_smem_bytes;

struct Plan {
  // The preparation as one CTA per (slot, q/k head), its GVA group's value heads in turn, instead of
  // one per (slot, value head): prefill/sm90's kernel and rule (sm90::prep_group_wins).
  bool prep_group = false;
  // The scan's stages: three where the device allows a block their 173,056 bytes (sm_90, sm_100),
  // else two (115,712: sm_80's 166,912).
  int stages = 2;
  // Value columns per scan CTA: 32 (two mma.sync state warps) or 64 (four).
  int block_v = 32;
  // One q tile beside the two stages (sm90::kScanQ1Kernel, 98,304 bytes at block_v 32): the next
  // chunk's copies wait for this chunk's (Q S)^T. For devices allowing a block 99 KiB (sm_86,
  // sm_89, sm_120), where two full stages (115,712) do not fit.
  bool single_q = false;
  // Context parallelism (prefill/sm90/segments.h): segments of seg_chunks chunks, 0 for none.
  int seg_chunks = 0;
  // The fixup's M buffers: two (the next segment's M copied during this one's product) where the
  // device allows a block 180,224 bytes, else one (112,640).
  int fixup_m_buffers = 2;
  // The fixup's threads: 256, or 128 (four k slices' partial sums instead of eight: 96,256 bytes
  // with one M buffer) where a block may not have 112,640 bytes (sm_86, sm_89, sm_120).
  int fixup_threads = 256;
  // Scan CTAs: one per value block of block_v columns, value head and segment.
  int64_t ctas(const Batch& b) const;
  // One line for reports, e.g. "chunk 64, block_v 32 (6 warps, 2 own the state, 4 load), ...".
  std::string describe(const Batch& b, int sm_count) const;
  // The split's part of describe(): "; no context parallelism" or its segments and kernels.
  std::string split(const Batch& b) const;
  bool operator==(const Plan& o) const {
    return prep_group == o.prep_group && stages == o.stages && block_v == o.block_v && single_q == o.single_q &&
           seg_chunks == o.seg_chunks && fixup_m_buffers == o.fixup_m_buffers && fixup_threads == o.fixup_threads;
  }
  bool operator!=(const Plan& o) const { return !(*this == o); }
};

// "" when the kernels handle the shape, else why not: prefill/sm90's limits (bf16/f16 inputs,
// K = V = 128, one grid), and what this family does not do yet (8-bit pools, checkpoints).
std::string unsupported_reason(const Shape& s);
// "" when a device allowing `smem_optin` bytes of shared memory per block (0: unknown, a CPU host)
// can run plan p, else why not.
std::string unrunnable_reason(const Plan& p, int smem_optin);

// The default plan. smem_optin: what the device allows a block (0: unknown, planned as sm_80's
// 166,912). Unsplit, block_v 32 where its grid fits one wave (one CTA per SM), else 64: twice the
// state warps an SM, half the CTAs. The split is prefill/sm90's choice (choose_context_parallel)
// over this family's scans (block_v 32, and 64 where the device allows its block; the transition
// pass at 32), against that unsplit plan: few sequences x value heads, long sequences. A device
// that cannot hold two full stages at block_v 32 takes one q tile at block_v 32, and for a split
// the fixup of 128 threads and one M buffer.
Plan choose(const Batch& b, int sm_count, int smem_optin);
const std::vector<PlanKnob>& plan_knobs();
// The default plan with the spec's fields ("" is the default). Throws std::invalid_argument naming
// the spec and the knob for a malformed spec, an unknown knob or a bad value.
Plan plan_for(const Batch& b, int sm_count, int smem_optin, std::string_view spec);
std::string check_spec(std::string_view spec);

}  // namespace gdn::sm80
