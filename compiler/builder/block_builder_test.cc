// The BlockBuilder builds the modules of the MLC course's BlockBuilder lesson;
// each is checked against the same module written as text (structurally
// equal, and printed identically), then compiled and run.
#include "compiler/builder/block_builder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/ir/structural_equal.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "runtime/any.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace builder {
namespace {

const DType f32 = DType::Float32();

// te_matmul / te_relu of the lesson.
Result<std::vector<te::Tensor>> TeMatmul(te::FuncBuilder& b, const std::vector<te::Tensor>& in) {
  const te::Tensor& A = in[0];
  const te::Tensor& B = in[1];
  return std::vector<te::Tensor>{b.Reduce("matmul", {A.shape()[0], B.shape()[1]}, f32, te::ReduceKind::kSum,
                                          {A.shape()[1]},
                                          [&](const te::Indices& i, const te::Indices& k) {
                                            return A({i[0], k[0]}) * B({k[0], i[1]});
                                          })};
}

Result<std::vector<te::Tensor>> TeRelu(te::FuncBuilder& b, const std::vector<te::Tensor>& in) {
  const te::Tensor& A = in[0];
  return std::vector<te::Tensor>{b.Compute("relu", A.shape(), f32, [&](const te::Indices& i) {
    return ir::MakeBinary(ir::TirKind::kMax, A(i), ir::FloatImm(f32, 0.0));
  })};
}

// main(A, B) = relu(A @ B) with the given dims (constants or a symbolic n).
ir::IRModule BuildLesson(ir::PrimExpr n) {
  BlockBuilder bb;
  ir::RVar A = BlockBuilder::Param("A", ir::MakeTensorSInfo({n, 128}, f32));
  ir::RVar B = BlockBuilder::Param("B", ir::MakeTensorSInfo({128, 128}, f32));
  EXPECT_TRUE(bb.BeginFunction("main", {A, B}).ok());
  EXPECT_TRUE(bb.BeginDataflow().ok());
  Result<ir::RVar> C = bb.EmitTE(TeMatmul, {A, B}, "te_matmul");
  EXPECT_TRUE(C.ok()) << C.status().ToString();
  Result<ir::RVar> D = bb.EmitTE(TeRelu, {*C}, "te_relu");
  EXPECT_TRUE(D.ok()) << D.status().ToString();
  Result<ir::RVar> R = bb.EmitOutput(*D);
  EXPECT_TRUE(R.ok());
  EXPECT_TRUE(bb.EndDataflow().ok());
  Status s = bb.EmitFuncOutput(*R);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return bb.module();
}

// What the lesson prints for the symbolic version, in Kiln's canonical form
// (block regions are whole buffers until scheduling narrows them).
const char* kLessonText = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def te_matmul(A_handle: T.handle, B: T.Buffer((128, 128), "float32"), matmul_handle: T.handle):
        T.func_attr({"tir.noalias": True})
        n = T.int64()
        A = T.match_buffer(A_handle, (n, 128), "float32")
        matmul = T.match_buffer(matmul_handle, (n, 128), "float32")
        # with T.block("root"):
        for i0, i1, k in T.grid(n, T.int64(128), T.int64(128)):
            with T.block("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(A[0:n, T.int64(0):T.int64(128)], B[T.int64(0):T.int64(128), T.int64(0):T.int64(128)])
                T.writes(matmul[0:n, T.int64(0):T.int64(128)])
                with T.init():
                    matmul[v_i0, v_i1] = T.float32(0)
                matmul[v_i0, v_i1] = matmul[v_i0, v_i1] + A[v_i0, v_k] * B[v_k, v_i1]

    @T.prim_func(private=True)
    def te_relu(lv_handle: T.handle, relu_handle: T.handle):
        T.func_attr({"tir.noalias": True})
        n = T.int64()
        lv = T.match_buffer(lv_handle, (n, 128), "float32")
        relu = T.match_buffer(relu_handle, (n, 128), "float32")
        # with T.block("root"):
        for i0, i1 in T.grid(n, T.int64(128)):
            with T.block("relu"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv[0:n, T.int64(0):T.int64(128)])
                T.writes(relu[0:n, T.int64(0):T.int64(128)])
                relu[v_i0, v_i1] = T.max(lv[v_i0, v_i1], T.float32(0))

    @R.function
    def main(A: R.Tensor(("n", 128), dtype="float32"), B: R.Tensor((128, 128), dtype="float32")) -> R.Tensor(("n", 128), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            lv: R.Tensor((n, 128), dtype="float32") = R.call_tir(cls.te_matmul, (A, B), out_sinfo=R.Tensor((n, 128), dtype="float32"))
            lv1: R.Tensor((n, 128), dtype="float32") = R.call_tir(cls.te_relu, (lv,), out_sinfo=R.Tensor((n, 128), dtype="float32"))
            gv: R.Tensor((n, 128), dtype="float32") = lv1
            R.output(gv)
        return gv
)";

TEST(BlockBuilder, LessonModuleEqualsItsText) {
  ir::IRModule built = BuildLesson(ir::PrimExpr(ir::MakeVar("n")));
  Result<ir::IRModule> parsed = text::ParseModule(kLessonText, "lesson.relax");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Result<ir::IRModule> normalized = relax::InferStructInfo(*parsed);
  ASSERT_TRUE(normalized.ok()) << normalized.status().ToString();
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(built, *normalized, &why)) << why << "\n" << text::PrintModule(built);
}

TEST(BlockBuilder, LessonModuleCompilesAndRuns) {
  ir::IRModule built = BuildLesson(ir::PrimExpr(ir::MakeVar("n")));
  std::string source = text::PrintModule(built);
  auto mod = e2e::CompileAndLoad(source, "lesson.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString() << "\n" << source;
  auto ctx = (*mod)->CreateContext();
  for (int64_t n : {1, 5}) {
    Tensor a = e2e::RandomTensor({n, 128}, 1);
    Tensor b = e2e::RandomTensor({128, 128}, 2);
    std::vector<Any> args{a, b};
    Any result;
    ASSERT_TRUE(ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result).ok());
    Tensor out = result.tensor();
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{n, 128}));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < 128; ++j) {
        float s = 0;
        for (int64_t k = 0; k < 128; ++k) s += a.data<float>()[i * 128 + k] * b.data<float>()[k * 128 + j];
        EXPECT_NEAR(out.data<float>()[i * 128 + j], std::max(s, 0.0f), 1e-4);
      }
  }
}

TEST(BlockBuilder, NamesFollowTvm) {
  ir::IRModule built = BuildLesson(ir::PrimExpr(int64_t{4}));
  ir::Function main = built.FindRelax("main");
  ASSERT_TRUE(main);
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(main->body);
  ASSERT_EQ(seq->blocks.size(), 1u);
  const auto& b = seq->blocks[0].bindings;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].var->name, "lv");
  EXPECT_EQ(b[1].var->name, "lv1");
  EXPECT_EQ(b[2].var->name, "gv");
  EXPECT_TRUE(b[0].var->is_dataflow);
  EXPECT_FALSE(b[2].var->is_dataflow);
  EXPECT_TRUE(built.FindPrim("te_matmul")->is_private);
}

TEST(BlockBuilder, BindingsOutsideDataflowAndOperatorCalls) {
  BlockBuilder bb;
  ir::RVar x = BlockBuilder::Param("x", ir::MakeTensorSInfo({2, 3}, f32));
  ASSERT_TRUE(bb.BeginFunction("main", {x}).ok());
  Result<ir::RVar> y = bb.Emit(ir::MakeOpCall("relax.add", {x, x}));
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_FALSE((*y)->is_dataflow);
  const auto* t = ir::SInfoAs<ir::TensorSInfo>((*y)->struct_info);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->shape.size(), 2u);
  ASSERT_TRUE(bb.EmitFuncOutput(*y).ok());
  Result<ir::IRModule> again = relax::InferStructInfo(bb.module());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(ir::StructuralEqual(bb.module(), *again));
}

// A function built while another is open (what the ONNX importer does for an
// If's branches): the outer one resumes with its open dataflow block and its
// names, and an abandoned nested function leaves no trace.
TEST(BlockBuilder, NestedFunctionsSuspendTheOuterOne) {
  BlockBuilder bb;
  ir::RVar x = BlockBuilder::Param("x", ir::MakeTensorSInfo({2, 3}, f32));
  ASSERT_TRUE(bb.BeginFunction("main", {x}).ok());
  ASSERT_TRUE(bb.BeginDataflow().ok());
  Result<ir::RVar> a = bb.Emit(ir::MakeOpCall("relax.add", {x, x}));
  ASSERT_TRUE(a.ok());
  ir::RVar p = BlockBuilder::Param("p", ir::MakeTensorSInfo({2, 3}, f32));
  ASSERT_TRUE(bb.BeginNestedFunction("branch", {p}).ok());
  EXPECT_FALSE(bb.InDataflow());
  Result<ir::RVar> r = bb.Emit(ir::MakeOpCall("relax.multiply", {p, p}));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(bb.EmitFuncOutput(*r).ok());
  ASSERT_NE(bb.module().FindRelax("branch"), nullptr);
  EXPECT_TRUE(bb.module().FindRelax("branch")->is_private);
  // Back in main's dataflow block: names go on from where they were.
  EXPECT_TRUE(bb.InDataflow());
  ASSERT_TRUE(bb.BeginNestedFunction("dropped", {p}).ok());
  bb.AbandonFunction();
  EXPECT_EQ(bb.module().FindRelax("dropped"), nullptr);
  Result<ir::RVar> c = bb.Emit(std::make_shared<ir::CallExpr>(std::make_shared<ir::GlobalVarExpr>("branch"),
                                                              std::vector<ir::Expr>{*a}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->name, "lv1");
  Result<ir::RVar> out = bb.EmitOutput(*c);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(bb.EndDataflow().ok());
  ASSERT_TRUE(bb.EmitFuncOutput(*out).ok());
  std::string text = text::PrintModule(bb.module());
  EXPECT_NE(text.find("def branch(p: R.Tensor((2, 3), dtype=\"float32\"))"), std::string::npos) << text;
  EXPECT_NE(text.find("cls.branch(lv)"), std::string::npos) << text;
  // An empty dataflow block is dropped when it ends.
  ASSERT_TRUE(bb.BeginFunction("empty", {x}).ok());
  ASSERT_TRUE(bb.BeginDataflow().ok());
  ASSERT_TRUE(bb.EndDataflow().ok());
  ASSERT_TRUE(bb.EmitFuncOutput(x).ok());
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(bb.module().FindRelax("empty")->body);
  ASSERT_TRUE(seq);
  EXPECT_TRUE(seq->blocks.empty());
}

TEST(BlockBuilder, MisuseIsAnError) {
  BlockBuilder bb;
  ir::RVar x = BlockBuilder::Param("x", ir::MakeTensorSInfo({2, 3}, f32));
  EXPECT_EQ(bb.Emit(x).status().message(), "BlockBuilder: Emit outside a function; call BeginFunction first");
  EXPECT_EQ(bb.BeginDataflow().message(), "BlockBuilder: BeginDataflow outside a function; call BeginFunction first");
  EXPECT_EQ(bb.BeginFunction("f", {ir::MakeRVar("p")}).message(), "BlockBuilder: parameter 'p' of 'f' has no struct info");
  ASSERT_TRUE(bb.BeginFunction("f", {x}).ok());
  EXPECT_EQ(bb.BeginFunction("g", {}).message(),
            "BlockBuilder: function 'f' is still open; end it with EmitFuncOutput before starting 'g'");
  EXPECT_EQ(bb.EmitOutput(x).status().message(), "BlockBuilder: EmitOutput outside a dataflow block in 'f'; use Emit");
  EXPECT_EQ(bb.EndDataflow().message(), "BlockBuilder: EndDataflow without an open dataflow block in 'f'");
  ASSERT_TRUE(bb.BeginDataflow().ok());
  EXPECT_EQ(bb.BeginDataflow().message(), "BlockBuilder: a dataflow block is already open in 'f'");
  Result<ir::RVar> lv = bb.Emit(x);
  ASSERT_TRUE(lv.ok());
  EXPECT_EQ(bb.EmitFuncOutput(*lv).message(), "BlockBuilder: the dataflow block of 'f' is still open; call EndDataflow first");
  // An operator error surfaces at the Emit, and nothing is bound.
  Result<ir::RVar> bad = bb.Emit(ir::MakeOpCall("relax.matmul", {x, x}));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("R.matmul: reduction dimensions differ"), std::string::npos) << bad.status().message();
  // EmitTE with a non-tensor argument.
  Result<ir::RVar> te_bad = bb.EmitTE(TeRelu, {std::make_shared<ir::ShapeExpr>(std::vector<ir::PrimExpr>{2})}, "relu");
  EXPECT_EQ(te_bad.status().message(), "BlockBuilder: EmitTE 'relu': argument 0 must be a tensor with a known shape and dtype");
  EXPECT_EQ(bb.module().entries.size(), 0u);
  ASSERT_TRUE(bb.EndDataflow().ok());
  EXPECT_EQ(bb.EmitFuncOutput(*lv).message(), "BlockBuilder: 'f' returns dataflow variable 'lv'; pass it through EmitOutput first");
  ASSERT_TRUE(bb.BeginFunction("g", {}).message().find("still open") != std::string::npos);
}

}  // namespace
}  // namespace builder
}  // namespace kiln
