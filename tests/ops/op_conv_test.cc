// Convolutions (conv1d, conv2d, conv2d_transpose) against plain C++
// references: strides, 1/2/4-value padding, dilation, groups, depthwise, NHWC
// with HWIO kernels, symbolic spatial sizes; and every error message.
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

struct Conv {
  Shape x, w;  // NCHW and OIHW (conv) or IOHW (transpose)
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0, groups = 1, oph = 0, opw = 0;
};

// conv2d by direct summation (NCHW, OIHW).
std::vector<double> RefConv2d(const Conv& c, const std::vector<double>& x, const std::vector<double>& w, Shape* os) {
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.w[0], I = c.w[1], KH = c.w[2], KW = c.w[3];
  int64_t OH = (H + c.pt + c.pb - c.dh * (KH - 1) - 1) / c.sh + 1, OW = (W + c.pl + c.pr - c.dw * (KW - 1) - 1) / c.sw + 1;
  *os = {N, O, OH, OW};
  (void)C;
  std::vector<double> out;
  ForEachIndex(*os, [&](const Shape& i) {
    int64_t g = i[1] / (O / c.groups);
    double s = 0;
    for (int64_t ic = 0; ic < I; ++ic)
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t y = i[2] * c.sh + ky * c.dh - c.pt, xx = i[3] * c.sw + kx * c.dw - c.pl;
          if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
          s += x[Offset(c.x, {i[0], g * I + ic, y, xx})] * w[Offset(c.w, {i[1], ic, ky, kx})];
        }
    out.push_back(s);
  });
  return out;
}

// conv2d_transpose by scattering every input element (NCHW, IOHW).
std::vector<double> RefConv2dTranspose(const Conv& c, const std::vector<double>& x, const std::vector<double>& w,
                                       Shape* os) {
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], OPG = c.w[1], KH = c.w[2], KW = c.w[3];
  int64_t IPG = C / c.groups;
  int64_t OH = (H - 1) * c.sh - c.pt - c.pb + c.dh * (KH - 1) + c.oph + 1;
  int64_t OW = (W - 1) * c.sw - c.pl - c.pr + c.dw * (KW - 1) + c.opw + 1;
  *os = {N, OPG * c.groups, OH, OW};
  std::vector<double> out(NumElements(*os), 0.0);
  ForEachIndex(c.x, [&](const Shape& i) {
    int64_t g = i[1] / IPG;
    for (int64_t o = 0; o < OPG; ++o)
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t y = i[2] * c.sh - c.pt + ky * c.dh, xx = i[3] * c.sw - c.pl + kx * c.dw;
          if (y < 0 || y >= OH || xx < 0 || xx >= OW) continue;
          out[Offset(*os, {i[0], g * OPG + o, y, xx})] += x[Offset(c.x, i)] * w[Offset(c.w, {i[1], o, ky, kx})];
        }
  });
  return out;
}

// values of `shape` permuted: out dim d is in dim perm[d].
std::vector<double> Permute(const std::vector<double>& v, const Shape& shape, const std::vector<int>& perm, Shape* ps) {
  ps->clear();
  for (int p : perm) ps->push_back(shape[p]);
  std::vector<double> out;
  ForEachIndex(*ps, [&](const Shape& i) {
    Shape src(shape.size());
    for (size_t d = 0; d < perm.size(); ++d) src[perm[d]] = i[d];
    out.push_back(v[Offset(shape, src)]);
  });
  return out;
}

std::string Attrs(const Conv& c, bool transpose) {
  auto l = [](int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  std::string s = ", strides=" + l(c.sh, c.sw) + ", padding=[" + std::to_string(c.pt) + ", " + std::to_string(c.pl) +
                  ", " + std::to_string(c.pb) + ", " + std::to_string(c.pr) + "], dilation=" + l(c.dh, c.dw) +
                  ", groups=" + std::to_string(c.groups);
  if (transpose) s += ", output_padding=" + l(c.oph, c.opw);
  return s;
}

void CheckConv2d(const Conv& c, uint64_t seed) {
  Tensor x = RandomTensor(c.x, DType::Float32(), seed), w = RandomTensor(c.w, DType::Float32(), seed + 1);
  Shape os;
  std::vector<double> want = RefConv2d(c, ToDoubles(x), ToDoubles(w), &os);
  std::string expr = "R.nn.conv2d(x, w" + Attrs(c, false) + ")";
  auto r = RunMain(OneOpModule({"x: " + TensorType(c.x), "w: " + TensorType(c.w)}, expr), {x, w});
  ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5)) << expr;
}

TEST(OpConv, Conv2dNchw) {
  Conv a;
  a.x = {1, 3, 5, 5}, a.w = {4, 3, 3, 3}, a.pt = a.pl = a.pb = a.pr = 1;
  CheckConv2d(a, 1);
  Conv b;  // strides, asymmetric padding, dilation
  b.x = {2, 2, 7, 6}, b.w = {3, 2, 3, 2}, b.sh = 2, b.sw = 1, b.dh = 2, b.dw = 1, b.pt = 1, b.pl = 2, b.pb = 0, b.pr = 1;
  CheckConv2d(b, 3);
  Conv g;  // grouped
  g.x = {1, 4, 5, 5}, g.w = {6, 2, 3, 3}, g.groups = 2, g.pt = 0, g.pl = 1, g.pb = 1, g.pr = 0;
  CheckConv2d(g, 5);
  Conv d;  // depthwise, size-1 batch and 1x1 spatial kernel dims
  d.x = {1, 3, 4, 4}, d.w = {3, 1, 3, 1}, d.groups = 3, d.pt = d.pb = 1;
  CheckConv2d(d, 7);
}

TEST(OpConv, PaddingForms) {
  // padding=1 (all sides) and padding=[1, 2] (top/bottom, left/right).
  Conv c;
  c.x = {1, 2, 4, 5}, c.w = {2, 2, 3, 3}, c.pt = c.pb = 1, c.pl = c.pr = 2;
  Tensor x = RandomTensor(c.x, DType::Float32(), 9), w = RandomTensor(c.w, DType::Float32(), 10);
  Shape os;
  std::vector<double> want = RefConv2d(c, ToDoubles(x), ToDoubles(w), &os);
  auto r = RunMain(OneOpModule({"x: " + TensorType(c.x), "w: " + TensorType(c.w)}, "R.nn.conv2d(x, w, padding=[1, 2])"),
                   {x, w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5));
  c.pl = c.pr = 1;
  want = RefConv2d(c, ToDoubles(x), ToDoubles(w), &os);
  r = RunMain(OneOpModule({"x: " + TensorType(c.x), "w: " + TensorType(c.w)}, "R.nn.conv2d(x, w, padding=1)"), {x, w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5));
}

TEST(OpConv, Conv2dNhwcHwio) {
  Conv c;
  c.x = {2, 3, 5, 5}, c.w = {4, 3, 3, 3}, c.sh = c.sw = 2, c.pt = c.pl = c.pb = c.pr = 1;
  Tensor xn = RandomTensor(c.x, DType::Float32(), 11), wn = RandomTensor(c.w, DType::Float32(), 12);
  Shape os, xs, ws, outs;
  std::vector<double> want = RefConv2d(c, ToDoubles(xn), ToDoubles(wn), &os);
  std::vector<double> xv = Permute(ToDoubles(xn), c.x, {0, 2, 3, 1}, &xs);  // NHWC
  std::vector<double> wv = Permute(ToDoubles(wn), c.w, {2, 3, 1, 0}, &ws);  // HWIO
  std::vector<double> ov = Permute(want, os, {0, 2, 3, 1}, &outs);
  Tensor x = MakeTensor(xs, DType::Float32(), xv), w = MakeTensor(ws, DType::Float32(), wv);
  auto r = RunMain(OneOpModule({"x: " + TensorType(xs), "w: " + TensorType(ws)},
                               "R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], data_layout=\"NHWC\", "
                               "kernel_layout=\"HWIO\")"),
                   {x, w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), ov, outs, 1e-5, 1e-5));
}

TEST(OpConv, Conv2dSymbolicSpatial) {
  std::string src = OneOpModule({"x: R.Tensor((1, 2, \"h\", \"w\"), \"float32\")", "k: " + TensorType({3, 2, 3, 3})},
                                "R.nn.conv2d(x, k, strides=[2, 2], padding=[1, 1, 1, 1])");
  for (Shape xs : {Shape{1, 2, 3, 3}, Shape{1, 2, 6, 5}}) {
    Conv c;
    c.x = xs, c.w = {3, 2, 3, 3}, c.sh = c.sw = 2, c.pt = c.pl = c.pb = c.pr = 1;
    Tensor x = RandomTensor(xs, DType::Float32(), 13), w = RandomTensor(c.w, DType::Float32(), 14);
    Shape os;
    std::vector<double> want = RefConv2d(c, ToDoubles(x), ToDoubles(w), &os);
    auto r = RunMain(src, {x, w});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5));
  }
}

TEST(OpConv, Conv1d) {
  // A conv1d is a conv2d with H = 1.
  Conv c;
  c.x = {2, 3, 1, 8}, c.w = {4, 3, 1, 3}, c.sw = 2, c.pl = c.pr = 1, c.dw = 2;
  Tensor x = RandomTensor({2, 3, 8}, DType::Float32(), 15), w = RandomTensor({4, 3, 3}, DType::Float32(), 16);
  Shape os;
  std::vector<double> want = RefConv2d(c, ToDoubles(x), ToDoubles(w), &os);
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 3, 8}), "w: " + TensorType({4, 3, 3})},
                               "R.nn.conv1d(x, w, strides=2, padding=[1, 1], dilation=2)"),
                   {x, w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, {os[0], os[1], os[3]}, 1e-5, 1e-5));
}

TEST(OpConv, Conv2dTranspose) {
  Conv a;
  a.x = {1, 2, 3, 3}, a.w = {2, 3, 3, 3}, a.sh = a.sw = 2, a.pt = a.pl = a.pb = a.pr = 1, a.oph = a.opw = 1;
  Conv g;  // groups, dilation, asymmetric stride
  g.x = {2, 4, 3, 2}, g.w = {4, 1, 2, 3}, g.groups = 2, g.sh = 1, g.sw = 3, g.dh = 2, g.pt = 0, g.pl = 1, g.pb = 1,
  g.pr = 0;
  uint64_t seed = 20;
  for (const Conv& c : {a, g}) {
    Tensor x = RandomTensor(c.x, DType::Float32(), seed++), w = RandomTensor(c.w, DType::Float32(), seed++);
    Shape os;
    std::vector<double> want = RefConv2dTranspose(c, ToDoubles(x), ToDoubles(w), &os);
    std::string expr = "R.nn.conv2d_transpose(x, w" + Attrs(c, true) + ")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.x), "w: " + TensorType(c.w)}, expr), {x, w});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5)) << expr;
  }
}

// Every form conv-transpose-phases produces (compiler/transform/
// conv_transpose_phases.h): alike phases as one conv (2x2 stride 2, stride
// 1), unlike ones as a conv each (4x4 stride 2 padding 1, odd kernels,
// output padding, asymmetric strides and paddings, groups, a crop where a
// phase's padding is negative), and the forms left to the reduction kernel
// (a kernel smaller than the stride, dilation).
TEST(OpConv, Conv2dTransposePhases) {
  auto conv = [](Shape x, Shape w, int64_t sh, int64_t sw, std::vector<int64_t> pads, int64_t op, int64_t groups,
                 int64_t dil) {
    Conv c;
    c.x = x, c.w = w, c.sh = sh, c.sw = sw, c.pt = pads[0], c.pl = pads[1], c.pb = pads[2], c.pr = pads[3];
    c.oph = c.opw = op, c.groups = groups, c.dh = c.dw = dil;
    return c;
  };
  const Conv cases[] = {
      conv({1, 6, 5, 7}, {6, 4, 2, 2}, 2, 2, {0, 0, 0, 0}, 0, 1, 1),    // alike: 1x1 phases
      conv({2, 3, 4, 5}, {3, 5, 3, 3}, 1, 1, {1, 1, 1, 1}, 0, 1, 1),    // stride 1: one flipped conv
      conv({1, 4, 5, 6}, {4, 3, 4, 4}, 2, 2, {1, 1, 1, 1}, 0, 1, 1),    // unlike phases
      conv({1, 3, 4, 4}, {3, 2, 3, 3}, 2, 2, {1, 1, 1, 1}, 1, 1, 1),    // output padding
      conv({1, 2, 5, 4}, {2, 3, 5, 3}, 3, 2, {2, 0, 1, 1}, 1, 1, 1),    // asymmetric
      conv({1, 4, 3, 5}, {4, 2, 3, 2}, 2, 2, {0, 1, 2, 0}, 0, 2, 1),    // groups
      conv({1, 2, 4, 4}, {2, 2, 4, 4}, 2, 2, {3, 3, 3, 3}, 0, 1, 1),    // padding beyond a phase: crops
      conv({1, 2, 3, 3}, {2, 2, 2, 2}, 3, 3, {0, 0, 0, 0}, 0, 1, 1),    // kernel < stride: left as it is
      conv({1, 2, 3, 3}, {2, 2, 3, 3}, 2, 2, {1, 1, 1, 1}, 0, 1, 2),    // dilation: left as it is
  };
  uint64_t seed = 40;
  for (const Conv& c : cases) {
    Tensor x = RandomTensor(c.x, DType::Float32(), seed++), w = RandomTensor(c.w, DType::Float32(), seed++);
    Shape os;
    std::vector<double> want = RefConv2dTranspose(c, ToDoubles(x), ToDoubles(w), &os);
    std::string expr = "R.nn.conv2d_transpose(x, w" + Attrs(c, true) + ")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.x), "w: " + TensorType(c.w)}, expr), {x, w});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5)) << expr;
  }
  // Symbolic height and width: one compiled program, two sizes.
  const std::string sym = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, "h", "w"), dtype="float32"), k: R.Tensor((4, 3, 4, 4), dtype="float32")):
        h = T.int64()
        w = T.int64()
        with R.dataflow():
            y = R.nn.conv2d_transpose(x, k, strides=[2, 2], padding=[1, 2, 1, 0], output_padding=[1, 0])
            R.output(y)
        return y
)";
  for (int64_t hw : {3, 6}) {
    Conv c = conv({1, 4, hw, hw + 1}, {4, 3, 4, 4}, 2, 2, {1, 2, 1, 0}, 0, 1, 1);
    c.oph = 1;
    Tensor x = RandomTensor(c.x, DType::Float32(), seed++), w = RandomTensor(c.w, DType::Float32(), seed++);
    Shape os;
    std::vector<double> want = RefConv2dTranspose(c, ToDoubles(x), ToDoubles(w), &os);
    auto r = RunMain(sym, {x, w});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5)) << "h=" << hw;
  }
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpConvError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({1, 4, 5, 5}), w = "w: " + TensorType({6, 4, 3, 3});
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, padding=[1, 1, 1])", StatusCode::kInvalidArgument,
                "R.nn.conv2d: padding takes 1, 2 or 4 values, got 3");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, strides=[1, 1, 1])", StatusCode::kInvalidArgument,
                "R.nn.conv2d: strides takes 1 or 2 values, got 3");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, strides=0)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: strides must be positive");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, dilation=[0, 1])", StatusCode::kInvalidArgument,
                "R.nn.conv2d: dilation must be positive");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, padding=-1)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: padding must not be negative");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, groups=0)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: groups must be positive, got 0");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, groups=3)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: 4 input channels do not divide into 3 groups");
  ExpectOpError({"y: " + TensorType({1, 4, 5, 5}), "v: " + TensorType({5, 2, 3, 3})}, "R.nn.conv2d(y, v, groups=2)",
                StatusCode::kInvalidArgument, "R.nn.conv2d: 5 output channels do not divide into 2 groups");
  ExpectOpError({x, "v: " + TensorType({6, 3, 3, 3})}, "R.nn.conv2d(x, v)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: data has 4 channels in 1 groups but the kernel expects 3 per group");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, data_layout=\"NCHWc\")", StatusCode::kInvalidArgument,
                "R.nn.conv2d: data_layout \"NCHWc\" is not supported (expected a permutation of NCHW)");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, kernel_layout=\"OIHH\")", StatusCode::kInvalidArgument,
                "R.nn.conv2d: kernel_layout \"OIHH\" is not supported (expected a permutation of OIHW)");
  ExpectOpError({x, "v: " + TensorType({6, 4, 7, 7})}, "R.nn.conv2d(x, v)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: the kernel (6, 4, 7, 7) does not fit in the padded input (1, 4, 5, 5) (output size -1)");
  ExpectOpError({"y: " + TensorType({4, 5, 5}), w}, "R.nn.conv2d(y, w)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: data must have rank 4, got 3");
  ExpectOpError({x, "v: " + TensorType({4, 3, 3})}, "R.nn.conv2d(x, v)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: weight must have rank 4, got 3");
  ExpectOpError({x, "v: " + TensorType({6, 4, 3, 3}, "float16")}, "R.nn.conv2d(x, v)", StatusCode::kInvalidArgument,
                "R.nn.conv2d: data and weight dtypes differ: float32 and float16");
  ExpectOpError({x, w}, "R.nn.conv2d(x, w, output_padding=[1, 1])", StatusCode::kInvalidArgument,
                "R.nn.conv2d: unknown attribute 'output_padding' (known: strides, padding, dilation, groups, "
                "data_layout, kernel_layout, out_layout, out_dtype)");
  ExpectOpError({x, "v: " + TensorType({4, 2, 3, 3})}, "R.nn.conv2d_transpose(x, v, strides=2, output_padding=2)",
                StatusCode::kInvalidArgument,
                "R.nn.conv2d_transpose: output_padding must be smaller than the stride or the dilation");
  ExpectOpError({x, "v: " + TensorType({4, 2, 3, 3})}, "R.nn.conv2d_transpose(x, v, data_layout=\"NHWC\")",
                StatusCode::kUnimplemented,
                "R.nn.conv2d_transpose: only data_layout=\"NCHW\", kernel_layout=\"IOHW\" are supported");
  ExpectOpError({x, "v: " + TensorType({3, 2, 3, 3})}, "R.nn.conv2d_transpose(x, v)", StatusCode::kInvalidArgument,
                "R.nn.conv2d_transpose: data has 4 channels but the kernel expects 3");
  ExpectOpError({x, "v: " + TensorType({4, 2, 3, 3})}, "R.nn.conv2d_transpose(x, v, groups=3)",
                StatusCode::kInvalidArgument, "R.nn.conv2d_transpose: 4 input channels do not divide into 3 groups");
  ExpectOpError({"y: " + TensorType({1, 4, 5}), "v: " + TensorType({2, 4, 3})}, "R.nn.conv1d(y, v, padding=[1, 1, 1])",
                StatusCode::kInvalidArgument, "R.nn.conv1d: padding takes 1 or 2 values, got 3");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
