// SimplifySymbolicDivisions: index arithmetic of reshapes and transposes on
// symbolic shapes, without the divisions.
//
// A reshape legalized on symbolic extents reads its source at
//   (flat // (W * 8)) % (H * 8), flat % (W * 8), ...  with
//   flat = H * 8 * (W * 8) * i0 + ... + W * 8 * i4 + i5
// The simplifier (compiler/arith) only divides by constants, so each element
// paid several 64-bit divisions by run-time values (PP-OCRv4's detector
// head, a pixel shuffle after ConvTranspose: about a third of the model's
// time compiled with symbolic H and W). With the loops around it known,
//   floordiv(Q * d + r, d) = Q  and  floormod(Q * d + r, d) = r
// when every term of Q * d has the factors of d (matched structurally:
// products of the same atoms, a constant factor divisible by d's) and r is
// a loop variable whose loop runs over [0, d) (its extent proven equal to
// d), floordiv(v, c) with v running over [0, d * c), floormod(x, d), or
// nothing; otherwise floordiv(Q * d + r, d) = Q + floordiv(r, d) and
// floormod(Q * d + r, d) = floormod(r, d) (exact for every r), so a flat
// index keeps one division by the row length and the divisions of its
// result fold (floormod(i // w, h) = i // w with i over [0, h * w)).
// Divisions by constants are left to arith::Simplify with the loop
// variables' bounds.
// Then a loop `for i in [0, E)` whose body divides i by one symbolic d
// (floordiv(i, d), floormod(i, d), no other divisor of i) with E = h * d
// structurally is split into `for i_o in [0, h): for i_i in [0, d)`, those
// divisions becoming i_o and i_i and i itself i_o * d + i_i: a concat +
// reshape flattening symbolic H and W (YOLOv8's detection head) copies rows
// with a vector loop instead of dividing every lane's index.
// Only functions with a symbolic buffer extent are rewritten. Pre: lowered
// TIR, loops serial (before the default schedule picks their kinds).
#ifndef KILN_COMPILER_TIR_SYMBOLIC_DIVISIONS_H_
#define KILN_COMPILER_TIR_SYMBOLIC_DIVISIONS_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// The function with those divisions rewritten; `func` itself when none was.
ir::PrimFunc SimplifySymbolicDivisions(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SYMBOLIC_DIVISIONS_H_
