// Shape, data-movement, reduction and scan ONNX operators end to end, and
// shape subgraphs on symbolic dimensions run at several batch sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(OnnxShapeE2E, DataMovement) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3, 4});
  auto* tr = m.Node("Transpose", {"x"}, {"tr"});  // (4, 3, 2) reversed
  (void)tr;
  m.Output("tr");
  m.InitializerI64("shape", {2}, {0, -1});
  m.Node("Reshape", {"x", "shape"}, {"rs"});  // (2, 12)
  m.Output("rs");
  m.InitializerI64("ax0", {1}, {0});
  m.Node("Unsqueeze", {"x", "ax0"}, {"us"});  // (1, 2, 3, 4)
  m.Node("Squeeze", {"us", "ax0"}, {"sq"});
  m.Output("sq");
  auto* cc = m.Node("Concat", {"x", "x"}, {"cc"});
  B::AttrInt(cc, "axis", 1);  // (2, 6, 4)
  m.Output("cc");
  m.InitializerI64("split", {2}, {1, 3});
  auto* sp = m.Node("Split", {"x", "split"}, {"sp0", "sp1"});
  B::AttrInt(sp, "axis", 2);
  m.Output("sp0");
  m.Output("sp1");
  // Slice x[:, ::-2, 1:] (axes 1 and 2).
  m.InitializerI64("st", {2}, {-1, 1});
  m.InitializerI64("en", {2}, {INT64_MIN, INT64_MAX});
  m.InitializerI64("axs", {2}, {1, 2});
  m.InitializerI64("stp", {2}, {-2, 1});
  m.Node("Slice", {"x", "st", "en", "axs", "stp"}, {"sl"});
  m.Output("sl");
  m.InitializerI64("gi", {2}, {-1, 0});
  auto* ga = m.Node("Gather", {"x", "gi"}, {"ga"});
  B::AttrInt(ga, "axis", 1);  // (2, 2, 4)
  m.Output("ga");
  m.InitializerI64("ge_i", {2, 1, 1}, {2, 0});
  auto* ge = m.Node("GatherElements", {"x", "ge_i"}, {"ge"});
  B::AttrInt(ge, "axis", 1);
  m.Output("ge");
  m.InitializerI64("eshape", {4}, {2, 1, 1, 1});
  m.Node("Expand", {"x", "eshape"}, {"ex"});  // (2, 2, 3, 4)
  m.Output("ex");
  m.InitializerI64("reps", {3}, {1, 2, 1});
  m.Node("Tile", {"x", "reps"}, {"ti"});  // (2, 6, 4)
  m.Output("ti");
  auto* fl = m.Node("Flatten", {"x"}, {"fl"});
  B::AttrInt(fl, "axis", 2);  // (6, 4)
  m.Output("fl");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = Iota(24);
  auto out = RunMain(*module, {F32({2, 3, 4}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto X = [&](int a, int b, int c) { return xv[a * 12 + b * 4 + c]; };
  std::vector<float> tr_v, sp0, sp1, sl, ga_v, ge_v, ex, ti, cc_v;
  for (int c = 0; c < 4; ++c)
    for (int b = 0; b < 3; ++b)
      for (int a = 0; a < 2; ++a) tr_v.push_back(X(a, b, c));
  for (int a = 0; a < 2; ++a) {
    for (int r = 0; r < 2; ++r)
      for (int b = 0; b < 3; ++b)
        for (int c = 0; c < 4; ++c) cc_v.push_back(X(a, b, c));
    for (int b = 0; b < 3; ++b) {
      sp0.push_back(X(a, b, 0));
      for (int c = 1; c < 4; ++c) sp1.push_back(X(a, b, c));
    }
    for (int b : {2, 0})
      for (int c = 1; c < 4; ++c) sl.push_back(X(a, b, c));
    for (int b : {2, 0})
      for (int c = 0; c < 4; ++c) ga_v.push_back(X(a, b, c));
    ge_v.push_back(X(a, a == 0 ? 2 : 0, 0));
    for (int r = 0; r < 2; ++r)
      for (int b = 0; b < 3; ++b)
        for (int c = 0; c < 4; ++c) ti.push_back(X(a, b, c));
  }
  for (int e = 0; e < 2; ++e) ex.insert(ex.end(), xv.begin(), xv.end());
  EXPECT_EQ(Values((*out)[0]), tr_v);
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(Values((*out)[1]), xv);
  EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(Values((*out)[2]), xv);
  EXPECT_EQ((*out)[2].shape(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Values((*out)[3]), cc_v);
  EXPECT_EQ(Values((*out)[4]), sp0);
  EXPECT_EQ(Values((*out)[5]), sp1);
  EXPECT_EQ(Values((*out)[6]), sl);
  EXPECT_EQ((*out)[6].shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(Values((*out)[7]), ga_v);
  EXPECT_EQ(Values((*out)[8]), ge_v);
  EXPECT_EQ(Values((*out)[9]), ex);
  EXPECT_EQ((*out)[9].shape(), (std::vector<int64_t>{2, 2, 3, 4}));
  EXPECT_EQ(Values((*out)[10]), ti);
  EXPECT_EQ(Values((*out)[11]), xv);
  EXPECT_EQ((*out)[11].shape(), (std::vector<int64_t>{6, 4}));
}

TEST(OnnxShapeE2E, ReductionsAndScans) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  auto reduce = [&](const char* op, std::vector<int64_t> axes, int keep) {
    std::string out = std::string(op) + std::to_string(m.graph().node_size());
    auto* n = m.Node(op, {"x"}, {out});
    B::AttrInts(n, "axes", axes);
    B::AttrInt(n, "keepdims", keep);
    m.Output(out);
  };
  reduce("ReduceMean", {1}, 1);
  reduce("ReduceMax", {0}, 0);
  reduce("ReduceMin", {-1}, 0);
  reduce("ReduceProd", {0, 1}, 0);
  m.InitializerI64("rs_axes", {1}, {0});
  m.Node("ReduceSum", {"x", "rs_axes"}, {"rsum"});
  m.Output("rsum");
  auto* am = m.Node("ArgMax", {"x"}, {"am"});
  B::AttrInt(am, "axis", 1);
  B::AttrInt(am, "keepdims", 0);
  m.Output("am", TensorProto::INT64);
  m.InitializerI64("cs_axis", {}, {1});
  auto* cs = m.Node("CumSum", {"x", "cs_axis"}, {"cs"});
  B::AttrInt(cs, "exclusive", 1);
  m.Output("cs");
  m.InitializerI64("k", {1}, {2});
  m.Node("TopK", {"x", "k"}, {"tv", "ti"});
  m.Output("tv");
  m.Output("ti", TensorProto::INT64);
  m.InitializerI64("tk", {}, {1});
  auto* tri = m.Node("Trilu", {"x", "tk"}, {"tri"});
  B::AttrInt(tri, "upper", 0);
  m.Output("tri");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = {3, -1, 2, 0.5f, 4, -2};
  auto out = RunMain(*module, {F32({2, 3}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto near = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::fabs(a[i] - b[i]) > 1e-5f) return false;
    return true;
  };
  EXPECT_TRUE(near(Values((*out)[0]), {4.f / 3, 2.5f / 3}));
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<float>{3, 4, 2}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<float>{-1, -2}));
  EXPECT_TRUE(near(Values((*out)[3]), {3 * -1 * 2 * 0.5f * 4 * -2}));
  EXPECT_EQ(Values((*out)[4]), (std::vector<float>{3.5f, 3, 0}));
  EXPECT_EQ((*out)[4].shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values((*out)[5]), (std::vector<float>{0, 1}));
  EXPECT_EQ(Values((*out)[6]), (std::vector<float>{0, 3, 2, 0, 0.5f, 4.5f}));
  EXPECT_EQ(Values((*out)[7]), (std::vector<float>{3, 2, 4, 0.5f}));
  EXPECT_EQ(Values((*out)[8]), (std::vector<float>{0, 2, 1, 0}));
  EXPECT_EQ(Values((*out)[9]), (std::vector<float>{3, -1, 0, 0.5f, 4, -2}));
}

// The transformer pattern: the batch and sequence sizes come from Shape
// and feed Reshape; the program must not compute them from tensors.
TEST(OnnxShapeE2E, SymbolicShapeSubgraphRunsAtSeveralSizes) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"batch", "seq", 4});
  m.Node("Shape", {"x"}, {"s"});
  m.InitializerI64("i0", {1}, {0});
  m.InitializerI64("i1", {1}, {1});
  m.Node("Gather", {"s", "i0"}, {"b"});
  m.Node("Gather", {"s", "i1"}, {"t"});
  m.InitializerI64("two", {1}, {2});
  m.Node("Div", {"b", "b"}, {"one"});  // 1, folded symbolically (b // b)
  m.Node("Mul", {"t", "two"}, {"t2"});
  m.InitializerI64("half", {1}, {2});
  auto* cc = m.Node("Concat", {"b", "t2", "half"}, {"target"});
  B::AttrInt(cc, "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"y"});  // (batch, 2 * seq, 2)
  m.Node("ConstantOfShape", {"s"}, {"z"});
  auto* cz = m.Node("Constant", {}, {"ones_val"});
  B::AttrFloat(cz, "value_float", 1.0f);
  m.Node("Add", {"z", "ones_val"}, {"ones"});
  m.Node("Add", {"x", "ones"}, {"x1"});
  m.Node("Range", {"zero_s", "seq_s", "one_s"}, {"pos"});
  m.InitializerI64("zero_s", {}, {0});
  m.InitializerI64("one_s", {}, {1});
  m.Node("Squeeze", {"t"}, {"seq_s"});
  m.Output("y");
  m.Output("x1");
  // Range must come after its inputs: move it to the end.
  m.graph().mutable_node()->SwapElements(m.graph().node_size() - 2, m.graph().node_size() - 1);
  m.Output("pos", TensorProto::INT64);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t batch : {1, 3}) {
    for (int64_t seq : {2, 5}) {
      std::vector<float> xv = Ramp(batch * seq * 4, -1, 1, static_cast<uint64_t>(batch * 10 + seq));
      auto out = RunMain(*module, {F32({batch, seq, 4}, xv)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{batch, 2 * seq, 2}));
      EXPECT_EQ(Values((*out)[0]), xv);
      std::vector<float> x1 = xv;
      for (auto& v : x1) v += 1;
      EXPECT_EQ(Values((*out)[1]), x1);
      std::vector<float> pos;
      for (int64_t i = 0; i < seq; ++i) pos.push_back(static_cast<float>(i));
      EXPECT_EQ(Values((*out)[2]), pos);
    }
  }
}

TEST(OnnxShapeE2E, ShapeArithmeticOnUnknownDimsRunsAtTwoShapes) {
  // x: (?, ?, 8), both unknown (x_dim0 = b, x_dim1 = s), compiled once:
  //   pe   = pos[:s]                       Slice, ends = Shape(x)[1:2]
  //   y    = x + pe + Expand(bias, Concat(b, s, 8))
  //   tail = y[:, s // 2 : s]              Slice, starts = Div(s, 2)
  //   last = y[:, s - 1 : s]               Slice, starts = Sub(s, 1)
  B m(13);
  m.Input("x", TensorProto::FLOAT, {-1, OnnxDim::Unknown(), 8});
  std::vector<float> pos = Ramp(16 * 8, -2, 2, 7), bias = Ramp(8, -1, 1, 3);
  m.Initializer("pos", {16, 8}, pos);
  m.Initializer("bias", {1, 1, 8}, bias);
  m.InitializerI64("zero", {1}, {0});
  m.InitializerI64("one", {1}, {1});
  m.InitializerI64("two", {1}, {2});
  m.InitializerI64("eight", {1}, {8});
  m.Node("Shape", {"x"}, {"sh"});
  m.Node("Gather", {"sh", "zero"}, {"b1"});
  m.Node("Gather", {"sh", "one"}, {"s1"});
  m.Node("Slice", {"pos", "zero", "s1", "zero"}, {"pe"});
  m.Node("Add", {"x", "pe"}, {"xp"});
  B::AttrInt(m.Node("Concat", {"b1", "s1", "eight"}, {"eshape"}), "axis", 0);
  m.Node("Expand", {"bias", "eshape"}, {"bias_e"});
  m.Node("Add", {"xp", "bias_e"}, {"y"});
  m.Node("Div", {"s1", "two"}, {"half"});
  m.Node("Slice", {"y", "half", "s1", "one"}, {"tail"});
  m.Node("Sub", {"s1", "one"}, {"sm1"});
  m.Node("Slice", {"y", "sm1", "s1", "one"}, {"last"});
  m.Output("y");
  m.Output("tail");
  m.Output("last");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (auto bs : {std::pair<int64_t, int64_t>{2, 3}, {1, 7}}) {
    int64_t b = bs.first, sq = bs.second;
    std::vector<float> xv = Ramp(b * sq * 8, -1, 1, static_cast<uint64_t>(b * 16 + sq));
    auto out = RunMain(*module, {F32({b, sq, 8}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> y(xv.size());
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < sq; ++j)
        for (int64_t k = 0; k < 8; ++k) {
          size_t at = static_cast<size_t>((i * sq + j) * 8 + k);
          y[at] = xv[at] + pos[static_cast<size_t>(j * 8 + k)] + bias[static_cast<size_t>(k)];
        }
    auto rows = [&](int64_t from) {
      std::vector<float> r;
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = from; j < sq; ++j)
          for (int64_t k = 0; k < 8; ++k) r.push_back(y[static_cast<size_t>((i * sq + j) * 8 + k)]);
      return r;
    };
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{b, sq, 8}));
    std::vector<float> got = Values((*out)[0]);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(got[i], y[i]) << i;
    ASSERT_EQ((*out)[1].shape(), (std::vector<int64_t>{b, sq - sq / 2, 8}));
    EXPECT_EQ(Values((*out)[1]), rows(sq / 2));
    ASSERT_EQ((*out)[2].shape(), (std::vector<int64_t>{b, 1, 8}));
    EXPECT_EQ(Values((*out)[2]), rows(sq - 1));
  }
}

TEST(OnnxShapeE2E, RangeReshapeAndConstantOfShapeFromProductsOfUnknownDims) {
  // x: (?, ?) = (b, s), compiled once:
  //   idx  = Reshape(Cast(Range(0, b * s, 1)), Shape(x))   kernels sized b * s
  //   y    = x + idx
  //   ones = ConstantOfShape(Concat(Unsqueeze(b * 2), s))  -> (2b, s) of 1.5
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"?", "?"});
  m.InitializerI64("i0", {}, {0});
  m.InitializerI64("i1", {}, {1});
  m.InitializerI64("two", {}, {2});
  m.InitializerI64("ax0", {1}, {0});
  m.Node("Shape", {"x"}, {"sh"});
  m.Node("Gather", {"sh", "i0"}, {"b"});
  m.Node("Gather", {"sh", "i1"}, {"s"});
  m.Node("Mul", {"b", "s"}, {"n"});
  m.Node("Range", {"i0", "n", "i1"}, {"r"});
  B::AttrInt(m.Node("Cast", {"r"}, {"rf"}), "to", TensorProto::FLOAT);
  m.Node("Reshape", {"rf", "sh"}, {"idx"});
  m.Node("Add", {"x", "idx"}, {"y"});
  m.Node("Mul", {"b", "two"}, {"b2"});
  m.Node("Unsqueeze", {"b2", "ax0"}, {"b2v"});
  m.Node("Unsqueeze", {"s", "ax0"}, {"sv"});
  B::AttrInt(m.Node("Concat", {"b2v", "sv"}, {"oshape"}), "axis", 0);
  auto* cs = m.Node("ConstantOfShape", {"oshape"}, {"ones"});
  B::AttrTensor(cs, "value", B::Tensor("v", {1}, {1.5f}));
  m.Output("y");
  m.Output("ones");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (auto bs : {std::pair<int64_t, int64_t>{2, 3}, {4, 5}}) {
    int64_t b = bs.first, sq = bs.second;
    std::vector<float> xv = Ramp(b * sq, -1, 1, static_cast<uint64_t>(b + sq));
    auto out = RunMain(*module, {F32({b, sq}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> y;
    for (size_t i = 0; i < xv.size(); ++i) y.push_back(xv[i] + static_cast<float>(i));
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{b, sq}));
    EXPECT_EQ(Values((*out)[0]), y);
    ASSERT_EQ((*out)[1].shape(), (std::vector<int64_t>{2 * b, sq}));
    EXPECT_EQ(Values((*out)[1]), std::vector<float>(static_cast<size_t>(2 * b * sq), 1.5f));
  }
}

TEST(OnnxShapeE2E, ResizeByWholeScalesOnSymbolicDimsRunsAtTwoShapes) {
  // Nearest x2 upsampling of (1, 2, ?, ?): the output is (1, 2, 2h, 2w).
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 2, "?", -1});
  m.Initializer("scales", {4}, {1, 1, 2, 2});
  auto* r = m.Node("Resize", {"x", "", "scales"}, {"y"});
  B::AttrString(r, "mode", "nearest");
  B::AttrString(r, "coordinate_transformation_mode", "asymmetric");
  B::AttrString(r, "nearest_mode", "floor");
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (auto hw : {std::pair<int64_t, int64_t>{3, 4}, {5, 2}}) {
    int64_t h = hw.first, w = hw.second;
    std::vector<float> xv = Ramp(2 * h * w, -1, 1, static_cast<uint64_t>(h * 8 + w));
    auto out = RunMain(*module, {F32({1, 2, h, w}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 2 * h, 2 * w}));
    std::vector<float> expected;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 2 * h; ++i)
        for (int64_t j = 0; j < 2 * w; ++j) expected.push_back(xv[static_cast<size_t>((c * h + i / 2) * w + j / 2)]);
    EXPECT_EQ(Values((*out)[0]), expected);
  }
}

TEST(OnnxShapeE2E, ResizeToSizesFromShapeArithmeticRunsAtTwoShapes) {
  // torch's Upsample(scale_factor=2) export: sizes = Concat(Shape(x)[:2],
  // Shape(x)[2:] * 2) on (?, 2, ?, ?), linear, half_pixel; compiled once.
  B m(13);
  m.Input("x", TensorProto::FLOAT, {-1, 2, -1, -1});
  m.InitializerI64("s0", {1}, {0});
  m.InitializerI64("s2", {1}, {2});
  m.InitializerI64("s4", {1}, {4});
  m.InitializerI64("twos", {2}, {2, 2});
  m.Node("Shape", {"x"}, {"sh"});
  m.Node("Slice", {"sh", "s0", "s2"}, {"nc"});
  m.Node("Slice", {"sh", "s2", "s4"}, {"hw"});
  m.Node("Mul", {"hw", "twos"}, {"hw2"});
  B::AttrInt(m.Node("Concat", {"nc", "hw2"}, {"sizes"}), "axis", 0);
  auto* r = m.Node("Resize", {"x", "", "", "sizes"}, {"y"});
  B::AttrString(r, "mode", "linear");
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (auto hw : {std::pair<int64_t, int64_t>{3, 4}, {2, 5}}) {
    int64_t h = hw.first, w = hw.second;
    std::vector<float> xv = Ramp(2 * h * w, -1, 1, static_cast<uint64_t>(h * 8 + w));
    auto out = RunMain(*module, {F32({1, 2, h, w}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 2 * h, 2 * w}));
    // half_pixel: source coordinate (i + 0.5) / 2 - 0.5, clamped to the edge.
    auto axis = [](int64_t i, int64_t n, int64_t* lo, int64_t* hi, double* t) {
      double c = std::max(0.0, (static_cast<double>(i) + 0.5) / 2.0 - 0.5);
      *lo = std::min<int64_t>(static_cast<int64_t>(std::floor(c)), n - 1);
      *hi = std::min<int64_t>(*lo + 1, n - 1);
      *t = c - static_cast<double>(*lo);
    };
    std::vector<float> got = Values((*out)[0]);
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 2 * h; ++i)
        for (int64_t j = 0; j < 2 * w; ++j) {
          int64_t y0, y1, x0, x1;
          double ty, tx;
          axis(i, h, &y0, &y1, &ty);
          axis(j, w, &x0, &x1, &tx);
          auto at = [&](int64_t y, int64_t x) { return static_cast<double>(xv[static_cast<size_t>((c * h + y) * w + x)]); };
          double want = (at(y0, x0) * (1 - tx) + at(y0, x1) * tx) * (1 - ty) + (at(y1, x0) * (1 - tx) + at(y1, x1) * tx) * ty;
          EXPECT_NEAR(got[static_cast<size_t>((c * 2 * h + i) * 2 * w + j)], want, 1e-5) << c << " " << i << " " << j;
        }
  }
}

TEST(OnnxShapeE2E, PadToAMultipleOf32FromShapeArithmeticRunsAtTwoShapes) {
  // An OCR detector's input padding: H and W (unknown) grow to the next
  // multiple of 32, pads = (d + 31) / 32 * 32 - d from Shape, Add, Div, Mul,
  // Sub and Concat; compiled once.
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 1, -1, -1});
  m.InitializerI64("hw", {2}, {2, 3});
  m.InitializerI64("c31", {1}, {31});
  m.InitializerI64("c32", {1}, {32});
  m.InitializerI64("zeros", {6}, {0, 0, 0, 0, 0, 0});
  m.Node("Shape", {"x"}, {"sh"});
  m.Node("Gather", {"sh", "hw"}, {"d"});  // [h, w]
  m.Node("Add", {"d", "c31"}, {"d31"});
  m.Node("Div", {"d31", "c32"}, {"blocks"});
  m.Node("Mul", {"blocks", "c32"}, {"rounded"});
  m.Node("Sub", {"rounded", "d"}, {"extra"});
  B::AttrInt(m.Node("Concat", {"zeros", "extra"}, {"pads"}), "axis", 0);
  m.Node("Pad", {"x", "pads"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (auto hw : {std::pair<int64_t, int64_t>{5, 40}, {33, 7}}) {
    int64_t h = hw.first, w = hw.second, ph = (h + 31) / 32 * 32, pw = (w + 31) / 32 * 32;
    std::vector<float> xv = Ramp(h * w, -1, 1, static_cast<uint64_t>(h + w));
    auto out = RunMain(*module, {F32({1, 1, h, w}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 1, ph, pw}));
    std::vector<float> expected;
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j) expected.push_back(i < h && j < w ? xv[static_cast<size_t>(i * w + j)] : 0.0f);
    EXPECT_EQ(Values((*out)[0]), expected);
  }
}

// Elementwise operands whose symbolic dimensions cannot be proved equal
// (two unrelated dim_params here; a feature pyramid's rounded sizes in the
// OCR detector): the second is matched to the first when the program runs,
// so equal sizes compute and unequal ones are a run-time error naming the
// dimension, as in ONNX Runtime.
TEST(OnnxShapeE2E, UnprovenEqualDimsAreCheckedWhenTheProgramRuns) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"h", 2});
  m.Input("y", TensorProto::FLOAT, {"g", 2});
  m.Node("Add", {"x", "y"}, {"z"});
  m.Output("z");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({3, 2}, Iota(6)), F32({3, 2}, {10, 20, 30, 40, 50, 60})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{10, 21, 32, 43, 54, 65}));
  auto bad = RunMain(*module, {F32({3, 2}, Iota(6)), F32({4, 2}, Iota(8))});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "main: ONNX Add node \"z\": input 1 \"y\" (shape [g, 2]) has g = 4 at axis 0; the compiled model needs it "
            "equal to axis 0 of input 0 \"x\" (shape [h, 2]): h = 3");
}

TEST(OnnxShapeE2E, RangeOverACastStaticDimHasAStaticLength) {
  // A YOLO export's anchor grid with its dimensions pinned (NudeNet at 320):
  // Range(0, Cast(H, float), 1) ++ Range(0, Cast(W, float), 1) added to a
  // constant of length H + W. The casts of the static H and W fold, so the
  // ranges have static lengths; before, each range's length was a run-time
  // size and "cannot prove that dimensions ... and 7 are equal or 1".
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 3, 4});
  m.InitializerI64("i1", {}, {1});
  m.InitializerI64("i2", {}, {2});
  m.Initializer("zero", {}, {0.0f});
  m.Initializer("one", {}, {1.0f});
  m.Initializer("c", {7}, {10, 20, 30, 40, 50, 60, 70});
  m.Node("Shape", {"x"}, {"sh"});
  m.Node("Gather", {"sh", "i1"}, {"h"});
  m.Node("Gather", {"sh", "i2"}, {"w"});
  B::AttrInt(m.Node("Cast", {"h"}, {"hf"}), "to", TensorProto::FLOAT);
  B::AttrInt(m.Node("Cast", {"w"}, {"wf"}), "to", TensorProto::FLOAT);
  m.Node("Range", {"zero", "hf", "one"}, {"rh"});
  m.Node("Range", {"zero", "wf", "one"}, {"rw"});
  B::AttrInt(m.Node("Concat", {"rh", "rw"}, {"r"}), "axis", 0);
  m.Node("Add", {"r", "c"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({1, 3, 4}, Iota(12))});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{10, 21, 32, 40, 51, 62, 73}));
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
