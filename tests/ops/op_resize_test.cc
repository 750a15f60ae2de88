// relax.image.resize2d against a plain C++ reference: nearest and linear, the
// three coordinate modes, rounding methods, NCHW and NHWC, size as R.shape or
// attribute; every error message of op_resize.cc.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

// NCHW reference; coordinates in float32 like the kernel.
std::vector<double> RefResize(const Shape& s, const std::vector<double>& v, int64_t oh, int64_t ow,
                              const std::string& method, const std::string& mode, const std::string& rounding) {
  auto coord = [&](int64_t o, int64_t n, int64_t m) -> float {
    if (mode == "half_pixel") return (static_cast<float>(o) + 0.5f) * (static_cast<float>(n) / static_cast<float>(m)) - 0.5f;
    if (mode == "asymmetric") return static_cast<float>(o) * (static_cast<float>(n) / static_cast<float>(m));
    return m > 1 ? static_cast<float>(o) * (static_cast<float>(n - 1) / static_cast<float>(m - 1)) : 0.0f;
  };
  auto clamp = [](int64_t i, int64_t n) { return std::min(std::max<int64_t>(i, 0), n - 1); };
  std::vector<double> out;
  ForEachIndex({s[0], s[1], oh, ow}, [&](const Shape& i) {
    float cy = coord(i[2], s[2], oh), cx = coord(i[3], s[3], ow);
    if (method == "nearest_neighbor") {
      auto rnd = [&](float c) {
        if (rounding == "floor") return std::floor(c);
        if (rounding == "round_prefer_ceil") return std::floor(c + 0.5f);
        if (rounding == "round_prefer_floor") return std::ceil(c - 0.5f);
        if (rounding == "ceil") return std::ceil(c);
        return std::nearbyint(c);
      };
      out.push_back(v[Offset(s, {i[0], i[1], clamp(static_cast<int64_t>(rnd(cy)), s[2]), clamp(static_cast<int64_t>(rnd(cx)), s[3])})]);
      return;
    }
    float fy = std::floor(cy), fx = std::floor(cx);
    double ty = cy - fy, tx = cx - fx;
    int64_t y0 = clamp(static_cast<int64_t>(fy), s[2]), y1 = clamp(static_cast<int64_t>(fy) + 1, s[2]);
    int64_t x0 = clamp(static_cast<int64_t>(fx), s[3]), x1 = clamp(static_cast<int64_t>(fx) + 1, s[3]);
    auto at = [&](int64_t y, int64_t x) { return v[Offset(s, {i[0], i[1], y, x})]; };
    double top = at(y0, x0) * (1 - tx) + at(y0, x1) * tx, bottom = at(y1, x0) * (1 - tx) + at(y1, x1) * tx;
    out.push_back(top * (1 - ty) + bottom * ty);
  });
  return out;
}

TEST(OpResize, MethodsAndModes) {
  struct Case {
    Shape s;
    int64_t oh, ow;
    std::string method, mode, rounding;
  };
  const Case cases[] = {
      {{1, 2, 3, 4}, 6, 8, "nearest_neighbor", "half_pixel", "round"},
      {{1, 1, 6, 4}, 3, 2, "nearest_neighbor", "half_pixel", "round"},  // ties at .5: to even
      {{2, 1, 3, 3}, 5, 7, "nearest_neighbor", "asymmetric", "floor"},
      {{1, 1, 4, 3}, 7, 5, "nearest_neighbor", "align_corners", "round_prefer_ceil"},
      {{1, 2, 3, 4}, 6, 8, "linear", "half_pixel", ""},
      {{1, 1, 5, 4}, 3, 7, "linear", "align_corners", ""},
      {{1, 1, 3, 5}, 4, 1, "linear", "asymmetric", ""},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    Tensor x = RandomTensor(c.s, DType::Float32(), seed++);
    std::vector<double> want = RefResize(c.s, ToDoubles(x), c.oh, c.ow, c.method, c.mode, c.rounding);
    std::string expr = "R.image.resize2d(x, R.shape([" + std::to_string(c.oh) + ", " + std::to_string(c.ow) +
                       "]), method=\"" + c.method + "\", coordinate_transformation_mode=\"" + c.mode + "\"" +
                       (c.rounding.empty() ? "" : ", rounding_method=\"" + c.rounding + "\"") + ")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.s)}, expr), {x});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, {c.s[0], c.s[1], c.oh, c.ow}, 1e-5, 1e-5)) << expr;
  }
}

TEST(OpResize, NearestPowerOfTwoFactorsOnStaticShapes) {
  // Static extents scaled by 2, 4, 8 (source index o // k, no float
  // coordinate), one axis by a power of two and the other not (3: the float
  // form), odd sizes, every rounding and both modes that take the integer
  // index or not (half_pixel + ceil does not: o = 0 maps to 0 but o = 1 of
  // a 2x resize to ceil(0.25) = 1); against the float reference.
  struct Case {
    Shape s;
    int64_t oh, ow;
    std::string mode, rounding;
  };
  const Case cases[] = {
      {{1, 3, 5, 7}, 10, 14, "asymmetric", "floor"},        {{2, 1, 3, 5}, 12, 40, "asymmetric", "floor"},
      {{1, 2, 5, 7}, 10, 21, "asymmetric", "floor"},        {{1, 1, 5, 3}, 20, 6, "half_pixel", "round_prefer_ceil"},
      {{1, 1, 3, 5}, 6, 10, "half_pixel", "round_prefer_floor"}, {{1, 1, 3, 5}, 6, 10, "half_pixel", "round"},
      {{1, 1, 3, 5}, 6, 10, "half_pixel", "ceil"},          {{1, 1, 3, 5}, 6, 10, "asymmetric", "round"},
      {{1, 1, 3, 5}, 12, 20, "asymmetric", "ceil"},         {{1, 1, 1, 1}, 2, 64, "asymmetric", "floor"},
  };
  uint64_t seed = 70;
  for (const Case& c : cases) {
    Tensor x = RandomTensor(c.s, DType::Float32(), seed++);
    std::vector<double> want = RefResize(c.s, ToDoubles(x), c.oh, c.ow, "nearest_neighbor", c.mode, c.rounding);
    std::string expr = "R.image.resize2d(x, R.shape([" + std::to_string(c.oh) + ", " + std::to_string(c.ow) +
                       "]), method=\"nearest_neighbor\", coordinate_transformation_mode=\"" + c.mode +
                       "\", rounding_method=\"" + c.rounding + "\")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.s)}, expr), {x});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, {c.s[0], c.s[1], c.oh, c.ow}, 0, 0)) << expr;
  }
}

TEST(OpResize, LinearWholeMultipleWidthsByPhase) {
  // Output widths s * W (s = 2..8) of static widths, half_pixel and
  // asymmetric: the phase kernel (per input column the s outputs, borders
  // clamped), the narrowest widths (2: no interior column with half_pixel at
  // s = 2), odd widths, heights up and down, batches; against the reference.
  struct Case {
    Shape s;
    int64_t oh, ow;
    std::string mode;
  };
  const Case cases[] = {
      {{1, 2, 5, 7}, 10, 14, "half_pixel"}, {{2, 1, 4, 5}, 3, 15, "half_pixel"}, {{1, 1, 3, 2}, 6, 4, "half_pixel"},
      {{1, 3, 2, 3}, 4, 24, "half_pixel"},  {{1, 1, 4, 17}, 8, 68, "half_pixel"}, {{1, 2, 5, 7}, 9, 14, "asymmetric"},
      {{1, 1, 3, 2}, 3, 6, "asymmetric"},   {{1, 1, 2, 9}, 5, 27, "asymmetric"},
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    Tensor x = RandomTensor(c.s, DType::Float32(), seed++);
    std::vector<double> want = RefResize(c.s, ToDoubles(x), c.oh, c.ow, "linear", c.mode, "");
    std::string expr = "R.image.resize2d(x, R.shape([" + std::to_string(c.oh) + ", " + std::to_string(c.ow) +
                       "]), method=\"linear\", coordinate_transformation_mode=\"" + c.mode + "\")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.s)}, expr), {x});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, {c.s[0], c.s[1], c.oh, c.ow}, 1e-5, 1e-5)) << expr;
  }
}

TEST(OpResize, SeparableNonWholeScalesMatchTheFloatForm) {
  // Static widths that are no whole multiple (and align_corners): rows by
  // their source row(s), columns by phases when the widths are in a small
  // ratio (3 : 2, 2 : 3, 3 : 1, 3 : 5, 1 : 1) or by per-column tables
  // (10 : 7, 40 : 13, align_corners); every coordinate mode and rounding,
  // up and down, one-column inputs, batches. Nearest must equal the float
  // reference exactly, linear within rounding.
  struct Case {
    Shape s;
    int64_t oh, ow;
    std::string method, mode, rounding;
  };
  const Case cases[] = {
      {{1, 2, 5, 6}, 7, 9, "nearest_neighbor", "half_pixel", "round_prefer_floor"},
      {{1, 2, 5, 6}, 7, 9, "nearest_neighbor", "half_pixel", "round_prefer_ceil"},
      {{2, 1, 4, 6}, 9, 9, "nearest_neighbor", "asymmetric", "floor"},
      {{1, 1, 4, 6}, 3, 9, "nearest_neighbor", "half_pixel", "ceil"},
      {{1, 1, 6, 9}, 4, 6, "nearest_neighbor", "half_pixel", "round"},
      {{1, 1, 3, 7}, 5, 21, "nearest_neighbor", "asymmetric", "round_prefer_ceil"},
      {{1, 1, 3, 7}, 5, 10, "nearest_neighbor", "half_pixel", "round_prefer_floor"},
      {{1, 2, 3, 13}, 8, 40, "nearest_neighbor", "asymmetric", "floor"},
      {{1, 1, 4, 5}, 7, 9, "nearest_neighbor", "align_corners", "round"},
      {{1, 1, 4, 5}, 3, 3, "nearest_neighbor", "align_corners", "round_prefer_floor"},
      {{1, 2, 5, 6}, 7, 9, "linear", "half_pixel", ""},
      {{2, 1, 6, 9}, 4, 6, "linear", "half_pixel", ""},
      {{1, 1, 5, 6}, 7, 9, "linear", "asymmetric", ""},
      {{1, 1, 3, 7}, 5, 10, "linear", "half_pixel", ""},
      {{1, 1, 3, 5}, 5, 3, "linear", "half_pixel", ""},
      {{1, 3, 3, 13}, 8, 40, "linear", "half_pixel", ""},
      {{1, 1, 4, 5}, 7, 9, "linear", "align_corners", ""},
      {{1, 1, 5, 9}, 3, 4, "linear", "align_corners", ""},
      {{1, 1, 4, 5}, 6, 1, "linear", "align_corners", ""},
      {{1, 1, 3, 1}, 4, 5, "linear", "half_pixel", ""},
      {{1, 2, 4, 6}, 4, 6, "linear", "half_pixel", ""},
  };
  uint64_t seed = 90;
  for (const Case& c : cases) {
    Tensor x = RandomTensor(c.s, DType::Float32(), seed++);
    std::vector<double> want = RefResize(c.s, ToDoubles(x), c.oh, c.ow, c.method, c.mode, c.rounding);
    std::string expr = "R.image.resize2d(x, R.shape([" + std::to_string(c.oh) + ", " + std::to_string(c.ow) +
                       "]), method=\"" + c.method + "\", coordinate_transformation_mode=\"" + c.mode + "\"" +
                       (c.rounding.empty() ? "" : ", rounding_method=\"" + c.rounding + "\"") + ")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.s)}, expr), {x});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    const double tol = c.method == "linear" ? 1e-5 : 0.0;
    EXPECT_TRUE(AllClose(r->at(0), want, {c.s[0], c.s[1], c.oh, c.ow}, tol, tol)) << expr << " " << TensorType(c.s);
  }
}

TEST(OpResize, SymbolicExtentsAroundStaticWidths) {
  // A symbolic batch and height with a static 6 -> 9 width (the separable
  // kernel, rows counted at run time), and symbolic height and width (the
  // per-output form); each program at two sizes.
  const std::string static_w = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2, "h", 6), dtype="float32")):
        n = T.int64()
        h = T.int64()
        with R.dataflow():
            y = R.image.resize2d(x, R.shape([h, 9]), method="METHOD", rounding_method="round_prefer_floor")
            R.output(y)
        return y
)";
  const std::string symbolic_w = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, "h", "w"), dtype="float32")):
        h = T.int64()
        w = T.int64()
        with R.dataflow():
            y = R.image.resize2d(x, R.shape([h, w + w // 2]), method="METHOD", rounding_method="round_prefer_floor")
            R.output(y)
        return y
)";
  uint64_t seed = 130;
  for (const std::string method : {"linear", "nearest_neighbor"}) {
    for (int64_t h : {3, 5}) {
      for (bool sym_w : {false, true}) {
        std::string src = sym_w ? symbolic_w : static_w;
        src.replace(src.find("METHOD"), 6, method);
        Shape s = sym_w ? Shape{1, 2, h, 2 * h} : Shape{h - 1, 2, h, 6};
        const int64_t ow = sym_w ? 3 * h : 9;
        Tensor x = RandomTensor(s, DType::Float32(), seed++);
        std::vector<double> want = RefResize(s, ToDoubles(x), h, ow, method, "half_pixel",
                                             method == "linear" ? "" : "round_prefer_floor");
        auto r = RunMain(src, {x});
        ASSERT_TRUE(r.ok()) << method << " h=" << h << ": " << r.status().ToString();
        const double tol = method == "linear" ? 1e-5 : 0.0;
        EXPECT_TRUE(AllClose(r->at(0), want, {s[0], s[1], h, ow}, tol, tol)) << method << " h=" << h << " sym_w=" << sym_w;
      }
    }
  }
}

TEST(OpResize, NearestPowerOfTwoOnSymbolicExtents) {
  // Symbolic H and W resized to h * 2 and w * 4: every rounding and both
  // modes, those that reduce to o // k (legalized without a float
  // coordinate) and those that do not (half_pixel + ceil; "round" is left
  // to the float form); each program at two sizes, against the reference.
  const char* kSrc = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, "h", "w"), dtype="float32")):
        h = T.int64()
        w = T.int64()
        with R.dataflow():
            y = R.image.resize2d(x, R.shape([h * 2, w * 4]), method="nearest_neighbor", coordinate_transformation_mode="MODE", rounding_method="ROUNDING")
            R.output(y)
        return y
)";
  uint64_t seed = 150;
  for (const std::string mode : {"half_pixel", "asymmetric"}) {
    for (const std::string rounding : {"floor", "ceil", "round", "round_prefer_floor", "round_prefer_ceil"}) {
      std::string src = kSrc;
      src.replace(src.find("MODE"), 4, mode);
      src.replace(src.find("ROUNDING"), 8, rounding);
      for (int64_t h : {3, 5}) {
        Shape s{1, 2, h, h + 2};
        Tensor x = RandomTensor(s, DType::Float32(), seed++);
        std::vector<double> want = RefResize(s, ToDoubles(x), 2 * h, 4 * (h + 2), "nearest_neighbor", mode, rounding);
        auto r = RunMain(src, {x});
        ASSERT_TRUE(r.ok()) << mode << " " << rounding << ": " << r.status().ToString();
        EXPECT_TRUE(AllClose(r->at(0), want, {1, 2, 2 * h, 4 * (h + 2)}, 0, 0)) << mode << " " << rounding << " h=" << h;
      }
    }
  }
}

TEST(OpResize, NhwcWithSizeAttribute) {
  Shape nhwc{1, 3, 4, 2};
  Tensor x = RandomTensor(nhwc, DType::Float32(), 9);
  std::vector<double> xv = ToDoubles(x), xn;
  Shape nchw{1, 2, 3, 4};
  ForEachIndex(nchw, [&](const Shape& i) { xn.push_back(xv[Offset(nhwc, {i[0], i[2], i[3], i[1]})]); });
  std::vector<double> ref = RefResize(nchw, xn, 5, 6, "linear", "half_pixel", ""), want;
  Shape os{1, 5, 6, 2};
  ForEachIndex(os, [&](const Shape& i) { want.push_back(ref[Offset({1, 2, 5, 6}, {i[0], i[3], i[1], i[2]})]); });
  auto r = RunMain(OneOpModule({"x: " + TensorType(nhwc)}, "R.image.resize2d(x, size=[5, 6], layout=\"NHWC\")"), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, os, 1e-5, 1e-5));
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpResizeError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({1, 2, 3, 4});
  ExpectOpError({x}, "R.image.resize2d(x)", StatusCode::kInvalidArgument, "R.image.resize2d: size is required");
  ExpectOpError({x}, "R.image.resize2d(x, R.shape([2, 2, 2]))", StatusCode::kInvalidArgument,
                "R.image.resize2d: size takes 1 or 2 values, got 3");
  ExpectOpError({x, "y: " + TensorType({2})}, "R.image.resize2d(x, y)", StatusCode::kInvalidArgument,
                "R.image.resize2d: size (argument 2) must be a shape, as in R.shape([8, 8])");
  ExpectOpError({x}, "R.image.resize2d(x, size=[0, 2])", StatusCode::kInvalidArgument,
                "R.image.resize2d: size must be positive");
  ExpectOpError({x}, "R.image.resize2d(x, size=[2, 2], method=\"cubic\")", StatusCode::kUnimplemented,
                "R.image.resize2d: method \"cubic\" is not supported");
  ExpectOpError({x}, "R.image.resize2d(x, size=[2, 2], method=\"area\")", StatusCode::kInvalidArgument,
                "R.image.resize2d: method \"area\" is not supported (expected one of \"nearest_neighbor\", \"linear\", "
                "\"cubic\")");
  ExpectOpError({x}, "R.image.resize2d(x, size=[2, 2], coordinate_transformation_mode=\"tf_crop_and_resize\")",
                StatusCode::kInvalidArgument,
                "R.image.resize2d: coordinate_transformation_mode \"tf_crop_and_resize\" is not supported (expected one "
                "of \"half_pixel\", \"align_corners\", \"asymmetric\")");
  ExpectOpError({x}, "R.image.resize2d(x, size=[2, 2], out_dtype=\"float16\")", StatusCode::kUnimplemented,
                "R.image.resize2d: out_dtype is not supported");
  ExpectOpError({"y: " + TensorType({2, 3, 4})}, "R.image.resize2d(y, size=[2, 2])", StatusCode::kInvalidArgument,
                "R.image.resize2d: data must have rank 4, got 3");
  ExpectOpError({"i: " + TensorType({1, 1, 2, 2}, "int32")}, "R.image.resize2d(i, size=[2, 2])",
                StatusCode::kInvalidArgument, "R.image.resize2d: expects a float tensor, got int32");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
