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

// H200, one CTA per SM (kernels/prefill/sm90/README.md): the two-pass scan costs
// 1.80 us per chunk at block_v 32 (mma.sync), 1.92 at 64 and 2.88 at 128 (wgmma: one and two
// state warpgroups). The transition pass (no (Q S)^T, no o) at cp_block_v 64 takes 1.65 us per
// chunk where one CTA has an SM to itself, but three fit an SM, so a deep grid costs
// 0.61 SM-us per chunk and chain (0.55 at cp_block_v 32, whose grid is twice as deep). The fixup:
// a launch plus one dependent step per segment boundary, each longer with more value heads. Every
// CTA also pays about 5 us of its own (state in and out, the ring's fill and drain), which short
// segments feel, 12 us at block_v 128 (two warpgroups to start and drain). A transition chain costs
// its SM about 6 us of its own beside the other chains there. prefill/sm80's block_v 64 scan (four
// mma.sync state warps) takes 1.19x its block_v 32 chunk (H200: 2.28 against 1.91 us a chunk on
// the unsplit 1x32768 cells), 2.15 in these units.
constexpr double kCtaUs = 5.0, kCtaUs128 = 12.0, kTransitionChainSmUs = 6.0;
constexpr double kChunkUs32 = 1.80, kChunkUs64 = 1.92, kChunkUs128 = 2.88, kChunkUs64MmaSync = 2.15;
constexpr double kTransitionChunkUs64 = 1.65, kTransitionChunkUs32 = 1.50;
constexpr double kTransitionSmUs64 = 0.61, kTransitionSmUs32 = 0.55;
constexpr double kFixupUs = 8.0, kFixupStepUs = 1.5, kFixupStepUsPerHead = 0.13, kLaunchUs = 4.0;

double chunk_us(int block_v, bool mma_sync) {
  if (block_v == 32) return kChunkUs32;
  return block_v == 64 ? (mma_sync ? kChunkUs64MmaSync : kChunkUs64) : kChunkUs128;
}
double cta_us(int block_v) { return block_v == 128 ? kCtaUs128 : kCtaUs; }

// The transition pass: chains of chunks, several CTAs per SM. The longer of the longest chain
// alone and the whole pass spread evenly over the SMs.
double transition_us(const std::vector<int64_t>& chains, int cp_block_v, int sm_count) {
  int64_t longest = 0, total = 0;
  for (const int64_t c : chains) longest = std::max(longest, c), total += c;
  const bool narrow = cp_block_v == 32;
  return std::max(double(longest) * (narrow ? kTransitionChunkUs32 : kTransitionChunkUs64) + kCtaUs,
                  (double(total) * (narrow ? kTransitionSmUs32 : kTransitionSmUs64) +
                   double(chains.size()) * kTransitionChainSmUs) /
                      sm_count);
}

// Chains in grid order (as the hardware starts the CTAs) onto the SM that frees first (one CTA
// per SM); chains in chunks, the makespan in us.
double makespan_us(const std::vector<int64_t>& chains, double per_chunk_us, double per_cta_us, int sm_count) {
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int i = 0; i < sm_count; ++i) free_at.push(0);
  double end = 0;
  for (const int64_t c : chains) {
    const double t = free_at.top() + double(c) * per_chunk_us + per_cta_us;
    free_at.pop();
    free_at.push(t);
    end = std::max(end, t);
  }
  return end;
}

int64_t chunks_of(int64_t len) { return (len + kChunk - 1) / kChunk; }

// The segment lengths a split considers for a longest sequence of max_chunks chunks: the powers of
// two from 8 to 512, and for every segment count the shortest multiple of 8 that needs no more
// segments, so that segments x heads can meet a whole number of waves (8/24 1x32768: 5 segments of
// 104 chunks are 120 CTAs, one wave, where 4 of 128 leave 36 SMs idle). All under max_chunks.
std::vector<int> segment_lengths(int64_t max_chunks) {
  std::vector<int> out;
  for (int L = 8; L < max_chunks && L <= 512; L *= 2) out.push_back(L);
  for (int64_t segs = 2; segs <= max_chunks / 8; ++segs) {
    const int64_t L = (max_chunks + segs - 1) / segs;
    const int L8 = int((L + 7) / 8 * 8);
    if (L8 < max_chunks && L8 <= 512) out.push_back(L8);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

double modeled_scan_us(const Batch& b, const Plan& p, int sm_count, bool mma_sync) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  const int L = p.schedule == Schedule::two_pass ? p.seg_chunks : 0;
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
  double us = makespan_us(scan, chunk_us(p.block_v, mma_sync), cta_us(p.block_v), sm_count);
  if (L > 0)
    us += transition_us(transition, p.cp_block_v, sm_count) + kFixupUs +
          double(fixup_steps) * (kFixupStepUs + kFixupStepUsPerHead * double(b.HV)) + 2 * kLaunchUs;
  return us;
}

Plan choose_context_parallel(const Batch& b, const Plan& p, int sm_count, int mma_sync_block_v) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  const int64_t unsplit_ctas = int64_t(kHeadDim / 32) * b.HV * b.sequences;  // the unsplit grid at block_v 32
  if (p.schedule != Schedule::two_pass || unsplit_ctas > 4 * int64_t(sm_count)) return p;
  const int64_t max_chunks = chunks_of(b.max_len());
  // A split must be modelled 10 % faster, or no slower where the unsplit grid fills at most a
  // quarter of the SMs (H100: 2/8 1x2048, 32 CTAs, modelled 62.2 split against
  // 62.6 us, measured 0.84x the unsplit call at L = 8). On mma.sync scans 8 % (H200, prefill/sm80:
  // 4/16 and 16/16 1x4096 at block_v 64 in segments of 16, modelled 9.2 % faster, measured 0.88x
  // the unsplit call; no other cell of the 171 changes until 7 %, 8/24 1x32768).
  const bool thin = 4 * unsplit_ctas <= int64_t(sm_count);
  Plan best = p;
  const bool mma_sync = mma_sync_block_v > 0;
  double best_us = (thin ? 1.0 : mma_sync ? 0.92 : 0.9) * modeled_scan_us(b, p, sm_count, mma_sync);
  // Segments of 8 chunks or more: at 4 the fixup's steps and the scan's own start cost more than
  // they save (H100: 1.3-2.2x the L = 8 call on 2/8, 4/16 and 16/16 at 1x2048
  // and 1x4096).
  std::vector<int> block_vs{32, 64, 128}, cp_block_vs{32, 64};
  if (mma_sync) {
    block_vs = mma_sync_block_v >= 64 ? std::vector<int>{32, 64} : std::vector<int>{32};
    cp_block_vs = {32};  // prefill/sm80's transition pass runs at block_v 32
  }
  for (const int L : segment_lengths(max_chunks))
    for (const int bv : block_vs)
      for (const int cp_bv : cp_block_vs) {
        Plan q = p;
        q.seg_chunks = L, q.block_v = bv, q.cp_block_v = cp_bv;
        const double us = modeled_scan_us(b, q, sm_count, mma_sync);
        if (us < best_us) best = q, best_us = us;
      }
  // Four kernels in a row: each after the first a programmatic dependent of the one before (H100,
  // same binary: 0.95-0.98x on nine of ten split cells, 16/32 1x32768 1.02x).
  if (best.seg_chunks > 0) best.pdl = true;
  return best;
}

}  // namespace gdn::sm90
