// The cost of a kernel for the profiler's roofline (kiln-bench --profile): the
// arithmetic operations it performs and the bytes of its parameters, as
// expressions of its parameters in the text form of runtime/kernel_cost.h, so
// that a kernel compiled for symbolic shapes gets its counts at every shape.
//
// Counted on the kernel before scheduling (the legalized, fused TIR), so that
// the count is the work of the operator, not of a schedule's padding or
// recomputation:
// - flops: for every store, the arithmetic nodes of its value (+ - * / min
//   max and each intrinsic call such as exp or tanh; not index arithmetic,
//   casts, comparisons, or the conditions of selects) times the trip count of the loops around
//   it. A reduction `C = C + A * B` counts 2 per iteration, a matmul 2*M*N*K.
//   Both branches of an `if` count as their larger one.
// - bytes: the sizes of the buffer parameters (inputs and outputs), i.e. the
//   traffic of a kernel that reads every input and writes every output once.
// Either is empty when it cannot be written as an expression of the
// parameters (a loop whose extent depends on an outer loop, a symbolic
// variable that is not a parameter or a parameter's dimension).
#ifndef KILN_COMPILER_TIR_KERNEL_COST_H_
#define KILN_COMPILER_TIR_KERNEL_COST_H_

#include <map>
#include <string>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

struct KernelCost {
  std::string flops;  // "" when unknown
  std::string bytes;
};

KernelCost ComputeKernelCost(const ir::PrimFunc& f);

// `e` in the grammar of runtime/kernel_cost.h, each variable written as its
// entry of `refs` ("$0.1", "$3"); false when a variable has none or a node has
// no form there. (The GPU launch table's grid sizes use it too.)
bool PrintKernelCostExpr(const ir::PrimExpr& e, const std::map<const ir::VarNode*, std::string>& refs,
                         std::string* out);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_KERNEL_COST_H_
