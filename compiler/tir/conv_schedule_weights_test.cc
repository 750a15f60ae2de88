// Compiled convolutions with constant (packed at compile time) and pre-packed
// weights, Winograd, a pointwise conv of a concatenation and the zeroed tail
// of tiny packed planes, against a double-precision reference.
#include "compiler/tir/conv_schedule.h"

#include <gtest/gtest.h>

#include "compiler/tir/conv_schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace conv_test;  // NOLINT
using namespace ir;         // NOLINT
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

TEST(ConvScheduleNumbersTest, ConstantWeights) {
  std::vector<ConvCase> cases;
  ConvCase a{1, 16, 14, 14, 24, 3, 3};  // ResNet 3x3 with the fused epilogue
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  cases.push_back(a);
  ConvCase b{1, 3, 31, 29, 16, 7, 7};  // the stem: stride 2, padding 3
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 3;
  cases.push_back(b);
  ConvCase c{2, 8, 9, 10, 32, 3, 3};  // 2 groups of 16 output channels, batch 2, bn_relu
  c.groups = 2;
  c.pt = c.pl = 1;
  c.epilogue = "bn_relu";
  cases.push_back(c);
  ConvCase d{1, 5, 9, 9, 12, 3, 3};  // not packable: stays OIHW with leftover rows
  cases.push_back(d);
  ConvCase e{1, 8, 7, 7, 8, 1, 1};  // 1x1, one block
  cases.push_back(e);
  for (ConvCase k : cases) {
    k.weights = "constant";
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, PackedWeightArguments) {
  // kernel_layout "OIHW<b>o" weights passed at run time: blocks that are the
  // tile's rows (8) and blocks that are not (4, 16: rows index across blocks).
  ConvCase a{1, 6, 11, 13, 16, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.weights = "packed";
  for (int64_t block : {8, 4, 16}) {
    a.block = block;
    CheckConv(a, 1);
    CheckConv(a, 2);
  }
  ConvCase b{1, 4, 10, 10, 12, 3, 3};  // 12 = 3 blocks of 4: 8-row tile plus leftover rows
  b.weights = "packed";
  b.block = 4;
  b.epilogue = "bn_relu";
  CheckConv(b, 1);
}

TEST(ConvScheduleNumbersTest, PackedWeightsOnSmallPlanesTakeShiftPlanes) {
  // Constant (packed) weights on a 2-D plane of one tile: shift planes (kw
  // packed planes) where the plane needs fewer vectors than the halo tile,
  // with as many whole weight blocks as fit 24 accumulators: 4 x 4 and
  // 2 x 2 (one vector: 24 rows, then the 16 left of 40), 5 x 5 (two: one
  // block), a 2 x 2 kernel over 5 x 5 (4 x 4, one vector). The halo tile
  // stays for 6 x 6 (three vectors either way), a 2 x 2 kernel to 3 x 3
  // (narrower than a vector, few taps) and 7 x 7 (4 vectors: 6 rows, no
  // whole block).
  struct Want {
    ConvCase k;
    int64_t planes;
    std::vector<int64_t> rows;
  };
  auto padded = [](ConvCase k) {
    k.pt = k.pl = k.pb = k.pr = 1;
    return k;
  };
  for (const Want& want : {Want{padded({1, 16, 4, 4, 40, 3, 3}), 3, {24, 16}},
                           Want{padded({1, 8, 2, 2, 24, 3, 3}), 3, {24}},
                           Want{padded({1, 8, 5, 5, 16, 3, 3}), 3, {8}},
                           Want{{1, 8, 5, 5, 24, 2, 2}, 2, {24}},
                           Want{padded({1, 8, 6, 6, 16, 3, 3}), 1, {8}},
                           Want{{1, 8, 4, 4, 16, 2, 2}, 1, {8}},
                           Want{padded({1, 8, 7, 7, 16, 3, 3}), 1, {8}}}) {
    ConvCase k = want.k;
    k.weights = "packed";  // the census: weights in blocks of 8 as packing leaves them
    k.epilogue = "bias_relu6";
    Census c = Count(LowerConv(k, 1));
    EXPECT_EQ(PackedPlanes(c), want.planes) << k.Name();
    EXPECT_EQ(AccRows(c), want.rows) << k.Name();
    CheckConv(k, 1);
    k.weights = "constant";  // packed at compile time, as in a model
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  // Built for two threads (the tiles are the parallel tasks): one block a
  // tile, and planes narrower than a vector keep the halo tile.
  for (const Want& want : {Want{padded({1, 16, 4, 4, 40, 3, 3}), 3, {8}}, Want{padded({1, 8, 2, 2, 24, 3, 3}), 1, {8}}}) {
    ConvCase k = want.k;
    k.weights = "packed";
    Census c = Count(LowerConv(k, 2));
    EXPECT_EQ(PackedPlanes(c), want.planes) << k.Name();
    EXPECT_EQ(AccRows(c), want.rows) << k.Name();
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, PointwiseRemainderColumns) {
  // 7 x 7 = 49 = 48 + 1 and 14 x 14 = 196 = 4 x 48 + 4 columns with weights
  // packed in blocks of 8: the last columns are computed one 8-channel vector
  // each (RemainderTile), with the epilogue's residual read at them; a batch
  // of 2 (the remainder of image 0 must not read image 1).
  ConvCase a{1, 24, 7, 7, 40, 1, 1};
  a.weights = "packed";
  a.block = 8;
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 20, 14, 14, 16, 1, 1};
  b.weights = "packed";
  b.block = 8;
  b.epilogue = "bias_relu6";
  for (const ConvCase& k : {a, b}) {
    EXPECT_TRUE(Allocates(Count(LowerConv(k, 2)), "acc_rem")) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  // 16 x 16 = 256 columns: whole tiles, no remainder.
  ConvCase c{1, 24, 16, 16, 40, 1, 1};
  c.weights = "packed";
  c.block = 8;
  EXPECT_FALSE(Allocates(Count(LowerConv(c, 2)), "acc_rem"));
}

// The printed indices of the kernel's prefetch hints, in order.
std::vector<std::string> Prefetches(const PrimFunc& f) {
  struct Finder : StmtExprVisitor {
    std::vector<std::string> found;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* c = e.as<CallNode>(); c != nullptr && c->op == "prefetch") {
        found.push_back(text::PrintPrimExpr(c->args[0]));
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } finder;
  finder.VisitStmt(f->body);
  return finder.found;
}

TEST(ConvScheduleNumbersTest, PackedWeightPrefetch) {
  // Convs whose packed weight is 16 KiB or more prefetch the weight row
  // 4 KiB ahead in the tile's channel loop, clamped to the last row, one
  // hint a 64-byte line of the row. 1x1 (rows of 8 floats: 128 rows ahead,
  // 8 blocks x 64 channels = 512 rows): in place at 7^2, and strided with
  // padding through the packed input (a batch of 2). 3x3 (rows of 72
  // floats, 5 lines: 15 rows ahead) and grouped 3x3 (4 groups of 16 inputs
  // and 24 outputs, rows per block 16; the band scheme: groups of exactly 16
  // outputs take conv_grouped_block.h).
  ConvCase a{1, 64, 7, 7, 64, 1, 1};
  a.weights = "packed";
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 64, 9, 9, 64, 1, 1};
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.weights = "packed";
  b.epilogue = "bn_relu";
  ConvCase c{1, 16, 9, 9, 32, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  c.weights = "packed";
  ConvCase d{1, 64, 28, 28, 96, 3, 3};
  d.sh = d.sw = 2;
  d.pt = d.pl = d.pb = d.pr = 1;
  d.groups = 4;
  d.weights = "packed";
  d.epilogue = "bn_relu";
  struct Want {
    ConvCase k;
    size_t hints;
    std::string index;
  };
  for (const Want& w : {Want{a, 1, "+ 128, 511)"}, Want{b, 1, "+ 128, 511)"}, Want{c, 5, "+ 15, 63)"},
                        Want{d, 5, "+ 15, 191)"}}) {
    std::vector<std::string> hints = Prefetches(LowerConv(w.k, 1));
    ASSERT_EQ(hints.size(), w.hints) << w.k.Name();
    for (const std::string& h : hints) EXPECT_NE(h.find(w.index), std::string::npos) << h;
    CheckConv(w.k, 1);
    CheckConv(w.k, 2);
  }
  // Below 16 KiB (40 x 64 floats, 10 KiB) or weights read as given: no hint.
  ConvCase e{1, 64, 7, 7, 40, 1, 1};
  e.weights = "packed";
  ConvCase f{1, 64, 7, 7, 64, 1, 1};
  for (const ConvCase& k : {e, f}) EXPECT_TRUE(Prefetches(LowerConv(k, 1)).empty()) << k.Name();
}

TEST(ConvScheduleNumbersTest, ResNetLayerWithConstantWeights) {
  ConvCase a{1, 256, 14, 14, 256, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  a.weights = "constant";
  CheckConv(a, 2);
}

TEST(ConvScheduleNumbersTest, WinogradNumbers) {
  // winograd-conv2d (transform/winograd_conv2d.h) through the whole driver:
  // F(2x2) and F(4x4), each with the product laid out channel-major and
  // tile-major; outputs that the tile size divides and that it does not
  // (the last tile row / column partly used), padding 1, none, and on one
  // side only, a batch of 2, 16 and 32 input channels, weight rows padded (256
  // output channels), and the epilogues that fuse into the output transform.
  struct WinogradCase {
    ConvCase k;
    const char* transform;  // the output transform's kernel name part
    bool tile_major;
  };
  ConvCase a{1, 32, 24, 24, 40, 3, 3};  // 36 tiles of 4x4, 40 channels: channel-major
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 36, 19, 17, 16, 3, 3};  // 2 x 5 x 5 tiles of 4x4, 5 a row: tile-major
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_relu";
  ConvCase c{1, 32, 22, 21, 40, 3, 3};  // no padding: 20 x 19 outputs, 25 tiles of 4x4
  c.epilogue = "bias_relu6";
  ConvCase d{1, 32, 18, 18, 16, 3, 3};  // 17 x 17, 9 tiles of 2x2 a row
  d.pb = d.pr = 1;                      // bottom/right only
  ConvCase e{1, 32, 13, 13, 32, 3, 3};  // 13 x 13: 7 tiles of 2x2 a row
  e.pt = e.pl = e.pb = e.pr = 1;
  e.epilogue = "bn_residual_relu";
  ConvCase f = e;  // 256 output channels: 1 KiB weight rows, padded
  f.o = 256;
  f.epilogue = "bn_relu";
  ConvCase g{1, 16, 30, 29, 16, 3, 3};  // 30 x 29: 8 tiles of 4x4 a row; 16 input channels
  g.pt = g.pl = g.pb = g.pr = 1;
  // The input transform makes the padding itself (static sizes): top and
  // left only, 14 tiles of 4x4 a row (the last partial); and an image
  // whose tile rows all need the guard (F(4x4): 6 rows, padding 1 on each
  // side, 2 tile rows, both reading padding). 40 output channels: fewer
  // than 32 that 16 does not divide stay direct (winograd_conv2d.h).
  ConvCase h{1, 32, 56, 56, 40, 3, 3};
  h.pt = h.pl = 1;
  ConvCase i{1, 32, 6, 64, 40, 3, 3};
  i.pt = i.pl = i.pb = i.pr = 1;
  i.epilogue = "bn_relu";
  // Two images, channel-major, 27 x 25: the static F(4x4) transforms'
  // tile-major loops run over both images' tiles (partial last tile row
  // and column).
  ConvCase j{2, 32, 27, 25, 40, 3, 3};
  j.pt = j.pl = j.pb = j.pr = 1;
  j.epilogue = "bn_residual_relu";
  const std::vector<WinogradCase> cases = {{a, "f4x3", false}, {b, "f4x3", true}, {c, "f2x3", false},
                                           {d, "f2x3", false}, {e, "f2x3", true},  {f, "f2x3", true},
                                           {g, "f4x3", false}, {h, "f4x3", false}, {i, "f4x3", false},
                                           {j, "f4x3", false}};
  for (const WinogradCase& wc : cases) {
    ConvCase k = wc.k;
    k.weights = "constant";
    k.winograd = true;
    params::ParamList bound = BoundWeights(k);
    Result<IRModule> mod = Parse(ConvModule(k));
    ASSERT_TRUE(mod.ok());
    driver::CompileOptions options;
    options.params = bound;
    Result<IRModule> lowered = driver::LowerModule(*mod, options);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    bool conv = false, transform = false, tile_major = false;
    for (const ModuleEntry& e : lowered->entries) {
      if (!e.prim) continue;
      conv |= e.name.find("conv2d") != std::string::npos;
      transform |= e.name.find(std::string("winograd_output_") + wc.transform) != std::string::npos;
      tile_major |= e.name.find("winograd_matmul") != std::string::npos;
    }
    EXPECT_FALSE(conv) << k.Name();
    EXPECT_TRUE(transform) << k.Name() << ": expected " << wc.transform;
    EXPECT_EQ(tile_major, wc.tile_major) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

// ---------------------------------------------------------------- concat

// main(x0, x1[, x2], w) -> relu(conv2d(concat(x.., axis=1), w)), 1x1:
// SqueezeNet's squeeze layers after each fire module's concatenation.
struct ConcatConvCase {
  int64_t n, h, w, o;
  std::vector<int64_t> parts;  // channels of each concatenated input
  bool packed;                 // weight "OIHW8o"
  int64_t Channels() const {
    int64_t c = 0;
    for (int64_t p : parts) c += p;
    return c;
  }
  std::string Module() const {
    int64_t c = Channels();
    std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(";
    std::string names;
    for (size_t i = 0; i < parts.size(); ++i) {
      src += "x" + std::to_string(i) + ": " + T({n, parts[i], h, w}) + ", ";
      names += (i ? ", x" : "x") + std::to_string(i);
    }
    std::vector<int64_t> wshape = packed ? std::vector<int64_t>{o / 8, c, 1, 1, 8} : std::vector<int64_t>{o, c, 1, 1};
    src += "w: " + T(wshape) + ") -> " + T({n, o, h, w}) + ":\n        with R.dataflow():\n";
    src += "            cat = R.concat((" + names + "), axis=1)\n";
    src += "            c = R.nn.conv2d(cat, w" + std::string(packed ? ", kernel_layout=\"OIHW8o\"" : "") + ")\n";
    src += "            gv = R.nn.relu(c)\n            R.output(gv)\n        return gv\n";
    return src;
  }
};

void CheckConcatConv(const ConcatConvCase& k, int threads) {
  SCOPED_TRACE(k.Module() + " threads " + std::to_string(threads));
  int64_t c = k.Channels(), hw = k.h * k.w;
  // The kernel reads the concatenated inputs in place: nothing stores the
  // concatenation.
  Result<IRModule> parsed = Parse(k.Module());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  Result<IRModule> lowered = driver::LowerModule(*parsed, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  bool found = false;
  for (const ModuleEntry& e : lowered->entries) {
    if (!e.prim || e.name.find("conv2d") == std::string::npos) continue;
    found = true;
    Census census = Count(e.prim);
    EXPECT_EQ(std::count(census.stored.begin(), census.stored.end(), "cat"), 0) << e.name;
    EXPECT_GE(census.fma, static_cast<int>(k.parts.size())) << e.name;
  }
  EXPECT_TRUE(found);

  auto mod = Compile(k.Module(), threads, {}, false);
  ASSERT_NE(mod, nullptr);
  std::vector<std::vector<float>> xs;
  std::vector<Any> args;
  for (size_t i = 0; i < k.parts.size(); ++i) {
    xs.push_back(RandomFloats(k.n * k.parts[i] * hw, 10 + i));
    args.push_back(FloatTensor({k.n, k.parts[i], k.h, k.w}, xs.back()));
  }
  ConvCase shape{k.o, c, 1, 1, k.o, 1, 1};
  shape.c = c;
  shape.o = k.o;
  shape.weights = k.packed ? "packed" : "input";
  shape.block = 8;
  std::vector<float> w = RandomFloats(k.o * c, 2);
  args.push_back(WeightArg(shape, w));
  Result<Tensor> out = InvokeMain(*mod, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{k.n, k.o, k.h, k.w}));
  const float* got = out->data<float>();
  int bad = 0;
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t o = 0; o < k.o; ++o) {
      for (int64_t p = 0; p < hw; ++p) {
        double acc = 0;
        int64_t ch = 0;
        for (size_t i = 0; i < k.parts.size(); ++i) {
          for (int64_t q = 0; q < k.parts[i]; ++q, ++ch) {
            acc += double(xs[i][(n * k.parts[i] + q) * hw + p]) * w[o * c + ch];
          }
        }
        double want = acc > 0 ? acc : 0;
        float v = got[(n * k.o + o) * hw + p];
        if (!(std::fabs(v - want) <= 1e-5 * double(c) + 1e-5) && bad++ < 5) {
          ADD_FAILURE() << "n " << n << " o " << o << " p " << p << ": got " << v << ", want " << want;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(ConvScheduleNumbersTest, PointwiseConvOfAConcatenation) {
  // Three inputs of unequal channel counts, 7 x 7 (48 columns and a
  // remainder column, packed weights); two inputs, a batch of 2, 10 x 20
  // (a narrower last tile), leftover single-row channels, plain weights.
  ConcatConvCase a{1, 7, 7, 16, {8, 16, 5}, true};
  ConcatConvCase b{2, 10, 20, 21, {12, 12}, false};
  for (const ConcatConvCase& k : {a, b}) {
    CheckConcatConv(k, 1);
    CheckConcatConv(k, 2);
  }
}



// The [first, first + extent) column ranges that vectorized loops store
// zeros to in the packed input ("<input>_padded"), and its last extent.
struct PaddedZeros : StmtExprVisitor {
  int64_t len = -1;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const ForNode* vec = nullptr;
  void VisitStmt(const Stmt& s) override {
    if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name.size() > 7 &&
                                             a->buffer->name.compare(a->buffer->name.size() - 7, 7, "_padded") == 0) {
      if (const auto* e = a->buffer->shape.back().as<IntImmNode>()) len = e->value;
    }
    const auto* f = As<ForNode>(s);
    const ForNode* was = vec;
    if (f != nullptr && f->for_kind == ForKind::kVectorized) vec = f;
    if (const auto* st = As<BufferStoreNode>(s); st != nullptr && vec != nullptr) {
      const auto* zero = st->value.as<FloatImmNode>();
      const auto* add = st->indices.back().as<AddNode>();
      const auto* ext = vec->extent.as<IntImmNode>();
      if (zero != nullptr && zero->value == 0 && add != nullptr && ext != nullptr && st->buffer->name.find("_padded") != std::string::npos) {
        const auto* c = add->a.as<IntImmNode>();
        const auto* v = add->b.as<VarNode>();
        if (c != nullptr && v == vec->loop_var.get()) ranges.push_back({c->value, c->value + ext->value});
      }
    }
    StmtExprVisitor::VisitStmt(s);
    vec = was;
  }
};

TEST(ConvScheduleNumbersTest, TinyPlanesZeroThePackedTail) {
  // An SE block's excitation on a 1 x 1 plane (PP-OCRv4: 120 -> 480): a
  // 32-column tile computes one output column and reads 31 more of the
  // packed input, which are zeroed (left stale, that kernel took 570 us
  // instead of about 45 in PP-OCRv4's profile). With 15 input channels: a
  // reduction of 16 or more with an unpacked weight (a parameter here) is
  // a dot product of ScheduleDotConvs (conv_dot_schedule.h), with no packed
  // input.
  ConvCase k{1, 15, 1, 1, 480, 1, 1};
  k.epilogue = "bias_relu6";
  PaddedZeros z;
  z.VisitStmt(LowerConv(k, 1)->body);
  ASSERT_GT(z.len, 2);
  bool tail = false;
  for (const auto& r : z.ranges) tail |= r.second == z.len && r.first <= 2;
  EXPECT_TRUE(tail) << "the columns up to " << z.len << " are not zeroed";
  CheckConv(k, 1);
  CheckConv(k, 2);
}


}  // namespace
}  // namespace tir
}  // namespace kiln
