#include "compiler/tir/gpu_reduce_schedule.h"

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_set>
#include <utility>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

constexpr int64_t kWarp = 32;

PrimExpr AsI64(const PrimExpr& e) {
  if (e.dtype() == DType::Int64()) return e;
  if (const int64_t* c = nest::ConstInt(e)) return nest::I64(*c);
  return Cast(DType::Int64(), e);
}

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!StructuralEqual(a[i], b[i])) return false;
  return true;
}

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

// The product of the loops' extents from `first` on (the stride of loop
// first - 1 in their fused index), folded where constant.
PrimExpr ExtentProduct(const std::vector<const ForNode*>& loops, size_t first) {
  PrimExpr size = nest::I64(1);
  for (size_t k = loops.size(); k-- > first;) {
    const int64_t* e = nest::ConstInt(loops[k]->extent);
    const int64_t* s = nest::ConstInt(size);
    if (e && s) {
      size = nest::I64(*e * *s);
    } else if (s && *s == 1) {
      size = AsI64(loops[k]->extent);
    } else {
      size = MakeBinary(TirKind::kMul, size, AsI64(loops[k]->extent));
    }
  }
  return size;
}

// Lets that recompute each loop's variable from a fused index `fused`
// (innermost fastest) around `body`.
Stmt LetFused(const std::vector<const ForNode*>& loops, const PrimExpr& fused, Stmt body) {
  std::vector<PrimExpr> strides(loops.size());
  for (size_t k = 0; k < loops.size(); ++k) strides[k] = ExtentProduct(loops, k + 1);
  for (size_t k = loops.size(); k-- > 0;) {
    const ForNode* f = loops[k];
    const int64_t* st = nest::ConstInt(strides[k]);
    PrimExpr q = st && *st == 1 ? fused : MakeBinary(TirKind::kFloorDiv, fused, strides[k]);
    PrimExpr idx = k == 0 ? q : MakeBinary(TirKind::kFloorMod, q, AsI64(f->extent));
    if (!nest::IsZero(f->min)) idx = AsI64(f->min) + idx;
    if (f->loop_var->dtype != DType::Int64()) idx = Cast(f->loop_var->dtype, idx);
    body = std::make_shared<LetStmtNode>(f->loop_var, idx, body);
  }
  return body;
}

Stmt ThreadLoop(const Var& tx, int64_t threads, Stmt body) {
  return std::make_shared<ForNode>(tx, nest::I64(0), nest::I64(threads), ForKind::kThreadBinding, std::move(body),
                                   "threadIdx.x");
}

Stmt Barrier() {
  return std::make_shared<EvaluateNode>(
      PrimExpr(std::make_shared<CallNode>(DType::Int32(), "tvm_storage_sync", std::vector<PrimExpr>{})));
}

}  // namespace

Stmt ScheduleBlockReduction(const std::vector<const ForNode*>& rows, const Stmt& rest) {
  // The reduction nest.
  Stmt inner;
  std::vector<const ForNode*> ks = nest::PeelNest(rest, &inner);
  if (ks.empty()) return nullptr;
  for (const ForNode* k : ks)
    if (k->for_kind != ForKind::kSerial) return nullptr;
  const auto* seq = As<SeqStmtNode>(inner);
  if (seq == nullptr || seq->seq.size() != 2) return nullptr;
  const auto* guard = As<IfThenElseNode>(seq->seq[0]);
  if (guard == nullptr || guard->else_case != nullptr || !nest::IsInitGuard(guard->cond, ks, 0)) return nullptr;
  const auto* init = As<BufferStoreNode>(guard->then_case);
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  if (init == nullptr || update == nullptr || init->buffer.get() != update->buffer.get() ||
      !SameIndices(init->indices, update->indices)) {
    return nullptr;
  }
  const Buffer& out = update->buffer;
  DType t = out->dtype;
  if (t != DType::Float32() && t != DType::Int32()) return nullptr;
  std::unordered_set<const VarNode*> k_vars;
  for (const ForNode* k : ks) k_vars.insert(k->loop_var.get());
  for (const auto& i : update->indices)
    if (nest::Uses(i, k_vars)) return nullptr;
  TirKind op = update->value->kind();
  if (op != TirKind::kAdd && op != TirKind::kMax && op != TirKind::kMin) return nullptr;
  const auto* bin = static_cast<const BinaryNode*>(update->value.get());
  // out[I] <op> e, or e <op> out[I].
  PrimExpr e;
  for (int side = 0; side < 2 && !e.get(); ++side) {
    const PrimExpr& acc = side == 0 ? bin->a : bin->b;
    const auto* l = acc.as<BufferLoadNode>();
    if (l != nullptr && l->buffer.get() == out.get() && SameIndices(l->indices, update->indices)) {
      e = side == 0 ? bin->b : bin->a;
    }
  }
  if (!e.get() || e.dtype() != t || !IsIdentity(op, init->value, t)) return nullptr;
  nest::BufferRefs refs;
  refs.VisitExpr(e);
  if (refs.loads.count(out->data.get())) return nullptr;
  LoadsUsing by_k(k_vars);
  by_k.VisitExpr(e);
  if (by_k.buffers.size() > 1) return nullptr;  // a contraction (matmul): not a row reduction
  // K, and the block size.
  PrimExpr k_size = ExtentProduct(ks, 0);
  const int64_t* k_static = nest::ConstInt(k_size);
  if (k_static != nullptr && *k_static < kWarp) return nullptr;
  int64_t threads = k_static != nullptr && *k_static <= 512 ? kWarp : 256;

  Var bx = MakeVar("blockIdx_x", DType::Int64());
  Var j = MakeVar("j", DType::Int64());
  Var f = MakeVar("k_fused", DType::Int64());
  auto red_node = std::make_shared<BufferNode>();
  red_node->name = "red";
  red_node->data = MakeVar("red_data", HandleType());
  red_node->dtype = t;
  red_node->shape = {nest::I64(threads)};
  red_node->scope = "shared";
  Buffer red = red_node;
  auto load = [&](PrimExpr i) { return PrimExpr(std::make_shared<BufferLoadNode>(red, std::vector<PrimExpr>{i})); };
  auto store = [&](PrimExpr i, PrimExpr v) {
    return Stmt(std::make_shared<BufferStoreNode>(red, std::move(v), std::vector<PrimExpr>{i}));
  };
  auto combine = [&](PrimExpr a, PrimExpr b) { return MakeBinary(op, std::move(a), std::move(b)); };
  // Each phase a thread loop of its own variable; `body(tx)` is its body
  // guarded by `tx < limit` when limit < B.
  auto phase = [&](int64_t limit, const std::function<Stmt(const PrimExpr&)>& body) {
    Var tx = MakeVar("threadIdx_x", DType::Int64());
    Stmt b = body(PrimExpr(tx));
    if (limit < threads) b = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(tx), nest::I64(limit)), b, nullptr);
    return ThreadLoop(tx, threads, b);
  };

  std::vector<Stmt> phases;
  // 1: each thread folds elements tx, tx + B, tx + 2B, ... of its row.
  phases.push_back(phase(threads, [&](const PrimExpr& tx) {
    Stmt fold = store(tx, combine(load(tx), e));
    fold = LetFused(ks, PrimExpr(f), fold);
    if (!(k_static != nullptr && *k_static % threads == 0)) {
      fold = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(f), AsI64(k_size)), fold, nullptr);
    }
    fold = std::make_shared<LetStmtNode>(f, tx + PrimExpr(j) * nest::I64(threads), fold);
    PrimExpr steps = k_static != nullptr ? nest::I64((*k_static + threads - 1) / threads)
                                         : MakeBinary(TirKind::kFloorDiv, AsI64(k_size) + nest::I64(threads - 1),
                                                      nest::I64(threads));
    Stmt loop = std::make_shared<ForNode>(j, nest::I64(0), steps, ForKind::kSerial, fold);
    return Seq({store(tx, init->value), loop});
  }));
  phases.push_back(Barrier());
  // 2: halving through shared memory down to one warp's values.
  for (int64_t s = threads / 2; s >= kWarp; s /= 2) {
    phases.push_back(phase(s, [&](const PrimExpr& tx) { return store(tx, combine(load(tx), load(tx + nest::I64(s)))); }));
    phases.push_back(Barrier());
  }
  // 3: the first warp, by shuffles (the whole warp runs each one: a full
  // mask).
  for (int64_t d = kWarp / 2; d >= 1; d /= 2) {
    phases.push_back(phase(kWarp, [&](const PrimExpr& tx) {
      PrimExpr shuffled(
          std::make_shared<CallNode>(t, kWarpShuffleDown, std::vector<PrimExpr>{load(tx), IntImm(DType::Int32(), d)}));
      return store(tx, combine(load(tx), shuffled));
    }));
  }
  // 4: thread 0 writes the row's value.
  phases.push_back(phase(1, [&](const PrimExpr&) {
    return Stmt(std::make_shared<BufferStoreNode>(out, load(nest::I64(0)), update->indices));
  }));

  Stmt block = std::make_shared<AllocateNode>(red, Seq(std::move(phases)));
  PrimExpr n_rows = ExtentProduct(rows, 0);
  if (!rows.empty()) block = LetFused(rows, PrimExpr(bx), block);
  return std::make_shared<ForNode>(bx, nest::I64(0), n_rows, ForKind::kThreadBinding, block, "blockIdx.x");
}

}  // namespace tir
}  // namespace kiln
