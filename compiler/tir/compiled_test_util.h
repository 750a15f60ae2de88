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
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace test_util {

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

}  // namespace test_util
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_COMPILED_TEST_UTIL_H_
