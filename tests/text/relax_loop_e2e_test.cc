// vm.builtin.loop written in Relax text (R.call_packed naming the builtin and
// a body function of the module): a loop runs, and each run-time error of
// the builtin fires on operands the ONNX importer never produces.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

const char* kSource = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def double(i: R.Tensor((), dtype="int64"), c: R.Tensor((), dtype="bool"), s: R.Tensor((2,), dtype="float32")) -> R.Tuple(R.Tensor((), dtype="bool"), R.Tensor((2,), dtype="float32")):
        t = R.add(s, s)
        r = (c, t)
        return r

    @R.function(private=True)
    def only_state(i: R.Tensor((), dtype="int64"), c: R.Tensor((), dtype="bool"), s: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return s

    @R.function(private=True)
    def shape_out(s: R.Tensor((2,), dtype="float32"), row: R.Tensor((2,), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32"), R.Shape([2])):
        r = (s, R.shape([2]))
        return r

    @R.function
    def main(m: R.Tensor((), dtype="int64"), x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.double, R.prim_value(2), R.prim_value(1), R.prim_value(0), R.prim_value(0), m, R.prim_value(0), x, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32")),))
        y: R.Tensor((2,), dtype="float32") = r[0]
        return y

    @R.function
    def miscounted(m: R.Tensor((), dtype="int64"), x: R.Tensor((2,), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.only_state, R.prim_value(2), R.prim_value(1), R.prim_value(0), R.prim_value(0), m, R.prim_value(0), x, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32")),))
        return r

    @R.function
    def float_trips(m: R.Tensor((), dtype="float32"), x: R.Tensor((2,), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.double, R.prim_value(2), R.prim_value(1), R.prim_value(0), R.prim_value(0), m, R.prim_value(0), x, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32")),))
        return r

    @R.function
    def endless(x: R.Tensor((2,), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.double, R.prim_value(0), R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(0), R.prim_value(0), x, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32")),))
        return r

    @R.function
    def shape_cond(x: R.Tensor((2,), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.double, R.prim_value(4), R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(0), R.shape([1]), x, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32")),))
        return r

    @R.function
    def scalar_scan(x: R.Tensor((2,), dtype="float32"), z: R.Tensor((), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.shape_out, R.prim_value(1), R.prim_value(1), R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(0), x, z, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32")),))
        return r

    @R.function
    def no_zero_shape(x: R.Tensor((2,), dtype="float32"), rows: R.Tensor(("n", 2), dtype="float32")) -> R.Tuple(R.Tensor((2,), dtype="float32"), R.Tensor(ndim=2, dtype="float32")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.shape_out, R.prim_value(1), R.prim_value(1), R.prim_value(1), R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(0), R.prim_value(2), R.prim_value(32), R.prim_value(1), x, rows, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="float32"), R.Tensor(ndim=2, dtype="float32")),))
        return r
)";

Tensor Scalar(DType dtype, double v) {
  Tensor t = Tensor::Empty(Span<const int64_t>(), dtype).value();
  if (dtype == DType::Int64()) {
    *t.data<int64_t>() = static_cast<int64_t>(v);
  } else {
    *t.data<float>() = static_cast<float>(v);
  }
  return t;
}

Tensor Floats(std::vector<int64_t> shape, float v) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = v + static_cast<float>(i);
  return t;
}

std::string Error(const std::shared_ptr<const vm::Module>& module, const std::string& fn, std::vector<Any> args) {
  auto ctx = module->CreateContext();
  Any result;
  Status s = ctx->Invoke(fn, args, &result);
  return s.ok() ? "ok" : s.message();
}

TEST(RelaxLoopE2E, BuiltinFromTextRunsItsBody) {
  auto module = CompileAndLoad(kSource, "loop.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  for (int64_t m : {0, 1, 5}) {
    Any result;
    std::vector<Any> args = {Scalar(DType::Int64(), static_cast<double>(m)), Floats({2}, 1)};
    Status s = ctx->Invoke("main", args, &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Tensor y = result.tensor();
    EXPECT_EQ(y.data<float>()[0], static_cast<float>(1 << m));
    EXPECT_EQ(y.data<float>()[1], static_cast<float>(2 << m));
  }
}

TEST(RelaxLoopE2E, RunTimeErrorsOfTheBuiltin) {
  auto module = CompileAndLoad(kSource, "loop.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto expect = [&](const std::string& fn, std::vector<Any> args, const std::string& text) {
    std::string err = Error(*module, fn, std::move(args));
    EXPECT_NE(err.find(text), std::string::npos) << "want: " << text << "\ngot: " << err;
  };
  expect("miscounted", {Scalar(DType::Int64(), 2), Floats({2}, 1)},
         "miscounted: vm.builtin.loop: the body returned 1 values, expected 2");
  expect("float_trips", {Scalar(DType::Float32(), 2), Floats({2}, 1)},
         "float_trips: vm.builtin.loop: the trip count must be an int or one int64, got");
  expect("endless", {Floats({2}, 1)}, "endless: vm.builtin.loop: no trip count, scan input or condition would end the loop");
  expect("shape_cond", {Floats({2}, 1)}, "shape_cond: vm.builtin.loop: the condition must be an int or a tensor, got");
  expect("scalar_scan", {Floats({2}, 1), Scalar(DType::Float32(), 2)},
         "scalar_scan: vm.builtin.loop: scan input 0 must be a compact tensor of rank >= 1, got");
  expect("no_zero_shape", {Floats({2}, 1), Floats({0, 2}, 0)}, "no_zero_shape: vm.builtin.loop: expected a shape, got");
  expect("no_zero_shape", {Floats({2}, 1), Floats({3, 2}, 0)},
         "no_zero_shape: vm.builtin.loop: scan output 0 must be a compact tensor, got");
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
