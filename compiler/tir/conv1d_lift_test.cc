// LiftConv1dNests: 1-D convolutions (dilated ones too) with static or
// symbolic lengths get the conv schedules' register-tiled, vectorized main
// loop (structure of the lowered TIR), and compute the right numbers at odd
// lengths, with a channel bias after them, against a double-precision
// reference (driver + VM).
#include "compiler/tir/conv1d_lift.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/text/text.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::CountTiles;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::TileCensus;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

struct Conv1dCase {
  int64_t c, o, k, dil, pad_lo, pad_hi;
  int64_t stride = 1;
  int64_t Lo(int64_t l) const { return (l + pad_lo + pad_hi - dil * (k - 1) - 1) / stride + 1; }
  std::string Name() const {
    return "c" + std::to_string(c) + " o" + std::to_string(o) + " k" + std::to_string(k) + " d" +
           std::to_string(dil) + " p" + std::to_string(pad_lo) + "," + std::to_string(pad_hi) + " s" +
           std::to_string(stride);
  }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[N, C, L], w[O, C, K], b[O, 1]) = conv1d(x, w) + b; L is the
// symbolic "l" unless `length` > 0, N the symbolic "n" when
// `symbolic_batch`, else 1.
std::string Module(const Conv1dCase& k, int64_t length, bool symbolic_batch = false) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string l = length > 0 ? s(length) : "\"l\"";
  std::string n = symbolic_batch ? "\"n\", " : "1, ";
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(n + s(k.c) + ", " + l) +
         ", w: " + T(s(k.o) + ", " + s(k.c) + ", " + s(k.k)) + ", b: " + T(s(k.o) + ", 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=3):\n        with R.dataflow():\n"
         "            c = R.nn.conv1d(x, w, strides=[" + s(k.stride) + "], padding=[" + s(k.pad_lo) + ", " +
         s(k.pad_hi) + "], dilation=[" + s(k.dil) + "])\n"
         "            gv = R.add(c, b)\n            R.output(gv)\n        return gv\n";
}

driver::CompileOptions Options(int threads) { return test_util::ThreadsOptions(threads); }

std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads) {
  return CompileAndLoad(source, Options(threads), threads);
}

PrimFunc LowerConv(const std::string& source, int threads, const std::string& op = "conv1d") {
  return LowerPrimFunc(source, Options(threads), op);
}


TEST(Conv1dLiftTest, DilatedConv1dGetsVectorizedTiles) {
  // AttaCut's layer: 48 -> 64 channels, kernel 9, dilation 2, same padding.
  Conv1dCase k{48, 64, 9, 2, 8, 8};
  for (int64_t length : {200, 0}) {
    SCOPED_TRACE(length > 0 ? "static" : "symbolic");
    PrimFunc f = LowerConv(Module(k, length), 2);
    ASSERT_NE(f, nullptr);
    TileCensus c = CountTiles(f);
    ASSERT_FALSE(c.fma_widths.empty());
    EXPECT_GE(*std::max_element(c.fma_widths.begin(), c.fma_widths.end()), 16);
    EXPECT_EQ(c.global_updates, 0);  // the naive reduction is gone
    EXPECT_GE(c.parallel, 1);
  }
}

TEST(Conv1dLiftTest, LeavesOtherFunctionsAlone) {
  // A conv2d is no conv1d: the pass returns the function itself.
  Result<IRModule> mod = text::ParseModule(
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("1, 8, 12, 12") + ", w: " +
          T("8, 8, 3, 3") + ") -> " + T("1, 8, 10, 10") +
          ":\n        with R.dataflow():\n            gv = R.nn.conv2d(x, w)\n            R.output(gv)\n"
          "        return gv\n",
      "conv2d.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<IRModule> lowered = driver::LowerModule(*mod, Options(1));
  ASSERT_TRUE(lowered.ok());
  int seen = 0;
  for (const ModuleEntry& e : lowered->entries) {
    if (e.prim && e.name.find("conv2d") != std::string::npos) {
      EXPECT_EQ(LiftConv1dNests(e.prim).get(), e.prim.get());
      ++seen;
    }
  }
  EXPECT_GT(seen, 0);
}

// With `batch` > 1 the module's batch is symbolic and the input has `batch`
// images.
void CheckNumbers(const Conv1dCase& k, int threads, bool symbolic, const std::vector<int64_t>& lengths,
                  int64_t batch = 1) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads) + (symbolic ? " symbolic" : " static") +
               " batch " + std::to_string(batch));
  std::shared_ptr<const vm::Module> sym_mod;
  if (symbolic) sym_mod = Compile(Module(k, 0, batch > 1), threads);
  std::vector<float> w = RandomFloats(k.o * k.c * k.k, 2), bias = RandomFloats(k.o, 3);
  for (int64_t l : lengths) {
    SCOPED_TRACE("length " + std::to_string(l));
    auto mod = symbolic ? sym_mod : Compile(Module(k, l, batch > 1), threads);
    ASSERT_NE(mod, nullptr);
    int64_t lo = k.Lo(l);
    std::vector<float> x = RandomFloats(batch * k.c * l, 1 + l);
    std::vector<Any> args = {FloatTensor({batch, k.c, l}, x), FloatTensor({k.o, k.c, k.k}, w),
                             FloatTensor({k.o, 1}, bias)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{batch, k.o, lo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const float* xn = x.data() + n * k.c * l;
      const float* gn = got + n * k.o * lo;
      for (int64_t o = 0; o < k.o; ++o) {
        for (int64_t xo = 0; xo < lo; ++xo) {
          double acc = bias[o];
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t kx = 0; kx < k.k; ++kx) {
              int64_t ix = xo * k.stride + kx * k.dil - k.pad_lo;
              if (ix >= 0 && ix < l) acc += double(xn[c * l + ix]) * w[(o * k.c + c) * k.k + kx];
            }
          double tol = 1e-5 * double(k.c * k.k) + 1e-5;
          if (!(std::fabs(gn[o * lo + xo] - acc) <= tol) && bad++ < 5)
            ADD_FAILURE() << "n " << n << " o " << o << " x " << xo << ": got " << gn[o * lo + xo] << ", want "
                          << acc;
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// Lengths around the tile widths, odd ones, and one shorter than the
// dilated kernel's reach.
const std::vector<int64_t> kLengths = {5, 9, 17, 31, 33, 50, 101, 200};

TEST(Conv1dLiftTest, DilationsAndKernelsStatic) {
  for (int64_t dil : {1, 2, 4}) {
    CheckNumbers(Conv1dCase{12, 16, 3, dil, dil, dil}, 1, false, {9, 33, 101});
    CheckNumbers(Conv1dCase{12, 16, 9, dil, 4 * dil, 4 * dil}, 2, false, {17, 50, 200});
  }
  // Unpadded, asymmetric padding, a stride.
  CheckNumbers(Conv1dCase{5, 8, 3, 2, 0, 0}, 1, false, {7, 31});
  CheckNumbers(Conv1dCase{6, 10, 9, 3, 5, 2}, 1, false, {31, 77});
  CheckNumbers(Conv1dCase{4, 8, 3, 2, 2, 2, 2}, 1, false, {33, 64});
}

TEST(Conv1dLiftTest, DilationsAndKernelsSymbolic) {
  for (int64_t dil : {1, 2, 4}) {
    CheckNumbers(Conv1dCase{12, 16, 3, dil, dil, dil}, 1, true, kLengths);
    CheckNumbers(Conv1dCase{12, 16, 9, dil, 4 * dil, 4 * dil}, 2, true, kLengths);
  }
  CheckNumbers(Conv1dCase{5, 8, 3, 2, 0, 0}, 1, true, {5, 7, 31});
  CheckNumbers(Conv1dCase{6, 10, 9, 3, 5, 2}, 1, true, {31, 77});
}

TEST(Conv1dLiftTest, SymbolicBatchGetsVectorizedTiles) {
  // PLCMOS's 1x1 512 -> 128 convolution and Magika-like kernels: the batch
  // and the length symbolic. Before the lift took symbolic batches this
  // nest ran naive at about 1 GFLOP/s.
  for (const Conv1dCase& k : {Conv1dCase{64, 32, 1, 1, 0, 0}, Conv1dCase{12, 16, 5, 1, 2, 2}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerConv(Module(k, 0, /*symbolic_batch=*/true), 2);
    ASSERT_NE(f, nullptr);
    TileCensus c = CountTiles(f);
    ASSERT_FALSE(c.fma_widths.empty());
    EXPECT_GE(*std::max_element(c.fma_widths.begin(), c.fma_widths.end()), 16);
    EXPECT_EQ(c.global_updates, 0);
  }
  CheckNumbers(Conv1dCase{64, 32, 1, 1, 0, 0}, 2, true, {5, 33, 300}, 3);
  CheckNumbers(Conv1dCase{12, 16, 5, 1, 2, 2}, 1, true, {9, 50}, 2);
  CheckNumbers(Conv1dCase{4, 8, 3, 2, 2, 2, 2}, 2, true, {17, 64}, 3);
}

// main(x[n, C, L, 1], w[O, C, K, 1], b[O, 1, 1]) = relu(conv2d(x, w) + b)
// with "same" padding along L: a Keras Conv1D as tf2onnx exports it.
std::string ColumnModule(int64_t c, int64_t o, int64_t k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  int64_t p = (k - 1) / 2;
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", \"l\", 1") +
         ", w: " + T(s(o) + ", " + s(c) + ", " + s(k) + ", 1") + ", b: " + T(s(o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            c = R.nn.conv2d(x, w, padding=[" + s(p) + ", 0, " + s(k - 1 - p) + ", 0])\n"
         "            d = R.add(c, b)\n            gv = R.nn.relu(d)\n            R.output(gv)\n        return gv\n";
}

TEST(Conv1dLiftTest, ColumnConv2dGetsVectorizedTiles) {
  // Magika's layer (256 -> 512, kernel 5 x 1, over maps one column wide)
  // shrunk: with a symbolic batch and length the conv schedule's vector
  // columns run along the length, and the numbers match a double reference
  // at lengths around the tile widths.
  const int64_t C = 12, O = 16, K = 5;
  std::string src = ColumnModule(C, O, K);
  PrimFunc f = LowerConv(src, 2, "conv2d");
  ASSERT_NE(f, nullptr);
  TileCensus census = CountTiles(f);
  ASSERT_FALSE(census.fma_widths.empty());
  EXPECT_GE(*std::max_element(census.fma_widths.begin(), census.fma_widths.end()), 16);
  EXPECT_EQ(census.global_updates, 0);
  // The vector lanes run along the length: the map stored from the tiles is
  // the view whose last axis is the length, not the original one column wide
  // (whose tiles of 8-32 lanes would sit in branches that never run).
  struct LastAxes : StmtExprVisitor {
    std::vector<PrimExpr> last;
    void VisitStmt(const Stmt& st) override {
      if (const auto* store = As<BufferStoreNode>(st); store != nullptr && store->buffer->name != "acc")
        last.push_back(store->buffer->shape.back());
      StmtExprVisitor::VisitStmt(st);
    }
  } axes;
  axes.VisitStmt(f->body);
  ASSERT_FALSE(axes.last.empty());
  for (const PrimExpr& e : axes.last) {
    const auto* imm = e.as<IntImmNode>();
    EXPECT_TRUE(imm == nullptr || imm->value != 1) << "a store into a map one column wide is left";
  }
  auto mod = Compile(src, 2);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(O * C * K, 2), bias = RandomFloats(O, 3);
  for (int64_t batch : {1, 3}) {
    for (int64_t l : {3, 17, 40, 101}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + " length " + std::to_string(l));
      std::vector<float> x = RandomFloats(batch * C * l, 7 + l);
      std::vector<Any> args = {FloatTensor({batch, C, l, 1}, x), FloatTensor({O, C, K, 1}, w), FloatTensor({O, 1, 1}, bias)};
      Result<Tensor> out = InvokeMain(*mod, args);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ASSERT_EQ(out->shape(), (std::vector<int64_t>{batch, O, l, 1}));
      int bad = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t o = 0; o < O; ++o)
          for (int64_t y = 0; y < l; ++y) {
            double acc = bias[o];
            for (int64_t c = 0; c < C; ++c)
              for (int64_t ky = 0; ky < K; ++ky) {
                int64_t iy = y + ky - (K - 1) / 2;
                if (iy >= 0 && iy < l) acc += double(x[(n * C + c) * l + iy]) * w[(o * C + c) * K + ky];
              }
            float got = out->data<float>()[(n * O + o) * l + y];
            if (!(std::fabs(got - std::max(acc, 0.0)) <= 1e-4) && bad++ < 5)
              ADD_FAILURE() << "n " << n << " o " << o << " y " << y << ": got " << got << ", want " << acc;
          }
      EXPECT_EQ(bad, 0);
    }
  }
}

// main(x[n, L]) = conv1d(expand_dims(pad(x, reflect, P each side), 1), w)
// at stride S, w[O, 1, K]: Silero VAD's STFT front end (L 576, P 128, K 256,
// S 128, O 258), which fusion puts in one function with the Pad as a stage
// producing the convolution's input. L is the symbolic "l" when
// `length` is 0.
std::string PadConvModule(int64_t length, int64_t pad, int64_t o, int64_t k, int64_t stride) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string l = length > 0 ? s(length) : "\"l\"";
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + l) + ", w: " +
         T(s(o) + ", 1, " + s(k)) + ") -> R.Tensor(dtype=\"float32\", ndim=3):\n        with R.dataflow():\n"
         "            p = R.nn.pad(x, pad_width=[0, 0, " + s(pad) + ", " + s(pad) + "], pad_mode=\"reflect\")\n"
         "            e = R.expand_dims(p, axis=[1])\n"
         "            gv = R.nn.conv1d(e, w, strides=[" + s(stride) + "], padding=[0, 0], dilation=[1])\n"
         "            R.output(gv)\n        return gv\n";
}

// The rank of every buffer stored in `s`, by name.
std::vector<std::pair<std::string, size_t>> StoredRanks(const Stmt& s) {
  struct V : StmtExprVisitor {
    std::vector<std::pair<std::string, size_t>> out;
    void VisitStmt(const Stmt& st) override {
      if (const auto* store = As<BufferStoreNode>(st)) out.emplace_back(store->buffer->name, store->indices.size());
      StmtExprVisitor::VisitStmt(st);
    }
  } v;
  v.VisitStmt(s);
  return v.out;
}

TEST(Conv1dLiftTest, PadProducerStageIsLifted) {
  // Before: the Pad stage stored the convolution's input in its rank-3 form,
  // so the pass kept the whole function (naive, about 4 GFLOP/s on Silero
  // VAD's STFT). After: the stage stores the rank-4 view the lifted
  // convolution reads, and nothing is stored in rank 3 any more.
  Result<IRModule> mod = text::ParseModule(PadConvModule(0, 16, 18, 32, 16), "pad_conv.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<IRModule> kernels = driver::LowerModuleToKernels(*mod, Options(1));
  ASSERT_TRUE(kernels.ok()) << kernels.status().ToString();
  int seen = 0;
  for (const ModuleEntry& e : kernels->entries) {
    if (!e.prim || e.name.find("conv1d") == std::string::npos) continue;
    ++seen;
    PrimFunc before = InlineElementwise(LowerBlocks(e.prim));
    // The producer's rank-3 buffer and the convolution's output.
    std::set<std::string> rank3;
    for (const auto& [name, rank] : StoredRanks(before->body))
      if (rank == 3) rank3.insert(name);
    ASSERT_EQ(rank3.size(), 2u) << "the fused function has no producer stage to test";
    std::vector<const VarNode*> outputs;
    PrimFunc after = LiftConv1dNests(before, &outputs);
    ASSERT_NE(after.get(), before.get()) << "the function was left unlifted";
    EXPECT_EQ(outputs.size(), 1u);
    for (const auto& [name, rank] : StoredRanks(after->body)) EXPECT_EQ(rank, 4u) << name << " is still stored in rank 3";
  }
  EXPECT_EQ(seen, 1);
}

// The reflect-padded strided convolution of PadConvModule against a
// double-precision reference, over `lengths` (all through one module when
// the length is symbolic).
void CheckPadConv(int64_t pad, int64_t o, int64_t k, int64_t stride, int threads, bool symbolic,
                  const std::vector<int64_t>& lengths, int64_t batch) {
  SCOPED_TRACE("pad " + std::to_string(pad) + " k " + std::to_string(k) + " stride " + std::to_string(stride) +
               " threads " + std::to_string(threads) + (symbolic ? " symbolic" : " static"));
  std::shared_ptr<const vm::Module> sym_mod;
  if (symbolic) sym_mod = Compile(PadConvModule(0, pad, o, k, stride), threads);
  std::vector<float> w = RandomFloats(o * k, 2);
  for (int64_t l : lengths) {
    SCOPED_TRACE("length " + std::to_string(l));
    auto mod = symbolic ? sym_mod : Compile(PadConvModule(l, pad, o, k, stride), threads);
    ASSERT_NE(mod, nullptr);
    const int64_t lp = l + 2 * pad, lo = (lp - k) / stride + 1;
    std::vector<float> x = RandomFloats(batch * l, 5 + l);
    Result<Tensor> out = InvokeMain(*mod, {FloatTensor({batch, l}, x), FloatTensor({o, 1, k}, w)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{batch, o, lo}));
    int bad = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t xo = 0; xo < lo; ++xo) {
          double acc = 0;
          for (int64_t kx = 0; kx < k; ++kx) {
            int64_t j = xo * stride + kx - pad;  // reflect: no edge repeated
            if (j < 0) j = -j;
            if (j >= l) j = 2 * (l - 1) - j;
            acc += double(x[n * l + j]) * w[oc * k + kx];
          }
          float got = out->data<float>()[(n * o + oc) * lo + xo];
          if (!(std::fabs(got - acc) <= 1e-5 * k) && bad++ < 5)
            ADD_FAILURE() << "n " << n << " o " << oc << " x " << xo << ": got " << got << ", want " << acc;
        }
    EXPECT_EQ(bad, 0);
  }
}

TEST(Conv1dLiftTest, PadProducerNumbers) {
  // Silero VAD's sequence model: the length static, the batch symbolic
  // (6 output columns); its single-window model: both symbolic, widths 1
  // to 10 around the run-time tile choice.
  CheckPadConv(16, 18, 32, 16, 1, false, {80}, 3);
  CheckPadConv(16, 18, 32, 16, 2, false, {80, 33}, 2);
  CheckPadConv(16, 18, 32, 16, 1, true, {17, 40, 48, 64, 100, 130, 160}, 2);
  CheckPadConv(8, 10, 16, 8, 2, true, {9, 30, 57}, 3);
}

// Vector widths of the fmas that read the staged rows ("col") of
// ScheduleDotConvs (conv_dot_schedule.h).
std::vector<int64_t> StagedFmaWidths(const PrimFunc& f) {
  struct V : StmtExprVisitor {
    std::vector<int64_t> widths;
    int64_t width = 0;
    void VisitStmt(const Stmt& st) override {
      const auto* loop = As<ForNode>(st);
      int64_t was = width;
      if (loop != nullptr && loop->for_kind == ForKind::kVectorized)
        if (const auto* e = loop->extent.as<IntImmNode>()) width = e->value;
      StmtExprVisitor::VisitStmt(st);
      width = was;
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* c = e.as<CallNode>(); c != nullptr && c->op == "fma" && width > 0)
        for (const PrimExpr& a : c->args)
          if (const auto* l = a.as<BufferLoadNode>(); l != nullptr && l->buffer->name == "col") widths.push_back(width);
      StmtExprVisitor::VisitExpr(e);
    }
  } v;
  v.VisitStmt(f->body);
  return v.widths;
}

TEST(Conv1dLiftTest, NarrowRowsVectorizeTheReduction) {
  // Silero VAD's STFT (static and symbolic length) and encoder convolutions
  // (129 -> 128 and 128 -> 64 at stride 2, kernel 3, rows of 4 and 2): rows
  // narrower than a vector, where the column tiles ran one column (scalar
  // FMAs, 2 to 5 GFLOP/s); the reduction is vectorized instead.
  for (const std::string& src :
       {PadConvModule(80, 16, 18, 32, 16), PadConvModule(0, 16, 18, 32, 16),
        Module(Conv1dCase{129, 128, 3, 1, 1, 1}, 4, true), Module(Conv1dCase{128, 64, 3, 1, 1, 1, 2}, 4, true)}) {
    PrimFunc f = LowerConv(src, 1);
    ASSERT_NE(f, nullptr);
    std::vector<int64_t> widths = StagedFmaWidths(f);
    ASSERT_FALSE(widths.empty()) << src;
    EXPECT_EQ(*std::max_element(widths.begin(), widths.end()), 16);
    EXPECT_EQ(CountTiles(f).global_updates, 0);
  }
  // Their numbers: padding, a stride, widths 1 to 10 with a symbolic length.
  CheckNumbers(Conv1dCase{129, 128, 3, 1, 1, 1}, 1, false, {4}, 3);
  CheckNumbers(Conv1dCase{129, 128, 3, 1, 1, 1}, 2, true, {1, 2, 3, 4, 5, 7, 8, 10}, 2);
  CheckNumbers(Conv1dCase{128, 64, 3, 1, 1, 1, 2}, 1, true, {2, 4, 9, 15}, 3);
  CheckNumbers(Conv1dCase{24, 10, 5, 2, 4, 4}, 2, false, {3, 6}, 2);
}

// The divisors in the let values that place each tile (image, channel
// tile, first point): with a symbolic row width, the tiles of each width's
// branch (hw == w) divide by constants only; before, each tile divided by
// the run-time width three times.
std::vector<std::string> TileIndexDivisors(const PrimFunc& f) {
  struct V : StmtExprVisitor {
    std::vector<std::string> symbolic;
    bool in_let = false;
    void VisitStmt(const Stmt& st) override {
      if (const auto* l = As<LetStmtNode>(st)) {
        if (l->var->name == "n" || l->var->name == "o0" || l->var->name == "p0") {
          in_let = true;
          VisitExpr(l->value);
          in_let = false;
        }
      }
      StmtExprVisitor::VisitStmt(st);
    }
    void VisitExpr(const PrimExpr& e) override {
      if (in_let && (e->kind() == TirKind::kFloorDiv || e->kind() == TirKind::kFloorMod)) {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        if (b->b.as<IntImmNode>() == nullptr) symbolic.push_back(text::PrintPrimExpr(e));
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } v;
  v.VisitStmt(f->body);
  return v.symbolic;
}

TEST(Conv1dLiftTest, SymbolicNarrowRowsPlaceTilesByConstants) {
  for (const std::string& src : {PadConvModule(0, 16, 18, 32, 16), Module(Conv1dCase{129, 128, 3, 1, 1, 1}, 0, true),
                                 Module(Conv1dCase{128, 64, 3, 1, 1, 1, 2}, 0, true)}) {
    PrimFunc f = LowerConv(src, 2);
    ASSERT_NE(f, nullptr);
    ASSERT_FALSE(StagedFmaWidths(f).empty()) << src;
    std::vector<std::string> divisors = TileIndexDivisors(f);
    EXPECT_TRUE(divisors.empty()) << divisors.size() << " divisions by a run-time value, the first " << divisors.front();
  }
}

TEST(Conv1dLiftTest, DeepCutBranchesWithLeftoverChannels) {
  // DeepCut's Conv1D branches: rows of 21, a symbolic batch (the peeled
  // static kernels: shift-plane tiles of 24 channels and one tile of the
  // channels left), 150 and 100 output channels, kernels 9 to 12; odd
  // lengths and channel counts around them, and the length symbolic too.
  CheckNumbers(Conv1dCase{32, 150, 11, 1, 0, 0}, 1, false, {21, 23}, 3);
  CheckNumbers(Conv1dCase{32, 100, 12, 1, 0, 0}, 2, false, {21}, 4);
  CheckNumbers(Conv1dCase{7, 29, 9, 1, 0, 0}, 1, false, {19, 25}, 2);
  CheckNumbers(Conv1dCase{32, 150, 11, 1, 0, 0}, 1, true, {11, 21, 37}, 3);
  CheckNumbers(Conv1dCase{7, 29, 5, 1, 2, 2}, 2, true, {9, 21, 33}, 2);
}

TEST(Conv1dLiftTest, SymbolicBatchStaysCorrect) {
  // Silero VAD's encoder: the batch symbolic (its windows), stride 2, an
  // output of width 1, the convolution's output an intermediate allocated in
  // the function (its allocation must declare the lifted view: this failed
  // to compile, "accessed with 3 indices but has 2 dimensions", when the
  // lift first took symbolic batches); the numbers checked for a batch of 3.
  const std::string src =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", 8, 2") + ", w: " + T("8, 8, 3") +
      ", b: " + T("8, 1") + ") -> R.Tensor(dtype=\"float32\", ndim=3):\n        with R.dataflow():\n"
      "            c = R.nn.conv1d(x, w, strides=[2], padding=[1, 1], dilation=[1])\n"
      "            d = R.add(c, b)\n            gv = R.nn.relu(d)\n            R.output(gv)\n        return gv\n";
  auto mod = Compile(src, 2);
  ASSERT_NE(mod, nullptr);
  std::vector<float> x = RandomFloats(3 * 8 * 2, 1), w = RandomFloats(8 * 8 * 3, 2), bias = RandomFloats(8, 3);
  std::vector<Any> args = {FloatTensor({3, 8, 2}, x), FloatTensor({8, 8, 3}, w), FloatTensor({8, 1}, bias)};
  Result<Tensor> out = InvokeMain(*mod, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{3, 8, 1}));
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t o = 0; o < 8; ++o) {
      double acc = bias[o];
      for (int64_t c = 0; c < 8; ++c)
        for (int64_t kx = 0; kx < 3; ++kx) {
          int64_t ix = kx - 1;
          if (ix >= 0 && ix < 2) acc += double(x[(n * 8 + c) * 2 + ix]) * w[(o * 8 + c) * 3 + kx];
        }
      EXPECT_NEAR(out->data<float>()[n * 8 + o], std::max(acc, 0.0), 1e-4) << "n " << n << " o " << o;
    }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
