// ONNX LSTM, GRU and RNN nodes end to end (compiler/onnx/ops_rnn.cc) against
// the ONNX equations (tests/ops/rnn_reference.h): optional inputs present and
// missing, symbolic sequence length and batch, activations with alpha/beta,
// layout 1, and nodes that use only some of their outputs. Also checks the
// imported form: one R.matmul for the input projections of all steps and one
// recurrence call per node.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "compiler/text/text.h"
#include "tests/onnx/onnx_e2e_util.h"
#include "tests/ops/rnn_reference.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;
using rnnref::Spec;

std::vector<double> D(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
std::vector<float> F(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

Tensor I32(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  Tensor t = Tensor::Empty(shape, DType::Int32()).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
  return t;
}

void AttrStrings(::onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

// [a0, a1, rest] -> [a1, a0, rest].
std::vector<double> Swap01(const std::vector<double>& v, int64_t a0, int64_t a1) {
  int64_t rest = static_cast<int64_t>(v.size()) / (a0 * a1);
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a0; ++i)
    for (int64_t j = 0; j < a1; ++j)
      for (int64_t k = 0; k < rest; ++k) out[(j * a0 + i) * rest + k] = v[(i * a1 + j) * rest + k];
  return out;
}

// Weights of `s` (fixed per test), inputs for sizes t x b.
rnnref::Data MakeWeights(const Spec& s) {
  int64_t d = rnnref::Dirs(s), gh = rnnref::Gates(s) * s.h;
  rnnref::Data v;
  v.w = D(Ramp(d * gh * s.in, -0.6f, 0.6f, 11));
  v.r = D(Ramp(d * gh * s.h, -0.6f, 0.6f, 12));
  v.bias = D(Ramp(d * 2 * gh, -0.3f, 0.3f, 13));
  v.p = D(Ramp(d * 3 * s.h, -0.5f, 0.5f, 14));
  return v;
}

void AddStates(const Spec& s, rnnref::Data* v, uint64_t seed) {
  int64_t d = rnnref::Dirs(s);
  v->x = D(Ramp(s.t * s.b * s.in, -1, 1, seed));
  v->h0 = D(Ramp(d * s.b * s.h, -1, 1, seed + 1));
  v->c0 = D(Ramp(d * s.b * s.h, -1, 1, seed + 2));
  v->lens.clear();
  for (int64_t i = 0; i < s.b; ++i) v->lens.push_back(s.lens ? std::max<int64_t>(1, s.t - i) : s.t);
}

void ExpectClose(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  std::vector<float> g = Values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " element " << i;
}

// How many times `needle` occurs in the imported module's text.
int Count(const B& m, const std::string& needle) {
  std::string bytes = m.Serialize();
  auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return -1;
  std::string text = kiln::text::PrintModule(*mod);
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(OnnxRnnE2E, BidirectionalLstmWithEveryInputAtTwoShapes) {
  Spec s{"lstm", "bidirectional"};
  s.lens = true;
  s.clip = 2.0;
  s.input_forget = true;
  int64_t nd = 2, H = s.h, gh = 4 * H;
  rnnref::Data v = MakeWeights(s);
  B m(14);
  m.Input("x", TensorProto::FLOAT, {"seq", "batch", s.in});
  m.Input("lens", TensorProto::INT32, {"batch"});
  m.Input("h0", TensorProto::FLOAT, {nd, "batch", H});
  m.Input("c0", TensorProto::FLOAT, {nd, "batch", H});
  m.Initializer("w", {nd, gh, s.in}, F(v.w));
  m.Initializer("r", {nd, gh, H}, F(v.r));
  m.Initializer("b", {nd, 2 * gh}, F(v.bias));
  m.Initializer("p", {nd, 3 * H}, F(v.p));
  auto* n = m.Node("LSTM", {"x", "w", "r", "b", "lens", "h0", "c0", "p"}, {"y", "y_h", "y_c"});
  B::AttrString(n, "direction", "bidirectional");
  B::AttrInt(n, "hidden_size", H);
  B::AttrFloat(n, "clip", 2.0f);
  B::AttrInt(n, "input_forget", 1);
  m.Output("y");
  m.Output("y_h");
  m.Output("y_c");
  EXPECT_EQ(Count(m, "R.matmul("), 1);
  EXPECT_EQ(Count(m, "R.nn.lstm("), 1);
  auto mod = CompileOnnx(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  for (auto tb : {std::pair<int64_t, int64_t>{5, 3}, {2, 1}}) {
    s.t = tb.first;
    s.b = tb.second;
    AddStates(s, &v, 20 + s.t);
    std::vector<double> y, yh, yc;
    rnnref::Reference(s, v, &y, &yh, &yc);
    auto out = RunMain(*mod, {F32({s.t, s.b, s.in}, F(v.x)), I32({s.b}, v.lens), F32({nd, s.b, H}, F(v.h0)),
                              F32({nd, s.b, H}, F(v.c0))});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 3u);
    EXPECT_EQ(out->at(0).shape(), (std::vector<int64_t>{s.t, nd, s.b, H}));
    ExpectClose(out->at(0), y, "Y");
    ExpectClose(out->at(1), yh, "Y_h");
    ExpectClose(out->at(2), yc, "Y_c");
  }
}

// The cell stores c and then reads it back for o's peephole and h = o *
// tanh(c) (op_rnn.cc): a symbolic batch at every size the kernel has a
// variant for (1, 2, 3 rows exactly, then tiles of 4 with a partial last
// one), 32 hidden units (the cell loop as explicit 16-lane vectors), several
// steps so that each reads the c the last one stored, peepholes, and with
// sequence lengths (a row past its end reads back its old c and keeps h).
TEST(OnnxRnnE2E, LstmCellReadsBackItsCellStateAtEveryBatchSize) {
  for (bool lens : {false, true}) {
    Spec s{"lstm", "forward"};
    s.h = 32;
    s.in = 7;
    s.t = 3;
    s.lens = lens;
    int64_t H = s.h, gh = 4 * H;
    rnnref::Data v = MakeWeights(s);
    B m(14);
    m.Input("x", TensorProto::FLOAT, {"seq", "batch", s.in});
    if (lens) m.Input("lens", TensorProto::INT32, {"batch"});
    m.Input("h0", TensorProto::FLOAT, {1, "batch", H});
    m.Input("c0", TensorProto::FLOAT, {1, "batch", H});
    m.Initializer("w", {1, gh, s.in}, F(v.w));
    m.Initializer("r", {1, gh, H}, F(v.r));
    m.Initializer("b", {1, 2 * gh}, F(v.bias));
    m.Initializer("p", {1, 3 * H}, F(v.p));
    auto* n = m.Node("LSTM", {"x", "w", "r", "b", lens ? "lens" : "", "h0", "c0", "p"}, {"y", "y_h", "y_c"});
    B::AttrInt(n, "hidden_size", H);
    m.Output("y");
    m.Output("y_h");
    m.Output("y_c");
    auto mod = CompileOnnx(m);
    ASSERT_TRUE(mod.ok()) << mod.status().ToString();
    for (int64_t b : {1, 2, 3, 4, 5, 9}) {
      s.b = b;
      AddStates(s, &v, 40 + static_cast<uint64_t>(b));
      std::vector<double> y, yh, yc;
      rnnref::Reference(s, v, &y, &yh, &yc);
      std::vector<Tensor> args = {F32({s.t, b, s.in}, F(v.x))};
      if (lens) args.push_back(I32({b}, v.lens));
      args.push_back(F32({1, b, H}, F(v.h0)));
      args.push_back(F32({1, b, H}, F(v.c0)));
      auto out = RunMain(*mod, args);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ASSERT_EQ(out->size(), 3u);
      std::string at = "batch " + std::to_string(b) + (lens ? " with lens" : "");
      ExpectClose(out->at(0), y, "Y, " + at);
      ExpectClose(out->at(1), yh, "Y_h, " + at);
      ExpectClose(out->at(2), yc, "Y_c, " + at);
    }
  }
}

TEST(OnnxRnnE2E, GruLayout1WithActivationParametersAndOnlyYh) {
  for (int64_t lbr : {0, 1}) {
    Spec s{"gru", "reverse"};
    s.layout = 1;
    s.lbr = lbr != 0;
    // HardSigmoid takes alpha and beta, LeakyRelu alpha: the lists feed them in order.
    s.acts = {{"HardSigmoid", 0.3, 0.45, 2}, {"LeakyRelu", 0.2, 0, 1}};
    int64_t H = s.h, gh = 3 * H;
    rnnref::Data v = MakeWeights(s);
    B m(14);
    m.Input("x", TensorProto::FLOAT, {s.b, s.t, s.in});
    m.Initializer("w", {1, gh, s.in}, F(v.w));
    m.Initializer("r", {1, gh, H}, F(v.r));
    m.Initializer("b", {1, 2 * gh}, F(v.bias));
    auto* n = m.Node("GRU", {"x", "w", "r", "b"}, {"", "y_h"});
    B::AttrString(n, "direction", "reverse");
    B::AttrInt(n, "layout", 1);
    B::AttrInt(n, "linear_before_reset", lbr);
    AttrStrings(n, "activations", {"HardSigmoid", "LeakyRelu"});
    B::AttrFloats(n, "activation_alpha", {0.3f, 0.2f});
    B::AttrFloats(n, "activation_beta", {0.45f});
    m.Output("y_h");
    auto mod = CompileOnnx(m);
    ASSERT_TRUE(mod.ok()) << mod.status().ToString();
    AddStates(s, &v, 40);
    v.h0.assign(v.h0.size(), 0.0);
    std::vector<double> y, yh, yc;
    // The reference reads float32 alphas as the model holds them.
    s.acts = {{"HardSigmoid", 0.3f, 0.45f, 2}, {"LeakyRelu", 0.2f, 0, 1}};
    rnnref::Reference(s, v, &y, &yh, &yc);
    auto out = RunMain(*mod, {F32({s.b, s.t, s.in}, F(Swap01(v.x, s.t, s.b)))});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ(out->at(0).shape(), (std::vector<int64_t>{s.b, 1, H}));
    ExpectClose(out->at(0), Swap01(yh, 1, s.b), "Y_h");
  }
}

TEST(OnnxRnnE2E, RnnWithoutBiasOrStatesGivesY) {
  Spec s{"rnn", "forward"};
  s.lens = true;
  int64_t H = s.h;
  rnnref::Data v = MakeWeights(s);
  v.bias.assign(v.bias.size(), 0.0);
  B m(7);
  m.Input("x", TensorProto::FLOAT, {s.t, "batch", s.in});
  m.Input("lens", TensorProto::INT32, {"batch"});
  m.Initializer("w", {1, H, s.in}, F(v.w));
  m.Initializer("r", {1, H, H}, F(v.r));
  m.Node("RNN", {"x", "w", "r", "", "lens"}, {"y"});
  m.Output("y");
  EXPECT_EQ(Count(m, "R.matmul("), 1);
  auto mod = CompileOnnx(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  AddStates(s, &v, 60);
  v.h0.assign(v.h0.size(), 0.0);
  std::vector<double> y, yh, yc;
  rnnref::Reference(s, v, &y, &yh, &yc);
  auto out = RunMain(*mod, {F32({s.t, s.b, s.in}, F(v.x)), I32({s.b}, v.lens)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  ExpectClose(out->at(0), y, "Y");
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
