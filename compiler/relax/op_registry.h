// The Relax operators Kiln knows: for each, how to infer the struct info of a
// call and how to legalize it into TIR. One entry per operator; the table is
// built in op_registry.cc from the per-operator files (op_*.cc).
#ifndef KILN_COMPILER_RELAX_OP_REGISTRY_H_
#define KILN_COMPILER_RELAX_OP_REGISTRY_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

// Infers the struct info of `call` whose arguments already carry struct_info.
// Errors are user errors with the call's location.
using InferFn = Result<ir::StructInfo> (*)(const ir::CallExpr& call);

// Builds the PrimFunc computing `call` (arguments and result have static or
// symbolic tensor struct info). `name` is the PrimFunc's name in the module.
using LegalizeFn = Result<ir::PrimFunc> (*)(const ir::CallExpr& call, const std::string& name);

struct OpInfo {
  const char* name;        // "relax.matmul"
  const char* short_name;  // "matmul": the default PrimFunc name when legalized
  int num_args;            // -1: variadic
  InferFn infer;
  LegalizeFn legalize;     // nullptr: not legalizable (e.g. call_tir itself)
};

// nullptr when unknown.
const OpInfo* FindOp(const std::string& name);
std::vector<std::string> ListOps();

// "file:line:col: " or "" (prefix for diagnostics).
std::string Where(const ir::SourceSpan& span);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_OP_REGISTRY_H_
