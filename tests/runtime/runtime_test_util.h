// Helpers for the end-to-end runtime suites: load the models compiled at
// build time (tests/runtime/CMakeLists.txt), make inputs, compare outputs.
// These binaries link the runtime only, never the compiler, so they build and
// run under ThreadSanitizer without an instrumented compiler.
#ifndef KILN_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
#define KILN_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/any.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace runtime_test {

// The module compiled from tests/runtime's model `name` ("mlp_batch4").
Result<std::shared_ptr<const vm::Module>> LoadModel(const std::string& name, const vm::LoadOptions& options = {});

// A float32 tensor of `shape` with values in [-1, 1) from a fixed generator.
Tensor RandomTensor(const std::vector<int64_t>& shape, uint64_t seed);

// Random float32 arguments for `function`, symbolic dimensions taken from
// `dims` ({"n", 3}); seeds derive from `seed`.
Result<std::vector<Any>> RandomArgs(const vm::Module& module, const std::string& function,
                                    const std::map<std::string, int64_t>& dims, uint64_t seed);

// Same dtype, same shape, same bytes.
bool BitwiseEqual(const Tensor& a, const Tensor& b);

// A copy that owns its bytes (results may be reused by the context once
// released; a copy keeps a reference value).
Tensor Copy(const Tensor& t);

// Counts every operator new (all forms) made by any thread between Start and
// Stop; replaces the global operator new/delete of the test binary.
void StartCountingNew();
uint64_t StopCountingNew();

}  // namespace runtime_test
}  // namespace kiln

#endif  // KILN_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
