// Scatters by an index tensor, TVM's names and attributes:
// relax.scatter_elements(data, indices, updates, axis=0, reduction="update")
// and relax.scatter_nd(data, indices, updates, reduction="update").
//
// Both return a tensor of data's shape and dtype: a copy of data in which the
// elements that `indices` names are replaced by (reduction "update") or
// combined with ("add", "mul", "max", "min") the matching `updates`.
// scatter_elements: indices and updates have one shape, of data's rank;
// update j goes to data[j with j[axis] replaced by indices[j]].
// scatter_nd (ONNX's ScatterND): the last axis of `indices` (static length k)
// holds index tuples into data's first k axes; updates has the shape
// indices.shape[:-1] + data.shape[k:]. Negative indices count from the end
// of their axis. Updates are applied in row-major order of the updates, so
// with "update" the last of duplicate indices wins (ONNX leaves that
// unspecified; ORT does the same).
//
// The kernel is one custom TIR stage: a copy loop nest, then a serial loop
// nest over the updates (serial because two updates may hit one element).
#include <string>

#include "compiler/relax/op_defs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using namespace elem;  // NOLINT

bool IsScatterNd(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  return op && op->name == "relax.scatter_nd";
}

Result<std::string> Reduction(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(std::string r, StringAttr(call, "reduction", "update"));
  if (r != "update" && r != "add" && r != "mul" && r != "max" && r != "min") {
    return Error(call, "reduction must be \"update\", \"add\", \"mul\", \"max\" or \"min\", got \"" + r + "\"");
  }
  return r;
}

// combine(old, u) of the reduction.
PrimExpr Combine(const std::string& r, const PrimExpr& old, const PrimExpr& u) {
  if (r == "add") return Bin(TirKind::kAdd, old, u);
  if (r == "mul") return Bin(TirKind::kMul, old, u);
  if (r == "max") return Bin(TirKind::kMax, old, u);
  if (r == "min") return Bin(TirKind::kMin, old, u);
  return u;
}

// The index value as int64, negative values counted from the end of `dim`.
PrimExpr FromEnd(const PrimExpr& v, const PrimExpr& dim) {
  PrimExpr i = CastTo(DType::Int64(), v);
  return Select(Bin(TirKind::kLT, i, PrimExpr(int64_t{0})), i + dim, i);
}

Status CheckOperands(const ir::CallExpr& call, const ir::TensorSInfo* x, const ir::TensorSInfo* ind,
                     const ir::TensorSInfo* upd) {
  if (ind->has_dtype && ind->dtype.code != kDLInt && ind->dtype.code != kDLUInt) {
    return Error(call, "indices must be an integer tensor, got " + Str(ind->dtype));
  }
  if (x->has_dtype && upd->has_dtype && x->dtype != upd->dtype) {
    return Error(call, "updates must have data's dtype " + Str(x->dtype) + ", got " + Str(upd->dtype));
  }
  return Status::Ok();
}

Result<ir::StructInfo> InferScatter(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 3, 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, TensorArg(call, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* upd, TensorArg(call, 2, "updates"));
  KILN_RETURN_IF_ERROR(CheckOperands(call, x, ind, upd));
  KILN_RETURN_IF_ERROR(Reduction(call).status());
  if (!IsScatterNd(call)) {
    if ((x->ndim >= 0 && ind->ndim >= 0 && x->ndim != ind->ndim) ||
        (ind->ndim >= 0 && upd->ndim >= 0 && ind->ndim != upd->ndim)) {
      return Error(call, "data, indices and updates must have one rank, got " + std::to_string(x->ndim) + ", " +
                             std::to_string(ind->ndim) + " and " + std::to_string(upd->ndim));
    }
    if (x->ndim >= 0) {
      KILN_ASSIGN_OR_RETURN(int64_t axis, IntAttr(call, "axis", 0));
      KILN_RETURN_IF_ERROR(NormalizeAxis(call, axis, x->ndim).status());
    }
  } else if (x->ndim >= 0 && ind->ndim >= 0 && ind->has_shape) {
    if (ind->ndim < 1) return Error(call, "indices must have rank 1 or more");
    auto k = ConstDim(ind->shape.back());
    if (!k) return Error(call, "the last dimension of indices must be static");
    if (*k < 1 || *k > x->ndim) {
      return Error(call, "index tuples of length " + std::to_string(*k) + " do not fit data of rank " +
                             std::to_string(x->ndim));
    }
    if (upd->ndim >= 0 && upd->ndim != ind->ndim - 1 + x->ndim - *k) {
      return Error(call, "updates must have rank " + std::to_string(ind->ndim - 1 + x->ndim - *k) + ", got " +
                             std::to_string(upd->ndim));
    }
  }
  return ir::StructInfo(std::make_shared<ir::TensorSInfo>(*x));
}

ir::Stmt For(const ir::Var& v, const PrimExpr& extent, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, PrimExpr(int64_t{0}), extent, ir::ForKind::kSerial, std::move(body));
}

// `body(i)` inside serial loops over every index i of `shape`.
ir::Stmt Loops(const std::vector<PrimExpr>& shape, const std::string& prefix,
               const std::function<ir::Stmt(const te::Indices&)>& body) {
  std::vector<ir::Var> vars;
  te::Indices idx;
  for (size_t d = 0; d < shape.size(); ++d) {
    vars.push_back(ir::MakeVar(prefix + std::to_string(d)));
    idx.push_back(PrimExpr(vars.back()));
  }
  ir::Stmt s = body(idx);
  for (size_t d = shape.size(); d-- > 0;) s = For(vars[d], shape[d], s);
  return s;
}

Result<ir::PrimFunc> LegalizeScatter(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, ShapedTensorArg(call, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* upd, ShapedTensorArg(call, 2, "updates"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  KILN_ASSIGN_OR_RETURN(std::string red, Reduction(call));
  bool nd = IsScatterNd(call);
  int64_t axis = 0;
  if (!nd) {
    KILN_ASSIGN_OR_RETURN(int64_t a, IntAttr(call, "axis", 0));
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(call, a, x->ndim));
  }
  te::FuncBuilder b(name);
  te::Tensor data = b.Input("data", x->shape, x->dtype);
  te::Tensor indices = b.Input("indices", ind->shape, ind->dtype);
  te::Tensor updates = b.Input("updates", upd->shape, upd->dtype);
  const std::vector<PrimExpr> dshape = data.shape();
  te::Tensor r = b.Custom(nd ? "T_scatter_nd" : "T_scatter_elements", out->shape, out->dtype, [&](const ir::Buffer& o) {
    ir::Stmt copy = Loops(dshape, "i", [&](const te::Indices& i) { return ir::Store(o, data(i), i); });
    ir::Stmt scatter = Loops(updates.shape(), "j", [&](const te::Indices& j) {
      te::Indices at;
      if (nd) {
        int64_t k = *ConstDim(indices.shape().back());
        size_t q = indices.ndim() - 1;
        te::Indices it(j.begin(), j.begin() + q);
        it.push_back(PrimExpr(int64_t{0}));
        for (int64_t t = 0; t < k; ++t) {
          it.back() = PrimExpr(t);
          at.push_back(FromEnd(indices(it), dshape[t]));
        }
        at.insert(at.end(), j.begin() + q, j.end());
      } else {
        at = j;
        at[axis] = FromEnd(indices(j), dshape[axis]);
      }
      return ir::Store(o, Combine(red, ir::Load(o, at), updates(j)), at);
    });
    return ir::Seq({copy, scatter});
  });
  return b.Build({r});
}

}  // namespace

void AddScatterOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.scatter_elements", "scatter_elements", 3, InferScatter, LegalizeScatter, OpPattern::kOpaque});
  t->push_back({"relax.scatter_nd", "scatter_nd", 3, InferScatter, LegalizeScatter, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
