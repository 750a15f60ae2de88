// Test helpers for tir::Schedule: parse a PrimFunc from TVMScript text, and
// check that a scheduled function computes the same numbers as the original
// (both lowered with LowerBlocks, built with the LLVM codegen, run on the
// same random inputs; every buffer parameter is compared afterwards).
#ifndef KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_TEST_UTIL_H_
#define KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace tir {
namespace testing {

// The PrimFunc `name` of the module in `source` (a module or a bare
// "@T.prim_func def ..." which is wrapped into one).
ir::PrimFunc ParseFunc(const std::string& source, const std::string& name);

// OK when `scheduled` computes what `original` computes (max abs difference
// <= 1e-4 relative to the magnitude); every parameter must be a buffer with
// a static float32 shape. `scheduled` may have other buffer shapes when
// `inputs_transform` is not needed (params must keep their shapes).
// nan_stride > 0: every nan_stride-th input element is NaN, and a NaN must
// come out where the original gives one.
Status SameNumbers(const ir::PrimFunc& original, const ir::PrimFunc& scheduled, int64_t nan_stride = 0);

// Runs `f` (lowered with LowerBlocks, built with the LLVM codegen) on the
// random inputs SameNumbers draws (`seed` for the first parameter, then
// seed + 1, ..): `*params` holds every parameter, outputs as `f` left them.
// The parameters' shapes must be static float32 ones.
Status RunOnRandomInputs(const ir::PrimFunc& f, std::vector<kiln::Tensor>* params, uint32_t seed = 1);

// What a function's body holds: loops (vectorized ones among them), buffer
// stores, and allocations with their loop depth and static shape (-1 for a
// symbolic extent).
struct StmtCensus {
  int loops = 0, vectorized = 0, stores = 0, allocates = 0;
  struct Allocation {
    int depth;
    std::vector<int64_t> shape;
  };
  std::vector<Allocation> allocations;
};
StmtCensus CountStmts(const ir::PrimFunc& f);

// The module text of a function, for failure messages.
std::string Print(const ir::PrimFunc& f);

// TVMScript text for tests that write PrimFuncs as strings: an int64
// constant ("T.int64(7)") and a static shape tuple ("(1, 3, 8)"; "(5,)" for
// one dimension, which Python needs to read it as a tuple).
std::string Int64Text(int64_t v);
std::string ShapeText(const std::vector<int64_t>& dims);

}  // namespace testing
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_TEST_UTIL_H_
