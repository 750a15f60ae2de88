// Normalizations (layer_norm, rms_norm, group_norm, batch_norm) against plain
// C++ references, and every error message of op_norm.cc.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

// Groups the flat offsets of `shape` by `key(index)`.
std::map<int64_t, std::vector<int64_t>> GroupBy(const Shape& shape, const std::function<int64_t(const Shape&)>& key) {
  std::map<int64_t, std::vector<int64_t>> g;
  ForEachIndex(shape, [&](const Shape& i) { g[key(i)].push_back(Offset(shape, i)); });
  return g;
}

// (x - mean) / sqrt(var + eps) per group, both statistics over the group.
std::vector<double> Standardize(const std::map<int64_t, std::vector<int64_t>>& groups, const std::vector<double>& v,
                                double eps) {
  std::vector<double> out(v.size());
  for (const auto& kv : groups) {
    double mean = 0, var = 0;
    for (int64_t o : kv.second) mean += v[o];
    mean /= kv.second.size();
    for (int64_t o : kv.second) var += (v[o] - mean) * (v[o] - mean);
    var /= kv.second.size();
    for (int64_t o : kv.second) out[o] = (v[o] - mean) / std::sqrt(var + eps);
  }
  return out;
}

// Key of an index ignoring `axes` (the kept index, row-major).
int64_t KeptKey(const Shape& shape, const std::vector<int>& axes, const Shape& i) {
  int64_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = false;
    for (int a : axes) reduced |= a == static_cast<int>(d);
    if (!reduced) k = k * shape[d] + i[d];
  }
  return k;
}

// Offset of the axes part of an index (gamma/beta/weight).
int64_t AxesOffset(const Shape& shape, const std::vector<int>& axes, const Shape& i) {
  int64_t k = 0;
  for (int a : axes) k = k * shape[a] + i[a];
  return k;
}

std::string IntList(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void CheckLayerNorm(const Shape& shape, const std::vector<int>& axes, const std::string& dtype, bool center, bool scale,
                    double tol) {
  DType dt = dtype == "float16" ? DType::Float16() : DType::Float32();
  Shape ps;
  for (int a : axes) ps.push_back(shape[a]);
  Tensor x = RandomTensor(shape, dt, 60, -2, 2), g = RandomTensor(ps, dt, 61), b = RandomTensor(ps, dt, 62);
  std::vector<double> xv = ToDoubles(x), gv = ToDoubles(g), bv = ToDoubles(b);
  std::vector<double> want = Standardize(GroupBy(shape, [&](const Shape& i) { return KeptKey(shape, axes, i); }), xv, 1e-5);
  ForEachIndex(shape, [&](const Shape& i) {
    double& w = want[Offset(shape, i)];
    if (scale) w *= gv[AxesOffset(shape, axes, i)];
    if (center) w += bv[AxesOffset(shape, axes, i)];
  });
  std::string expr = "R.nn.layer_norm(x, g, b, axes=" + IntList(axes) + ", epsilon=1e-05, center=" +
                     (center ? "True" : "False") + ", scale=" + (scale ? "True" : "False") + ")";
  auto r = RunMain(OneOpModule({"x: " + TensorType(shape, dtype), "g: " + TensorType(ps, dtype), "b: " + TensorType(ps, dtype)},
                               expr),
                   {x, g, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, shape, tol, tol)) << expr;
}

TEST(OpNorm, LayerNorm) {
  CheckLayerNorm({2, 3, 4}, {2}, "float32", true, true, 1e-4);
  CheckLayerNorm({2, 3, 4}, {1, 2}, "float32", true, true, 1e-4);
  CheckLayerNorm({3, 1, 5}, {0}, "float32", false, true, 1e-4);
  CheckLayerNorm({2, 6}, {1}, "float32", true, false, 1e-4);
  CheckLayerNorm({4, 8}, {1}, "float16", true, true, 1e-2);
}

TEST(OpNorm, LayerNormSymbolicRows) {
  std::string src = OneOpModule({"x: R.Tensor((\"n\", 4), \"float32\")", "g: " + TensorType({4}), "b: " + TensorType({4})},
                                "R.nn.layer_norm(x, g, b, axes=[-1])");
  for (int64_t n : {1, 7}) {
    Tensor x = RandomTensor({n, 4}, DType::Float32(), 70 + n), g = RandomTensor({4}, DType::Float32(), 71),
           b = RandomTensor({4}, DType::Float32(), 72);
    std::vector<double> gv = ToDoubles(g), bv = ToDoubles(b);
    std::vector<double> want = Standardize(GroupBy({n, 4}, [](const Shape& i) { return i[0]; }), ToDoubles(x), 1e-5);
    for (size_t o = 0; o < want.size(); ++o) want[o] = want[o] * gv[o % 4] + bv[o % 4];
    auto r = RunMain(src, {x, g, b});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, {n, 4}, 1e-4, 1e-4));
  }
}

TEST(OpNorm, RmsNorm) {
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  for (const Case& c : {Case{{2, 3, 4}, {2}}, Case{{2, 3, 4}, {1, 2}}, Case{{1, 5}, {1}}}) {
    Shape ps;
    for (int a : c.axes) ps.push_back(c.shape[a]);
    Tensor x = RandomTensor(c.shape, DType::Float32(), 80), w = RandomTensor(ps, DType::Float32(), 81);
    std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), want(xv.size());
    auto groups = GroupBy(c.shape, [&](const Shape& i) { return KeptKey(c.shape, c.axes, i); });
    for (const auto& kv : groups) {
      double sq = 0;
      for (int64_t o : kv.second) sq += xv[o] * xv[o];
      double rms = std::sqrt(sq / kv.second.size() + 1e-5);
      for (int64_t o : kv.second) want[o] = xv[o] / rms;
    }
    ForEachIndex(c.shape, [&](const Shape& i) { want[Offset(c.shape, i)] *= wv[AxesOffset(c.shape, c.axes, i)]; });
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.shape), "w: " + TensorType(ps)},
                                 "R.nn.rms_norm(x, w, axes=" + IntList(c.axes) + ")"),
                     {x, w});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, c.shape, 1e-5, 1e-5));
  }
}

TEST(OpNorm, GroupNorm) {
  // NCHW with 2 groups of 2 channels; and NHWC-like channel_axis=-1.
  struct Case {
    Shape shape;
    int groups, channel;
    std::vector<int> axes;
    std::string attrs;
  };
  for (const Case& c : {Case{{2, 4, 3, 3}, 2, 1, {2, 3}, "num_groups=2, channel_axis=1, axes=[2, 3]"},
                        Case{{2, 3, 1, 6}, 3, 3, {1, 2}, "num_groups=3, channel_axis=-1, axes=[1, 2]"},
                        Case{{1, 4, 5}, 1, 1, {2}, "num_groups=1"}}) {
    int64_t C = c.shape[c.channel], cpg = C / c.groups;
    Tensor x = RandomTensor(c.shape, DType::Float32(), 90), g = RandomTensor({C}, DType::Float32(), 91),
           b = RandomTensor({C}, DType::Float32(), 92);
    std::vector<double> gv = ToDoubles(g), bv = ToDoubles(b);
    std::vector<int> outside = c.axes;
    outside.push_back(c.channel);
    auto key = [&](const Shape& i) { return KeptKey(c.shape, outside, i) * c.groups + i[c.channel] / cpg; };
    std::vector<double> want = Standardize(GroupBy(c.shape, key), ToDoubles(x), 1e-5);
    ForEachIndex(c.shape, [&](const Shape& i) {
      double& w = want[Offset(c.shape, i)];
      w = w * gv[i[c.channel]] + bv[i[c.channel]];
    });
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.shape), "g: " + TensorType({C}), "b: " + TensorType({C})},
                                 "R.nn.group_norm(x, g, b, " + c.attrs + ")"),
                     {x, g, b});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, c.shape, 1e-4, 1e-4)) << c.attrs;
  }
}

TEST(OpNorm, BatchNormInference) {
  for (int axis : {1, -1}) {
    Shape shape{2, 3, 2, 3};
    int ax = axis < 0 ? 3 : axis;
    int64_t C = shape[ax];
    Tensor x = RandomTensor(shape, DType::Float32(), 100);
    Tensor g = RandomTensor({C}, DType::Float32(), 101), b = RandomTensor({C}, DType::Float32(), 102);
    Tensor m = RandomTensor({C}, DType::Float32(), 103), v = RandomTensor({C}, DType::Float32(), 104, 0.5, 2.0);
    std::vector<double> xv = ToDoubles(x), gv = ToDoubles(g), bv = ToDoubles(b), mv = ToDoubles(m), vv = ToDoubles(v);
    std::vector<double> want(xv.size());
    ForEachIndex(shape, [&](const Shape& i) {
      int64_t c = i[ax], o = Offset(shape, i);
      want[o] = (xv[o] - mv[c]) / std::sqrt(vv[c] + 1e-3) * gv[c] + bv[c];
    });
    std::string p = TensorType({C});
    auto r = RunMain(OneOpModule({"x: " + TensorType(shape), "g: " + p, "b: " + p, "m: " + p, "v: " + p},
                                 "R.nn.batch_norm(x, g, b, m, v, axis=" + std::to_string(axis) + ", epsilon=0.001)"),
                     {x, g, b, m, v});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_TRUE(AllClose(r->at(0), want, shape, 1e-5, 1e-5));
    EXPECT_TRUE(AllClose(r->at(1), mv, {C}, 0, 0));
    EXPECT_TRUE(AllClose(r->at(2), vv, {C}, 0, 0));
  }
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpNormError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({2, 4, 3}), g = "g: " + TensorType({3}), b = "b: " + TensorType({3});
  const std::string c4 = "c: " + TensorType({4});
  ExpectOpError({x, g, b}, "R.nn.layer_norm(x, g, b, axes=[3])", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: axis 3 is out of range for a tensor of rank 3");
  ExpectOpError({x, g, b}, "R.nn.layer_norm(x, g, b, axes=[2, -1])", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: axis -1 is repeated");
  ExpectOpError({x, c4, b}, "R.nn.layer_norm(x, c, b, axes=[-1])", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: gamma has shape (4,), expected (3,)");
  ExpectOpError({x, g, "h: " + TensorType({3}, "float16")}, "R.nn.layer_norm(x, g, h)", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: beta has dtype float16 but data has float32");
  ExpectOpError({"i: " + TensorType({2, 3}, "int32"), g, b}, "R.nn.layer_norm(i, g, b)", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: expects a float tensor, got int32");
  ExpectOpError({x, g, b}, "R.nn.layer_norm(x, g, b, epsilon=\"small\")", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: epsilon must be a number");
  ExpectOpError({x, g, b}, "R.nn.layer_norm(x, g, b, center=2)", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: center must be True or False");
  ExpectOpError({x, g, b}, "R.nn.layer_norm(x, g, b, axes=\"x\")", StatusCode::kInvalidArgument,
                "R.nn.layer_norm: axes must be a list of integers");
  ExpectOpError({x, c4}, "R.nn.rms_norm(x, c)", StatusCode::kInvalidArgument,
                "R.nn.rms_norm: weight has shape (4,), expected (3,)");
  ExpectOpError({x, c4}, "R.nn.group_norm(x, c, c)", StatusCode::kInvalidArgument,
                "R.nn.group_norm: num_groups is required");
  ExpectOpError({x, c4}, "R.nn.group_norm(x, c, c, num_groups=0)", StatusCode::kInvalidArgument,
                "R.nn.group_norm: num_groups must be positive, got 0");
  ExpectOpError({x, c4}, "R.nn.group_norm(x, c, c, num_groups=3)", StatusCode::kInvalidArgument,
                "R.nn.group_norm: 4 channels do not divide into 3 groups");
  ExpectOpError({x, c4}, "R.nn.group_norm(x, c, c, num_groups=2, axes=[1, 2])", StatusCode::kInvalidArgument,
                "R.nn.group_norm: axes must not contain the channel axis 1");
  ExpectOpError({x, c4}, "R.nn.batch_norm(x, c, c, c, c, training=True)", StatusCode::kUnimplemented,
                "R.nn.batch_norm: training=True is not supported (inference only)");
  ExpectOpError({x, c4, g}, "R.nn.batch_norm(x, c, c, c, g)", StatusCode::kInvalidArgument,
                "R.nn.batch_norm: moving_var has shape (3,), expected (4,)");
  ExpectOpError({x, c4, "s: R.Shape([4])"}, "R.nn.batch_norm(x, c, c, c, s)", StatusCode::kInvalidArgument,
                "R.nn.batch_norm: expects a tensor as argument 5 (moving_var)");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
