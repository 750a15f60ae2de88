#include "compiler/arith/expr_map.h"

#include <memory>
#include <utility>
#include <vector>

namespace kiln {
namespace arith {

using ir::PrimExpr;

namespace {

// Maps fn over `list`; returns true if some element changed.
bool MapList(const std::vector<PrimExpr>& list, const std::function<PrimExpr(const PrimExpr&)>& fn,
             std::vector<PrimExpr>* out) {
  bool changed = false;
  out->reserve(list.size());
  for (const PrimExpr& x : list) {
    out->push_back(fn(x));
    changed |= !out->back().same_as(x);
  }
  return changed;
}

}  // namespace

PrimExpr MapChildren(const PrimExpr& e, const std::function<PrimExpr(const PrimExpr&)>& fn) {
  using namespace ir;
  if (!e.defined()) return e;
  switch (e->kind()) {
    case TirKind::kIntImm:
    case TirKind::kFloatImm:
    case TirKind::kStringImm:
    case TirKind::kVar:
      return e;
    case TirKind::kNot: {
      PrimExpr a = fn(e.as<NotNode>()->a);
      if (a.same_as(e.as<NotNode>()->a)) return e;
      return PrimExpr(std::make_shared<NotNode>(std::move(a)));
    }
    case TirKind::kCast: {
      const auto* n = e.as<CastNode>();
      PrimExpr v = fn(n->value);
      if (v.same_as(n->value)) return e;
      return Cast(n->dtype, std::move(v));
    }
    case TirKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      PrimExpr c = fn(n->cond), t = fn(n->true_value), f = fn(n->false_value);
      if (c.same_as(n->cond) && t.same_as(n->true_value) && f.same_as(n->false_value)) return e;
      return PrimExpr(std::make_shared<SelectNode>(std::move(c), std::move(t), std::move(f)));
    }
    case TirKind::kBufferLoad: {
      const auto* n = e.as<BufferLoadNode>();
      std::vector<PrimExpr> idx;
      if (!MapList(n->indices, fn, &idx)) return e;
      return Load(n->buffer, std::move(idx));
    }
    case TirKind::kCall: {
      const auto* n = e.as<CallNode>();
      std::vector<PrimExpr> args;
      if (!MapList(n->args, fn, &args)) return e;
      return PrimExpr(std::make_shared<CallNode>(n->dtype, n->op, std::move(args)));
    }
    default: break;
  }
  KILN_CHECK(IsBinary(e->kind()), "MapChildren: unexpected node kind %s", TirKindName(e->kind()));
  const auto* n = static_cast<const BinaryNode*>(e.get());
  PrimExpr a = fn(n->a), b = fn(n->b);
  if (a.same_as(n->a) && b.same_as(n->b)) return e;
  return MakeBinary(e->kind(), std::move(a), std::move(b));
}

PrimExpr Substitute(const PrimExpr& e, const std::map<const ir::VarNode*, PrimExpr>& vmap) {
  if (vmap.empty() || !e.defined()) return e;
  if (const auto* v = e.as<ir::VarNode>()) {
    auto it = vmap.find(v);
    return it == vmap.end() ? e : it->second;
  }
  return MapChildren(e, [&](const PrimExpr& c) { return Substitute(c, vmap); });
}

}  // namespace arith
}  // namespace kiln
