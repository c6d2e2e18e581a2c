#include "core/axes.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/checkpoints.h"
#include "core/errors.h"
#include "core/fnv.h"
#include "core/json_fields.h"
#include "core/op.h"

namespace gdn {
namespace {

using json = nlohmann::json;

// An axis stored in one field, with its key part.
#define GDN_FIELD_IO(member, name)                                                  \
  [](const Shape& s, json& j) { j[name] = s.member; }, [](const json& j, Shape& s) { read(j, name, s.member); }
#define GDN_ENUM_IO(member, name, parse)                                                          \
  [](const Shape& s, json& j) { j[name] = to_string(s.member); },                                 \
      [](const json& j, Shape& s) { read_enum(j, name, s.member, parse); }

// The checksum keeps long explicit lists that share a label apart.
std::string seq_part(const Shape& s) {
  std::string k = " seq=" + s.seqlens_label();
  if (s.seqlens.size() > 8) {
    uint64_t h = kFnvTruncatedBasis;
    for (auto l : s.seqlens) h = fnv1a_step(h, uint64_t(l));
    k += fmt::format("#{:08x}", uint32_t(h));
  }
  return k;
}

// Absent without checkpoints, so the keys of other points are unchanged; long explicit lists
// print their count and a checksum.
std::string checkpoint_part(const Shape& s) {
  if (s.checkpoint_every > 0) return fmt::format(" ckpt={}", s.checkpoint_every);
  if (s.checkpoint_at.empty()) return "";
  const std::string text = checkpoint_at_text(s.checkpoint_at);
  if (text.size() <= 48) return " ckpt=" + text;
  uint64_t h = kFnvTruncatedBasis;
  int64_t count = 0;
  for (const auto& group : s.checkpoint_at) {
    h = fnv1a_step(h, uint64_t(group.size()));
    for (auto p : group) h = fnv1a_step(h, uint64_t(p)), ++count;
  }
  return fmt::format(" ckpt=at:{}pos#{:08x}", count, uint32_t(h));
}

// A prefill point without a pool (h0 / ht): the pool axes are not part of its key.
bool dense(const Shape& s) { return s.op == OpKind::prefill && !s.prefill_pool(); }

std::vector<AxisDef> make_axes() {
  return {
      {"inputs", kBitAll, "enum", {"inputs"}, GDN_ENUM_IO(inputs, "inputs", parse_input_dist), 17,
       [](const Shape& s) { return s.inputs == InputDist::standard ? std::string() : fmt::format(" inputs={}", to_string(s.inputs)); }},
      {"input_dtype", kBitAll, "enum", {"input_dtype"}, GDN_ENUM_IO(input_dtype, "input_dtype", parse_dtype), 16,
       [](const Shape& s) { return s.input_dtype == DType::bf16 ? std::string() : fmt::format(" in={}", to_string(s.input_dtype)); }},
      {"gate", kBitAll, "enum", {"gate"}, GDN_ENUM_IO(gate, "gate", parse_gate), 14,
       [](const Shape& s) { return fmt::format(" gate={}", to_string(s.gate)); }},
      {"l2norm", kBitAll, "bool", {"l2norm"}, GDN_FIELD_IO(l2norm, "l2norm"), 15,
       [](const Shape& s) { return s.l2norm ? std::string() : std::string(" no_l2norm"); }},
      {"scale", kBitAll, "number", {"scale"}, GDN_FIELD_IO(scale, "scale"), 18,
       [](const Shape& s) { return s.scale > 0.0 ? fmt::format(" scale={}", s.scale) : std::string(); }},
      {"state_dtype", kBitAll, "enum", {"state_dtype"}, GDN_ENUM_IO(state_dtype, "state_dtype", parse_dtype), 5,
       [](const Shape& s) { return dense(s) ? std::string() : fmt::format(" state={}", to_string(s.state_dtype)); }},
      {"layout", kBitAll, "enum", {"layout"}, GDN_ENUM_IO(layout, "layout", parse_layout), 6,
       [](const Shape& s) { return fmt::format(" layout={}", to_string(s.layout)); }},
      {"indices", kBitAll, "enum", {"indices"}, GDN_ENUM_IO(indices, "indices", parse_index_pattern), 9,
       [](const Shape& s) { return dense(s) ? std::string() : fmt::format(" idx={}", to_string(s.indices)); }},
      {"index_dtype", kBitAll, "enum", {"index_dtype"}, GDN_ENUM_IO(index_dtype, "index_dtype", parse_dtype), 10,
       [](const Shape& s) {
         return dense(s) || s.index_dtype == DType::i64 ? std::string() : fmt::format("/{}", to_string(s.index_dtype));
       }},
      {"cache_intermediate", kBitMtp, "bool", {"cache_intermediate"}, GDN_FIELD_IO(cache_intermediate, "cache_intermediate"), 11,
       [](const Shape& s) { return fmt::format(" cache={}", s.cache_intermediate ? 1 : 0); }},
      {"update_state", kBitMtp, "bool", {"update_state"}, GDN_FIELD_IO(update_state, "update_state"), 12,
       [](const Shape& s) { return fmt::format(" update={}", s.update_state ? 1 : 0); }},
      {"rollback", kBitMtp, "bool", {"rollback"}, GDN_FIELD_IO(rollback, "rollback"), 13,
       [](const Shape& s) { return s.rollback ? std::string(" rollback=1") : std::string(); }},
      {"h0", kBitPrefill, "bool", {"has_h0"}, GDN_FIELD_IO(has_h0, "has_h0"), 7,
       [](const Shape& s) { return s.has_h0 ? std::string() : std::string(" no_h0"); }},
      {"heads", kBitAll, "pair", {"h_qk", "h_v"},
       [](const Shape& s, json& j) { j["h_qk"] = s.h_qk, j["h_v"] = s.h_v; },
       [](const json& j, Shape& s) { read(j, "h_qk", s.h_qk), read(j, "h_v", s.h_v); }, 0,
       [](const Shape& s) { return fmt::format(" h{}/{}", s.h_qk, s.h_v); }},
      {"head_dim", kBitAll, "int", {"dk", "dv"},
       [](const Shape& s, json& j) { j["dk"] = s.dk, j["dv"] = s.dv; },
       [](const json& j, Shape& s) { read(j, "dk", s.dk), read(j, "dv", s.dv); }, 1,
       [](const Shape& s) { return fmt::format(" d{}x{}", s.dk, s.dv); }},
      {"pool", kBitAll, "int or \"Nx\"", {"pool"}, GDN_FIELD_IO(pool, "pool"), 8,
       [](const Shape& s) { return dense(s) ? std::string() : fmt::format(" pool={}", s.pool_slots()); }},
      {"seqlens", kBitPrefill, "sequence set", {"seqlens"}, GDN_FIELD_IO(seqlens, "seqlens"), 3, seq_part},
      // Rank 11 sits after the pool's parts; it is shared only with mtp-only axes.
      {"checkpoints", kBitPrefill, "int or \"at:P+P/P\"", {"checkpoint_every", "checkpoint_at"},
       [](const Shape& s, json& j) { j["checkpoint_every"] = s.checkpoint_every, j["checkpoint_at"] = s.checkpoint_at; },
       [](const json& j, Shape& s) { read(j, "checkpoint_every", s.checkpoint_every), read(j, "checkpoint_at", s.checkpoint_at); },
       11, checkpoint_part},
      {"tokens", kBitMtp, "int", {"tokens"}, GDN_FIELD_IO(tokens, "tokens"), 2,
       [](const Shape& s) { return fmt::format(" T={}", s.tokens); }},
      {"batch", kBitSteps, "int", {"batch"}, GDN_FIELD_IO(batch, "batch"), 4,
       [](const Shape& s) { return fmt::format(" B={}", s.batch); }},
      // Last in the table, so it turns fastest: the plans of one shape run one after another.
      // Last in the key too, and absent for the default plan: default-plan keys are unchanged.
      {"plan", kBitAll, "plan spec", {"plan"}, GDN_FIELD_IO(plan, "plan"), 19,
       [](const Shape& s) { return s.plan.empty() ? std::string() : " plan=" + s.plan; }},
  };
}

#undef GDN_FIELD_IO
#undef GDN_ENUM_IO

}  // namespace

const std::vector<AxisDef>& shape_axes() {
  static const std::vector<AxisDef> axes = make_axes();
  return axes;
}

const AxisDef* find_axis(std::string_view key) {
  for (const auto& a : shape_axes())
    if (a.key == key) return &a;
  return nullptr;
}

std::string Shape::key() const {
  std::vector<std::pair<int, std::string>> parts;
  for (const auto& a : shape_axes())
    if (a.ops & op_bit(op)) parts.emplace_back(a.key_rank, a.key_part(*this));
  std::sort(parts.begin(), parts.end());
  std::string k;
  for (const auto& [rank, text] : parts) k += text;
  return k.empty() ? k : k.substr(1);  // every part starts with a space
}

json shape_to_json(const Shape& s) {
  json j{{"op", to_string(s.op)}};
  for (const auto& a : shape_axes()) a.write(s, j);
  return j;
}

Shape shape_from_json_object(const json& j) {
  if (!j.is_object()) throw input_error("shape must be an object");
  Shape s;
  read_enum(j, "op", s.op, parse_op);
  for (const auto& a : shape_axes()) a.read(j, s);
  return s;
}

json axes_to_json() {
  json axes = json::array();
  for (const auto& a : shape_axes()) {
    json ops = json::array();
    for (OpKind op : {OpKind::prefill, OpKind::decode, OpKind::mtp})
      if (a.ops & op_bit(op)) ops.push_back(to_string(op));
    axes.push_back({{"key", a.key}, {"ops", ops}, {"type", a.type}, {"json", a.json}});
  }
  json defaults = json::object();
  for (const OpDef* op : all_ops()) defaults[op->name] = shape_to_json(op->default_shape());
  return {{"axes", axes}, {"defaults", defaults}};
}

}  // namespace gdn
