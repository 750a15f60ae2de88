// Library dispatch end to end: the same models compiled with generated
// kernels and with matmul / conv2d sent to oneDNN (dispatch-library rules)
// give the same results, with weights as arguments and bound as constants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/text/text.h"
#include "runtime/any.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

std::vector<transform::DispatchRule> Rules(const std::string& yaml) {
  Result<std::vector<transform::DispatchRule>> r = transform::ParseDispatchRules(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : std::vector<transform::DispatchRule>{};
}

// Compiles `src` with `options`, runs main on `args`, returns the result.
Tensor RunMain(const std::string& src, const driver::CompileOptions& options, const std::vector<Tensor>& args) {
  auto module = CompileAndLoad(src, "test.relax", options);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return Tensor();
  auto ctx = (*module)->CreateContext();
  std::vector<Any> in(args.begin(), args.end());
  Any result;
  Status st = ctx->Invoke("main", Span<const Any>(in.data(), in.size()), &result);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return st.ok() ? result.tensor() : Tensor();
}

// The lowered Relax text, to see which calls went where.
std::string Lowered(const std::string& src, const driver::CompileOptions& options) {
  Result<ir::IRModule> m = text::ParseModule(src, "test.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<std::string> t = driver::EmitText(*m, driver::EmitKind::kRelax, options);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : "";
}

float RelErr(const Tensor& got, const Tensor& want) {
  float scale = 0;
  for (int64_t i = 0; i < want.NumElements(); ++i) scale = std::max(scale, std::fabs(want.data<float>()[i]));
  return MaxAbsDiff(got, want) / std::max(scale, 1e-6f);
}

std::vector<Tensor> ResNetInputs() {
  std::vector<Tensor> in = {RandomTensor({1, 64, 56, 56}, 1)};
  for (int conv = 0; conv < 2; ++conv) {
    Tensor w = RandomTensor({64, 64, 3, 3}, 10 + conv);
    for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] *= 0.05f;
    in.push_back(w);
    in.push_back(RandomTensor({64}, 20 + conv));
    in.push_back(RandomTensor({64}, 30 + conv));
    in.push_back(RandomTensor({64}, 40 + conv));
    Tensor var = RandomTensor({64}, 50 + conv);
    for (int i = 0; i < 64; ++i) var.data<float>()[i] = 0.5f + 0.25f * var.data<float>()[i];
    in.push_back(var);
  }
  return in;
}

TEST(LibraryDispatch, ResNetBlockSameWithOneDnnConvolutions) {
  std::string src = ReadFile("examples/resnet_block.relax");
  std::vector<Tensor> in = ResNetInputs();
  for (bool bind : {false, true}) {
    driver::CompileOptions kiln_opts;
    std::vector<Tensor> args = in;
    if (bind) {
      const char* names[] = {"w1", "g1", "be1", "m1", "v1", "w2", "g2", "be2", "m2", "v2"};
      for (int i = 0; i < 10; ++i) kiln_opts.params.push_back({names[i], in[i + 1]});
      args.resize(1);
    }
    driver::CompileOptions dnnl_opts = kiln_opts;
    dnnl_opts.dispatch_rules = Rules("rules: [{op: conv2d, library: dnnl}]");
    std::string lowered = Lowered(src, dnnl_opts);
    size_t n = 0;
    for (size_t p = lowered.find("kiln.dnnl.conv2d"); p != std::string::npos; p = lowered.find("kiln.dnnl.conv2d", p + 1)) ++n;
    EXPECT_EQ(n, 2u) << lowered;
    Tensor want = RunMain(src, kiln_opts, args);
    Tensor got = RunMain(src, dnnl_opts, args);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_LT(RelErr(got, want), 1e-5f) << (bind ? "bound weights" : "weights as arguments");
  }
}

TEST(LibraryDispatch, GroupedDilatedStridedConvolutionsSame) {
  const char* src = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 12, 15, 13), dtype="float32"), dw: R.Tensor((12, 1, 3, 3), dtype="float32"), gw: R.Tensor((18, 4, 3, 3), dtype="float32"), pw: R.Tensor((8, 18, 1, 1), dtype="float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, dw, strides=[2, 2], padding=[1, 1, 1, 1], groups=12)
            b = R.nn.relu(a)
            c = R.nn.conv2d(b, gw, padding=[2, 1, 0, 2], dilation=[2, 1], groups=3)
            d = R.nn.conv2d(c, pw)
            R.output(d)
        return d
)";
  std::vector<Tensor> args = {RandomTensor({2, 12, 15, 13}, 1), RandomTensor({12, 1, 3, 3}, 2),
                              RandomTensor({18, 4, 3, 3}, 3), RandomTensor({8, 18, 1, 1}, 4)};
  driver::CompileOptions kiln_opts;
  driver::CompileOptions dnnl_opts;
  dnnl_opts.dispatch_rules = Rules("rules: [{op: conv2d, library: dnnl}]");
  Tensor want = RunMain(src, kiln_opts, args);
  Tensor got = RunMain(src, dnnl_opts, args);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LT(RelErr(got, want), 1e-5f);
}

TEST(LibraryDispatch, MlpSameWithOneDnnMatmulsFromARuleFile) {
  std::string src = ReadFile("examples/mlp.relax");
  std::string path = ::testing::TempDir() + "/kiln_dispatch_rules.yaml";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("rules:\n  - op: matmul\n    library: dnnl\n", f);
    std::fclose(f);
  }
  driver::CompileOptions kiln_opts;
  driver::CompileOptions dnnl_opts;
  dnnl_opts.dispatch_rules_file = path;
  EXPECT_NE(Lowered(src, dnnl_opts).find("kiln.dnnl.matmul"), std::string::npos);
  EXPECT_EQ(Lowered(src, kiln_opts).find("kiln.dnnl.matmul"), std::string::npos);
  // examples/mlp.relax: x (n, 784), w0 (128, 784), b0 (128), w1 (10, 128), b1 (10); n = 3.
  std::vector<Tensor> args = {RandomTensor({3, 784}, 7), RandomTensor({128, 784}, 8), RandomTensor({128}, 9),
                              RandomTensor({10, 128}, 10), RandomTensor({10}, 11)};
  Tensor want = RunMain(src, kiln_opts, args);
  Tensor got = RunMain(src, dnnl_opts, args);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LT(RelErr(got, want), 1e-5f);
  // A missing rule file is the compile's error.
  dnnl_opts.dispatch_rules_file = path + ".missing";
  auto bad = CompileAndLoad(src, "mlp.relax", dnnl_opts);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot read the dispatch rule file"), std::string::npos);
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
