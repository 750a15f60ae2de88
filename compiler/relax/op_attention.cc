// relax.nn.attention: scaled dot-product attention in TVM's layout.
//
//   query (B, S, H, D), key (B, T, H, D), value (B, T, H, Dv) -> (B, S, H, Dv)
//   out = softmax(query . key^T * scale + bias, over T) . value
//
// bias: an optional 4th argument broadcast to (B, H, S, T). scale: a float
// attribute, default 1 / sqrt(D). causal_mask: "TopLeft" masks key t > s,
// "BottomRight" masks t > s + (T - S) (the query block sits at the end of the
// keys, as in decoding with a cache). Masked scores become the lowest finite
// value, so a row masked entirely is uniform rather than NaN (as TVM). S and
// T may be symbolic. The softmax is stable (max subtracted); float16 inputs
// are computed in float32.
#include "compiler/relax/op_defs.h"

#include <cmath>

#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

PrimExpr Div(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kDiv, std::move(a), std::move(b)); }

Status CheckDim(const AttrReader& r, const char* what, const std::vector<PrimExpr>& a, size_t ia,
                const char* other, const std::vector<PrimExpr>& b, size_t ib, const char* dim) {
  if (CompareDims(a[ia], b[ib]) == DimRelation::kNotEqual) {
    return r.Error(std::string(dim) + " differs: " + what + " " + ShapeString(a) + " has " + DimString(a[ia]) + " but " +
                   other + " " + ShapeString(b) + " has " + DimString(b[ib]));
  }
  return Status::Ok();
}

Result<ir::StructInfo> InferAttention(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"scale", "causal_mask", "window_size"}));
  if (call.args.size() != 3 && call.args.size() != 4) {
    return r.Error("takes 3 or 4 arguments (query, key, value, bias), got " + std::to_string(call.args.size()));
  }
  if (r.Has("window_size")) return Unimplemented(Where(call.span) + r.op() + ": window_size is not supported");
  KILN_RETURN_IF_ERROR(r.Float("scale", 1.0).status());
  KILN_RETURN_IF_ERROR(r.String("causal_mask", "", {"TopLeft", "BottomRight"}).status());
  const char* names[] = {"query", "key", "value", "bias"};
  const ir::TensorSInfo* t[4] = {nullptr, nullptr, nullptr, nullptr};
  for (size_t i = 0; i < call.args.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(t[i], TensorArg(r, i, names[i]));
    if (t[i]->has_dtype && t[0]->has_dtype && t[i]->dtype != t[0]->dtype) {
      return r.Error(std::string(names[i]) + " has dtype " + DTypeToString(t[i]->dtype) + " but query has " +
                     DTypeToString(t[0]->dtype));
    }
    if (i < 3 && t[i]->ndim >= 0 && t[i]->ndim != 4) {
      return r.Error(std::string(names[i]) + " must have rank 4 (batch, seq, heads, head_dim), got rank " +
                     std::to_string(t[i]->ndim));
    }
  }
  if (t[0]->has_dtype && !t[0]->dtype.is_float()) return r.Error("expects float tensors, got " + DTypeToString(t[0]->dtype));
  if (t[3] && t[3]->ndim > 4) return r.Error("bias must have rank <= 4, got rank " + std::to_string(t[3]->ndim));
  const ir::TensorSInfo *q = t[0], *k = t[1], *v = t[2];
  if (!q->has_shape || !k->has_shape || !v->has_shape) return ir::MakeTensorSInfoNdim(4, q->dtype);
  KILN_RETURN_IF_ERROR(CheckDim(r, "query", q->shape, 0, "key", k->shape, 0, "batch"));
  KILN_RETURN_IF_ERROR(CheckDim(r, "query", q->shape, 2, "key", k->shape, 2, "heads"));
  KILN_RETURN_IF_ERROR(CheckDim(r, "query", q->shape, 3, "key", k->shape, 3, "head_dim"));
  KILN_RETURN_IF_ERROR(CheckDim(r, "key", k->shape, 0, "value", v->shape, 0, "batch"));
  KILN_RETURN_IF_ERROR(CheckDim(r, "key", k->shape, 1, "value", v->shape, 1, "sequence length"));
  KILN_RETURN_IF_ERROR(CheckDim(r, "key", k->shape, 2, "value", v->shape, 2, "heads"));
  if (t[3] && t[3]->has_shape) {
    std::vector<PrimExpr> scores{q->shape[0], q->shape[2], q->shape[1], k->shape[1]};
    const std::vector<PrimExpr>& bs = t[3]->shape;
    for (size_t d = 0; d < bs.size(); ++d) {
      const PrimExpr& sd = scores[4 - bs.size() + d];
      if (!IsUnitDim(bs[d]) && CompareDims(bs[d], sd) != DimRelation::kEqual) {
        return r.Error("bias " + ShapeString(t[3]->shape) + " does not broadcast to the scores (batch, heads, seq, kv_seq) " +
                       ShapeString(scores));
      }
    }
  }
  return ir::MakeTensorSInfo({q->shape[0], q->shape[1], q->shape[2], v->shape[3]}, q->dtype);
}

Result<ir::PrimFunc> LegalizeAttention(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* qi, ShapedArg(r, 0, "query"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ki, ShapedArg(r, 1, "key"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* vi, ShapedArg(r, 2, "value"));
  KILN_ASSIGN_OR_RETURN(std::string mask, r.String("causal_mask", "", {"TopLeft", "BottomRight"}));
  DType dt = qi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor q = b.Input("Q", qi->shape, dt);
  te::Tensor k = b.Input("K", ki->shape, dt);
  te::Tensor v = b.Input("V", vi->shape, dt);
  te::Tensor bias;
  if (call.args.size() == 4) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ShapedArg(r, 3, "bias"));
    bias = b.Input("bias", bi->shape, bi->dtype);
  }
  PrimExpr B = q.shape()[0], S = q.shape()[1], H = q.shape()[2], D = q.shape()[3];
  PrimExpr T = k.shape()[1], Dv = v.shape()[3];
  PrimExpr scale;
  if (r.Has("scale")) {
    KILN_ASSIGN_OR_RETURN(double s, r.Float("scale", 1.0));
    scale = Const(ct, s);
  } else if (auto d = ConstDim(D)) {
    scale = Const(ct, 1.0 / std::sqrt(static_cast<double>(*d)));
  } else {
    scale = Div(Const(ct, 1.0), Intrin("sqrt", {ir::Cast(ct, D)}));
  }
  std::vector<PrimExpr> scores_shape{B, H, S, T}, rows{B, H, S};
  te::Tensor qk = b.Reduce("T_qk", scores_shape, ct, te::ReduceKind::kSum, {D}, [&](const te::Indices& i, const te::Indices& d) {
    return CastTo(ct, q({i[0], i[2], i[1], d[0]})) * CastTo(ct, k({i[0], i[3], i[1], d[0]}));
  });
  te::Tensor scores = b.Compute("T_scores", scores_shape, ct, [&](const te::Indices& i) {
    PrimExpr s = qk(i) * scale;
    if (bias.defined()) {
      te::Indices bidx;
      size_t off = 4 - bias.ndim();
      for (size_t d = 0; d < bias.ndim(); ++d) bidx.push_back(IsUnitDim(bias.shape()[d]) ? PrimExpr(int64_t{0}) : i[off + d]);
      s = s + CastTo(ct, bias(bidx));
    }
    if (!mask.empty()) {
      PrimExpr limit = mask == "TopLeft" ? i[2] : i[2] + (T - S);
      s = PrimExpr(std::make_shared<ir::SelectNode>(ir::MakeBinary(ir::TirKind::kGT, i[3], limit), LowestFinite(ct), s));
    }
    return s;
  });
  te::Tensor mx = b.Reduce("T_max", rows, ct, te::ReduceKind::kMax, {T},
                           [&](const te::Indices& i, const te::Indices& t) { return scores({i[0], i[1], i[2], t[0]}); });
  // min(., 0) changes no value (scores - max <= 0) and gives the emitter the
  // one-step scale of a non-positive exponent, as in softmax (op_softmax.cc).
  te::Tensor ex = b.Compute("T_exp", scores_shape, ct, [&](const te::Indices& i) {
    return Intrin("exp", {ir::MakeBinary(ir::TirKind::kMin, scores(i) - mx({i[0], i[1], i[2]}), ir::FloatImm(ct, 0.0))});
  });
  te::Tensor sum = b.Reduce("T_sum", rows, ct, te::ReduceKind::kSum, {T},
                            [&](const te::Indices& i, const te::Indices& t) { return ex({i[0], i[1], i[2], t[0]}); });
  std::vector<PrimExpr> out_shape{B, S, H, Dv};
  te::Tensor pv = b.Reduce("T_pv", out_shape, ct, te::ReduceKind::kSum, {T}, [&](const te::Indices& i, const te::Indices& t) {
    return ex({i[0], i[2], i[1], t[0]}) * CastTo(ct, v({i[0], t[0], i[2], i[3]}));
  });
  te::Tensor out = b.Compute("T_attention", out_shape, dt,
                             [&](const te::Indices& i) { return CastTo(dt, Div(pv(i), sum({i[0], i[2], i[1]}))); });
  return b.Build({out});
}

}  // namespace
}  // namespace nn

void AddAttentionOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.nn.attention", "attention", -1, InferAttention, LegalizeAttention, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
