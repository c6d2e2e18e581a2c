#include "core/registry.h"

#include <algorithm>
#include <stdexcept>

namespace gdn {

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(Variant v) {
  if (find(v.name)) throw std::logic_error("variant registered twice: " + v.name);
  if (!v.supports) v.supports = [](const Shape&) { return std::string(); };
  variants_.push_back(std::move(v));
  std::sort(variants_.begin(), variants_.end(), [](const Variant& a, const Variant& b) { return a.name < b.name; });
}

const Variant* Registry::find(const std::string& name) const {
  for (auto& v : variants_)
    if (v.name == name) return &v;
  return nullptr;
}

std::vector<const Variant*> Registry::match(OpKind op, const std::string& glob) const {
  std::vector<const Variant*> out;
  for (auto& v : variants_) {
    if (v.op != op) continue;
    // A test-only variant is matched by its exact name only, never by a wildcard.
    if (v.test_only && glob != v.name && glob != variant_stem(v.name)) continue;
    if (variant_glob_match(glob, v.name)) out.push_back(&v);
  }
  return out;
}

std::string variant_stem(const std::string& name) {
  const auto slash = name.find('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

bool variant_glob_match(const std::string& glob, const std::string& name) {
  return glob_match(glob, name) || (glob.find('/') == std::string::npos && glob_match(glob, variant_stem(name)));
}

bool glob_match(const std::string& p, const std::string& t) {
  // Iterative wildcard match with backtracking on the last '*'.
  size_t pi = 0, ti = 0, star = std::string::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi, ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++, mark = ti;
    } else if (star != std::string::npos) {
      pi = star + 1, ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace gdn
