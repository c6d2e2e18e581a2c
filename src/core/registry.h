// The variant registry. A variant file defines one static VariantRegistration; being linked
// is enough for it to be listed, swept, verified, tested and gated.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/op.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/variant_origin.h"

namespace gdn {

// What a launch gets besides the tensors.
struct LaunchContext {
  void* stream = nullptr;  // cudaStream_t for CUDA variants; unused by CPU variants
  int num_threads = 0;     // CPU variants: worker threads (0 = hardware concurrency)
  int sm_count = 0;        // CUDA variants: multiprocessors of the current device
};

// One knob of a variant's plan, set through the `plan` axis (docs/plans.md): its name, the
// values it takes ("<n>" stands for a positive integer), and what it changes.
struct PlanKnob {
  std::string name;
  std::vector<std::string> values;
  std::string help;
};

struct Variant {
  std::string name;  // "<op>/<variant>", the file stem under kernels/<op>/
  OpKind op = OpKind::prefill;
  Backend backend = Backend::cpu;
  // CUDA compute capability range as major*10+minor (75 = sm_75); ignored for CPU variants.
  int min_arch = 0;
  int max_arch = 1000;
  std::string description;
  // "" when the variant handles this shape, else a short reason why not (shown as a skip).
  std::function<std::string(const Shape&)> supports;
  // Runs the op once on the tensors (device pointers for CUDA variants, host for CPU). CUDA
  // variants only enqueue work on ctx.stream and must not synchronise.
  std::function<void(const Shape&, const TensorSet&, const LaunchContext&)> launch;
  // Optional per-variant tightening of the op's default tolerances (tensor name -> rel L2).
  std::vector<Tolerance> tolerances;
  // Built only for tests (the deliberately broken variant); hidden from default globs.
  bool test_only = false;
  // Optional: the launch plan the variant runs for a shape (kernel, tile, register budget), one
  // printable line that reports record per case.
  std::function<std::string(const Shape&)> plan;
  // The knobs the `plan` axis may set; empty: the variant runs its default plan only.
  std::vector<PlanKnob> knobs;
  // "" when a plan spec ("knob=value,...") is well formed for this variant, else why not. Called
  // when a config loads, so a bad spec stops the load; a spec valid here that a shape cannot run
  // is a skip from `supports`.
  std::function<std::string(const std::string&)> check_plan;
  // Built in (empty) or loaded at run time from a plugin (src/plugin/); recorded per case.
  VariantOrigin origin;
};

class Registry {
 public:
  static Registry& instance();
  void add(Variant v);
  const std::vector<Variant>& variants() const { return variants_; }
  const Variant* find(const std::string& name) const;
  // Variants of `op` whose name matches the glob ('*' and '?'; a glob without '/' is matched
  // against the part after "<op>/" as well).
  std::vector<const Variant*> match(OpKind op, const std::string& glob) const;

 private:
  std::vector<Variant> variants_;
};

struct VariantRegistration {
  explicit VariantRegistration(Variant v) { Registry::instance().add(std::move(v)); }
};

bool glob_match(const std::string& pattern, const std::string& text);
// "<op>/<name>" -> "<name>".
std::string variant_stem(const std::string& name);
// A variant glob: matched against the whole name, and, without '/', against its stem as well.
bool variant_glob_match(const std::string& glob, const std::string& name);

}  // namespace gdn
