// Shared pieces of the elementwise, binary, reduction, creation and scan
// operator families (op_unary.cc, op_elementwise.cc, op_reduce.cc,
// op_create.cc, op_scan.cc): reading operator attributes with TVM's names and
// defaults, compile-time scalar arguments (R.prim_value), axis normalization,
// numpy broadcasting, and TIR constants of a given dtype.
//
// Every reader returns a user error (kInvalidArgument) that starts with the
// call's "file:line:col: R.<op>: " when the attribute or argument has the
// wrong kind or value; a missing attribute (or None) gives the default.
#ifndef KILN_COMPILER_RELAX_OP_ELEM_UTIL_H_
#define KILN_COMPILER_RELAX_OP_ELEM_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/relax.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/te_builder.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {
namespace elem {

// "R.nn.gelu" for a call of relax.nn.gelu.
std::string OpLabel(const ir::CallExpr& call);
// "file:line:col: R.nn.gelu: " — the prefix of every diagnostic.
std::string Prefix(const ir::CallExpr& call);
// A user error with Prefix(call) + message.
Status Error(const ir::CallExpr& call, const std::string& message);

// Attribute readers (missing or None -> default).
Result<int64_t> IntAttr(const ir::CallExpr& call, const char* name, int64_t def);
Result<bool> BoolAttr(const ir::CallExpr& call, const char* name, bool def);
Result<double> FloatAttr(const ir::CallExpr& call, const char* name, double def);  // ints accepted
Result<std::string> StringAttr(const ir::CallExpr& call, const char* name, const std::string& def);
// A dtype string ("float16"); nullopt when missing, None or "".
Result<std::optional<DType>> DTypeAttr(const ir::CallExpr& call, const char* name);
// An axis list: nullopt when missing or None; an int is a list of one.
Result<std::optional<std::vector<int64_t>>> AxesAttr(const ir::CallExpr& call, const char* name);
// One axis: nullopt when missing or None.
Result<std::optional<int64_t>> AxisAttr(const ir::CallExpr& call, const char* name);

// A scalar that TVM passes as an argument (R.prim_value(6), R.prim_value(T.float32(0.5)))
// and older printers as an attribute: argument `index` when present, else the
// attribute `attr`, else `def` (nullopt: required). The value must be a
// constant.
struct Scalar {
  double value = 0;
  bool is_float = false;
  DType dtype = DType::Int64();  // of the PrimValue; int64 for attributes holding ints
};
Result<Scalar> ScalarArg(const ir::CallExpr& call, size_t index, const char* attr, std::optional<double> def);

// Axis in [-ndim, ndim) to [0, ndim).
Result<int64_t> NormalizeAxis(const ir::CallExpr& call, int64_t axis, int64_t ndim);
// Sorted, each in [0, ndim), duplicates refused.
Result<std::vector<int64_t>> NormalizeAxes(const ir::CallExpr& call, const std::vector<int64_t>& axes, int64_t ndim);

// numpy broadcasting of shapes, right-aligned. Fails when two dimensions are
// provably different and neither is 1, or (kUnimplemented) when equality
// cannot be decided.
Result<std::vector<ir::PrimExpr>> BroadcastShapes(const ir::CallExpr& call, const std::vector<ir::PrimExpr>& a,
                                                  const std::vector<ir::PrimExpr>& b);
// The indices into a tensor of shape `in` for output indices `out` under
// numpy broadcasting (0 where `in` has a constant 1).
te::Indices BroadcastIndex(const std::vector<ir::PrimExpr>& in, const te::Indices& out);

// The tensor struct info of argument `i`, or an error naming the argument.
Result<const ir::TensorSInfo*> TensorArg(const ir::CallExpr& call, size_t i, const char* what);
// The same, with a known shape (legalization).
Result<const ir::TensorSInfo*> ShapedTensorArg(const ir::CallExpr& call, size_t i, const char* what);
// The call's own tensor result (legalization), with a known shape.
Result<const ir::TensorSInfo*> ShapedResult(const ir::CallExpr& call);

// A literal `v` in `dtype` (FloatImm for floats, IntImm otherwise; bool: v != 0).
ir::PrimExpr Const(DType dtype, double v);
// An intrinsic call ("exp", "erf", "pow", "if_then_else", ...).
ir::PrimExpr Intrin(DType dtype, const char* op, std::vector<ir::PrimExpr> args);
// `e` converted to `dtype` (no node when it already has it).
ir::PrimExpr CastTo(DType dtype, const ir::PrimExpr& e);
// `e != 0` as bool (bool stays).
ir::PrimExpr ToBool(const ir::PrimExpr& e);
ir::PrimExpr Select(ir::PrimExpr cond, ir::PrimExpr t, ir::PrimExpr f);
ir::PrimExpr Bin(ir::TirKind kind, ir::PrimExpr a, ir::PrimExpr b);

bool IsBool(DType t);
bool IsSignedInt(DType t);
// "float32" style name, for messages.
inline std::string Str(DType t) { return DTypeToString(t); }

}  // namespace elem
}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_OP_ELEM_UTIL_H_
