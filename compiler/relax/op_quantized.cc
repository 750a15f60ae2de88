// relax.matmul_integer: ONNX MatMulInteger as one operator, so that each
// target chooses how to run it.
//
//   y = R.matmul_integer(a, b, a_zero_point, b_zero_point)
//
// a uint8/int8 [..., M, K], b uint8/int8 [K, N]; a_zero_point of a's type,
// a scalar or 1-D with 1 or M elements (per row); b_zero_point of b's type, a
// scalar or 1-D with 1 or N elements (per column). y int32 [..., M, N]:
//   y[..., m, n] = sum_k (a[..., m, k] - za[m]) * (b[k, n] - zb[n])
// in int32, exactly (it wraps only where ONNX's own int32 result would).
//
// The legalization below is that sum as a generic int32 kernel, which every
// target can compile (the GPU path uses it). On the CPU, dispatch-int8-matmul
// (compiler/transform) sends the call to the 8-bit VNNI/AMX kernel before
// legalization, packing a constant b at compile time.
#include "compiler/relax/op_defs.h"

#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

bool Is8Bit(DType t) { return t == DType::UInt8() || t == DType::Int8(); }

// Checks a zero point (argument `i`, `what`) against its operand's dtype and
// the count it may have besides 1 (`per`: M or N, named `per_name`).
Status CheckZeroPoint(const AttrReader& r, const ir::TensorSInfo* z, const ir::TensorSInfo* of, const char* what,
                      const PrimExpr* per, const char* per_name) {
  if (z->has_dtype && of->has_dtype && z->dtype != of->dtype) {
    return r.Error(std::string(what) + " must have its operand's type " + DTypeToString(of->dtype) + ", not " +
                   DTypeToString(z->dtype));
  }
  if (z->ndim > 1) return r.Error(std::string(what) + " must be a scalar or 1-D, got rank " + std::to_string(z->ndim));
  if (z->has_shape && z->shape.size() == 1 && per && !IsUnitDim(z->shape[0]) &&
      CompareDims(z->shape[0], *per) == DimRelation::kNotEqual) {
    return r.Error(std::string(what) + " has " + DimString(z->shape[0]) + " elements, expected 1 or " + per_name +
                   "=" + DimString(*per));
  }
  return Status::Ok();
}

Result<ir::StructInfo> InferMatmulInteger(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({}));
  // The registry checked the argument count (4).
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* a, TensorArg(r, 0, "a"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* b, TensorArg(r, 1, "b"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* za, TensorArg(r, 2, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* zb, TensorArg(r, 3, "b_zero_point"));
  for (const auto& [t, what] : {std::pair{a, "a"}, std::pair{b, "b"}}) {
    if (t->has_dtype && !Is8Bit(t->dtype)) {
      return r.Error(std::string(what) + " must be uint8 or int8, not " + DTypeToString(t->dtype));
    }
  }
  if (a->ndim >= 0 && a->ndim < 2) return r.Error("a must have rank >= 2 ([..., M, K]), got rank " + std::to_string(a->ndim));
  if (b->ndim >= 0 && b->ndim != 2) return r.Error("b must have rank 2 ([K, N]), got rank " + std::to_string(b->ndim));
  const PrimExpr* m = a->has_shape ? &a->shape[a->shape.size() - 2] : nullptr;
  const PrimExpr* n = b->has_shape ? &b->shape[1] : nullptr;
  KILN_RETURN_IF_ERROR(CheckZeroPoint(r, za, a, "a_zero_point", m, "M"));
  KILN_RETURN_IF_ERROR(CheckZeroPoint(r, zb, b, "b_zero_point", n, "N"));
  if (!a->has_shape || !b->has_shape) return ir::MakeTensorSInfoNdim(a->ndim, DType::Int32());
  if (CompareDims(a->shape.back(), b->shape[0]) == DimRelation::kNotEqual) {
    return r.Error("reduction dimensions differ: a " + ShapeString(a->shape) + " has K=" + DimString(a->shape.back()) +
                   " but b " + ShapeString(b->shape) + " has K=" + DimString(b->shape[0]));
  }
  std::vector<PrimExpr> out(a->shape.begin(), a->shape.end() - 1);
  out.push_back(b->shape[1]);
  return ir::MakeTensorSInfo(out, DType::Int32());
}

// The element of zero point `z` for row or column index `i`: its only one
// (a scalar, or 1 element), else the i-th.
PrimExpr ZeroPointAt(const te::Tensor& z, const PrimExpr& i) {
  if (z.ndim() == 0) return z({});
  return z({IsUnitDim(z.shape()[0]) ? PrimExpr(int64_t{0}) : i});
}

Result<ir::PrimFunc> LegalizeMatmulInteger(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* a, ShapedArg(r, 0, "a"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* b, ShapedArg(r, 1, "b"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* za, ShapedArg(r, 2, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* zb, ShapedArg(r, 3, "b_zero_point"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(r));
  te::FuncBuilder fb(name);
  te::Tensor ta = fb.Input("A", a->shape, a->dtype);
  te::Tensor tb = fb.Input("B", b->shape, b->dtype);
  te::Tensor tza = fb.Input("a_zero_point", za->shape, za->dtype);
  te::Tensor tzb = fb.Input("b_zero_point", zb->shape, zb->dtype);
  const DType i32 = DType::Int32();
  auto term = [&](const te::Indices& i, const te::Indices& k) {
    te::Indices ai(i.begin(), i.end() - 1);
    ai.push_back(k[0]);
    const PrimExpr& row = i[i.size() - 2];
    PrimExpr av = CastTo(i32, ta(ai)) - CastTo(i32, ZeroPointAt(tza, row));
    PrimExpr bv = CastTo(i32, tb({k[0], i.back()})) - CastTo(i32, ZeroPointAt(tzb, i.back()));
    return av * bv;
  };
  te::Tensor y = fb.Reduce("T_matmul_integer", out->shape, i32, te::ReduceKind::kSum, {a->shape.back()}, term,
                           Const(i32, 0.0));
  return fb.Build({y});
}

}  // namespace
}  // namespace nn

void AddQuantizedOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.matmul_integer", "matmul_integer", 4, nn::InferMatmulInteger, nn::LegalizeMatmulInteger,
                OpPattern::kOutEWiseFusable});
}

}  // namespace relax
}  // namespace kiln
