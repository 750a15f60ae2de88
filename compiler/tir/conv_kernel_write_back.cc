#include "compiler/tir/conv_kernel.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/half_promote.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace conv {

using namespace nest;  // NOLINT: the shared nest helpers

Stmt ConvKernel::RowTileWriteBack(const Buffer& acc, const Var& o0, int rows) {
  Var ii = MakeVar("ii_out");
  auto vector_at = [&](int64_t from) {
    Var l = MakeVar("lane");
    std::vector<PrimExpr> point = {PrimExpr(nn_), PrimExpr(o0) + PrimExpr(ii), tile_y_,
                                   tile_x_ + I64(from) + PrimExpr(l)};
    return MakeFor(l, I64(16), ForKind::kVectorized,
                   EpilogueStore(Load(acc, {PrimExpr(ii), I64(from) + PrimExpr(l)}), point));
  };
  std::vector<Stmt> stores;
  for (int64_t v = 0; v < nr_; v += 16) stores.push_back(vector_at(v));
  return MakeFor(ii, I64(rows), ForKind::kUnrolled, Seq(stores));
}

Stmt ConvKernel::FlatWriteBack(const Buffer& acc, const Var& o0, int rows) {
  return FlatWriteBack(acc, o0, rows, nr_, PrimExpr(col0_), false);
}

Stmt ConvKernel::FlatWriteBack(const Buffer& acc, const Var& o0, int rows, int cols, const PrimExpr& first, bool transposed) {
  Var ii = MakeVar("ii_out"), jj = MakeVar("jj_out");
  PrimExpr pos = first + PrimExpr(jj), o = PrimExpr(o0) + PrimExpr(ii);
  PrimExpr v = transposed ? Load(acc, {PrimExpr(jj), PrimExpr(ii)}) : Load(acc, {PrimExpr(ii), PrimExpr(jj)});
  Buffer dst = FlatView(cv_.out);
  for (const Stage& e : stages_) {
    const VarNode* yv = e.loops[2]->loop_var.get();
    const VarNode* xv = e.loops[3]->loop_var.get();
    // Loads of 4-d [.., H, W] buffers at [.., y, x] -> their flat views.
    struct Flatten : StmtExprMutator {
      const VarNode *y, *x;
      int64_t h, w;
      PrimExpr pos;
      bool ok = true;
      PrimExpr MutateExpr(const PrimExpr& e) override {
        const auto* l = e.as<BufferLoadNode>();
        if (l == nullptr) return StmtExprMutator::MutateExpr(e);
        const auto& idx = l->indices;
        bool uses = false;
        for (const PrimExpr& i : idx) uses |= Uses(i, {y, x});
        if (!uses) return e;
        size_t nd = idx.size();
        if (nd < 2 || !IsVar(idx[nd - 2], y) || !IsVar(idx[nd - 1], x) || !FloatPlain(l->buffer, nd) ||
            Dim(l->buffer, nd - 2) != h || Dim(l->buffer, nd - 1) != w) {
          ok = false;
          return e;
        }
        std::vector<PrimExpr> flat(idx.begin(), idx.end() - 2);
        for (const PrimExpr& i : flat) ok = ok && !Uses(i, {y, x});
        flat.push_back(pos);
        return Load(FlatView(l->buffer), flat);
      }
    } flatten;
    flatten.y = yv;
    flatten.x = xv;
    flatten.h = cv_.ho;
    flatten.w = cv_.wo;
    flatten.pos = pos;
    PrimExpr value = flatten.MutateExpr(ReplaceLoads(e.src->data.get(), v).MutateExpr(e.value));
    if (!flatten.ok || e.dst_idx.size() != 4 || !IsVar(e.dst_idx[2], yv) || !IsVar(e.dst_idx[3], xv)) return nullptr;
    VarMap map{{e.loops[0]->loop_var.get(), PrimExpr(nn_)}, {e.loops[1]->loop_var.get(), o}};
    v = Substitute(value, map);
    dst = FlatView(e.dst);
  }
  Stmt store = Store(dst, HalfStoreValue(dst, v), {PrimExpr(nn_), o, pos});
  if (transposed) {
    return MakeFor(jj, I64(cols), ForKind::kUnrolled, MakeFor(ii, I64(rows), ForKind::kVectorized, store));
  }
  return MakeFor(ii, I64(rows), ForKind::kUnrolled, MakeFor(jj, I64(cols), ForKind::kVectorized, store));
}

Stmt ConvKernel::EpilogueStore(PrimExpr v, const std::vector<PrimExpr>& point) const {
  Buffer dst = cv_.out;
  std::vector<PrimExpr> idx = point;
  for (const Stage& e : stages_) {
    VarMap map;
    for (size_t d = 0; d < 4; ++d) map[e.loops[d]->loop_var.get()] = point[d];
    v = Substitute(ReplaceLoads(e.src->data.get(), v).MutateExpr(e.value), map);
    dst = e.dst;
    idx.clear();
    for (const PrimExpr& d : e.dst_idx) idx.push_back(Substitute(d, map));
  }
  return Store(dst, HalfStoreValue(dst, v), idx);
}

Stmt ConvKernel::RowWriteBack(const Buffer& acc, const Var& o0, int rows) {
  int64_t ncol = CeilDiv(wq_, nr_);
  int64_t last_w = cv_.wo - (ncol - 1) * nr_;
  if (last_w <= 0 || last_w > nr_) return nullptr;
  Var ii = MakeVar("ii_out");
  PrimExpr y = tile_y_ + PrimExpr(ii);
  auto row_store = [&](int64_t width) {
    Var xx = MakeVar("xx");
    std::vector<PrimExpr> point = {PrimExpr(nn_), PrimExpr(o0), y, tile_x_ + PrimExpr(xx)};
    return MakeFor(xx, I64(width), ForKind::kVectorized,
                   EpilogueStore(Load(acc, {PrimExpr(ii), PrimExpr(xx)}), point));
  };
  Stmt row = row_store(last_w);
  if (last_w < nr_ && ncol > 1) {
    row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLE, tile_x_ + I64(nr_), I64(cv_.wo)),
                                           row_store(nr_), row);
  } else if (last_w < nr_) {
    // One column tile per row, wider than the row: when the rows its last
    // NR - Wo lanes land on (the next one or, for rows narrower than
    // that, the next few) are the band's too, the row is stored whole;
    // those rows' own stores come later in the same task and overwrite
    // the spilled lanes. The band's last rows are stored Wo wide. With
    // every row stored Wo wide, LLVM dropped the dead lanes and split the
    // accumulators into 8 + 4 + 2 lanes (14 columns), loads and FMAs
    // included.
    int64_t spill_rows = CeilDiv(nr_ - cv_.wo, cv_.wo);
    row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, y + I64(spill_rows), yend_), row_store(nr_),
                                           row);
  }
  row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, y, yend_), row, nullptr);
  return MakeFor(ii, I64(rows), ForKind::kUnrolled, row);
}

Stmt ConvKernel::RowSpanWriteBack(const Buffer& acc, const Var& o0, int rows) {
  if (nr_ != wq_ || cv_.wo > nr_ || own0_ || srows_ > 0) return nullptr;
  Var ii = MakeVar("ii_out"), xx = MakeVar("xx");
  PrimExpr y = Div(PrimExpr(col0_), I64(wq_));
  std::vector<PrimExpr> point = {PrimExpr(nn_), PrimExpr(o0) + PrimExpr(ii), y, PrimExpr(xx)};
  Stmt row = MakeFor(xx, I64(cv_.wo), ForKind::kVectorized,
                     EpilogueStore(Load(acc, {PrimExpr(ii), PrimExpr(xx)}), point));
  // Rows past the band's (or the plane's) end are not stored.
  return std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, y, yend_),
                                          MakeFor(ii, I64(rows), ForKind::kUnrolled, row), nullptr);
}

Stmt ConvKernel::ColumnWriteBack(const Buffer& acc, const Var& o0, int rows) {
  // A last tile moved back to end at Ho (own0_, ColumnPlaneTail) stores
  // its whole width too: the rows an earlier tile owns get the same values.
  if (cv_.wo != 1 || wq_ != 1 || srows_ > 0 || nr_ % 16 != 0) return nullptr;
  Var ii = MakeVar("ii_out");
  std::vector<Stmt> stores;
  for (int64_t v = 0; v < nr_; v += 16) {
    Var l = MakeVar("lane");
    std::vector<PrimExpr> point = {PrimExpr(nn_), PrimExpr(o0) + PrimExpr(ii), PrimExpr(col0_) + I64(v) + PrimExpr(l),
                                   I64(0)};
    stores.push_back(MakeFor(l, I64(16), ForKind::kVectorized,
                             EpilogueStore(Load(acc, {PrimExpr(ii), I64(v) + PrimExpr(l)}), point)));
  }
  return MakeFor(ii, I64(rows), ForKind::kUnrolled, Seq(stores));
}

Stmt ConvKernel::WriteBack(const Buffer& tmp, const Var& o0, int rows, bool spatial) {
  Var ii = MakeVar("ii_out"), yy = MakeVar("yy"), xx = MakeVar("xx");
  Var y0 = MakeVar("y0"), y1 = MakeVar("y1"), y = MakeVar("y"), lo = MakeVar("x0"), hi = MakeVar("x1");
  PrimExpr col0 = spatial ? PrimExpr(col0_) + PrimExpr(ii) * I64(wq_) : PrimExpr(col0_);
  PrimExpr x = PrimExpr(lo) + PrimExpr(xx);
  PrimExpr o = spatial ? PrimExpr(o0) : PrimExpr(o0) + PrimExpr(ii);
  std::vector<PrimExpr> point = {PrimExpr(nn_), o, PrimExpr(y), x};
  Stmt store = EpilogueStore(Load(tmp, {PrimExpr(ii), PrimExpr(y) * I64(wq_) + x - col0}), point);
  // A segment of len >= 16 is stored as whole 16-float vectors, the last
  // one overlapping the previous (the same values are stored twice; the
  // epilogue never reads what it stores). A loop of runtime length would
  // be vectorized 64 wide and run these short segments scalar. Shorter
  // segments (outputs narrower than a vector) are stored one by one.
  auto at = [&](PrimExpr x_at) { return Substitute(store, VarMap{{xx.get(), x_at}}); };
  Var len = MakeVar("len"), piece = MakeVar("piece"), lane = MakeVar("lane"), one = MakeVar("xx");
  PrimExpr start = Min(PrimExpr(piece) * I64(16), PrimExpr(len) - I64(16));
  Stmt vec = MakeFor(lane, I64(16), ForKind::kVectorized, at(start + PrimExpr(lane)));
  vec = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(piece) * I64(16), PrimExpr(len)), vec,
                                         nullptr);
  vec = MakeFor(piece, I64((nr_ + 15) / 16), ForKind::kUnrolled, vec);
  Stmt scalar = MakeFor(one, PrimExpr(len), ForKind::kSerial, at(PrimExpr(one)));
  // Segments of 4 to 15 floats (outputs 7 or 14 wide, tile edges): two
  // overlapping vectors of 8 or 4.
  for (int64_t width : {4, 8}) {
    Var l0 = MakeVar("lane"), l1 = MakeVar("lane");
    Stmt pair = Seq({MakeFor(l0, I64(width), ForKind::kVectorized, at(PrimExpr(l0))),
                     MakeFor(l1, I64(width), ForKind::kVectorized, at(PrimExpr(len) - I64(width) + PrimExpr(l1)))});
    scalar = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kGE, PrimExpr(len), I64(width)), pair, scalar);
  }
  Stmt st = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kGE, PrimExpr(len), I64(16)), vec, scalar);
  // Empty when the row's part of the tile is all padding columns (x >= Wo).
  st = std::make_shared<LetStmtNode>(len, Max(PrimExpr(hi) - PrimExpr(lo), I64(0)), st);
  st = std::make_shared<LetStmtNode>(hi, Min(I64(cv_.wo), col0 + I64(nr_) - PrimExpr(y) * I64(wq_)), st);
  // Columns before own0 belong to an earlier tile (direct_'s last tile).
  PrimExpr first = own0_ ? PrimExpr(own0_) : col0;
  st = std::make_shared<LetStmtNode>(lo, Max(I64(0), first - PrimExpr(y) * I64(wq_)), st);
  st = std::make_shared<LetStmtNode>(y, PrimExpr(y0) + PrimExpr(yy), st);
  st = MakeFor(yy, Max(PrimExpr(y1) - PrimExpr(y0), I64(0)), ForKind::kSerial, st);
  st = std::make_shared<LetStmtNode>(y1, Min(yend_, Div(col0 + I64(nr_ - 1), I64(wq_)) + I64(1)), st);
  st = std::make_shared<LetStmtNode>(y0, Div(first, I64(wq_)), st);
  return MakeFor(ii, I64(rows), ForKind::kSerial, st);
}

}  // namespace conv
}  // namespace tir
}  // namespace kiln
