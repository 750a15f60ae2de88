// relax.nn.dropout (inference) and relax.nn.pad.
//
// dropout(x, rate=0.5): TVM's op returns the tuple (out, mask); at inference
//   out is x and the mask keeps everything (ones of x's shape and dtype).
// pad(x, pad_width, pad_mode="constant", pad_value=0.0): pad_width holds
//   (before, after) for every axis, flattened: [b0, a0, b1, a1, ...]; as an
//   attribute, constants, or as a second argument R.shape([...]), values
//   that may be symbolic (an ONNX Pad to a multiple of 32: (h + 31) // 32 *
//   32 - h), trusted to be non-negative.
//   "constant" fills with pad_value; "reflect" mirrors without repeating the
//   edge (numpy's reflect: before/after must be smaller than the axis);
//   "edge" repeats the edge element.
#include "compiler/relax/op_defs.h"

#include "compiler/arith/simplify.h"
#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

// ---------------------------------------------------------------- dropout

Result<ir::StructInfo> InferDropout(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"rate"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  (void)x;
  KILN_ASSIGN_OR_RETURN(double rate, r.Float("rate", 0.5));
  if (rate < 0 || rate >= 1) return r.Error("rate must be in [0, 1), got " + std::to_string(rate));
  return ir::StructInfo(
      std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{call.args[0]->struct_info, call.args[0]->struct_info}));
}

Result<ir::PrimFunc> LegalizeDropout(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("data", xi->shape, xi->dtype);
  te::Tensor out = b.Compute("T_dropout", x.shape(), xi->dtype, [&](const te::Indices& i) { return x(i); });
  te::Tensor mask = b.Compute("T_mask", x.shape(), xi->dtype, [&](const te::Indices&) { return Const(xi->dtype, 1.0); });
  return b.Build({out, mask});
}

// ---------------------------------------------------------------- pad

struct PadAttrs {
  std::vector<PrimExpr> before, after;
  std::string mode;
  double value = 0;
};

Result<PadAttrs> ReadPad(const AttrReader& r, const ir::TensorSInfo& x) {
  PadAttrs a;
  const ir::CallExpr& call = r.call();
  if (call.args.size() > 2) return r.Error("takes the data and at most one pad_width argument");
  std::vector<PrimExpr> w;
  if (call.args.size() == 2) {
    if (r.Has("pad_width")) return r.Error("pad_width is given both as an attribute and as an argument");
    const auto* shape = ir::SInfoAs<ir::ShapeSInfo>(call.args[1]->struct_info);
    if (!shape || !shape->has_values) return r.Error("the pad_width argument must be R.shape([...])");
    w = shape->values;
  } else {
    if (!r.Has("pad_width")) return r.Error("pad_width is required");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ints, r.IntList("pad_width", {}));
    for (int64_t v : ints) w.push_back(PrimExpr(v));
  }
  KILN_ASSIGN_OR_RETURN(a.mode, r.String("pad_mode", "constant", {"constant", "reflect", "edge"}));
  KILN_ASSIGN_OR_RETURN(a.value, r.Float("pad_value", 0.0));
  if (x.ndim >= 0 && w.size() != 2 * static_cast<size_t>(x.ndim)) {
    return r.Error("pad_width has " + std::to_string(w.size()) + " values; a tensor of rank " + std::to_string(x.ndim) +
                   " needs " + std::to_string(2 * x.ndim) + " (before, after per axis)");
  }
  for (size_t i = 0; i + 1 < w.size(); i += 2) {
    auto b = ConstDim(w[i]), e = ConstDim(w[i + 1]);
    if ((b && *b < 0) || (e && *e < 0)) return r.Error("pad_width must not be negative");
    a.before.push_back(w[i]);
    a.after.push_back(w[i + 1]);
  }
  if (x.has_shape && a.mode != "constant") {
    for (size_t d = 0; d < a.before.size(); ++d) {
      auto n = ConstDim(x.shape[d]);
      auto b = ConstDim(a.before[d]), e = ConstDim(a.after[d]);
      if (!n || !b || !e) continue;
      if (*n == 0 && (*b || *e)) return r.Error("cannot " + a.mode + "-pad an empty axis " + std::to_string(d));
      if (a.mode == "reflect" && (*b >= *n || *e >= *n)) {
        return r.Error("reflect padding of axis " + std::to_string(d) + " must be smaller than its size " + std::to_string(*n));
      }
    }
  }
  return a;
}

Result<ir::StructInfo> InferPad(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"pad_width", "pad_mode", "pad_value"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(PadAttrs a, ReadPad(r, *x));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(x->ndim, x->dtype);
  std::vector<PrimExpr> out;
  for (size_t d = 0; d < x->shape.size(); ++d) out.push_back(arith::Simplify(x->shape[d] + a.before[d] + a.after[d]));
  return ir::MakeTensorSInfo(out, x->dtype);
}

Result<ir::PrimFunc> LegalizePad(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* oi, ShapedResult(r));
  KILN_ASSIGN_OR_RETURN(PadAttrs a, ReadPad(r, *xi));
  DType dt = xi->dtype;
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("data", xi->shape, dt);
  te::Tensor out = b.Compute("T_pad", b.Local(oi->shape), dt, [&](const te::Indices& i) {
    te::Indices src;
    PrimExpr inside;
    for (size_t d = 0; d < i.size(); ++d) {
      PrimExpr n = x.shape()[d];
      PrimExpr j = i[d] - b.Local(a.before[d]);
      if (a.mode == "constant") {
        PrimExpr c = ir::MakeBinary(ir::TirKind::kAnd, ir::MakeBinary(ir::TirKind::kGE, j, PrimExpr(0)),
                                    ir::MakeBinary(ir::TirKind::kLT, j, n));
        inside = inside.defined() ? ir::MakeBinary(ir::TirKind::kAnd, inside, c) : c;
      } else if (a.mode == "edge") {
        j = ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, j, PrimExpr(0)), n - PrimExpr(1));
      } else {
        // reflect: -j before the start, 2 (n - 1) - j past the end.
        PrimExpr neg = ir::MakeBinary(ir::TirKind::kLT, j, PrimExpr(0));
        PrimExpr past = ir::MakeBinary(ir::TirKind::kGE, j, n);
        j = PrimExpr(std::make_shared<ir::SelectNode>(
            neg, PrimExpr(0) - j,
            PrimExpr(std::make_shared<ir::SelectNode>(past, (n - PrimExpr(1)) * PrimExpr(2) - j, j))));
      }
      src.push_back(j);
    }
    if (!inside.defined()) return x(src);
    return IfThenElse(inside, x(src), Const(dt, a.value));
  });
  return b.Build({out});
}

}  // namespace
}  // namespace nn

void AddNnMiscOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.nn.dropout", "dropout", 1, InferDropout, LegalizeDropout, OpPattern::kOpaque});
  t->push_back({"relax.nn.pad", "pad", -1, InferPad, LegalizePad, OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
