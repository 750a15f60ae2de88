#include "compiler/text/tir_intrinsics.h"

namespace kiln {
namespace text {
namespace {

// T.abs keeps its own op name ("abs"); T.fabs is "fabs". Both print back as
// written.
const TirIntrinsic kIntrinsics[] = {
    {"exp", "exp", 1},     {"exp2", "exp2", 1},   {"log", "log", 1},         {"log2", "log2", 1},
    {"sqrt", "sqrt", 1},   {"rsqrt", "rsqrt", 1}, {"tanh", "tanh", 1},       {"sigmoid", "sigmoid", 1},
    {"erf", "erf", 1},     {"abs", "abs", 1},     {"fabs", "fabs", 1},       {"floor", "floor", 1},
    {"ceil", "ceil", 1},   {"round", "round", 1}, {"trunc", "trunc", 1},     {"sin", "sin", 1},
    {"cos", "cos", 1},     {"pow", "pow", 2},     {"log10", "log10", 1},     {"nearbyint", "nearbyint", 1},
    {"tan", "tan", 1},     {"isnan", "isnan", 1, true}, {"isinf", "isinf", 1, true}, {"isfinite", "isfinite", 1, true},
};

}  // namespace

const TirIntrinsic* FindTirIntrinsic(const std::string& name) {
  for (const auto& i : kIntrinsics)
    if (name == i.name) return &i;
  return nullptr;
}

const TirIntrinsic* FindTirIntrinsicByOp(const std::string& op) {
  for (const auto& i : kIntrinsics)
    if (op == i.op) return &i;
  return nullptr;
}

}  // namespace text
}  // namespace kiln
