// fold-softmax-nan-guard: which where(isnan(softmax)) guards fold into the
// softmax (the printed module after the pass), and the numbers of a guarded
// softmax with fully masked and NaN rows through the whole driver and the VM
// against a double reference.
#include "compiler/transform/fold_softmax_nan_guard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"

namespace kiln {
namespace {

using tir::test_util::FloatTensor;

// x: (rows, 20) float32; `body` the dataflow bindings, ending in `gv`.
std::string Module(const std::string& rows, const std::string& body) {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((" + rows +
         ", 20), dtype=\"float32\")):\n        n = T.int64()\n        with R.dataflow():\n" + body +
         "            R.output(gv)\n        return gv\n";
}

const char* kGuard =
    "            s = R.nn.softmax(x, axis=-1)\n"
    "            c = R.isnan(s)\n"
    "            gv = R.where(c, R.const(0.25, \"float32\"), s)\n";

std::string Fold(const std::string& source) {
  Result<ir::IRModule> m = text::ParseModule(source, "guard.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().message();
  if (!n.ok()) return "";
  Result<ir::IRModule> out = transform::FoldSoftmaxNanGuard(*n);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? text::PrintModule(*out) : "";
}

std::string Printed(const std::string& source) {
  Result<ir::IRModule> m = text::ParseModule(source, "guard.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  return n.ok() ? text::PrintModule(*n) : "";
}

TEST(FoldSoftmaxNanGuard, GuardBecomesTheSoftmaxAttribute) {
  for (const std::string rows : {"3", "\"n\""}) {
    std::string after = Fold(Module(rows, kGuard));
    EXPECT_NE(after.find("gv: R.Tensor((" + std::string(rows == "3" ? "3" : "n") +
                         ", 20), dtype=\"float32\") = R.nn.softmax(x, axis=-1, nan_to=0.25)"),
              std::string::npos)
        << after;
    EXPECT_EQ(after.find("R.where("), std::string::npos) << after;
  }
}

TEST(FoldSoftmaxNanGuard, OtherFormsAreLeftAlone) {
  const std::vector<std::string> bodies = {
      // The softmax is used besides the guard (folding would compute it twice).
      "            s = R.nn.softmax(x, axis=-1)\n            c = R.isnan(s)\n"
      "            w = R.where(c, R.const(0, \"float32\"), s)\n            gv = R.add(w, s)\n",
      // The NaN test is used besides the guard.
      "            s = R.nn.softmax(x, axis=-1)\n            c = R.isnan(s)\n"
      "            w = R.where(c, R.const(0, \"float32\"), s)\n"
      "            gv = R.where(c, w, R.const(1, \"float32\"))\n",
      // The guard keeps NaN and replaces the rest.
      "            s = R.nn.softmax(x, axis=-1)\n            c = R.isnan(s)\n"
      "            gv = R.where(c, s, R.const(0, \"float32\"))\n",
      // The replacement is not one constant.
      "            s = R.nn.softmax(x, axis=-1)\n            c = R.isnan(s)\n"
      "            gv = R.where(c, x, s)\n",
      // The test is of another tensor.
      "            s = R.nn.softmax(x, axis=-1)\n            c = R.isnan(x)\n"
      "            gv = R.where(c, R.const(0, \"float32\"), s)\n",
  };
  for (const std::string& body : bodies) {
    std::string source = Module("3", body);
    EXPECT_EQ(Fold(source), Printed(source)) << body;
  }
}

TEST(FoldSoftmaxNanGuard, NumbersThroughTheDriver) {
  // Row 0 ordinary, row 1 fully masked (-inf: softmax is NaN there), row 2
  // with one NaN (the whole row NaN), row 3 partly masked.
  const int64_t rows = 4, cols = 20;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(rows * cols);
  for (int64_t j = 0; j < cols; ++j) {
    x[j] = 0.37f * static_cast<float>(j % 7) - 1.1f;
    x[cols + j] = -inf;
    x[2 * cols + j] = 0.1f * static_cast<float>(j);
    x[3 * cols + j] = j % 3 == 0 ? -inf : 0.2f * static_cast<float>(j);
  }
  x[2 * cols + 5] = std::numeric_limits<float>::quiet_NaN();
  auto mod = tir::test_util::CompileAndLoad(Module("\"n\"", kGuard), driver::CompileOptions{}, 1);
  ASSERT_NE(mod, nullptr);
  Result<Tensor> out = tir::test_util::InvokeMain(*mod, {FloatTensor({rows, cols}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{rows, cols}));
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -HUGE_VAL, sum = 0;
    bool nan = false;
    for (int64_t j = 0; j < cols; ++j) {
      nan |= std::isnan(x[r * cols + j]);
      mx = std::max(mx, double(x[r * cols + j]));
    }
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(double(x[r * cols + j]) - mx);
    for (int64_t j = 0; j < cols; ++j) {
      double want = std::exp(double(x[r * cols + j]) - mx) / sum;
      if (nan || std::isnan(want)) want = 0.25;
      EXPECT_NEAR(out->data<float>()[r * cols + j], want, 1e-6) << r << "," << j;
    }
  }
}

}  // namespace
}  // namespace kiln
