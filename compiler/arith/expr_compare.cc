#include "compiler/arith/expr_compare.h"

#include <string>

namespace kiln {
namespace arith {
namespace {

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int CompareDType(DType a, DType b) {
  if (int c = Cmp(a.code, b.code)) return c;
  if (int c = Cmp(a.bits, b.bits)) return c;
  return Cmp(a.lanes, b.lanes);
}

int CompareList(const std::vector<ir::PrimExpr>& a, const std::vector<ir::PrimExpr>& b) {
  if (int c = Cmp(a.size(), b.size())) return c;
  for (size_t i = 0; i < a.size(); ++i)
    if (int c = CompareExpr(a[i], b[i])) return c;
  return 0;
}

// Variables sort before every other kind.
int KindRank(ir::TirKind k) { return k == ir::TirKind::kVar ? -1 : static_cast<int>(k); }

}  // namespace

int CompareExpr(const ir::PrimExpr& a, const ir::PrimExpr& b) {
  using namespace ir;
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return a.defined() ? 1 : -1;
  if (int c = Cmp(KindRank(a->kind()), KindRank(b->kind()))) return c;
  if (const auto* va = a.as<VarNode>()) {
    const auto* vb = b.as<VarNode>();
    if (int c = va->name.compare(vb->name)) return c < 0 ? -1 : 1;
    if (int c = CompareDType(va->dtype, vb->dtype)) return c;
    return Cmp(static_cast<const void*>(va), static_cast<const void*>(vb));
  }
  if (int c = CompareDType(a.dtype(), b.dtype())) return c;
  switch (a->kind()) {
    case TirKind::kIntImm: return Cmp(a.as<IntImmNode>()->value, b.as<IntImmNode>()->value);
    case TirKind::kFloatImm: return Cmp(a.as<FloatImmNode>()->value, b.as<FloatImmNode>()->value);
    case TirKind::kStringImm: return Cmp(a.as<StringImmNode>()->value, b.as<StringImmNode>()->value);
    case TirKind::kNot: return CompareExpr(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case TirKind::kCast: return CompareExpr(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case TirKind::kSelect: {
      const auto* sa = a.as<SelectNode>();
      const auto* sb = b.as<SelectNode>();
      if (int c = CompareExpr(sa->cond, sb->cond)) return c;
      if (int c = CompareExpr(sa->true_value, sb->true_value)) return c;
      return CompareExpr(sa->false_value, sb->false_value);
    }
    case TirKind::kBufferLoad: {
      const auto* la = a.as<BufferLoadNode>();
      const auto* lb = b.as<BufferLoadNode>();
      // Buffers are identified by node, like Vars; the name orders them.
      if (la->buffer != lb->buffer) {
        if (int c = la->buffer->name.compare(lb->buffer->name)) return c < 0 ? -1 : 1;
        return Cmp(static_cast<const void*>(la->buffer.get()), static_cast<const void*>(lb->buffer.get()));
      }
      return CompareList(la->indices, lb->indices);
    }
    case TirKind::kCall: {
      const auto* ca = a.as<CallNode>();
      const auto* cb = b.as<CallNode>();
      if (int c = ca->op.compare(cb->op)) return c < 0 ? -1 : 1;
      return CompareList(ca->args, cb->args);
    }
    default: break;
  }
  KILN_CHECK(IsBinary(a->kind()), "CompareExpr: unexpected node kind %s", TirKindName(a->kind()));
  const auto* ba = static_cast<const BinaryNode*>(a.get());
  const auto* bb = static_cast<const BinaryNode*>(b.get());
  if (int c = CompareExpr(ba->a, bb->a)) return c;
  return CompareExpr(ba->b, bb->b);
}

}  // namespace arith
}  // namespace kiln
