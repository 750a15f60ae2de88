// Inference and legalization functions of each operator, collected into the
// table of op_registry.cc. One file per operator family (op_*.cc).
#ifndef KILN_COMPILER_RELAX_OP_DEFS_H_
#define KILN_COMPILER_RELAX_OP_DEFS_H_

#include "compiler/relax/op_registry.h"

namespace kiln {
namespace relax {

Result<ir::StructInfo> InferMatmul(const ir::CallExpr& call);
Result<ir::PrimFunc> LegalizeMatmul(const ir::CallExpr& call, const std::string& name);

Result<ir::StructInfo> InferPermuteDims(const ir::CallExpr& call);
Result<ir::PrimFunc> LegalizePermuteDims(const ir::CallExpr& call, const std::string& name);

Result<ir::StructInfo> InferBroadcastBinary(const ir::CallExpr& call);
Result<ir::PrimFunc> LegalizeAdd(const ir::CallExpr& call, const std::string& name);
Result<ir::PrimFunc> LegalizeSubtract(const ir::CallExpr& call, const std::string& name);
Result<ir::PrimFunc> LegalizeMultiply(const ir::CallExpr& call, const std::string& name);
Result<ir::PrimFunc> LegalizeDivide(const ir::CallExpr& call, const std::string& name);

Result<ir::StructInfo> InferUnary(const ir::CallExpr& call);
Result<ir::PrimFunc> LegalizeRelu(const ir::CallExpr& call, const std::string& name);

// relax.call_tir / relax.call_dps_packed: the result is the out_sinfo.
Result<ir::StructInfo> InferCallDps(const ir::CallExpr& call);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_OP_DEFS_H_
