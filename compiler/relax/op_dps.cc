// The destination-passing calls: R.call_tir (a PrimFunc of the module) and
// R.call_dps_packed (a packed function by name). Their result is the
// out_sinfo; they are what legalization produces, so they have no
// legalization of their own.
#include "compiler/relax/op_defs.h"

#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

Result<ir::StructInfo> InferCallDps(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  std::string what = op ? "R." + op->name.substr(6) : "call";
  if (call.sinfo_args.empty()) return InvalidArgument(Where(call.span) + what + " needs out_sinfo");
  if (call.args.size() < 2 || !ir::ExprAs<ir::TupleExpr>(call.args[1])) {
    // The parser always produces (callee, Tuple(args)); anything else is malformed IR.
    return InvalidArgument(Where(call.span) + what + " expects a callee and a tuple of arguments");
  }
  if (call.sinfo_args.size() == 1) return call.sinfo_args[0];
  return ir::StructInfo(std::make_shared<ir::TupleSInfo>(call.sinfo_args));
}

}  // namespace

void AddDpsOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.call_tir", "call_tir", -1, InferCallDps, nullptr, OpPattern::kOpaque});
  t->push_back({"relax.call_dps_packed", "call_dps_packed", -1, InferCallDps, nullptr, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
