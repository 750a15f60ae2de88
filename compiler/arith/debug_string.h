// A compact, human-readable rendering of a PrimExpr for messages and tests:
// "n * 4 + 1", "n // 2", "n % 2", "min(n, 8)", "n < m && m != 0".
// Not a parser format (the TVMScript printer lives in compiler/text).
// Parentheses appear only where precedence needs them. Thread-safe.
#ifndef KILN_COMPILER_ARITH_DEBUG_STRING_H_
#define KILN_COMPILER_ARITH_DEBUG_STRING_H_

#include <string>

#include "compiler/ir/tir.h"

namespace kiln {
namespace arith {

std::string ToDebugString(const ir::PrimExpr& e);

}  // namespace arith
}  // namespace kiln

#endif  // KILN_COMPILER_ARITH_DEBUG_STRING_H_
