// Every error of the fusion passes fires, with its message; and passes that
// have nothing to do return the module unchanged.
#include <gtest/gtest.h>

#include <string>

#include "compiler/fusion/annotate_op_pattern.h"
#include "compiler/fusion/fuse_ops.h"
#include "compiler/fusion/fuse_tir.h"
#include "compiler/fusion/prim_func_instance.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

const char kHeader[] = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func
    def copy4(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in T.serial(T.int64(4)):
            with T.block("B"):
                vi = T.axis.spatial(T.int64(4), i)
                B[vi] = A[vi]

    @T.prim_func
    def add4(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
        for i in T.serial(T.int64(4)):
            with T.block("C"):
                vi = T.axis.spatial(T.int64(4), i)
                C[vi] = A[vi] + B[vi]

)";

ir::IRModule Parse(const std::string& body, bool normalize = true) {
  Result<ir::IRModule> m = text::ParseModule(std::string(kHeader) + body, "test.relax");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return ir::IRModule();
  if (!normalize) return *m;
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n : *m;
}

void ExpectFuseTirError(const std::string& body, StatusCode code, const std::string& message, bool normalize = true) {
  ir::IRModule mod = Parse(body, normalize);
  Result<ir::IRModule> r = fusion::FuseTIR(mod);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
}

TEST(FuseTirErrors, BindingThatIsNotACallTir) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument,
                     "fuse_tir: fused function 'fused': binding 'gv' is not an R.call_tir of a PrimFunc with one tensor result");
}

TEST(FuseTirErrors, ConstantArgument) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.add4, (x, R.const([1.0, 2.0, 3.0, 4.0], "float32")), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kUnimplemented, "binding 'gv' passes a value that is not a variable");
}

TEST(FuseTirErrors, ResultIsNotABoundVariable) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        return x
)",
                     StatusCode::kInvalidArgument, "fused function 'fused': the result is not a variable bound in its body");
}

TEST(FuseTirErrors, ParameterWithoutShape) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor(ndim=1, dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument, "parameter 'x' is not a tensor of known shape and dtype");
}

TEST(FuseTirErrors, SymbolicVariableNotPlainDimension) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        m = T.int64()
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((m,), dtype="float32"))
            gv = R.call_tir(cls.copy4, (lv,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kUnimplemented, "symbolic variable 'm' is not a plain dimension of a parameter or of the result",
                     /*normalize=*/false);
}

TEST(FuseTirErrors, KernelGivenBufferOfAnotherShape) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((5,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument,
                     "fuse_tir: kernel 'copy4' parameter 'A' of type (4,) float32 receives 'x' of type (5,) float32");
}

// An intermediate's out_sinfo may promise a shape fuse_tir cannot prove
// (hoist_shape_checks.h), but not one that is provably another.
TEST(FuseTirErrors, IntermediateOfAnotherConstantShape) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((5,), dtype="float32"))
            gv = R.call_tir(cls.copy4, (lv,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument,
                     "fuse_tir: kernel 'copy4' parameter 'B' of type (4,) float32 receives 'lv' of type (5,) float32");
}

TEST(FuseTirErrors, KernelGivenWrongNumberOfBuffers) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x, x), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument, "fuse_tir: kernel 'copy4' has 2 parameters but is given 3 buffers and 0 scalars",
                     /*normalize=*/false);
}

TEST(FuseTirErrors, ScalarKernelParameter) {
  ExpectFuseTirError(R"(    @T.prim_func
    def scaled(A: T.Buffer((4,), "float32"), s: T.float32, B: T.Buffer((4,), "float32")):
        for i in T.serial(T.int64(4)):
            with T.block("B"):
                vi = T.axis.spatial(T.int64(4), i)
                B[vi] = A[vi] * s

    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.scaled, (x, y), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument, "kernel 'scaled' parameter 's' is a scalar where the call passes a buffer",
                     /*normalize=*/false);
}

TEST(FuseTirErrors, BufferKernelParameterGivenAScalar) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.add4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"), tir_vars=R.shape([4]))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument, "kernel 'add4' parameter 'C' is a buffer where the call passes a scalar",
                     /*normalize=*/false);
}

TEST(FuseTirErrors, ScalarsParameterOfNoVariables) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32"), tir_vars: R.Shape([4])) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                     StatusCode::kInvalidArgument, "parameter 'tir_vars' is a shape but not of symbolic variables",
                     /*normalize=*/false);
}

TEST(FuseTirErrors, ScalarsPassedInAShapeVariable) {
  ExpectFuseTirError(R"(    @R.function(private=True)
    def fused(x: R.Tensor((4,), dtype="float32"), tir_vars: R.Shape(["m"])) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        m = T.int64()
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        s = R.shape([4])
        gv = cls.fused(x, s)
        return gv
)",
                     StatusCode::kInvalidArgument,
                     "fuse_tir: the call of 'fused' in 'main' passes its scalars in a value that is not R.shape([...])",
                     /*normalize=*/false);
}

TEST(FuseOpsErrors, ModuleNotNormalized) {
  ir::IRModule mod = Parse(R"(    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)",
                           /*normalize=*/false);
  Result<ir::IRModule> r = fusion::FuseOps(fusion::AnnotateOpPattern(mod));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("fuse_ops: function 'main' has no struct info; run normalize"), std::string::npos)
      << r.status().message();
}

TEST(FusionPasses, NothingToFuseKeepsTheFunctions) {
  ir::IRModule mod = Parse(R"(    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)");
  ir::IRModule annotated = fusion::AnnotateOpPattern(mod);
  Result<ir::IRModule> fused = fusion::FuseOps(annotated);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->FindRelax("main"), annotated.FindRelax("main"));
  EXPECT_EQ(fused->entries.size(), annotated.entries.size());
  Result<ir::IRModule> tir = fusion::FuseTIR(*fused);
  ASSERT_TRUE(tir.ok());
  EXPECT_EQ(tir->FindRelax("main"), annotated.FindRelax("main"));
  // Annotating twice changes nothing: the attribute is kept.
  ir::IRModule again = fusion::AnnotateOpPattern(annotated);
  EXPECT_EQ(again.FindPrim("copy4"), annotated.FindPrim("copy4"));
}

TEST(FusionPasses, FuseOpsTwiceFusesNothingNew) {
  ir::IRModule mod = Parse(R"(    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.copy4, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            gv = R.call_tir(cls.add4, (lv, x), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(gv)
        return gv
)");
  Result<ir::IRModule> once = fusion::FuseOps(fusion::AnnotateOpPattern(mod));
  ASSERT_TRUE(once.ok());
  ASSERT_NE(once->FindRelax("fused_copy4_add4"), nullptr) << text::PrintModule(*once);
  Result<ir::IRModule> twice = fusion::FuseOps(*once);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(text::PrintModule(*once), text::PrintModule(*twice));
}

}  // namespace
}  // namespace kiln
