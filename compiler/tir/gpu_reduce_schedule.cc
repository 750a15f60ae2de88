#include "compiler/tir/gpu_reduce_schedule.h"

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_set>
#include <utility>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/gpu_schedule_util.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using gpu::AsI64;
using gpu::Barrier;
using gpu::ExtentProduct;
using gpu::LetFused;
using gpu::ThreadLoop;

constexpr int64_t kWarp = 32;

// Whether `init` is the identity of `op` on `t` (so that every thread may
// start its part from it).
bool IsIdentity(TirKind op, const PrimExpr& init, DType t) {
  if (t == DType::Float32()) {
    const auto* f = init.as<FloatImmNode>();
    if (f == nullptr) return op == TirKind::kAdd && nest::ConstInt(init) && *nest::ConstInt(init) == 0;
    if (op == TirKind::kAdd) return f->value == 0;
    if (op == TirKind::kMax) return std::isinf(f->value) && f->value < 0;
    return std::isinf(f->value) && f->value > 0;
  }
  const int64_t* c = nest::ConstInt(init);
  if (c == nullptr) return false;
  if (op == TirKind::kAdd) return *c == 0;
  if (op == TirKind::kMax) return *c == std::numeric_limits<int32_t>::min();
  return *c == std::numeric_limits<int32_t>::max();
}

// Buffers (data handles) loaded in an expression with an index that reads
// one of `vars`.
class LoadsUsing : public StmtExprVisitor {
 public:
  explicit LoadsUsing(const std::unordered_set<const VarNode*>& vars) : vars_(vars) {}
  std::unordered_set<const VarNode*> buffers;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      for (const auto& i : l->indices)
        if (nest::Uses(i, vars_)) buffers.insert(l->buffer->data.get());
    }
    StmtExprVisitor::VisitExpr(e);
  }

 private:
  const std::unordered_set<const VarNode*>& vars_;
};

// A matched row reduction: `out[I] = init; out[I] = out[I] <op> e` over
// the loops `ks` (the header's form).
struct RowReduction {
  std::vector<const ForNode*> ks;
  const BufferStoreNode* init = nullptr;
  const BufferStoreNode* update = nullptr;
  PrimExpr e;
  TirKind op = TirKind::kAdd;
  PrimExpr k_size;
};

bool MatchRowReduction(const Stmt& rest, RowReduction* r) {
  Stmt inner;
  std::vector<const ForNode*> ks = nest::PeelNest(rest, &inner);
  if (ks.empty()) return false;
  for (const ForNode* k : ks)
    if (k->for_kind != ForKind::kSerial) return false;
  gpu::InitAndUpdate iu = gpu::MatchInitAndUpdate(inner, ks);
  if (iu.update == nullptr) return false;
  const Buffer& out = iu.update->buffer;
  DType t = out->dtype;
  std::unordered_set<const VarNode*> k_vars;
  for (const ForNode* k : ks) k_vars.insert(k->loop_var.get());
  for (const auto& i : iu.update->indices)
    if (nest::Uses(i, k_vars)) return false;
  TirKind op = iu.update->value->kind();
  if (op != TirKind::kAdd && op != TirKind::kMax && op != TirKind::kMin) return false;
  const auto* bin = static_cast<const BinaryNode*>(iu.update->value.get());
  // out[I] <op> e, or e <op> out[I].
  PrimExpr e;
  for (int side = 0; side < 2 && !e.get(); ++side) {
    const PrimExpr& acc = side == 0 ? bin->a : bin->b;
    const auto* l = acc.as<BufferLoadNode>();
    if (l != nullptr && l->buffer.get() == out.get() && gpu::SameIndices(l->indices, iu.update->indices)) {
      e = side == 0 ? bin->b : bin->a;
    }
  }
  if (!e.get() || e.dtype() != t || !IsIdentity(op, iu.init->value, t)) return false;
  nest::BufferRefs refs;
  refs.VisitExpr(e);
  if (refs.loads.count(out->data.get())) return false;
  LoadsUsing by_k(k_vars);
  by_k.VisitExpr(e);
  if (by_k.buffers.size() > 1) return false;  // a contraction (matmul): not a row reduction
  *r = RowReduction{ks, iu.init, iu.update, e, op, ExtentProduct(ks, 0)};
  return true;
}

// 32 threads when K is a constant up to 512, else 256.
int64_t BlockThreads(const PrimExpr& k_size) {
  const int64_t* k_static = nest::ConstInt(k_size);
  return k_static != nullptr && *k_static <= 512 ? kWarp : 256;
}

// A phase: a thread loop of its own variable over `threads`; `body(tx)`
// guarded by `tx < limit` when limit < threads.
Stmt Phase(int64_t threads, int64_t limit, const std::function<Stmt(const PrimExpr&)>& body) {
  Var tx = MakeVar("threadIdx_x", DType::Int64());
  Stmt b = body(PrimExpr(tx));
  if (limit < threads) b = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(tx), nest::I64(limit)), b, nullptr);
  return ThreadLoop(tx, threads, b);
}

// `body` for the elements tx, tx + B, tx + 2B, ... below the product of
// `loops`' extents, with the loops' variables bound from that index.
Stmt Strided(const std::vector<const ForNode*>& loops, int64_t threads, const PrimExpr& tx, Stmt body) {
  PrimExpr size = ExtentProduct(loops, 0);
  const int64_t* size_static = nest::ConstInt(size);
  Var j = MakeVar("j", DType::Int64());
  Var f = MakeVar("k_fused", DType::Int64());
  body = LetFused(loops, PrimExpr(f), std::move(body));
  if (!(size_static != nullptr && *size_static % threads == 0)) {
    body = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(f), AsI64(size)), body, nullptr);
  }
  body = std::make_shared<LetStmtNode>(f, tx + PrimExpr(j) * nest::I64(threads), body);
  return std::make_shared<ForNode>(j, nest::I64(0), gpu::CeilDiv(size, threads), ForKind::kSerial, body);
}

// The phases of one block reduction of `r` into the shared `red` (B
// elements), ending with thread 0's store of the row's value.
std::vector<Stmt> ReductionPhases(const RowReduction& r, int64_t threads, const Buffer& red) {
  DType t = r.update->buffer->dtype;
  auto load = [&](PrimExpr i) { return PrimExpr(std::make_shared<BufferLoadNode>(red, std::vector<PrimExpr>{i})); };
  auto store = [&](PrimExpr i, PrimExpr v) {
    return Stmt(std::make_shared<BufferStoreNode>(red, std::move(v), std::vector<PrimExpr>{i}));
  };
  auto combine = [&](PrimExpr a, PrimExpr b) { return MakeBinary(r.op, std::move(a), std::move(b)); };
  std::vector<Stmt> phases;
  // 1: each thread folds elements tx, tx + B, tx + 2B, ... of its row.
  phases.push_back(Phase(threads, threads, [&](const PrimExpr& tx) {
    return Seq({store(tx, r.init->value), Strided(r.ks, threads, tx, store(tx, combine(load(tx), r.e)))});
  }));
  phases.push_back(Barrier());
  // 2: halving through shared memory down to one warp's values.
  for (int64_t s = threads / 2; s >= kWarp; s /= 2) {
    phases.push_back(Phase(threads, s, [&](const PrimExpr& tx) {
      return store(tx, combine(load(tx), load(tx + nest::I64(s))));
    }));
    phases.push_back(Barrier());
  }
  // 3: the first warp, by shuffles (the whole warp runs each one: a full
  // mask).
  for (int64_t d = kWarp / 2; d >= 1; d /= 2) {
    phases.push_back(Phase(threads, kWarp, [&](const PrimExpr& tx) {
      PrimExpr shuffled(
          std::make_shared<CallNode>(t, kWarpShuffleDown, std::vector<PrimExpr>{load(tx), IntImm(DType::Int32(), d)}));
      return store(tx, combine(load(tx), shuffled));
    }));
  }
  // 4: thread 0 writes the row's value.
  phases.push_back(Phase(threads, 1, [&](const PrimExpr&) {
    return Stmt(std::make_shared<BufferStoreNode>(r.update->buffer, load(nest::I64(0)), r.update->indices));
  }));
  return phases;
}

// Loads of `out` at `indices` read `red[0]` instead (the row's value,
// broadcast to the block through shared memory).
class FromShared : public StmtExprMutator {
 public:
  FromShared(Buffer out, std::vector<PrimExpr> indices, Buffer red)
      : out_(std::move(out)), indices_(std::move(indices)), red_(std::move(red)) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      if (l->buffer.get() == out_.get() && gpu::SameIndices(l->indices, indices_)) {
        return PrimExpr(std::make_shared<BufferLoadNode>(red_, std::vector<PrimExpr>{nest::I64(0)}));
      }
    }
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  Buffer out_;
  std::vector<PrimExpr> indices_;
  Buffer red_;
};

// Whether every access to a buffer of `stored` in `s` indexes its first
// dimensions with the row variables `rows` (so that blocks, one per row,
// share nothing through them).
class RowLocal : public StmtExprVisitor {
 public:
  RowLocal(const std::unordered_set<const VarNode*>& stored, const std::vector<const ForNode*>& rows)
      : stored_(stored), rows_(rows) {}
  bool ok = true;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) Check(l->buffer, l->indices);
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) Check(st->buffer, st->indices);
    StmtExprVisitor::VisitStmt(s);
  }

 private:
  void Check(const Buffer& b, const std::vector<PrimExpr>& indices) {
    if (!stored_.count(b->data.get())) return;
    if (indices.size() < rows_.size()) {
      ok = false;
      return;
    }
    for (size_t d = 0; d < rows_.size(); ++d)
      if (!nest::IsVar(indices[d], rows_[d]->loop_var.get())) ok = false;
  }
  const std::unordered_set<const VarNode*>& stored_;
  const std::vector<const ForNode*>& rows_;
};

}  // namespace

Stmt ScheduleBlockReduction(const std::vector<const ForNode*>& rows, const Stmt& rest) {
  RowReduction r;
  if (!MatchRowReduction(rest, &r)) return nullptr;
  const int64_t* k_static = nest::ConstInt(r.k_size);
  if (k_static != nullptr && *k_static < kWarp) return nullptr;
  int64_t threads = BlockThreads(r.k_size);
  Buffer red = gpu::NewBuffer("red", r.update->buffer->dtype, {nest::I64(threads)}, "shared");
  Var bx = MakeVar("blockIdx_x", DType::Int64());
  Stmt block = std::make_shared<AllocateNode>(red, Seq(ReductionPhases(r, threads, red)));
  PrimExpr n_rows = ExtentProduct(rows, 0);
  if (!rows.empty()) block = LetFused(rows, PrimExpr(bx), block);
  return std::make_shared<ForNode>(bx, nest::I64(0), n_rows, ForKind::kThreadBinding, block, "blockIdx.x");
}

Stmt ScheduleFusedRows(const std::vector<Stmt>& items, size_t first, size_t* consumed) {
  *consumed = 0;
  // The first item: a row reduction over its first r loops.
  Stmt head_inner;
  std::vector<const ForNode*> head = nest::PeelNest(items[first], &head_inner);
  std::vector<const ForNode*> rows;
  RowReduction r0;
  for (size_t r = 1; r < head.size() && rows.empty(); ++r) {
    bool plain = true;
    for (size_t d = 0; d < r; ++d) plain = plain && head[d]->for_kind == ForKind::kSerial && nest::IsZero(head[d]->min);
    if (!plain || !MatchRowReduction(head[r - 1]->body, &r0)) continue;
    bool prefix = r0.update->indices.size() >= r;
    for (size_t d = 0; d < r && prefix; ++d) prefix = nest::IsVar(r0.update->indices[d], head[d]->loop_var.get());
    if (prefix) rows.assign(head.begin(), head.begin() + r);
  }
  if (rows.empty()) return nullptr;
  int64_t threads = BlockThreads(r0.k_size);
  // Each item's statement inside its row loops, with the row variables of
  // the first item; and what it is.
  struct Part {
    Stmt rest;
    bool reduction = false;
    const VarNode* stored = nullptr;  // the buffer it writes
  };
  std::vector<Part> parts;
  std::unordered_set<const VarNode*> stored;
  int reductions = 0;
  for (size_t i = first; i < items.size() && reductions <= 8; ++i) {
    Stmt inner;
    std::vector<const ForNode*> loops = nest::PeelNest(items[i], &inner);
    if (loops.size() < rows.size()) break;
    VarMap to_rows;
    bool same = true;
    for (size_t d = 0; d < rows.size() && same; ++d) {
      same = loops[d]->for_kind == ForKind::kSerial && nest::IsZero(loops[d]->min) &&
             StructuralEqual(loops[d]->extent, rows[d]->extent) &&
             loops[d]->loop_var->dtype == rows[d]->loop_var->dtype;
      to_rows[loops[d]->loop_var.get()] = PrimExpr(rows[d]->loop_var);
    }
    if (!same) break;
    Stmt rest = Substitute(loops[rows.size() - 1]->body, to_rows);
    Part p{rest, false, nullptr};
    RowReduction r;
    if (MatchRowReduction(rest, &r)) {
      p.reduction = true;
      p.stored = r.update->buffer->data.get();
    } else {
      // An elementwise pass over the row: one store to
      // [row variables..., its own loop variables...].
      Stmt body;
      std::vector<const ForNode*> cols = nest::PeelNest(rest, &body);
      const auto* st = As<BufferStoreNode>(body);
      if (st == nullptr || st->indices.size() != rows.size() + cols.size()) break;
      bool ok = true;
      for (const ForNode* c : cols) ok = ok && c->for_kind == ForKind::kSerial && nest::IsZero(c->min);
      for (size_t d = 0; d < cols.size() && ok; ++d)
        ok = nest::IsVar(st->indices[rows.size() + d], cols[d]->loop_var.get());
      if (!ok) break;
      p.stored = st->buffer->data.get();
    }
    if (!stored.insert(p.stored).second) break;  // written twice: not one pass per row
    parts.push_back(p);
    reductions += p.reduction ? 1 : 0;
  }
  if (parts.size() < 2) return nullptr;
  // Blocks are rows: the group's buffers must be read and written only at
  // the block's own row (checked over the whole group; drop items from the
  // end until it holds).
  while (parts.size() >= 2) {
    RowLocal check(stored, rows);
    for (const Part& p : parts) check.VisitStmt(p.rest);
    if (check.ok) break;
    parts.pop_back();
    stored.clear();
    for (const Part& p : parts) stored.insert(p.stored);
  }
  if (parts.size() < 2) return nullptr;

  std::vector<Stmt> phases;
  std::vector<Buffer> reds;
  std::vector<std::unique_ptr<FromShared>> broadcasts;
  for (size_t i = 0; i < parts.size(); ++i) {
    Stmt rest = parts[i].rest;
    for (const auto& b : broadcasts) rest = b->MutateStmt(rest);
    if (i > 0) phases.push_back(Barrier());
    if (parts[i].reduction) {
      RowReduction r;
      if (!MatchRowReduction(rest, &r)) return nullptr;  // a broadcast value made it no reduction
      Buffer red = gpu::NewBuffer("red", r.update->buffer->dtype, {nest::I64(threads)}, "shared");
      std::vector<Stmt> ph = ReductionPhases(r, threads, red);
      phases.insert(phases.end(), ph.begin(), ph.end());
      reds.push_back(red);
      // r points into `rest`, a local: FromShared keeps its own copies.
      broadcasts.push_back(std::make_unique<FromShared>(r.update->buffer, r.update->indices, red));
    } else {
      Stmt body;
      std::vector<const ForNode*> cols = nest::PeelNest(rest, &body);
      if (cols.empty()) {
        phases.push_back(Phase(threads, 1, [&](const PrimExpr&) { return body; }));
      } else {
        phases.push_back(Phase(threads, threads, [&](const PrimExpr& tx) { return Strided(cols, threads, tx, body); }));
      }
    }
    *consumed = i + 1;
  }
  Stmt block = Seq(std::move(phases));
  for (size_t i = reds.size(); i-- > 0;) block = std::make_shared<AllocateNode>(reds[i], block);
  Var bx = MakeVar("blockIdx_x", DType::Int64());
  block = LetFused(rows, PrimExpr(bx), block);
  return std::make_shared<ForNode>(bx, nest::I64(0), ExtentProduct(rows, 0), ForKind::kThreadBinding, block,
                                   "blockIdx.x");
}

}  // namespace tir
}  // namespace kiln
