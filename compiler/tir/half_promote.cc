#include "compiler/tir/half_promote.h"

#include <memory>
#include <vector>

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

bool IsHalf(const DType& t) { return t.is_float() && t.bits == 16 && t.lanes == 1; }

const BinaryNode* AsBinary(const PrimExpr& e) {
  return IsBinary(e->kind()) ? static_cast<const BinaryNode*>(e.get()) : nullptr;
}

// Whether `e` reads or computes a half value anywhere below it.
bool HasHalf(const PrimExpr& e);

bool ArgsHaveHalf(const std::vector<PrimExpr>& args) {
  for (const PrimExpr& a : args)
    if (HasHalf(a)) return true;
  return false;
}

bool HasHalf(const PrimExpr& e) {
  if (IsHalf(e.dtype())) return true;
  if (const auto* b = AsBinary(e)) return HasHalf(b->a) || HasHalf(b->b);
  if (const auto* n = e.as<NotNode>()) return HasHalf(n->a);
  if (const auto* c = e.as<CastNode>()) return HasHalf(c->value);
  if (const auto* s = e.as<SelectNode>()) return HasHalf(s->cond) || HasHalf(s->true_value) || HasHalf(s->false_value);
  if (const auto* call = e.as<CallNode>()) return ArgsHaveHalf(call->args);
  return false;  // loads (their indices are integers), immediates, variables
}

}  // namespace

bool PromoteHalf(const PrimExpr& e, PrimExpr* out) {
  if (!HasHalf(e)) {
    *out = e;
    return true;
  }
  const DType f32 = DType::Float32();
  if (e.as<BufferLoadNode>() != nullptr) {
    *out = Cast(f32, e);  // a half load (HasHalf: its dtype)
    return true;
  }
  if (const auto* f = e.as<FloatImmNode>()) {
    *out = FloatImm(f32, f->value);
    return true;
  }
  if (const auto* c = e.as<CastNode>()) {
    PrimExpr v;
    if (!PromoteHalf(c->value, &v)) return false;
    // To half: the rounding is left to the final store. From half: the
    // promoted value is already float32.
    DType to = IsHalf(c->dtype) ? f32 : c->dtype;
    *out = v.dtype() == to ? v : Cast(to, v);
    return true;
  }
  if (const auto* b = AsBinary(e)) {
    PrimExpr a, c;
    if (!PromoteHalf(b->a, &a) || !PromoteHalf(b->b, &c) || a.dtype() != c.dtype()) return false;
    *out = MakeBinary(e->kind(), a, c);
    return true;
  }
  if (const auto* n = e.as<NotNode>()) {
    PrimExpr a;
    if (!PromoteHalf(n->a, &a)) return false;
    *out = PrimExpr(std::make_shared<NotNode>(a));
    return true;
  }
  if (const auto* s = e.as<SelectNode>()) {
    PrimExpr c, t, f;
    if (!PromoteHalf(s->cond, &c) || !PromoteHalf(s->true_value, &t) || !PromoteHalf(s->false_value, &f) ||
        t.dtype() != f.dtype()) {
      return false;
    }
    *out = PrimExpr(std::make_shared<SelectNode>(c, t, f));
    return true;
  }
  if (const auto* call = e.as<CallNode>()) {
    // The code generator computes half intrinsics in float32 already
    // (kernel_emitter_expr.cc); if_then_else selects. Anything else (a
    // packed or extern call) is left alone.
    bool test = call->op == "isnan" || call->op == "isinf" || call->op == "isfinite";
    if (!(call->dtype.is_float() || (test && call->dtype == DType::Bool()))) return false;
    std::vector<PrimExpr> args;
    for (const PrimExpr& a : call->args) {
      PrimExpr p;
      if (!PromoteHalf(a, &p)) return false;
      args.push_back(p);
    }
    if (call->op == "if_then_else" && (args.size() != 3 || args[1].dtype() != args[2].dtype())) return false;
    DType t = IsHalf(call->dtype) ? f32 : call->dtype;
    *out = PrimExpr(std::make_shared<CallNode>(t, call->op, args));
    return true;
  }
  return false;  // a half variable
}

PrimExpr HalfStoreValue(const Buffer& dst, const PrimExpr& v) {
  if (!(IsHalf(dst->dtype) || dst->dtype == DType::Float32()) || !HasHalf(v)) return v;
  PrimExpr p;
  if (!PromoteHalf(v, &p) || p.dtype() != DType::Float32()) return v;
  return dst->dtype == DType::Float32() ? p : Cast(dst->dtype, p);
}

}  // namespace tir
}  // namespace kiln
