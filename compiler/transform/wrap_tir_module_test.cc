// wrap-tir-module: the Relax function a module of PrimFuncs alone gets (its
// printed form), what it leaves alone, and one test per refusal.
#include "compiler/transform/wrap_tir_module.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/text/text.h"

namespace kiln {
namespace {

Result<ir::IRModule> Wrap(const std::string& funcs) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule m, text::ParseModule("@I.ir_module\nclass Module:\n" + funcs, "wrap.relax"));
  return transform::WrapTirModule(m);
}

const char kAddOne[] = R"(    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = A[i] + T.float32(1)
)";

TEST(WrapTirModule, ExportedPrimFuncBecomesARelaxFunction) {
  Result<ir::IRModule> m = Wrap(kAddOne);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::string printed = text::PrintModule(*m);
  EXPECT_NE(printed.find("    @T.prim_func(private=True)\n    def main_tir(A: T.Buffer((8,), \"float32\"), B: "
                         "T.Buffer((8,), \"float32\")):"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("    def main(A: R.Tensor((8,), dtype=\"float32\")):\n        cls = Module\n"
                         "        B = R.call_tir(cls.main_tir, (A,), out_sinfo=R.Tensor((8,), dtype=\"float32\"))\n"
                         "        return B\n"),
            std::string::npos)
      << printed;
}

// Symbolic sizes come from the inputs; several outputs make a tuple.
TEST(WrapTirModule, SymbolicSizesAndSeveralOutputs) {
  Result<ir::IRModule> m = Wrap(R"(    @T.prim_func
    def split(a: T.handle, b: T.handle, c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,))
        B = T.match_buffer(b, (n,))
        C = T.match_buffer(c, (n,))
        for i in range(n):
            B[i] = A[i]
            C[i] = A[i] * T.float32(2)
)");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::string printed = text::PrintModule(*m);
  EXPECT_NE(printed.find("outputs = R.call_tir(cls.split_tir, (A,), out_sinfo=[R.Tensor((n,), dtype=\"float32\"), "
                         "R.Tensor((n,), dtype=\"float32\")])"),
            std::string::npos)
      << printed;
}

TEST(WrapTirModule, ModulesWithRelaxFunctionsAreLeftAlone) {
  Result<ir::IRModule> m = Wrap(std::string(kAddOne) + R"(
    @R.function
    def f(x: R.Tensor((8,), "float32")):
        return x
)");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->FindPrim("main"));
  EXPECT_FALSE(m->Find("main_tir"));
}

void ExpectRefused(const std::string& func, const std::string& message) {
  Result<ir::IRModule> m = Wrap(func);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), message);
}

TEST(WrapTirModule, Refusals) {
  ExpectRefused(R"(    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), s: T.int32):
        A[0] = T.float32(0)
)",
                "T.prim_func 'f' (a module without Relax functions): parameter 's' is not a buffer; Kiln calls such a "
                "function with tensors only");
  ExpectRefused(R"(    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        A[0] = B[0]
)",
                "T.prim_func 'f' (a module without Relax functions): its last parameter is not written, so it has no "
                "output (outputs are the trailing parameters it stores into)");
  ExpectRefused(R"(    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        A[0] = B[0]
        C[0] = B[0]
)",
                "T.prim_func 'f' (a module without Relax functions): it writes parameter 'A', which is followed by an "
                "input; its outputs must be its last parameters");
  ExpectRefused(R"(    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n, m = T.int64(), T.int64()
        A = T.match_buffer(a, (n,))
        B = T.match_buffer(b, (m,))
        B[0] = A[0]
)",
                "T.prim_func 'f' (a module without Relax functions): the size 'm' of output 'B' is not the size of an "
                "input, so a caller could not give it");
}

}  // namespace
}  // namespace kiln
