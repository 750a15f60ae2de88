// relax.matmul and relax.linear: struct info and legalization.
//
// matmul follows numpy: x (..., M, K) @ y (..., K, N) -> (..., M, N) with the
// batch dimensions broadcast; a rank-1 x is a row (its M is dropped from the
// result), a rank-1 y a column (its N is dropped). out_dtype="float32" casts
// both operands before the multiply (TVM's semantics); empty/"void" keeps the
// operands' dtype, which then must agree.
//
// matmul also takes weight_layout "KN<b>n" (b >= 1): y is a weight of shape
// [N/b, K, b], y[j/b, k, j%b] = the (K, N) matrix's [k, j], so each block of
// b columns is one contiguous K x b panel (what the CPU matmul schedule
// streams; transform/pack_matmul_weights.h makes it from constants). With
// weight_columns N (an int; only with weight_layout) the last block is zero
// padding past column N: y is [ceil(N/b), K, b] and the result has N columns
// (a CTC head's 6625 classes); the padding enters no result.
//
// linear(x, w, b) = x @ w^T + b with w of shape (N, K) (PyTorch's layout), b
// optional and broadcast against the result.
#include "compiler/relax/op_defs.h"

#include "compiler/arith/simplify.h"
#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"
#include "compiler/relax/te_compute.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

// The result shape of x @ y (numpy rules), given known shapes of rank >= 1.
Result<std::vector<PrimExpr>> MatmulShape(const AttrReader& r, const std::vector<PrimExpr>& xs,
                                          const std::vector<PrimExpr>& ys) {
  const PrimExpr& kx = xs.back();
  const PrimExpr& ky = ys.size() == 1 ? ys[0] : ys[ys.size() - 2];
  if (CompareDims(kx, ky) == DimRelation::kNotEqual) {
    return r.Error("reduction dimensions differ: x " + ShapeString(xs) + " has K=" + DimString(kx) + " but y " +
                   ShapeString(ys) + " has K=" + DimString(ky));
  }
  std::vector<PrimExpr> bx(xs.begin(), xs.end() - std::min<size_t>(xs.size(), 2));
  std::vector<PrimExpr> by(ys.begin(), ys.end() - std::min<size_t>(ys.size(), 2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, BroadcastDims(r, bx, by, "batch shapes"));
  if (xs.size() >= 2) out.push_back(xs[xs.size() - 2]);
  if (ys.size() >= 2) out.push_back(ys.back());
  return out;
}

// b of weight_layout "KN<b>n"; 0 without the attribute.
Result<int64_t> WeightBlock(const AttrReader& r) {
  KILN_ASSIGN_OR_RETURN(std::string layout, r.String("weight_layout", ""));
  if (layout.empty()) return int64_t{0};
  std::string digits = layout.size() > 3 ? layout.substr(2, layout.size() - 3) : "";
  bool ok = layout.compare(0, 2, "KN") == 0 && layout.back() == 'n' && !digits.empty() && digits.size() <= 6 &&
            digits.find_first_not_of("0123456789") == std::string::npos && std::stoll(digits) >= 1;
  if (!ok) return r.Error("weight_layout \"" + layout + "\" is not supported (a blocked weight is KN<b>n with b >= 1, e.g. KN64n)");
  return std::stoll(digits);
}

// The (K, N) shape of a weight [N/b, K, b] of block b.
Result<std::vector<PrimExpr>> UnblockedWeightShape(const AttrReader& r, const std::vector<PrimExpr>& ys, int64_t b) {
  std::optional<int64_t> inner = ys.size() == 3 ? ConstDim(ys[2]) : std::nullopt;
  if (!inner || *inner != b) {
    return r.Error("weight_layout KN" + std::to_string(b) + "n needs a weight [N/" + std::to_string(b) + ", K, " +
                   std::to_string(b) + "], got " + ShapeString(ys));
  }
  return std::vector<PrimExpr>{ys[1], arith::Simplify(ys[0] * PrimExpr(b))};
}

// The (K, N) shape of weight `ys`: as it is without a block (b = 0); for a
// blocked weight of block b, N = blocks * b, or `columns` when not 0 (the
// last block padded past it).
Result<std::vector<PrimExpr>> WeightShape(const AttrReader& r, const std::vector<PrimExpr>& ys, int64_t b,
                                          int64_t columns) {
  if (b == 0) return ys;
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> kn, UnblockedWeightShape(r, ys, b));
  if (columns == 0) return kn;
  std::optional<int64_t> blocks = ConstDim(ys[0]);
  if (!blocks || columns <= (*blocks - 1) * b || columns > *blocks * b) {
    return r.Error("weight_columns " + std::to_string(columns) + " does not end in the last of the weight's " +
                   DimString(ys[0]) + " blocks of " + std::to_string(b) + " columns");
  }
  kn[1] = PrimExpr(columns);
  return kn;
}

Result<ir::StructInfo> InferMatmul(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"out_dtype", "weight_layout", "weight_columns"}));
  const ir::TensorSInfo* x = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* y = TensorInfoOf(call.args[1]);
  if (!x || !y) return InvalidArgument(Where(call.span) + "R.matmul expects two tensors");
  KILN_ASSIGN_OR_RETURN(int64_t block, WeightBlock(r));
  KILN_ASSIGN_OR_RETURN(int64_t columns, r.Int("weight_columns", 0));
  if (columns != 0 && block == 0) return r.Error("weight_columns needs a blocked weight_layout (KN<b>n)");
  KILN_ASSIGN_OR_RETURN(std::optional<DType> out_dtype, r.OptionalDType("out_dtype"));
  bool has_out_dtype = out_dtype.has_value();
  if (!has_out_dtype && x->has_dtype && y->has_dtype && x->dtype != y->dtype) {
    return r.Error("operand dtypes differ: " + DTypeToString(x->dtype) + " and " + DTypeToString(y->dtype));
  }
  if (x->ndim == 0 || y->ndim == 0) {
    return r.Error("operands must have rank >= 1, got ranks " + std::to_string(x->ndim) + " and " +
                   std::to_string(y->ndim));
  }
  bool known_dtype = has_out_dtype || x->has_dtype || y->has_dtype;
  DType dtype = has_out_dtype ? *out_dtype : x->has_dtype ? x->dtype : y->dtype;
  if (block > 0 && !y->has_shape) return r.Error("weight_layout KN" + std::to_string(block) + "n needs a weight of known shape");
  if (!x->has_shape || !y->has_shape) {
    int nd = -1;
    if (x->ndim > 0 && y->ndim > 0) {
      nd = std::max(x->ndim, y->ndim);
      if (x->ndim == 1 || y->ndim == 1) nd -= 1;
      if (x->ndim == 1 && y->ndim == 1) nd = 0;
    }
    return ir::StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, nd, dtype, known_dtype));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ys, WeightShape(r, y->shape, block, columns));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, MatmulShape(r, x->shape, ys));
  return ir::StructInfo(std::make_shared<ir::TensorSInfo>(true, out, -1, dtype, known_dtype));
}

// Indices into an operand of shape `shape` whose batch dimensions are the
// trailing ones of the output's batch indices `batch` (size-1 dims read 0),
// followed by `tail` (its matrix indices).
std::vector<PrimExpr> OperandIndex(const std::vector<PrimExpr>& shape, size_t matrix_rank,
                                   const std::vector<PrimExpr>& batch, const std::vector<PrimExpr>& tail) {
  std::vector<PrimExpr> idx;
  size_t nb = shape.size() - matrix_rank;
  for (size_t i = 0; i < nb; ++i) {
    idx.push_back(IsUnitDim(shape[i]) ? PrimExpr(int64_t{0}) : batch[batch.size() - nb + i]);
  }
  idx.insert(idx.end(), tail.begin(), tail.end());
  return idx;
}

// One element of x @ y at output index `sp`, reduction index `k`; `block`
// > 0: y is a blocked weight [N/block, K, block].
PrimExpr MatmulTerm(const ir::Buffer& a, const ir::Buffer& b, DType out, const std::vector<PrimExpr>& sp,
                    const PrimExpr& k, int64_t block) {
  size_t xr = a->shape.size() == 1 ? 1 : 2, yr = b->shape.size() == 1 || block > 0 ? 1 + (block > 0) : 2;
  size_t nb = sp.size() - (xr - 1) - (yr - 1);
  std::vector<PrimExpr> batch(sp.begin(), sp.begin() + nb);
  std::vector<PrimExpr> a_tail = xr == 2 ? std::vector<PrimExpr>{sp[nb], k} : std::vector<PrimExpr>{k};
  std::vector<PrimExpr> b_tail = yr == 2 ? std::vector<PrimExpr>{k, sp.back()} : std::vector<PrimExpr>{k};
  PrimExpr bv = block > 0 ? ir::Load(b, {ir::MakeBinary(ir::TirKind::kFloorDiv, sp.back(), PrimExpr(block)), k,
                                           ir::MakeBinary(ir::TirKind::kFloorMod, sp.back(), PrimExpr(block))})
                          : ir::Load(b, OperandIndex(b->shape, yr, batch, b_tail));
  return CastTo(out, ir::Load(a, OperandIndex(a->shape, xr, batch, a_tail))) * CastTo(out, bv);
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
  spec.reduce_init = Const(out->dtype, 0.0);
  DType odt = out->dtype;
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(int64_t block, WeightBlock(r));
  spec.fcompute = [odt, block](const std::vector<ir::Buffer>& in, const std::vector<PrimExpr>& sp,
                               const std::vector<PrimExpr>& rd) { return MatmulTerm(in[0], in[1], odt, sp, rd[0], block); };
  return te::BuildComputePrimFunc(spec);
}

// ---------------------------------------------------------------- linear

Result<ir::StructInfo> InferLinear(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"out_dtype"}));
  if (call.args.size() != 2 && call.args.size() != 3) {
    return r.Error("takes 2 or 3 arguments (x, weight, bias), got " + std::to_string(call.args.size()));
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "x"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* w, TensorArg(r, 1, "weight"));
  const ir::TensorSInfo* b = nullptr;
  if (call.args.size() == 3) {
    KILN_ASSIGN_OR_RETURN(b, TensorArg(r, 2, "bias"));
  }
  KILN_ASSIGN_OR_RETURN(std::optional<DType> out_dtype, r.OptionalDType("out_dtype"));
  bool has_out_dtype = out_dtype.has_value();
  if (!has_out_dtype && x->has_dtype && w->has_dtype && x->dtype != w->dtype) {
    return r.Error("operand dtypes differ: " + DTypeToString(x->dtype) + " and " + DTypeToString(w->dtype));
  }
  if (x->ndim == 0) return r.Error("x must have rank >= 1");
  if (w->ndim >= 0 && w->ndim != 2) return r.Error("weight must have rank 2 (out_features, in_features), got rank " + std::to_string(w->ndim));
  DType dtype = has_out_dtype ? *out_dtype : x->dtype;
  if (!x->has_shape || !w->has_shape || (b && !b->has_shape)) return ir::MakeTensorSInfoNdim(x->ndim, dtype);
  if (CompareDims(x->shape.back(), w->shape[1]) == DimRelation::kNotEqual) {
    return r.Error("x " + ShapeString(x->shape) + " has " + DimString(x->shape.back()) + " features but weight " +
                   ShapeString(w->shape) + " expects " + DimString(w->shape[1]));
  }
  std::vector<PrimExpr> out(x->shape.begin(), x->shape.end() - 1);
  out.push_back(w->shape[0]);
  if (b) {
    if (b->has_dtype && b->dtype != dtype) {
      return r.Error("bias dtype " + DTypeToString(b->dtype) + " differs from the result's " + DTypeToString(dtype));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bo, BroadcastDims(r, out, b->shape));
    if (bo.size() != out.size()) return r.Error("bias " + ShapeString(b->shape) + " has more dimensions than the result");
    out = bo;
  }
  return ir::MakeTensorSInfo(out, dtype);
}

Result<ir::PrimFunc> LegalizeLinear(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedArg(r, 0, "x"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* w, ShapedArg(r, 1, "weight"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(r));
  te::FuncBuilder fb(name);
  te::Tensor a = fb.Input("A", x->shape, x->dtype);
  te::Tensor wt = fb.Input("W", w->shape, w->dtype);
  te::Tensor bias;
  if (call.args.size() == 3) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* b, ShapedArg(r, 2, "bias"));
    bias = fb.Input("B", b->shape, b->dtype);
  }
  DType odt = out->dtype;
  // The product's shape: x's batch dims and N (the bias may only broadcast
  // into it, never grow it, see InferLinear).
  std::vector<PrimExpr> mm_shape(x->shape.begin(), x->shape.end() - 1);
  mm_shape.push_back(w->shape[0]);
  auto term = [&](const te::Indices& i, const te::Indices& k) {
    te::Indices ai(i.begin(), i.end() - 1);
    ai.push_back(k[0]);
    return CastTo(odt, a(ai)) * CastTo(odt, wt({i.back(), k[0]}));
  };
  te::Tensor mm = fb.Reduce(bias.defined() ? "T_matmul" : "T_linear", mm_shape, odt, te::ReduceKind::kSum,
                            {x->shape.back()}, term, Const(odt, 0.0));
  if (!bias.defined()) return fb.Build({mm});
  te::Tensor y = fb.Compute("T_linear", out->shape, odt, [&](const te::Indices& i) {
    std::vector<PrimExpr> bi;
    size_t off = i.size() - bias.ndim();
    for (size_t d = 0; d < bias.ndim(); ++d) bi.push_back(IsUnitDim(bias.shape()[d]) ? PrimExpr(int64_t{0}) : i[off + d]);
    return mm(i) + CastTo(odt, bias(bi));
  });
  return fb.Build({y});
}

}  // namespace
}  // namespace nn

void AddMatmulOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.matmul", "matmul", 2, InferMatmul, LegalizeMatmul, OpPattern::kOutEWiseFusable});
  t->push_back({"relax.linear", "linear", -1, InferLinear, LegalizeLinear, OpPattern::kOutEWiseFusable});
}

}  // namespace relax
}  // namespace kiln
