#include "compiler/tir/gpu_schedule_util.h"

#include <memory>
#include <utility>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace tir {
namespace gpu {

using namespace ir;  // NOLINT

PrimExpr AsI64(const PrimExpr& e) {
  if (e.dtype() == DType::Int64()) return e;
  if (const int64_t* c = nest::ConstInt(e)) return nest::I64(*c);
  return Cast(DType::Int64(), e);
}

PrimExpr CeilDiv(const PrimExpr& a, int64_t b) {
  if (const int64_t* c = nest::ConstInt(a)) return nest::I64((*c + b - 1) / b);
  return MakeBinary(TirKind::kFloorDiv, AsI64(a) + nest::I64(b - 1), nest::I64(b));
}

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

PrimExpr OfType(const Var& v, const PrimExpr& value) {
  return v->dtype == DType::Int64() ? value : Cast(v->dtype, value);
}

Stmt LetFused(const std::vector<const ForNode*>& loops, const PrimExpr& fused, Stmt body) {
  for (size_t k = loops.size(); k-- > 0;) {
    const ForNode* f = loops[k];
    PrimExpr stride = ExtentProduct(loops, k + 1);
    const int64_t* st = nest::ConstInt(stride);
    PrimExpr q = st && *st == 1 ? fused : MakeBinary(TirKind::kFloorDiv, fused, stride);
    PrimExpr idx = k == 0 ? q : MakeBinary(TirKind::kFloorMod, q, AsI64(f->extent));
    if (!nest::IsZero(f->min)) idx = AsI64(f->min) + idx;
    body = std::make_shared<LetStmtNode>(f->loop_var, OfType(f->loop_var, idx), body);
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

Buffer NewBuffer(const std::string& name, DType dtype, std::vector<PrimExpr> shape, const std::string& scope) {
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = MakeVar(name + "_data", HandleType());
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->scope = scope;
  return node;
}

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!StructuralEqual(a[i], b[i])) return false;
  return true;
}

InitAndUpdate MatchInitAndUpdate(const Stmt& inner, const std::vector<const ForNode*>& ks) {
  const auto* seq = As<SeqStmtNode>(inner);
  if (seq == nullptr || seq->seq.size() != 2) return {};
  const auto* guard = As<IfThenElseNode>(seq->seq[0]);
  if (guard == nullptr || guard->else_case != nullptr || !nest::IsInitGuard(guard->cond, ks, 0)) return {};
  const auto* init = As<BufferStoreNode>(guard->then_case);
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  if (init == nullptr || update == nullptr || init->buffer.get() != update->buffer.get() ||
      !SameIndices(init->indices, update->indices)) {
    return {};
  }
  DType t = update->buffer->dtype;
  if (t != DType::Float32() && t != DType::Int32()) return {};
  return {init, update};
}

}  // namespace gpu
}  // namespace tir
}  // namespace kiln
