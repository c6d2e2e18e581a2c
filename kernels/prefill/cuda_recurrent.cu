// prefill/cuda_recurrent: the plain token recurrence on CUDA cores, the baseline every chunked
// prefill variant must beat. One block per (sequence, value head, 32 value columns) walks its
// sequence token by token with its K x 32 state slice in shared memory. The grid needs no host
// copy of cu_seqlens: each block reads its own sequence bounds.
#include <fmt/format.h>

#include "simple/state_tile.cuh"
#include "core/cuda_check.h"
#include "core/registry.h"
#include "core/state_format.h"
#include "prefill/op.h"
#include "prefill/state_ref.cuh"

namespace gdn {
namespace {

using namespace simple;

template <class In> __global__ void __launch_bounds__(kThreads) prefill_recurrent_kernel(prefill::Args a) {
  __shared__ TileSmem sm;
  const int64_t n = blockIdx.x;  // sequence
  const int h = blockIdx.y;      // value head
  const int hk = h / (a.HV / a.H);
  const TileGeom tile = tile_geom(a.K, a.V, a.layout);
  const In* q = reinterpret_cast<const In*>(a.q);
  const In* k = reinterpret_cast<const In*>(a.k);
  const In* v = reinterpret_cast<const In*>(a.v);
  In* o = reinterpret_cast<In*>(a.o);

  // Dense h0 / ht, or the pool form's slot (f32 or bf16; index -1: zeros, no write).
  const prefill::StateRef from = prefill::initial_state(a, n, h), to = prefill::final_state(a, n, h);
  if (from.bf16) load_state_tile(sm, static_cast<const __nv_bfloat16*>(from.p), tile);
  else load_state_tile(sm, static_cast<const float*>(from.p), tile);
  const int64_t end = a.cu_seqlens[n + 1];
  for (int64_t t = a.cu_seqlens[n]; t < end; ++t) {
    const int64_t qk_row = (t * a.H + hk) * a.K, v_row = (t * a.HV + h) * a.V;
    load_token(sm, q + qk_row, k + qk_row, v + v_row, tile);
    __syncthreads();
    const float out = recurrent_step(sm, a.K, gate_at(a.gate, t, a.HV, h), a.l2norm, a.scale);
    if (threadIdx.x < tile.cols) o[v_row + tile.v0 + threadIdx.x] = dev::from_float<In>(out);
  }
  __syncthreads();  // the last step's update is in sm.state
  if (to.p == nullptr) return;
  if (to.bf16) store_state_tile(sm, static_cast<__nv_bfloat16*>(to.p), tile);
  else store_state_tile(sm, static_cast<float*>(to.p), tile);
}

// The state never leaves fp32 (docs/method.md 4, "fp32 path"); o stays at the bf16 default.
constexpr double kStateTolerance = 1e-4;

std::string supports(const Shape& s) {
  if (auto why = unsupported_8bit_state(s); !why.empty()) return why;
  if (s.dk > kMaxK) return fmt::format("K must be <= {} (got {})", kMaxK, s.dk);
  if (s.h_v > 65535) return fmt::format("h_v must be <= 65535 (got {})", s.h_v);
  if (s.has_checkpoints()) return "prefill checkpoints (docs/method.md 2.4) are not implemented by this variant";
  return "";
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const prefill::Args a = prefill::make_args(s, t, nullptr);
  const dim3 grid(unsigned(a.N), unsigned(a.HV), unsigned((a.V + kTileV - 1) / kTileV));
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (a.input_dtype == DType::f16) prefill_recurrent_kernel<__half><<<grid, kThreads, 0, stream>>>(a);
  else prefill_recurrent_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(a);
  CUDA_CHECK(cudaGetLastError());
}

const VariantRegistration kRegistration{Variant{
    "prefill/cuda_recurrent", OpKind::prefill, Backend::cuda, 75, 1000,
    "token recurrence on CUDA cores, one block per (sequence, head, 32 value columns); simple baseline",
    supports, launch, {{"ht", kStateTolerance}}, false}};

}  // namespace
}  // namespace gdn
