#include "compiler/codegen/vector_loop.h"

#include <functional>

#include "compiler/arith/expr_compare.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace codegen {

using namespace ir;  // NOLINT
using tir::nest::Uses;

namespace {

bool UsesVar(const PrimExpr& e, const VarNode* var) { return Uses(e, {var}); }

// The coefficient of `var` in the integer expression `e`, when `e` is affine
// in it with a static coefficient.
std::optional<int64_t> Coefficient(const PrimExpr& e, const VarNode* var) {
  if (!UsesVar(e, var)) return 0;
  if (e.get() == var) return 1;
  if (!e.dtype().is_int()) return std::nullopt;
  switch (e->kind()) {
    case TirKind::kAdd:
    case TirKind::kSub: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      std::optional<int64_t> x = Coefficient(b->a, var), y = Coefficient(b->b, var);
      if (!x || !y) return std::nullopt;
      return e->kind() == TirKind::kAdd ? *x + *y : *x - *y;
    }
    case TirKind::kMul: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      const int64_t* ca = tir::nest::ConstInt(b->a);
      const int64_t* cb = tir::nest::ConstInt(b->b);
      if (cb != nullptr) {
        std::optional<int64_t> x = Coefficient(b->a, var);
        if (x) return *x * *cb;
      } else if (ca != nullptr) {
        std::optional<int64_t> y = Coefficient(b->b, var);
        if (y) return *ca * *y;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// Whether `e` minus `var` is a multiple of k by its structure: constants
// that are, and products with such a constant factor free of `var`.
bool MultipleBesidesVar(const PrimExpr& e, const VarNode* var, int64_t k) {
  if (e.get() == var) return true;
  if (const int64_t* c = tir::nest::ConstInt(e)) return *c % k == 0;
  switch (e->kind()) {
    case TirKind::kAdd:
    case TirKind::kSub: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      return MultipleBesidesVar(b->a, var, k) && MultipleBesidesVar(b->b, var, k);
    }
    case TirKind::kMul: {
      if (UsesVar(e, var)) return false;
      const auto* b = static_cast<const BinaryNode*>(e.get());
      const int64_t* ca = tir::nest::ConstInt(b->a);
      const int64_t* cb = tir::nest::ConstInt(b->b);
      return (ca != nullptr && *ca % k == 0) || (cb != nullptr && *cb % k == 0);
    }
    default:
      return false;
  }
}

bool IsFloat32(DType t) { return t.is_float() && t.bits == 32 && t.lanes == 1; }
bool IsHalf(DType t) { return t.is_float() && t.bits == 16 && t.lanes == 1; }

// A store's value in float32: a store to a float16 / bfloat16 buffer of a
// cast from float32 (--precision=fp16|bf16) stores the cast's operand,
// rounded per vector; else the value itself.
const PrimExpr& Float32Value(const BufferStoreNode* st) {
  const auto* cast = st->value.as<CastNode>();
  if (IsHalf(st->buffer->dtype) && cast && IsFloat32(cast->value.dtype())) return cast->value;
  return st->value;
}

}  // namespace

bool CollectStores(const Stmt& s, std::vector<const BufferStoreNode*>* out) {
  if (const auto* st = As<BufferStoreNode>(s)) {
    out->push_back(st);
    return true;
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    for (const Stmt& c : seq->seq)
      if (!CollectStores(c, out)) return false;
    return true;
  }
  return false;
}

std::optional<int64_t> FlatCoefficient(const Buffer& buf, const std::vector<PrimExpr>& indices,
                                       const VarNode* var) {
  if (!buf->strides.empty() || indices.size() != buf->shape.size()) return std::nullopt;
  int64_t flat = 0, stride = 1;
  bool stride_known = true;
  for (size_t d = indices.size(); d-- > 0;) {
    std::optional<int64_t> c = Coefficient(indices[d], var);
    if (!c) return std::nullopt;
    if (*c != 0) {
      if (!stride_known) return std::nullopt;
      flat += *c * stride;
    }
    const int64_t* extent = tir::nest::ConstInt(buf->shape[d]);
    if (extent == nullptr) {
      stride_known = false;
    } else {
      stride *= *extent;
    }
  }
  return flat;
}

int64_t RepeatFactor(const Buffer& buf, const std::vector<PrimExpr>& indices, const VarNode* var) {
  if (!buf->strides.empty() || indices.empty() || indices.size() != buf->shape.size()) return 0;
  for (size_t d = 0; d + 1 < indices.size(); ++d)
    if (UsesVar(indices[d], var)) return 0;
  const PrimExpr& last = indices.back();
  if (last->kind() != TirKind::kFloorDiv) return 0;
  const auto* div = static_cast<const BinaryNode*>(last.get());
  const int64_t* k = tir::nest::ConstInt(div->b);
  if (k == nullptr || *k < 2 || *k > kMaxRepeat || (*k & (*k - 1)) != 0) return 0;
  std::optional<int64_t> c = Coefficient(div->a, var);
  if (!c || *c != 1 || !MultipleBesidesVar(div->a, var, *k)) return 0;
  return *k;
}

bool EmitsAsVectors(const Stmt& body, const VarNode* var, bool* strided, bool* repeated, bool stride3) {
  if (strided != nullptr) *strided = false;
  if (repeated != nullptr) *repeated = false;
  std::vector<const BufferStoreNode*> stores;
  if (!CollectStores(body, &stores) || stores.empty()) return false;
  for (const BufferStoreNode* st : stores) {
    if (!IsFloat32(st->buffer->dtype) && !IsFloat32(Float32Value(st).dtype())) return false;
    std::optional<int64_t> c = FlatCoefficient(st->buffer, st->indices, var);
    if (!c || *c != 1) return false;
  }
  // A load of a buffer the body stores: only at one of those stores' indices.
  auto reads_own_lane = [&](const BufferLoadNode* l) {
    bool stored = false;
    for (const BufferStoreNode* st : stores) {
      if (st->buffer->data.get() != l->buffer->data.get()) continue;
      stored = true;
      if (l->indices.size() != st->indices.size()) continue;
      bool same = true;
      for (size_t i = 0; i < l->indices.size() && same; ++i) same = arith::StructuralEqual(l->indices[i], st->indices[i]);
      if (same) return true;
    }
    return !stored;
  };
  std::function<bool(const PrimExpr&)> value_ok = [&](const PrimExpr& e) -> bool {
    if (!UsesVar(e, var)) return true;
    if (!IsFloat32(e.dtype())) return false;
    switch (e->kind()) {
      case TirKind::kBufferLoad: {
        const auto* l = e.as<BufferLoadNode>();
        if (RepeatFactor(l->buffer, l->indices, var) != 0) {
          if (repeated != nullptr) *repeated = true;
          return true;
        }
        std::optional<int64_t> c = FlatCoefficient(l->buffer, l->indices, var);
        bool wide = c && (*c == kMaxLoadStride || (stride3 && *c == kDeinterleaveStride));
        if (wide && strided != nullptr) *strided = true;
        return c && (*c == 1 || wide);
      }
      case TirKind::kCast: {
        // A float16 / bfloat16 element widened: one vector load of halves
        // and one conversion.
        const auto* l = e.as<CastNode>()->value.as<BufferLoadNode>();
        if (l == nullptr || !IsHalf(l->buffer->dtype)) return false;
        std::optional<int64_t> c = FlatCoefficient(l->buffer, l->indices, var);
        return c && *c == 1;
      }
      case TirKind::kAdd:
      case TirKind::kSub:
      case TirKind::kMul:
      case TirKind::kDiv: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        return IsFloat32(b->a.dtype()) && IsFloat32(b->b.dtype()) && value_ok(b->a) && value_ok(b->b);
      }
      case TirKind::kMin:
      case TirKind::kMax: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        return IsFloat32(b->a.dtype()) && IsFloat32(b->b.dtype()) && value_ok(b->a) && value_ok(b->b);
      }
      case TirKind::kSelect: {
        // A float comparison, or `and` / `or` of them (the window
        // schedules' "any tap is NaN": x != x or y != y ...), or anything
        // free of the loop variable (splat: a row's bounds test).
        std::function<bool(const PrimExpr&)> cond_ok = [&](const PrimExpr& c) -> bool {
          if (!UsesVar(c, var)) return true;
          TirKind k = c->kind();
          if (k == TirKind::kAnd || k == TirKind::kOr) {
            const auto* b = static_cast<const BinaryNode*>(c.get());
            return cond_ok(b->a) && cond_ok(b->b);
          }
          if (k != TirKind::kGT && k != TirKind::kLT && k != TirKind::kGE && k != TirKind::kLE && k != TirKind::kEQ &&
              k != TirKind::kNE)
            return false;
          const auto* cmp = static_cast<const BinaryNode*>(c.get());
          return IsFloat32(cmp->a.dtype()) && IsFloat32(cmp->b.dtype()) && value_ok(cmp->a) && value_ok(cmp->b);
        };
        const auto* s = e.as<SelectNode>();
        return cond_ok(s->cond) && value_ok(s->true_value) && value_ok(s->false_value);
      }
      case TirKind::kCall: {
        const auto* call = e.as<CallNode>();
        // fma, and the activations of fused epilogues (GELU's erf, tanh,
        // sigmoid, exp), which the vector math emits for any width.
        bool unary = call->op == "erf" || call->op == "tanh" || call->op == "sigmoid" || call->op == "exp";
        if (!(call->op == "fma" && call->args.size() == 3) && !(unary && call->args.size() == 1)) return false;
        for (const PrimExpr& a : call->args)
          if (!IsFloat32(a.dtype()) || !value_ok(a)) return false;
        return true;
      }
      default:
        return false;
    }
  };
  for (const BufferStoreNode* st : stores) {
    tir::nest::BufferRefs refs = tir::nest::RefsOf(std::make_shared<EvaluateNode>(st->value));
    for (const BufferLoadNode* l : refs.load_nodes)
      if (!reads_own_lane(l)) return false;
    if (!value_ok(Float32Value(st))) return false;
  }
  return true;
}

}  // namespace codegen
}  // namespace kiln
