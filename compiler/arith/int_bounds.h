// Constant integer bounds of expressions: the interval every value of an
// integer expression lies in, given known bounds of its variables.
//
// Infinity is represented by INT64_MIN / INT64_MAX (kNegInf / kPosInf);
// arithmetic saturates to them, so a bound is always sound, at worst unknown.
// Thread-safe: pure functions.
#ifndef KILN_COMPILER_ARITH_INT_BOUNDS_H_
#define KILN_COMPILER_ARITH_INT_BOUNDS_H_

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "compiler/ir/tir.h"

namespace kiln {
namespace arith {

constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

// The closed interval [min, max]; an endpoint at kNegInf / kPosInf is unbounded.
struct IntBounds {
  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static IntBounds Everything() { return IntBounds{}; }
  static IntBounds Const(int64_t v) { return IntBounds{v, v}; }
  static IntBounds AtLeast(int64_t v) { return IntBounds{v, kPosInf}; }
  static IntBounds Range(int64_t lo, int64_t hi) { return IntBounds{lo, hi}; }

  bool is_const() const { return min == max && min != kNegInf && max != kPosInf; }
  bool operator==(const IntBounds& o) const { return min == o.min && max == o.max; }
  // "[0, +inf]"
  std::string ToString() const;
};

// Known bounds of variables, keyed by node (shape variables, loop variables).
using VarBounds = std::map<const ir::VarNode*, IntBounds>;

// Interval arithmetic, saturating at infinity.
IntBounds BoundsAdd(IntBounds a, IntBounds b);
IntBounds BoundsNeg(IntBounds a);
IntBounds BoundsMul(IntBounds a, IntBounds b);
IntBounds BoundsFloorDivConst(IntBounds a, int64_t c);  // c != 0
IntBounds BoundsFloorModConst(IntBounds a, int64_t c);  // c != 0
IntBounds BoundsUnion(IntBounds a, IntBounds b);
IntBounds BoundsIntersect(IntBounds a, IntBounds b);

// Bounds of an integer (or bool) expression. Unknown variables and
// unsupported nodes are unbounded, narrowed to what their dtype can hold.
IntBounds ConstIntBound(const ir::PrimExpr& e, const VarBounds& vars = {});

// Floor division and modulo on int64 (round toward negative infinity).
// c != 0; FloorDiv(INT64_MIN, -1) is the caller's problem.
int64_t FloorDiv(int64_t a, int64_t c);
int64_t FloorMod(int64_t a, int64_t c);

}  // namespace arith
}  // namespace kiln

#endif  // KILN_COMPILER_ARITH_INT_BOUNDS_H_
