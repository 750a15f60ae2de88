// scatter_elements, scatter_nd and image.grid_sample: every reduction,
// negative and duplicate indices, symbolic shapes, the printer/parser round
// trip and every error, against plain C++ references (grid_sample's follows
// ONNX's reference implementation, op_grid_sample.cc says where it departs).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

double Combine(const std::string& r, double old, double u) {
  if (r == "add") return old + u;
  if (r == "mul") return old * u;
  if (r == "max") return std::max(old, u);
  if (r == "min") return std::min(old, u);
  return u;
}

int64_t FromEnd(double v, int64_t d) { return v < 0 ? static_cast<int64_t>(v) + d : static_cast<int64_t>(v); }

std::vector<double> ScatterElementsRef(const Tensor& x, const Shape& xs, const Tensor& ind, const Tensor& upd,
                                       const Shape& is, int axis, const std::string& red) {
  std::vector<double> out = ToDoubles(x), iv = ToDoubles(ind), uv = ToDoubles(upd);
  ForEachIndex(is, [&](const Shape& j) {
    Shape at = j;
    at[axis] = FromEnd(iv[Offset(is, j)], xs[axis]);
    double& o = out[Offset(xs, at)];
    o = Combine(red, o, uv[Offset(is, j)]);
  });
  return out;
}

TEST(OpScatterElements, EveryReductionMatchesReference) {
  Shape xs{3, 4};
  Tensor x = RandomTensor(xs, DType::Float32(), 61);
  // Duplicates along both axes, negative entries.
  Tensor i0 = MakeTensor({2, 3}, DType::Int64(), {0, -1, 2, 0, 1, -1});
  Tensor i1 = MakeTensor({2, 3}, DType{kDLInt, 32, 1}, {3, 3, -4, 1, 0, 1});
  Tensor u = RandomTensor({2, 3}, DType::Float32(), 62);
  const char* reds[] = {"update", "add", "mul", "max", "min"};
  std::vector<std::string> exprs;
  for (const char* r : reds) {
    exprs.push_back(std::string("R.scatter_elements(x, i0, u, reduction=\"") + r + "\")");
    exprs.push_back(std::string("R.scatter_elements(x, i1, u, axis=-1, reduction=\"") + r + "\")");
  }
  auto res = RunMain(MultiOpModule({"x: " + TensorType(xs), "i0: " + TensorType({2, 3}, "int64"),
                                    "i1: " + TensorType({2, 3}, "int32"), "u: " + TensorType({2, 3})},
                                   exprs),
                     {x, i0, i1, u});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_TRUE(AllClose(res->at(2 * k), ScatterElementsRef(x, xs, i0, u, {2, 3}, 0, reds[k]), xs)) << reds[k];
    EXPECT_TRUE(AllClose(res->at(2 * k + 1), ScatterElementsRef(x, xs, i1, u, {2, 3}, 1, reds[k]), xs)) << reds[k];
  }
}

// ONNX's ScatterND: index tuples of length k on the last axis of indices.
std::vector<double> ScatterNdRef(const Tensor& x, const Shape& xs, const Tensor& ind, const Shape& is, const Tensor& upd,
                                 const Shape& us, const std::string& red) {
  std::vector<double> out = ToDoubles(x), iv = ToDoubles(ind), uv = ToDoubles(upd);
  size_t q = is.size() - 1;
  int64_t k = is.back();
  ForEachIndex(us, [&](const Shape& j) {
    Shape at, it(j.begin(), j.begin() + q);
    it.push_back(0);
    for (int64_t t = 0; t < k; ++t) {
      it.back() = t;
      at.push_back(FromEnd(iv[Offset(is, it)], xs[t]));
    }
    at.insert(at.end(), j.begin() + q, j.end());
    double& o = out[Offset(xs, at)];
    o = Combine(red, o, uv[Offset(us, j)]);
  });
  return out;
}

TEST(OpScatterNd, EveryReductionMatchesReference) {
  Shape xs{4, 3, 2};
  Tensor x = RandomTensor(xs, DType::Float32(), 63);
  Tensor rows = MakeTensor({3, 1}, DType::Int64(), {1, -1, 1});                  // whole [3, 2] slices
  Tensor cells = MakeTensor({2, 2, 2}, DType::Int64(), {0, 1, 3, -1, 0, 1, -4, 2});  // [2] rows, a duplicate
  Tensor u1 = RandomTensor({3, 3, 2}, DType::Float32(), 64);
  Tensor u2 = RandomTensor({2, 2, 2}, DType::Float32(), 65);
  const char* reds[] = {"update", "add", "mul", "max", "min"};
  std::vector<std::string> exprs;
  for (const char* r : reds) {
    exprs.push_back(std::string("R.scatter_nd(x, rows, u1, reduction=\"") + r + "\")");
    exprs.push_back(std::string("R.scatter_nd(x, cells, u2, reduction=\"") + r + "\")");
  }
  auto res = RunMain(MultiOpModule({"x: " + TensorType(xs), "rows: " + TensorType({3, 1}, "int64"),
                                    "cells: " + TensorType({2, 2, 2}, "int64"), "u1: " + TensorType({3, 3, 2}),
                                    "u2: " + TensorType({2, 2, 2})},
                                   exprs),
                     {x, rows, cells, u1, u2});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_TRUE(AllClose(res->at(2 * k), ScatterNdRef(x, xs, rows, {3, 1}, u1, {3, 3, 2}, reds[k]), xs)) << reds[k];
    EXPECT_TRUE(AllClose(res->at(2 * k + 1), ScatterNdRef(x, xs, cells, {2, 2, 2}, u2, {2, 2, 2}, reds[k]), xs))
        << reds[k];
  }
}

// Symbolic data and index lengths: the result has data's (symbolic) shape,
// and the kernel runs at several lengths.
TEST(OpScatter, SymbolicShapes) {
  std::string src = MultiOpModule({"x: R.Tensor((\"n\", 3), \"float32\")", "i: R.Tensor((\"m\", 3), \"int64\")",
                                   "u: R.Tensor((\"m\", 3), \"float32\")", "j: R.Tensor((\"m\", 1), \"int64\")"},
                                  {"R.scatter_elements(x, i, u, axis=0, reduction=\"add\")", "R.scatter_nd(x, j, u)"},
                                  {"n", "m"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred, "R.Tuple(R.Tensor((n, 3), dtype=\"float32\"), R.Tensor((n, 3), dtype=\"float32\"))");
  for (int64_t n : {5, 2}) {
    for (int64_t m : {1, 4}) {
      Tensor x = RandomTensor({n, 3}, DType::Float32(), 66 + n);
      Tensor i = RandomTensor({m, 3}, DType::Int64(), 67 + m, -static_cast<double>(n), static_cast<double>(n) - 1);
      Tensor j = RandomTensor({m, 1}, DType::Int64(), 68 + m, -static_cast<double>(n), static_cast<double>(n) - 1);
      Tensor u = RandomTensor({m, 3}, DType::Float32(), 69);
      auto r = RunMain(src, {x, i, u, j});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(AllClose(r->at(0), ScatterElementsRef(x, {n, 3}, i, u, {m, 3}, 0, "add"), {n, 3})) << n << " " << m;
      EXPECT_TRUE(AllClose(r->at(1), ScatterNdRef(x, {n, 3}, j, {m, 1}, u, {m, 3}, "update"), {n, 3})) << n << " " << m;
    }
  }
}

// ---------------------------------------------------------------- grid_sample

struct GridCase {
  std::string method, padding;
  bool align;
};

double Reflect(double v, double lo, double hi) {
  double rng = hi - lo;
  if (v < lo) {
    double dx = lo - v;
    int n = static_cast<int>(dx / rng);
    double r = dx - n * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    double dx = v - hi;
    int n = static_cast<int>(dx / rng);
    double r = dx - n * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return v;
}

double CubicWeight(double d) {  // Keys, A = -0.75, of the distance d
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

std::vector<double> GridSampleRef(const Tensor& x, const Shape& xs, const Tensor& g, const Shape& gs, const GridCase& c) {
  std::vector<double> xv = ToDoubles(x), gv = ToDoubles(g), want;
  int64_t h = xs[2], w = xs[3];
  double lo[2], hi[2], size[2] = {static_cast<double>(w), static_cast<double>(h)};
  for (int k = 0; k < 2; ++k) {
    lo[k] = c.align ? 0 : -0.5;
    hi[k] = c.align ? size[k] - 1 : size[k] - 0.5;
  }
  ForEachIndex({xs[0], xs[1], gs[1], gs[2]}, [&](const Shape& i) {
    double p[2];
    for (int k = 0; k < 2; ++k) {
      double gk = gv[Offset(gs, {i[0], i[2], i[3], k})];
      p[k] = c.align ? (gk + 1) / 2 * (size[k] - 1) : ((gk + 1) * size[k] - 1) / 2;
      if (c.method == "nearest") p[k] = std::nearbyint(p[k]);
      if (p[k] < lo[k] || p[k] > hi[k]) {
        if (c.padding == "border" && c.method != "bicubic") p[k] = std::min(std::max(p[k], 0.0), size[k] - 1);
        if (c.padding == "reflection") p[k] = Reflect(p[k], lo[k], hi[k]);
      }
    }
    auto pixel = [&](int64_t px, int64_t py) {
      int64_t q[2] = {px, py};
      for (int k = 0; k < 2; ++k) {
        if (c.padding == "zeros" && (q[k] < 0 || q[k] >= size[k])) return 0.0;
        if (c.padding == "reflection") q[k] = static_cast<int64_t>(Reflect(static_cast<double>(q[k]), lo[k], hi[k]));
        q[k] = std::min<int64_t>(std::max<int64_t>(q[k], 0), static_cast<int64_t>(size[k]) - 1);
      }
      return xv[Offset(xs, {i[0], i[1], q[1], q[0]})];
    };
    if (c.method == "nearest") {
      want.push_back(pixel(static_cast<int64_t>(p[0]), static_cast<int64_t>(p[1])));
      return;
    }
    int64_t x0 = static_cast<int64_t>(std::floor(p[0])), y0 = static_cast<int64_t>(std::floor(p[1]));
    double sum = 0;
    int from = c.method == "bilinear" ? 0 : -1, to = c.method == "bilinear" ? 1 : 2;
    for (int dy = from; dy <= to; ++dy) {
      for (int dx = from; dx <= to; ++dx) {
        double wx = c.method == "bilinear" ? 1 - std::fabs(p[0] - (x0 + dx)) : CubicWeight(p[0] - (x0 + dx));
        double wy = c.method == "bilinear" ? 1 - std::fabs(p[1] - (y0 + dy)) : CubicWeight(p[1] - (y0 + dy));
        sum += wx * wy * pixel(x0 + dx, y0 + dy);
      }
    }
    want.push_back(sum);
  });
  return want;
}

TEST(OpGridSample, EveryModeMatchesReference) {
  Shape xs{2, 3, 4, 5}, gs{2, 3, 6, 2};
  Tensor x = RandomTensor(xs, DType::Float32(), 71);
  Tensor g = RandomTensor(gs, DType::Float32(), 72, -1.7, 1.7);  // some points outside the image
  std::vector<GridCase> cases;
  std::vector<std::string> exprs;
  for (const char* m : {"bilinear", "nearest", "bicubic"}) {
    for (const char* p : {"zeros", "border", "reflection"}) {
      for (bool a : {false, true}) {
        cases.push_back({m, p, a});
        exprs.push_back(std::string("R.image.grid_sample(x, g, method=\"") + m + "\", layout=\"NCHW\", padding_mode=\"" +
                        p + "\", align_corners=" + (a ? "True" : "False") + ")");
      }
    }
  }
  auto res = RunMain(MultiOpModule({"x: " + TensorType(xs), "g: " + TensorType(gs)}, exprs), {x, g});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  for (size_t k = 0; k < cases.size(); ++k) {
    EXPECT_TRUE(AllClose(res->at(k), GridSampleRef(x, xs, g, gs, cases[k]), {2, 3, 3, 6}, 1e-4, 1e-5))
        << exprs[k];
  }
}

TEST(OpGridSample, SymbolicShapesAndDefaults) {
  std::string src = MultiOpModule({"x: R.Tensor((1, 2, \"h\", \"w\"), \"float32\")",
                                   "g: R.Tensor((1, \"ho\", \"wo\", 2), \"float32\")"},
                                  {"R.image.grid_sample(x, g)"}, {"h", "w", "ho", "wo"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred, "R.Tensor((1, 2, ho, wo), dtype=\"float32\")");
  for (int64_t s : {3, 6}) {
    Tensor x = RandomTensor({1, 2, s, s + 1}, DType::Float32(), 73 + s);
    Tensor g = RandomTensor({1, s - 1, 2, 2}, DType::Float32(), 74 + s, -1.2, 1.2);
    auto r = RunMain(src, {x, g});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // TVM's defaults: bilinear, zeros, align_corners=True.
    EXPECT_TRUE(AllClose(r->at(0), GridSampleRef(x, {1, 2, s, s + 1}, g, {1, s - 1, 2, 2}, {"bilinear", "zeros", true}),
                         {1, 2, s - 1, 2}, 1e-4, 1e-5));
  }
}

// The kernel's taps: one offset in the plane per tap (row * W + column;
// int32 for a static plane, int64 for a symbolic one) and a weight, no
// separate rows and columns; the numbers of both forms are checked above.
TEST(OpGridSample, TapsAreOffsetsInThePlane) {
  struct Form {
    std::string x, g;
    std::vector<std::string> syms;
    const char* offsets;
  };
  const Form forms[] = {
      {"R.Tensor((1, 3, 5, 7), \"float32\")", "R.Tensor((1, 4, 6, 2), \"float32\")", {},
       "T_grid_offsets = T.alloc_buffer((1, 4, 4, 6), \"int32\")"},
      {"R.Tensor((1, 3, \"h\", \"w\"), \"float32\")", "R.Tensor((1, 4, 6, 2), \"float32\")", {"h", "w"},
       "T_grid_offsets = T.alloc_buffer((1, 4, 4, 6), \"int64\")"},
  };
  for (const Form& f : forms) {
    std::string src = MultiOpModule({"x: " + f.x, "g: " + f.g}, {"R.image.grid_sample(x, g)"}, f.syms);
    auto mod = text::ParseModule(src, "t.relax");
    ASSERT_TRUE(mod.ok()) << mod.status().ToString();
    auto inferred = relax::InferStructInfo(*mod);
    ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
    auto legal = relax::LegalizeOps(*inferred, {});
    ASSERT_TRUE(legal.ok()) << legal.status().ToString();
    std::string text = text::PrintModule(*legal);
    EXPECT_NE(text.find(f.offsets), std::string::npos) << text;
    EXPECT_EQ(text.find("T_grid_rows"), std::string::npos) << text;
    EXPECT_EQ(text.find("T_grid_cols"), std::string::npos) << text;
  }
}

// The printer writes the operators back as the parser reads them.
TEST(OpScatter, PrinterParserRoundTrip) {
  std::string src = MultiOpModule(
      {"x: R.Tensor((2, 3, 4, 4), \"float32\")", "g: R.Tensor((2, 5, 5, 2), \"float32\")",
       "i: R.Tensor((1, 3, 4, 4), \"int64\")", "j: R.Tensor((2, 2), \"int64\")", "u: R.Tensor((2, 4, 4), \"float32\")", "v: R.Tensor((1, 3, 4, 4), \"float32\")"},
      {"R.scatter_elements(x, i, v, axis=1, reduction=\"max\")",
       "R.scatter_nd(x, j, u, reduction=\"min\")",
       "R.image.grid_sample(x, g, method=\"bicubic\", layout=\"NCHW\", padding_mode=\"reflection\", align_corners=False)"});
  auto mod = text::ParseModule(src, "t.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto inferred = relax::InferStructInfo(*mod);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  std::string once = text::PrintModule(*inferred);
  for (const char* s : {"R.scatter_elements(", "reduction=\"max\"", "R.scatter_nd(", "R.image.grid_sample(",
                        "padding_mode=\"reflection\""}) {
    EXPECT_NE(once.find(s), std::string::npos) << s << "\n" << once;
  }
  auto again = text::ParseModule(once, "again.relax");
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << once;
  auto reinferred = relax::InferStructInfo(*again);
  ASSERT_TRUE(reinferred.ok()) << reinferred.status().ToString();
  EXPECT_EQ(text::PrintModule(*reinferred), once);
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:7:18: "
};

class OpScatterError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpScatterError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "i: R.Tensor((2, 3), \"int64\")",
                                   "f: R.Tensor((2, 3), \"float32\")", "h: R.Tensor((2, 3), \"float16\")",
                                   "im: R.Tensor((2, 1, 3, 3), \"float32\")", "g: R.Tensor((2, 4, 4, 2), \"float32\")",
                                   "m: R.Tensor((\"k\",), \"int64\")"},
                                  {c.expr}, {"k"});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:7:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.scatter_elements(x, f, x)", StatusCode::kInvalidArgument,
     "R.scatter_elements: indices must be an integer tensor, got float32"},
    {"R.scatter_elements(x, i, h)", StatusCode::kInvalidArgument,
     "R.scatter_elements: updates must have data's dtype float32, got float16"},
    {"R.scatter_elements(x, i, x, reduction=\"mean\")", StatusCode::kInvalidArgument,
     "R.scatter_elements: reduction must be \"update\", \"add\", \"mul\", \"max\" or \"min\", got \"mean\""},
    {"R.scatter_elements(x, m, x)", StatusCode::kInvalidArgument,
     "R.scatter_elements: data, indices and updates must have one rank, got 2, 1 and 2"},
    {"R.scatter_elements(x, i, x, axis=2)", StatusCode::kInvalidArgument,
     "R.scatter_elements: axis 2 is out of range for rank 2"},
    {"R.scatter_nd(x, R.reshape(m, R.shape([1, k])), x)", StatusCode::kInvalidArgument,
     "R.scatter_nd: the last dimension of indices must be static"},
    {"R.scatter_nd(x, i, x)", StatusCode::kInvalidArgument,
     "R.scatter_nd: index tuples of length 3 do not fit data of rank 2"},
    {"R.scatter_nd(x, R.reshape(i, R.shape([3, 2])), x)", StatusCode::kInvalidArgument,
     "R.scatter_nd: updates must have rank 1, got 2"},
    {"R.image.grid_sample(im, g, method=\"area\")", StatusCode::kInvalidArgument,
     "R.image.grid_sample: method must be \"bilinear\", \"nearest\" or \"bicubic\", got \"area\""},
    {"R.image.grid_sample(im, g, layout=\"NHWC\")", StatusCode::kInvalidArgument,
     "R.image.grid_sample: layout must be \"NCHW\", got \"NHWC\""},
    {"R.image.grid_sample(im, g, padding_mode=\"wrap\")", StatusCode::kInvalidArgument,
     "R.image.grid_sample: padding_mode must be \"zeros\", \"border\" or \"reflection\", got \"wrap\""},
    {"R.image.grid_sample(i, g)", StatusCode::kInvalidArgument,
     "R.image.grid_sample: data must be a float tensor, got int64"},
    {"R.image.grid_sample(im, R.astype(g, \"int32\"))", StatusCode::kInvalidArgument,
     "R.image.grid_sample: grid must be a float tensor, got int32"},
    {"R.image.grid_sample(x, g)", StatusCode::kInvalidArgument, "R.image.grid_sample: data must have rank 4, got 2"},
    {"R.image.grid_sample(im, x)", StatusCode::kInvalidArgument, "R.image.grid_sample: grid must have rank 4, got 2"},
    {"R.image.grid_sample(im, im)", StatusCode::kInvalidArgument,
     "R.image.grid_sample: the last dimension of grid must be 2, got 3"},
};

INSTANTIATE_TEST_SUITE_P(All, OpScatterError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
