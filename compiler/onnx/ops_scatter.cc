// ScatterElements (11, 13, 16: reduction none/add/mul, 18: max/min), its
// predecessor Scatter (9-10, the same operator without reduction), ScatterND
// (11, 13, 16, 18 with the same reductions) and GridSample (16: modes
// bilinear/nearest/bicubic; 20: linear/nearest/cubic and any rank, of which
// Kiln takes 4-D). They map onto R.scatter_elements, R.scatter_nd and
// R.image.grid_sample (ONNX's "none" is TVM's "update").
#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

// The reduction attribute as TVM's name; the opset decides which are defined.
Result<std::string> ReadReduction(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string r, ctx.AttrString("reduction", "none"));
  bool ok = r == "none" || (ctx.opset() >= 16 && (r == "add" || r == "mul")) ||
            (ctx.opset() >= 18 && (r == "max" || r == "min"));
  if (!ok) {
    return ctx.Invalid("reduction \"" + r + "\" is not defined in opset " + std::to_string(ctx.opset()) +
                       " (none; add, mul from 16; max, min from 18)");
  }
  return r == "none" ? std::string("update") : r;
}

Status CheckScatterOperands(NodeCtx& ctx, const ir::TensorSInfo* x, const ir::TensorSInfo* upd) {
  if (x->dtype != upd->dtype) {
    return ctx.Invalid("updates have element type " + DTypeToString(upd->dtype) + ", data " + DTypeToString(x->dtype));
  }
  return Status::Ok();
}

Status ConvertScatterElements(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ii, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ui, ctx.Info(2));
  KILN_RETURN_IF_ERROR(CheckScatterOperands(ctx, xi, ui));
  if (ii->ndim != xi->ndim || ui->ndim != xi->ndim) {
    return ctx.Invalid("data, indices and updates must have one rank, got " + std::to_string(xi->ndim) + ", " +
                       std::to_string(ii->ndim) + " and " + std::to_string(ui->ndim));
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  if (axis < -xi->ndim || axis >= xi->ndim) {
    return ctx.Invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(xi->ndim));
  }
  std::string red = "update";
  if (ctx.op_type() != "Scatter") { KILN_ASSIGN_OR_RETURN(red, ReadReduction(ctx)); }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr ind, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr upd, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("scatter_elements", {x, ind, upd},
                                           {{"axis", AttrI(axis < 0 ? axis + xi->ndim : axis)}, {"reduction", AttrS(red)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertScatterND(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ii, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ui, ctx.Info(2));
  KILN_RETURN_IF_ERROR(CheckScatterOperands(ctx, xi, ui));
  if (ii->ndim < 1) return ctx.Invalid("indices must have rank 1 or more");
  auto k = ConstDim(ii->shape.back());
  if (!k) return ctx.Unsupported("indices whose last dimension (the index tuple's length) is symbolic");
  if (*k < 1 || *k > xi->ndim) {
    return ctx.Invalid("index tuples of length " + std::to_string(*k) + " do not fit data of rank " +
                       std::to_string(xi->ndim));
  }
  if (ui->ndim != ii->ndim - 1 + xi->ndim - *k) {
    return ctx.Invalid("updates must have rank " + std::to_string(ii->ndim - 1 + xi->ndim - *k) + " (indices' rank - 1 + data's rank - " +
                       std::to_string(*k) + "), got " + std::to_string(ui->ndim));
  }
  KILN_ASSIGN_OR_RETURN(std::string red, ReadReduction(ctx));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr ind, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr upd, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("scatter_nd", {x, ind, upd}, {{"reduction", AttrS(red)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertGridSample(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* gi, ctx.Info(1));
  if (xi->ndim != 4 || gi->ndim != 4) {
    return ctx.Unsupported("X of rank " + std::to_string(xi->ndim) + " and grid of rank " + std::to_string(gi->ndim) +
                           " (only 4-D, (N, C, H, W) with (N, H_out, W_out, 2))");
  }
  KILN_ASSIGN_OR_RETURN(std::string mode, ctx.AttrString("mode", ctx.opset() >= 20 ? "linear" : "bilinear"));
  // Opset 20 renamed bilinear / bicubic to linear / cubic.
  std::string method;
  if (mode == "nearest") method = "nearest";
  if (ctx.opset() >= 20 ? mode == "linear" : mode == "bilinear") method = "bilinear";
  if (ctx.opset() >= 20 ? mode == "cubic" : mode == "bicubic") method = "bicubic";
  if (method.empty()) {
    return ctx.Invalid("mode \"" + mode + "\" is not defined in opset " + std::to_string(ctx.opset()) +
                       (ctx.opset() >= 20 ? " (linear, nearest, cubic)" : " (bilinear, nearest, bicubic)"));
  }
  KILN_ASSIGN_OR_RETURN(std::string padding, ctx.AttrString("padding_mode", "zeros"));
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return ctx.Invalid("padding_mode \"" + padding + "\" is not one of zeros, border, reflection");
  }
  KILN_ASSIGN_OR_RETURN(int64_t align, ctx.AttrInt("align_corners", 0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr grid, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("image.grid_sample", {x, grid},
                                           {{"method", AttrS(method)},
                                            {"layout", AttrS("NCHW")},
                                            {"padding_mode", AttrS(padding)},
                                            {"align_corners", AttrB(align != 0)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

}  // namespace

void AddScatterConverters(ConverterTable* t) {
  (*t)["ScatterElements"] = ConvertScatterElements;
  (*t)["Scatter"] = ConvertScatterElements;
  (*t)["ScatterND"] = ConvertScatterND;
  (*t)["GridSample"] = ConvertGridSample;
}

}  // namespace onnx
}  // namespace kiln
