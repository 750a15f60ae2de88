// Test scaffolding shared by the schedule tests that compile Relax text
// through the driver, run it on the VM and compare with a double-precision
// reference computed in the test (conv, conv1d, symbolic conv, matmul,
// reduce). Test-only: failures are reported through GoogleTest.
#ifndef KILN_COMPILER_TIR_COMPILED_TEST_UTIL_H_
#define KILN_COMPILER_TIR_COMPILED_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/ir/tir.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace test_util {

// Compile options planned for `threads` threads (Winograd as `winograd`).
driver::CompileOptions ThreadsOptions(int threads, bool winograd = true);

// `count` deterministic floats, uniform in [-scale, scale), from `seed`.
std::vector<float> RandomFloats(int64_t count, uint64_t seed, float scale = 1.0f);

// A float32 tensor of `shape` holding `data`.
Tensor FloatTensor(const std::vector<int64_t>& shape, const std::vector<float>& data);

// `source` parsed, compiled with `options` and loaded (64-byte aligned, as a
// file would be) for `load_threads` threads (0: the VM's default); null
// after a test failure naming the step that failed.
std::shared_ptr<const vm::Module> CompileAndLoad(const std::string& source, const driver::CompileOptions& options,
                                                 int load_threads);

// main(args...) on a fresh context: its result tensor, or the error.
Result<Tensor> InvokeMain(const vm::Module& mod, const std::vector<Any>& args);

// `source` parsed and lowered with `options`: its first PrimFunc whose name
// contains `name_part`; null after a test failure naming the step.
ir::PrimFunc LowerPrimFunc(const std::string& source, const driver::CompileOptions& options,
                           const std::string& name_part);

// What a scheduled kernel's tiles look like: the extents of the vectorized
// loops of static width (inside an unrolled loop) that hold an fma; guarded
// reads (if_then_else); loop depth; unrolled and parallel loops; and
// read-modify-write stores to buffers other than the tiles' accumulators
// ("acc", or any "local" buffer), which only the naive nest's C[..] = C[..] + .. makes.
struct TileCensus {
  std::vector<int64_t> fma_widths;
  int guarded = 0, max_depth = 0, parallel = 0, global_updates = 0;
};
TileCensus CountTiles(const ir::PrimFunc& func);

}  // namespace test_util
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_COMPILED_TEST_UTIL_H_
