// The integer operators of ONNX's quantized models (what onnxruntime's
// quantize_dynamic / quantize_static write): MatMulInteger,
// DynamicQuantizeLinear, QLinearMatMul. Each becomes a composition of
// ordinary Relax operators whose results are exactly the operator's:
// - the integer products widen both operands to int32, subtract the zero
//   points and multiply in int32 (R.matmul of int32 accumulates in int32:
//   exact, wrapping only where ONNX's own int32 output would overflow);
// - the float steps are the ones ONNX's reference writes, in its order and
//   in float32: x / scale is a division (not a product with the reciprocal),
//   rounding is half to even (R.round), saturation a clip before the cast.
// The integer product of 8-bit A [..., M, K] and 2-D B [K, N] of known
// shapes is R.matmul_integer instead, operands kept 8-bit: the CPU pipeline
// sends it to the 8-bit kernel and packs a constant B (an initializer, the
// weights of quantize_dynamic's models) at compile time
// (compiler/transform/dispatch_int8_matmul.h); other targets legalize it to
// a generic int32 kernel. Other shapes (1-D A, batched B) keep the widened
// R.matmul.
#include <cstring>
#include <string>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

bool IsInt8(DType t) { return t == DType::Int8() || t == DType::UInt8(); }

// The saturation range of an 8-bit integer type.
double QMin(DType t) { return t == DType::UInt8() ? 0.0 : -128.0; }
double QMax(DType t) { return t == DType::UInt8() ? 255.0 : 127.0; }

// A zero point or scale of the operand in position `side` (0: the left, whose
// per-row values are a 1-D tensor of its row count; 1: the right, per
// column) shaped to broadcast against the operand or the product: a scalar
// or 1-element value as it is, a left 1-D one as a column [M, 1].
Result<ir::Expr> RowOrColumn(NodeCtx& ctx, size_t i, int side, const char* what) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* zi, ctx.Info(i));
  KILN_ASSIGN_OR_RETURN(ir::Expr z, ctx.Input(i));
  if (zi->ndim > 1) return ctx.Unsupported(std::string(what) + " of rank " + std::to_string(zi->ndim) + " (scalar or 1-D)");
  if (side == 0 && zi->ndim == 1) return ctx.Op("expand_dims", {z}, {{"axis", AttrInts({1})}});
  return z;
}

// astype(x, int32) - astype(zero_point, int32) for input x at `xi` and its
// optional zero point at `zi`.
Result<ir::Expr> Widen(NodeCtx& ctx, size_t xi, size_t zi, int side, const char* what) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, ctx.Info(xi));
  if (!IsInt8(info->dtype)) return ctx.Invalid(std::string("input ") + std::to_string(xi) + " must be int8 or uint8, not " + DTypeName(info->dtype));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(xi));
  KILN_ASSIGN_OR_RETURN(ir::Expr w, ctx.Op("astype", {x}, {{"dtype", AttrS("int32")}}));
  if (!ctx.HasInput(zi)) return w;
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* zinfo, ctx.Info(zi));
  if (zinfo->dtype != info->dtype) {
    return ctx.Invalid(std::string(what) + " must have its input's type " + DTypeName(info->dtype) + ", not " + DTypeName(zinfo->dtype));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr z, RowOrColumn(ctx, zi, side, what));
  KILN_ASSIGN_OR_RETURN(ir::Expr z32, ctx.Op("astype", {z}, {{"dtype", AttrS("int32")}}));
  return ctx.Op("subtract", {w, z32});
}

// The zero point at input `zi` (checked as Widen does), or a scalar 0 of
// the input's type when absent.
Result<ir::Expr> ZeroPointOrZero(NodeCtx& ctx, size_t zi, DType t, const char* what) {
  if (!ctx.HasInput(zi)) return ScalarConst(t, 0.0);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* zinfo, ctx.Info(zi));
  if (zinfo->dtype != t) return ctx.Invalid(std::string(what) + " must have its input's type " + DTypeName(t) + ", not " + DTypeName(zinfo->dtype));
  if (zinfo->ndim > 1) return ctx.Unsupported(std::string(what) + " of rank " + std::to_string(zinfo->ndim) + " (scalar or 1-D)");
  return ctx.Input(zi);
}

// The int32 product (A - a_zp) @ (B - b_zp) of inputs `ai`, `bi` and their
// optional zero points `azi`, `bzi`.
Result<ir::Expr> IntegerProduct(NodeCtx& ctx, size_t ai, size_t azi, size_t bi, size_t bzi) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* a_info, ctx.Info(ai));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* b_info, ctx.Info(bi));
  const bool kernel = IsInt8(a_info->dtype) && IsInt8(b_info->dtype) && a_info->has_shape && b_info->has_shape &&
                      a_info->ndim >= 2 && b_info->ndim == 2;
  if (!kernel) {
    KILN_ASSIGN_OR_RETURN(ir::Expr a, Widen(ctx, ai, azi, 0, "a_zero_point"));
    KILN_ASSIGN_OR_RETURN(ir::Expr b, Widen(ctx, bi, bzi, 1, "b_zero_point"));
    return ctx.Op("matmul", {a, b});
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Input(ai));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(bi));
  KILN_ASSIGN_OR_RETURN(ir::Expr za, ZeroPointOrZero(ctx, azi, a_info->dtype, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(ir::Expr zb, ZeroPointOrZero(ctx, bzi, b_info->dtype, "b_zero_point"));
  return ctx.Op("matmul_integer", {a, b, za, zb});
}

// MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> int32.
Status ConvertMatMulInteger(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(ir::Expr y, IntegerProduct(ctx, 0, 2, 1, 3));
  ctx.SetOutput(0, y);
  return Status::Ok();
}

// saturate(round(v) + zero_point) cast to `t`; v and zero_point float32.
Result<ir::Expr> RoundSaturate(NodeCtx& ctx, ir::Expr v, ir::Expr zero_point_f, DType t) {
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("round", {v}));
  KILN_ASSIGN_OR_RETURN(r, ctx.Op("add", {r, zero_point_f}));
  KILN_ASSIGN_OR_RETURN(r, ctx.Op("clip", {r, PrimValue(ir::FloatImm(DType::Float32(), QMin(t))),
                                           PrimValue(ir::FloatImm(DType::Float32(), QMax(t)))}));
  return ctx.Op("astype", {r}, {{"dtype", AttrS(DTypeName(t))}});
}

// DynamicQuantizeLinear(x) -> (y uint8, y_scale, y_zero_point uint8):
// the range [min(x, 0), max(x, 0)] mapped onto [0, 255]. A range of 0 (x all
// zeros) takes the scale 1/255 as ONNX's reference does, not 0/0.
Status ConvertDynamicQuantizeLinear(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  if (xi->dtype != DType::Float32()) return ctx.Unsupported("x of type " + DTypeName(xi->dtype) + " (float32 only)");
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  std::vector<int64_t> all;
  for (int64_t d = 0; d < xi->ndim; ++d) all.push_back(d);
  ir::Expr zero = ScalarConst(DType::Float32(), 0.0);
  ir::Expr lo = x, hi = x;
  if (!all.empty()) {
    KILN_ASSIGN_OR_RETURN(lo, ctx.Op("min", {x}, {{"axis", AttrInts(all)}, {"keepdims", AttrB(false)}}));
    KILN_ASSIGN_OR_RETURN(hi, ctx.Op("max", {x}, {{"axis", AttrInts(all)}, {"keepdims", AttrB(false)}}));
  }
  KILN_ASSIGN_OR_RETURN(lo, ctx.Op("minimum", {lo, zero}));
  KILN_ASSIGN_OR_RETURN(hi, ctx.Op("maximum", {hi, zero}));
  KILN_ASSIGN_OR_RETURN(ir::Expr range, ctx.Op("subtract", {hi, lo}));
  KILN_ASSIGN_OR_RETURN(ir::Expr empty, ctx.Op("equal", {range, zero}));
  KILN_ASSIGN_OR_RETURN(range, ctx.Op("where", {empty, ScalarConst(DType::Float32(), 1.0), range}));
  KILN_ASSIGN_OR_RETURN(ir::Expr scale, ctx.Op("divide", {range, ScalarConst(DType::Float32(), 255.0)}));
  // zero point = round(clip(0 - lo / scale, 0, 255))
  KILN_ASSIGN_OR_RETURN(ir::Expr zp, ctx.Op("divide", {lo, scale}));
  KILN_ASSIGN_OR_RETURN(zp, ctx.Op("subtract", {zero, zp}));
  KILN_ASSIGN_OR_RETURN(zp, ctx.Op("clip", {zp, PrimValue(ir::FloatImm(DType::Float32(), 0.0)),
                                            PrimValue(ir::FloatImm(DType::Float32(), 255.0))}));
  KILN_ASSIGN_OR_RETURN(zp, ctx.Op("round", {zp}));
  KILN_ASSIGN_OR_RETURN(ir::Expr q, ctx.Op("divide", {x, scale}));
  KILN_ASSIGN_OR_RETURN(ir::Expr y, RoundSaturate(ctx, q, zp, DType::UInt8()));
  KILN_ASSIGN_OR_RETURN(ir::Expr zp8, ctx.Op("astype", {zp}, {{"dtype", AttrS("uint8")}}));
  ctx.SetOutput(0, y);
  if (ctx.HasOutput(1)) ctx.SetOutput(1, scale);
  if (ctx.HasOutput(2)) ctx.SetOutput(2, zp8);
  return Status::Ok();
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
// saturate(round((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale)) + y_zp),
// the integer product exact, the requantization in float32.
Status ConvertQLinearMatMul(NodeCtx& ctx) {
  if (ctx.NumInputs() != 8) return ctx.Invalid("needs 8 inputs, not " + std::to_string(ctx.NumInputs()));
  for (size_t i : {size_t{0}, size_t{3}}) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(i));
    if (!IsInt8(xi->dtype)) return ctx.Invalid("input " + std::to_string(i) + " must be int8 or uint8, not " + DTypeName(xi->dtype));
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* yzi, ctx.Info(7));
  if (!IsInt8(yzi->dtype)) return ctx.Invalid("y_zero_point must be int8 or uint8, not " + DTypeName(yzi->dtype));
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}}) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(i));
    if (si->dtype != DType::Float32()) return ctx.Unsupported("scales of type " + DTypeName(si->dtype) + " (float32 only)");
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr c, IntegerProduct(ctx, 0, 2, 3, 5));
  KILN_ASSIGN_OR_RETURN(ir::Expr as, RowOrColumn(ctx, 1, 0, "a_scale"));
  KILN_ASSIGN_OR_RETURN(ir::Expr bs, RowOrColumn(ctx, 4, 1, "b_scale"));
  KILN_ASSIGN_OR_RETURN(ir::Expr ys, RowOrColumn(ctx, 6, 1, "y_scale"));
  KILN_ASSIGN_OR_RETURN(ir::Expr m, ctx.Op("multiply", {as, bs}));
  KILN_ASSIGN_OR_RETURN(m, ctx.Op("divide", {m, ys}));
  KILN_ASSIGN_OR_RETURN(ir::Expr cf, ctx.Op("astype", {c}, {{"dtype", AttrS("float32")}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr v, ctx.Op("multiply", {cf, m}));
  KILN_ASSIGN_OR_RETURN(ir::Expr yz, RowOrColumn(ctx, 7, 1, "y_zero_point"));
  KILN_ASSIGN_OR_RETURN(ir::Expr yzf, ctx.Op("astype", {yz}, {{"dtype", AttrS("float32")}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr y, RoundSaturate(ctx, v, yzf, yzi->dtype));
  ctx.SetOutput(0, y);
  return Status::Ok();
}

}  // namespace

void AddQuantizedConverters(ConverterTable* t) {
  (*t)["MatMulInteger"] = ConvertMatMulInteger;
  (*t)["DynamicQuantizeLinear"] = ConvertDynamicQuantizeLinear;
  (*t)["QLinearMatMul"] = ConvertQLinearMatMul;
}

}  // namespace onnx
}  // namespace kiln
