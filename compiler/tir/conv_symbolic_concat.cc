#include "compiler/tir/conv_symbolic_concat.h"

#include <utility>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// Index d of an access at the nest's point: the loop's variable, or 0 where
// the loop runs once.
bool AtLoop(const PrimExpr& e, const ForNode* loop) {
  if (IsVar(e, loop->loop_var.get())) return true;
  const int64_t* x = ConstInt(loop->extent);
  return x != nullptr && *x == 1 && IsZero(e);
}

bool CompactFloat32(const Buffer& b) {
  return b->dtype == DType::Float32() && b->shape.size() == 4 && b->strides.empty();
}

}  // namespace

bool MatchSymbolicChannelConcat(const Stmt& s, const Buffer& dst, std::vector<SymConcatSource>* out) {
  Stmt body;
  std::vector<const ForNode*> loops = PeelNest(s, &body);
  const auto* st = As<BufferStoreNode>(body);
  if (loops.size() != 4 || st == nullptr || st->indices.size() != 4 || st->buffer->data.get() != dst->data.get() ||
      !CompactFloat32(dst)) {
    return false;
  }
  const int64_t* channels = ConstInt(dst->shape[1]);
  if (channels == nullptr) return false;
  for (size_t d = 0; d < 4; ++d) {
    if (!IsZero(loops[d]->min) || !ProvenSameExtent(loops[d]->extent, dst->shape[d])) return false;
    if (!AtLoop(st->indices[d], loops[d])) return false;
  }
  const VarNode* cvar = loops[1]->loop_var.get();
  std::vector<SymConcatSource> srcs;
  int64_t lo = 0;
  // The load of channels [lo, hi) from one source.
  auto take = [&](const PrimExpr& e, int64_t hi) {
    const auto* l = e.as<BufferLoadNode>();
    if (l == nullptr || l->buffer->data.get() == dst->data.get() || !CompactFloat32(l->buffer) ||
        l->indices.size() != 4) {
      return false;
    }
    const int64_t* count = ConstInt(l->buffer->shape[1]);
    if (count == nullptr || *count != hi - lo) return false;
    for (size_t d : {0, 2, 3}) {
      if (!ProvenSameExtent(l->buffer->shape[d], dst->shape[d]) || !AtLoop(l->indices[d], loops[d])) return false;
    }
    if (!arith::CanProveEqual(l->indices[1], PrimExpr(loops[1]->loop_var) - I64(lo))) return false;
    srcs.push_back({l->buffer, lo, hi - lo});
    lo = hi;
    return true;
  };
  PrimExpr e = st->value;
  while (const auto* call = e.as<CallNode>()) {
    if (call->op != "if_then_else" || call->args.size() != 3) return false;
    const auto* lt = call->args[0].as<LTNode>();
    const int64_t* k = lt ? ConstInt(lt->b) : nullptr;
    if (k == nullptr || !IsVar(lt->a, cvar) || *k <= lo || *k >= *channels) return false;
    if (!take(call->args[1], *k)) return false;
    e = call->args[2];
  }
  if (srcs.empty() || !take(e, *channels)) return false;
  *out = std::move(srcs);
  return true;
}

}  // namespace tir
}  // namespace kiln
