// A copy of a PrimFunc's body for use inside another PrimFunc (fuse_tir):
// its buffer parameters become buffers of the enclosing function, its shape
// variables the matching dimensions of those buffers, and everything it
// defines (loop variables, block iteration variables, let variables, allocated
// buffers) a fresh variable or buffer, so that two instances of one PrimFunc
// never share a definition.
//
// Thread-compatible: `block_names` is the caller's.
#ifndef KILN_COMPILER_FUSION_PRIM_FUNC_INSTANCE_H_
#define KILN_COMPILER_FUSION_PRIM_FUNC_INSTANCE_H_

#include <set>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace fusion {

struct PrimFuncInstance {
  // The statements of the function: the body of its root block when it has
  // one (a block with no iteration variables), else the whole body.
  ir::Stmt body;
  // Buffers the root block allocated (fresh copies); the caller allocates them.
  std::vector<ir::Buffer> root_allocs;
};

// `args` holds one buffer per buffer parameter of `func` and `scalars` one
// value per scalar parameter after them (call_tir's tir_vars), in order. A
// scalar parameter becomes its value; a shape variable of a parameter buffer
// that is a plain dimension takes the argument's dimension; every dimension
// must then be provably equal to the argument's, and dtypes and ranks must
// match, else InvalidArgument naming the kernel, the parameter and both
// shapes. Nested block names that are already in `block_names` get a suffix
// (_1, _2, ...); all names used are added to it.
// `output_promised`: the last buffer of `args` is the call's result inside
// the fused kernel, and the caller's out_sinfo promises its shape; its
// dimensions need only not be provably different from the parameter's.
// fuse-ops makes such calls when it moves a run-time shape check before the
// kernel (hoist_shape_checks.h: the kernel's (h // 16) * 2 rows were checked
// equal to h // 8 before the fused kernel runs), which a proof cannot see.
Result<PrimFuncInstance> InstantiatePrimFunc(const ir::PrimFunc& func, const std::vector<ir::Buffer>& args,
                                             const std::vector<ir::PrimExpr>& scalars,
                                             std::set<std::string>* block_names, bool output_promised = false);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_PRIM_FUNC_INSTANCE_H_
