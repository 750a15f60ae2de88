// Helpers for end-to-end tests: compile .relax text in memory, load it, and
// compare against plain C++ references.
#ifndef KILN_TESTS_E2E_E2E_UTIL_H_
#define KILN_TESTS_E2E_E2E_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace e2e {

std::string ReadFile(const std::string& path);

// Parses, compiles and serializes `source`; the bytes of the .vmfb.
Result<std::vector<uint8_t>> CompileToBytes(const std::string& source, const std::string& file_name,
                                            const driver::CompileOptions& options = {});

// Compiles and loads. The module keeps its own copy of the bytes.
Result<std::shared_ptr<const vm::Module>> CompileAndLoad(const std::string& source, const std::string& file_name,
                                                         const driver::CompileOptions& options = {});
// The same for a module already parsed (or assembled by a test).
Result<std::shared_ptr<const vm::Module>> CompileAndLoad(const ir::IRModule& mod,
                                                         const driver::CompileOptions& options = {});

// A tensor of `shape` with values in [-1, 1) from a fixed generator.
Tensor RandomTensor(std::vector<int64_t> shape, uint64_t seed);

// max |a - b| over all elements; +inf on shape mismatch.
float MaxAbsDiff(const Tensor& a, const Tensor& b);

// y = relu(x @ w0^T + b0) @ w1^T + b1, in plain loops.
Tensor ReferenceMlp(const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& w1, const Tensor& b1);

}  // namespace e2e
}  // namespace kiln

#endif  // KILN_TESTS_E2E_E2E_UTIL_H_
