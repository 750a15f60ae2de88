// Kernel costs: how many arithmetic operations a generated kernel performs and
// how many bytes its parameters hold, as the compiler wrote them into the
// .vmfb (NativeLibrary.kernel_costs, compiler/tir/kernel_cost.h) for the
// profiler's roofline (kiln-bench --profile). A kernel compiled once for
// symbolic shapes has one cost for every shape, so each count is an integer
// expression of the call's arguments, in this grammar:
//
//   expr := term (('+' | '-') term)*
//   term := atom (('*' | '//' | '%') atom)*
//   atom := INT | '$' P | '$' P '.' D | '(' expr ')' | ('min' | 'max') '(' expr ',' expr ')'
//
// `$P` is the value of scalar parameter P, `$P.D` dimension D of tensor
// parameter P (parameters numbered from 0, in the kernel's order, outputs
// included); `//` and `%` round toward negative infinity. An empty string
// means unknown. Evaluated in double, so counts past 2^53 lose only precision.
#ifndef KILN_RUNTIME_KERNEL_COST_H_
#define KILN_RUNTIME_KERNEL_COST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// One argument of a kernel call, as far as costs need it.
struct KernelCostArg {
  bool is_tensor = false;
  std::vector<int64_t> dims;  // tensor
  int64_t value = 0;          // scalar
};

// The value of `expr` for `args`; nullopt when the text is empty or malformed,
// or names a parameter the call does not have (a tensor where a scalar is
// expected, a dimension past the rank).
std::optional<double> EvaluateKernelCost(const std::string& expr, const std::vector<KernelCostArg>& args);

}  // namespace kiln

#endif  // KILN_RUNTIME_KERNEL_COST_H_
