// combine-shared-matmuls: which matmuls of one constant weight become one
// (the printed module before and after), and the numbers of a combined
// module through the whole driver and the VM against a double reference.
#include "compiler/transform/combine_shared_matmuls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/transform/bind_params.h"

namespace kiln {
namespace {

using tir::test_util::FloatTensor;
using tir::test_util::RandomFloats;

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// Three projections of slices of x through one weight w, as an unrolled
// recurrent network's input projections; a recurrent product h @ u chains
// through two steps (its second input depends on its first product).
std::string StepsModule(std::string batch) {
  if (batch == "n") batch = "\"n\"";
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("3, " + batch + ", 8") + ", w: " + T("8, 5") +
         ", u: " + T("5, 5") + ", h: " + T(batch + ", 5") +
         "):\n        n = T.int64()\n        with R.dataflow():\n"
         "            x0 = R.take(x, R.const(0, \"int64\"), axis=0)\n"
         "            p0 = R.matmul(x0, w)\n"
         "            r0 = R.matmul(h, u)\n"
         "            s0 = R.add(p0, r0)\n"
         "            h1 = R.tanh(s0)\n"
         "            x1 = R.take(x, R.const(1, \"int64\"), axis=0)\n"
         "            p1 = R.matmul(x1, w)\n"
         "            r1 = R.matmul(h1, u)\n"
         "            s1 = R.add(p1, r1)\n"
         "            h2 = R.tanh(s1)\n"
         "            x2 = R.take(x, R.const(2, \"int64\"), axis=0)\n"
         "            p2 = R.matmul(x2, w)\n"
         "            gv = R.add(p2, h2)\n"
         "            R.output(gv)\n"
         "        return gv\n";
}

Tensor Filled(const std::vector<int64_t>& shape, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return FloatTensor(shape, RandomFloats(n, seed));
}

// The printed module after binding w and u to constants and the pass.
std::string Rewrite(const std::string& source) {
  Result<ir::IRModule> m = text::ParseModule(source, "steps.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().message();
  if (!n.ok()) return "";
  Result<ir::IRModule> bound = transform::BindParams(*n, {{"w", Filled({8, 5}, 1)}, {"u", Filled({5, 5}, 2)}});
  EXPECT_TRUE(bound.ok()) << bound.status().message();
  if (!bound.ok()) return "";
  Result<ir::IRModule> out = transform::CombineSharedMatmuls(*bound);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? text::PrintModule(*out) : "";
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(CombineSharedMatmuls, IndependentProductsOfOneWeightBecomeOne) {
  for (const std::string batch : {"2", "n"}) {
    std::string before = Rewrite(StepsModule(batch));
    // p0, p1, p2 (input projections) are one matmul over 3 x batch rows; the
    // recurrent r0, r1 (r1's input depends on r0) stay two.
    EXPECT_EQ(Count(before, "R.matmul("), 3) << before;
    std::string rows = batch == "n" ? "n * 3" : "6";
    EXPECT_NE(before.find("R.Tensor((" + rows + ", 8), dtype=\"float32\") = R.reshape("), std::string::npos) << before;
    EXPECT_NE(before.find("R.Tensor((3, " + batch + ", 5), dtype=\"float32\") = R.reshape("), std::string::npos) << before;
    EXPECT_EQ(Count(before, "R.take(mm_shared"), 3) << before;
  }
}

TEST(CombineSharedMatmuls, DependentOrDifferentProductsAreLeftAlone) {
  // One product per weight, or a chain through one weight: nothing to do.
  std::string chain =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("2, 8") + ", w: " + T("8, 8") + ", u: " +
      T("8, 5") +
      "):\n        with R.dataflow():\n            a = R.matmul(x, w)\n            b = R.matmul(a, w)\n"
      "            c = R.matmul(b, u)\n            R.output(c)\n        return c\n";
  Result<ir::IRModule> m = text::ParseModule(chain, "chain.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  ASSERT_TRUE(n.ok()) << n.status().message();
  Result<ir::IRModule> bound = transform::BindParams(*n, {{"w", Filled({8, 8}, 1)}, {"u", Filled({8, 5}, 2)}});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  Result<ir::IRModule> out = transform::CombineSharedMatmuls(*bound);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(text::PrintModule(*out), text::PrintModule(*bound));
  // Weights that are parameters (not constants) are left alone too.
  Result<ir::IRModule> unbound = transform::CombineSharedMatmuls(*n);
  ASSERT_TRUE(unbound.ok());
  EXPECT_EQ(text::PrintModule(*unbound), text::PrintModule(*n));
}

TEST(CombineSharedMatmuls, NumbersThroughTheDriver) {
  // The steps module with w and u bound, compiled (the pass in the pipeline)
  // and run at batch 2, against a double reference.
  const int64_t b = 2;
  Tensor w = Filled({8, 5}, 1), u = Filled({5, 5}, 2);
  driver::CompileOptions options;
  options.params = {{"w", w}, {"u", u}};
  auto mod = tir::test_util::CompileAndLoad(StepsModule("n"), options, 1);
  ASSERT_NE(mod, nullptr);
  std::vector<float> x = RandomFloats(3 * b * 8, 3), h = RandomFloats(b * 5, 4);
  Result<Tensor> out = tir::test_util::InvokeMain(*mod, {FloatTensor({3, b, 8}, x), FloatTensor({b, 5}, h)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{b, 5}));
  const float* wf = w.data<float>();
  const float* uf = u.data<float>();
  auto proj = [&](int t, int64_t r, int64_t j) {
    double acc = 0;
    for (int64_t k = 0; k < 8; ++k) acc += double(x[(t * b + r) * 8 + k]) * wf[k * 5 + j];
    return acc;
  };
  auto rec = [&](const std::vector<double>& hh, int64_t r, int64_t j) {
    double acc = 0;
    for (int64_t k = 0; k < 5; ++k) acc += hh[r * 5 + k] * uf[k * 5 + j];
    return acc;
  };
  std::vector<double> h0(h.begin(), h.end()), h1(b * 5), h2(b * 5);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t j = 0; j < 5; ++j) h1[r * 5 + j] = std::tanh(proj(0, r, j) + rec(h0, r, j));
  for (int64_t r = 0; r < b; ++r)
    for (int64_t j = 0; j < 5; ++j) h2[r * 5 + j] = std::tanh(proj(1, r, j) + rec(h1, r, j));
  for (int64_t r = 0; r < b; ++r)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_NEAR(out->data<float>()[r * 5 + j], proj(2, r, j) + h2[r * 5 + j], 1e-5) << r << "," << j;
}

}  // namespace
}  // namespace kiln
