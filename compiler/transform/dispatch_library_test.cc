// dispatch-library: the rule file's errors, and which calls a rule takes.
// The rewritten IR is checked by tests/passes (dispatch_library golden pair);
// equal results of both paths by tests/e2e/library_dispatch_e2e_test.cc.
#include "compiler/transform/dispatch_library.h"

#include <gtest/gtest.h>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"

namespace kiln {
namespace transform {
namespace {

std::string ErrorOf(const std::string& yaml) {
  Result<std::vector<DispatchRule>> r = ParseDispatchRules(yaml, "rules.yaml");
  return r.ok() ? "" : r.status().message();
}

TEST(DispatchRules, ParsesEveryCondition) {
  Result<std::vector<DispatchRule>> r = ParseDispatchRules(
      "rules:\n"
      "  - op: conv2d\n"
      "    library: dnnl\n"
      "    when: {groups: 1, depthwise: false, kernel: [3, 3], stride: [1, 1], min_macs: 10, max_macs: 20}\n"
      "  - {op: matmul, library: kiln}\n",
      "rules.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  const DispatchRule& c = (*r)[0];
  EXPECT_EQ(c.op, "conv2d");
  EXPECT_EQ(c.library, "dnnl");
  EXPECT_EQ(*c.groups, 1);
  EXPECT_FALSE(*c.depthwise);
  EXPECT_EQ(*c.kernel, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(*c.stride, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(*c.min_macs, 10);
  EXPECT_EQ(*c.max_macs, 20);
  EXPECT_EQ(c.where, "rules.yaml:2:5");
  EXPECT_EQ((*r)[1].library, "kiln");
  EXPECT_TRUE(ParseDispatchRules("", "empty.yaml")->empty());
}

TEST(DispatchRules, EveryErrorNamesTheFileAndPlace) {
  EXPECT_EQ(ErrorOf("- op: conv2d\n"), "rules.yaml:1:1: a dispatch rule file is a mapping with one key, 'rules'");
  EXPECT_EQ(ErrorOf("rules: 3\n"), "rules.yaml:1:8: 'rules' is a list of rules");
  EXPECT_EQ(ErrorOf("rules: [3]\n"), "rules.yaml:1:9: a rule is a mapping with 'op', 'library' and optional 'when'");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: softmax, library: dnnl}\n"),
            "rules.yaml:2:5: 'op' must be conv2d or matmul, got 'softmax'");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: miopen}\n"),
            "rules.yaml:2:5: 'library' must be dnnl, cublas, cudnn or kiln, got 'miopen'");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: cublas}\n"),
            "rules.yaml:2:5: library cublas takes matmul only, not conv2d");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: matmul, library: cudnn}\n"),
            "rules.yaml:2:5: library cudnn takes conv2d only, not matmul");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: dnnl, lib: x}\n"),
            "rules.yaml:2:33: unknown rule key 'lib' (keys: op, library, when)");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: dnnl, when: {grups: 1}}\n"),
            "rules.yaml:2:40: unknown condition 'grups' (conditions: groups, depthwise, kernel, stride, min_macs, max_macs)");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: dnnl, when: {groups: -1}}\n"),
            "rules.yaml:2:48: 'groups' takes a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: dnnl, when: {kernel: 3}}\n"),
            "rules.yaml:2:48: 'kernel' takes a list of two integers");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: dnnl, when: {depthwise: yes}}\n"),
            "rules.yaml:2:51: 'depthwise' takes true or false");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: conv2d, library: dnnl, when: 1}\n"),
            "rules.yaml:2:39: 'when' is a mapping of condition: value");
  EXPECT_EQ(ErrorOf("rules:\n  - {op: matmul, library: dnnl, when: {groups: 1}}\n"),
            "rules.yaml:2:5: groups, depthwise, kernel and stride are conditions of conv2d rules");
  EXPECT_NE(ErrorOf("rules: [\n").find("rules.yaml:"), std::string::npos);
  EXPECT_NE(ErrorOf("rules: [\n").find("invalid YAML"), std::string::npos);
  Result<std::vector<DispatchRule>> missing = ReadDispatchRules("/nonexistent/rules.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cannot read the dispatch rule file '/nonexistent/rules.yaml'");
}

// Counts the calls of `fn` in the printed module after dispatch by `yaml`.
int CountAfter(const std::string& module_text, const std::string& yaml, const std::string& fn) {
  Result<ir::IRModule> m = text::ParseModule(module_text, "test.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().message();
  Result<std::vector<DispatchRule>> rules = ParseDispatchRules(yaml, "rules.yaml");
  EXPECT_TRUE(rules.ok()) << rules.status().message();
  Result<ir::IRModule> out = DispatchToLibraries(*n, *rules);
  EXPECT_TRUE(out.ok()) << out.status().message();
  std::string printed = text::PrintModule(*out);
  int count = 0;
  for (size_t p = printed.find(fn); p != std::string::npos; p = printed.find(fn, p + 1)) ++count;
  return count;
}

const char* kConvs = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 10, 10), dtype="float32"), w: R.Tensor((8, 8, 3, 3), dtype="float32"), d: R.Tensor((8, 1, 3, 3), dtype="float32"), p: R.Tensor((8, 8, 1, 1), dtype="float32"), n: R.Tensor((1, 10, 10, 8), dtype="float32"), h: R.Tensor((3, 3, 8, 8), dtype="float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            b = R.nn.conv2d(x, d, padding=[1, 1, 1, 1], groups=8)
            c = R.nn.conv2d(x, p, strides=[2, 2])
            e = R.nn.conv2d(n, h, data_layout="NHWC", kernel_layout="HWIO")
            gv = (a, b, c, e)
            R.output(gv)
        return gv
)";

TEST(DispatchToLibraries, ConditionsSelectCalls) {
  const std::string fn = "kiln.dnnl.conv2d";
  // NHWC never goes to the library: kiln.dnnl.conv2d takes NCHW / OIHW.
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: conv2d, library: dnnl}]", fn), 3);
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: conv2d, library: dnnl, when: {depthwise: true}}]", fn), 1);
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: conv2d, library: dnnl, when: {kernel: [1, 1]}}]", fn), 1);
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: conv2d, library: dnnl, when: {stride: [2, 2]}}]", fn), 1);
  // a: 8*10*10 outputs x 8*9 = 57600 MACs; b: 800 x 9 = 7200; c: 8*5*5 x 8 = 1600.
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: conv2d, library: dnnl, when: {min_macs: 7200}}]", fn), 2);
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: conv2d, library: dnnl, when: {max_macs: 7200}}]", fn), 2);
  // The first matching rule wins.
  EXPECT_EQ(CountAfter(kConvs,
                       "rules: [{op: conv2d, library: kiln, when: {groups: 8}}, {op: conv2d, library: dnnl}]", fn),
            2);
  EXPECT_EQ(CountAfter(kConvs, "rules: [{op: matmul, library: dnnl}]", fn), 0);
}

TEST(DispatchToLibraries, SymbolicShapesFailMacConditions) {
  const char* dyn = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16), dtype="float32"), w: R.Tensor((16, 4), dtype="float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y
)";
  EXPECT_EQ(CountAfter(dyn, "rules: [{op: matmul, library: dnnl}]", "kiln.dnnl.matmul"), 1);
  EXPECT_EQ(CountAfter(dyn, "rules: [{op: matmul, library: dnnl, when: {min_macs: 1}}]", "kiln.dnnl.matmul"), 0);
}

TEST(DispatchToLibraries, UnknownShapesOfKnownRankStillGoToTheLibrary) {
  // The library reads shapes at run time; only the rank must be known.
  const char* src = R"(
@I.ir_module
class Module:
    @R.function
    def main(u: R.Tensor(ndim=2, dtype="float32"), w: R.Tensor((3, 4), dtype="float32"), x: R.Tensor(ndim=4, dtype="float32"), k: R.Tensor(ndim=4, dtype="float32")):
        with R.dataflow():
            a = R.matmul(u, w)
            b = R.nn.conv2d(x, k)
            gv = (a, b)
            R.output(gv)
        return gv
)";
  EXPECT_EQ(CountAfter(src, "rules: [{op: matmul, library: dnnl}]", "kiln.dnnl.matmul"), 1);
  EXPECT_EQ(CountAfter(src, "rules: [{op: conv2d, library: dnnl}]", "kiln.dnnl.conv2d"), 1);
  // Conditions on unknown dimensions do not match.
  EXPECT_EQ(CountAfter(src, "rules: [{op: conv2d, library: dnnl, when: {kernel: [1, 1]}}]", "kiln.dnnl.conv2d"), 0);
  EXPECT_EQ(CountAfter(src, "rules: [{op: conv2d, library: dnnl, when: {depthwise: false}}]", "kiln.dnnl.conv2d"), 1);
}

// ---- cuBLAS (GPU modules) ----

// A matmul, then `rest` (bindings over y), returning gv.
std::string MatmulThen(const std::string& a, const std::string& b, const std::string& rest,
                       const std::string& extra_params = "") {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor(" + a +
         ", dtype=\"float32\"), w: R.Tensor(" + b + ", dtype=\"float32\")" + extra_params +
         "):\n        with R.dataflow():\n            y = R.matmul(x, w)\n" + rest +
         "            R.output(gv)\n        return gv\n";
}

const char* kCublas = "rules: [{op: matmul, library: cublas}]";

// How often the printed module calls exactly `fn` (quoted, so that
// kiln.cublas.matmul does not count kiln.cublas.matmul_bias).
int Calls(const std::string& src, const std::string& fn) { return CountAfter(src, kCublas, "\"" + fn + "\""); }

TEST(DispatchToCublas, MatmulsOfEveryRankCublasTakes) {
  // b (K, N) with any a; a batched b with a (M, K) or a of its rank.
  EXPECT_EQ(Calls(MatmulThen("(2, 3, 8)", "(8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 1);
  EXPECT_EQ(Calls(MatmulThen("(2, 3, 8)", "(2, 8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 1);
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(5, 8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 1);
  EXPECT_EQ(Calls(MatmulThen("(\"b\", 3, 8)", "(\"b\", 8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 1);
  // Broadcast batches (numpy rules) stay Kiln's: the library takes no broadcast.
  EXPECT_EQ(Calls(MatmulThen("(1, 3, 8)", "(2, 8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 0);
  EXPECT_EQ(Calls(MatmulThen("(2, 2, 3, 8)", "(2, 8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 0);
  EXPECT_EQ(Calls(MatmulThen("(\"b\", 3, 8)", "(1, 8, 4)", "            gv = y\n"), "kiln.cublas.matmul"), 0);
  // A dnnl rule still takes only b (K, N).
  EXPECT_EQ(CountAfter(MatmulThen("(2, 3, 8)", "(2, 8, 4)", "            gv = y\n"),
                       "rules: [{op: matmul, library: dnnl}]", "kiln.dnnl.matmul"),
            0);
}

TEST(DispatchToCublas, BiasAndActivationJoinTheMatmul) {
  const std::string bias = ", b: R.Tensor((4,), dtype=\"float32\")";
  std::string src = MatmulThen("(3, 8)", "(8, 4)",
                               "            z = R.add(y, b)\n            gv = R.nn.relu(z)\n", bias);
  EXPECT_EQ(Calls(src, "kiln.cublas.matmul_bias_relu"), 1);
  // The absorbed calls are gone (packed calls are not dead code to dce).
  EXPECT_EQ(Calls(src, "kiln.cublas.matmul"), 0);
  EXPECT_EQ(Calls(src, "kiln.cublas.matmul_bias"), 0);
  EXPECT_EQ(CountAfter(src, kCublas, "R.add("), 0);
  EXPECT_EQ(CountAfter(src, kCublas, "R.nn.relu("), 0);
  // The bias on either side; gelu in tanh form; an activation without a bias.
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(8, 4)", "            gv = R.add(b, y)\n", bias), "kiln.cublas.matmul_bias"), 1);
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(8, 4)", "            z = R.add(y, b)\n            gv = R.nn.gelu_tanh(z)\n",
                             bias),
                  "kiln.cublas.matmul_bias_gelu"),
            1);
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(8, 4)", "            gv = R.nn.relu(y)\n"), "kiln.cublas.matmul_relu"), 1);
  EXPECT_EQ(Calls(MatmulThen("(2, 3, 8)", "(2, 8, 4)", "            gv = R.add(y, b)\n", bias),
                  "kiln.cublas.matmul_bias"),
            1);
}

TEST(DispatchToCublas, WhatStaysApart) {
  const std::string bias = ", b: R.Tensor((4,), dtype=\"float32\")";
  // The matmul's value is used again: it must exist, so nothing joins.
  std::string twice = MatmulThen("(3, 8)", "(8, 4)", "            z = R.add(y, b)\n            gv = (y, z)\n", bias);
  EXPECT_EQ(Calls(twice, "kiln.cublas.matmul"), 1);
  EXPECT_EQ(Calls(twice, "kiln.cublas.matmul_bias"), 0);
  // Exact gelu (erf) is not cuBLASLt's.
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(8, 4)", "            gv = R.nn.gelu(y)\n"), "kiln.cublas.matmul"), 1);
  // Not a per-column bias: a [M, N] addend, a [1, N] one, a bias after the activation.
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(8, 4)", "            gv = R.add(y, c)\n", ", c: R.Tensor((3, 4), dtype=\"float32\")"),
                  "kiln.cublas.matmul"),
            1);
  EXPECT_EQ(Calls(MatmulThen("(3, 8)", "(8, 4)", "            gv = R.add(y, c)\n", ", c: R.Tensor((1, 4), dtype=\"float32\")"),
                  "kiln.cublas.matmul"),
            1);
  std::string after = MatmulThen("(3, 8)", "(8, 4)", "            z = R.nn.relu(y)\n            gv = R.add(z, b)\n", bias);
  EXPECT_EQ(Calls(after, "kiln.cublas.matmul_relu"), 1);
  EXPECT_EQ(CountAfter(after, kCublas, "R.add("), 1);
}

// ---- cuDNN (GPU modules) ----

TEST(DispatchToCudnn, SymmetricConvolutionsGoToCudnn) {
  const char* rules = "rules: [{op: conv2d, library: cudnn}]";
  // kConvs: a, b (grouped), c (strided) pad symmetrically; e is NHWC.
  EXPECT_EQ(CountAfter(kConvs, rules, "\"kiln.cudnn.conv2d\""), 3);
  const char* asym = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 10, 10), dtype="float32"), w: R.Tensor((8, 8, 3, 3), dtype="float32")):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, padding=[0, 0, 1, 1])
            R.output(gv)
        return gv
)";
  EXPECT_EQ(CountAfter(asym, rules, "kiln.cudnn.conv2d"), 0);
  EXPECT_EQ(CountAfter(asym, "rules: [{op: conv2d, library: dnnl}]", "kiln.dnnl.conv2d"), 1);
}

// A 3x3 convolution (8 -> 4 channels), then `rest` over y.
std::string ConvThen(const std::string& rest, const std::string& bias_shape) {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((1, 8, 10, 10), dtype=\"float32\"), "
         "w: R.Tensor((4, 8, 3, 3), dtype=\"float32\"), b: R.Tensor(" + bias_shape +
         ", dtype=\"float32\")):\n        with R.dataflow():\n            y = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n" +
         rest + "            R.output(gv)\n        return gv\n";
}

TEST(DispatchToCudnn, BiasAndReluJoinTheConvolution) {
  const char* rules = "rules: [{op: conv2d, library: cudnn}]";
  std::string both = ConvThen("            z = R.add(y, b)\n            gv = R.nn.relu(z)\n", "(1, 4, 1, 1)");
  EXPECT_EQ(CountAfter(both, rules, "\"kiln.cudnn.conv2d_bias_relu\""), 1);
  EXPECT_EQ(CountAfter(both, rules, "\"kiln.cudnn.conv2d\""), 0);
  EXPECT_EQ(CountAfter(both, rules, "R.add("), 0);
  EXPECT_EQ(CountAfter(ConvThen("            gv = R.add(b, y)\n", "(4, 1, 1)"), rules, "\"kiln.cudnn.conv2d_bias\""), 1);
  // Not a per-channel bias: [4] broadcasts along the width; [1, 4, 10, 10] is a full addend.
  EXPECT_EQ(CountAfter(ConvThen("            gv = R.add(y, b)\n", "(10,)"), rules, "\"kiln.cudnn.conv2d\""), 1);
  EXPECT_EQ(CountAfter(ConvThen("            gv = R.add(y, b)\n", "(1, 4, 10, 10)"), rules, "\"kiln.cudnn.conv2d\""), 1);
  // relu needs the bias first (cuDNN's fused call has one).
  std::string relu = ConvThen("            gv = R.nn.relu(y)\n", "(1, 4, 1, 1)");
  EXPECT_EQ(CountAfter(relu, rules, "\"kiln.cudnn.conv2d\""), 1);
  EXPECT_EQ(CountAfter(relu, rules, "R.nn.relu("), 1);
}

}  // namespace
}  // namespace transform
}  // namespace kiln
