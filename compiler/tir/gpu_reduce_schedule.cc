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

}  // namespace

Stmt ScheduleBlockReduction(const std::vector<const ForNode*>& rows, const Stmt& rest) {
  // The reduction nest.
  Stmt inner;
  std::vector<const ForNode*> ks = nest::PeelNest(rest, &inner);
  if (ks.empty()) return nullptr;
  for (const ForNode* k : ks)
    if (k->for_kind != ForKind::kSerial) return nullptr;
  gpu::InitAndUpdate iu = gpu::MatchInitAndUpdate(inner, ks);
  const BufferStoreNode* init = iu.init;
  const BufferStoreNode* update = iu.update;
  if (update == nullptr) return nullptr;
  const Buffer& out = update->buffer;
  DType t = out->dtype;
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
    if (l != nullptr && l->buffer.get() == out.get() && gpu::SameIndices(l->indices, update->indices)) {
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
  Buffer red = gpu::NewBuffer("red", t, {nest::I64(threads)}, "shared");
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
    PrimExpr steps = gpu::CeilDiv(k_size, threads);
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
