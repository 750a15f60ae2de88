#include "compiler/tir/gpu_matmul_schedule.h"

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
using gpu::OfType;
using gpu::AsI64;

constexpr int64_t kTile = 64;    // BM = BN
constexpr int64_t kTileK = 16;   // BK
constexpr int64_t kThreads = 256;
constexpr int64_t kSide = 16;    // threads along each side of the tile
constexpr int64_t kPer = 4;      // outputs per thread along each side

bool IsZeroOf(const PrimExpr& e) {
  if (nest::IsFloatZero(e)) return true;
  const int64_t* c = nest::ConstInt(e);
  return c != nullptr && *c == 0;
}

bool UsesVar(const PrimExpr& e, const VarNode* v) { return nest::Uses(e, {v}); }

PrimExpr And(PrimExpr a, PrimExpr b) {
  if (!a.get()) return b;
  if (!b.get()) return a;
  return MakeBinary(TirKind::kAnd, std::move(a), std::move(b));
}

// `at < extent`, or nothing when `at` (base + a constant offset below
// `span`, base a multiple of `span`) cannot reach it: extent a constant
// multiple of span.
PrimExpr Below(const PrimExpr& at, const PrimExpr& extent, int64_t span) {
  const int64_t* e = nest::ConstInt(extent);
  if (e != nullptr && *e % span == 0) return PrimExpr();
  return MakeBinary(TirKind::kLT, at, AsI64(extent));
}

}  // namespace

Stmt ScheduleTiledMatmul(const std::vector<const ForNode*>& rows, const Stmt& rest) {
  Stmt inner;
  std::vector<const ForNode*> ks = nest::PeelNest(rest, &inner);
  if (ks.size() != 1 || ks[0]->for_kind != ForKind::kSerial || rows.size() < 2) return nullptr;
  const ForNode* kloop = ks[0];
  gpu::InitAndUpdate iu = gpu::MatchInitAndUpdate(inner, ks);
  const BufferStoreNode* init = iu.init;
  const BufferStoreNode* update = iu.update;
  if (update == nullptr || !IsZeroOf(init->value) || update->value->kind() != TirKind::kAdd) return nullptr;
  const Buffer& out = update->buffer;
  DType t = out->dtype;
  for (const auto& i : update->indices)
    if (UsesVar(i, kloop->loop_var.get())) return nullptr;
  const auto* add = static_cast<const BinaryNode*>(update->value.get());
  PrimExpr e;
  for (int side = 0; side < 2 && !e.get(); ++side) {
    const auto* l = (side == 0 ? add->a : add->b).as<BufferLoadNode>();
    if (l != nullptr && l->buffer.get() == out.get() && gpu::SameIndices(l->indices, update->indices)) {
      e = side == 0 ? add->b : add->a;
    }
  }
  if (!e.get() || e->kind() != TirKind::kMul) return nullptr;
  const auto* mul = static_cast<const BinaryNode*>(e.get());
  PrimExpr x = mul->a, y = mul->b;
  if (x.dtype() != t || y.dtype() != t) return nullptr;
  nest::BufferRefs refs;
  refs.VisitExpr(e);
  if (refs.loads.count(out->data.get())) return nullptr;
  // The row loops: i read by X alone, j by Y alone, the rest (batch) fixed
  // per block.
  const ForNode* iloop = nullptr;
  const ForNode* jloop = nullptr;
  std::vector<const ForNode*> batch;
  for (const ForNode* r : rows) {
    bool in_x = UsesVar(x, r->loop_var.get()), in_y = UsesVar(y, r->loop_var.get());
    if (in_x && !in_y) {
      if (iloop != nullptr) return nullptr;
      iloop = r;
    } else if (in_y && !in_x) {
      if (jloop != nullptr) return nullptr;
      jloop = r;
    } else {
      batch.push_back(r);
    }
  }
  if (iloop == nullptr || jloop == nullptr) return nullptr;
  const Var& iv = iloop->loop_var;
  const Var& jv = jloop->loop_var;
  const Var& kv = kloop->loop_var;
  auto at = [](const ForNode* f, const PrimExpr& offset) {
    return nest::IsZero(f->min) ? offset : AsI64(f->min) + offset;
  };
  PrimExpr m = iloop->extent, n = jloop->extent, k = kloop->extent;

  // The block's tile.
  Var bx = MakeVar("blockIdx_x", DType::Int64());
  PrimExpr tiles_m = gpu::CeilDiv(m, kTile), tiles_n = gpu::CeilDiv(n, kTile);
  PrimExpr bxe(bx);
  Var m0 = MakeVar("m0", DType::Int64()), n0 = MakeVar("n0", DType::Int64());
  // Xs is written along k by consecutive threads: a row of 65 puts the 16
  // k of one fetch in 16 banks instead of one.
  Buffer xs = gpu::NewBuffer("Xs", t, {nest::I64(kTileK), nest::I64(kTile + 1)}, "shared");
  Buffer ys = gpu::NewBuffer("Ys", t, {nest::I64(kTileK), nest::I64(kTile)}, "shared");
  Buffer acc = gpu::NewBuffer("acc", t, {nest::I64(kThreads), nest::I64(kPer * kPer)}, "local");
  auto load = [](const Buffer& b, std::vector<PrimExpr> idx) {
    return PrimExpr(std::make_shared<BufferLoadNode>(b, std::move(idx)));
  };
  auto store = [](const Buffer& b, std::vector<PrimExpr> idx, PrimExpr v) {
    return Stmt(std::make_shared<BufferStoreNode>(b, std::move(v), std::move(idx)));
  };
  auto guarded = [](const PrimExpr& cond, Stmt then_case, Stmt else_case) {
    if (!cond.get()) return then_case;
    return Stmt(std::make_shared<IfThenElseNode>(cond, std::move(then_case), std::move(else_case)));
  };
  auto serial = [](const Var& v, int64_t extent, Stmt body) {
    return Stmt(std::make_shared<ForNode>(v, nest::I64(0), nest::I64(extent), ForKind::kSerial, std::move(body)));
  };
  PrimExpr zero = t.is_float() ? FloatImm(t, 0) : IntImm(t, 0);

  std::vector<Stmt> phases;
  // Zero the accumulators.
  {
    Var tid = MakeVar("threadIdx_x", DType::Int64()), q = MakeVar("q", DType::Int64());
    phases.push_back(gpu::ThreadLoop(tid, kThreads, serial(q, kPer * kPer, store(acc, {PrimExpr(tid), PrimExpr(q)}, zero))));
  }
  // The k tiles: fetch, barrier, multiply, barrier.
  Var kt = MakeVar("kt", DType::Int64());
  PrimExpr k0 = PrimExpr(kt) * nest::I64(kTileK);
  std::vector<Stmt> step;
  {
    Var tid = MakeVar("threadIdx_x", DType::Int64()), l = MakeVar("l", DType::Int64());
    PrimExpr idx = PrimExpr(tid) + PrimExpr(l) * nest::I64(kThreads);
    // X: consecutive threads along k; Y: along j.
    PrimExpr xi = MakeBinary(TirKind::kFloorDiv, idx, nest::I64(kTileK));
    PrimExpr xk = MakeBinary(TirKind::kFloorMod, idx, nest::I64(kTileK));
    PrimExpr yk = MakeBinary(TirKind::kFloorDiv, idx, nest::I64(kTile));
    PrimExpr yj = MakeBinary(TirKind::kFloorMod, idx, nest::I64(kTile));
    Var gi = MakeVar("x_i", DType::Int64()), gxk = MakeVar("x_k", DType::Int64());
    Var gj = MakeVar("y_j", DType::Int64()), gyk = MakeVar("y_k", DType::Int64());
    VarMap xmap{{iv.get(), OfType(iv, at(iloop, PrimExpr(gi)))}, {kv.get(), OfType(kv, at(kloop, PrimExpr(gxk)))}};
    VarMap ymap{{jv.get(), OfType(jv, at(jloop, PrimExpr(gj)))}, {kv.get(), OfType(kv, at(kloop, PrimExpr(gyk)))}};
    Stmt fx = guarded(And(Below(PrimExpr(gi), m, kTile), Below(PrimExpr(gxk), k, kTileK)), store(xs, {xk, xi}, Substitute(x, xmap)),
                      store(xs, {xk, xi}, zero));
    Stmt fy = guarded(And(Below(PrimExpr(gj), n, kTile), Below(PrimExpr(gyk), k, kTileK)), store(ys, {yk, yj}, Substitute(y, ymap)),
                      store(ys, {yk, yj}, zero));
    fx = std::make_shared<LetStmtNode>(gi, PrimExpr(m0) + xi, std::make_shared<LetStmtNode>(gxk, k0 + xk, fx));
    fy = std::make_shared<LetStmtNode>(gj, PrimExpr(n0) + yj, std::make_shared<LetStmtNode>(gyk, k0 + yk, fy));
    step.push_back(gpu::ThreadLoop(tid, kThreads, serial(l, kTile * kTileK / kThreads, Seq({fx, fy}))));
  }
  step.push_back(gpu::Barrier());
  {
    Var tid = MakeVar("threadIdx_x", DType::Int64());
    Var kk = MakeVar("kk", DType::Int64()), r = MakeVar("ri", DType::Int64()), c = MakeVar("ci", DType::Int64());
    PrimExpr ty = MakeBinary(TirKind::kFloorDiv, PrimExpr(tid), nest::I64(kSide));
    PrimExpr tx = MakeBinary(TirKind::kFloorMod, PrimExpr(tid), nest::I64(kSide));
    PrimExpr q = PrimExpr(r) * nest::I64(kPer) + PrimExpr(c);
    PrimExpr fma = load(acc, {PrimExpr(tid), q}) + load(xs, {PrimExpr(kk), ty + PrimExpr(r) * nest::I64(kSide)}) *
                                             load(ys, {PrimExpr(kk), tx + PrimExpr(c) * nest::I64(kSide)});
    Stmt body = serial(kk, kTileK, serial(r, kPer, serial(c, kPer, store(acc, {PrimExpr(tid), q}, fma))));
    step.push_back(gpu::ThreadLoop(tid, kThreads, body));
  }
  step.push_back(gpu::Barrier());
  phases.push_back(std::make_shared<ForNode>(kt, nest::I64(0), gpu::CeilDiv(k, kTileK), ForKind::kSerial,
                                             Seq(std::move(step))));
  // Write the thread's outputs.
  {
    Var tid = MakeVar("threadIdx_x", DType::Int64());
    Var r = MakeVar("ri", DType::Int64()), c = MakeVar("ci", DType::Int64());
    Var oi = MakeVar("o_i", DType::Int64()), oj = MakeVar("o_j", DType::Int64());
    PrimExpr ty = MakeBinary(TirKind::kFloorDiv, PrimExpr(tid), nest::I64(kSide));
    PrimExpr tx = MakeBinary(TirKind::kFloorMod, PrimExpr(tid), nest::I64(kSide));
    VarMap omap{{iv.get(), OfType(iv, at(iloop, PrimExpr(oi)))}, {jv.get(), OfType(jv, at(jloop, PrimExpr(oj)))}};
    std::vector<PrimExpr> idx;
    for (const auto& i : update->indices) idx.push_back(Substitute(i, omap));
    Stmt w = guarded(And(Below(PrimExpr(oi), m, kTile), Below(PrimExpr(oj), n, kTile)),
                     store(out, idx, load(acc, {PrimExpr(tid), PrimExpr(r) * nest::I64(kPer) + PrimExpr(c)})), nullptr);
    w = std::make_shared<LetStmtNode>(oj, PrimExpr(n0) + tx + PrimExpr(c) * nest::I64(kSide), w);
    w = std::make_shared<LetStmtNode>(oi, PrimExpr(m0) + ty + PrimExpr(r) * nest::I64(kSide), w);
    phases.push_back(gpu::ThreadLoop(tid, kThreads, serial(r, kPer, serial(c, kPer, w))));
  }

  Stmt block = std::make_shared<AllocateNode>(acc, Seq(std::move(phases)));
  block = std::make_shared<AllocateNode>(ys, block);
  block = std::make_shared<AllocateNode>(xs, block);
  // bx = ((batch * tiles_m) + tm) * tiles_n + tn.
  const int64_t* one_n = nest::ConstInt(tiles_n);
  bool single_n = one_n != nullptr && *one_n == 1;
  PrimExpr tiles = single_n ? tiles_m : MakeBinary(TirKind::kMul, tiles_m, tiles_n);
  if (nest::ConstInt(tiles_m) && nest::ConstInt(tiles_n)) tiles = nest::I64(*nest::ConstInt(tiles_m) * *nest::ConstInt(tiles_n));
  PrimExpr tm = single_n ? bxe : MakeBinary(TirKind::kFloorDiv, bxe, tiles_n);
  if (!batch.empty()) tm = MakeBinary(TirKind::kFloorMod, tm, tiles_m);  // else bx < tiles, tm < tiles_m
  PrimExpr tn = single_n ? nest::I64(0) : MakeBinary(TirKind::kFloorMod, bxe, tiles_n);
  block = std::make_shared<LetStmtNode>(n0, tn * nest::I64(kTile), block);
  block = std::make_shared<LetStmtNode>(m0, tm * nest::I64(kTile), block);
  PrimExpr grid = tiles;
  if (!batch.empty()) {
    block = gpu::LetFused(batch, MakeBinary(TirKind::kFloorDiv, bxe, tiles), block);
    PrimExpr nb = gpu::ExtentProduct(batch, 0);
    grid = nest::ConstInt(nb) && nest::ConstInt(tiles) ? nest::I64(*nest::ConstInt(nb) * *nest::ConstInt(tiles))
                                                       : MakeBinary(TirKind::kMul, nb, tiles);
  }
  return std::make_shared<ForNode>(bx, nest::I64(0), grid, ForKind::kThreadBinding, block, "blockIdx.x");
}

}  // namespace tir
}  // namespace kiln
