#include "compiler/relax/op_registry.h"

#include <cstring>

#include "compiler/relax/op_defs.h"

namespace kiln {
namespace relax {
namespace {

const std::vector<OpInfo>& Table() {
  static const std::vector<OpInfo>* table = [] {
    auto* t = new std::vector<OpInfo>;
    AddDpsOps(t);
    AddElementwiseOps(t);
    AddMatmulOps(t);
    AddPermuteDimsOps(t);
    // New operator families: one line each.
    return t;
  }();
  return *table;
}

}  // namespace

const OpInfo* FindOp(const std::string& name) {
  for (const OpInfo& op : Table())
    if (name == op.name) return &op;
  return nullptr;
}

std::vector<std::string> ListOps() {
  std::vector<std::string> names;
  for (const OpInfo& op : Table()) names.push_back(op.name);
  return names;
}

std::string Where(const ir::SourceSpan& span) {
  std::string s = span.ToString();
  return s.empty() ? "" : s + ": ";
}

}  // namespace relax
}  // namespace kiln
