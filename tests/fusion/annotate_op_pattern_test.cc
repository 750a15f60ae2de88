// The patterns annotate-op-pattern derives from TIR agree with the operator
// table's for the kernels legalization builds (whose "op_pattern" is removed
// first), so user TIR and legalized operators fuse alike.
#include <gtest/gtest.h>

#include <string>

#include "compiler/fusion/annotate_op_pattern.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

TEST(AnnotateOpPattern, AgreesWithTheOperatorTableOnLegalizedKernels) {
  const char* src = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((4, 8), dtype="float32"), b: R.Tensor((4,), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            t = R.permute_dims(w, axes=None)
            m = R.matmul(x, t, out_dtype="void")
            a = R.add(m, b)
            r = R.nn.relu(a)
            e = R.exp(r)
            gv = R.sum(e, axis=[1], keepdims=False)
            R.output(gv)
        return gv
)";
  Result<ir::IRModule> parsed = text::ParseModule(src, "ops.relax");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Result<ir::IRModule> mod = relax::InferStructInfo(*parsed);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  mod = relax::LegalizeOps(*mod, relax::LegalizeOptions{});
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  int checked = 0;
  for (const auto& e : mod->entries) {
    if (!e.prim) continue;
    auto it = e.prim->attrs.find(fusion::kOpPatternAttr);
    ASSERT_NE(it, e.prim->attrs.end()) << e.name;
    EXPECT_EQ(fusion::AnalyzeOpPattern(e.prim), it->second.i) << e.name << "\n" << text::PrintModule(*mod);
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace kiln
