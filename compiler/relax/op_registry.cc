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
    AddReshapeOps(t);
    AddConcatSplitOps(t);
    AddSliceOps(t);
    AddGatherOps(t);
    AddScatterOps(t);
    AddGridSampleOps(t);
    AddTileOps(t);
    // New operator families: one line each.
    AddSoftmaxOps(t);
    AddNormOps(t);
    AddAttentionOps(t);
    AddLinalgOps(t);
    AddConvOps(t);
    AddPoolOps(t);
    AddNnMiscOps(t);
    AddResizeOps(t);
    AddUnaryOps(t);
    AddReduceOps(t);
    AddCreateOps(t);
    AddScanOps(t);
    AddRnnOps(t);
    AddShapeValueOps(t);
    AddQuantizedOps(t);
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

std::string OpDisplayName(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (!op) return "R.?";
  const std::string& n = op->name;
  return "R." + (n.compare(0, 6, "relax.") == 0 ? n.substr(6) : n);
}

std::string Where(const ir::SourceSpan& span) {
  std::string s = span.ToString();
  return s.empty() ? "" : s + ": ";
}

}  // namespace relax
}  // namespace kiln
