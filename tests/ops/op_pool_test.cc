// Pools (max_pool2d, avg_pool2d, adaptive_avg_pool2d) against plain C++
// references: strides, padding, dilation, ceil_mode, count_include_pad, NHWC,
// symbolic spatial sizes; and every error message of op_pool.cc.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

struct Pool {
  Shape x;  // NCHW
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil = false, include_pad = false;
};

std::vector<double> RefPool(const Pool& p, const std::vector<double>& x, bool is_max, Shape* os) {
  int64_t H = p.x[2], W = p.x[3];
  auto out_size = [&](int64_t in, int64_t pa, int64_t pb, int64_t k, int64_t d, int64_t s) {
    int64_t num = in + pa + pb - (d * (k - 1) + 1) + (p.ceil ? s - 1 : 0);
    return num / s + 1;
  };
  int64_t OH = out_size(H, p.pt, p.pb, p.kh, p.dh, p.sh), OW = out_size(W, p.pl, p.pr, p.kw, p.dw, p.sw);
  *os = {p.x[0], p.x[1], OH, OW};
  std::vector<double> out;
  ForEachIndex(*os, [&](const Shape& i) {
    double m = -INFINITY, s = 0;
    int64_t inside = 0, padded = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky)
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        int64_t y = i[2] * p.sh + ky * p.dh - p.pt, xx = i[3] * p.sw + kx * p.dw - p.pl;
        if (y >= -p.pt && y < H + p.pb && xx >= -p.pl && xx < W + p.pr) ++padded;
        if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
        double v = x[Offset(p.x, {i[0], i[1], y, xx})];
        m = std::max(m, v);
        s += v;
        ++inside;
      }
    out.push_back(is_max ? m : s / std::max<int64_t>(p.include_pad ? padded : inside, 1));
  });
  return out;
}

std::string Attrs(const Pool& p) {
  auto l = [](int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  return "pool_size=" + l(p.kh, p.kw) + ", strides=" + l(p.sh, p.sw) + ", dilation=" + l(p.dh, p.dw) + ", padding=[" +
         std::to_string(p.pt) + ", " + std::to_string(p.pl) + ", " + std::to_string(p.pb) + ", " + std::to_string(p.pr) +
         "], ceil_mode=" + (p.ceil ? "True" : "False") + ", count_include_pad=" + (p.include_pad ? "True" : "False");
}

void CheckPools(const Pool& p, uint64_t seed) {
  Tensor x = RandomTensor(p.x, DType::Float32(), seed);
  Shape os;
  std::vector<double> want_max = RefPool(p, ToDoubles(x), true, &os);
  std::vector<double> want_avg = RefPool(p, ToDoubles(x), false, &os);
  std::string expr = "(R.nn.max_pool2d(x, " + Attrs(p) + "), R.nn.avg_pool2d(x, " + Attrs(p) + "))";
  auto r = RunMain(OneOpModule({"x: " + TensorType(p.x)}, expr), {x});
  ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want_max, os, 1e-6, 1e-6)) << expr;
  EXPECT_TRUE(AllClose(r->at(1), want_avg, os, 1e-5, 1e-5)) << expr;
}

TEST(OpPool, MaxAndAvg) {
  Pool a;  // the ResNet stem pool: 3x3, stride 2, pad 1
  a.x = {1, 2, 7, 7}, a.kh = a.kw = 3, a.sh = a.sw = 2, a.pt = a.pl = a.pb = a.pr = 1;
  CheckPools(a, 1);
  a.include_pad = true;
  CheckPools(a, 2);
  Pool b;  // ceil mode, asymmetric, dilation
  b.x = {2, 1, 6, 5}, b.kh = 2, b.kw = 3, b.sh = 2, b.sw = 2, b.dh = 1, b.dw = 2, b.pt = 0, b.pl = 1, b.pb = 0, b.pr = 0,
  b.ceil = true;
  CheckPools(b, 3);
  Pool c;  // size-1 dims and 1x1 window
  c.x = {1, 3, 1, 4};
  CheckPools(c, 4);
}

TEST(OpPool, MaxPoolNhwcAndSymbolic) {
  // NHWC: the same pool as NCHW on transposed data.
  Shape nhwc{1, 5, 5, 2};
  Tensor x = RandomTensor(nhwc, DType::Float32(), 5);
  std::vector<double> xv = ToDoubles(x), xn;
  Shape nchw{1, 2, 5, 5};
  ForEachIndex(nchw, [&](const Shape& i) { xn.push_back(xv[Offset(nhwc, {i[0], i[2], i[3], i[1]})]); });
  Pool p;
  p.x = nchw, p.kh = p.kw = 2, p.sh = p.sw = 2;
  Shape os;
  std::vector<double> ref = RefPool(p, xn, true, &os), want;
  Shape out_nhwc{os[0], os[2], os[3], os[1]};
  ForEachIndex(out_nhwc, [&](const Shape& i) { want.push_back(ref[Offset(os, {i[0], i[3], i[1], i[2]})]); });
  auto r = RunMain(OneOpModule({"x: " + TensorType(nhwc)}, "R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2], layout=\"NHWC\")"),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, out_nhwc, 0, 0));

  std::string src = OneOpModule({"x: R.Tensor((1, 1, \"h\", \"w\"), \"float32\")"},
                                "R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])");
  for (Shape xs : {Shape{1, 1, 1, 1}, Shape{1, 1, 8, 5}}) {
    Pool q;
    q.x = xs, q.kh = q.kw = 3, q.sh = q.sw = 2, q.pt = q.pl = q.pb = q.pr = 1;
    Tensor t = RandomTensor(xs, DType::Float32(), 6);
    std::vector<double> w = RefPool(q, ToDoubles(t), true, &os);
    auto s = RunMain(src, {t});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE(AllClose(s->at(0), w, os, 0, 0));
  }
}

TEST(OpPool, WindowsOverSymbolicAndStaticPlanes) {
  // The window schedule (pool_schedule.h) with static planes, and with
  // symbolic ones (interior found at run time, border taps as selects over
  // clamped loads): SPPF's 5 x 5 and 13 x 13 stride-1 windows, stride-2
  // windows with and without padding, asymmetric padding, dilation,
  // count_include_pad; planes smaller than the window, one column, odd sizes.
  // Stride-1 windows of more than 3 x 3 sum separably (in another order
  // than the taps'): 7 x 7 and 17 x 17 (wider than a pass unrolls) with
  // count_include_pad, 5 x 5 with asymmetric padding.
  struct Case {
    int64_t k, s, pad_lo, pad_hi, d;
    bool include_pad;
  };
  for (const Case& c : {Case{5, 1, 2, 2, 1, false}, Case{13, 1, 6, 6, 1, false}, Case{3, 2, 1, 1, 1, false},
                        Case{3, 2, 1, 1, 1, true}, Case{2, 2, 0, 0, 1, false}, Case{3, 1, 0, 2, 1, false},
                        Case{3, 1, 2, 2, 2, false}, Case{7, 1, 3, 3, 1, true}, Case{17, 1, 8, 8, 1, true},
                        Case{5, 1, 1, 3, 1, false}}) {
    Pool p;
    p.kh = p.kw = c.k, p.sh = p.sw = c.s, p.dh = p.dw = c.d, p.pt = p.pl = c.pad_lo, p.pb = p.pr = c.pad_hi;
    p.include_pad = c.include_pad;
    std::string expr = "(R.nn.max_pool2d(x, " + Attrs(p) + "), R.nn.avg_pool2d(x, " + Attrs(p) + "))";
    std::string symbolic = OneOpModule({"x: R.Tensor((1, 3, \"h\", \"w\"), \"float32\")"}, expr);
    for (Shape xs : {Shape{1, 3, 10, 10}, Shape{1, 3, 1, 1}, Shape{1, 3, 7, 20}, Shape{1, 3, 20, 33}, Shape{1, 3, 4, 1}}) {
      p.x = xs;
      SCOPED_TRACE(expr + " on " + std::to_string(xs[2]) + "x" + std::to_string(xs[3]));
      int64_t span = c.d * (c.k - 1) + 1;
      if (xs[2] + c.pad_lo + c.pad_hi < span || xs[3] + c.pad_lo + c.pad_hi < span) continue;  // no output
      Tensor x = RandomTensor(xs, DType::Float32(), 11 + xs[2] * 7 + xs[3]);
      Shape os;
      std::vector<double> want_max = RefPool(p, ToDoubles(x), true, &os);
      std::vector<double> want_avg = RefPool(p, ToDoubles(x), false, &os);
      for (const std::string& src : {symbolic, OneOpModule({"x: " + TensorType(xs)}, expr)}) {
        auto r = RunMain(src, {x});
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_TRUE(AllClose(r->at(0), want_max, os, 0, 0)) << (src == symbolic ? "symbolic" : "static");
        EXPECT_TRUE(AllClose(r->at(1), want_avg, os, 1e-5, 1e-5)) << (src == symbolic ? "symbolic" : "static");
      }
    }
  }
}

TEST(OpPool, AdaptiveAvgPool) {
  struct Case {
    Shape x;
    int64_t oh, ow;
    std::string attr;
  };
  for (const Case& c : {Case{{2, 3, 7, 7}, 1, 1, "output_size=[1, 1]"}, Case{{1, 2, 5, 7}, 2, 3, "output_size=[2, 3]"},
                        Case{{1, 1, 4, 4}, 4, 4, ""}, Case{{1, 2, 6, 6}, 4, 4, "output_size=4"}}) {
    Tensor x = RandomTensor(c.x, DType::Float32(), 7);
    std::vector<double> xv = ToDoubles(x), want;
    Shape os{c.x[0], c.x[1], c.oh, c.ow};
    int64_t H = c.x[2], W = c.x[3];
    ForEachIndex(os, [&](const Shape& i) {
      int64_t y0 = i[2] * H / c.oh, y1 = ((i[2] + 1) * H + c.oh - 1) / c.oh;
      int64_t x0 = i[3] * W / c.ow, x1 = ((i[3] + 1) * W + c.ow - 1) / c.ow;
      double s = 0;
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t xx = x0; xx < x1; ++xx) s += xv[Offset(c.x, {i[0], i[1], y, xx})];
      want.push_back(s / ((y1 - y0) * (x1 - x0)));
    });
    std::string expr = "R.nn.adaptive_avg_pool2d(x" + (c.attr.empty() ? "" : ", " + c.attr) + ")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.x)}, expr), {x});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5)) << expr;
  }
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpPoolError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({1, 2, 4, 4});
  ExpectOpError({x}, "R.nn.max_pool2d(x, pool_size=[2, 2, 2])", StatusCode::kInvalidArgument,
                "R.nn.max_pool2d: pool_size takes 1 or 2 values, got 3");
  ExpectOpError({x}, "R.nn.max_pool2d(x, pool_size=0)", StatusCode::kInvalidArgument,
                "R.nn.max_pool2d: pool_size must be positive");
  ExpectOpError({x}, "R.nn.avg_pool2d(x, strides=[0, 1])", StatusCode::kInvalidArgument,
                "R.nn.avg_pool2d: strides must be positive");
  ExpectOpError({x}, "R.nn.avg_pool2d(x, dilation=0)", StatusCode::kInvalidArgument,
                "R.nn.avg_pool2d: dilation must be positive");
  ExpectOpError({x}, "R.nn.avg_pool2d(x, padding=[1, 1, 1])", StatusCode::kInvalidArgument,
                "R.nn.avg_pool2d: padding takes 1, 2 or 4 values, got 3");
  ExpectOpError({x}, "R.nn.avg_pool2d(x, padding=-1)", StatusCode::kInvalidArgument,
                "R.nn.avg_pool2d: padding must not be negative");
  ExpectOpError({x}, "R.nn.max_pool2d(x, layout=\"NCWH\")", StatusCode::kInvalidArgument,
                "R.nn.max_pool2d: layout \"NCWH\" is not supported (expected one of \"NCHW\", \"NHWC\")");
  ExpectOpError({x}, "R.nn.max_pool2d(x, out_layout=\"NHWC\")", StatusCode::kUnimplemented,
                "R.nn.max_pool2d: out_layout \"NHWC\" differs from layout \"NCHW\"");
  ExpectOpError({x}, "R.nn.max_pool2d(x, pool_size=[5, 5])", StatusCode::kInvalidArgument,
                "R.nn.max_pool2d: the window 5x5 does not fit in the padded input (1, 2, 4, 4)");
  ExpectOpError({"y: " + TensorType({2, 4, 4})}, "R.nn.max_pool2d(y)", StatusCode::kInvalidArgument,
                "R.nn.max_pool2d: data must have rank 4, got 3");
  ExpectOpError({x}, "R.nn.max_pool2d(x, ceil_mode=3)", StatusCode::kInvalidArgument,
                "R.nn.max_pool2d: ceil_mode must be True or False");
  ExpectOpError({x}, "R.nn.adaptive_avg_pool2d(x, output_size=[0, 1])", StatusCode::kInvalidArgument,
                "R.nn.adaptive_avg_pool2d: output_size must be positive");
  ExpectOpError({"y: " + TensorType({2, 4, 4})}, "R.nn.adaptive_avg_pool2d(y)", StatusCode::kInvalidArgument,
                "R.nn.adaptive_avg_pool2d: data must have rank 4, got 3");
  ExpectOpError({x}, "R.nn.adaptive_avg_pool2d(x, pool_size=1)", StatusCode::kInvalidArgument,
                "R.nn.adaptive_avg_pool2d: unknown attribute 'pool_size' (known: output_size, layout, out_layout)");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
