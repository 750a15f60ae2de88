// R.const and metadata["relax.expr.Constant"][i]: values and dtypes of parsed
// constants, which constants print inline, the constant table PrintModule
// returns, and reading it back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

std::string Module(const std::string& body) {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((2, 3), dtype=\"float32\")):\n" + body;
}

// The value bound to `name` in main's first binding block.
const ir::ConstantExpr* Bound(const ir::IRModule& m, const std::string& name) {
  const ir::Function f = m.FindRelax("main");
  if (!f) return nullptr;
  for (const auto& block : ir::ExprAs<ir::SeqExprNode>(f->body)->blocks)
    for (const auto& b : block.bindings)
      if (b.var->name == name) return ir::ExprAs<ir::ConstantExpr>(b.value);
  return nullptr;
}

TEST(ConstantsTest, ListsScalarsAndDtypes) {
  Result<ir::IRModule> m = text::ParseModule(Module(R"(        a = R.const([[1.5, -2], [3, float("inf")], [0, -0.25]], "float32")
        b = R.const([1, 2, -3])
        c = R.const([True, False])
        d = R.const(2.5)
        e = R.const([[-1, 200]], "int8")
        f = R.const([0.1, 65504.0, 1e-07], "float16")
        g = R.const([], "int64")
        h = R.const(7, dtype="uint16")
        return x
)"),
                                             "c.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::ConstantExpr* a = Bound(*m, "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->data.TypeString(), "float32[3, 2]");
  const float* av = a->data.data<float>();
  EXPECT_EQ(av[0], 1.5f);
  EXPECT_EQ(av[1], -2.0f);
  EXPECT_EQ(av[2], 3.0f);
  EXPECT_TRUE(std::isinf(av[3]));
  EXPECT_EQ(av[5], -0.25f);
  // Defaults as in TVM: int32 for integers, bool for bools, float32 for floats.
  EXPECT_EQ(Bound(*m, "b")->data.TypeString(), "int32[3]");
  EXPECT_EQ(Bound(*m, "b")->data.data<int32_t>()[2], -3);
  EXPECT_EQ(Bound(*m, "c")->data.TypeString(), "bool[2]");
  EXPECT_EQ(Bound(*m, "d")->data.TypeString(), "float32[]");
  EXPECT_EQ(Bound(*m, "e")->data.data<int8_t>()[1], static_cast<int8_t>(200));  // wraps, as numpy's astype
  const uint16_t* fv = Bound(*m, "f")->data.data<uint16_t>();
  EXPECT_EQ(fv[0], 0x2e66);  // 0.1 rounded to the nearest half
  EXPECT_EQ(fv[1], 0x7bff);  // the largest finite half
  EXPECT_EQ(fv[2], 0x0002);  // a subnormal half (2 * 2^-24 is nearest to 1e-7)
  EXPECT_EQ(Bound(*m, "g")->data.TypeString(), "int64[0]");
  EXPECT_EQ(Bound(*m, "h")->data.data<uint16_t>()[0], 7);
}

TEST(ConstantsTest, FloatOutsideInt64IsAnErrorForIntegerDtypes) {
  // Converting such a float to an integer has no defined result: an error
  // at the literal. In range, a float truncates toward zero (as numpy).
  for (const char* lit : {"4.4e24", "-1e19", "float(\"inf\")", "float(\"nan\")"}) {
    Result<ir::IRModule> m =
        text::ParseModule(Module(std::string("        a = R.const([1, ") + lit + "], \"int32\")\n        return x\n"), "c.relax");
    ASSERT_FALSE(m.ok()) << lit;
    EXPECT_NE(m.status().message().find("cannot be stored as int32 (an integer dtype takes finite values within int64)"),
              std::string::npos)
        << m.status().message();
  }
  Result<ir::IRModule> ok = text::ParseModule(
      Module("        a = R.const([-2.7, 1e18], \"int64\")\n        b = R.const([float(\"inf\")], \"bool\")\n        return x\n"),
      "c.relax");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(Bound(*ok, "a")->data.data<int64_t>()[0], -2);
  EXPECT_EQ(Bound(*ok, "a")->data.data<int64_t>()[1], 1000000000000000000LL);
  EXPECT_EQ(Bound(*ok, "b")->data.data<uint8_t>()[0], 1);
}

TEST(ConstantsTest, ScalarsPrintInlineAndReadBackToTheSameBits) {
  std::string body = R"(        a = R.const(0.1, "float32")
        b = R.const(0.1, "float16")
        c = R.const(-0.0, "float64")
        d = R.const(float("-inf"), "float32")
        e = R.const(float("nan"), "bfloat16")
        f = R.const(True, "bool")
        g = R.const(-128, "int8")
        h = R.const(3, "float32")
        i = R.const(0.3, "bfloat16")
        return x
)";
  Result<ir::IRModule> m = text::ParseModule(Module(body), "c.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<ir::Expr> constants;
  std::string printed = text::PrintModule(*m, &constants);
  EXPECT_TRUE(constants.empty());
  for (const char* want : {"a: R.Tensor((), dtype=\"float32\") = R.const(0.1, \"float32\")",
                           "b: R.Tensor((), dtype=\"float16\") = R.const(0.1, \"float16\")",
                           "R.const(-0.0, \"float64\")", "R.const(float(\"-inf\"), \"float32\")",
                           "R.const(float(\"nan\"), \"bfloat16\")", "R.const(True, \"bool\")", "R.const(-128, \"int8\")",
                           "R.const(3.0, \"float32\")", "R.const(0.3, \"bfloat16\")"}) {
    // Annotations appear only once struct info is inferred; compare the value part.
    std::string w = want;
    size_t eq = w.find(" = ");
    if (eq != std::string::npos) w = w.substr(eq + 3);
    EXPECT_NE(printed.find(w), std::string::npos) << want << "\n" << printed;
  }
  Result<ir::IRModule> m2 = text::ParseModule(printed, "printed.relax");
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(*m, *m2, &why)) << why;
  const ir::ConstantExpr* c = Bound(*m2, "c");
  EXPECT_TRUE(std::signbit(c->data.data<double>()[0]));
}

TEST(ConstantsTest, TensorsAndNamedConstantsGoToTheTable) {
  Result<ir::IRModule> m = text::ParseModule(Module(R"(        a = R.const([[1, 2, 3], [4, 5, 6]], "float32")
        b = R.add(x, a)
        c = R.const(2.0, "float32")
        d = R.multiply(b, c)
        e = R.const([1, 2, 3], "int64")
        return d
)"),
                                             "c.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<ir::Expr> constants;
  std::string printed = text::PrintModule(*m, &constants);
  ASSERT_EQ(constants.size(), 2u);
  EXPECT_NE(printed.find("a = metadata[\"relax.expr.Constant\"][0]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("e = metadata[\"relax.expr.Constant\"][1]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("c = R.const(2.0, \"float32\")"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("# Metadata omitted"), std::string::npos);
  // The table holds the module's own nodes; the data stays out of the text.
  EXPECT_EQ(ir::ExprAs<ir::ConstantExpr>(constants[0]), Bound(*m, "a"));

  Result<ir::IRModule> m2 = text::ParseModule(printed, "printed.relax", constants);
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(*m, *m2, &why)) << why;
  // Fresh nodes sharing the tensors.
  const ir::ConstantExpr* a2 = Bound(*m2, "a");
  EXPECT_NE(a2, Bound(*m, "a"));
  EXPECT_EQ(a2->data.raw_data(), Bound(*m, "a")->data.raw_data());

  // Without the table the same text is an error at the reference; the
  // one-argument PrintModule says where the table went.
  std::string plain = text::PrintModule(*m);
  EXPECT_NE(plain.find("\n# Metadata omitted: PrintModule(module, &constants) returns the constant table.\n"), std::string::npos);
  Result<ir::IRModule> r = text::ParseModule(plain, "plain.relax");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("metadata[...] refers to a constant table, but none was given"), std::string::npos);
}

TEST(ConstantsTest, NamedScalarWeightAndSharedNodePrintOnce) {
  // A weight bound to a parameter name is a table entry even as a scalar; one
  // node used twice is one entry.
  Tensor t = Tensor::Empty(std::vector<int64_t>{}, DType::Float32()).value();
  *t.data<float>() = 0.5f;
  auto w = std::make_shared<ir::ConstantExpr>(t, "scale");
  ir::RVar x = ir::MakeRVar("x", ir::MakeTensorSInfo({2}, DType::Float32()));
  ir::RVar y = ir::MakeRVar("y");
  ir::RVar z = ir::MakeRVar("z");
  ir::BindingBlock block;
  block.bindings.push_back(ir::Binding{y, ir::MakeOpCall("relax.multiply", {x, w}), nullptr, {}});
  block.bindings.push_back(ir::Binding{z, ir::MakeOpCall("relax.add", {y, w}), nullptr, {}});
  auto f = std::make_shared<ir::FunctionExpr>();
  f->name = "main";
  f->params = {x};
  f->body = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{block}, z);
  ir::IRModule m;
  m.name = "Module";
  m.Add("main", ir::Function(f));
  std::vector<ir::Expr> constants;
  std::string printed = text::PrintModule(m, &constants);
  ASSERT_EQ(constants.size(), 1u);
  EXPECT_NE(printed.find("y = R.multiply(x, metadata[\"relax.expr.Constant\"][0])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("z = R.add(y, metadata[\"relax.expr.Constant\"][0])"), std::string::npos) << printed;
  Result<ir::IRModule> m2 = text::ParseModule(printed, "printed.relax", constants);
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(m, *m2, &why)) << why;
  // The parsed constant keeps the weight's name.
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(m2->FindRelax("main")->body);
  const auto* call = ir::ExprAs<ir::CallExpr>(seq->blocks[0].bindings[0].value);
  EXPECT_EQ(ir::ExprAs<ir::ConstantExpr>(call->args[1])->name, "scale");
}

}  // namespace
}  // namespace kiln
