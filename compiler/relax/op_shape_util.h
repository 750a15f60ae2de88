// Helpers shared by the shape and data-movement operators (op_reshape.cc,
// op_concat_split.cc, op_slice.cc, op_gather.cc, op_tile.cc): reading their
// integer parameters, normalizing axes, and building index expressions.
//
// Parameters are read the way TVMScript writes them: as keyword attributes
// (`axis=[1]`, `axis=1`, `repeats=2`) or, for operators whose newer TVM
// printers pass them positionally, as a call argument holding a tuple of
// integers (`(0,)`) or a constant R.shape. Every failure is a user error
// (kInvalidArgument) whose message starts with the call's file:line:col and
// the operator's name as written ("R.squeeze").
#ifndef KILN_COMPILER_RELAX_OP_SHAPE_UTIL_H_
#define KILN_COMPILER_RELAX_OP_SHAPE_UTIL_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/arith/int_bounds.h"
#include "compiler/ir/relax.h"
#include "compiler/relax/op_registry.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

// "R.reshape" for a call of relax.reshape.
// OpDisplayName: op_registry.h.
// Where(call.span) + OpDisplayName(call) + ": ", the prefix of every message.
std::string OpPrefix(const ir::CallExpr& call);

// Fails unless min_args <= number of call arguments <= max_args.
Status CheckArgCount(const ir::CallExpr& call, size_t min_args, size_t max_args);

// The integer list parameter `name`: the attribute (a list, or one integer
// read as a one-element list) or, when absent, call argument `pos` (pos < 0:
// attribute only). nullopt when neither is given or the value is None.
Result<std::optional<std::vector<int64_t>>> GetIntList(const ir::CallExpr& call, const std::string& name, int pos);
// Like GetIntList, but argument `pos` may hold symbolic values too: a tuple of
// R.prim_value, or R.shape([...]) (strided_slice's begin and end).
Result<std::optional<std::vector<ir::PrimExpr>>> GetPrimList(const ir::CallExpr& call, const std::string& name,
                                                            int pos);
// One integer: attribute `name` or argument `pos`; nullopt when absent/None.
Result<std::optional<int64_t>> GetInt(const ir::CallExpr& call, const std::string& name, int pos);
Result<bool> GetBool(const ir::CallExpr& call, const std::string& name, bool default_value);
Result<std::string> GetString(const ir::CallExpr& call, const std::string& name, const std::string& default_value);

// axis in [-ndim, ndim) -> [0, ndim); fails with "axis A is out of range for
// rank N" otherwise.
Result<int> NormalizeAxis(const ir::CallExpr& call, int64_t axis, int ndim);
// Each of `axes` normalized; fails on a repeated axis.
Result<std::vector<int>> NormalizeAxes(const ir::CallExpr& call, const std::vector<int64_t>& axes, int ndim);

// The tensor struct info of argument `i`, or an error "argument i must be a tensor".
Result<const ir::TensorSInfo*> TensorArg(const ir::CallExpr& call, size_t i);
// The call's result struct info as a tensor with a known shape, or a
// kUnimplemented error saying legalization needs known shapes.
Result<const ir::TensorSInfo*> KnownTensorResult(const ir::CallExpr& call);
// Argument `i` as a tensor with a known shape (for legalization).
Result<const ir::TensorSInfo*> KnownTensorArg(const ir::CallExpr& call, size_t i);

// `shape` with every dimension that is neither a constant nor a plain
// variable (n * 4, n + m) replaced by a new variable named
// "<prefix>_dim<i>". Kernels declare their buffers with these shapes so that
// each dimension is bound from its own argument: a kernel cannot bind n from
// a dimension n * 4, and (n * 4,) -> (n * 2, 2) mentions n nowhere plainly.
// Valid for kernels whose index arithmetic reads only their buffers' own
// (local) shapes, which is true of every kernel in the shape family; the VM
// has already checked the composite dimensions when it calls the kernel.
std::vector<ir::PrimExpr> BindableShape(const std::vector<ir::PrimExpr>& shape, const std::string& prefix);

// Product of dims, simplified (1 for an empty list).
ir::PrimExpr ShapeProduct(const std::vector<ir::PrimExpr>& dims);
// Simplified with every free variable taken as >= 0 (shape and loop
// variables), narrowed by `bounds` where given.
ir::PrimExpr SimplifyDim(const ir::PrimExpr& e, const arith::VarBounds& bounds = {});
// Bounds [0, extent - 1] of each index variable whose extent is a constant,
// so that index arithmetic folds (floormod(i, 4) -> i when i < 4).
arith::VarBounds IndexBounds(const std::vector<ir::PrimExpr>& index, const std::vector<ir::PrimExpr>& extents);
// Row-major flat offset of `index` in `shape`, simplified.
ir::PrimExpr FlatIndex(const std::vector<ir::PrimExpr>& shape, const std::vector<ir::PrimExpr>& index,
                       const arith::VarBounds& bounds = {});
// The index in `shape` of the row-major flat offset `flat`.
std::vector<ir::PrimExpr> UnflattenIndex(const std::vector<ir::PrimExpr>& shape, const ir::PrimExpr& flat,
                                         const arith::VarBounds& bounds = {});
// An int64 copy of an integer index value (int32 indices are widened).
ir::PrimExpr ToInt64(const ir::PrimExpr& e);
// if_then_else(cond, t, f): only the taken side is evaluated (it may load
// out of bounds otherwise).
ir::PrimExpr IfThenElse(const ir::PrimExpr& cond, const ir::PrimExpr& t, const ir::PrimExpr& f);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_OP_SHAPE_UTIL_H_
