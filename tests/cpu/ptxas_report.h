// ptxas' per-kernel report (nvcc --resource-usage, kept per kernel family by
// cmake/keep-compiler-report.sh as resource-usage/<family>.txt of the build tree), read into
// records: the register-budget tests check them without a GPU.
#pragma once

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace gdn::test {

struct KernelUse {
  std::string name;  // demangled
  std::string arch;  // sm_90, ...
  int registers = -1, stack = -1, spill_stores = -1, spill_loads = -1;
  bool wgmma_serialized = false;  // ptxas C7510-C7518: its wgmma instructions run one at a time
};

inline std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

// ptxas --resource-usage: "Compiling entry function 'NAME' for 'sm_XX'", then "N bytes stack
// frame, S bytes spill stores, L bytes spill loads", then "Used R registers"; and, for a kernel
// whose wgmma instructions ptxas serialized, "... wgmma.mma_async instructions are serialized due
// to <cause> for (or: in) the function 'NAME'" anywhere in the report (C7512 insufficient
// registers, C7518 a compiler-inserted wait in a divergent path, ...; wgmma_serialized on every
// record of that name).
inline std::vector<KernelUse> read_report(const std::string& path) {
  std::ifstream in(path);
  std::vector<KernelUse> out;
  const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)')");
  const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::regex used(R"(Used (\d+) registers)");
  const std::regex serialized(R"(wgmma\.mma_async instructions are serialized.* (?:for|in) the function '([^']+)')");
  std::vector<std::string> serialized_names;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, serialized)) {
      serialized_names.push_back(demangle(m[1]));
    } else if (std::regex_search(line, m, entry)) {
      std::string arch = m[2];
      if (arch.back() == 'a') arch.pop_back();  // sm_90a: the sm_90 budgets
      out.push_back({demangle(m[1]), arch});
    } else if (!out.empty() && std::regex_search(line, m, frame)) {
      out.back().stack = std::stoi(m[1]), out.back().spill_stores = std::stoi(m[2]), out.back().spill_loads = std::stoi(m[3]);
    } else if (!out.empty() && std::regex_search(line, m, used)) {
      out.back().registers = std::stoi(m[1]);
    }
  }
  for (auto& u : out)
    for (const auto& name : serialized_names) u.wgmma_serialized = u.wgmma_serialized || u.name == name;
  return out;
}

// "void gdn::step::name<a, b<c, d>, e>(args)" -> name and {a, b<c, d>, e}; "gdn::f(args)" -> f.
inline std::pair<std::string, std::vector<std::string>> split_template(const std::string& demangled) {
  const std::size_t open = demangled.find('<');
  std::string head = demangled.substr(0, std::min(open, demangled.find('(')));  // (: a plain function
  head = head.substr(head.rfind(':') == std::string::npos ? 0 : head.rfind(':') + 1);
  std::vector<std::string> args;
  int depth = 0;
  std::string cur;
  for (std::size_t i = open + 1; open != std::string::npos && i < demangled.size(); ++i) {
    const char c = demangled[i];
    if (c == '<') ++depth;
    if (c == '>' && depth-- == 0) {
      args.push_back(cur);
      break;
    }
    if (c == ',' && depth == 0) {
      args.push_back(cur), cur.clear();
      continue;
    }
    if (!(c == ' ' && cur.empty())) cur += c;
  }
  return {head, args};
}

}  // namespace gdn::test
