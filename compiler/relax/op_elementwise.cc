// Elementwise operators: broadcasting binary arithmetic (add, subtract,
// multiply, divide) and unary activations (nn.relu).
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_compute.h"

namespace kiln {
namespace relax {
namespace {

const char* ShortName(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  return op ? op->name.c_str() + 6 : "?";  // strip "relax."
}

bool IsOne(const ir::PrimExpr& d) {
  auto c = ConstDim(d);
  return c && *c == 1;
}

// numpy broadcasting of two shapes, right-aligned.
Result<std::vector<ir::PrimExpr>> BroadcastShapes(const ir::CallExpr& call, const std::vector<ir::PrimExpr>& a,
                                                  const std::vector<ir::PrimExpr>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<ir::PrimExpr> out(n);
  for (size_t i = 0; i < n; ++i) {
    bool has_a = i < a.size(), has_b = i < b.size();
    const ir::PrimExpr* da = has_a ? &a[a.size() - 1 - i] : nullptr;
    const ir::PrimExpr* db = has_b ? &b[b.size() - 1 - i] : nullptr;
    ir::PrimExpr r;
    if (!da) {
      r = *db;
    } else if (!db) {
      r = *da;
    } else if (IsOne(*da)) {
      r = *db;
    } else if (IsOne(*db)) {
      r = *da;
    } else {
      DimRelation rel = CompareDims(*da, *db);
      if (rel == DimRelation::kNotEqual) {
        return InvalidArgument(Where(call.span) + "R." + ShortName(call) + ": shapes " + ShapeString(a) + " and " +
                               ShapeString(b) + " do not broadcast (" + DimString(*da) + " vs " + DimString(*db) + ")");
      }
      if (rel == DimRelation::kUnknown) {
        return Unimplemented(Where(call.span) + "R." + ShortName(call) + ": cannot prove that dimensions " +
                             DimString(*da) + " and " + DimString(*db) + " are equal or 1");
      }
      r = *da;
    }
    out[n - 1 - i] = r;
  }
  return out;
}

using BinaryFn = ir::PrimExpr (*)(ir::PrimExpr, ir::PrimExpr);

Result<ir::PrimFunc> LegalizeBinary(const ir::CallExpr& call, const std::string& name, BinaryFn fn) {
  const ir::TensorSInfo* a = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* b = TensorInfoOf(call.args[1]);
  const ir::TensorSInfo* out = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
  if (!a || !b || !out || !a->has_shape || !b->has_shape || !out->has_shape) {
    return Unimplemented(Where(call.span) + "R." + ShortName(call) + ": legalization needs known shapes");
  }
  te::ComputeSpec spec;
  spec.func_name = name;
  spec.block_name = std::string("T_") + ShortName(call);
  spec.inputs = {{"A", a->shape, a->dtype}, {"B", b->shape, b->dtype}};
  spec.output = {spec.block_name, out->shape, out->dtype};
  spec.fcompute = [fn](const std::vector<ir::Buffer>& in, const std::vector<ir::PrimExpr>& sp,
                       const std::vector<ir::PrimExpr>&) {
    // Index each input by the trailing output indices, 0 where it broadcasts.
    auto index = [&](const ir::Buffer& buf) {
      std::vector<ir::PrimExpr> idx;
      size_t offset = sp.size() - buf->shape.size();
      for (size_t i = 0; i < buf->shape.size(); ++i) idx.push_back(IsOne(buf->shape[i]) ? ir::PrimExpr(int64_t{0}) : sp[offset + i]);
      return idx;
    };
    return fn(ir::Load(in[0], index(in[0])), ir::Load(in[1], index(in[1])));
  };
  return te::BuildComputePrimFunc(spec);
}

ir::PrimExpr AddFn(ir::PrimExpr a, ir::PrimExpr b) { return ir::MakeBinary(ir::TirKind::kAdd, a, b); }
ir::PrimExpr SubFn(ir::PrimExpr a, ir::PrimExpr b) { return ir::MakeBinary(ir::TirKind::kSub, a, b); }
ir::PrimExpr MulFn(ir::PrimExpr a, ir::PrimExpr b) { return ir::MakeBinary(ir::TirKind::kMul, a, b); }
ir::PrimExpr DivFn(ir::PrimExpr a, ir::PrimExpr b) { return ir::MakeBinary(ir::TirKind::kDiv, a, b); }

Result<ir::StructInfo> InferBroadcastBinary(const ir::CallExpr& call) {
  const ir::TensorSInfo* a = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* b = TensorInfoOf(call.args[1]);
  if (!a || !b) return InvalidArgument(Where(call.span) + "R." + ShortName(call) + " expects two tensors");
  if (a->has_dtype && b->has_dtype && a->dtype != b->dtype) {
    return InvalidArgument(Where(call.span) + "R." + ShortName(call) + ": operand dtypes differ: " +
                           DTypeToString(a->dtype) + " and " + DTypeToString(b->dtype));
  }
  DType dtype = a->has_dtype ? a->dtype : b->dtype;
  if (!a->has_shape || !b->has_shape) {
    int nd = (a->ndim < 0 || b->ndim < 0) ? -1 : std::max(a->ndim, b->ndim);
    return ir::MakeTensorSInfoNdim(nd, dtype);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::PrimExpr> shape, BroadcastShapes(call, a->shape, b->shape));
  return ir::MakeTensorSInfo(shape, dtype);
}

Result<ir::PrimFunc> LegalizeAdd(const ir::CallExpr& c, const std::string& n) { return LegalizeBinary(c, n, AddFn); }
Result<ir::PrimFunc> LegalizeSubtract(const ir::CallExpr& c, const std::string& n) { return LegalizeBinary(c, n, SubFn); }
Result<ir::PrimFunc> LegalizeMultiply(const ir::CallExpr& c, const std::string& n) { return LegalizeBinary(c, n, MulFn); }
Result<ir::PrimFunc> LegalizeDivide(const ir::CallExpr& c, const std::string& n) { return LegalizeBinary(c, n, DivFn); }

Result<ir::StructInfo> InferUnary(const ir::CallExpr& call) {
  const ir::TensorSInfo* a = TensorInfoOf(call.args[0]);
  if (!a) return InvalidArgument(Where(call.span) + "R." + ShortName(call) + " expects a tensor");
  return call.args[0]->struct_info;
}

Result<ir::PrimFunc> LegalizeRelu(const ir::CallExpr& call, const std::string& name) {
  const ir::TensorSInfo* a = TensorInfoOf(call.args[0]);
  if (!a || !a->has_shape) return Unimplemented(Where(call.span) + "R.nn.relu: legalization needs a known shape");
  te::ComputeSpec spec;
  spec.func_name = name;
  spec.block_name = "compute";
  spec.inputs = {{"A", a->shape, a->dtype}};
  spec.output = {"compute", a->shape, a->dtype};
  DType dtype = a->dtype;
  spec.fcompute = [dtype](const std::vector<ir::Buffer>& in, const std::vector<ir::PrimExpr>& sp,
                          const std::vector<ir::PrimExpr>&) {
    return ir::MakeBinary(ir::TirKind::kMax, ir::Load(in[0], sp),
                          dtype.is_float() ? ir::FloatImm(dtype, 0.0) : ir::IntImm(dtype, 0));
  };
  return te::BuildComputePrimFunc(spec);
}

}  // namespace

void AddElementwiseOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.add", "add", 2, InferBroadcastBinary, LegalizeAdd, OpPattern::kBroadcast});
  t->push_back({"relax.subtract", "subtract", 2, InferBroadcastBinary, LegalizeSubtract, OpPattern::kBroadcast});
  t->push_back({"relax.multiply", "multiply", 2, InferBroadcastBinary, LegalizeMultiply, OpPattern::kBroadcast});
  t->push_back({"relax.divide", "divide", 2, InferBroadcastBinary, LegalizeDivide, OpPattern::kBroadcast});
  t->push_back({"relax.nn.relu", "relu", 1, InferUnary, LegalizeRelu, OpPattern::kElemWise});
}

}  // namespace relax
}  // namespace kiln
