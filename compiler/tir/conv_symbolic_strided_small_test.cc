// The symbolic conv schedule's strided phase planes on small output planes
// (conv_symbolic_strided_small.cc): a stride-2 3 x 3 convolution padded by
// one, of symbolic height and width, against a double-precision reference
// at odd planes whose span is under one tile (1 x 1 to 5 x 5 outputs, the
// tile from column 0 reading the phase planes' zeroed tails) and over it
// (the flat tiles as before), batch 1 and 2, one and two threads; and the
// lowered kernel's one-tile branch.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/stmt_functor.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, C, h, w], w[O, C, 3, 3], b[O, 1, 1]) = swish(conv(x, w, stride 2, pad 1) + b).
std::string Module(int64_t c, int64_t o) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", \"h\", \"w\"") +
         ", w: " + T(s(o) + ", " + s(c) + ", 3, 3") + ", b: " + T(s(o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            c = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1])\n"
         "            e = R.add(c, b)\n            g = R.sigmoid(e)\n"
         "            gv = R.multiply(e, g)\n            R.output(gv)\n        return gv\n";
}

void CheckNumbers(int64_t c, int64_t o, int threads, int64_t n, const std::vector<std::pair<int64_t, int64_t>>& sizes) {
  SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o) + " threads " + std::to_string(threads) + " batch " +
               std::to_string(n));
  auto mod = CompileAndLoad(Module(c, o), test_util::ThreadsOptions(threads), threads);
  ASSERT_NE(mod, nullptr);
  const std::vector<float> w = RandomFloats(o * c * 9, 2), bias = RandomFloats(o, 3);
  for (const auto& [h, wd] : sizes) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const int64_t ho = (h - 1) / 2 + 1, wo = (wd - 1) / 2 + 1;
    const std::vector<float> x = RandomFloats(n * c * h * wd, 1 + h * 100 + wd);
    Result<Tensor> out = InvokeMain(*mod, {FloatTensor({n, c, h, wd}, x), FloatTensor({o, c, 3, 3}, w),
                                           FloatTensor({o, 1, 1}, bias)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, ho, wo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t oc = 0; oc < o; ++oc) {
        for (int64_t y = 0; y < ho; ++y) {
          for (int64_t xo = 0; xo < wo; ++xo) {
            double acc = bias[oc];
            for (int64_t ic = 0; ic < c; ++ic) {
              for (int64_t ky = 0; ky < 3; ++ky) {
                for (int64_t kx = 0; kx < 3; ++kx) {
                  const int64_t iy = y * 2 + ky - 1, ix = xo * 2 + kx - 1;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                  acc += double(x[((b * c + ic) * h + iy) * wd + ix]) * w[((oc * c + ic) * 3 + ky) * 3 + kx];
                }
              }
            }
            const double want = acc / (1.0 + std::exp(-acc));
            const double tol = 1e-5 * double(c * 9) + 1e-5;
            const int64_t at = ((b * o + oc) * ho + y) * wo + xo;
            if (!(std::fabs(got[at] - want) <= tol) && bad++ < 5) {
              ADD_FAILURE() << "n " << b << " o " << oc << " y " << y << " x " << xo << ": got " << got[at]
                            << ", want " << want;
            }
          }
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// Odd inputs (and a few even ones) whose outputs run from 1 x 1 (a span of
// 1) through 5 x 5 (span 29: NudeNet's 10 x 10 -> 5 x 5 layers) and 3 x 7
// to spans past one tile of 32 (5 x 7: 39; 11 x 11: 131).
const std::vector<std::pair<int64_t, int64_t>> kSizes = {{1, 1},  {3, 3},  {5, 5},  {7, 7},  {9, 9},  {10, 10},
                                                         {5, 13}, {13, 5}, {7, 11}, {9, 13}, {21, 21}, {11, 9}};

TEST(ConvSymbolicStridedSmallTest, NumbersOneThread) {
  CheckNumbers(5, 24, 1, 1, kSizes);   // tiles of 8 channels
  CheckNumbers(7, 12, 1, 2, kSizes);   // tiles of 6 channels, batch 2
}

TEST(ConvSymbolicStridedSmallTest, NumbersTwoThreads) {
  CheckNumbers(3, 16, 2, 2, kSizes);
  CheckNumbers(4, 5, 2, 1, kSizes);    // one channel a tile
}

// The plane_out buffers of a lowered kernel by scope: the one-tile
// branch's is local (32 columns a channel), PlaneGroups' global (the span's
// size).
class PlaneOutCounter : public StmtExprVisitor {
 public:
  int local = 0, global = 0;
  void VisitStmt(const ir::Stmt& s) override {
    if (const auto* a = ir::As<ir::AllocateNode>(s)) {
      if (a->buffer->name == "plane_out") ++(a->buffer->scope == "local" ? local : global);
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

TEST(ConvSymbolicStridedSmallTest, KernelHasTheOneTileBranch) {
  ir::PrimFunc f = test_util::LowerPrimFunc(Module(16, 32), test_util::ThreadsOptions(1), "conv2d");
  ASSERT_NE(f, nullptr);
  PlaneOutCounter count;
  count.VisitStmt(f->body);
  EXPECT_EQ(count.local, 1);
  EXPECT_EQ(count.global, 1);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
