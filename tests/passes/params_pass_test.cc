// bind_params errors (one per message) and the values fold_constant computes.
#include <gtest/gtest.h>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/transform/bind_params.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/fold_constant.h"

namespace kiln {
namespace {

const char kModule[] = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "k"), dtype="float32"), w: R.Tensor(("m", "k"), dtype="float32"), b: R.Tensor(("m",), dtype="float32"), c: R.Tensor((2, "m"), dtype="float32")) -> R.Tensor(("n", "m"), dtype="float32"):
        n = T.int64()
        k = T.int64()
        m = T.int64()
        with R.dataflow():
            lv0 = R.permute_dims(w, axes=None)
            lv1 = R.matmul(x, lv0, out_dtype="void")
            gv = R.add(lv1, b)
            R.output(gv)
        return gv
)";

ir::IRModule Parse() {
  Result<ir::IRModule> m = text::ParseModule(kModule, "m.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return relax::InferStructInfo(*m).value();
}

Tensor Filled(std::vector<int64_t> shape, DType dtype = DType::Float32()) {
  Tensor t = Tensor::Empty(shape, dtype).value();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == DType::Float32()) t.data<float>()[i] = static_cast<float>(i);
  }
  return t;
}

std::string Error(const params::ParamList& p, const std::string& func = "main") {
  Result<ir::IRModule> r = transform::BindParams(Parse(), p, func);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.ok() ? "" : r.status().message();
}

TEST(BindParams, Errors) {
  EXPECT_EQ(Error({{"weight", Filled({4, 3})}}),
            "bind params: 'weight' is not a parameter of 'main' (its parameters: x, w, b, c)");
  EXPECT_EQ(Error({{"w", Filled({4, 3})}}, "forward"), "bind params: no Relax function named 'forward' in the module");
  EXPECT_EQ(Error({{"w", Filled({4, 3}, DType::Int32())}}),
            "bind params: parameter 'w' of 'main': expected float32 (m, k), got int32[4, 3]");
  EXPECT_EQ(Error({{"w", Filled({4, 3, 1})}}),
            "bind params: parameter 'w' of 'main': expected float32 (m, k), got float32[4, 3, 1]");
  EXPECT_EQ(Error({{"c", Filled({3, 4})}}),
            "bind params: parameter 'c' of 'main': expected float32 (2, m), got float32[3, 4]");
  EXPECT_EQ(Error({{"w", Filled({4, 3})}, {"b", Filled({5})}}),
            "bind params: parameter 'b' of 'main': dimension 0 binds 'm' to 5 but an earlier parameter bound it to 4");
}

TEST(BindParams, SymbolicDimensionsAreBoundEverywhere) {
  Result<ir::IRModule> r = transform::BindParams(Parse(), {{"w", Filled({4, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ir::Function f = r->FindRelax("main");
  ASSERT_EQ(f->params.size(), 3u);
  EXPECT_EQ(text::PrintStructInfo(f->params[0]->annotation), "R.Tensor((n, 3), dtype=\"float32\")");
  EXPECT_EQ(text::PrintStructInfo(f->params[1]->annotation), "R.Tensor((4,), dtype=\"float32\")");
  EXPECT_EQ(text::PrintStructInfo(f->ret_sinfo), "R.Tensor((n, 4), dtype=\"float32\")");
  // The input module is untouched.
  EXPECT_EQ(Parse().FindRelax("main")->params.size(), 4u);
}

TEST(FoldConstant, TransposeOfABoundWeightIsComputed) {
  Result<ir::IRModule> r = transform::BindParams(Parse(), {{"w", Filled({4, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = transform::FoldConstant(*r);
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = transform::EliminateDeadCode(*r);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // lv0 is gone; the matmul reads a (3, 4) constant holding w's transpose.
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(r->FindRelax("main")->body);
  ASSERT_EQ(seq->blocks.size(), 1u);
  ASSERT_EQ(seq->blocks[0].bindings.size(), 2u);
  const auto* mm = ir::ExprAs<ir::CallExpr>(seq->blocks[0].bindings[0].value);
  ASSERT_TRUE(mm);
  const auto* c = ir::ExprAs<ir::ConstantExpr>(mm->args[1]);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data.TypeString(), "float32[3, 4]");
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(c->data.data<float>()[i * 4 + j], static_cast<float>(j * 3 + i));
}

// Equal calls on the same constants (an unrolled recurrent layer's transposed
// weight, once per step) fold to one tensor, so the .vmfb stores it once; a
// call that differs in its attributes gets its own.
TEST(FoldConstant, EqualCallsShareOneTensor) {
  const char kShared[] = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), w: R.Tensor((3, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv0 = R.permute_dims(w, axes=[1, 0])
            lv1 = R.matmul(x, lv0, out_dtype="void")
            lv2 = R.permute_dims(w, axes=[1, 0])
            lv3 = R.matmul(lv1, lv2, out_dtype="void")
            lv4 = R.permute_dims(w, axes=[0, 1])
            gv = R.matmul(lv3, lv4, out_dtype="void")
            R.output(gv)
        return gv
)";
  Result<ir::IRModule> m = text::ParseModule(kShared, "m.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Result<ir::IRModule> r = relax::InferStructInfo(*m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = transform::BindParams(*r, {{"w", Filled({3, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = transform::FoldConstant(*r);
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = transform::EliminateDeadCode(*r);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(r->FindRelax("main")->body);
  ASSERT_EQ(seq->blocks.size(), 1u);
  ASSERT_EQ(seq->blocks[0].bindings.size(), 3u);
  std::vector<const ir::ConstantExpr*> weights;
  for (const auto& b : seq->blocks[0].bindings) {
    const auto* mm = ir::ExprAs<ir::CallExpr>(b.value);
    ASSERT_TRUE(mm);
    weights.push_back(ir::ExprAs<ir::ConstantExpr>(mm->args[1]));
    ASSERT_TRUE(weights.back());
  }
  EXPECT_EQ(weights[0]->data.object().get(), weights[1]->data.object().get());
  EXPECT_NE(weights[0]->data.object().get(), weights[2]->data.object().get());
  EXPECT_EQ(weights[0]->data.data<float>()[1], 3.0f);  // w' [0, 1] = w[1, 0]
  EXPECT_EQ(weights[2]->data.data<float>()[1], 1.0f);  // w [0, 1]
}

TEST(FoldConstant, NothingToFoldLeavesTheModule) {
  ir::IRModule m = Parse();
  Result<ir::IRModule> r = transform::FoldConstant(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->FindRelax("main"), m.FindRelax("main"));
}

}  // namespace
}  // namespace kiln
