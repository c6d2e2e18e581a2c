#include "core/types.h"

#include <array>
#include <utility>

namespace gdn {
namespace {

template <class E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<OpKind, 3> kOps{{{OpKind::prefill, "prefill"}, {OpKind::decode, "decode"}, {OpKind::mtp, "mtp"}}};
constexpr NameTable<DType, 7> kDTypes{{{DType::f32, "f32"},
                                       {DType::bf16, "bf16"},
                                       {DType::f16, "f16"},
                                       {DType::i32, "i32"},
                                       {DType::i64, "i64"},
                                       {DType::fp8e4m3, "fp8e4m3"},
                                       {DType::i8, "int8"}}};
constexpr NameTable<Layout, 2> kLayouts{{{Layout::vk, "vk"}, {Layout::kv, "kv"}}};
constexpr NameTable<GateForm, 2> kGates{{{GateForm::log, "log"}, {GateForm::raw, "raw"}}};
constexpr NameTable<InputDist, 5> kDists{{{InputDist::standard, "standard"},
                                          {InputDist::strong_decay, "strong_decay"},
                                          {InputDist::no_decay, "no_decay"},
                                          {InputDist::beta_one, "beta_one"},
                                          {InputDist::positive_keys, "positive_keys"}}};
constexpr NameTable<IndexPattern, 4> kPatterns{{{IndexPattern::identity, "identity"},
                                                {IndexPattern::random, "random"},
                                                {IndexPattern::padded, "padded"},
                                                {IndexPattern::high, "high"}}};
constexpr NameTable<Backend, 2> kBackends{{{Backend::cpu, "cpu"}, {Backend::cuda, "cuda"}}};
constexpr NameTable<TimingMode, 3> kModes{{{TimingMode::cold, "cold"}, {TimingMode::hot, "hot"}, {TimingMode::graph, "graph"}}};

template <class E, std::size_t N>
std::string_view name_of(const NameTable<E, N>& t, E e) {
  for (auto& [k, v] : t)
    if (k == e) return v;
  return "?";
}

template <class E, std::size_t N>
std::optional<E> parse(const NameTable<E, N>& t, std::string_view s) {
  for (auto& [k, v] : t)
    if (v == s) return k;
  return std::nullopt;
}

template <class E, std::size_t N>
std::vector<std::string> names(const NameTable<E, N>& t) {
  std::vector<std::string> out;
  for (auto& [k, v] : t) out.emplace_back(v);
  return out;
}

}  // namespace

std::string_view to_string(OpKind e) { return name_of(kOps, e); }
std::string_view to_string(DType e) { return name_of(kDTypes, e); }
std::string_view to_string(Layout e) { return name_of(kLayouts, e); }
std::string_view to_string(GateForm e) { return name_of(kGates, e); }
std::string_view to_string(InputDist e) { return name_of(kDists, e); }
std::string_view to_string(IndexPattern e) { return name_of(kPatterns, e); }
std::string_view to_string(Backend e) { return name_of(kBackends, e); }
std::string_view to_string(TimingMode e) { return name_of(kModes, e); }

std::optional<OpKind> parse_op(std::string_view s) { return parse(kOps, s); }
std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::f32;
  if (s == "fp16" || s == "float16") return DType::f16;
  if (s == "i8") return DType::i8;
  return parse(kDTypes, s);
}
std::optional<Layout> parse_layout(std::string_view s) { return parse(kLayouts, s); }
std::optional<GateForm> parse_gate(std::string_view s) { return parse(kGates, s); }
std::optional<InputDist> parse_input_dist(std::string_view s) { return parse(kDists, s); }
std::optional<IndexPattern> parse_index_pattern(std::string_view s) { return parse(kPatterns, s); }
std::optional<TimingMode> parse_timing_mode(std::string_view s) { return parse(kModes, s); }

template <> std::vector<std::string> valid_names<OpKind>() { return names(kOps); }
template <> std::vector<std::string> valid_names<DType>() { return names(kDTypes); }
template <> std::vector<std::string> valid_names<Layout>() { return names(kLayouts); }
template <> std::vector<std::string> valid_names<GateForm>() { return names(kGates); }
template <> std::vector<std::string> valid_names<InputDist>() { return names(kDists); }
template <> std::vector<std::string> valid_names<IndexPattern>() { return names(kPatterns); }
template <> std::vector<std::string> valid_names<TimingMode>() { return names(kModes); }

std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::fp8e4m3: return 1;
    case DType::i8: return 1;
  }
  return 0;
}

}  // namespace gdn
