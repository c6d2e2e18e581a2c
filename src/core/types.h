// Small vocabulary types shared by every part of gdnbench (host-only, no CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdn {

enum class OpKind { prefill, decode, mtp };
// fp8e4m3 and i8 are the 8-bit state pool formats: codes with an fp32 scale per row (core/state_quant.h).
enum class DType { f32, bf16, f16, i32, i64, fp8e4m3, i8 };
// State layout per value head: vk = [V][K] (K contiguous, FlashInfer "pretranspose"),
// kv = [K][V] (V contiguous, FLA).
enum class Layout { vk, kv };
// log: g and beta passed directly; raw: A_log, a, dt_bias, b and the kernel computes them.
enum class GateForm { log, raw };
// Input distributions of docs/method.md 3.
enum class InputDist { standard, strong_decay, no_decay, beta_one, positive_keys };
// How decode/mtp rows map to pool slots.
//   identity: row i -> slot i; random: distinct random slots; padded: random with ~1/8 rows = -1;
//   high: distinct slots packed at the end of the pool (large 64-bit offsets).
enum class IndexPattern { identity, random, padded, high };
enum class Backend { cpu, cuda };

// The epsilon of the q/k L2 norm (docs/method.md 1): x / sqrt(sum(x^2) + eps). Kernels add it in
// fp32 (the float nearest 1e-6), the reference in fp64.
inline constexpr double kL2NormEps = 1e-6;
inline constexpr float kL2NormEpsF = float(kL2NormEps);
static_assert(kL2NormEpsF == 1e-6f);
enum class TimingMode { cold, hot, graph };

std::string_view to_string(OpKind);
std::string_view to_string(DType);
std::string_view to_string(Layout);
std::string_view to_string(GateForm);
std::string_view to_string(InputDist);
std::string_view to_string(IndexPattern);
std::string_view to_string(Backend);
std::string_view to_string(TimingMode);

// Parsers return nullopt for unknown names; valid_names lists what is accepted (for messages).
std::optional<OpKind> parse_op(std::string_view);
std::optional<DType> parse_dtype(std::string_view);
std::optional<Layout> parse_layout(std::string_view);
std::optional<GateForm> parse_gate(std::string_view);
std::optional<InputDist> parse_input_dist(std::string_view);
std::optional<IndexPattern> parse_index_pattern(std::string_view);
std::optional<TimingMode> parse_timing_mode(std::string_view);

template <class E> std::vector<std::string> valid_names();

std::size_t dtype_size(DType);

}  // namespace gdn
