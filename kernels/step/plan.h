// The routing of decode/fast and mtp/fast as data: which kernel of this family serves a call,
// with which tile, on which tensor-core form, and the register budget it was built for. Host
// code (C++17, no CUDA), so tests call choose() without a GPU and every report records the plan
// of every case; the `plan` axis (docs/plans.md) sets fields of it through the knobs below, so an
// A/B is one config, one run and one report.
// The measurements behind each threshold: kernels/step/README.md "Plan rules".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"
#include "core/shape.h"

namespace gdn::step {

constexpr int kHeadK = 128;  // the head size K every kernel of the family is written for

enum class Kernel {
  decode_vk,      // decode.cuh: T = 1, vk, the tile kept as loaded (packed bf16 stays packed)
  decode_kv,      // decode.cuh: T = 1, bf16 kv
  tokens_vk,      // kernel.cuh step_vk_kernel: T tokens on CUDA cores, vk
  tokens_kv,      // kernel.cuh step_kv_kernel: T tokens on CUDA cores, kv (and fp32 kv decode)
  read_only_vk,   // read_only.cuh: update_state off, T <= kGramTokens, from the starting state's dots
  mma,            // mtp_mma.cuh: chunks of 8 tokens on tensor cores, one warp per 16 state rows (8-bit pools: mtp_mma_8bit.cuh)
  mma_pipelined,  // mtp_mma_pipelined.cuh: the same on a persistent grid, next tile copied ahead
};
// The tensor-core kernels' arithmetic: bf16 MMAs on a state split into two bf16 halves, or TF32.
enum class MmaForm { none, bf16, tf32 };

std::string_view to_string(Kernel);
std::string_view to_string(MmaForm);

// ---- register budgets: resident warps per SM each build is compiled for ----------------------
// Registers per thread for `warps` resident warps per SM: what __launch_bounds__ lets ptxas use.
constexpr int register_budget(int warps) { return 65536 / (warps * 32) / 8 * 8; }
constexpr int kBlockWarps = 4;  // warps per block of the multi-warp kernels (no block barriers)
constexpr int decode_vk_min_warps(bool bf16, int depth) { return bf16 || depth <= 2 ? 20 : 16; }
constexpr int kDecodeKvMinWarps = 12;
constexpr int kTokensVkMinWarps = 16;  // 128 registers: T = 4 B = 128 139 us vs 147 at 12 warps
// 8-bit pools' T-token build: 16 warps spill 48 bytes at depth 4 (the rows' absmax and the IEEE
// divisions of the re-quantized stores), so depth 4 is budgeted for 12 (unmeasured).
constexpr int tokens_vk_8bit_min_warps(int depth) { return depth == 4 ? 12 : kTokensVkMinWarps; }
// 8-bit pools' decode build: 20 warps per SM (<= 96 registers) up to depth 4; depth 8 (32 rows,
// 4 KB of codes per warp in flight, as the bf16 tile at depth 4) spills 28 + 48 bytes at 96
// registers and none at 128, so it is budgeted for 16 (64 KB per SM in flight; unmeasured).
constexpr int kDecode8bitDeepDepth = 8;  // decode_vk depth 8: 8-bit pools only
constexpr int decode_vk_8bit_min_warps(int depth) { return depth == kDecode8bitDeepDepth ? 16 : 20; }
constexpr int read_only_min_warps(bool bf16) { return bf16 ? 20 : 16; }  // four tiles fit (e31ce7a)
constexpr int kMmaMinWarps = 12;
constexpr int kMmaPipelinedMinWarps = 11;  // 184 registers: shared memory fits 11 (f85e5db, 7ef9836)
constexpr int kNoMinWarps = 0;             // step_kv_kernel: no bound, up to 255 registers

// The spills ptxas (CUDA 13.0) reports at these budgets. On sm_90, the measured architecture, a
// few bytes in four bf16 builds, each measured faster at its budget than with more registers and
// fewer warps: decode_vk depth 4 (102 registers, 16 warps: 8-17 % slower), decode_kv depth 4
// (unbounded: the tile stays widened at 230 registers), read_only_vk with 4 tiles (bf16:
// 129.3 us against 143.9 with 2 tiles), the bf16 tensor-core update build (3b0359f); and the
// 8-bit tensor-core build (mtp_mma_8bit.cuh), whose spilled words sit outside the chunk math. On
// sm_80, sm_100 and sm_120 the family is built but has never been measured: the sm_90 budgets
// spill there, recorded as they are. tests/cpu/
// test_register_budgets.cpp fails on any other spill, or on more bytes than these.
struct KnownSpill {
  int arch;  // sm_XX
  Kernel kernel;
  bool bf16;
  int depth, tiles;
  bool read_only;
  MmaForm form;
  int max_spill_bytes;  // spill stores + spill loads
  bool eight_bit = false;  // the 8-bit pools' build (fp8e4m3 and int8 alike)
};
constexpr KnownSpill kKnownSpills[] = {
    {90, Kernel::decode_vk, true, 4, 1, false, MmaForm::none, 20},
    {90, Kernel::decode_kv, true, 4, 1, false, MmaForm::none, 28},
    {90, Kernel::read_only_vk, true, 4, 4, false, MmaForm::none, 24},
    {90, Kernel::mma, true, 0, 1, false, MmaForm::bf16, 40},
    // the 8-bit tensor-core build: loop-invariant words (lane, the stage size), reloaded once per
    // chunk and at the store, outside the chunk math (nvdisasm line info); unmeasured
    {90, Kernel::mma, false, 0, 1, false, MmaForm::bf16, 32, true},
    // unmeasured architectures
    {80, Kernel::mma, true, 0, 1, false, MmaForm::bf16, 48},
    {80, Kernel::mma, false, 0, 1, false, MmaForm::bf16, 60, true},
    {100, Kernel::mma, false, 0, 1, false, MmaForm::bf16, 64, true},
    {120, Kernel::mma, false, 0, 1, false, MmaForm::bf16, 136, true},
    {100, Kernel::mma, false, 0, 1, false, MmaForm::bf16, 48},
    {100, Kernel::mma, true, 0, 1, false, MmaForm::bf16, 32},
    {100, Kernel::mma_pipelined, false, 0, 1, false, MmaForm::bf16, 148},
    {100, Kernel::mma_pipelined, false, 0, 1, false, MmaForm::tf32, 128},
    {100, Kernel::read_only_vk, true, 4, 2, false, MmaForm::none, 160},
    {100, Kernel::read_only_vk, true, 4, 4, false, MmaForm::none, 32},
    {120, Kernel::mma, false, 0, 1, false, MmaForm::bf16, 120},
    {120, Kernel::mma, true, 0, 1, false, MmaForm::bf16, 48},
    {120, Kernel::mma_pipelined, false, 0, 1, false, MmaForm::bf16, 80},
    {120, Kernel::mma_pipelined, false, 0, 1, false, MmaForm::tf32, 292},
    {120, Kernel::read_only_vk, true, 4, 1, false, MmaForm::none, 32},
    {120, Kernel::read_only_vk, true, 4, 2, false, MmaForm::none, 192},
    {120, Kernel::read_only_vk, true, 4, 4, false, MmaForm::none, 52},
};

// ---- thresholds (each the switch point of an A/B in kernels/step/README.md) --------------------
// (row, value head) pairs are the unit of parallelism: B * HV.
constexpr int kGramTokens = 4;          // read-only calls up to 4 tokens: read_only_vk (7b5468d)
constexpr int kMmaChunk = 8;            // tokens per tensor-core chunk; read-only builds take T <= 8
constexpr int kMmaMinTokens = 8;        // from 8 tokens (vk, no cache) tensor cores win (339996b)
constexpr int kMma8bitMinTokens = 3;  // 8-bit update calls from 3 tokens (plan.cpp uses_mma_8bit)
constexpr int kMmaFp32MinTokens = 6;    // fp32 pools from 6 tokens (e821911) ...
constexpr int64_t kMmaT6MinHeads = 1025;  // ... but T = 6 loses between 5 and 1024 pairs
constexpr int kMmaPipelinedMaxTokens = 8;  // beyond 8 tokens two stages cost occupancy (T = 16)
constexpr int64_t kMmaPipelinedMinHeads = 129;  // below, the persistent grid's setup costs more (337b0d5)
constexpr int64_t kMmaTf32FromHeads = 4096;     // pipelined update builds: TF32 measures faster (3b0359f)
constexpr int64_t kMmaPlainFromHeads = 8192;    // T = 8 update calls: the plain kernel (3b0359f)

// What the routing reads of a decode or mtp call.
struct Call {
  int64_t B = 0;
  int HV = 0, K = 0, V = 0, T = 1;
  Layout layout = Layout::vk;
  DType state_dtype = DType::f32;
  bool update_state = true;  // the final state is written back (off: mtp read-only pool)
  bool cache = false;        // mtp intermediate states are written
  static Call of(const Shape& s);
};

struct Plan {
  Kernel kernel = Kernel::tokens_vk;
  // CUDA-core kernels: vk rows per lane per load (1, 2, 4; a warp covers 4 x depth rows) or kv
  // lanes per K row (2, 4). Deeper tiles keep more bytes in flight per warp, shallower ones make
  // the warps that small batches need. 0 for the tensor-core kernels (16 rows per warp).
  int depth = 0;
  int tiles = 1;                // read_only_vk: tiles per warp (depth 4 only: 1, 2, 4)
  MmaForm form = MmaForm::none;  // tensor-core kernels
  bool read_only = false;       // tensor-core kernels: the build without the state update

  int block_warps() const;  // warps per block
  int min_warps(DType state) const;  // resident warps per SM its registers are budgeted for
  // One line, e.g. "mma_pipelined form=tf32 (1 warp/block, 11 warps/SM, <= 184 registers)".
  std::string describe(DType state) const;
  bool operator==(const Plan& o) const {
    return kernel == o.kernel && depth == o.depth && tiles == o.tiles && form == o.form && read_only == o.read_only;
  }
};

// The plan the fast kernels run for call a (whatever the environment says): mma_plan() when
// uses_mma(a), else cuda_core_plan() at the depth measured best for its size.
Plan choose(const Call& a);
Plan mma_plan(const Call& a);  // the tensor-core kernel, build and form for call a
// The CUDA-core kernel for call a at this tile depth (and, for read_only_vk, its tiles per warp).
Plan cuda_core_plan(const Call& a, int depth);
// "" when plan p can run call a (a kernel of the family takes the call with this tile), else why.
std::string check(const Plan& p, const Call& a);
// The knobs of decode/fast and mtp/fast, one per field of Plan (the `plan` axis sets them).
const std::vector<PlanKnob>& knobs();
// "" when spec names knobs of knobs() with values they take, else why not: the registrations'
// check_plan, run when a config loads. Whether a call can run the plan is check()'s question.
std::string check_spec(const std::string& spec);
// `chosen` (the plan of call a) with fields replaced by the settings of a plan spec, e.g.
// "kernel=mma,form=bf16"; fields not named follow a changed kernel (what choose() gives it for
// a). Throws std::invalid_argument when check_spec refuses the spec. The result is not checked
// against the call: see check().
Plan apply_override(const Plan& chosen, std::string_view spec, const Call& a);
// choose(a) with the settings of spec ("" = the default plan), checked: throws
// std::invalid_argument naming the spec when the result cannot run the call.
Plan plan_for(const Call& a, std::string_view spec);

// The routing rules choose() is made of (exposed for the tests that pin them).
bool uses_decode_kernel(const Call& a);
bool read_only_call(const Call& a);       // tensor-core READ_ONLY builds: no update, T <= 8
bool uses_read_only_kernel(const Call& a);  // read_only_vk
bool uses_mma(const Call& a);
bool uses_pipelined_mma(const Call& a);

}  // namespace gdn::step
