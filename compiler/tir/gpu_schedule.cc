#include "compiler/tir/gpu_schedule.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/tir/gpu_matmul_schedule.h"
#include "compiler/tir/gpu_reduce_schedule.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

bool IsLoopVar(const PrimExpr& e, const VarNode* v) {
  if (nest::IsVar(e, v)) return true;
  const auto* c = e.as<CastNode>();
  return c != nullptr && nest::IsVar(c->value, v);
}

// Whether the iterations of a loop over `v` write disjoint elements: every
// buffer stored in `body` (other than those allocated inside it, which are
// private to an iteration) has a dimension that every one of its loads and
// stores indexes with `v` alone. A scan (out[j] = out[j - 1] + ...) and a
// reduction's loop fail it.
bool WritesDisjoint(const Stmt& body, const VarNode* v) {
  nest::BufferAccesses acc;
  acc.VisitStmt(body);
  bool any_store = false;
  for (const auto& kv : acc.by_buffer) {
    const auto& info = kv.second;
    if (!info.stored || acc.allocated.count(kv.first)) continue;
    any_store = true;
    size_t rank = info.indices.empty() ? 0 : info.indices.front()->size();
    bool found = false;
    for (size_t d = 0; d < rank && !found; ++d) {
      found = true;
      for (const auto* idx : info.indices)
        if (idx->size() != rank || !IsLoopVar((*idx)[d], v)) found = false;
    }
    if (!found) return false;
  }
  return any_store;
}

PrimExpr AsI64(const PrimExpr& e) {
  if (e.dtype() == DType::Int64()) return e;
  if (const int64_t* c = nest::ConstInt(e)) return nest::I64(*c);
  return Cast(DType::Int64(), e);
}

struct ScheduledItem {
  std::vector<Buffer> workspaces;  // Allocates above the bound loops
  Stmt stmt;
};

Result<ScheduledItem> ScheduleItem(const Stmt& item, int64_t threads) {
  ScheduledItem out;
  std::vector<const ForNode*> bound;
  std::unordered_set<const VarNode*> bound_vars;
  Stmt s = item;
  while (true) {
    if (const auto* a = As<AllocateNode>(s); a != nullptr && bound.empty()) {
      out.workspaces.push_back(a->buffer);
      s = a->body;
      continue;
    }
    const auto* f = As<ForNode>(s);
    if (f == nullptr || nest::Uses(f->min, bound_vars) || nest::Uses(f->extent, bound_vars) ||
        !WritesDisjoint(f->body, f->loop_var.get())) {
      break;
    }
    bound.push_back(f);
    bound_vars.insert(f->loop_var.get());
    s = f->body;
  }
  // A matmul: shared-memory tiles and a 4x4 block of outputs per thread.
  if (Stmt block = ScheduleTiledMatmul(bound, s)) {
    out.stmt = block;
    return out;
  }
  // A reduction whose rows are independent: a block per row.
  if (Stmt block = ScheduleBlockReduction(bound, s)) {
    out.stmt = block;
    return out;
  }
  Var bx = MakeVar("blockIdx_x", DType::Int64());
  Var tx = MakeVar("threadIdx_x", DType::Int64());
  if (bound.empty()) {
    // A reduction to one value or a scan: the whole item in one thread (as
    // TVM's DefaultGPUSchedule binds a block it cannot split). Correct, and
    // serial: a block-wide tree reduction needs shared memory and barriers,
    // which the NVPTX codegen does not emit yet.
    Stmt one = std::make_shared<ForNode>(tx, nest::I64(0), nest::I64(1), ForKind::kThreadBinding, s, "threadIdx.x");
    out.stmt = std::make_shared<ForNode>(bx, nest::I64(0), nest::I64(1), ForKind::kThreadBinding, one, "blockIdx.x");
    return out;
  }
  // N, and each loop's stride in the fused index.
  std::vector<PrimExpr> strides(bound.size());
  PrimExpr n = nest::I64(1);
  int64_t static_n = 1;
  bool is_static = true;
  for (size_t k = bound.size(); k-- > 0;) {
    strides[k] = n;
    const int64_t* e = nest::ConstInt(bound[k]->extent);
    if (e != nullptr && is_static) {
      static_n *= *e;
      n = nest::I64(static_n);
    } else {
      is_static = false;
      n = MakeBinary(TirKind::kMul, n, AsI64(bound[k]->extent));
    }
  }
  int64_t block = is_static && static_n < threads ? std::max<int64_t>(static_n, 1) : threads;
  PrimExpr grid = is_static ? nest::I64((static_n + block - 1) / block)
                            : MakeBinary(TirKind::kFloorDiv, n + nest::I64(block - 1), nest::I64(block));
  PrimExpr fused = PrimExpr(bx) * nest::I64(block) + PrimExpr(tx);
  // Innermost first: v_k = min_k + fused / stride_k % extent_k.
  Stmt body = s;
  for (size_t k = bound.size(); k-- > 0;) {
    const ForNode* f = bound[k];
    PrimExpr q = nest::ConstInt(strides[k]) && *nest::ConstInt(strides[k]) == 1
                     ? fused
                     : MakeBinary(TirKind::kFloorDiv, fused, strides[k]);
    PrimExpr idx = k == 0 ? q : MakeBinary(TirKind::kFloorMod, q, AsI64(f->extent));
    if (!nest::IsZero(f->min)) idx = AsI64(f->min) + idx;
    if (f->loop_var->dtype != DType::Int64()) idx = Cast(f->loop_var->dtype, idx);
    body = std::make_shared<LetStmtNode>(f->loop_var, idx, body);
  }
  if (!(is_static && static_n % block == 0)) {
    body = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, fused, n), body, nullptr);
  }
  body = std::make_shared<ForNode>(tx, nest::I64(0), nest::I64(block), ForKind::kThreadBinding, body, "threadIdx.x");
  out.stmt = std::make_shared<ForNode>(bx, nest::I64(0), grid, ForKind::kThreadBinding, body, "blockIdx.x");
  return out;
}

}  // namespace

Result<PrimFunc> ScheduleForGpu(const PrimFunc& func, int64_t threads_per_block) {
  std::vector<Buffer> workspaces;
  Stmt s = func->body;
  while (const auto* a = As<AllocateNode>(s)) {
    workspaces.push_back(a->buffer);
    s = a->body;
  }
  std::vector<Stmt> items;
  if (const auto* seq = As<SeqStmtNode>(s)) {
    items = seq->seq;
  } else {
    items.push_back(s);
  }
  std::vector<Stmt> scheduled;
  for (size_t i = 0; i < items.size(); ++i) {
    // softmax / layer_norm: a row's reductions and passes in one block.
    size_t fused = 0;
    if (Stmt block = ScheduleFusedRows(items, i, &fused)) {
      scheduled.push_back(block);
      i += fused - 1;
      continue;
    }
    KILN_ASSIGN_OR_RETURN(ScheduledItem si, ScheduleItem(items[i], threads_per_block));
    workspaces.insert(workspaces.end(), si.workspaces.begin(), si.workspaces.end());
    scheduled.push_back(si.stmt);
  }
  Stmt body = Seq(std::move(scheduled));
  for (size_t i = workspaces.size(); i-- > 0;) body = std::make_shared<AllocateNode>(workspaces[i], body);
  return nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
