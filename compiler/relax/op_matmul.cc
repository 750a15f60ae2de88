// relax.matmul: struct info and legalization.
//
// x: (..., M, K), y: (K, N) -> (..., M, N). Rank-1 operands and batched y are
// not supported yet and are reported as such.
#include "compiler/relax/op_defs.h"

#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_compute.h"

namespace kiln {
namespace relax {
namespace {


Result<ir::StructInfo> InferMatmul(const ir::CallExpr& call) {
  const ir::TensorSInfo* x = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* y = TensorInfoOf(call.args[1]);
  if (!x || !y) return InvalidArgument(Where(call.span) + "R.matmul expects two tensors");
  if (x->has_dtype && y->has_dtype && x->dtype != y->dtype) {
    return InvalidArgument(Where(call.span) + "R.matmul: operand dtypes differ: " + DTypeToString(x->dtype) +
                           " and " + DTypeToString(y->dtype));
  }
  if ((x->ndim >= 0 && x->ndim < 2) || (y->ndim >= 0 && y->ndim != 2)) {
    return Unimplemented(Where(call.span) + "R.matmul: only x of rank >= 2 and y of rank 2 are supported, got ranks " +
                         std::to_string(x->ndim) + " and " + std::to_string(y->ndim));
  }
  DType dtype = x->has_dtype ? x->dtype : y->dtype;
  if (!x->has_shape || !y->has_shape) {
    return ir::StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<ir::PrimExpr>{}, x->ndim, dtype,
                                                            x->has_dtype || y->has_dtype));
  }
  const ir::PrimExpr& kx = x->shape.back();
  const ir::PrimExpr& ky = y->shape[0];
  if (CompareDims(kx, ky) == DimRelation::kNotEqual) {
    return InvalidArgument(Where(call.span) + "R.matmul: reduction dimensions differ: x " + ShapeString(x->shape) +
                           " has K=" + DimString(kx) + " but y " + ShapeString(y->shape) + " has K=" + DimString(ky));
  }
  std::vector<ir::PrimExpr> out(x->shape.begin(), x->shape.end() - 1);
  out.push_back(y->shape[1]);
  return ir::MakeTensorSInfo(out, dtype);
}

Result<ir::PrimFunc> LegalizeMatmul(const ir::CallExpr& call, const std::string& name) {
  const ir::TensorSInfo* x = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* y = TensorInfoOf(call.args[1]);
  const ir::TensorSInfo* out = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
  if (!x || !y || !out || !x->has_shape || !y->has_shape || !out->has_shape) {
    return Unimplemented(Where(call.span) + "R.matmul: legalization needs known shapes");
  }
  te::ComputeSpec spec;
  spec.func_name = name;
  spec.block_name = "matmul";
  spec.inputs = {{"A", x->shape, x->dtype}, {"B", y->shape, y->dtype}};
  spec.output = {"C", out->shape, out->dtype};
  spec.reduce_extents = {x->shape.back()};
  // The accumulator starts at a zero of the output dtype (integer matmuls too).
  spec.reduce_init = out->dtype.is_float() ? ir::FloatImm(out->dtype, 0.0) : ir::IntImm(out->dtype, 0);
  spec.fcompute = [](const std::vector<ir::Buffer>& in, const std::vector<ir::PrimExpr>& sp,
                     const std::vector<ir::PrimExpr>& rd) {
    std::vector<ir::PrimExpr> a_idx(sp.begin(), sp.end() - 1);
    a_idx.push_back(rd[0]);
    return ir::Load(in[0], a_idx) * ir::Load(in[1], {rd[0], sp.back()});
  };
  return te::BuildComputePrimFunc(spec);
}

}  // namespace

void AddMatmulOps(std::vector<OpInfo>* t) { t->push_back({"relax.matmul", "matmul", 2, InferMatmul, LegalizeMatmul, OpPattern::kOutEWiseFusable}); }

}  // namespace relax
}  // namespace kiln
