// ScheduleConvsPeelingBatch: convolutions whose only symbolic extent is the
// batch take the static kernels, one image at a time (structure of the
// lowered TIR), compute the right numbers at batches 1, 2, 3 and 5 against a
// double-precision reference (driver + VM), and functions whose work is not
// image by image are left alone.
#include "compiler/tir/conv_batch_peel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/stmt_functor.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::CountTiles;
using test_util::FloatTensor;
using test_util::LowerPrimFunc;
using test_util::RandomFloats;
using test_util::TileCensus;

using namespace ir;  // NOLINT

struct Case {
  int64_t c, o, h, w, k, stride, pad, groups;
  bool bn_relu;
  std::string Name() const {
    return "c" + std::to_string(c) + " o" + std::to_string(o) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " k" + std::to_string(k) + " s" + std::to_string(stride) + " p" + std::to_string(pad) + " g" +
           std::to_string(groups) + (bn_relu ? " bn_relu" : "");
  }
  int64_t Ho() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t Wo() const { return (w + 2 * pad - k) / stride + 1; }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, C, H, W], w, scale, shift): only the batch n symbolic.
std::string Module(const Case& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " +
                    T("\"n\", " + s(k.c) + ", " + s(k.h) + ", " + s(k.w)) + ", w: " +
                    T(s(k.o) + ", " + s(k.c / k.groups) + ", " + s(k.k) + ", " + s(k.k)) +
                    ", scale: " + T(s(k.o) + ", 1, 1") + ", shift: " + T(s(k.o) + ", 1, 1") +
                    ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + s(k.stride) + ", " + s(k.stride) + "], padding=[" + s(k.pad) +
         ", " + s(k.pad) + ", " + s(k.pad) + ", " + s(k.pad) + "], groups=" + s(k.groups) + ")\n";
  if (k.bn_relu) {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n            gv = R.nn.relu(e)\n";
  } else {
    src += "            gv = c\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

driver::CompileOptions Options(int threads) { return test_util::ThreadsOptions(threads, /*winograd=*/false); }

// Whether the body is one loop over the images, of symbolic extent.
bool LoopsOverImages(const PrimFunc& f) {
  const auto* loop = As<ForNode>(f->body);
  return loop != nullptr && loop->extent.as<VarNode>() != nullptr && loop->loop_var->name == "image";
}

TEST(ConvBatchPeelTest, SymbolicBatchTakesTheStaticKernels) {
  // Pointwise, padded 3 x 3, and a stride-2 depthwise (which the static
  // conv schedule leaves to the window-reduction schedule).
  for (const Case& k : {Case{16, 24, 14, 14, 1, 1, 0, 1, true}, Case{8, 16, 12, 12, 3, 1, 1, 1, true},
                        Case{16, 16, 28, 28, 3, 2, 1, 16, true}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(Module(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(LoopsOverImages(f));
    TileCensus c = CountTiles(f);
    EXPECT_EQ(c.global_updates, 0);  // no naive reduction into C left
    EXPECT_EQ(c.guarded, 0);
  }
}

// Buffers allocated in the kernel with `elems` floats (an intermediate of
// the output's size).
int AllocatedOfSize(const PrimFunc& f, int64_t elems) {
  struct Finder : StmtExprVisitor {
    int64_t elems = 0;
    int found = 0;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s)) {
        int64_t n = 1;
        for (const PrimExpr& d : a->buffer->shape) {
          const auto* c = d.as<IntImmNode>();
          n = c != nullptr ? n * c->value : -1;
          if (n < 0) break;
        }
        // (Not the channel-block depthwise kernel's per-task tiles of 16
        // channels, depthwise_channel_block.h: of the output's size at 16.)
        const std::string& name = a->buffer->name;
        bool tile = name.size() > 7 && (name.compare(name.size() - 7, 7, "_cmajor") == 0 ||
                                        name.compare(name.size() - 7, 7, "_planes") == 0);
        found += n == elems && !tile;
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } finder;
  finder.elems = elems;
  finder.VisitStmt(f->body);
  return finder.found;
}

TEST(ConvBatchPeelTest, EpilogueIsInTheDepthwiseStores) {
  // As when pinned, a depthwise kernel's BN and ReLU run in its tiles'
  // stores (after the schedules, InlineElementwise on the peeled image):
  // no image-sized intermediate for the conv's output. Stride 2, and
  // stride 1 on a 7 x 7 plane (one flat run).
  for (const Case& k : {Case{16, 16, 28, 28, 3, 2, 1, 16, true}, Case{16, 16, 7, 7, 5, 1, 2, 16, true}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(Module(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    ASSERT_TRUE(LoopsOverImages(f));
    EXPECT_EQ(AllocatedOfSize(f, k.o * k.Ho() * k.Wo()), 0);
  }
}

TEST(ConvBatchPeelTest, ImagesRunInParallelWithThreads) {
  // With two threads the loop over the images is the parallel one (each
  // thread whole images; the kernel's own parallel loops, inside, split
  // batch 1); with one thread it stays serial.
  const Case k{8, 16, 12, 12, 3, 1, 1, 1, true};
  PrimFunc two = LowerPrimFunc(Module(k), Options(2), "conv2d");
  ASSERT_NE(two, nullptr);
  ASSERT_TRUE(LoopsOverImages(two));
  EXPECT_EQ(As<ForNode>(two->body)->for_kind, ForKind::kParallel);
  PrimFunc one = LowerPrimFunc(Module(k), Options(1), "conv2d");
  ASSERT_NE(one, nullptr);
  ASSERT_TRUE(LoopsOverImages(one));
  EXPECT_EQ(As<ForNode>(one->body)->for_kind, ForKind::kSerial);
  // Four threads: parallel images from 4 images on, a serial loop below.
  PrimFunc four = LowerPrimFunc(Module(k), Options(4), "conv2d");
  ASSERT_NE(four, nullptr);
  const auto* branch = As<IfThenElseNode>(four->body);
  ASSERT_NE(branch, nullptr);
  const auto* par = As<ForNode>(branch->then_case);
  const auto* ser = As<ForNode>(branch->else_case);
  ASSERT_TRUE(par != nullptr && ser != nullptr);
  EXPECT_EQ(par->for_kind, ForKind::kParallel);
  EXPECT_EQ(ser->for_kind, ForKind::kSerial);
}

TEST(ConvBatchPeelTest, SymbolicImageSizeIsLeftToTheSymbolicSchedule) {
  // Height symbolic as well: not peeled (ScheduleSymbolicConvs takes it).
  std::string src = Module(Case{8, 8, 12, 12, 3, 1, 1, 1, false});
  src.replace(src.find("\"n\", 8, 12, 12"), std::string("\"n\", 8, 12, 12").size(), "\"n\", 8, \"h\", 12");
  PrimFunc f = LowerPrimFunc(src, Options(1), "conv2d");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(LoopsOverImages(f));
}

// main(x[n, C, 1, W], w[O, C, 1, K]): a 1-D filter bank, column stride sw,
// no padding (basic_pitch's CQT: 1 -> 36 at stride 256, 1 -> 1 at 2).
std::string BankModule(int64_t c, int64_t o, int64_t w, int64_t k, int64_t sw) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", 1, " + s(w)) +
         ", w: " + T(s(o) + ", " + s(c) + ", 1, " + s(k)) +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            gv = R.nn.conv2d(x, w, strides=[1, " + s(sw) + "])\n            R.output(gv)\n        return gv\n";
}

TEST(ConvBatchPeelTest, LongWindowOverOneChannelTakesTheStaticKernels) {
  // 256 taps over one input channel: peeled (the static conv tiles, one
  // FMA in the tap loop), where the symbolic schedule read the stride-2 row
  // by a gather an FMA. Over 8 input channels such a window keeps the
  // symbolic schedule (LargeWindowKeepsSymbolic).
  PrimFunc one = LowerPrimFunc(BankModule(1, 1, 1201, 256, 2), Options(1), "conv2d");
  ASSERT_NE(one, nullptr);
  EXPECT_TRUE(LoopsOverImages(one));
  EXPECT_EQ(CountTiles(one).global_updates, 0);
  PrimFunc eight = LowerPrimFunc(BankModule(8, 8, 301, 64, 2), Options(1), "conv2d");
  ASSERT_NE(eight, nullptr);
  EXPECT_FALSE(LoopsOverImages(eight));
  // Numbers at batches 1, 2 and 3, odd row lengths, one and two threads.
  struct Bank {
    int64_t o, w, k, sw;
  };
  for (const Bank& b : {Bank{1, 1201, 256, 2}, Bank{1, 777, 256, 2}, Bank{36, 3001, 256, 256}, Bank{4, 999, 77, 3}}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE("o " + std::to_string(b.o) + " w " + std::to_string(b.w) + " k " + std::to_string(b.k) + " sw " +
                   std::to_string(b.sw) + " threads " + std::to_string(threads));
      auto mod = CompileAndLoad(BankModule(1, b.o, b.w, b.k, b.sw), Options(threads), threads);
      ASSERT_NE(mod, nullptr);
      const int64_t wo = (b.w - b.k) / b.sw + 1;
      std::vector<float> w = RandomFloats(b.o * b.k, 2);
      for (int64_t n : {1, 2, 3}) {
        std::vector<float> x = RandomFloats(n * b.w, 10 + n);
        Result<Tensor> out = test_util::InvokeMain(*mod, {FloatTensor({n, 1, 1, b.w}, x), FloatTensor({b.o, 1, 1, b.k}, w)});
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, b.o, 1, wo}));
        const float* got = out->data<float>();
        int bad = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t o = 0; o < b.o; ++o)
            for (int64_t xo = 0; xo < wo; ++xo) {
              double want = 0;
              for (int64_t kx = 0; kx < b.k; ++kx) want += double(x[i * b.w + xo * b.sw + kx]) * w[o * b.k + kx];
              double g = got[(i * b.o + o) * wo + xo];
              if (!(std::fabs(g - want) <= 1e-5 * double(b.k)) && bad++ < 5)
                ADD_FAILURE() << "n " << i << " o " << o << " x " << xo << ": got " << g << ", want " << want;
            }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

// A convolution nest followed by a stage that reads image 0 of the input
// for every image: not image by image, so not peeled (peeled, every image
// would read its own image instead).
const char* kCrossImage = R"(@I.ir_module
class Module:
    @T.prim_func
    def conv_cross(x_handle: T.handle, w: T.Buffer((4, 4, 1, 1), "float32"), d_handle: T.handle):
        n = T.int64()
        x = T.match_buffer(x_handle, (n, 4, 8, 8), "float32")
        d = T.match_buffer(d_handle, (n, 4, 8, 8), "float32")
        c = T.decl_buffer((n, 4, 8, 8), "float32")
        for i0, i1, i2, i3, k0, k1, k2 in T.grid(n, T.int64(4), T.int64(8), T.int64(8), T.int64(4), T.int64(1), T.int64(1)):
            if k0 == 0 and k1 == 0 and k2 == 0:
                c[i0, i1, i2, i3] = T.float32(0)
            c[i0, i1, i2, i3] = c[i0, i1, i2, i3] + x[i0, k0, i2 + k1, i3 + k2] * w[i1, k0, k1, k2]
        for i0, i1, i2, i3 in T.grid(n, T.int64(4), T.int64(8), T.int64(8)):
            d[i0, i1, i2, i3] = c[i0, i1, i2, i3] + x[T.int64(0), i1, i2, i3]
)";

PrimFunc ParsePrim(const std::string& src) {
  Result<IRModule> mod = text::ParseModule(src, "peel.tir");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  for (const ModuleEntry& e : mod->entries)
    if (e.prim) return e.prim;
  return nullptr;
}

TEST(ConvBatchPeelTest, CrossImageAccessIsLeftAlone) {
  PrimFunc f = ParsePrim(kCrossImage);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(ScheduleConvsPeelingBatch(f, 1).get(), f.get());
  // The same function with the stage at image i0 is peeled.
  std::string same = kCrossImage;
  same.replace(same.find("x[T.int64(0), i1"), std::string("x[T.int64(0), i1").size(), "x[i0, i1");
  PrimFunc g = ParsePrim(same);
  ASSERT_NE(g, nullptr);
  PrimFunc peeled = ScheduleConvsPeelingBatch(g, 1);
  EXPECT_NE(peeled.get(), g.get());
  EXPECT_TRUE(LoopsOverImages(peeled));
}

// The nests that lowering leaves around a reshape and a pad of a batched
// tensor (basic_pitch's front end): a stage of a loop of one iteration
// reading image i0 + i1, and a pad's condition along the batch,
// i0 >= 0 and i0 < n.
const char* kReshapedPadded = R"(@I.ir_module
class Module:
    @T.prim_func
    def conv_reshaped(x_handle: T.handle, w: T.Buffer((4, 1, 1, 3), "float32"), d_handle: T.handle):
        n = T.int64()
        x = T.match_buffer(x_handle, (n, 1, 8), "float32")
        d = T.match_buffer(d_handle, (n, 4, 1, 8), "float32")
        r = T.decl_buffer((n, 1, 1, 10), "float32")
        for i0, i1, i2, i3 in T.grid(n, T.int64(1), T.int64(1), T.int64(10)):
            r[i0, i1, i2, i3] = T.if_then_else(i0 + i1 >= 0 and i0 + i1 < n and i3 >= 1 and i3 < 9, x[i0 + i1 + i2, 0, i3 - 1], T.float32(0))
        for i0, i1, i2, i3, k0, k1, k2 in T.grid(n, T.int64(4), T.int64(1), T.int64(8), T.int64(1), T.int64(1), T.int64(3)):
            if k0 == 0 and k1 == 0 and k2 == 0:
                d[i0, i1, i2, i3] = T.float32(0)
            d[i0, i1, i2, i3] = d[i0, i1, i2, i3] + r[i0, k0, i2 + k1, i3 + k2] * w[i1, k0, k1, k2]
)";

std::string Replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(ConvBatchPeelTest, ReshapedAndPaddedImagesArePeeled) {
  // i0 + i1 + i2 with i1, i2 of one iteration is image i0, and the pad's
  // i0 >= 0 and i0 < n always holds: peeled.
  PrimFunc f = ParsePrim(kReshapedPadded);
  ASSERT_NE(f, nullptr);
  PrimFunc peeled = ScheduleConvsPeelingBatch(f, 1);
  EXPECT_NE(peeled.get(), f.get());
  EXPECT_TRUE(LoopsOverImages(peeled));
  // A loop of two iterations there reads the next image: left alone.
  PrimFunc next = ParsePrim(Replaced(Replaced(kReshapedPadded, "T.grid(n, T.int64(1), T.int64(1), T.int64(10))",
                                              "T.grid(n, T.int64(1), T.int64(2), T.int64(10))"),
                                     "r = T.decl_buffer((n, 1, 1, 10)", "r = T.decl_buffer((n, 1, 2, 10)"));
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(ScheduleConvsPeelingBatch(next, 1).get(), next.get());
  // A condition that depends on the image (all but the last): left alone.
  PrimFunc last = ParsePrim(Replaced(kReshapedPadded, "i0 + i1 < n and", "i0 + i1 < n - 1 and"));
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(ScheduleConvsPeelingBatch(last, 1).get(), last.get());
}

// main(x[n, H, W], w[O, 1, K, K]): basic_pitch's harmonic stack into its
// 7 x 7 conv: x expanded to [n, H, W, 1], reshaped to [n, 1, H, W], then a
// conv of column stride `sw`, padded by K / 2 rows and `pw` columns.
std::string ReshapedConvModule(int64_t o, int64_t h, int64_t w, int64_t k, int64_t sw, int64_t pw) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(h) + ", " + s(w)) +
         ", w: " + T(s(o) + ", 1, " + s(k) + ", " + s(k)) +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        n = T.int64()\n        with R.dataflow():\n"
         "            e = R.expand_dims(x, axis=[3])\n"
         "            r = R.reshape(e, R.shape([n, 1, " + s(h) + ", " + s(w) + "]))\n"
         "            gv = R.nn.conv2d(r, w, strides=[1, " + s(sw) + "], padding=[" + s(k / 2) + ", " + s(pw) + ", " +
         s(k / 2) + ", " + s(pw) + "])\n            R.output(gv)\n        return gv\n";
}

// main(x[n, W], w[O, 1, 1, K]): basic_pitch's CQT octaves: the signal
// padded by `pad` both sides, reshaped to [n, 1, 1, W + 2 pad], a filter
// bank of column stride `sw`.
std::string PaddedBankModule(int64_t o, int64_t w, int64_t k, int64_t sw, int64_t pad) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(w)) +
         ", w: " + T(s(o) + ", 1, 1, " + s(k)) +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        n = T.int64()\n        with R.dataflow():\n"
         "            p = R.nn.pad(x, pad_width=[0, 0, " + s(pad) + ", " + s(pad) + "])\n"
         "            e = R.expand_dims(p, axis=[1])\n"
         "            r = R.reshape(e, R.shape([n, 1, 1, " + s(w + 2 * pad) + "]))\n"
         "            gv = R.nn.conv2d(r, w, strides=[1, " + s(sw) + "])\n            R.output(gv)\n        return gv\n";
}

// out[n, O, Ho, Wo] of a one-channel conv over x[n, H, W] (zero padding).
std::vector<double> OneChannelConv(const std::vector<float>& x, const std::vector<float>& w, int64_t n, int64_t o,
                                   int64_t h, int64_t wd, int64_t kh, int64_t kw, int64_t sw, int64_t ph, int64_t pw) {
  const int64_t ho = h + 2 * ph - kh + 1, wo = (wd + 2 * pw - kw) / sw + 1;
  std::vector<double> out(n * o * ho * wo, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < o; ++c)
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t xo = 0; xo < wo; ++xo) {
          double acc = 0;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t iy = y + ky - ph, ix = xo * sw + kx - pw;
              if (iy >= 0 && iy < h && ix >= 0 && ix < wd) acc += double(x[(b * h + iy) * wd + ix]) * w[(c * kh + ky) * kw + kx];
            }
          out[((b * o + c) * ho + y) * wo + xo] = acc;
        }
  return out;
}

TEST(ConvBatchPeelTest, ReshapedAndPaddedConvsTakeTheStaticKernels) {
  // Both kernels peeled, with no naive reduction left.
  PrimFunc stack = LowerPrimFunc(ReshapedConvModule(8, 12, 30, 7, 3, 2), Options(1), "conv2d");
  ASSERT_NE(stack, nullptr);
  EXPECT_TRUE(LoopsOverImages(stack));
  EXPECT_EQ(CountTiles(stack).global_updates, 0);
  PrimFunc bank = LowerPrimFunc(PaddedBankModule(1, 301, 64, 2, 31), Options(1), "conv2d");
  ASSERT_NE(bank, nullptr);
  EXPECT_TRUE(LoopsOverImages(bank));
  EXPECT_EQ(CountTiles(bank).global_updates, 0);
  // Numbers at batches 1, 2 and 3, one and two threads.
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto stack_mod = CompileAndLoad(ReshapedConvModule(8, 12, 30, 7, 3, 2), Options(threads), threads);
    auto bank_mod = CompileAndLoad(PaddedBankModule(1, 301, 64, 2, 31), Options(threads), threads);
    ASSERT_TRUE(stack_mod != nullptr && bank_mod != nullptr);
    std::vector<float> ws = RandomFloats(8 * 49, 2), wb = RandomFloats(64, 3);
    for (int64_t n : {1, 2, 3}) {
      SCOPED_TRACE("n " + std::to_string(n));
      std::vector<float> xs = RandomFloats(n * 12 * 30, 10 + n), xb = RandomFloats(n * 301, 20 + n);
      Result<Tensor> s = test_util::InvokeMain(*stack_mod, {FloatTensor({n, 12, 30}, xs), FloatTensor({8, 1, 7, 7}, ws)});
      Result<Tensor> b = test_util::InvokeMain(*bank_mod, {FloatTensor({n, 301}, xb), FloatTensor({1, 1, 1, 64}, wb)});
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      struct Want {
        const Tensor& got;
        std::vector<double> want;
        std::vector<int64_t> shape;
        double tol;
      };
      for (const Want& c : {Want{*s, OneChannelConv(xs, ws, n, 8, 12, 30, 7, 7, 3, 3, 2), {n, 8, 12, 10}, 49e-5},
                            Want{*b, OneChannelConv(xb, wb, n, 1, 1, 301, 1, 64, 2, 0, 31), {n, 1, 1, 150}, 64e-5}}) {
        ASSERT_EQ(c.got.shape(), c.shape);
        const float* got = c.got.data<float>();
        int bad = 0;
        for (size_t i = 0; i < c.want.size(); ++i)
          if (!(std::fabs(got[i] - c.want[i]) <= c.tol) && bad++ < 5)
            ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << c.want[i];
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

void CheckNumbers(const Case& k, int threads) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
  auto mod = CompileAndLoad(Module(k), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  const int64_t cg = k.c / k.groups, og = k.o / k.groups, ho = k.Ho(), wo = k.Wo();
  std::vector<float> w = RandomFloats(k.o * cg * k.k * k.k, 2), scale = RandomFloats(k.o, 3),
                     shift = RandomFloats(k.o, 4);
  for (int64_t n : {1, 2, 3, 5}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<float> x = RandomFloats(n * k.c * k.h * k.w, 10 + n);
    std::vector<Any> args = {FloatTensor({n, k.c, k.h, k.w}, x), FloatTensor({k.o, cg, k.k, k.k}, w),
                             FloatTensor({k.o, 1, 1}, scale), FloatTensor({k.o, 1, 1}, shift)};
    Result<Tensor> out = test_util::InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.o, ho, wo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < k.o; ++o)
        for (int64_t y = 0; y < ho; ++y)
          for (int64_t xo = 0; xo < wo; ++xo) {
            double acc = 0;
            const int64_t g = o / og;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t ky = 0; ky < k.k; ++ky)
                for (int64_t kx = 0; kx < k.k; ++kx) {
                  int64_t iy = y * k.stride + ky - k.pad, ix = xo * k.stride + kx - k.pad;
                  if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                  acc += double(x[((b * k.c + g * cg + c) * k.h + iy) * k.w + ix]) *
                         w[((o * cg + c) * k.k + ky) * k.k + kx];
                }
            double want = k.bn_relu ? std::max(acc * scale[o] + shift[o], 0.0) : acc;
            double got_v = got[((b * k.o + o) * ho + y) * wo + xo];
            if (!(std::fabs(got_v - want) <= 1e-5 * double(cg * k.k * k.k) + 1e-5) && bad++ < 5)
              ADD_FAILURE() << "n " << b << " o " << o << " y " << y << " x " << xo << ": got " << got_v
                            << ", want " << want;
          }
    EXPECT_EQ(bad, 0);
  }
}

// main(x[n, K], w[K, N], b[N]): a dense layer with bias and LeakyReLU whose
// only symbolic extent is the batch.
std::string DenseModule(int64_t k, int64_t n) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(k)) + ", w: " +
         T(s(k) + ", " + s(n)) + ", b: " + T(s(n) + ",") +
         ") -> R.Tensor(dtype=\"float32\", ndim=2):\n        with R.dataflow():\n"
         "            m = R.matmul(x, w)\n            a = R.add(m, b)\n            gv = R.nn.leakyrelu(a, alpha=0.1)\n"
         "            R.output(gv)\n        return gv\n";
}

// A matmul is not peeled: the matmul schedule takes it (folding the batch
// into its rows), as when the batch is pinned. Peeled, a sum of at most
// kMaxWindowTaps terms went to the window reductions, which unrolled it into
// one expression (no FMA tiles; plcmos_v2's 64 -> 128 layer 14.8 us against
// 1.4 pinned). The numbers at batches 1, 2 and 7 (a full tile of 6 rows and
// a remainder), one and two threads.
TEST(ConvBatchPeelTest, DenseLayerTakesTheMatmulSchedule) {
  for (int64_t k : {32, 64}) {
    SCOPED_TRACE("K " + std::to_string(k));
    const int64_t cols = 128;
    PrimFunc f = LowerPrimFunc(DenseModule(k, cols), Options(1), "matmul");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(LoopsOverImages(f));
    EXPECT_FALSE(CountTiles(f).fma_widths.empty()) << "no FMA tiles: not the matmul schedule";
    for (int threads : {1, 2}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      auto mod = CompileAndLoad(DenseModule(k, cols), Options(threads), threads);
      ASSERT_NE(mod, nullptr);
      std::vector<float> w = RandomFloats(k * cols, 2), b = RandomFloats(cols, 3);
      for (int64_t n : {1, 2, 7}) {
        SCOPED_TRACE("n " + std::to_string(n));
        std::vector<float> x = RandomFloats(n * k, 10 + n);
        Result<Tensor> out =
            test_util::InvokeMain(*mod, {FloatTensor({n, k}, x), FloatTensor({k, cols}, w), FloatTensor({cols}, b)});
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, cols}));
        int bad = 0;
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < cols; ++j) {
            double acc = b[j];
            for (int64_t i = 0; i < k; ++i) acc += double(x[r * k + i]) * w[i * cols + j];
            double want = acc >= 0 ? acc : 0.1 * acc;
            double got = out->data<float>()[r * cols + j];
            if (!(std::fabs(got - want) <= 1e-5 * double(k) + 1e-5) && bad++ < 5)
              ADD_FAILURE() << "row " << r << " col " << j << ": got " << got << ", want " << want;
          }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

TEST(ConvBatchPeelTest, Numbers) {
  // Odd planes and channel counts (tails of the static tiles), pointwise
  // with and without an epilogue, strided and depthwise, one and two threads.
  CheckNumbers(Case{12, 16, 7, 9, 1, 1, 0, 1, true}, 1);
  CheckNumbers(Case{5, 24, 13, 11, 3, 1, 1, 1, true}, 2);
  CheckNumbers(Case{3, 16, 17, 15, 3, 2, 1, 1, false}, 1);
  CheckNumbers(Case{16, 16, 29, 31, 3, 2, 1, 16, true}, 1);
  CheckNumbers(Case{16, 16, 14, 14, 5, 1, 2, 16, true}, 2);
  CheckNumbers(Case{24, 24, 7, 7, 5, 1, 2, 24, true}, 1);  // one flat run, the epilogue in its stores
  CheckNumbers(Case{8, 16, 10, 10, 3, 1, 1, 2, false}, 1);
  // Four threads: batches below 4 take the serial image loop, 5 the parallel one.
  CheckNumbers(Case{5, 24, 13, 11, 3, 1, 1, 1, true}, 4);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
