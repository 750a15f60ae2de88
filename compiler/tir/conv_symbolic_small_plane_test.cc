// The symbolic conv schedule's channel-lane tiles for small output planes
// (conv_symbolic_small_plane.cc): unpadded convolutions with a constant
// weight (packed in blocks of 8) of symbolic height and width, against a
// double-precision reference at output planes of 1 to 16 points (each
// version: 1 x 1 to 4 x 4, single rows and columns), where one or two tiles
// of blocks run with partial sums (16 -> 32 on 1 x 1) or without, output
// channels a multiple of 16 (transposed) or not (stored lane by lane), odd
// input channels, stride and dilation, C stored or only the epilogue, and
// at larger planes that keep the flat tiles; and which kernels the lowered
// function holds.
#include <gtest/gtest.h>

#include <algorithm>
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

struct LaneCase {
  int64_t c, o, kh = 3, kw = 3;
  int64_t s = 1, d = 1, pad = 0;
  bool relu = true;  // bias + relu after the convolution; false: C itself is the result
  int64_t Ho(int64_t h) const { return (h + 2 * pad - d * (kh - 1) - 1) / s + 1; }
  int64_t Wo(int64_t w) const { return (w + 2 * pad - d * (kw - 1) - 1) / s + 1; }
  std::string Name() const {
    return std::to_string(c) + " -> " + std::to_string(o) + " k " + std::to_string(kh) + "x" + std::to_string(kw) +
           " s " + std::to_string(s) + " d " + std::to_string(d) + " pad " + std::to_string(pad) +
           (relu ? " relu" : " plain");
  }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, C, h, w], b[O, 1, 1]) = relu(conv2d(x, W) + b), W[O, C, kh, kw]
// a constant bound by name (pack-constant-weights packs it as OIHW8o).
std::string Module(const LaneCase& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " +
                    T("\"n\", " + s(k.c) + ", \"h\", \"w\"") + ", w: " + T(s(k.o) + ", " + s(k.c) + ", " + s(k.kh) +
                    ", " + s(k.kw)) + ", b: " + T(s(k.o) + ", 1, 1") +
                    ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n";
  const std::string p = s(k.pad);
  src += "            c = R.nn.conv2d(x, w, strides=[" + s(k.s) + ", " + s(k.s) + "], padding=[" + p + ", " + p + ", " + p +
         ", " + p + "], dilation=[" + s(k.d) + ", " + s(k.d) + "])\n";
  if (k.relu) {
    src += "            e = R.add(c, b)\n            gv = R.nn.relu(e)\n";
  } else {
    src += "            gv = c\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

driver::CompileOptions Options(const LaneCase& k, int threads, const std::vector<float>& w) {
  driver::CompileOptions options = test_util::ThreadsOptions(threads, /*winograd=*/false);
  options.params = {{"w", FloatTensor({k.o, k.c, k.kh, k.kw}, w)}};
  return options;
}

void CheckNumbers(const LaneCase& k, int threads, int64_t n, const std::vector<std::pair<int64_t, int64_t>>& sizes) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads) + " batch " + std::to_string(n));
  const std::vector<float> w = RandomFloats(k.o * k.c * k.kh * k.kw, 2, 0.5f), b = RandomFloats(k.o, 3);
  auto mod = CompileAndLoad(Module(k), Options(k, threads, w), threads);
  ASSERT_NE(mod, nullptr);
  for (const auto& [h, wd] : sizes) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const int64_t ho = k.Ho(h), wo = k.Wo(wd);
    const std::vector<float> x = RandomFloats(n * k.c * h * wd, 1 + h * 100 + wd);
    Result<Tensor> out = InvokeMain(*mod, {FloatTensor({n, k.c, h, wd}, x), FloatTensor({k.o, 1, 1}, b)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.o, ho, wo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t oc = 0; oc < k.o; ++oc) {
        for (int64_t y = 0; y < ho; ++y) {
          for (int64_t xo = 0; xo < wo; ++xo) {
            double acc = 0;
            for (int64_t ic = 0; ic < k.c; ++ic) {
              for (int64_t ky = 0; ky < k.kh; ++ky) {
                for (int64_t kx = 0; kx < k.kw; ++kx) {
                  const int64_t iy = y * k.s + ky * k.d - k.pad, ix = xo * k.s + kx * k.d - k.pad;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                  acc += double(x[((i * k.c + ic) * h + iy) * wd + ix]) * w[((oc * k.c + ic) * k.kh + ky) * k.kw + kx];
                }
              }
            }
            const double want = k.relu ? std::max(acc + b[oc], 0.0) : acc;
            const double tol = 1e-5 * double(k.c * k.kh * k.kw) + 1e-5;
            const float at = got[((i * k.o + oc) * ho + y) * wo + xo];
            if (!(std::fabs(at - want) <= tol) && bad++ < 5) {
              ADD_FAILURE() << "n " << i << " o " << oc << " (" << y << ", " << xo << "): got " << at << ", want "
                            << want;
            }
          }
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// Inputs of a 3 x 3 stride-1 kernel whose outputs hold 1 to 16 points (1 x
// 1, 1 x 2, 2 x 1, 2 x 2, 1 x 5, 5 x 1, 2 x 3, 3 x 3, 2 x 5, 3 x 4, 2 x 7,
// 3 x 5, 4 x 4, 1 x 16, 16 x 1), then 17 to 100 (the flat tiles).
const std::vector<std::pair<int64_t, int64_t>> kSizes = {
    {3, 3}, {3, 4},  {4, 3},  {4, 4},  {3, 7},  {7, 3},  {4, 5},  {5, 5},   {4, 7},   {5, 6},  {4, 9},
    {5, 7}, {6, 6},  {3, 18}, {18, 3}, {3, 19}, {5, 8},  {7, 7},  {12, 12}, {6, 14},  {9, 20}};

TEST(ConvSymbolicSmallPlaneTest, NumbersOneThread) {
  CheckNumbers({10, 16}, 1, 1, kSizes);  // mtcnn_pnet's second convolution: 2 blocks a tile up to 12 points
  CheckNumbers({16, 32}, 1, 1, kSizes);  // its third: 4 blocks, partial sums on 1 to 2 points
  CheckNumbers({5, 24}, 1, 2, kSizes);   // 3 blocks: stored lane by lane; batch 2
  LaneCase plain{13, 48};
  plain.relu = false;  // C itself stored
  CheckNumbers(plain, 1, 1, kSizes);
}

TEST(ConvSymbolicSmallPlaneTest, NumbersTwoThreadsStrideDilationKernels) {
  CheckNumbers({7, 64}, 2, 2, kSizes);  // 8 blocks: tiles of fewer blocks from 4 points on
  LaneCase strided{6, 16};
  strided.s = 2;
  CheckNumbers(strided, 1, 1, {{3, 3}, {5, 5}, {7, 9}, {9, 9}, {11, 3}, {3, 33}, {13, 13}, {21, 17}});
  LaneCase dilated{4, 32};
  dilated.d = 2;
  CheckNumbers(dilated, 2, 1, {{5, 5}, {6, 7}, {8, 8}, {7, 12}, {9, 9}, {20, 20}});
  LaneCase wide{9, 16, 2, 5};  // a 2 x 5 kernel
  CheckNumbers(wide, 1, 2, {{2, 5}, {3, 6}, {4, 8}, {5, 9}, {3, 20}, {17, 5}, {10, 10}});
}

// Allocations whose name holds `part`.
bool Allocates(const ir::Stmt& body, const std::string& part) {
  struct Find : StmtExprVisitor {
    std::string part;
    bool found = false;
    void VisitStmt(const ir::Stmt& s) override {
      if (const auto* a = ir::As<ir::AllocateNode>(s)) found |= a->buffer->name.find(part) != std::string::npos;
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.part = part;
  find.VisitStmt(body);
  return find.found;
}

TEST(ConvSymbolicSmallPlaneTest, WhichConvolutionsTakeTheLanes) {
  auto lowered = [](const LaneCase& k) {
    return test_util::LowerPrimFunc(Module(k), Options(k, 1, RandomFloats(k.o * k.c * k.kh * k.kw, 2)), "conv2d");
  };
  ir::PrimFunc f = lowered({10, 16});
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Allocates(f->body, "_lanes_rows"));
  EXPECT_TRUE(Allocates(f->body, "_small"));  // the flat tiles stay for larger planes
  // Padded (the padded copy's tiles), 8 output channels (an OIHW weight:
  // one block is not packed) and 1 x 1 kernels (the flat rows) do not.
  LaneCase padded{10, 16};
  padded.pad = 1;
  for (const LaneCase& k : {padded, LaneCase{10, 8}, LaneCase{10, 16, 1, 1}}) {
    SCOPED_TRACE(k.Name());
    ir::PrimFunc g = lowered(k);
    ASSERT_NE(g, nullptr);
    EXPECT_FALSE(Allocates(g->body, "_lanes_rows"));
  }
}

// Divisions (floor or truncating) and floor remainders by a run-time value in
// the values of the lanes' point offsets (lets named lp*), and how many such
// lets there are.
std::pair<int, int> PointOffsetDivisions(const ir::Stmt& body) {
  struct Find : StmtExprVisitor {
    int divisions = 0, offsets = 0;
    bool in_offset = false;
    void VisitStmt(const ir::Stmt& s) override {
      if (const auto* let = ir::As<ir::LetStmtNode>(s); let != nullptr && let->var->name.rfind("lp", 0) == 0) {
        ++offsets;
        in_offset = true;
        VisitExpr(let->value);
        in_offset = false;
        VisitStmt(let->body);
        return;
      }
      StmtExprVisitor::VisitStmt(s);
    }
    void VisitExpr(const ir::PrimExpr& e) override {
      const ir::TirKind k = e->kind();
      if (in_offset && (k == ir::TirKind::kFloorDiv || k == ir::TirKind::kFloorMod || k == ir::TirKind::kDiv)) {
        const auto* bin = static_cast<const ir::BinaryNode*>(e.get());
        divisions += bin->b->kind() != ir::TirKind::kIntImm;  // (a stride's Wo = (W - k) // s + 1 is not one)
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } find;
  find.VisitStmt(body);
  return {find.divisions, find.offsets};
}

TEST(ConvSymbolicSmallPlaneTest, PointOffsetsTakeNoDivision) {
  // Each point's offset steps from the previous point's (a column on, or
  // the next row at the end of one), not p / Wo and p % Wo per point: a
  // guarded division by the run-time width each, 26 of the 112 cache lines
  // mtcnn_pnet's 10 -> 16 ran at 12 x 12. (The numbers: NumbersOneThread and
  // the strided and dilated cases.)
  for (LaneCase k : {LaneCase{10, 16}, LaneCase{6, 16, 3, 3, 2}}) {
    SCOPED_TRACE(k.Name());
    ir::PrimFunc f =
        test_util::LowerPrimFunc(Module(k), Options(k, 1, RandomFloats(k.o * k.c * k.kh * k.kw, 2)), "conv2d");
    ASSERT_NE(f, nullptr);
    auto [divisions, offsets] = PointOffsetDivisions(f->body);
    EXPECT_GT(offsets, 16);  // the versions of 2 to 16 points
    EXPECT_EQ(divisions, 0);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
