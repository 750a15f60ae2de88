// ONNX Loop and Scan end to end: a trip count, a condition, both, known only
// at run time; loop-carried values and scan outputs; the iteration number;
// values captured from the enclosing graph; zero iterations; a state that
// grows; Scan's axes and directions; and each error. References are computed
// by hand in the tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/text/text.h"
#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

Tensor I64Scalar(int64_t v) { return I64({}, {v}); }

// The loop body's three standard inputs: iteration, condition, one state.
B LoopBody(int state_type = TensorProto::FLOAT, std::vector<OnnxDim> state_dims = {3}) {
  B body;
  body.Input("i", TensorProto::INT64, {});
  body.Input("c_in", TensorProto::BOOL, {});
  body.Input("s", state_type, state_dims);
  return body;
}

// x: float[3] state; each iteration s += w (w = exp(v), computed before the
// loop: an enclosing value) and scans out s and the iteration number.
// has_m / has_cond: which of M and cond are graph inputs; cond_out says
// "s[0] < limit".
B CountingLoop(bool has_m, bool has_cond) {
  B m(16);
  if (has_m) m.Input("M", TensorProto::INT64, {});
  if (has_cond) m.Input("cond", TensorProto::BOOL, {});
  m.Input("x", TensorProto::FLOAT, {3});
  m.Input("v", TensorProto::FLOAT, {3});
  m.Node("Exp", {"v"}, {"w"});
  B body = LoopBody();
  body.Node("Add", {"s", "w"}, {"s_out"});
  body.InitializerI64("zero", {1}, {0});
  body.Node("Gather", {"s_out", "zero"}, {"first"});
  body.Initializer("limit", {1}, {10});
  body.Node("Less", {"first", "limit"}, {"lt"});
  body.InitializerI64("ax", {1}, {0});
  body.Node("Squeeze", {"lt", "ax"}, {"c_out"});
  body.Node("Cast", {"i"}, {"i_f"});
  B::AttrInt(body.graph().mutable_node(body.graph().node_size() - 1), "to", TensorProto::FLOAT);
  body.Output("c_out", TensorProto::BOOL);
  body.Output("s_out");
  body.Output("s_out");
  body.Output("i_f");
  auto* n = m.Node("Loop", {has_m ? "M" : "", has_cond ? "cond" : "", "x"}, {"final", "trace", "iters"}, "count");
  B::AttrGraph(n, "body", body);
  m.Output("final");
  m.Output("trace");
  m.Output("iters");
  return m;
}

// The reference: runs the loop of CountingLoop in C++.
void ExpectCounting(const std::vector<Tensor>& out, int64_t m, bool use_m, bool cond, bool use_cond,
                    const std::vector<float>& x, const std::vector<float>& v) {
  std::vector<float> s = x, trace, iters;
  int64_t n = 0;
  for (int64_t i = 0; (!use_m || i < m) && (!use_cond || cond); ++i, ++n) {
    for (int k = 0; k < 3; ++k) s[k] += std::exp(v[k]);
    trace.insert(trace.end(), s.begin(), s.end());
    iters.push_back(static_cast<float>(i));
    cond = s[0] < 10;
  }
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{n, 3}));
  EXPECT_EQ(out[2].shape(), (std::vector<int64_t>{n}));
  std::vector<float> f = Values(out[0]), t = Values(out[1]);
  ASSERT_EQ(f.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(f[k], s[k], 1e-4f) << k;
  ASSERT_EQ(t.size(), trace.size());
  for (size_t k = 0; k < t.size(); ++k) EXPECT_NEAR(t[k], trace[k], 1e-4f) << k;
  EXPECT_EQ(Values(out[2]), iters);
}

const std::vector<float> kX = {0.5f, -1, 2}, kV = {0.25f, 0.5f, -1};

TEST(OnnxLoopE2E, TripCountOnlyKnownAtRunTime) {
  B m = CountingLoop(true, false);
  std::string text = ImportText(m);
  EXPECT_NE(text.find("def count_body("), std::string::npos) << text;
  // The loop sits between dataflow blocks: its operands (w = exp(v), captured
  // by the body) are the variables that leave the block, not the block's own.
  size_t at = text.find("R.call_packed(\"vm.builtin.loop\"");
  ASSERT_NE(at, std::string::npos) << text;
  std::string call = text.substr(at, text.find('\n', at) - at);
  EXPECT_EQ(call.find(", lv"), std::string::npos) << call;
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  // 1000 iterations: far deeper than the VM's call depth cap (256); the body is one frame.
  for (int64_t trips : {0, 1, 3, 7, -2, 1000}) {
    auto out = RunMain(*module, {I64Scalar(trips), F32({3}, kX), F32({3}, kV)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectCounting(*out, trips, true, true, false, kX, kV);
  }
}

TEST(OnnxLoopE2E, ConditionOnly) {
  B m = CountingLoop(false, true);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (bool c : {true, false}) {
    auto out = RunMain(*module, {Bool(c), F32({3}, kX), F32({3}, kV)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectCounting(*out, 0, false, c, true, kX, kV);
  }
}

TEST(OnnxLoopE2E, TripCountAndConditionWhicheverEndsFirst) {
  B m = CountingLoop(true, true);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t trips : {0, 2, 100}) {
    for (bool c : {true, false}) {
      auto out = RunMain(*module, {I64Scalar(trips), Bool(c), F32({3}, kX), F32({3}, kV)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectCounting(*out, trips, true, c, true, kX, kV);
    }
  }
}

TEST(OnnxLoopE2E, ConstantTripCountGivesStaticScanOutputs) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2});
  m.InitializerI64("M", {}, {4});
  B body = LoopBody(TensorProto::FLOAT, {2});
  body.Node("Mul", {"s", "s"}, {"sq"});
  // The body's condition a constant (the node has none, so it is ignored).
  ::onnx::TensorProto t;
  t.set_data_type(TensorProto::BOOL);
  t.add_int32_data(0);
  B::AttrTensor(body.Node("Constant", {}, {"c_out"}), "value", t);
  body.Output("c_out", TensorProto::BOOL);
  body.Output("sq");
  body.Output("s");
  auto* n = m.Node("Loop", {"M", "", "x"}, {"y", "ys"});
  B::AttrGraph(n, "body", body);
  m.Node("Relu", {"ys"}, {"r"});
  m.Output("y");
  m.Output("r");
  std::string text = ImportText(m);
  EXPECT_NE(text.find("R.Tensor((4, 2), dtype=\"float32\")"), std::string::npos) << text;
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({2}, {1.5f, -1.1f})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> s = {1.5f, -1.1f}, trace;
  for (int i = 0; i < 4; ++i) {
    for (float x : s) trace.push_back(std::max(x, 0.0f));
    for (float& x : s) x *= x;
  }
  std::vector<float> y = Values((*out)[0]), r = Values((*out)[1]);
  ASSERT_EQ(y.size(), 2u);
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(y[k], s[k], 1e-3f * std::abs(s[k]));
  ASSERT_EQ(r.size(), trace.size());
  for (size_t k = 0; k < r.size(); ++k) EXPECT_NEAR(r[k], trace[k], 1e-4f * (1 + std::abs(trace[k])));
}

// M from shape arithmetic (the length of x): an R.prim_value of the symbolic
// dimension, which is also the scan outputs' length.
TEST(OnnxLoopE2E, TripCountFromShapeArithmetic) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 2});
  m.Node("Shape", {"x"}, {"shape"});
  m.InitializerI64("zero", {}, {0});
  m.Node("Gather", {"shape", "zero"}, {"len"});
  B body = LoopBody(TensorProto::FLOAT, {2});
  body.Node("Gather", {"x", "i"}, {"row"});
  body.Node("Add", {"s", "row"}, {"s_out"});
  body.Node("Identity", {"c_in"}, {"c_out"});
  body.Output("c_out", TensorProto::BOOL);
  body.Output("s_out");
  body.Output("s_out");
  auto* n = m.Node("Loop", {"len", "", "zero_row"}, {"total", "partial"}, "cumsum");
  B::AttrGraph(n, "body", body);
  m.Initializer("zero_row", {2}, {0, 0});
  m.Output("total");
  m.Output("partial");
  std::string text = ImportText(m);
  EXPECT_NE(text.find("R.Tensor((n, 2), dtype=\"float32\")"), std::string::npos) << text;
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  for (int64_t rows : {0, 1, 5}) {
    std::vector<float> x = Ramp(rows * 2, -1, 1, 9);
    auto out = RunMain(*module, {F32({rows, 2}, x)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> s = {0, 0}, partial;
    for (int64_t r = 0; r < rows; ++r) {
      for (int k = 0; k < 2; ++k) s[k] += x[r * 2 + k];
      partial.insert(partial.end(), s.begin(), s.end());
    }
    EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{rows, 2}));
    std::vector<float> total = Values((*out)[0]), got = Values((*out)[1]);
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(total[k], s[k], 1e-5f);
    ASSERT_EQ(got.size(), partial.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], partial[k], 1e-5f);
  }
}

// A state that grows each iteration (Concat): lifted again with symbolic
// dimensions; a symbolic outer dimension; a captured initializer.
TEST(OnnxLoopE2E, StateThatGrowsAndSymbolicOuterDims) {
  B m(13);
  m.Input("M", TensorProto::INT64, {1});
  m.Input("x", TensorProto::FLOAT, {"n"});
  m.Initializer("one", {1}, {1});
  B body = LoopBody(TensorProto::FLOAT, {"k"});
  body.Node("Add", {"s", "one"}, {"s1"});
  body.Node("Concat", {"s", "s1"}, {"s_out"});
  B::AttrInt(body.graph().mutable_node(1), "axis", 0);
  body.Node("Identity", {"c_in"}, {"c_out"});
  body.Output("c_out", TensorProto::BOOL);
  body.Output("s_out");
  auto* n = m.Node("Loop", {"M", "", "x"}, {"y"});
  B::AttrGraph(n, "body", body);
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << ImportText(m);
  for (int64_t trips : {0, 3}) {
    for (int64_t len : {1, 2}) {
      std::vector<float> s(static_cast<size_t>(len));
      for (int64_t k = 0; k < len; ++k) s[k] = static_cast<float>(k) * 10;
      auto out = RunMain(*module, {I64({1}, {trips}), F32({len}, s)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      for (int64_t i = 0; i < trips; ++i) {
        std::vector<float> next = s;
        for (float v : s) next.push_back(v + 1);
        s = next;
      }
      EXPECT_EQ(Values((*out)[0]), s);
    }
  }
}

// A loop inside a loop's body: the inner body captures the outer body's
// state and the outer graph's input.
TEST(OnnxLoopE2E, NestedLoopCapturesOuterValues) {
  B m(13);
  m.Input("M", TensorProto::INT64, {});
  m.Input("x", TensorProto::FLOAT, {2});
  m.Input("d", TensorProto::FLOAT, {2});
  B inner = LoopBody(TensorProto::FLOAT, {2});
  inner.Node("Add", {"s", "d"}, {"t"});
  inner.Node("Add", {"t", "outer_s"}, {"s_out"});
  inner.Node("Identity", {"c_in"}, {"c_out"});
  inner.Output("c_out", TensorProto::BOOL);
  inner.Output("s_out");
  B outer;
  outer.Input("j", TensorProto::INT64, {});
  outer.Input("oc", TensorProto::BOOL, {});
  outer.Input("outer_s", TensorProto::FLOAT, {2});
  outer.InitializerI64("two", {}, {2});
  outer.Node("Identity", {"outer_s"}, {"z"});
  auto* in = outer.Node("Loop", {"two", "", "z"}, {"o"}, "inner");
  B::AttrGraph(in, "body", inner);
  outer.Node("Identity", {"oc"}, {"oc_out"});
  outer.Output("oc_out", TensorProto::BOOL);
  outer.Output("o");
  auto* n = m.Node("Loop", {"M", "", "x"}, {"y"}, "outer");
  B::AttrGraph(n, "body", outer);
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << ImportText(m);
  std::vector<float> x = {1, -2}, d = {0.5f, 0.25f};
  auto out = RunMain(*module, {I64Scalar(3), F32({2}, x), F32({2}, d)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> s = x;
  for (int j = 0; j < 3; ++j) {
    std::vector<float> outer_s = s, t = s;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 2; ++k) t[k] = t[k] + d[k] + outer_s[k];
    s = t;
  }
  std::vector<float> y = Values((*out)[0]);
  ASSERT_EQ(y.size(), 2u);
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(y[k], s[k], 1e-4f);
}

// Scan: a running sum over a [2, L] input scanned along axis 1 (backward or
// forward), its partial sums scanned out along axis 1 (reversed or not), and
// a second scan input scanned along axis 0.
TEST(OnnxScanE2E, AxesAndDirections) {
  for (int64_t in_dir : {0, 1}) {
    for (int64_t out_dir : {0, 1}) {
      B m(16);
      m.Input("init", TensorProto::FLOAT, {2});
      m.Input("x", TensorProto::FLOAT, {2, "L"});
      m.Input("w", TensorProto::FLOAT, {"L", 2});
      B body;
      body.Input("acc", TensorProto::FLOAT, {2});
      body.Input("col", TensorProto::FLOAT, {2});
      body.Input("row", TensorProto::FLOAT, {2});
      body.Node("Add", {"acc", "col"}, {"acc_out"});
      body.Node("Mul", {"col", "row"}, {"prod"});
      body.Output("acc_out");
      body.Output("acc_out");
      body.Output("prod");
      auto* n = m.Node("Scan", {"init", "x", "w"}, {"total", "partial", "prods"}, "sum");
      B::AttrInt(n, "num_scan_inputs", 2);
      B::AttrInts(n, "scan_input_axes", {-1, 0});
      B::AttrInts(n, "scan_input_directions", {in_dir, 0});
      B::AttrInts(n, "scan_output_axes", {1, 0});
      B::AttrInts(n, "scan_output_directions", {out_dir, 0});
      B::AttrGraph(n, "body", body);
      m.Output("total");
      m.Output("partial");
      m.Output("prods");
      auto module = CompileOnnx(m);
      ASSERT_TRUE(module.ok()) << module.status().ToString() << ImportText(m);
      for (int64_t len : {0, 1, 4}) {
        std::vector<float> x = Ramp(2 * len, -1, 1, 3), w = Ramp(2 * len, -1, 1, 5), init = {0.5f, -0.5f};
        auto out = RunMain(*module, {F32({2}, init), F32({2, len}, x), F32({len, 2}, w)});
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        // Reference: step t reads column c = t (forward) or len-1-t.
        std::vector<float> acc = init, partial(static_cast<size_t>(2 * len)), prods(static_cast<size_t>(2 * len));
        for (int64_t t = 0; t < len; ++t) {
          int64_t c = in_dir == 0 ? t : len - 1 - t;
          int64_t slot = out_dir == 0 ? t : len - 1 - t;
          for (int64_t r = 0; r < 2; ++r) {
            acc[r] += x[r * len + c];
            partial[r * len + slot] = acc[r];
            prods[t * 2 + r] = x[r * len + c] * w[t * 2 + r];
          }
        }
        ASSERT_EQ(out->size(), 3u);
        EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{2, len}));
        EXPECT_EQ((*out)[2].shape(), (std::vector<int64_t>{len, 2}));
        std::vector<float> got_total = Values((*out)[0]), got_partial = Values((*out)[1]), got_prods = Values((*out)[2]);
        for (int k = 0; k < 2; ++k) EXPECT_NEAR(got_total[k], acc[k], 1e-5f);
        ASSERT_EQ(got_partial.size(), partial.size());
        for (size_t k = 0; k < partial.size(); ++k) EXPECT_NEAR(got_partial[k], partial[k], 1e-5f) << k;
        ASSERT_EQ(got_prods.size(), prods.size());
        for (size_t k = 0; k < prods.size(); ++k) EXPECT_NEAR(got_prods[k], prods[k], 1e-5f) << k;
      }
    }
  }
}

// Scan of opset 8: states [batch, 2], scan inputs [batch, L, 2] scanned along
// axis 1 (the first backward), scan outputs [batch, L, 2] in step order.
TEST(OnnxScanE2E, Opset8BatchAxis) {
  constexpr int64_t kBatch = 3;
  B m(8);
  m.Input("init", TensorProto::FLOAT, {kBatch, 2});
  m.Input("x", TensorProto::FLOAT, {kBatch, "L", 2});
  m.Input("w", TensorProto::FLOAT, {kBatch, "L", 2});
  B body;
  body.Input("acc", TensorProto::FLOAT, {2});
  body.Input("row", TensorProto::FLOAT, {2});
  body.Input("wrow", TensorProto::FLOAT, {2});
  body.Node("Add", {"acc", "row"}, {"acc_out"});
  body.Node("Mul", {"acc_out", "wrow"}, {"prod"});
  body.Output("acc_out");
  body.Output("prod");
  auto* n = m.Node("Scan", {"", "init", "x", "w"}, {"total", "prods"}, "sum8");
  B::AttrInt(n, "num_scan_inputs", 2);
  B::AttrInts(n, "directions", {1, 0});
  B::AttrGraph(n, "body", body);
  m.Output("total");
  m.Output("prods");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << ImportText(m);
  for (int64_t len : {1, 5}) {
    std::vector<float> x = Ramp(kBatch * len * 2, -1, 1, 3), w = Ramp(kBatch * len * 2, -1, 1, 5);
    std::vector<float> init = {0.5f, -0.5f, 1, 2, -3, 0.25f};
    auto out = RunMain(*module, {F32({kBatch, 2}, init), F32({kBatch, len, 2}, x), F32({kBatch, len, 2}, w)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> total = init, prods(static_cast<size_t>(kBatch * len * 2));
    for (int64_t b = 0; b < kBatch; ++b) {
      for (int64_t t = 0; t < len; ++t) {
        const int64_t xr = len - 1 - t;  // x is scanned backward, w forward
        for (int64_t c = 0; c < 2; ++c) {
          total[b * 2 + c] += x[(b * len + xr) * 2 + c];
          prods[(b * len + t) * 2 + c] = total[b * 2 + c] * w[(b * len + t) * 2 + c];
        }
      }
    }
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{kBatch, 2}));
    EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{kBatch, len, 2}));
    std::vector<float> got_total = Values((*out)[0]), got_prods = Values((*out)[1]);
    for (size_t k = 0; k < total.size(); ++k) EXPECT_NEAR(got_total[k], total[k], 1e-5f) << k;
    ASSERT_EQ(got_prods.size(), prods.size());
    for (size_t k = 0; k < prods.size(); ++k) EXPECT_NEAR(got_prods[k], prods[k], 1e-5f) << k;
  }
}

TEST(OnnxScanE2E, RunTimeErrors) {
  // Scan inputs of different lengths.
  B m(16);
  m.Input("x", TensorProto::FLOAT, {"a"});
  m.Input("y", TensorProto::FLOAT, {"b"});
  B body;
  body.Input("p", TensorProto::FLOAT, {});
  body.Input("q", TensorProto::FLOAT, {});
  body.Node("Add", {"p", "q"}, {"r"});
  body.Output("r");
  auto* n = m.Node("Scan", {"x", "y"}, {"z"});
  B::AttrInt(n, "num_scan_inputs", 2);
  B::AttrGraph(n, "body", body);
  m.Output("z");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ok = RunMain(*module, {F32({2}, {1, 2}), F32({2}, {3, 4})});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Values((*ok)[0]), (std::vector<float>{4, 6}));
  auto bad = RunMain(*module, {F32({2}, {1, 2}), F32({3}, {3, 4, 5})});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("vm.builtin.loop: scan inputs have lengths 2 and 3 along the scanned axis"),
            std::string::npos)
      << bad.status().ToString();

  // A scan output whose shape changes between iterations.
  B g(16);
  g.Input("M", TensorProto::INT64, {});
  g.Input("x", TensorProto::FLOAT, {1});
  B lb = LoopBody(TensorProto::FLOAT, {"k"});
  lb.Node("Concat", {"s", "s"}, {"s_out"});
  B::AttrInt(lb.graph().mutable_node(0), "axis", 0);
  lb.Node("Identity", {"c_in"}, {"c_out"});
  lb.Output("c_out", TensorProto::BOOL);
  lb.Output("s_out");
  lb.Output("s_out");
  auto* l = g.Node("Loop", {"M", "", "x"}, {"y", "ys"});
  B::AttrGraph(l, "body", lb);
  g.Output("ys");
  auto grow = CompileOnnx(g);
  ASSERT_TRUE(grow.ok()) << grow.status().ToString();
  auto one = RunMain(*grow, {I64Scalar(1), F32({1}, {2})});
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(Values((*one)[0]), (std::vector<float>{2, 2}));
  auto two = RunMain(*grow, {I64Scalar(2), F32({1}, {2})});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("scan output 0 is float32[4] in iteration 1 but float32[2] in iteration 0"),
            std::string::npos)
      << two.status().ToString();
}

// Each import error of Loop and Scan.
TEST(OnnxLoopE2E, ImportErrors) {
  auto expect = [](const B& m, const std::string& text) {
    std::string err;
    EXPECT_EQ(ImportText(m, {}, &err), "");
    EXPECT_NE(err.find(text), std::string::npos) << "want: " << text << "\ngot: " << err;
  };
  auto loop = [](std::vector<std::string> inputs, const B& body, int outputs = 1, int opset = 16) {
    B m(opset);
    m.Input("M", TensorProto::INT64, {});
    m.Input("Mf", TensorProto::FLOAT, {});
    m.Input("M2", TensorProto::INT64, {2});
    m.Input("c", TensorProto::BOOL, {});
    m.Input("x", TensorProto::FLOAT, {3});
    std::vector<std::string> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back("y" + std::to_string(i));
    auto* n = m.Node("Loop", inputs, outs, "lp");
    B::AttrGraph(n, "body", body);
    for (const auto& o : outs) m.Output(o);
    return m;
  };
  B good = LoopBody();
  good.Node("Identity", {"c_in"}, {"c_out"});
  good.Output("c_out", TensorProto::BOOL);
  good.Output("s");
  expect(loop({"", "", "x"}, good), "node \"lp\" (#0) Loop (opset 16): a Loop with neither a trip count M nor a condition (it never ends)");
  expect(loop({"Mf", "", "x"}, good), "Loop (opset 16): the trip count M must be int64, got float32");
  expect(loop({"M2", "", "x"}, good), "Loop (opset 16): the trip count M must hold one element");
  expect(loop({"M"}, good), "Loop (opset 16): Loop takes M and cond (either may be empty) before its loop-carried values");
  expect(loop({"M", "c", "x", "x"}, good), "Loop (opset 16): the body has 3 inputs; the node passes 2 loop-carried values (the body takes 2 more)");
  expect(loop({"M", "c", "x"}, good, 2), "Loop (opset 16): the node has 2 outputs; the body gives 1");
  expect(loop({"M", "c", ""}, good), "Loop (opset 16): an empty loop-carried value (optional values)");
  B few = LoopBody();
  few.Node("Identity", {"c_in"}, {"c_out"});
  few.Output("c_out", TensorProto::BOOL);
  expect(loop({"M", "c", "x"}, few), "Loop (opset 16): the body has 1 outputs; it must return the condition and 1 loop-carried values");
  B rank = LoopBody();
  rank.Node("Identity", {"c_in"}, {"c_out"});
  rank.InitializerI64("ax", {1}, {0});
  rank.Node("Unsqueeze", {"s", "ax"}, {"s2"});
  rank.Output("c_out", TensorProto::BOOL);
  rank.Output("s2");
  expect(loop({"M", "c", "x"}, rank), "Loop (opset 16): loop-carried value 0 changes its rank or dtype in the body");
  B seq = LoopBody();
  seq.graph().mutable_input(2)->mutable_type()->mutable_sequence_type();
  seq.Node("Identity", {"c_in"}, {"c_out"});
  seq.Output("c_out", TensorProto::BOOL);
  seq.Output("s");
  expect(loop({"M", "c", "x"}, seq), "Loop (opset 16): body input \"s\" is a sequence, map or optional value (tensors only)");
  B seq_out = LoopBody();
  seq_out.Node("Identity", {"c_in"}, {"c_out"});
  seq_out.Output("c_out", TensorProto::BOOL);
  seq_out.Output("s");
  seq_out.graph().mutable_output(1)->mutable_type()->mutable_optional_type();
  expect(loop({"M", "c", "x"}, seq_out), "Loop (opset 16): body output \"s\" is a sequence, map or optional value (tensors only)");
  B bad_inner = LoopBody();
  bad_inner.Node("FancyOp", {"c_in"}, {"c_out"});
  bad_inner.Output("c_out", TensorProto::BOOL);
  bad_inner.Output("s");
  expect(loop({"M", "c", "x"}, bad_inner), "its subgraph \"body\" could not be imported (the problems are listed)");
  {
    B m(16);
    m.Input("M", TensorProto::INT64, {});
    m.Node("Loop", {"M", ""}, {}, "nobody");
    m.Output("M", TensorProto::INT64);
    expect(m, "node \"nobody\" (#0) Loop (opset 16): the body (a graph) is required");
  }

  auto scan = [](std::vector<std::string> inputs, const B& body, int n_in, int outputs, int opset = 16) {
    B m(opset);
    m.Input("s", TensorProto::FLOAT, {2});
    m.Input("x", TensorProto::FLOAT, {4, 2});
    m.Input("z", TensorProto::FLOAT, {});
    std::vector<std::string> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back("y" + std::to_string(i));
    auto* n = m.Node("Scan", inputs, outs, "sc");
    B::AttrInt(n, "num_scan_inputs", n_in);
    B::AttrGraph(n, "body", body);
    for (const auto& o : outs) m.Output(o);
    return m;
  };
  B sb;
  sb.Input("acc", TensorProto::FLOAT, {2});
  sb.Input("row", TensorProto::FLOAT, {2});
  sb.Node("Add", {"acc", "row"}, {"acc_out"});
  sb.Output("acc_out");
  sb.Output("acc_out");
  // Opset 8: a leading sequence_lens input, a batch axis on every value.
  {
    B m(8);
    m.Input("lens", TensorProto::INT64, {2});
    m.Input("s", TensorProto::FLOAT, {2, 2});
    m.Input("x", TensorProto::FLOAT, {2, 4, 2});
    auto* n = m.Node("Scan", {"lens", "s", "x"}, {"y0", "y1"}, "sc");
    B::AttrInt(n, "num_scan_inputs", 1);
    B::AttrGraph(n, "body", sb);
    m.Output("y0");
    m.Output("y1");
    expect(m, "node \"sc\" (#0) Scan (opset 8): sequence_lens (input 0): sequences of different lengths in one batch");
  }
  {
    B m(8);
    m.Input("s", TensorProto::FLOAT, {"n", 2});
    m.Input("x", TensorProto::FLOAT, {"n", 4, 2});
    auto* n = m.Node("Scan", {"", "s", "x"}, {"y0", "y1"}, "sc");
    B::AttrInt(n, "num_scan_inputs", 1);
    B::AttrGraph(n, "body", sb);
    m.Output("y0");
    m.Output("y1");
    expect(m, "Scan (opset 8): state variable 0: a batch dimension not known at import time (the batch is unrolled)");
    B::AttrInts(m.graph().mutable_node(0), "directions", {3});
    expect(m, "Scan (opset 8): directions must be 0 or 1");
  }
  {
    B m(8);
    m.Input("s", TensorProto::FLOAT, {2, 2});
    m.Input("x", TensorProto::FLOAT, {3, 4, 2});
    auto* n = m.Node("Scan", {"", "s", "x"}, {"y0", "y1"}, "sc");
    B::AttrInt(n, "num_scan_inputs", 1);
    B::AttrGraph(n, "body", sb);
    m.Output("y0");
    m.Output("y1");
    expect(m, "Scan (opset 8): scan input 0 has batch 3, an earlier input 2");
  }
  expect(scan({"s", "x"}, sb, 3, 2), "Scan (opset 16): num_scan_inputs must be between 1 and the number of inputs (2)");
  expect(scan({"s", "x", "x"}, sb, 1, 2), "Scan (opset 16): the body has 2 inputs; the node passes 3");
  expect(scan({"s", "x"}, sb, 1, 3), "Scan (opset 16): the node has 3 outputs; the body gives 2");
  expect(scan({"", "x"}, sb, 1, 2), "Scan (opset 16): an empty state variable");
  expect(scan({"s", ""}, sb, 1, 2), "Scan (opset 16): scan input 0 is empty");
  expect(scan({"s", "z"}, sb, 1, 2), "Scan (opset 16): scan input 0 is a scalar");
  B sb0;
  sb0.Input("acc", TensorProto::FLOAT, {2});
  sb0.Input("row", TensorProto::FLOAT, {2});
  expect(scan({"s", "x"}, sb0, 1, 0), "Scan (opset 16): the body has 0 outputs, fewer than the 1 state variables");
  auto with_attr = [&](const char* name, std::vector<int64_t> v) {
    B m = scan({"s", "x"}, sb, 1, 2);
    B::AttrInts(m.graph().mutable_node(0), name, v);
    return m;
  };
  expect(with_attr("scan_input_axes", {0, 1}), "Scan (opset 16): scan_input_axes has 2 entries for 1 values");
  expect(with_attr("scan_input_axes", {2}), "scan_input_axes");
  expect(with_attr("scan_input_directions", {2}), "Scan (opset 16): scan_input_directions must be 0 or 1");
  expect(with_attr("scan_output_directions", {-1}), "Scan (opset 16): scan_output_directions must be 0 or 1");
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
