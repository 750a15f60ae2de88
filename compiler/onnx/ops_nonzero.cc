// NonZero: an operator whose output size only the data decides.
//
// The count n of non-zero elements is computed first (a sum), read when the
// program runs and bound to a fresh variable (RunTimeSize, shape_values.cc);
// the output (rank, n) is then allocated at that size and later operators
// use n symbolically. The flat indices of the non-zero elements, in order,
// are the n largest of key[i] = nonzero(x[i]) * (N - i) (distinct for the
// non-zero elements, 0 for the others): a topk with the symbolic k = n. They
// become coordinates by floor division and remainder by the strides.
#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

using ir::PrimExpr;

Status ConvertNonZero(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  if (!xi->has_dtype) return ctx.Unsupported("an input of unknown dtype");
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  const size_t rank = xi->shape.size();
  PrimExpr total(int64_t{1});
  for (const auto& d : xi->shape) total = total * d;
  total = SimplifyDim(total);
  KILN_ASSIGN_OR_RETURN(ir::Expr flat, ctx.Op("reshape", {x, MakeShape({total})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr nz, ctx.Op("not_equal", {flat, ScalarConst(xi->dtype, 0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr mask, ctx.Op("astype", {nz}, {{"dtype", AttrS("int64")}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr count, ctx.Op("sum", {mask}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
  KILN_ASSIGN_OR_RETURN(PrimExpr n, RunTimeSize(ctx, count, ctx.node().output(0)));
  KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("arange", {PrimValue(PrimExpr(int64_t{0})), PrimValue(total),
                                                        PrimValue(PrimExpr(int64_t{1}))},
                                             {{"dtype", AttrS("int64")}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr nt, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape({total})}, {})));
  KILN_ASSIGN_OR_RETURN(ir::Expr rev, ctx.Op("subtract", {nt, pos}));  // N - i: 1.. N, descending
  KILN_ASSIGN_OR_RETURN(ir::Expr key, ctx.Op("multiply", {mask, rev}));
  KILN_ASSIGN_OR_RETURN(ir::Expr top, ctx.Op("topk", {key, PrimValue(n)},
                                             {{"axis", AttrI(0)}, {"ret_type", AttrS("indices")},
                                              {"largest", AttrB(true)}, {"dtype", AttrS("int64")}}));
  // Coordinates, one row per axis: (flat // stride_a) % dim_a.
  std::vector<ir::Expr> rows;
  PrimExpr stride(int64_t{1});
  std::vector<PrimExpr> strides(rank);
  for (size_t a = rank; a-- > 0;) {
    strides[a] = SimplifyDim(stride);
    stride = stride * xi->shape[a];
  }
  for (size_t a = 0; a < rank; ++a) {
    KILN_ASSIGN_OR_RETURN(ir::Expr st, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape({strides[a], xi->shape[a]})}, {})));
    auto part = [&](int64_t k) {
      return ctx.Op("strided_slice", {st}, {{"axes", AttrInts({0})}, {"begin", AttrInts({k})}, {"end", AttrInts({k + 1})},
                                            {"strides", AttrInts({1})}});
    };
    KILN_ASSIGN_OR_RETURN(ir::Expr s, part(0));
    KILN_ASSIGN_OR_RETURN(ir::Expr d, part(1));
    KILN_ASSIGN_OR_RETURN(ir::Expr q, ctx.Op("floor_divide", {top, s}));
    KILN_ASSIGN_OR_RETURN(ir::Expr c, ctx.Op("floor_mod", {q, d}));
    KILN_ASSIGN_OR_RETURN(ir::Expr row, ctx.Op("reshape", {c, MakeShape({PrimExpr(int64_t{1}), n})}));
    rows.push_back(row);
  }
  if (rank == 0) {
    // A scalar: (0, n) indices.
    KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("reshape", {top, MakeShape({PrimExpr(int64_t{0}), n})}));
    ctx.SetOutput(0, r);
    return Status::Ok();
  }
  if (rows.size() == 1) {
    ctx.SetOutput(0, rows[0]);
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr out, ctx.Op("concat", {std::make_shared<ir::TupleExpr>(rows)}, {{"axis", AttrI(0)}}));
  ctx.SetOutput(0, out);
  return Status::Ok();
}

}  // namespace

void AddDataDependentConverters(ConverterTable* t) { (*t)["NonZero"] = ConvertNonZero; }

}  // namespace onnx
}  // namespace kiln
