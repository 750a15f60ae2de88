#include "compiler/ir/structural_equal.h"

#include <gtest/gtest.h>

#include "compiler/text/text.h"

namespace kiln {
namespace ir {
namespace {

IRModule Parse(const std::string& s) {
  Result<IRModule> r = text::ParseModule(s, "t.relax");
  KILN_CHECK(r.ok(), "%s", r.status().ToString().c_str());
  return r.value();
}

const char* kAdd = R"(@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = A[i] + T.float32(1)
)";

TEST(StructuralEqualTest, MatchesVariablesByDefinitionNotName) {
  std::string renamed = kAdd;
  for (size_t p; (p = renamed.find("i]")) != std::string::npos;) renamed.replace(p, 1, "k");
  renamed.replace(renamed.find("for i"), 5, "for k");
  std::string why;
  EXPECT_TRUE(StructuralEqual(Parse(kAdd), Parse(renamed), &why)) << why;
}

TEST(StructuralEqualTest, ReportsPathOfDifference) {
  std::string other = kAdd;
  other.replace(other.find("T.float32(1)"), 12, "T.float32(2)");
  std::string why;
  EXPECT_FALSE(StructuralEqual(Parse(kAdd), Parse(other), &why));
  EXPECT_EQ(why, "function add / body / for i / store to B / float 1.000000 vs 2.000000");
}

TEST(StructuralEqualTest, SwappedOperandsDiffer) {
  std::string other = kAdd;
  other.replace(other.find("A[i] + T.float32(1)"), 19, "T.float32(1) + A[i]");
  std::string why;
  EXPECT_FALSE(StructuralEqual(Parse(kAdd), Parse(other), &why));
  EXPECT_NE(why.find("expression kind BufferLoad vs FloatImm"), std::string::npos) << why;
}

TEST(StructuralEqualTest, VariableBindingMustBeConsistent) {
  Var a = MakeVar("a"), b = MakeVar("b");
  // a + a vs a + b: the second use of `a` is already matched to the left `a`.
  std::string why;
  EXPECT_TRUE(StructuralEqual(PrimExpr(a) + PrimExpr(a), PrimExpr(b) + PrimExpr(b), &why)) << why;
  EXPECT_FALSE(StructuralEqual(PrimExpr(a) + PrimExpr(a), PrimExpr(a) + PrimExpr(b), &why));
  EXPECT_EQ(why, "variable a vs b");
}

TEST(StructuralEqualTest, RelaxDifferences) {
  const char* m = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv = R.add(x, y)
            R.output(lv)
        return lv
)";
  std::string swapped = m;
  swapped.replace(swapped.find("R.add(x, y)"), 11, "R.add(y, x)");
  std::string why;
  EXPECT_TRUE(StructuralEqual(Parse(m), Parse(m), &why)) << why;
  EXPECT_FALSE(StructuralEqual(Parse(m), Parse(swapped), &why));
  EXPECT_EQ(why, "function main / body / block 0 / binding 0 (lv) / value / arg 0 / variable x vs y");
}

}  // namespace
}  // namespace ir
}  // namespace kiln
