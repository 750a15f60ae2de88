// Shape operands that a model has only as run-time tensors, and shape values
// that a model uses as tensors.
//
// ONNX passes a Reshape's shape, Pad's pads, Expand's shape, Tile's repeats,
// ConstantOfShape's shape, Slice's bounds, Range's bounds, Resize's sizes and
// TopK's K as tensors. When shape arithmetic or a constant gives them, their
// values are known here (KnownInts). When they only arrive as data — a graph
// input, as the ONNX node tests feed them, or a value computed by a kernel —
// NodeCtx::ShapeOperand reads them into a shape when the program runs
// (R.tensor_to_shape, a VM builtin) and binds each element to a fresh
// symbolic variable with R.match_cast: the value then is a KnownInts of
// variables, and the converters that handle symbolic shape arithmetic handle
// it the same way, with kernels generic over those variables. Only the
// length of the tensor must be static (it is the rank of the shape).
//
// The other way round, a value known as symbolic shape arithmetic that a
// model uses as data (nudenet's Cast of a gathered dimension) becomes a tensor
// through R.shape_to_tensor (MaterializeKnown, used by Importer::ExprOf).
#include "compiler/arith/debug_string.h"
#include "compiler/onnx/graph_importer.h"
#include "compiler/onnx/input_dims.h"

namespace kiln {
namespace onnx {

namespace {

// The longest tensor read as a shape: a shape operand holds one entry per
// axis (or two, for Pad), never more.
constexpr int64_t kMaxShapeOperandLength = 64;

}  // namespace

Result<int64_t> RunTimeShapeLength(NodeCtx& ctx, size_t i, const char* what) {
  const std::string label = std::string(what) + " (input " + std::to_string(i) + ")";
  KILN_ASSIGN_OR_RETURN(const Value* v, ctx.In(i));
  if (v->constant.defined()) {
    return Unimplemented(label + " must be an integer tensor, got " + v->constant.TypeString());
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, ctx.Info(i));
  if (!info->has_dtype || (info->dtype != DType::Int64() && info->dtype != DType::Int32())) {
    return InvalidArgument(label + " must be an int64 tensor to be read as a shape, got " +
                           (info->has_dtype ? DTypeName(info->dtype) : std::string("an unknown dtype")));
  }
  if (info->ndim > 1) {
    return InvalidArgument(label + " must be a 1-d tensor (or a scalar) to be read as a shape, got " +
                           std::to_string(info->ndim) + " dimensions");
  }
  if (info->ndim == 0) return int64_t{1};
  std::optional<int64_t> len = info->has_shape ? ConstDim(info->shape[0]) : std::nullopt;
  if (!len) {
    return Unimplemented(label + " is read as a shape when the program runs, so its length must be static; got " +
                         (info->has_shape ? "a symbolic length" : std::string("an unknown length")));
  }
  if (*len > kMaxShapeOperandLength) {
    return InvalidArgument(label + " has " + std::to_string(*len) + " elements, more than a shape operand holds (" +
                           std::to_string(kMaxShapeOperandLength) + ")");
  }
  return *len;
}

std::string RunTimeNode(const NodeCtx& ctx) {
  const auto& node = ctx.node();
  std::string name = !node.name().empty() ? node.name() : node.output_size() > 0 ? node.output(0) : std::string();
  return "ONNX " + node.op_type() + " node \"" + name + "\"";
}

std::string InputText(NodeCtx& ctx, size_t i, bool with_shape) {
  std::string s = "input " + std::to_string(i) + " \"" + (i < ctx.NumInputs() ? ctx.node().input(static_cast<int>(i)) : "") + "\"";
  if (!with_shape) return s;
  Result<const ir::TensorSInfo*> info = ctx.Info(i);
  if (!info.ok() || !(*info)->has_shape) return s;
  std::string dims;
  for (const auto& d : (*info)->shape) dims += (dims.empty() ? "" : ", ") + arith::ToDebugString(d);
  return s + " (shape [" + dims + "])";
}

std::string ExpectedText(const ir::PrimExpr& e) {
  if (ConstDim(e)) return "{expected}";
  return arith::ToDebugString(e) + " = {expected}";
}

std::string AxesOutOfRangeMessage(NodeCtx& ctx, size_t i, int64_t rank) {
  return RunTimeNode(ctx) + ": {got} of the values of " + InputText(ctx, i) + " lie outside [" + std::to_string(-rank) +
         ", " + std::to_string(rank - 1) + "], the axes of a rank-" + std::to_string(rank) + " tensor";
}

Result<std::vector<ir::PrimExpr>> ReadShapeAtRunTime(NodeCtx& ctx, ir::Expr tensor, int64_t n, const std::string& base,
                                                     const std::vector<ir::PrimExpr>& expected,
                                                     const std::vector<std::string>& messages) {
  const auto* info = ir::SInfoAs<ir::TensorSInfo>(tensor->struct_info);
  if (info && info->ndim == 0) {
    KILN_ASSIGN_OR_RETURN(tensor, ctx.Op("reshape", {tensor, MakeShape({ir::PrimExpr(int64_t{1})})}));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr shape, ctx.Op("tensor_to_shape", {tensor}));
  // One variable per element, named after the ONNX value so that the IR and
  // run-time messages say where it came from.
  const std::string id = IdentifierText(base);
  std::vector<ir::PrimExpr> vars;
  for (int64_t k = 0; k < n; ++k) {
    if (static_cast<size_t>(k) < expected.size() && expected[static_cast<size_t>(k)].defined()) {
      vars.push_back(expected[static_cast<size_t>(k)]);  // checked by the match when the program runs
      continue;
    }
    ir::PrimExpr var(ir::MakeVar(id + "_" + std::to_string(k)));
    vars.push_back(var);
  }
  std::vector<std::string> explained;
  if (!messages.empty()) {
    explained = messages;
    explained.resize(static_cast<size_t>(n));
  }
  KILN_RETURN_IF_ERROR(ctx.importer()
                           ->bb()
                           .EmitMatchCast(shape, std::make_shared<ir::ShapeSInfo>(true, vars, static_cast<int>(n)),
                                          id + "_shape", explained)
                           .status());
  return vars;
}

Result<const KnownInts*> NodeCtx::ShapeOperand(size_t i, const char* what) {
  if (const KnownInts* k = Known(i)) return k;
  KILN_ASSIGN_OR_RETURN(int64_t n, RunTimeShapeLength(*this, i, what));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, Info(i));
  const DType dtype = info->dtype;
  const int ndim = info->ndim;
  const std::string name = node().input(static_cast<int>(i));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, Input(i));
  KILN_ASSIGN_OR_RETURN(std::vector<ir::PrimExpr> vars, ReadShapeAtRunTime(*this, x, n, name));
  KnownInts known;
  known.dtype = dtype;
  if (ndim == 1) known.shape = {n};
  known.elems = vars;
  // Later nodes reading the same value see its variables too; its tensor
  // expression stays as it was.
  KILN_ASSIGN_OR_RETURN(const Value* v, In(i));
  Value updated = *v;
  updated.known = std::move(known);
  imp_->Set(name, std::move(updated));
  return Known(i);
}

Result<ir::PrimExpr> SignedRunTimeScalar(NodeCtx& ctx, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(int64_t n, RunTimeShapeLength(ctx, i, what));
  if (n != 1) return InvalidArgument(std::string(what) + " (input " + std::to_string(i) + ") must hold one value");
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, ctx.Info(i));
  KILN_ASSIGN_OR_RETURN(ir::Expr t, ctx.Input(i));
  if (info->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(t, ctx.Op("astype", {t}, {{"dtype", AttrS("int64")}})); }
  ir::Expr zero = ScalarConst(DType::Int64(), 0);
  KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("maximum", {t, zero}));
  KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("negative", {t}));
  KILN_ASSIGN_OR_RETURN(neg, ctx.Op("maximum", {neg, zero}));
  const std::string name = ctx.node().input(static_cast<int>(i));
  KILN_ASSIGN_OR_RETURN(std::vector<ir::PrimExpr> p, ReadShapeAtRunTime(ctx, pos, 1, name + "_pos"));
  KILN_ASSIGN_OR_RETURN(std::vector<ir::PrimExpr> m, ReadShapeAtRunTime(ctx, neg, 1, name + "_neg"));
  return p[0] - m[0];
}

Result<ir::PrimExpr> RunTimeSize(NodeCtx& ctx, ir::Expr count, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(ir::Expr one, ctx.Op("reshape", {count, MakeShape({ir::PrimExpr(int64_t{1})})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr shape, ctx.Op("tensor_to_shape", {one}));
  ir::PrimExpr var(ir::MakeVar(IdentifierText(name) + "_len"));
  KILN_RETURN_IF_ERROR(ctx.importer()
                           ->bb()
                           .EmitMatchCast(shape, std::make_shared<ir::ShapeSInfo>(true, std::vector<ir::PrimExpr>{var}, 1),
                                          IdentifierText(name) + "_size")
                           .status());
  return var;
}

Result<ir::Expr> MaterializeKnown(builder::BlockBuilder& bb, const KnownInts& known) {
  const int64_t n = static_cast<int64_t>(known.elems.size());
  KILN_ASSIGN_OR_RETURN(ir::RVar t, bb.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(known.elems)}, {})));
  ir::Expr e = t;
  if (known.shape.size() != 1 || known.shape[0] != n) {
    std::vector<ir::PrimExpr> dims(known.shape.begin(), known.shape.end());
    KILN_ASSIGN_OR_RETURN(ir::RVar r, bb.Emit(ir::MakeOpCall("relax.reshape", {e, MakeShape(dims)}, {})));
    e = r;
  }
  if (known.dtype != DType::Int64()) {
    KILN_ASSIGN_OR_RETURN(
        ir::RVar c, bb.Emit(ir::MakeOpCall("relax.astype", {e}, {{"dtype", AttrS(DTypeName(known.dtype))}})));
    e = c;
  }
  return e;
}

}  // namespace onnx
}  // namespace kiln
