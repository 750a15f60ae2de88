// Helpers for operator tests: build a one-function module around an operator
// call, compile it with the whole pipeline, run it on the VM, and compare the
// result with a plain C++ reference computed on doubles.
//
//   auto out = RunMain(OneOpModule({"x: R.Tensor((2, 3), \"float32\")"},
//                                  "R.exp(x)"), {x});
//   EXPECT_TRUE(AllClose(out->at(0), ref, {2, 3}, 1e-5, 1e-5));
#ifndef KILN_TESTS_OPS_OP_TEST_UTIL_H_
#define KILN_TESTS_OPS_OP_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "runtime/tensor.h"

namespace kiln {
namespace optest {

using Shape = std::vector<int64_t>;

// `@I.ir_module class Module: @R.function def main(<params>): ... return r`
// with `r = <expr>` in a dataflow block. Params are written as in TVMScript.
std::string OneOpModule(const std::vector<std::string>& params, const std::string& expr);

// "R.Tensor((2, 3), \"float32\")"
std::string TensorType(const Shape& shape, const std::string& dtype = "float32");

// Compiles `source` and runs `main` on `inputs`. A tuple result is flattened
// into its tensor fields; a tensor result is one element.
Result<std::vector<Tensor>> RunMain(const std::string& source, const std::vector<Tensor>& inputs,
                                    const driver::CompileOptions& options = {});

// A tensor from doubles, converted to `dtype` (float16/32/64, int8/32/64,
// uint8, bool).
Tensor MakeTensor(const Shape& shape, DType dtype, const std::vector<double>& values);
// Values uniform in [lo, hi) from a fixed generator (integers: rounded down).
Tensor RandomTensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -1.0, double hi = 1.0);
// Every element as a double.
std::vector<double> ToDoubles(const Tensor& t);

// Shape and every element within atol + rtol * |want| (NaN matches NaN).
::testing::AssertionResult AllClose(const Tensor& got, const std::vector<double>& want, const Shape& want_shape,
                                    double atol = 1e-5, double rtol = 1e-5);

// Reference helpers over row-major shapes.
int64_t NumElements(const Shape& shape);
// Calls f(index) for every index of `shape` in row-major order.
void ForEachIndex(const Shape& shape, const std::function<void(const Shape&)>& f);
// Row-major offset of `index` in `shape`.
int64_t Offset(const Shape& shape, const Shape& index);
// numpy broadcasting: the offset in `in` (right-aligned, size-1 dims
// broadcast) of the output index `out_index`.
int64_t BroadcastOffset(const Shape& in, const Shape& out_index);
// The broadcast shape of a and b (the test's own, independent of Kiln's).
Shape BroadcastShape(const Shape& a, const Shape& b);

}  // namespace optest
}  // namespace kiln

#endif  // KILN_TESTS_OPS_OP_TEST_UTIL_H_
