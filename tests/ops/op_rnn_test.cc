// Recurrent layers (compiler/relax/op_rnn.cc): R.nn.lstm, R.nn.gru, R.nn.rnn
// against the ONNX LSTM/GRU/RNN equations (rnn_reference.h, from X, W, R, B
// as ONNX holds them; the test computes the operators' input projection and
// transposed R on the host).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/thread_pool.h"
#include "tests/ops/op_elem_test_util.h"
#include "tests/ops/rnn_reference.h"

namespace kiln {
namespace optest {
namespace {

using rnnref::Act;
using rnnref::Data;
using rnnref::Spec;
using rnnref::Acts;
using rnnref::Dirs;
using rnnref::Gates;
using rnnref::Reference;

std::string ActText(const std::vector<Act>& acts) {
  std::string s;
  for (const Act& a : acts) {
    s += (s.empty() ? "" : ",") + a.name;
    if (a.params >= 1) s += "(" + std::to_string(a.alpha);
    if (a.params >= 2) s += ", " + std::to_string(a.beta);
    if (a.params >= 1) s += ")";
  }
  return s;
}

Data MakeData(const Spec& s, uint64_t seed) {
  int64_t d = Dirs(s), gh = Gates(s) * s.h, b0 = s.h0_batch1 ? 1 : s.b;
  Data v;
  v.x = ToDoubles(RandomTensor({s.t, s.b, s.in}, DType::Float32(), seed));
  v.w = ToDoubles(RandomTensor({d, gh, s.in}, DType::Float32(), seed + 1, -0.6, 0.6));
  v.r = ToDoubles(RandomTensor({d, gh, s.h}, DType::Float32(), seed + 2, -0.6, 0.6));
  v.bias = ToDoubles(RandomTensor({d, 2 * gh}, DType::Float32(), seed + 3, -0.3, 0.3));
  v.h0 = ToDoubles(RandomTensor({d, b0, s.h}, DType::Float32(), seed + 4));
  v.c0 = ToDoubles(RandomTensor({d, b0, s.h}, DType::Float32(), seed + 5));
  v.p = ToDoubles(RandomTensor({d, 3 * s.h}, DType::Float32(), seed + 6, -0.5, 0.5));
  for (int64_t i = 0; i < s.b; ++i) v.lens.push_back(s.lens ? std::max<int64_t>(1, s.t - 1 - (i * 2) % s.t) : s.t);
  if (s.lens) v.lens[0] = s.t;
  return v;
}

// [a0, a1, rest...] -> [a1, a0, rest...] for a row-major tensor (layout 1).
std::vector<double> SwapFirstTwo(const std::vector<double>& v, int64_t a0, int64_t a1) {
  int64_t rest = static_cast<int64_t>(v.size()) / (a0 * a1);
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a0; ++i)
    for (int64_t j = 0; j < a1; ++j)
      for (int64_t k = 0; k < rest; ++k) out[(j * a0 + i) * rest + k] = v[(i * a1 + j) * rest + k];
  return out;
}

std::string Dim(const Spec& s, int64_t v, const char* name) { return s.symbolic ? std::string("\"") + name + "\"" : std::to_string(v); }

std::string Type(const std::vector<std::string>& dims, const std::string& dtype = "float32") {
  std::string s;
  for (const auto& d : dims) s += (s.empty() ? "" : ", ") + d;
  if (dims.size() == 1) s += ",";
  return "R.Tensor((" + s + "), \"" + dtype + "\")";
}

// The op's inputs for `s` with `v`, and the parameter list.
std::vector<Tensor> OpInputs(const Spec& s, const Data& v, std::vector<std::string>* params, std::string* call) {
  int64_t nd = Dirs(s), g = Gates(s), H = s.h, gh = g * H, I = s.in, B = s.b, T = s.t, b0 = s.h0_batch1 ? 1 : B;
  bool fold_rb = s.cell != "gru";  // GRU keeps Rb for the kernel
  std::vector<double> xp(static_cast<size_t>(T * B * nd * gh));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < nd; ++d)
        for (int64_t n = 0; n < gh; ++n) {
          double a = v.bias[d * 2 * gh + n] + (fold_rb ? v.bias[d * 2 * gh + gh + n] : 0);
          for (int64_t i = 0; i < I; ++i) a += v.x[(t * B + b) * I + i] * v.w[(d * gh + n) * I + i];
          xp[((t * B + b) * nd + d) * gh + n] = a;
        }
  std::vector<double> rt(static_cast<size_t>(nd * H * gh)), rb(static_cast<size_t>(nd * gh));
  for (int64_t d = 0; d < nd; ++d)
    for (int64_t n = 0; n < gh; ++n) {
      rb[d * gh + n] = v.bias[d * 2 * gh + gh + n];
      for (int64_t k = 0; k < H; ++k) rt[(d * H + k) * gh + n] = v.r[(d * gh + n) * H + k];
    }
  DType dt = s.f64 ? DType::Float64() : DType::Float32();
  std::string dts = s.f64 ? "float64" : "float32";
  std::vector<double> h0 = v.h0, c0 = v.c0;
  Shape xs = {T, B, nd * gh}, ss = {nd, b0, H};
  std::string tt = Dim(s, T, "seq"), bb = Dim(s, B, "batch");
  std::vector<std::string> xdims = {tt, bb, std::to_string(nd * gh)};
  std::vector<std::string> sdims = {std::to_string(nd), s.h0_batch1 ? "1" : bb, std::to_string(H)};
  if (s.layout == 1) {
    xp = SwapFirstTwo(xp, T, B);
    h0 = SwapFirstTwo(h0, nd, b0);
    c0 = SwapFirstTwo(c0, nd, b0);
    std::swap(xs[0], xs[1]);
    std::swap(ss[0], ss[1]);
    std::swap(xdims[0], xdims[1]);
    std::swap(sdims[0], sdims[1]);
  }
  std::vector<Tensor> in = {MakeTensor(xs, dt, xp), MakeTensor({nd, H, gh}, dt, rt)};
  *params = {"x_proj: " + Type(xdims, dts), "rt: " + Type({std::to_string(nd), std::to_string(H), std::to_string(gh)}, dts)};
  std::string args = "x_proj, rt";
  if (s.cell == "gru") {
    in.push_back(MakeTensor({nd, gh}, dt, rb));
    params->push_back("rb: " + Type({std::to_string(nd), std::to_string(gh)}, dts));
    args += ", rb";
  }
  in.push_back(MakeTensor(ss, dt, h0));
  params->push_back("h0: " + Type(sdims, dts));
  args += ", h0";
  if (s.cell == "lstm") {
    in.push_back(MakeTensor(ss, dt, c0));
    in.push_back(MakeTensor({nd, 3 * H}, dt, v.p));
    params->push_back("c0: " + Type(sdims, dts));
    params->push_back("p: " + Type({std::to_string(nd), std::to_string(3 * H)}, dts));
    args += ", c0, p";
  }
  if (s.lens) {
    std::vector<double> l(v.lens.begin(), v.lens.end());
    in.push_back(MakeTensor({B}, DType::Int32(), l));
    params->push_back("seq_lens: " + Type({bb}, "int32"));
    args += ", seq_lens";
  }
  std::string attrs;
  if (s.direction != "forward") attrs += ", direction=\"" + s.direction + "\"";
  if (s.layout != 0) attrs += ", layout=1";
  if (!s.acts.empty()) attrs += ", activations=\"" + ActText(s.acts) + "\"";
  if (s.clip > 0) attrs += ", clip=" + std::to_string(s.clip);
  if (s.input_forget) attrs += ", input_forget=True";
  if (s.lbr) attrs += ", linear_before_reset=True";
  *call = "R.nn." + s.cell + "(" + args + attrs + ")";
  return in;
}

// Checks one run's outputs `out` against the reference for `s` (its t and b
// the run's sizes) on `data`.
void ExpectReference(const Spec& s, const Data& data, const std::vector<Tensor>& out) {
  int64_t nd = Dirs(s), T = s.t, B = s.b, H = s.h;
  std::vector<double> y, yh, yc;
  Reference(s, data, &y, &yh, &yc);
  Shape ys = {T, nd, B, H}, hs = {nd, B, H};
  if (s.layout == 1) {
    // [T, D, B, H] -> [B, T, D, H]: move B to the front.
    std::vector<double> yl(y.size());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < nd; ++d)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j) yl[((b * T + t) * nd + d) * H + j] = y[((t * nd + d) * B + b) * H + j];
    y = yl;
    yh = SwapFirstTwo(yh, nd, B);
    yc = SwapFirstTwo(yc, nd, B);
    ys = {B, T, nd, H};
    hs = {B, nd, H};
  }
  ASSERT_EQ(out.size(), s.cell == "lstm" ? 3u : 2u);
  EXPECT_EQ(out[0].dtype(), s.f64 ? DType::Float64() : DType::Float32());
  EXPECT_TRUE(AllClose(out[0], y, ys, 1e-4, 1e-4)) << "Y at T=" << T << " B=" << B;
  EXPECT_TRUE(AllClose(out[1], yh, hs, 1e-4, 1e-4)) << "Y_h at T=" << T << " B=" << B;
  if (s.cell == "lstm") {
    EXPECT_TRUE(AllClose(out[2], yc, hs, 1e-4, 1e-4)) << "Y_c at T=" << T << " B=" << B;
  }
}

// Compiles once and checks every output at each of `sizes` ({T, B} pairs;
// one pair unless the spec is symbolic).
void Check(Spec s, const std::vector<std::pair<int64_t, int64_t>>& sizes = {}) {
  std::vector<std::pair<int64_t, int64_t>> tb = sizes.empty() ? std::vector<std::pair<int64_t, int64_t>>{{s.t, s.b}} : sizes;
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Data> data;
  std::vector<std::string> params;
  std::string call;
  for (size_t i = 0; i < tb.size(); ++i) {
    s.t = tb[i].first;
    s.b = tb[i].second;
    data.push_back(MakeData(s, 100 + 10 * i));
    inputs.push_back(OpInputs(s, data.back(), &params, &call));
  }
  SCOPED_TRACE(call);
  auto r = RunEach(OneOpModule(params, call), inputs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t i = 0; i < tb.size(); ++i) {
    s.t = tb[i].first;
    s.b = tb[i].second;
    ExpectReference(s, data[i], r->at(i));
  }
}

TEST(OpRnn, LstmDefaults) {
  Check({"lstm"});
  Spec s{"lstm"};
  s.h = 8;  // a multiple of the R·h loop's unroll factor
  Check(s);
}

TEST(OpRnn, LstmEveryOption) {
  Spec s{"lstm", "bidirectional"};
  s.lens = true;
  s.clip = 0.8;
  s.t = 5;
  s.h = 7;
  Check(s);
  s.layout = 1;
  s.input_forget = true;
  s.direction = "reverse";
  s.h0_batch1 = true;
  Check(s);
}

TEST(OpRnn, LstmActivations) {
  Spec s{"lstm", "bidirectional"};
  s.acts = {{"HardSigmoid", 0.3, 0.4, 2}, {"Affine", 0.7, 0.1, 2}, {"LeakyRelu", 0.2, 0, 1},
            {"Sigmoid"}, {"ScaledTanh", 0.9, 1.3, 2}, {"Elu", 0.6, 0, 1}};
  Check(s);
  s.acts = {{"Sigmoid"}, {"Softsign"}, {"Softplus"}, {"HardSigmoid", 0.2, 0.5, 0}, {"ThresholdedRelu", 0.1, 0, 1},
            {"Relu"}};
  s.direction = "bidirectional";
  Check(s);
}

TEST(OpRnn, Gru) {
  for (bool lbr : {false, true}) {
    Spec s{"gru"};
    s.lbr = lbr;
    Check(s);
    s.h = 8;
    Check(s);
    s.direction = "bidirectional";
    s.lens = true;
    s.clip = 1.5;
    s.layout = 1;
    s.acts = {{"Sigmoid"}, {"Softsign"}};  // once for both directions
    Check(s);
  }
}

TEST(OpRnn, Rnn) {
  Spec s{"rnn", "reverse"};
  s.lens = true;
  Check(s);
  s.direction = "bidirectional";
  s.acts = {{"Relu"}, {"LeakyRelu", 0.01, 0, 0}};
  s.layout = 1;
  Check(s);
}

TEST(OpRnn, Float64) {
  Spec s{"lstm", "bidirectional"};
  s.f64 = true;
  s.lens = true;
  Check(s);
  s.cell = "gru";
  Check(s);
}

TEST(OpRnn, SymbolicStepsAndBatch) {
  Spec s{"lstm", "bidirectional"};
  s.symbolic = true;
  s.lens = true;
  Check(s, {{3, 2}, {7, 1}, {1, 4}});
  Spec g{"gru", "reverse"};
  g.symbolic = true;
  g.layout = 1;
  Check(g, {{2, 3}, {6, 2}, {4, 1}});
  std::vector<std::string> params = {"x_proj: " + Type({"\"seq\"", "\"batch\"", "32"}), "rt: " + Type({"1", "8", "32"}),
                                     "h0: " + Type({"1", "1", "8"}), "c0: " + Type({"1", "\"batch\"", "8"}),
                                     "p: " + Type({"1", "24"})};
  EXPECT_EQ(InferredType(params, "R.nn.lstm(x_proj, rt, h0, c0, p)"),
            "R.Tuple(R.Tensor((seq, 1, batch, 8), dtype=\"float32\"), R.Tensor((1, batch, 8), dtype=\"float32\"), "
            "R.Tensor((1, batch, 8), dtype=\"float32\"))");
}

// The products run over tiles of 4 batch entries and register blocks of
// gate columns: a last tile that is partial (static 6, symbolic 9), column
// blocks whose last one overlaps its neighbour (LSTM H=20: 80 columns in
// blocks of 32; GRU's r/z product 40 and candidate 20), one-entry tiles
// with blocks of 128 (LSTM H=40, B=1: 160 columns), and rows that stop at
// their sequence's end inside a tile.
TEST(OpRnn, BatchTilesAndColumnBlocks) {
  for (const char* cell : {"lstm", "gru", "rnn"}) {
    Spec s{cell, "bidirectional"};
    s.b = 6;
    s.h = 20;
    s.lens = true;
    Check(s);
    s.lbr = s.cell == "gru";
    s.direction = "forward";
    s.b = 1;
    s.h = 40;
    Check(s);
  }
  Spec g{"gru", "bidirectional"};
  g.symbolic = true;
  g.lens = true;
  g.h = 20;
  Check(g, {{3, 9}, {2, 5}, {4, 8}});
  // A symbolic batch of 1, 2 or 3 runs one tile of exactly its rows (a
  // run-time test per size), with their own column blocks.
  for (const char* cell : {"lstm", "gru"}) {
    Spec t{cell, "bidirectional"};
    t.symbolic = true;
    t.lens = true;
    t.h = 20;
    Check(t, {{3, 1}, {4, 2}, {2, 3}, {3, 4}});
  }
}

// The directions of a bidirectional layer are independent recurrences, the
// kernel's outer loop and a parallel one (one direction a thread at 2
// threads). One compiled module run at 1 and at 2 threads, with sequence
// lengths that stop rows early (so the reverse direction starts late): both
// runs match the reference and give the same bits (a direction's arithmetic
// does not depend on the thread that runs it), and at 2 threads the kernel
// launches on the pool (its other loops, the read-outs of Y and Y_h, are too
// small to: the launch is the directions').
TEST(OpRnn, BidirectionalWithLengthsAtOneAndTwoThreads) {
  for (const char* cell : {"lstm", "gru", "rnn"}) {
    for (bool symbolic : {false, true}) {
      Spec s{cell, "bidirectional"};
      s.lens = true;
      s.lbr = s.cell == "gru" && symbolic;
      s.symbolic = symbolic;
      s.t = 48;  // R·h of one direction: 48 x 40 x 40 = 76800 multiply-adds (RNN) or more
      s.b = 3;
      s.h = 40;
      Data data = MakeData(s, 500);
      // A plain tanh RNN with R in ±0.6 at H=40 is chaotic over 48 steps
      // (float32 rounding grows past the tolerance); R in ±0.15 contracts.
      if (s.cell == "rnn") {
        for (double& v : data.r) v *= 0.25;
      }
      std::vector<std::string> params;
      std::string call;
      std::vector<Tensor> in = OpInputs(s, data, &params, &call);
      SCOPED_TRACE(call + (symbolic ? " (symbolic T, B)" : ""));
      auto mod = e2e::CompileAndLoad(OneOpModule(params, call), "op.relax");
      ASSERT_TRUE(mod.ok()) << mod.status().ToString();
      std::vector<std::vector<Tensor>> outs;
      for (int threads : {1, 2}) {
        vm::ContextOptions options;
        options.num_threads = threads;
        auto ctx = (*mod)->CreateContext(options);
        ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
        ThreadPool* pool = ThreadPool::Shared(threads);
        uint64_t launches = pool->num_parallel_launches();
        std::vector<Any> args(in.begin(), in.end());
        Any result;
        Status st = (*ctx)->Invoke("main", Span<const Any>(args.data(), args.size()), &result);
        ASSERT_TRUE(st.ok()) << st.ToString();
        if (threads == 2) {
          EXPECT_GE(pool->num_parallel_launches() - launches, 1u) << "the directions ran on one thread";
        }
        std::vector<Tensor> out;
        for (const Any& f : result.tuple_fields()) {
          auto t = f.AsTensor();
          ASSERT_TRUE(t.ok());
          out.push_back(*t);
        }
        SCOPED_TRACE("threads=" + std::to_string(threads));
        ExpectReference(s, data, out);
        outs.push_back(out);
      }
      ASSERT_EQ(outs[0].size(), outs[1].size());
      for (size_t i = 0; i < outs[0].size(); ++i) {
        ASSERT_EQ(outs[0][i].NumBytes(), outs[1][i].NumBytes());
        EXPECT_EQ(std::memcmp(outs[0][i].raw_data(), outs[1][i].raw_data(), outs[0][i].NumBytes()), 0) << "output " << i;
      }
    }
  }
}

// The register blocks are laid out at compile time: a symbolic hidden size
// (possible in text IR, never from ONNX) is refused at legalization.
TEST(OpRnn, SymbolicHiddenSizeIsRefused) {
  std::vector<std::string> params = {"x: " + Type({"4", "2", "\"h\""}), "rt: " + Type({"1", "\"h\"", "\"h\""}),
                                     "h0: " + Type({"1", "2", "\"h\""})};
  Result<std::vector<Tensor>> r = RunMain(OneOpModule(params, "R.nn.rnn(x, rt, h0)"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("R.nn.rnn: legalization needs a static hidden size, got h"), std::string::npos)
      << r.status().message();
}

TEST(OpRnn, PrintParseRoundTrip) {
  std::vector<std::string> params = {"x_proj: " + Type({"4", "2", "36"}), "rt: " + Type({"2", "6", "18"}),
                                     "rb: " + Type({"2", "18"}), "h0: " + Type({"2", "2", "6"}),
                                     "l: " + Type({"2"}, "int32")};
  std::string src = OneOpModule(params,
                                "R.nn.gru(x_proj, rt, rb, h0, l, direction=\"bidirectional\", "
                                "activations=\"HardSigmoid(0.25, 0.5),Tanh\", clip=2.5, linear_before_reset=True)");
  auto m = text::ParseModule(src, "t.relax");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::string printed = text::PrintModule(*m);
  EXPECT_NE(printed.find("activations=\"HardSigmoid(0.25, 0.5),Tanh\""), std::string::npos) << printed;
  auto again = text::ParseModule(printed, "t2.relax");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(text::PrintModule(*again), printed);
}

TEST(OpRnn, Diagnostics) {
  auto inv = StatusCode::kInvalidArgument;
  std::vector<std::string> p = {"x: " + Type({"4", "2", "24"}), "rt: " + Type({"1", "6", "24"}), "h: " + Type({"1", "2", "6"}),
                                "c: " + Type({"1", "2", "6"}), "p: " + Type({"1", "18"}), "l: " + Type({"2"}, "int32"),
                                "lf: " + Type({"2"}, "float32"), "x2: " + Type({"4", "2", "48"}),
                                "r6: " + Type({"1", "6", "6"}), "x6: " + Type({"4", "2", "6"}), "h3: " + Type({"1", "3", "6"}),
                                "xi: " + Type({"4", "2", "24"}, "int32"), "p2: " + Type({"1", "12"}), "r2: " + Type({"2", "6", "24"}),
                                "h5: " + Type({"1", "2", "5"}), "xg: " + Type({"4", "2", "18"}), "rg: " + Type({"1", "6", "18"}),
                                "rbg: " + Type({"2", "18"}), "l3: " + Type({"3"}, "int32"), "s: R.Shape([2])"};
  ExpectErrors({
      {p, "R.nn.lstm(x, rt, h, c)", inv, "R.nn.lstm: takes (x_proj, r, h0, c0, p[, seq_lens]), got 4 arguments"},
      {p, "R.nn.gru(x, rt)", inv, "R.nn.gru: takes (x_proj, r, rb, h0[, seq_lens]), got 2 arguments"},
      {p, "R.nn.rnn(x6, r6, h, l, l)", inv, "R.nn.rnn: takes (x_proj, r, h0[, seq_lens]), got 5 arguments"},
      {p, "R.nn.lstm(x, rt, h, c, p, direction=\"up\")", inv,
       "R.nn.lstm: direction must be \"forward\", \"reverse\" or \"bidirectional\", got \"up\""},
      {p, "R.nn.lstm(x, rt, h, c, p, layout=2)", inv, "R.nn.lstm: layout must be 0 or 1, got 2"},
      {p, "R.nn.lstm(x, rt, h, c, p, activations=\"Sigmoid,Tanh,Swish\")", inv,
       "R.nn.lstm: unknown activation \"Swish\" (expected Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
       "ScaledTanh, HardSigmoid, Elu, Softsign or Softplus)"},
      {p, "R.nn.lstm(x, rt, h, c, p, activations=\"Sigmoid,Tanh\")", inv,
       "R.nn.lstm: activations: expected 3 functions, got 2 (\"Sigmoid,Tanh\")"},
      {p, "R.nn.lstm(x2, r2, h, c, p2, direction=\"bidirectional\", activations=\"Sigmoid,Tanh\")", inv,
       "R.nn.lstm: activations: expected 3 or 6 functions, got 2 (\"Sigmoid,Tanh\")"},
      {p, "R.nn.rnn(x6, r6, h, activations=\"Relu(1)\")", inv,
       "R.nn.rnn: activation \"Relu(1)\": relu takes 0 parameter(s), got 1"},
      {p, "R.nn.rnn(x6, r6, h, activations=\"Elu(one)\")", inv, "R.nn.rnn: activation \"Elu(one)\": \"one\" is not a number"},
      {p, "R.nn.rnn(x6, r6, h, activations=\"Elu(1\")", inv, "R.nn.rnn: activation \"Elu(1\": expected Name(alpha[, beta])"},
      {p, "R.nn.rnn(x6, r6, h, clip=-1.0)", inv, "R.nn.rnn: clip must be positive, got -1.000000"},
      {p, "R.nn.rnn(x6, r6, h, input_forget=True)", inv, "R.nn.rnn: input_forget applies to R.nn.lstm only"},
      {p, "R.nn.lstm(x, rt, h, c, p, linear_before_reset=True)", inv,
       "R.nn.lstm: linear_before_reset applies to R.nn.gru only"},
      {p, "R.nn.rnn(xi, r6, h)", inv, "R.nn.rnn: x_proj must be a float tensor, got int32"},
      {p, "R.nn.rnn(x6, r6, l)", inv, "R.nn.rnn: argument 2 has dtype int32, x_proj float32"},
      {p, "R.nn.rnn(x6, r6, h, lf)", inv, "R.nn.rnn: seq_lens must be an integer tensor, got float32"},
      {p, "R.nn.rnn(x6, r6, h, direction=\"bidirectional\")", inv,
       "R.nn.rnn: r has 1 directions; direction \"bidirectional\" needs 2"},
      {p, "R.nn.lstm(x, r6, h, c, p)", inv, "R.nn.lstm: axis 2 of r (gates x hidden) must be 24, got 6"},
      {p, "R.nn.lstm(x2, rt, h, c, p)", inv, "R.nn.lstm: axis 2 of x_proj must be 24, got 48"},
      {p, "R.nn.rnn(x6, r6, h3)", inv, "R.nn.rnn: the batch axis of h0 must be 2, got 3"},
      {p, "R.nn.lstm(x, rt, h, h3, p)", inv, "R.nn.lstm: the batch axis of c0 must be 2, got 3"},
      {p, "R.nn.lstm(x, rt, h, c, p2)", inv, "R.nn.lstm: axis 1 of p must be 18, got 12"},
      {p, "R.nn.rnn(x6, r6, x6)", inv, "R.nn.rnn: the directions axis of h0 must be 1, got 4"},
      {p, "R.nn.rnn(x6, r6, p)", inv, "R.nn.rnn: h0 must have rank 3, got 2"},
      {p, "R.nn.rnn(p, r6, h)", inv, "R.nn.rnn: x_proj must have rank 3, got 2"},
      {p, "R.nn.rnn(x6, r6, h5)", inv, "R.nn.rnn: axis 2 of h0 must be 6, got 5"},
      {p, "R.nn.gru(xg, rg, rbg, h)", inv, "R.nn.gru: axis 0 of rb must be 1, got 2"},
      {p, "R.nn.rnn(x6, r6, h, l3)", inv, "R.nn.rnn: seq_lens' length must be 2, got 3"},
      {p, "R.nn.rnn(x6, r6, s)", inv, "R.nn.rnn: every argument must be a tensor, got R.Shape((2,))"},
  });
}

}  // namespace
}  // namespace optest
}  // namespace kiln
