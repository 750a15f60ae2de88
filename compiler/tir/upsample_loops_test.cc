// SplitUpsampleLoops, as before/after TIR text: the vectorized loop of a
// nearest upsampling by 2 over a symbolic width reads each source column
// once; loops it must not touch (static extents, other divisors, no
// division) stay the same node. End to end: resize2d by 2 and 8 over
// symbolic sizes, with an elementwise add after it, against a C++ reference.
#include "compiler/tir/upsample_loops.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;

std::string Loops(const PrimFunc& f) {
  std::string text = Print(f);
  size_t at = text.find("        for ");
  return at == std::string::npos ? text : text.substr(at);
}

TEST(UpsampleLoopsTest, SymbolicWidthReadsEachSourceColumnOnce) {
  // PP-OCRv4 det's FPN: out2 = in2 + resize(out3), as fusion and the
  // default schedule leave it.
  PrimFunc before = ParseFunc(R"(
@T.prim_func
def up(a_handle: T.handle, c_handle: T.handle, b_handle: T.handle, h: T.int64, w: T.int64):
    a = T.match_buffer(a_handle, (96, h, w), "float32")
    c = T.match_buffer(c_handle, (96, h * 2, w * 2), "float32")
    b = T.match_buffer(b_handle, (96, h * 2, w * 2), "float32")
    for i1 in T.parallel(T.int64(96)):
        for i2 in range(h * 2):
            for i3 in T.vectorized(w * 2):
                b[i1, i2, i3] = c[i1, i2, i3] + a[i1, i2 // 2, i3 // 2]
)",
                              "up");
  PrimFunc after = SplitUpsampleLoops(before);
  ASSERT_NE(after, before);
  EXPECT_EQ(Loops(after), R"(        for i1 in T.parallel(T.int64(96)):
            for i2, i3_src in T.grid(h * 2, w):
                for i3_rep in T.vectorized(T.int64(2)):
                    b[i1, i2, i3_src * 2 + i3_rep] = c[i1, i2, i3_src * 2 + i3_rep] + a[i1, i2 // 2, i3_src]
)") << Print(after);
}

TEST(UpsampleLoopsTest, OtherLoopsStayTheSame) {
  // A static extent (the emitter's explicit vectors), a divisor that is not
  // the extent's factor, a loop with no division, and a modulo by another
  // constant: unchanged.
  for (const char* body : {
           "    for i in T.vectorized(T.int64(64)):\n        b[i] = a[i // 2]\n",
           "    for i in T.vectorized(w * 2):\n        b[i] = a[i // 4]\n",
           "    for i in T.vectorized(w * 2):\n        b[i] = a[i]\n",
           "    for i in T.vectorized(w * 2):\n        b[i] = a[i // 2] + a[i % 3]\n",
       }) {
    PrimFunc before = ParseFunc(std::string(R"(
@T.prim_func
def f(a_handle: T.handle, b_handle: T.handle, w: T.int64):
    a = T.match_buffer(a_handle, (w * 2 + 64,), "float32")
    b = T.match_buffer(b_handle, (w * 2 + 64,), "float32")
)") + body,
                                "f");
    EXPECT_EQ(SplitUpsampleLoops(before), before) << body;
  }
}

// resize2d by `s` (nearest, asymmetric, floor: source pixel (y // s, x // s))
// over symbolic H and W, plus y: the compiled kernel against the reference.
void CheckResize(int64_t s) {
  const std::string ss = std::to_string(s);
  const std::string src = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, "h", "w"), dtype="float32"), y: R.Tensor((1, 3, "h * )" + ss + R"(", "w * )" + ss +
                          R"("), dtype="float32")) -> R.Tensor((1, 3, "h * )" + ss + R"(", "w * )" + ss + R"("), dtype="float32"):
        h = T.int64()
        w = T.int64()
        with R.dataflow():
            lv0 = R.image.resize2d(x, R.shape([h * )" + ss + R"(, w * )" + ss +
                          R"(]), layout="NCHW", method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor", cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0, out_dtype="void")
            gv = R.add(lv0, y)
            R.output(gv)
        return gv
)";
  driver::CompileOptions options;
  PrimFunc kernel = test_util::LowerPrimFunc(src, options, "resize2d");
  ASSERT_NE(kernel, nullptr);
  EXPECT_NE(Print(kernel).find("_rep in T.vectorized(T.int64(" + ss + "))"), std::string::npos) << Print(kernel);
  std::shared_ptr<const vm::Module> mod = test_util::CompileAndLoad(src, options, 1);
  ASSERT_NE(mod, nullptr);
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{5, 7}, {1, 1}, {20, 33}}) {
    const int64_t ho = h * s, wo = w * s;
    std::vector<float> xd = test_util::RandomFloats(3 * h * w, 1 + h), yd = test_util::RandomFloats(3 * ho * wo, 2 + w);
    Result<Tensor> out = test_util::InvokeMain(
        *mod, {test_util::FloatTensor({1, 3, h, w}, xd), test_util::FloatTensor({1, 3, ho, wo}, yd)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->NumElements(), 3 * ho * wo);
    int bad = 0;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          float want = xd[(c * h + i / s) * w + j / s] + yd[(c * ho + i) * wo + j];
          if (out->data<float>()[(c * ho + i) * wo + j] != want) ++bad;
        }
    EXPECT_EQ(bad, 0) << "s = " << s << ", h = " << h << ", w = " << w;
  }
}

TEST(UpsampleLoopsTest, CompiledResizeByTwoMatchesReference) { CheckResize(2); }
TEST(UpsampleLoopsTest, CompiledResizeByEightMatchesReference) { CheckResize(8); }

}  // namespace
}  // namespace tir
}  // namespace kiln
