// Task extraction: the distinct kernels of a compiled model, deduplicated
// by workload and weighted by their call sites.
#include "compiler/tune/tasks.h"

#include <string>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/tune/database.h"

namespace kiln {
namespace tune {
namespace {

// Three dense layers, the first two of one shape (16 -> 16, then ReLU), the
// last another (16 -> 8): after fusion, two kernels of one workload and one
// of another.
const char kMlp[] = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 16), dtype="float32"), w0: R.Tensor((16, 16), dtype="float32"), b0: R.Tensor((16,), dtype="float32"), w1: R.Tensor((16, 16), dtype="float32"), b1: R.Tensor((16,), dtype="float32"), w2: R.Tensor((16, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            a0 = R.matmul(x, w0, out_dtype="void")
            a1 = R.add(a0, b0)
            a2 = R.nn.relu(a1)
            c0 = R.matmul(a2, w1, out_dtype="void")
            c1 = R.add(c0, b1)
            c2 = R.nn.relu(c1)
            gv = R.matmul(c2, w2, out_dtype="void")
            R.output(gv)
        return gv
)";

std::vector<TuneTask> Extract(const std::string& text) {
  Result<ir::IRModule> mod = text::ParseModule(text, "model.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return {};
  Result<ir::IRModule> kernels = driver::LowerModuleToKernels(*mod, {});
  EXPECT_TRUE(kernels.ok()) << kernels.status().ToString();
  if (!kernels.ok()) return {};
  return ExtractTasks(*kernels);
}

TEST(TasksTest, EqualKernelsAreOneTaskWeightedByTheirCalls) {
  std::vector<TuneTask> tasks = Extract(kMlp);
  ASSERT_EQ(tasks.size(), 2u);
  // Module order (fusion puts the last, unfused matmul first): the two fused
  // layers, equal but for their buffers' names, are one task of 2 calls.
  if (tasks[0].calls != 2) std::swap(tasks[0], tasks[1]);
  EXPECT_EQ(tasks[0].calls, 2);
  EXPECT_EQ(tasks[0].kernels.size(), 2u);
  EXPECT_EQ(tasks[1].calls, 1);
  EXPECT_EQ(tasks[1].kernels.size(), 1u);
  EXPECT_NE(tasks[0].workload, tasks[1].workload);
  for (const auto& t : tasks) {
    EXPECT_EQ(t.workload, Database::WorkloadHash(t.func));
    EXPECT_EQ(t.name, t.kernels[0]);
    EXPECT_EQ(t.skip_reason, "") << t.name;
  }
  // The first task is fused: the matmul with its bias and ReLU epilogue.
  std::string text = text::PrintModule([&] {
    ir::IRModule m;
    m.Add("f", tasks[0].func);
    return m;
  }());
  EXPECT_NE(text.find("T.max"), std::string::npos) << text;
}

// A module's opening with two 8-element kernels: add1 (x + 1) and `second`
// (x * 2); the caller appends its Relax functions.
std::string TwoKernels(const std::string& second) {
  return std::string("@I.ir_module\nclass Module:\n") + R"(    @T.prim_func
    def add1(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def )" + second + R"((A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)

)";
}

TEST(TasksTest, TwoCallSitesOfOneKernelCountTwice) {
  // The same call_tir twice: one kernel, two calls.
  const std::string kTwice = TwoKernels("unused") + R"(    @R.function
    def main(a: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        with R.dataflow():
            b = R.call_tir(cls.add1, (a,), out_sinfo=R.Tensor((8,), dtype="float32"))
            c = R.call_tir(cls.add1, (b,), out_sinfo=R.Tensor((8,), dtype="float32"))
            R.output(c)
        return c
)";
  Result<ir::IRModule> mod = text::ParseModule(kTwice, "twice.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<TuneTask> tasks = ExtractTasks(*mod);
  ASSERT_EQ(tasks.size(), 1u);  // `unused` is called by nothing
  EXPECT_EQ(tasks[0].name, "add1");
  EXPECT_EQ(tasks[0].calls, 2);
}

TEST(TasksTest, APrivateFunctionsSitesCountPerCallOfIt) {
  // main calls the private `layer` twice; `layer` calls add1 once and
  // double once: 2 calls each, plus main's own call of add1: 3.
  const std::string kNested = TwoKernels("double") + R"(    @R.function(private=True)
    def layer(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        a = R.call_tir(cls.add1, (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        b = R.call_tir(cls.double, (a,), out_sinfo=R.Tensor((8,), dtype="float32"))
        return b

    @R.function
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        a = cls.layer(x)
        b = cls.layer(a)
        c = R.call_tir(cls.add1, (b,), out_sinfo=R.Tensor((8,), dtype="float32"))
        return c
)";
  Result<ir::IRModule> mod = text::ParseModule(kNested, "nested.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<TuneTask> tasks = ExtractTasks(*mod);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].name, "add1");
  EXPECT_EQ(tasks[0].calls, 3);
  EXPECT_EQ(tasks[1].name, "double");
  EXPECT_EQ(tasks[1].calls, 2);
}

TEST(TasksTest, SymbolicKernelsAreSkippedWithTheReason) {
  std::string text = kMlp;
  text.replace(text.find("x: R.Tensor((4, 16)"), 19, "x: R.Tensor((\"n\", 16)");
  text.replace(text.find("R.Tensor((4, 8)"), 15, "R.Tensor((\"n\", 8)");
  std::vector<TuneTask> tasks = Extract(text);
  ASSERT_EQ(tasks.size(), 2u);
  for (const auto& t : tasks)
    EXPECT_NE(t.skip_reason.find("has a symbolic shape (the runner needs static shapes; fix the dimension with --dim)"),
              std::string::npos)
        << t.skip_reason;
}

}  // namespace
}  // namespace tune
}  // namespace kiln
