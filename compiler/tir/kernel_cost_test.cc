// ComputeKernelCost on the kernels LegalizeOps makes: the operation and byte
// counts of a matmul, a conv2d and an elementwise add are exact, as
// expressions of the parameters that evaluate (runtime/kernel_cost.h) at any
// value of a symbolic dimension.
#include "compiler/tir/kernel_cost.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"
#include "runtime/kernel_cost.h"

namespace kiln {
namespace tir {
namespace {

// The one PrimFunc that legalizing `main(...) { r = value }` makes.
ir::PrimFunc Legalized(const std::string& params, const std::string& value) {
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + params +
                    "):\n        n = T.int64()\n        r = " + value + "\n        return r\n";
  Result<ir::IRModule> m = text::ParseModule(src, "t.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return nullptr;
  m = relax::InferStructInfo(*m);
  EXPECT_TRUE(m.ok()) << m.status().message();
  m = relax::LegalizeOps(*m, relax::LegalizeOptions{});
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return nullptr;
  ir::PrimFunc found;
  for (const auto& e : m->entries)
    if (e.prim) {
      EXPECT_FALSE(found) << "more than one kernel";
      found = e.prim;
    }
  return found;
}

KernelCostArg T(std::vector<int64_t> dims) {
  KernelCostArg a;
  a.is_tensor = true;
  a.dims = std::move(dims);
  return a;
}

double Eval(const std::string& expr, const std::vector<KernelCostArg>& args) {
  std::optional<double> v = EvaluateKernelCost(expr, args);
  EXPECT_TRUE(v.has_value()) << "'" << expr << "' does not evaluate";
  return v.value_or(-1);
}

TEST(KernelCost, MatmulWithASymbolicRowCount) {
  ir::PrimFunc f = Legalized(R"(x: R.Tensor(("n", 64), dtype="float32"), w: R.Tensor((64, 32), dtype="float32"))",
                             "R.matmul(x, w)");
  ASSERT_TRUE(f);
  KernelCost c = ComputeKernelCost(f);
  for (int64_t n : {1, 7, 100}) {
    std::vector<KernelCostArg> args = {T({n, 64}), T({64, 32}), T({n, 32})};
    EXPECT_EQ(Eval(c.flops, args), 2.0 * n * 64 * 32) << c.flops;
    EXPECT_EQ(Eval(c.bytes, args), 4.0 * (n * 64 + 64 * 32 + n * 32)) << c.bytes;
  }
}

TEST(KernelCost, Conv2dCountsTheMultiplyAddsNotThePadding) {
  ir::PrimFunc f = Legalized(
      R"(x: R.Tensor((2, 8, 16, 16), dtype="float32"), w: R.Tensor((4, 8, 3, 3), dtype="float32"))",
      "R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1])");
  ASSERT_TRUE(f);
  KernelCost c = ComputeKernelCost(f);
  std::vector<KernelCostArg> args = {T({2, 8, 16, 16}), T({4, 8, 3, 3}), T({2, 4, 16, 16})};
  EXPECT_EQ(Eval(c.flops, args), 2.0 * 2 * 4 * 16 * 16 * 8 * 3 * 3) << c.flops;
  EXPECT_EQ(Eval(c.bytes, args), 4.0 * (2 * 8 * 16 * 16 + 4 * 8 * 3 * 3 + 2 * 4 * 16 * 16)) << c.bytes;
}

TEST(KernelCost, ElementwiseAddWithBroadcast) {
  ir::PrimFunc f = Legalized(R"(x: R.Tensor(("n", 16), dtype="float32"), b: R.Tensor((16,), dtype="float32"))",
                             "R.add(x, b)");
  ASSERT_TRUE(f);
  KernelCost c = ComputeKernelCost(f);
  for (int64_t n : {3, 50}) {
    std::vector<KernelCostArg> args = {T({n, 16}), T({16}), T({n, 16})};
    EXPECT_EQ(Eval(c.flops, args), 16.0 * n) << c.flops;
    EXPECT_EQ(Eval(c.bytes, args), 4.0 * (n * 16 + 16 + n * 16)) << c.bytes;
  }
}

TEST(KernelCost, ExpressionsNameOnlyTheCallsArguments) {
  // A reference to a parameter the call lacks, or to a scalar as a tensor,
  // is unknown rather than a guess.
  std::vector<KernelCostArg> args = {T({2, 3})};
  EXPECT_FALSE(EvaluateKernelCost("$1.0", args).has_value());
  EXPECT_FALSE(EvaluateKernelCost("$0.2", args).has_value());
  EXPECT_FALSE(EvaluateKernelCost("$0", args).has_value());
  EXPECT_FALSE(EvaluateKernelCost("(2 * $0.0", args).has_value());
  EXPECT_FALSE(EvaluateKernelCost("", args).has_value());
  KernelCostArg s;
  s.value = 7;
  args.push_back(s);
  EXPECT_EQ(Eval("(max($0.0, $1) - min(5, ($0.1 * 4))) // 2 + (0 - 9) % 4", args), 1.0 + 3.0);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
