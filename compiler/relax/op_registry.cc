#include "compiler/relax/op_registry.h"

#include <cstring>

#include "compiler/relax/op_defs.h"

namespace kiln {
namespace relax {
namespace {

const OpInfo kOps[] = {
    {"relax.matmul", "matmul", 2, InferMatmul, LegalizeMatmul},
    {"relax.permute_dims", "transpose", 1, InferPermuteDims, LegalizePermuteDims},
    {"relax.add", "add", 2, InferBroadcastBinary, LegalizeAdd},
    {"relax.subtract", "subtract", 2, InferBroadcastBinary, LegalizeSubtract},
    {"relax.multiply", "multiply", 2, InferBroadcastBinary, LegalizeMultiply},
    {"relax.divide", "divide", 2, InferBroadcastBinary, LegalizeDivide},
    {"relax.nn.relu", "relu", 1, InferUnary, LegalizeRelu},
    {"relax.call_tir", "call_tir", -1, InferCallDps, nullptr},
    {"relax.call_dps_packed", "call_dps_packed", -1, InferCallDps, nullptr},
};

}  // namespace

const OpInfo* FindOp(const std::string& name) {
  for (const OpInfo& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

std::vector<std::string> ListOps() {
  std::vector<std::string> names;
  for (const OpInfo& op : kOps) names.push_back(op.name);
  return names;
}

std::string Where(const ir::SourceSpan& span) {
  std::string s = span.ToString();
  return s.empty() ? "" : s + ": ";
}

}  // namespace relax
}  // namespace kiln
