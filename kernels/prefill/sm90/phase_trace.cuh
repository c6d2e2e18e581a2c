// v4's phase trace, a diagnostic build only (cmake -DGDNBENCH_SM90_TRACE=ON defines GDN_V4_TRACE;
// never timed, never shipped): one thread of each role adds the clock64() cycles since its previous
// mark to the phase it just finished, per chunk, in shared memory; CTAs 0 and gridDim.x / 2 leave
// each role's averages over their chunks in global memory, and a one-thread kernel after the launch
// prints them as "V4TRACE" lines. How to run and read it:
// kernels/prefill/sm90/README.md, "Phase trace". Without GDN_V4_TRACE every mark compiles to nothing.
#pragma once

#include <cstdio>

namespace gdn::sm90 {

// The roles: thread 0 (state warpgroup 0), the preparation's thread 0, thread 128 (state warpgroup 1).
enum TraceRole { kTraceState0 = 0, kTracePrep = 1, kTraceState1 = 2 };
// The state warpgroups' phases of chunk j, in order (kTrStateLanded and kTrStateNorms are chunk j + 1's).
enum StatePhase {
  kTrStateWaitFull = 1, kTrStateLanded = 2, kTrStateNorms = 3, kTrStateU = 4, kTrStateQS = 5, kTrStateWVd = 6,
  kTrStateUpdateO = 7, kTrStateStoreO = 8, kTrStateWaitEmpty = 9, kTrStateVCopies = 10
};
constexpr const char* kStatePhaseNames =
    "1 wait full, 2 next chunk landed, 3 its norms, 4 U, 5 QS, 6 W and V_d, 7 update and O, 8 store o, 9 wait empty, "
    "10 v copies";
// The preparation's phases of chunk i, in order.
enum PrepPhase {
  kTrPrepCopies = 0, kTrPrepOwnLanded = 1, kTrPrepWaitNormed = 2, kTrPrepBarrier = 3, kTrPrepScalars = 4, kTrPrepKKWait = 5,
  kTrPrepLStores = 6, kTrPrepQKWait = 7, kTrPrepPgStores = 8, kTrPrepBarrier2 = 9, kTrPrepInverse = 10, kTrPrepAg = 11, kTrPrepFull = 12
};
constexpr const char* kPrepPhaseNames =
    "0 next chunk's copies issued, 1 own copies landed, 2 wait normed, 3 barrier, 4 scalars, 5 K K^T wait, 6 L stores, "
    "7 Q K^T wait, 8 P_g stores, 9 barrier, 10 inverse, 11 A_g, 12 fence and full";

#ifdef GDN_V4_TRACE
struct PhaseTrace {
  unsigned long long acc[16];
  long long last;
  int chunks;
};
__shared__ PhaseTrace v4_trace[3];  // by TraceRole
__device__ __forceinline__ void trace_begin(int role, bool on) {
  if (on) {
    for (int k = 0; k < 16; ++k) v4_trace[role].acc[k] = 0;
    v4_trace[role].chunks = 0;
    v4_trace[role].last = clock64();
  }
}
__device__ __forceinline__ void trace_mark(int role, bool on, int phase) {
  if (on) {
    const long long now = clock64();
    v4_trace[role].acc[phase] += (unsigned long long)(now - v4_trace[role].last);
    v4_trace[role].last = now;
  }
}
__device__ __forceinline__ void trace_chunk(int role, bool on) {
  if (on) ++v4_trace[role].chunks;
}
// The averages of CTAs 0 and gridDim.x / 2, left in global memory: a printf inside v4 would be a
// call across its wgmma pipeline, and ptxas would serialize every wgmma of the kernel (C7510).
struct PhaseTraceOut {
  unsigned long long cycles[16];
  int cta, chunks;
};
static __device__ PhaseTraceOut v4_trace_out[2][3];  // [CTA 0, gridDim.x / 2][TraceRole]
__device__ __forceinline__ void trace_end(int role, bool on) {
  const int slot = blockIdx.x == 0 ? 0 : blockIdx.x == gridDim.x / 2 ? 1 : -1;
  if (on && slot >= 0) {
    const PhaseTrace& t = v4_trace[role];
    const int n = t.chunks > 0 ? t.chunks : 1;
    PhaseTraceOut& o = v4_trace_out[slot][role];
    for (int k = 0; k < 16; ++k) o.cycles[k] = t.acc[k] / (unsigned long long)n;
    o.cta = int(blockIdx.x), o.chunks = t.chunks;
  }
}
// One "V4TRACE" line per CTA and role; launched after each v4 launch (launch.cu) in trace builds.
__global__ void print_v4_trace() {
  for (int slot = 0; slot < 2; ++slot)
    for (int role = 0; role < 3; ++role) {
      const PhaseTraceOut& o = v4_trace_out[slot][role];
      const unsigned long long* v = o.cycles;
      printf("V4TRACE cta %d role %d chunks %d: %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
             "%llu | %s\n",
             o.cta, role, o.chunks, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13],
             v[14], v[15], role == kTracePrep ? kPrepPhaseNames : kStatePhaseNames);
    }
}
#define GDN_V4_TRACE_DO(...) __VA_ARGS__
#else
#define GDN_V4_TRACE_DO(...)
#endif

}  // namespace gdn::sm90
