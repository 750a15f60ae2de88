// A small tensor-expression builder: describes one output tensor as a function
// of index variables (optionally with a sum reduction) and builds the TIR
// PrimFunc that computes it, in the block form TVM's te.create_prim_func
// produces (one block per output element, T.init for reductions).
//
// Legalization uses it to turn Relax operators into kernels.
#ifndef KILN_COMPILER_RELAX_TE_COMPUTE_H_
#define KILN_COMPILER_RELAX_TE_COMPUTE_H_

#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace te {

struct TensorSpec {
  std::string name;
  std::vector<ir::PrimExpr> shape;  // may use symbolic Vars of the caller
  DType dtype;
};

struct ComputeSpec {
  std::string func_name;
  std::string block_name;
  std::vector<TensorSpec> inputs;
  TensorSpec output;
  // Extents of the reduction axes (a sum), in the caller's variables. Empty: no reduction.
  std::vector<ir::PrimExpr> reduce_extents;
  // The value for one output element. `ins` are the PrimFunc's input buffers,
  // `spatial` one index per output dimension, `reduce` one per reduction axis.
  // With reductions, the result is added to the accumulator.
  std::function<ir::PrimExpr(const std::vector<ir::Buffer>& ins, const std::vector<ir::PrimExpr>& spatial,
                             const std::vector<ir::PrimExpr>& reduce)>
      fcompute;
  ir::PrimExpr reduce_init;  // value before the first term (e.g. 0.0f)
};

// The caller's symbolic variables are replaced by PrimFunc-local variables of
// the same names, bound from the buffer shapes when the kernel runs; one that
// is not a plain dimension of some input or output buffer becomes an int64
// scalar parameter after the buffers (te_builder.h).
Result<ir::PrimFunc> BuildComputePrimFunc(const ComputeSpec& spec);

}  // namespace te
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_TE_COMPUTE_H_
