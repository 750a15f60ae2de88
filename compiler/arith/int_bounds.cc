#include "compiler/arith/int_bounds.h"

#include <algorithm>

namespace kiln {
namespace arith {
namespace {

using Wide = __int128;

// Infinite endpoints as values just outside int64, so that products of two
// endpoints (at most 2^126 in magnitude) never overflow a 128-bit integer.
Wide Widen(int64_t v) {
  if (v == kNegInf) return -(Wide(1) << 63) - 1;
  if (v == kPosInf) return (Wide(1) << 63);
  return v;
}

// Clamps to int64; anything at or beyond the int64 range becomes infinite.
int64_t Narrow(Wide v) {
  if (v >= Wide(kPosInf)) return kPosInf;
  if (v <= Wide(kNegInf)) return kNegInf;
  return static_cast<int64_t>(v);
}

IntBounds DTypeBounds(DType t) {
  if (t == DType::Bool()) return IntBounds{0, 1};
  if (!t.is_int() || t.lanes != 1 || t.bits >= 64) {
    return t.code == kDLUInt ? IntBounds::AtLeast(0) : IntBounds::Everything();
  }
  if (t.code == kDLUInt) return IntBounds{0, (int64_t{1} << t.bits) - 1};
  return IntBounds{-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
}

}  // namespace

std::string IntBounds::ToString() const {
  return "[" + (min == kNegInf ? std::string("-inf") : std::to_string(min)) + ", " +
         (max == kPosInf ? std::string("+inf") : std::to_string(max)) + "]";
}

int64_t FloorDiv(int64_t a, int64_t c) {
  int64_t q = a / c;
  if ((a % c != 0) && ((a < 0) != (c < 0))) --q;
  return q;
}

int64_t FloorMod(int64_t a, int64_t c) {
  int64_t r = a % c;
  if (r != 0 && ((r < 0) != (c < 0))) r += c;
  return r;
}

IntBounds BoundsAdd(IntBounds a, IntBounds b) {
  IntBounds r;
  r.min = (a.min == kNegInf || b.min == kNegInf) ? kNegInf : Narrow(Wide(a.min) + b.min);
  r.max = (a.max == kPosInf || b.max == kPosInf) ? kPosInf : Narrow(Wide(a.max) + b.max);
  return r;
}

IntBounds BoundsNeg(IntBounds a) {
  IntBounds r;
  r.min = a.max == kPosInf ? kNegInf : Narrow(-Wide(a.max));
  r.max = a.min == kNegInf ? kPosInf : Narrow(-Wide(a.min));
  return r;
}

IntBounds BoundsMul(IntBounds a, IntBounds b) {
  const Wide c[4] = {Widen(a.min) * Widen(b.min), Widen(a.min) * Widen(b.max), Widen(a.max) * Widen(b.min),
                     Widen(a.max) * Widen(b.max)};
  return IntBounds{Narrow(*std::min_element(c, c + 4)), Narrow(*std::max_element(c, c + 4))};
}

IntBounds BoundsFloorDivConst(IntBounds a, int64_t c) {
  KILN_CHECK(c != 0, "division by zero in bounds");
  // floordiv is monotone in the numerator: increasing for c > 0, decreasing for c < 0.
  // Infinite endpoints stay infinite (with the sign flipped for c < 0); the
  // finite ones cannot overflow because kNegInf itself is the only int64 whose
  // division by -1 would.
  auto div = [c](int64_t v) -> int64_t {
    if (v == kNegInf) return c > 0 ? kNegInf : kPosInf;
    if (v == kPosInf) return c > 0 ? kPosInf : kNegInf;
    return FloorDiv(v, c);
  };
  int64_t x = div(a.min), y = div(a.max);
  return c > 0 ? IntBounds{x, y} : IntBounds{y, x};
}

IntBounds BoundsFloorModConst(IntBounds a, int64_t c) {
  KILN_CHECK(c != 0, "modulo by zero in bounds");
  IntBounds full = c > 0 ? IntBounds{0, c - 1} : IntBounds{c + 1, 0};
  // Inside one period the value is the numerator itself.
  if (a.min != kNegInf && a.max != kPosInf && FloorDiv(a.min, c) == FloorDiv(a.max, c)) {
    int64_t base = FloorDiv(a.min, c);
    if (base == 0) return a;
    return IntBounds{std::min(FloorMod(a.min, c), FloorMod(a.max, c)), std::max(FloorMod(a.min, c), FloorMod(a.max, c))};
  }
  return full;
}

IntBounds BoundsUnion(IntBounds a, IntBounds b) { return IntBounds{std::min(a.min, b.min), std::max(a.max, b.max)}; }

IntBounds BoundsIntersect(IntBounds a, IntBounds b) {
  return IntBounds{std::max(a.min, b.min), std::min(a.max, b.max)};
}

IntBounds ConstIntBound(const ir::PrimExpr& e, const VarBounds& vars) {
  using namespace ir;
  const IntBounds type_bounds = DTypeBounds(e.dtype());
  IntBounds r = IntBounds::Everything();
  switch (e->kind()) {
    case TirKind::kIntImm: return IntBounds::Const(e.as<IntImmNode>()->value);
    case TirKind::kVar: {
      auto it = vars.find(e.as<VarNode>());
      if (it != vars.end()) r = it->second;
      break;
    }
    case TirKind::kAdd:
    case TirKind::kSub:
    case TirKind::kMul:
    case TirKind::kFloorDiv:
    case TirKind::kFloorMod:
    case TirKind::kMin:
    case TirKind::kMax: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      if (!n->a.dtype().is_int()) break;
      IntBounds a = ConstIntBound(n->a, vars), b = ConstIntBound(n->b, vars);
      switch (e->kind()) {
        case TirKind::kAdd: r = BoundsAdd(a, b); break;
        case TirKind::kSub: r = BoundsAdd(a, BoundsNeg(b)); break;
        case TirKind::kMul: r = BoundsMul(a, b); break;
        case TirKind::kFloorDiv:
          if (b.is_const() && b.min != 0) r = BoundsFloorDivConst(a, b.min);
          break;
        case TirKind::kFloorMod:
          if (b.is_const() && b.min != 0) r = BoundsFloorModConst(a, b.min);
          break;
        case TirKind::kMin: r = IntBounds{std::min(a.min, b.min), std::min(a.max, b.max)}; break;
        case TirKind::kMax: r = IntBounds{std::max(a.min, b.min), std::max(a.max, b.max)}; break;
        default: break;
      }
      break;
    }
    case TirKind::kCast: {
      const PrimExpr& v = e.as<CastNode>()->value;
      if (v.dtype().is_int()) {
        IntBounds inner = ConstIntBound(v, vars);
        // Only a cast that cannot wrap keeps the operand's bounds.
        if (inner.min >= type_bounds.min && inner.max <= type_bounds.max) r = inner;
      }
      break;
    }
    case TirKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      r = BoundsUnion(ConstIntBound(n->true_value, vars), ConstIntBound(n->false_value, vars));
      break;
    }
    default: break;
  }
  return BoundsIntersect(r, type_bounds);
}

}  // namespace arith
}  // namespace kiln
