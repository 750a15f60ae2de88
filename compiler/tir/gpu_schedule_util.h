// Helpers the GPU schedules (gpu_schedule.cc, gpu_reduce_schedule.cc,
// gpu_matmul_schedule.cc) share to build thread-bound TIR.
#ifndef KILN_COMPILER_TIR_GPU_SCHEDULE_UTIL_H_
#define KILN_COMPILER_TIR_GPU_SCHEDULE_UTIL_H_

#include <string>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {
namespace gpu {

// `e` as an int64 expression (literals folded).
ir::PrimExpr AsI64(const ir::PrimExpr& e);
// ceil(a / b) for b > 0, folded when a is a literal.
ir::PrimExpr CeilDiv(const ir::PrimExpr& a, int64_t b);
// The product of the extents of loops[first..] (folded where constant).
ir::PrimExpr ExtentProduct(const std::vector<const ir::ForNode*>& loops, size_t first);
// Lets that recompute each loop's variable (plus its min) from a fused
// int64 index `fused` (innermost fastest) around `body`.
ir::Stmt LetFused(const std::vector<const ir::ForNode*>& loops, const ir::PrimExpr& fused, ir::Stmt body);
// `value` (int64) as a value of `v`'s dtype.
ir::PrimExpr OfType(const ir::Var& v, const ir::PrimExpr& value);
// A threadIdx.x loop of `threads` iterations.
ir::Stmt ThreadLoop(const ir::Var& tx, int64_t threads, ir::Stmt body);
// A barrier of the block's threads (tvm_storage_sync).
ir::Stmt Barrier();
// A new buffer of `shape` in `scope`, with a data variable of its own.
ir::Buffer NewBuffer(const std::string& name, DType dtype, std::vector<ir::PrimExpr> shape, const std::string& scope);
// Element by element structurally equal index lists.
bool SameIndices(const std::vector<ir::PrimExpr>& a, const std::vector<ir::PrimExpr>& b);

// A reduction's body inside its loops `ks`: `if <first iteration of ks>:
// out[i] = init` then `out[i] = <update>`, both to the same element of one
// buffer of float32 or int32. Null members when `inner` is not that.
struct InitAndUpdate {
  const ir::BufferStoreNode* init = nullptr;
  const ir::BufferStoreNode* update = nullptr;
};
InitAndUpdate MatchInitAndUpdate(const ir::Stmt& inner, const std::vector<const ir::ForNode*>& ks);

}  // namespace gpu
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_GPU_SCHEDULE_UTIL_H_
