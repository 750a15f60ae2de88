// SymConvKernel's pointwise paths for few points: dot products over input
// channels for planes of fewer than 8 points, vectors of output channels for
// the last few columns of a flat row.
// (conv_symbolic_kernel.h declares the class; conv_symbolic_schedule.h says
// what the kernel computes.)
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_symbolic_kernel.h"

namespace kiln {
namespace tir {
namespace symconv {

namespace {

// X's value at the one point of a 1-point plane: every load of a flat
// [n, c, j] view at point j read through a view of the same data whose plane
// is 1 wide, so that consecutive channels are consecutive addresses (the
// flat view's channel stride is the symbolic plane size, which the vector
// of channels would load element by element). `ok` false when a load reads
// j otherwise.
struct OnePoint : StmtExprMutator {
  const VarNode* j = nullptr;
  bool ok = true;
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* ld = e.as<BufferLoadNode>()) {
      const std::unordered_set<const VarNode*> jv = {j};
      if (ld->buffer->shape.size() == 3 && ld->buffer->strides.empty() && IsVar(ld->indices[2], j) &&
          !Uses(ld->indices[0], jv) && !Uses(ld->indices[1], jv)) {
        auto view = std::make_shared<BufferNode>(*ld->buffer);
        view->shape = {ld->buffer->shape[0], ld->buffer->shape[1], I64(1)};
        return Load(Buffer(view), {MutateExpr(ld->indices[0]), MutateExpr(ld->indices[1]), I64(0)});
      }
      for (const PrimExpr& i : ld->indices) ok = ok && !Uses(i, jv);
    }
    return StmtExprMutator::MutateExpr(e);
  }
};

}  // namespace

bool SymConvKernel::PointDotsApply() const {
  return flat_ && source_views_.empty() && cv_.wblock == 0 && cv_.ki % 8 == 0 && cv_.ki <= kMaxPointDotChannels;
}

Stmt SymConvKernel::PointDots() {
  const auto& L = cv_.loops;
  const int64_t vl = cv_.ki % 16 == 0 ? 16 : 8;
  int64_t rows = 1;
  for (int64_t r : {4, 3, 2}) {
    if (cv_.o % r == 0) {
      rows = r;
      break;
    }
  }
  DType f32 = DType::Float32();
  Var j = MakeVar("pj"), c = MakeVar("c"), q = MakeVar("pq");
  // X's channels at every point (under 8), gathered once for every output
  // channel.
  const int64_t points = kTileWidths[2];
  Buffer col = nest::Float32Buffer("col", {I64(points), I64(cv_.ki)}, "local");
  Var gj = MakeVar("gj");
  VarMap at = {{L[0]->loop_var.get(), PrimExpr(n_)}, {L[4]->loop_var.get(), PrimExpr(c)}, {j_.get(), PrimExpr(gj)}};
  Stmt gather = MakeFor(gj, hw_, ForKind::kSerial,
                        MakeFor(c, I64(cv_.ki), ForKind::kSerial,
                                Store(col, Substitute(x_expr_, at), {PrimExpr(gj), PrimExpr(c)})));
  // A 1-point plane (mtcnn_pnet's heads at 12 x 12) reads X's channels in
  // place, contiguous there: the gather, 32 strided scalar copies unrolled
  // (10 of the kernel's 38 cache lines run at that shape), not run.
  OnePoint one;
  one.j = j_.get();
  auto column_at = [&](const PrimExpr& ch) {
    return one.MutateExpr(Substitute(x_expr_, {{L[0]->loop_var.get(), PrimExpr(n_)}, {L[4]->loop_var.get(), ch}}));
  };
  // acc[r, l] = sum over kb of W[o0 + r, kb * vl + l] * col[kb * vl + l].
  // (Named apart from the register tiles' "acc": a vector over input channels.)
  Buffer acc = nest::Float32Buffer("dot", {I64(rows), I64(vl)}, "local");
  Var r = MakeVar("pr"), l = MakeVar("pl"), kb = MakeVar("kb");
  PrimExpr o0 = PrimExpr(q) * I64(rows);
  PrimExpr ch = PrimExpr(kb) * I64(vl) + PrimExpr(l);
  VarMap wat = {{L[4]->loop_var.get(), ch}, {L[5]->loop_var.get(), I64(0)}, {L[6]->loop_var.get(), I64(0)}};
  PrimExpr cur = Load(acc, {PrimExpr(r), PrimExpr(l)});
  auto taps_of = [&](const PrimExpr& column) {
    Stmt fma = Store(acc,
                     PrimExpr(std::make_shared<CallNode>(
                         f32, "fma",
                         std::vector<PrimExpr>{Load(cv_.weight, WeightIndex(o0, rows, PrimExpr(r), wat)), column, cur})),
                     {PrimExpr(r), PrimExpr(l)});
    return MakeFor(kb, I64(cv_.ki / vl), ForKind::kSerial,
                   MakeFor(r, I64(rows), ForKind::kUnrolled, MakeFor(l, I64(vl), ForKind::kVectorized, fma)));
  };
  Var zr = MakeVar("zr"), zl = MakeVar("zl");
  Stmt zero = MakeFor(zr, I64(rows), ForKind::kUnrolled,
                      MakeFor(zl, I64(vl), ForKind::kVectorized, Store(acc, FloatImm(f32, 0.0), {PrimExpr(zr), PrimExpr(zl)})));
  // The lanes summed by halves into lane 0.
  std::vector<Stmt> folds;
  Var fr = MakeVar("fr");
  for (int64_t h = vl / 2; h >= 1; h /= 2) {
    Var fl = MakeVar("fl");
    folds.push_back(MakeFor(fl, I64(h), h > 1 ? ForKind::kVectorized : ForKind::kSerial,
                            Store(acc, Load(acc, {PrimExpr(fr), PrimExpr(fl)}) + Load(acc, {PrimExpr(fr), PrimExpr(fl) + I64(h)}),
                                  {PrimExpr(fr), PrimExpr(fl)})));
  }
  Stmt fold = MakeFor(fr, I64(rows), ForKind::kUnrolled, Seq(folds));
  // C at (n, o0 + w, point j) through the epilogue.
  Var w = MakeVar("wr");
  VarMap out_at = {{L[0]->loop_var.get(), PrimExpr(n_)},
                   {L[1]->loop_var.get(), o0 + PrimExpr(w)},
                   {L[2]->loop_var.get(), I64(0)},
                   {L[3]->loop_var.get(), I64(0)},
                   {j_.get(), PrimExpr(j)}};
  PrimExpr a = Load(acc, {PrimExpr(w), I64(0)});
  std::vector<Stmt> back;
  std::vector<PrimExpr> out_idx;
  for (const PrimExpr& e : out_idx_) out_idx.push_back(Substitute(e, out_at));
  if (store_out_ || epilogue_.empty()) back.push_back(Store(out_, a, out_idx));
  ReplaceLoads replace(cv_.out->data.get(), a);
  for (const Stmt& st : epilogue_) back.push_back(Substitute(replace.MutateStmt(st), out_at));
  Stmt write = MakeFor(w, I64(rows), ForKind::kUnrolled, Seq(back));
  // Tiles of output channels in parallel only when they hold enough work
  // for a launch (the 32 -> 4 head is 128 MACs a point).
  const bool parallel = threads_ >= 2 && cv_.o * cv_.ki >= kParallelPointDotMacs;
  auto tiles_of = [&](const PrimExpr& column, const PrimExpr& points) {
    Stmt tile = std::make_shared<AllocateNode>(acc, Seq({zero, taps_of(column), fold, write}));
    return MakeFor(q, I64(cv_.o / rows), parallel ? ForKind::kParallel : ForKind::kSerial,
                   MakeFor(j, points, ForKind::kSerial, tile));
  };
  Stmt gathered = std::make_shared<AllocateNode>(col, Seq({gather, tiles_of(Load(col, {PrimExpr(j), ch}), hw_)}));
  PrimExpr in_place = column_at(ch);
  if (!one.ok) return gathered;
  // (j is 0 on the one point: the write's index of j folds.)
  return std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, hw_, I64(1)), tiles_of(in_place, I64(1)), gathered);
}

bool SymConvKernel::PointColumnsApply() const {
  return flat_ && !spatial_ && yr_ == 1 && source_views_.empty() && cv_.wblock != 0 && cv_.wblock % mr_ == 0;
}

Stmt SymConvKernel::WithPointColumns(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo, const Stmt& row) {
  const int64_t vec = kTileWidths[1];
  PrimExpr rem = Mod(wo, I64(vec));
  PrimExpr whole = wo - rem;
  // The whole vectors as Row covers a width of 16 or of 32 and more (one
  // tile of 16; WideRowTiles' 48s and 32s, exact).
  Stmt tiles = std::make_shared<IfThenElseNode>(Ge(whole, I64(2 * vec)), WideRowTiles(o0, y, whole),
                                                Tiles(o0, y, whole, vec));
  // One copy of the columns per count, each unrolled (a loop over a
  // run-time count of columns, each over the input channels, computed
  // every channel's address again per column: slower than the vector it
  // replaced).
  Stmt tail = PointColumns(o0, y, whole, kMaxPointColumns);
  for (int64_t r = kMaxPointColumns - 1; r >= 1; --r) {
    tail = std::make_shared<IfThenElseNode>(Lt(rem, I64(r + 1)), PointColumns(o0, y, whole, r), tail);
  }
  PrimExpr few = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kAnd, Ge(wo, I64(vec)), Ge(rem, I64(1))),
                            Lt(rem, I64(kMaxPointColumns + 1)));
  return std::make_shared<IfThenElseNode>(few, Seq({tiles, tail}), row);
}

Stmt SymConvKernel::PointColumns(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, int64_t cols) {
  const auto& L = cv_.loops;
  const int64_t lanes = mr_;
  // Partial sums per column over interleaved input channels: about
  // kPointColumnAccumulators independent FMAs in all.
  int64_t chains = 1;
  while (chains * 2 * cols <= kPointColumnAccumulators && cv_.ki % (chains * 2) == 0) chains *= 2;
  DType f32 = DType::Float32();
  Buffer acc = nest::Float32Buffer("colacc", {I64(chains * cols), I64(lanes)}, "local");
  Var cb = MakeVar("pcb"), k = MakeVar("pk"), col = MakeVar("pcol"), l = MakeVar("pl");
  // Input channel cb * chains + k, column col into partial sum k * cols + col.
  VarMap map = At(o0, y, x0, l, PrimExpr(col));
  map[L[4]->loop_var.get()] = PrimExpr(cb) * I64(chains) + PrimExpr(k);
  map[L[5]->loop_var.get()] = I64(0);
  map[L[6]->loop_var.get()] = I64(0);
  PrimExpr wv = Load(cv_.weight, WeightIndex(o0, mr_, PrimExpr(l), map));
  std::vector<PrimExpr> slot = {PrimExpr(k) * I64(cols) + PrimExpr(col), PrimExpr(l)};
  Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{wv, XAt(map), Load(acc, slot)})),
                   slot);
  Stmt taps = MakeFor(cb, I64(cv_.ki / chains), ForKind::kSerial,
                      MakeFor(k, I64(chains), ForKind::kUnrolled,
                              MakeFor(col, I64(cols), ForKind::kUnrolled, MakeFor(l, I64(lanes), ForKind::kVectorized, fma))));
  Var zk = MakeVar("zk"), zl = MakeVar("zl");
  Stmt zero = MakeFor(zk, I64(chains * cols), ForKind::kUnrolled,
                      MakeFor(zl, I64(lanes), ForKind::kVectorized,
                              Store(acc, FloatImm(f32, 0.0), {PrimExpr(zk), PrimExpr(zl)})));
  std::vector<Stmt> body = {zero, taps};
  // Each column's partial sums added by halves into sum 0 (slot col).
  for (int64_t h = chains / 2; h >= 1; h /= 2) {
    Var fk = MakeVar("fk"), fl = MakeVar("fl");
    PrimExpr at = PrimExpr(fk);  // slot k * cols + col, fk running over both
    body.push_back(MakeFor(fk, I64(h * cols), ForKind::kUnrolled,
                           MakeFor(fl, I64(lanes), ForKind::kVectorized,
                                   Store(acc, Load(acc, {at, PrimExpr(fl)}) + Load(acc, {at + I64(h * cols), PrimExpr(fl)}),
                                         {at, PrimExpr(fl)}))));
  }
  // Output channel o0 + wl at column wc through the epilogue.
  Var wc = MakeVar("wc"), wl = MakeVar("wl");
  VarMap wmap = At(o0, y, x0, wl, PrimExpr(wc));
  PrimExpr a = Load(acc, {PrimExpr(wc), PrimExpr(wl)});
  std::vector<Stmt> back;
  std::vector<PrimExpr> out_idx;
  for (const PrimExpr& e : out_idx_) out_idx.push_back(Substitute(e, wmap));
  if (store_out_ || epilogue_.empty()) back.push_back(Store(out_, a, out_idx));
  ReplaceLoads replace(cv_.out->data.get(), a);
  for (const Stmt& st : epilogue_) back.push_back(Substitute(replace.MutateStmt(st), wmap));
  body.push_back(MakeFor(wc, I64(cols), ForKind::kUnrolled, MakeFor(wl, I64(lanes), ForKind::kVectorized, Seq(back))));
  return std::make_shared<AllocateNode>(acc, Seq(body));
}

PrimExpr SymConvKernel::XAt(const VarMap& map) const {
  if (const auto* l = x_expr_.as<BufferLoadNode>()) {
    std::vector<PrimExpr> idx;
    for (const PrimExpr& e : l->indices) idx.push_back(arith::Simplify(Substitute(e, map)));
    return Load(l->buffer, idx);
  }
  // The prologue's value (ReadsPrologue): its loads at the point.
  struct AtPoint : StmtExprMutator {
    const VarMap* map;
    PrimExpr MutateExpr(const PrimExpr& e) override {
      if (const auto* ld = e.as<BufferLoadNode>()) {
        std::vector<PrimExpr> idx;
        for (const PrimExpr& i : ld->indices) idx.push_back(arith::Simplify(Substitute(i, *map)));
        return Load(ld->buffer, idx);
      }
      return StmtExprMutator::MutateExpr(e);
    }
  } at_point;
  at_point.map = &map;
  return at_point.MutateExpr(x_expr_);
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
