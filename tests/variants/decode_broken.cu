// decode/broken (test only): a copy of the simple decode path with one deliberate, realistic
// bug, so the GPU tests can prove that verification catches wrong kernels. The bug: the q/k
// head of value head h is taken as h % H (modulo) instead of h / (HV / H) (repeat-interleave).
// The two agree when HV == H or H == 1, so it only shows with grouped value heads (HV > H > 1),
// where o and the pool both go wrong while every element is still written and finite.
#include "simple/step.cuh"

namespace gdn {
namespace {

using namespace simple;

template <class In, class S> __global__ void __launch_bounds__(kThreads) broken_decode_kernel(decode::Args a) {
  __shared__ TileSmem sm;
  const int64_t b = blockIdx.x;
  const int h = blockIdx.y;
  const int hk = h % a.H;  // BUG (deliberate): must be h / (a.HV / a.H)
  const TileGeom tile = tile_geom(a.K, a.V, a.layout);
  const int64_t head_elems = int64_t(a.K) * a.V;
  const In* q = reinterpret_cast<const In*>(a.q);
  const In* k = reinterpret_cast<const In*>(a.k);
  const In* v = reinterpret_cast<const In*>(a.v);
  In* o = reinterpret_cast<In*>(a.o);

  const int64_t v_row = (b * a.HV + h) * a.V;
  const int64_t slot = slot_at(a.indices, a.index_dtype, b);
  if (slot < 0) {
    if (threadIdx.x < tile.cols) o[v_row + tile.v0 + threadIdx.x] = dev::from_float<In>(0.f);
    return;
  }
  S* state = static_cast<S*>(a.pool) + (slot * a.HV + h) * head_elems;
  load_state_tile(sm, state, tile);
  const int64_t qk_row = (b * a.H + hk) * a.K;
  load_token(sm, q + qk_row, k + qk_row, v + v_row, tile);
  __syncthreads();
  const float out = recurrent_step(sm, a.K, gate_at(a.gate, b, a.HV, h), a.l2norm, a.scale);
  if (threadIdx.x < tile.cols) o[v_row + tile.v0 + threadIdx.x] = dev::from_float<In>(out);
  store_state_tile(sm, state, tile);
}

template <class In> void launch_typed(const decode::Args& a, dim3 grid, cudaStream_t stream) {
  if (a.state_dtype == DType::bf16) broken_decode_kernel<In, __nv_bfloat16><<<grid, kThreads, 0, stream>>>(a);
  else broken_decode_kernel<In, float><<<grid, kThreads, 0, stream>>>(a);
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const decode::Args a = decode::make_args(s, t);
  const dim3 grid(unsigned(a.B), unsigned(a.HV), unsigned((a.V + kTileV - 1) / kTileV));
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (s.input_dtype == DType::f16) launch_typed<__half>(a, grid, stream);
  else launch_typed<__nv_bfloat16>(a, grid, stream);
  CUDA_CHECK(cudaGetLastError());
}

const VariantRegistration kRegistration{Variant{
    "decode/broken", OpKind::decode, Backend::cuda, 75, 1000,
    "TEST ONLY: decode/cuda_simple with q/k heads picked by modulo (h % H); verification must fail on HV > H > 1",
    step_simple_supports, launch, {}, true}};

}  // namespace
}  // namespace gdn
