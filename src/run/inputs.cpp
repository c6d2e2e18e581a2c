// Seeded input generation (docs/method.md 3).
//
// Every value is a pure function of (seed, tensor name, element index): a counter-based hash
// (splitmix64 finaliser over a per-tensor key and the index) gives two uniforms, Box-Muller turns
// them into one N(0,1) draw in double, and the result is rounded once to the tensor's dtype.
// Any sub-range can therefore be regenerated bit for bit, in any order, on any thread.
//
// Distributions (x ~ N(0,1) per element, HV value heads, "late heads" = h >= ceil(0.75 HV)):
//   q, k      N(0,1); positive_keys: uniform [0,1) (times 1 - 2^-8, so bf16 rounding stays below 1);
//             with l2norm off, each row of K draws scaled to an L2 norm r ~ U[1/2, 1] per row (in
//             double, before the one rounding): normalised up front as docs/method.md 3 says, but
//             not to exactly 1, so a kernel that normalises anyway still fails verification
//   v         N(0,1)
//   h0, pool  N(0,1), rounded to the tensor dtype (bf16 pools hold bf16 values); an 8-bit pool
//             (fp8e4m3, int8) holds the codes of N(0,1) x Q / 4 (4 sigma at full scale Q)
//   pool_scale  the rows' fp32 scales of an 8-bit pool: (4 / Q) 2^u, u ~ U[-1, 1], so a row holds
//             N(0,1) 2^u values and rows differ in magnitude by up to 4x
//   g         standard: logsigmoid(x) / 16, late heads exactly 0 (25 % no-decay heads)
//             strong_decay: -A_h * softplus(0.5 x + 1), A_h ~ U[0,16] per head, A_0 = 0
//             no_decay: 0; beta_one and positive_keys use the standard g
//   beta      sigmoid(x); beta_one: exactly 1
//   raw gate (gate: raw):
//   A_log     standard: log(U[1/16, 1]) per head, late heads -inf (exp(A_log) = 0: no decay)
//             strong_decay: log(A_h) with the A_h above (head 0: -inf); no_decay: -inf everywhere
//   a         N(0,1) (bf16)
//   dt_bias   0.5 x - 2 (fp32)
//   b         N(0,1) (bf16); beta_one: 100 (sigmoid(100) == 1 in fp32)
//   cu_seqlens  int32 prefix sums of the sequence lengths, cu[0] = 0
//   indices   make_indices(): identity i; random B distinct slots of [0, P); padded as random
//             with every 8th row (i % 8 == 7) = -1; high the top B slots P-1, P-2, ... shuffled
// A_h is one per-head stream shared by g and A_log, so both gate forms describe the same decays.
#include "run/inputs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <exception>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/checkpoints.h"
#include "core/fnv.h"
#include "core/half.h"
#include "core/state_quant.h"
#include "run/input_distribution.h"

namespace gdn {
namespace {

constexpr double kTwoPi = 6.283185307179586476925;
using namespace input_numbers;
// positive_keys draws are scaled by 1 - 2^-8 so rounding to bf16 (or f16) never reaches 1.
constexpr double kBelowOne = kPositiveKeysScale;

uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) { return gdn::fnv1a(s, kFnvTruncatedBasis); }

// One independent counter-based stream per (seed, name).
class Stream {
 public:
  Stream(uint64_t seed, const std::string& name) : key_(mix64(mix64(seed) ^ fnv1a(name))) {}
  uint64_t bits(int64_t i, int lane = 0) const {
    return mix64(key_ ^ mix64(uint64_t(i) * 2 + uint64_t(lane)));
  }
  // Uniform in [0, 1).
  double uniform(int64_t i, int lane = 0) const { return double(bits(i, lane) >> 11) * 0x1.0p-53; }
  double normal(int64_t i) const {
    double u1 = double((bits(i, 0) >> 11) + 1) * 0x1.0p-53;  // (0, 1]: log never sees 0
    double u2 = uniform(i, 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  }

 private:
  uint64_t key_;
};

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double logsigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }

// A_h ~ U[0,16] of the strong_decay distribution; head 0 never decays.
double strong_decay_rate(uint64_t seed, int head) {
  if (head == 0) return 0.0;
  return kStrongDecayRateMax * Stream(seed, "#strong_decay_rate").uniform(head);
}

// Rounds to the tensor dtype through fp32 (what a device-side cast from fp32 would give).
void store_float(DType d, void* dst, int64_t i, double x) {
  if (d == DType::f32) static_cast<float*>(dst)[i] = float(x);
  else static_cast<uint16_t*>(dst)[i] = float_to_half(d, float(x));
}

void store_int(DType d, void* dst, int64_t i, int64_t x) {
  if (d == DType::i32) static_cast<int32_t*>(dst)[i] = int32_t(x);
  else if (d == DType::i64) static_cast<int64_t*>(dst)[i] = x;
  else throw std::invalid_argument("integer fill needs an i32 or i64 tensor (got " + std::string(to_string(d)) + ")");
}

// Value of element i of a float tensor.
double float_value(const Shape& s, const TensorSpec& spec, const Stream& st, uint64_t seed, int64_t i) {
  const int hv = s.h_v;
  const int head = int(i % hv);  // gate tensors are [.., HV]
  switch (spec.fill) {
    case Fill::qk: return s.inputs == InputDist::positive_keys ? kBelowOne * st.uniform(i) : st.normal(i);
    case Fill::v:
    case Fill::state:
    case Fill::raw_a: return st.normal(i);
    case Fill::log_gate:
      switch (s.inputs) {
        case InputDist::no_decay: return 0.0;
        case InputDist::strong_decay: return -strong_decay_rate(seed, head) * softplus(kStrongSoftplusScale * st.normal(i) + kStrongSoftplusShift);
        default: return head >= first_still_head(hv) ? 0.0 : logsigmoid(st.normal(i)) / kLogGateDivisor;
      }
    case Fill::beta: return s.inputs == InputDist::beta_one ? 1.0 : sigmoid(st.normal(i));
    case Fill::a_log:
      switch (s.inputs) {
        case InputDist::no_decay: return -INFINITY;
        case InputDist::strong_decay: return std::log(strong_decay_rate(seed, int(i)));  // log 0 = -inf
        default: return int(i) >= first_still_head(hv) ? -INFINITY : std::log(kALogLow + (1.0 - kALogLow) * st.uniform(i));
      }
    case Fill::dt_bias: return kDtBiasScale * st.normal(i) + kDtBiasShift;
    case Fill::raw_b: return s.inputs == InputDist::beta_one ? kBetaOneRawB : st.normal(i);
    default: break;
  }
  throw std::logic_error("fill kind of tensor '" + spec.name + "' is not a float distribution");
}

bool is_float(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; }

void check_range(const TensorSpec& spec, int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > spec.numel())
    throw std::out_of_range("fill range [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside tensor '" +
                            spec.name + "' of " + std::to_string(spec.numel()) + " elements");
}

int64_t random_below(const Stream& st, int64_t i, uint64_t n) {
  return int64_t((static_cast<unsigned __int128>(st.bits(i)) * n) >> 64);
}

// q or k without the kernel's L2 norm: every row (its last dimension, K elements) scaled from the
// norm of its draws to its own norm in [1/2, 1] (|k| <= 1 with beta <= 1 keeps the state bounded
// over any length); a range's first and last rows are drawn whole, so [begin, end) gives the same
// bits whichever range it is made in.
void fill_normalised_rows(const Shape& s, const TensorSpec& spec, void* dst, const Stream& st, uint64_t seed,
                          int64_t begin, int64_t end, int64_t origin = 0) {
  const int64_t K = spec.dims.back();
  const Stream norms(seed, spec.name + "#row_norm");
  std::vector<double> draws(static_cast<size_t>(K));
  for (int64_t row = begin / K; row * K < end; ++row) {
    double sum = 0;
    for (int64_t j = 0; j < K; ++j) {
      draws[size_t(j)] = float_value(s, spec, st, seed, row * K + j);
      sum += draws[size_t(j)] * draws[size_t(j)];
    }
    const double scale = sum > 0 ? (kRowNormLow + (1.0 - kRowNormLow) * norms.uniform(row)) / std::sqrt(sum) : 0.0;
    for (int64_t j = std::max(begin, row * K); j < std::min(end, (row + 1) * K); ++j)
      store_float(spec.dtype, dst, j - origin, scale * draws[size_t(j - row * K)]);
  }
}

// Elements [begin, end) of a float input, element i stored at dst[i - origin].
void fill_float_elements(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int64_t begin, int64_t end,
                         int64_t origin) {
  const Stream st(seed, spec.name);
  if (spec.fill == Fill::qk && !s.l2norm) return fill_normalised_rows(s, spec, dst, st, seed, begin, end, origin);
  for (int64_t i = begin; i < end; ++i) store_float(spec.dtype, dst, i - origin, float_value(s, spec, st, seed, i));
}

// An 8-bit code no quantizer writes: the fp8 e4m3 NaN, or int8 -128 (codes stay within +-127).
uint8_t poison_code(DType d) { return d == DType::fp8e4m3 ? 0x7f : 0x80; }

}  // namespace

void fill_input_range(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int64_t begin, int64_t end) {
  check_range(spec, begin, end);
  switch (spec.fill) {
    case Fill::none: return;  // outputs: the caller poisons them
    case Fill::cu_seqlens: {
      if (spec.numel() != int64_t(s.seqlens.size()) + 1)
        throw std::invalid_argument("cu_seqlens has " + std::to_string(spec.numel()) + " elements, expected " +
                                    std::to_string(s.seqlens.size() + 1));
      int64_t acc = 0;
      for (int64_t i = 0; i < end; ++i) {
        if (i >= begin) store_int(spec.dtype, dst, i, acc);
        if (i < int64_t(s.seqlens.size())) acc += s.seqlens[size_t(i)];
      }
      return;
    }
    case Fill::accepted: {  // 0..T, uniform: 0 = start from the pool slot
      const Stream st(seed, spec.name);
      for (int64_t i = begin; i < end; ++i)
        store_int(spec.dtype, dst, i, std::min<int64_t>(s.tokens, int64_t(st.uniform(i) * (s.tokens + 1))));
      return;
    }
    case Fill::indices: {
      auto idx = make_indices(s, seed);
      if (spec.numel() != int64_t(idx.size()))
        throw std::invalid_argument("indices has " + std::to_string(spec.numel()) + " elements, expected " +
                                    std::to_string(idx.size()) + " rows");
      for (int64_t i = begin; i < end; ++i) store_int(spec.dtype, dst, i, idx[size_t(i)]);
      return;
    }
    case Fill::checkpoint_indices:
    case Fill::checkpoint_positions: {
      const int64_t J = checkpoint_columns(s);
      if (spec.numel() != int64_t(s.seqlens.size()) * J)
        throw std::invalid_argument(spec.name + " has " + std::to_string(spec.numel()) + " elements, expected " +
                                    std::to_string(int64_t(s.seqlens.size()) * J));
      std::vector<int64_t> table;
      if (spec.fill == Fill::checkpoint_indices) {
        table = make_checkpoint_indices(s, seed);
      } else {
        table.assign(size_t(spec.numel()), 0);  // 0 past a sequence's list
        for (int64_t n = 0; n < int64_t(s.seqlens.size()); ++n) {
          const auto at = checkpoint_positions(s, n);
          std::copy(at.begin(), at.end(), table.begin() + n * J);
        }
      }
      for (int64_t i = begin; i < end; ++i) store_int(spec.dtype, dst, i, table[size_t(i)]);
      return;
    }
    default: break;
  }
  if (spec.fill == Fill::state && quant::is_8bit(spec.dtype)) {
    const Stream st(seed, spec.name);
    const float full_scale = quant::qmax(spec.dtype) / 4.f;
    for (int64_t i = begin; i < end; ++i)
      static_cast<uint8_t*>(dst)[i] = quant::encode(spec.dtype, float(st.normal(i)) * full_scale);
    return;
  }
  if (spec.fill == Fill::state_scale) {
    const Stream st(seed, spec.name);
    const DType codes = s.state_dtype;
    if (!quant::is_8bit(codes) || spec.dtype != DType::f32)
      throw std::invalid_argument("tensor '" + spec.name + "' holds the f32 scales of an 8-bit pool");
    // Scales spread over a factor of four around 4 / Q; fp8's are powers of two, as its format's.
    for (int64_t i = begin; i < end; ++i) {
      const double x = 4.0 / quant::qmax(codes) * std::exp2(2.0 * st.uniform(i) - 1.0);
      static_cast<float*>(dst)[i] = float(codes == DType::fp8e4m3 ? std::exp2(std::floor(std::log2(x))) : x);
    }
    return;
  }
  if (!is_float(spec.dtype))
    throw std::invalid_argument("tensor '" + spec.name + "' has dtype " + std::string(to_string(spec.dtype)) +
                                " but its fill needs a float dtype");
  fill_float_elements(s, spec, dst, seed, begin, end, 0);
}

void fill_input_window(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int64_t begin, int64_t end) {
  check_range(spec, begin, end);
  if (!is_float(spec.dtype) || spec.fill == Fill::none || spec.fill == Fill::state)
    throw std::invalid_argument("a window of tensor '" + spec.name + "' needs a float input distribution");
  fill_float_elements(s, spec, dst, seed, begin, end, begin);
}

void fill_input(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int threads) {
  const int64_t n = spec.numel();
  // Integer tensors are small and computed as a whole (make_indices runs once).
  if (spec.fill == Fill::none || spec.fill == Fill::cu_seqlens || spec.fill == Fill::indices ||
      spec.fill == Fill::accepted || spec.fill == Fill::checkpoint_indices || spec.fill == Fill::checkpoint_positions ||
      n < (1 << 16)) {
    fill_input_range(s, spec, dst, seed, 0, n);
    return;
  }
  int64_t workers = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<int64_t>(workers, n / (1 << 15));
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  for (int64_t w = 0; w < workers; ++w) {
    int64_t b = n * w / workers, e = n * (w + 1) / workers;
    pool.emplace_back([&, w, b, e] {
      try {
        fill_input_range(s, spec, dst, seed, b, e);
      } catch (...) {
        errors[size_t(w)] = std::current_exception();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<int64_t> make_indices(const Shape& s, uint64_t seed) {
  const int64_t B = s.num_sequences(), P = s.pool_slots();  // rows: the batch, or prefill's sequences
  if (B < 0 || P < B)
    throw std::invalid_argument("pool of " + std::to_string(P) + " slots cannot give " + std::to_string(B) +
                                " rows distinct slots");
  std::vector<int64_t> out(static_cast<size_t>(B));
  const Stream st(seed, "#indices");
  switch (s.indices) {
    case IndexPattern::identity: std::iota(out.begin(), out.end(), int64_t{0}); break;
    case IndexPattern::random:
    case IndexPattern::padded: {
      // Partial Fisher-Yates over [0, P) with only the displaced slots stored: O(B) for any P.
      std::unordered_map<int64_t, int64_t> moved;
      moved.reserve(size_t(2 * B));
      auto at = [&](int64_t i) {
        auto it = moved.find(i);
        return it == moved.end() ? i : it->second;
      };
      for (int64_t i = 0; i < B; ++i) {
        int64_t j = i + random_below(st, i, uint64_t(P - i));
        int64_t vi = at(i), vj = at(j);
        moved[j] = vi;
        out[size_t(i)] = vj;
      }
      if (s.indices == IndexPattern::padded)
        for (int64_t i = kPaddingEvery - 1; i < B; i += kPaddingEvery) out[size_t(i)] = -1;
      break;
    }
    case IndexPattern::high: {
      for (int64_t i = 0; i < B; ++i) out[size_t(i)] = P - 1 - i;
      for (int64_t i = B - 1; i > 0; --i) std::swap(out[size_t(i)], out[size_t(random_below(st, i, uint64_t(i + 1)))]);
      break;
    }
  }
  return out;
}

std::vector<int64_t> make_checkpoint_indices(const Shape& s, uint64_t seed) {
  const int64_t N = int64_t(s.seqlens.size()), J = checkpoint_columns(s), P = s.pool_slots();
  std::vector<int64_t> out(size_t(N * J), -1);
  if (J == 0) return out;
  std::vector<char> taken(size_t(P), 0);
  for (int64_t slot : make_indices(s, seed))
    if (slot >= 0) taken[size_t(slot)] = 1;
  std::vector<int64_t> free;
  for (int64_t slot = 0; slot < P; ++slot)
    if (!taken[size_t(slot)]) free.push_back(slot);
  if (s.indices == IndexPattern::high) {
    std::reverse(free.begin(), free.end());  // the top free slots: large offsets
  } else if (s.indices != IndexPattern::identity) {
    const Stream st(seed, "#checkpoint_indices");
    for (int64_t i = int64_t(free.size()) - 1; i > 0; --i)
      std::swap(free[size_t(i)], free[size_t(random_below(st, i, uint64_t(i + 1)))]);
  }
  size_t next = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t count = int64_t(checkpoint_positions(s, n).size());
    for (int64_t j = 0; j < count; ++j) {
      if (next >= free.size())
        throw std::invalid_argument("pool of " + std::to_string(P) + " slots has too few free slots for the checkpoints");
      if (!checkpoint_skipped(s, n * J + j)) out[size_t(n * J + j)] = free[next++];
    }
  }
  return out;
}

void poison(const TensorSpec& spec, void* dst) {
  const int64_t n = spec.numel();
  if (spec.dtype == DType::f32) std::fill_n(static_cast<uint32_t*>(dst), n, kPoison32);
  else if (spec.dtype == DType::bf16 || spec.dtype == DType::f16) std::fill_n(static_cast<uint16_t*>(dst), n, kPoison16);
  else if (quant::is_8bit(spec.dtype)) std::fill_n(static_cast<uint8_t*>(dst), n, poison_code(spec.dtype));
  // Integer tensors have no NaN; they are never outputs.
}

bool is_poison(const TensorSpec& spec, const void* data, int64_t i) {
  if (spec.dtype == DType::f32) return static_cast<const uint32_t*>(data)[i] == kPoison32;
  if (spec.dtype == DType::bf16 || spec.dtype == DType::f16) return static_cast<const uint16_t*>(data)[i] == kPoison16;
  if (quant::is_8bit(spec.dtype)) return static_cast<const uint8_t*>(data)[i] == poison_code(spec.dtype);
  return false;
}

}  // namespace gdn
