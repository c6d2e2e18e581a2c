// The context-parallel half of the prefill/sm90 plan (plan.h): the modelled scan time of a
// plan and the choice of a split (segments.h). Host code, tested without a GPU.
#include <algorithm>
#include <functional>
#include <queue>
#include <vector>

#include "prefill/sm90/plan.h"
#include "prefill/sm90/segments.h"

namespace gdn::sm90 {

namespace {

// H200 (2026-11-25, docs/notes/prefill-sm90.md): v3's scan costs 1.85 us per chunk at block_v 32
// and 2.2 us at 64 with one CTA per SM; the transition pass skips (Q S)^T and O (84 of 232 MMAs
// per state warp) and the o store: 1.77 us per chunk at block_v 64 (kTransitionFactor). The fixup:
// about 3 us per segment step (26 us for 7 steps, 13 us for 3; kFixupStepUs).
// Block_v 128 (two wgmma state warpgroups, fourth session): 1.49x block_v 64's per-chunk time
// on the many-sequence cells (2.95 against 1.98 us on wgmma, 16/64 4096x8), so 3.28 here.
constexpr double kChunkUs32 = 1.85, kChunkUs64 = 2.2, kChunkUs128 = 3.28;
constexpr double kTransitionFactor = 0.8;
constexpr double kFixupStepUs = 3.0, kLaunchUs = 4.0;

double chunk_us(int block_v) { return block_v == 32 ? kChunkUs32 : block_v == 64 ? kChunkUs64 : kChunkUs128; }

// Longest chain first onto the SM that frees first; chains in chunks.
int64_t makespan_chunks(std::vector<int64_t>& chains, int sm_count) {
  std::sort(chains.begin(), chains.end(), std::greater<>());
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> free_at;
  for (int i = 0; i < sm_count; ++i) free_at.push(0);
  int64_t end = 0;
  for (const int64_t c : chains) {
    const int64_t t = free_at.top() + c;
    free_at.pop();
    free_at.push(t);
    end = std::max(end, t);
  }
  return end;
}

int64_t chunks_of(int64_t len) { return (len + kChunk - 1) / kChunk; }

}  // namespace

double modeled_scan_us(const Batch& b, const Plan& p, int sm_count) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  const int L = p.kernel == kKernelV3 ? p.seg_chunks : 0;
  std::vector<int64_t> scan, transition;
  int64_t fixup_steps = 0;
  for (const int64_t len : b.lens) {
    const int64_t chunks = chunks_of(len), segs = segments_of(len, L);
    fixup_steps = std::max(fixup_steps, segs - 1);
    for (int64_t s = 0; s < segs; ++s) {
      const int64_t seg = L > 0 ? std::min<int64_t>(L, chunks - s * L) : chunks;
      scan.insert(scan.end(), size_t(int64_t(p.v_blocks(b.V)) * b.HV), seg);
      if (s + 1 < segs) transition.insert(transition.end(), size_t(int64_t(2 * kHeadDim / p.cp_block_v) * b.HV), seg);
    }
  }
  double us = double(makespan_chunks(scan, sm_count)) * chunk_us(p.block_v);
  if (L > 0)
    us += double(makespan_chunks(transition, sm_count)) * chunk_us(p.cp_block_v) * kTransitionFactor +
          double(fixup_steps) * kFixupStepUs + 2 * kLaunchUs;
  return us;
}

Plan choose_context_parallel(const Batch& b, const Plan& p, int sm_count) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  if (p.kernel != kKernelV3 || int64_t(kHeadDim / 32) * b.HV * b.sequences > 4 * int64_t(sm_count)) return p;
  const int64_t max_chunks = chunks_of(b.max_len());
  Plan best = p;
  double best_us = 0.9 * modeled_scan_us(b, p, sm_count);
  for (int L = 4; L < max_chunks && L <= 512; L *= 2)
    for (const int bv : {32, 64})
      for (const int cp_bv : {32, 64}) {
        Plan q = p;
        q.seg_chunks = L, q.block_v = bv, q.cp_block_v = cp_bv;
        const double us = modeled_scan_us(b, q, sm_count);
        if (us < best_us) best = q, best_us = us;
      }
  return best;
}

}  // namespace gdn::sm90
