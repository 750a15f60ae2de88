// Relax: the graph-level IR of functions over tensors, with struct info
// (types plus symbolic shapes) on every expression.
//
// Semantics, in brief:
// - A Function's body is a SeqExpr: binding blocks, then a result expression.
//   Bindings inside a dataflow block are pure and side-effect free; only vars
//   named by R.output leave it (those are non-dataflow Vars).
// - Symbolic dimensions are TIR int64 Vars (tir.h). A function parameter's
//   shape introduces them; later annotations and match_cast refer to or bind
//   them.
// - Calls target an Op ("relax.matmul"), a GlobalVar of the module (a Relax
//   function or a PrimFunc through R.call_tir), or an ExternFunc (a packed
//   function by name, through R.call_dps_packed / R.call_packed).
//
// Nodes are immutable once built, except `struct_info`, which normalization
// (infer_struct_info.h) fills in exactly once per node.
#ifndef KILN_COMPILER_IR_RELAX_H_
#define KILN_COMPILER_IR_RELAX_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/tensor.h"

namespace kiln {
namespace ir {

// ---------------------------------------------------------------- struct info

enum class SInfoKind : uint8_t { kObject, kPrim, kShape, kTensor, kTuple, kFunc };

class StructInfoNode {
 public:
  explicit StructInfoNode(SInfoKind k) : kind(k) {}
  virtual ~StructInfoNode() = default;
  SInfoKind kind;
};
using StructInfo = std::shared_ptr<const StructInfoNode>;

class ObjectSInfo : public StructInfoNode {
 public:
  static constexpr SInfoKind kKind = SInfoKind::kObject;
  ObjectSInfo() : StructInfoNode(kKind) {}
};

// R.Prim("int64"), or R.Prim(value=n).
class PrimSInfo : public StructInfoNode {
 public:
  static constexpr SInfoKind kKind = SInfoKind::kPrim;
  explicit PrimSInfo(DType t, PrimExpr v = PrimExpr()) : StructInfoNode(kKind), dtype(t), value(std::move(v)) {}
  DType dtype;
  PrimExpr value;  // may be undefined
};

// R.Shape([n, 4]) (values known) or R.Shape(ndim=2).
class ShapeSInfo : public StructInfoNode {
 public:
  static constexpr SInfoKind kKind = SInfoKind::kShape;
  ShapeSInfo(bool known, std::vector<PrimExpr> v, int nd)
      : StructInfoNode(kKind), has_values(known), values(std::move(v)), ndim(known ? static_cast<int>(values.size()) : nd) {}
  bool has_values;
  std::vector<PrimExpr> values;
  int ndim;  // -1: unknown
};

// R.Tensor((n, 784), "float32"), R.Tensor(ndim=2, dtype="float32"), R.Tensor.
class TensorSInfo : public StructInfoNode {
 public:
  static constexpr SInfoKind kKind = SInfoKind::kTensor;
  TensorSInfo(bool known_shape, std::vector<PrimExpr> s, int nd, DType t, bool known_dtype = true)
      : StructInfoNode(kKind), has_shape(known_shape), shape(std::move(s)),
        ndim(known_shape ? static_cast<int>(shape.size()) : nd), dtype(t), has_dtype(known_dtype) {}
  bool has_shape;
  std::vector<PrimExpr> shape;
  int ndim;  // -1: unknown
  DType dtype;
  bool has_dtype;  // false: R.Tensor with no dtype
};

class TupleSInfo : public StructInfoNode {
 public:
  static constexpr SInfoKind kKind = SInfoKind::kTuple;
  explicit TupleSInfo(std::vector<StructInfo> f) : StructInfoNode(kKind), fields(std::move(f)) {}
  std::vector<StructInfo> fields;
};

class FuncSInfo : public StructInfoNode {
 public:
  static constexpr SInfoKind kKind = SInfoKind::kFunc;
  FuncSInfo(std::vector<StructInfo> p, StructInfo r) : StructInfoNode(kKind), params(std::move(p)), ret(std::move(r)) {}
  std::vector<StructInfo> params;  // empty and opaque=true: any arguments
  StructInfo ret;
  bool opaque = false;
};

template <typename T>
const T* SInfoAs(const StructInfo& s) {
  return s && s->kind == T::kKind ? static_cast<const T*>(s.get()) : nullptr;
}

// ---------------------------------------------------------------- expressions

enum class ExprKind : uint8_t {
  kVar, kConstant, kTuple, kTupleGetItem, kCall, kShapeExpr, kPrimValue, kStringImm,
  kDataTypeImm, kGlobalVar, kExternFunc, kOp, kIf, kSeqExpr, kFunction
};

class ExprNode {
 public:
  explicit ExprNode(ExprKind k) : kind(k) {}
  virtual ~ExprNode() = default;
  ExprKind kind;
  SourceSpan span;
  mutable StructInfo struct_info;  // set by normalization
};
using Expr = std::shared_ptr<const ExprNode>;

template <typename T>
const T* ExprAs(const Expr& e) {
  return e && e->kind == T::kKind ? static_cast<const T*>(e.get()) : nullptr;
}

class VarExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarExpr(std::string n, StructInfo annotation, bool dataflow)
      : ExprNode(kKind), name(std::move(n)), annotation(std::move(annotation)), is_dataflow(dataflow) {}
  std::string name;
  StructInfo annotation;  // the declared struct info, may be null
  bool is_dataflow;       // bound inside a dataflow block and not an output
};
using RVar = std::shared_ptr<const VarExpr>;

// A constant tensor: inline (R.const) or a bound weight (metadata[...]).
class ConstantExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kConstant;
  explicit ConstantExpr(Tensor d, std::string n = "") : ExprNode(kKind), data(std::move(d)), name(std::move(n)) {}
  Tensor data;
  std::string name;  // parameter name it was bound to, or ""
};

class TupleExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kTuple;
  explicit TupleExpr(std::vector<Expr> f) : ExprNode(kKind), fields(std::move(f)) {}
  std::vector<Expr> fields;
};

class TupleGetItemExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kTupleGetItem;
  TupleGetItemExpr(Expr t, int i) : ExprNode(kKind), tuple(std::move(t)), index(i) {}
  Expr tuple;
  int index;
};

class ShapeExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kShapeExpr;
  explicit ShapeExpr(std::vector<PrimExpr> v) : ExprNode(kKind), values(std::move(v)) {}
  std::vector<PrimExpr> values;
};

class PrimValueExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kPrimValue;
  explicit PrimValueExpr(PrimExpr v) : ExprNode(kKind), value(std::move(v)) {}
  PrimExpr value;
};

class StringImmExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kStringImm;
  explicit StringImmExpr(std::string v) : ExprNode(kKind), value(std::move(v)) {}
  std::string value;
};

class DataTypeImmExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kDataTypeImm;
  explicit DataTypeImmExpr(DType t) : ExprNode(kKind), value(t) {}
  DType value;
};

// A function of the module by name (Relax function or PrimFunc).
class GlobalVarExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kGlobalVar;
  explicit GlobalVarExpr(std::string n) : ExprNode(kKind), name(std::move(n)) {}
  std::string name;
};

// A packed function by its global name ("env.linear", "kiln.dnnl.matmul").
class ExternFuncExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kExternFunc;
  explicit ExternFuncExpr(std::string s) : ExprNode(kKind), global_symbol(std::move(s)) {}
  std::string global_symbol;
};

// An operator by its registered name: "relax.matmul", "relax.nn.relu",
// "relax.call_tir", "relax.call_dps_packed", "relax.call_packed", ...
class OpExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kOp;
  explicit OpExpr(std::string n) : ExprNode(kKind), name(std::move(n)) {}
  std::string name;
};

class CallExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kCall;
  CallExpr(Expr op, std::vector<Expr> args, AttrMap attrs = {}, std::vector<StructInfo> sinfo_args = {})
      : ExprNode(kKind), op(std::move(op)), args(std::move(args)), attrs(std::move(attrs)), sinfo_args(std::move(sinfo_args)) {}
  Expr op;
  std::vector<Expr> args;
  AttrMap attrs;                      // operator attributes (axes=..., dtype=...)
  std::vector<StructInfo> sinfo_args; // out_sinfo of call_tir / call_dps_packed
};

// ---------------------------------------------------------------- bindings

struct Binding {
  RVar var;
  Expr value;
  StructInfo match_cast;  // non-null: R.match_cast(value, match_cast)
  SourceSpan span;
  // Optional, with match_cast: what a failed run-time check means, one entry
  // per dimension of the matched shape ("" keeps the generic text). `{expected}`
  // and `{got}` stand for the two values; the VM fills them in. Printed as
  // R.match_cast(x, R.Shape([...]), messages=["...", ...]).
  std::vector<std::string> messages = {};
};

struct BindingBlock {
  bool is_dataflow = false;
  std::vector<Binding> bindings;
};

class SeqExprNode : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kSeqExpr;
  SeqExprNode(std::vector<BindingBlock> b, Expr body) : ExprNode(kKind), blocks(std::move(b)), body(std::move(body)) {}
  std::vector<BindingBlock> blocks;
  Expr body;
};

class IfExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kIf;
  IfExpr(Expr c, Expr t, Expr f) : ExprNode(kKind), cond(std::move(c)), then_branch(std::move(t)), else_branch(std::move(f)) {}
  Expr cond;
  Expr then_branch;  // SeqExpr
  Expr else_branch;  // SeqExpr
};

class FunctionExpr : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kFunction;
  FunctionExpr() : ExprNode(kKind) {}
  std::string name;
  std::vector<RVar> params;
  Expr body;            // SeqExpr
  StructInfo ret_sinfo; // the declared or inferred result, may be null before inference
  AttrMap attrs;
  bool is_private = false;
};
using Function = std::shared_ptr<const FunctionExpr>;

// ---------------------------------------------------------------- constructors

StructInfo MakeTensorSInfo(std::vector<PrimExpr> shape, DType dtype);
StructInfo MakeTensorSInfoNdim(int ndim, DType dtype);
RVar MakeRVar(const std::string& name, StructInfo annotation = nullptr, bool dataflow = false);
Expr MakeOpCall(const std::string& op, std::vector<Expr> args, AttrMap attrs = {},
                std::vector<StructInfo> sinfo_args = {});
// A constant of host data with its struct info (the tensor's static shape and
// dtype) already set, so passes that run after struct-info inference can emit
// it directly. `name` is the weight name it keeps in the .vmfb, or "".
Expr MakeConstant(Tensor t, std::string name = "");
// `f` with its body a new SeqExpr of `blocks` and `body`, at the old body's
// span. The old body's struct info goes with it when keep_struct_info (a
// pass that rewrote the bindings, not the function's result); without it,
// normalization infers the new body's again.
Function WithBody(const Function& f, std::vector<BindingBlock> blocks, Expr body, bool keep_struct_info = true);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_RELAX_H_
