#include "compiler/tir/transpose_tiles.h"

#include <memory>
#include <vector>

#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// The side of the code generator's register transpose (transpose16).
constexpr int64_t kTile = 16;

Stmt For(const Var& v, int64_t extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, nest::I64(0), nest::I64(extent), kind, std::move(body));
}

// The static extent of `f` when it starts at 0 and holds at least one
// tile; 0 otherwise.
int64_t TiledExtent(const ForNode* f) {
  const int64_t* e = nest::ConstInt(f->extent);
  if (!nest::IsZero(f->min) || e == nullptr || *e < kTile) return 0;
  return *e;
}

// The dimension of `idx` that is exactly `x` where `y` is exactly the last
// one and no other index reads x or y; -1 otherwise.
int WholeIndexBeforeLast(const std::vector<PrimExpr>& idx, const VarNode* x, const VarNode* y) {
  if (idx.size() < 2 || !nest::IsVar(idx.back(), y)) return -1;
  int found = -1;
  for (size_t d = 0; d + 1 < idx.size(); ++d) {
    if (nest::IsVar(idx[d], x) && found < 0) {
      found = static_cast<int>(d);
    } else if (nest::Uses(idx[d], {x, y})) {
      return -1;
    }
  }
  return found;
}

// The distance in elements between consecutive values of dimension `d` of
// a compact float32 buffer, or null.
PrimExpr RowStride(const Buffer& b, int d) {
  if (b->dtype != DType::Float32() || !b->strides.empty()) return PrimExpr();
  PrimExpr s = nest::I64(1);
  int64_t known = 1;
  bool is_static = true;
  for (size_t k = d + 1; k < b->shape.size(); ++k) {
    const int64_t* e = nest::ConstInt(b->shape[k]);
    if (e != nullptr) {
      known *= *e;
    } else {
      is_static = false;
    }
    s = k == static_cast<size_t>(d) + 1 ? b->shape[k] : s * b->shape[k];
  }
  return is_static ? nest::I64(known) : s;
}

class Tiler : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    if (Stmt r = TryTile(s)) return r;
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  static Stmt TryTile(const Stmt& s) {
    const auto* fr = As<ForNode>(s);
    if (fr == nullptr || (fr->for_kind != ForKind::kSerial && fr->for_kind != ForKind::kParallel)) return nullptr;
    int64_t er = TiledExtent(fr);
    if (er == 0) return nullptr;
    // The chain of loops down to the vectorized one.
    std::vector<const ForNode*> chain;
    const ForNode* fq = As<ForNode>(fr->body);
    while (fq != nullptr && fq->for_kind != ForKind::kVectorized) {
      if (fq->for_kind != ForKind::kSerial && fq->for_kind != ForKind::kParallel) return nullptr;
      chain.push_back(fq);
      fq = As<ForNode>(fq->body);
    }
    if (fq == nullptr) return nullptr;
    int64_t eq = TiledExtent(fq);
    const auto* st = As<BufferStoreNode>(fq->body);
    if (eq == 0 || st == nullptr || st->buffer->dtype != DType::Float32()) return nullptr;
    const VarNode* r = fr->loop_var.get();
    const VarNode* q = fq->loop_var.get();
    int dst_dim = WholeIndexBeforeLast(st->indices, r, q);
    if (dst_dim < 0) return nullptr;
    nest::BufferRefs refs;
    refs.VisitExpr(st->value);
    if (refs.loads.count(st->buffer->data.get())) return nullptr;
    const BufferLoadNode* src = nullptr;
    int src_dim = -1;
    for (const BufferLoadNode* l : refs.load_nodes) {
      int d = WholeIndexBeforeLast(l->indices, q, r);
      if (d < 0) continue;
      if (src != nullptr) return nullptr;  // two transposed reads: one tile each, not matched
      src = l, src_dim = d;
    }
    if (src == nullptr || refs.loads.at(src->buffer->data.get()) != 1) return nullptr;
    PrimExpr src_stride = RowStride(src->buffer, src_dim), dst_stride = RowStride(st->buffer, dst_dim);
    if (!src_stride.defined() || !dst_stride.defined()) return nullptr;

    DType t = fr->loop_var->dtype;
    Var ro = MakeVar(fr->loop_var->name + "_o", t), qo = MakeVar(fq->loop_var->name + "_o", t);
    // The tile's corner: r = ro * 16, q = qo * 16.
    VarMap corner{{r, PrimExpr(ro) * IntImm(t, kTile)}, {q, PrimExpr(qo) * IntImm(t, kTile)}};
    std::vector<PrimExpr> from;
    for (const PrimExpr& i : src->indices) from.push_back(Substitute(i, corner));
    auto transpose = [&](PrimExpr dst, PrimExpr row) {
      std::vector<PrimExpr> args{Load(src->buffer, from), src_stride, std::move(dst)};
      for (int64_t k = 0; k < kTile; ++k) args.push_back(k == 0 ? nest::I64(0) : row * nest::I64(k));
      return Stmt(std::make_shared<EvaluateNode>(PrimExpr(std::make_shared<CallNode>(DType::Int32(), "transpose16", args))));
    };
    Stmt tile;
    if (st->value.get() == src) {
      // A plain transpose: rows of the tile straight into the output.
      std::vector<PrimExpr> at;
      for (const PrimExpr& i : st->indices) at.push_back(Substitute(i, corner));
      tile = transpose(Load(st->buffer, at), dst_stride);
    } else {
      // Arithmetic around it: the tile in registers' reach (a local block),
      // then the store over its rows of 16 lanes.
      Buffer block = nest::Float32Buffer(src->buffer->name + "_tile", {nest::I64(kTile * kTile)}, "local");
      Var ri = MakeVar(fr->loop_var->name + "_i", t), qi = MakeVar(fq->loop_var->name + "_i", t);
      PrimExpr value = nest::ReplaceLoads(src->buffer->data.get(),
                                          Load(block, {PrimExpr(ri) * IntImm(t, kTile) + PrimExpr(qi)}))
                           .MutateExpr(st->value);
      VarMap at{{r, PrimExpr(ro) * IntImm(t, kTile) + PrimExpr(ri)}, {q, PrimExpr(qo) * IntImm(t, kTile) + PrimExpr(qi)}};
      Stmt store = Substitute(Store(st->buffer, value, st->indices), at);
      Stmt rows = For(ri, kTile, ForKind::kUnrolled, For(qi, kTile, ForKind::kVectorized, store));
      tile = std::make_shared<AllocateNode>(block, Seq({transpose(Load(block, {nest::I64(0)}), nest::I64(kTile)), rows}));
    }
    Stmt body = For(qo, eq / kTile, ForKind::kSerial, tile);
    // The last Q % 16 columns of each block of rows: the store as it was,
    // over the block's 16 rows.
    if (eq % kTile != 0) {
      Var ri = MakeVar(fr->loop_var->name + "_t", t), qt = MakeVar(fq->loop_var->name + "_t", t);
      Stmt rest = Substitute(fq->body, {{r, PrimExpr(ro) * IntImm(t, kTile) + PrimExpr(ri)},
                                        {q, IntImm(t, eq - eq % kTile) + PrimExpr(qt)}});
      body = Seq({body, For(ri, kTile, ForKind::kSerial, For(qt, eq % kTile, ForKind::kVectorized, rest))});
    }
    body = Chain(chain, body, {});
    body = For(ro, er / kTile, fr->for_kind, body);
    if (er % kTile == 0) return body;
    // The last R % 16 rows: the nest as it was over them (its chain's
    // variables renamed: each loop binds its own).
    Var rt = MakeVar(fr->loop_var->name + "_t", t);
    VarMap rows{{r, IntImm(t, er - er % kTile) + PrimExpr(rt)}};
    for (const ForNode* f : chain) rows[f->loop_var.get()] = PrimExpr(MakeVar(f->loop_var->name + "_t", f->loop_var->dtype));
    Stmt rest = std::make_shared<ForNode>(fq->loop_var, fq->min, fq->extent, fq->for_kind, Substitute(fq->body, rows));
    return Seq({body, For(rt, er % kTile, ForKind::kSerial, Chain(chain, rest, rows))});
  }

  // `body` inside copies of the `chain` loops (outermost first), each loop's
  // variable replaced by its entry in `rename` where it has one.
  static Stmt Chain(const std::vector<const ForNode*>& chain, Stmt body, const VarMap& rename) {
    for (size_t c = chain.size(); c-- > 0;) {
      const ForNode* f = chain[c];
      auto it = rename.find(f->loop_var.get());
      Var v = f->loop_var;
      if (it != rename.end()) v = std::static_pointer_cast<const VarNode>(it->second.node());
      body = std::make_shared<ForNode>(v, f->min, f->extent, f->for_kind, std::move(body));
    }
    return body;
  }
};

}  // namespace

PrimFunc TileTransposes(const PrimFunc& func) {
  Stmt body = Tiler().MutateStmt(func->body);
  return body == func->body ? func : nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
