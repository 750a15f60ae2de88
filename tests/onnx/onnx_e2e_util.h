// Helpers for end-to-end tests of imported ONNX models: import a model built
// with OnnxModelBuilder, compile it, load it, run `main`.
#ifndef KILN_TESTS_ONNX_ONNX_E2E_UTIL_H_
#define KILN_TESTS_ONNX_ONNX_E2E_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/onnx/onnx_importer.h"
#include "compiler/onnx/onnx_model_builder.h"
#include "runtime/any.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace onnx {
namespace testing {

// Imports, compiles and loads the model.
Result<std::shared_ptr<const vm::Module>> CompileOnnx(const OnnxModelBuilder& m, const ImportOptions& import = {},
                                                      const driver::CompileOptions& options = {});
// Loads compiled .vmfb bytes (64-byte aligned copy).
Result<std::shared_ptr<const vm::Module>> LoadVmfb(const std::vector<uint8_t>& bytes);

// Runs main(args); the results as a list (one tensor, or a tuple's fields).
Result<std::vector<Tensor>> RunMain(const std::shared_ptr<const vm::Module>& module, std::vector<Tensor> args);

// Float tensors from values.
Tensor F32(std::vector<int64_t> shape, const std::vector<float>& v);
Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& v);
// Deterministic values in [lo, hi).
std::vector<float> Ramp(int64_t n, float lo, float hi, uint64_t seed = 1);
std::vector<float> Values(const Tensor& t);  // any float/int/bool dtype as float
// A scalar bool tensor; n zeros.
Tensor Bool(bool v);
std::vector<float> Zeros(int64_t n);

// The imported module as text; "" and the message in *error when the import
// fails.
std::string ImportText(const OnnxModelBuilder& m, const ImportOptions& options = {}, std::string* error = nullptr);
// The import's error message; "" when the model imports.
std::string ImportError(const OnnxModelBuilder& m);
// Compiles the model and runs main(args): the run's message ("" when it ran;
// a failure that is not kInvalidArgument fails the test).
std::string RunError(const OnnxModelBuilder& m, std::vector<Tensor> args);

}  // namespace testing
}  // namespace onnx
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_ONNX_E2E_UTIL_H_
