// Shared helpers of the linear-algebra and neural-network operator families
// (op_matmul.cc, op_einsum.cc, op_softmax.cc, op_norm.cc, op_attention.cc,
// op_conv.cc, op_pool.cc, op_nn_misc.cc, op_resize.cc): reading operator
// attributes with TVM's defaults, normalizing axes, broadcasting batch shapes.
//
// Every failure is a user error (kInvalidArgument) whose message starts with
// the call's "file:line:col: " and the operator's TVMScript name ("R.nn.conv2d:
// ..."), so diagnostics point at the call in the source.
#ifndef KILN_COMPILER_RELAX_NN_ATTRS_H_
#define KILN_COMPILER_RELAX_NN_ATTRS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/relax.h"
#include "compiler/relax/op_registry.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {
namespace nn {

// "R.nn.conv2d" for a call of relax.nn.conv2d.
// OpDisplayName: op_registry.h.

// Reads the attributes of one call. Borrowed: the call outlives the reader.
class AttrReader {
 public:
  explicit AttrReader(const ir::CallExpr& call);

  // A user error "<where>R.op: <msg>".
  Status Error(const std::string& msg) const;
  // Fails on an attribute name outside `known` ("unknown attribute 'x'").
  Status CheckKnown(std::initializer_list<const char*> known) const;

  bool Has(const char* key) const;  // present and not None
  Result<int64_t> Int(const char* key, int64_t def) const;
  Result<double> Float(const char* key, double def) const;  // ints accepted
  Result<bool> Bool(const char* key, bool def) const;        // 0/1 ints accepted
  // One of `allowed` (empty: any string).
  Result<std::string> String(const char* key, const std::string& def,
                             std::initializer_list<const char*> allowed = {}) const;
  // A list of ints; a single int is a list of one.
  Result<std::vector<int64_t>> IntList(const char* key, const std::vector<int64_t>& def) const;
  // IntList expanded to `n` values: one value repeats n times, n values stay;
  // any other length fails ("strides takes 1 or 2 values, got 3").
  Result<std::vector<int64_t>> IntListN(const char* key, const std::vector<int64_t>& def, size_t n) const;
  // A dtype string ("float16"); absent, None, "" and "void" give nullopt.
  Result<std::optional<DType>> OptionalDType(const char* key) const;

  const ir::CallExpr& call() const { return call_; }
  const std::string& op() const { return op_; }

 private:
  const ir::AttrValue* Find(const char* key) const;
  const ir::CallExpr& call_;
  std::string op_;
};

// axis in [-ndim, ndim) -> [0, ndim); otherwise an error naming the axis.
Result<int> NormalizeAxis(const AttrReader& r, int64_t axis, int ndim);
// Normalizes every axis; repeated axes fail.
Result<std::vector<int>> NormalizeAxes(const AttrReader& r, const std::vector<int64_t>& axes, int ndim);

// numpy broadcasting of two shapes (right-aligned). Provably different dims
// fail (kInvalidArgument); dims that may or may not be equal fail
// (kUnimplemented), as for elementwise operators.
// `what` names the shapes in the message ("batch shapes").
Result<std::vector<ir::PrimExpr>> BroadcastDims(const AttrReader& r, const std::vector<ir::PrimExpr>& a,
                                                const std::vector<ir::PrimExpr>& b, const char* what = "shapes");

// True when the dimension is the constant 1.
bool IsUnitDim(const ir::PrimExpr& d);

// The tensor struct info of argument `i`, or the error "<op> expects a tensor
// as argument <i+1> (<what>)".
Result<const ir::TensorSInfo*> TensorArg(const AttrReader& r, size_t i, const char* what);
// Same, and the shape must be known (legalization needs it).
Result<const ir::TensorSInfo*> ShapedArg(const AttrReader& r, size_t i, const char* what);
// The call's own tensor struct info with a known shape (legalization).
Result<const ir::TensorSInfo*> ShapedResult(const AttrReader& r);

// Reductions over `axes` (normalized, ascending) of a rank-n tensor: the
// kept dims (not in axes) and the reduced dims of `shape`, and the mapping
// between a full index and (kept index, reduction index).
std::vector<ir::PrimExpr> KeptDims(const std::vector<ir::PrimExpr>& shape, const std::vector<int>& axes);
std::vector<ir::PrimExpr> AxesDims(const std::vector<ir::PrimExpr>& shape, const std::vector<int>& axes);
std::vector<ir::PrimExpr> MergeIndex(size_t ndim, const std::vector<int>& axes, const std::vector<ir::PrimExpr>& kept,
                                     const std::vector<ir::PrimExpr>& red);
std::vector<ir::PrimExpr> KeptIndex(const std::vector<int>& axes, const std::vector<ir::PrimExpr>& full);
// The product of dims (1 for none).
ir::PrimExpr DimProduct(const std::vector<ir::PrimExpr>& dims);

// The dtype float kernels compute in: float32 for float16 (accuracy of sums
// and exponentials), otherwise the dtype itself.
DType ComputeType(DType t);
// `e` cast to `t` (no node when it already has dtype t).
ir::PrimExpr CastTo(DType t, const ir::PrimExpr& e);
// The lowest finite value of a float dtype (masking before softmax: a row
// masked entirely stays finite and becomes uniform, as in TVM).
ir::PrimExpr LowestFinite(DType t);

// A float constant of `dtype` (float or int).
ir::PrimExpr Const(DType dtype, double v);
// A call of a TIR intrinsic ("exp", "sqrt", ...) of `a`'s dtype.
ir::PrimExpr Intrin(const char* op, std::vector<ir::PrimExpr> args);
// Lazy select: only the taken side is evaluated (reads out of bounds are safe).
ir::PrimExpr IfThenElse(ir::PrimExpr cond, ir::PrimExpr t, ir::PrimExpr f);

}  // namespace nn
}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_NN_ATTRS_H_
