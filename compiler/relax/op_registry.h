// The Relax operators Kiln knows: for each, how to infer the struct info of a
// call, how to legalize it into TIR, and its fusion pattern. Each operator
// family file (op_*.cc) adds its entries through an Add<Family>Ops function
// (op_defs.h); op_registry.cc calls them all once.
#ifndef KILN_COMPILER_RELAX_OP_REGISTRY_H_
#define KILN_COMPILER_RELAX_OP_REGISTRY_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/ir/op_pattern.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

// Infers the struct info of `call` whose arguments already carry struct_info.
// Errors are user errors with the call's location.
using InferFn = Result<ir::StructInfo> (*)(const ir::CallExpr& call);

// Builds the PrimFunc computing `call` (arguments and result have static or
// symbolic tensor struct info). `name` is the PrimFunc's name in the module.
using LegalizeFn = Result<ir::PrimFunc> (*)(const ir::CallExpr& call, const std::string& name);

// The fusion pattern of an operator (compiler/ir/op_pattern.h).
using ir::OpPattern;

struct OpInfo {
  const char* name;        // "relax.matmul"
  const char* short_name;  // "matmul": the default PrimFunc name when legalized
  int num_args;            // -1: variadic
  InferFn infer;
  LegalizeFn legalize;     // nullptr: not legalizable (e.g. call_tir itself)
  OpPattern pattern = OpPattern::kOpaque;
};

// nullptr when unknown.
const OpInfo* FindOp(const std::string& name);
std::vector<std::string> ListOps();

// "R.nn.conv2d" for a call of relax.nn.conv2d (operator names in messages).
std::string OpDisplayName(const ir::CallExpr& call);

// "file:line:col: " or "" (prefix for diagnostics).
std::string Where(const ir::SourceSpan& span);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_OP_REGISTRY_H_
