// conv-transpose-phases: which conv2d_transpose calls become convolutions and
// in which form. The numbers of every form (against a scatter reference, at
// several shapes and attributes) are checked in tests/ops/op_conv_test.cc
// (OpConv.Conv2dTransposePhases).
#include "compiler/transform/conv_transpose_phases.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// The printed main after the pass, for conv2d_transpose(x, w, attrs).
std::string Rewrite(const std::string& x, const std::string& w, const std::string& attrs) {
  std::string source = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(x) + ", w: " + T(w) +
                       "):\n        h = T.int64()\n        with R.dataflow():\n            gv = R.nn.conv2d_transpose(x, w" +
                       attrs + ")\n            R.output(gv)\n        return gv\n";
  Result<ir::IRModule> m = text::ParseModule(source, "ct.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().message();
  if (!n.ok()) return "";
  Result<ir::IRModule> r = transform::ConvTransposeToPhases(*n);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? text::PrintModule(*r) : "";
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ConvTransposePhases, AlikePhasesAreOneConvAndADepthToSpace) {
  // 2x2 stride 2: four 1x1 phases, stacked as 4 * 24 output channels.
  std::string out = Rewrite("1, 24, \"h\", 40", "24, 24, 2, 2", ", strides=[2, 2]");
  EXPECT_EQ(Count(out, "R.nn.conv2d("), 1) << out;
  EXPECT_EQ(Count(out, "conv2d_transpose"), 0) << out;
  EXPECT_NE(out.find("R.Tensor((1, 96, h, 40)"), std::string::npos) << out;
  EXPECT_NE(out.find("axes=[0, 3, 4, 1, 5, 2]"), std::string::npos) << out;
  EXPECT_NE(out.find("R.Tensor((1, 24, h * 2, 80)"), std::string::npos) << out;
}

TEST(ConvTransposePhases, UnlikePhasesAreOneConvEach) {
  // 4x4 stride 2 padding 1: phases read taps {1, 3} and {0, 2} with
  // different paddings: four 2x2 convolutions, interleaved.
  std::string out = Rewrite("1, 8, \"h\", 6", "8, 4, 4, 4", ", strides=[2, 2], padding=[1, 1, 1, 1]");
  EXPECT_EQ(Count(out, "R.nn.conv2d("), 4) << out;
  EXPECT_EQ(Count(out, "conv2d_transpose"), 0) << out;
  EXPECT_NE(out.find("R.Tensor((1, 4, h * 2, 12)"), std::string::npos) << out;
  // Groups keep one conv per phase, with the weight regrouped.
  std::string grouped = Rewrite("1, 8, \"h\", 6", "8, 3, 2, 2", ", strides=[2, 2], groups=2");
  EXPECT_EQ(Count(grouped, "R.nn.conv2d("), 4) << grouped;
  EXPECT_NE(grouped.find("groups=2"), std::string::npos) << grouped;
}

TEST(ConvTransposePhases, FormsLeftAsTheyAre) {
  // Dilation, and a kernel smaller than the stride (a phase with no tap).
  for (const std::string& attrs : {std::string(", strides=[2, 2], dilation=[2, 2]"), std::string(", strides=[3, 3]")}) {
    std::string out = Rewrite("1, 4, \"h\", 6", "4, 4, 2, 2", attrs);
    EXPECT_EQ(Count(out, "R.nn.conv2d_transpose("), 1) << attrs << "\n" << out;
    EXPECT_EQ(Count(out, "R.nn.conv2d("), 0) << attrs << "\n" << out;
  }
}

}  // namespace
}  // namespace kiln
