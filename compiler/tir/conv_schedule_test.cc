// ScheduleConvs: what the rewrite produces for legalized conv2d (structure,
// no code generation), and the numbers of compiled convolutions of many
// shapes, strides, dilations, paddings and groups, with and without fused
// epilogues, against a double-precision reference (driver + VM).
#include "compiler/tir/conv_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/params/param_file.h"
#include "compiler/text/text.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t groups = 1;
  // none | bn_relu | bn_residual_relu | bias_relu6 | row_residual_relu (a
  // residual of shape (N, O, 1, Wo), broadcast over the output rows: the
  // epilogue cannot be stored through the flat view of the output)
  std::string epilogue = "none";
  // input: w is an argument (OIHW); constant: w is bound at compile time
  // (CompileOptions::params), so pack-constant-weights may pack it;
  // packed: w is an argument already in kernel_layout "OIHW<block>o".
  std::string weights = "input";
  int64_t block = 8;
  // The driver's winograd-conv2d pass (constant 3x3 weights); off, so that
  // these tests reach the direct convolution schedule.
  bool winograd = false;

  int64_t Ho() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t Wo() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  std::string Name() const {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "n%ld c%ld %ldx%ld o%ld k%ldx%ld s%ld,%ld d%ld,%ld p%ld,%ld,%ld,%ld g%ld %s",
                  long(n), long(c), long(h), long(w), long(o), long(kh), long(kw), long(sh), long(sw), long(dh),
                  long(dw), long(pt), long(pl), long(pb), long(pr), long(groups), epilogue.c_str());
    return std::string(buf) + " weights " + weights + (weights == "packed" ? std::to_string(block) : "");
  }
};

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

std::string T(const std::vector<int64_t>& d) { return "R.Tensor(" + Dims(d) + ", dtype=\"float32\")"; }

// main(x, w, scale, shift, r) -> epilogue(conv2d(x, w)); scale/shift are
// (O, 1, 1) as a batch norm in inference form broadcasts them.
std::string ConvModule(const ConvCase& k) {
  std::vector<int64_t> out = {k.n, k.o, k.Ho(), k.Wo()};
  std::vector<int64_t> w = {k.o, k.c / k.groups, k.kh, k.kw};
  if (k.weights == "packed") w = {k.o / k.block, k.c / k.groups, k.kh, k.kw, k.block};
  std::vector<int64_t> r = out;
  if (k.epilogue == "row_residual_relu") r[2] = 1;
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T({k.n, k.c, k.h, k.w}) +
                    ", w: " + T(w) + ", scale: " + T({k.o, 1, 1}) +
                    ", shift: " + T({k.o, 1, 1}) + ", r: " + T(r) + ") -> " + T(out) + ":\n";
  src += "        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + std::to_string(k.sh) + ", " + std::to_string(k.sw) +
         "], padding=[" + std::to_string(k.pt) + ", " + std::to_string(k.pl) + ", " + std::to_string(k.pb) + ", " +
         std::to_string(k.pr) + "], dilation=[" + std::to_string(k.dh) + ", " + std::to_string(k.dw) +
         "], groups=" + std::to_string(k.groups) +
         (k.weights == "packed" ? ", kernel_layout=\"OIHW" + std::to_string(k.block) + "o\"" : std::string()) + ")\n";
  if (k.epilogue == "none") {
    src += "            gv = c\n";
  } else if (k.epilogue == "bias_relu6") {  // MobileNetV2: bias, then ReLU6 as a clip
    src += "            e = R.add(c, shift)\n            gv = R.clip(e, min=0, max=6)\n";
  } else {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n";
    if (k.epilogue == "bn_residual_relu" || k.epilogue == "row_residual_relu") {
      src += "            f = R.add(e, r)\n            gv = R.nn.relu(f)\n";
    } else {
      src += "            gv = R.nn.relu(e)\n";
    }
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

Result<IRModule> Parse(const std::string& source) { return text::ParseModule(source, "conv_test.relax"); }

std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads, const params::ParamList& params,
                                          bool winograd) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  options.params = params;
  options.winograd = winograd;
  return CompileAndLoad(source, options, threads);
}

// Runs the compiled module on random inputs and checks every output element
// against a double reference of conv2d + epilogue.
PrimFunc LowerConv(const ConvCase& k, int threads, const params::ParamList& params = {});
int CountFma(const PrimFunc& f);

// The weights of case `k` (OIHW) and what the module takes for them.
std::vector<float> Weights(const ConvCase& k) { return RandomFloats(k.o * (k.c / k.groups) * k.kh * k.kw, 2); }

Tensor WeightArg(const ConvCase& k, const std::vector<float>& w) {
  int64_t cg = k.c / k.groups, taps = cg * k.kh * k.kw;
  if (k.weights != "packed") return FloatTensor({k.o, cg, k.kh, k.kw}, w);
  std::vector<float> p(w.size());  // [o / b, taps, o % b]
  for (int64_t o = 0; o < k.o; ++o)
    for (int64_t t = 0; t < taps; ++t) p[((o / k.block) * taps + t) * k.block + o % k.block] = w[o * taps + t];
  return FloatTensor({k.o / k.block, cg, k.kh, k.kw, k.block}, p);
}

params::ParamList BoundWeights(const ConvCase& k) {
  if (k.weights != "constant") return {};
  return {{"w", WeightArg(k, Weights(k))}};
}

// The largest rank of the kernel's buffer arguments: 5 when it reads a
// packed weight (every other argument has rank <= 4).
size_t MaxParamRank(const PrimFunc& f) {
  size_t rank = 0;
  for (const auto& kv : f->buffer_map) rank = std::max(rank, kv.second->shape.size());
  return rank;
}

// One input and one output channel per group, with a stride: left to the
// window schedule (pool_schedule.h).
bool StridedDepthwise(const ConvCase& k) {
  return k.c == k.groups && k.o == k.groups && (k.sh > 1 || k.sw > 1);
}

// The deepest nesting of loops in a statement.
int MaxLoopDepth(const Stmt& s) {
  struct Depth : StmtExprVisitor {
    int depth = 0, max = 0;
    void VisitStmt(const Stmt& st) override {
      bool loop = As<ForNode>(st) != nullptr;
      depth += loop;
      max = std::max(max, depth);
      StmtExprVisitor::VisitStmt(st);
      depth -= loop;
    }
  } d;
  d.VisitStmt(s);
  return d.max;
}

void CheckConv(const ConvCase& k, int threads) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
  // The convolution was rewritten (not left to the naive loop nest): into
  // tiles, or (strided depthwise) by the window schedule, which unrolls the
  // 3 reduction loops of the 7-deep nest.
  params::ParamList bound = BoundWeights(k);
  PrimFunc lowered = k.winograd ? nullptr : LowerConv(k, threads, bound);
  ASSERT_TRUE(lowered != nullptr || k.winograd);
  if (k.winograd) {
    // Checked by WinogradNumbers: the conv2d is gone from the module.
  } else if (StridedDepthwise(k)) {
    EXPECT_LT(MaxLoopDepth(lowered->body), 7);
  } else {
    EXPECT_GE(CountFma(lowered), 1);
  }
  auto mod = Compile(ConvModule(k), threads, bound, k.winograd);
  ASSERT_NE(mod, nullptr);
  int64_t ho = k.Ho(), wo = k.Wo(), cg = k.c / k.groups, og = k.o / k.groups;
  std::vector<float> x = RandomFloats(k.n * k.c * k.h * k.w, 1), w = Weights(k),
                     scale = RandomFloats(k.o, 3), shift = RandomFloats(k.o, 4);
  const bool row_residual = k.epilogue == "row_residual_relu";
  std::vector<int64_t> out_shape = {k.n, k.o, ho, wo}, r_shape = {k.n, k.o, row_residual ? 1 : ho, wo};
  std::vector<float> r = RandomFloats(k.n * k.o * r_shape[2] * wo, 5);
  std::vector<Any> args = {FloatTensor({k.n, k.c, k.h, k.w}, x), WeightArg(k, w),
                           FloatTensor({k.o, 1, 1}, scale), FloatTensor({k.o, 1, 1}, shift), FloatTensor(r_shape, r)};
  if (k.weights == "constant") args.erase(args.begin() + 1);
  Result<Tensor> out = InvokeMain(*mod, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), out_shape);
  const float* got = out->data<float>();
  int bad = 0;
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t o = 0; o < k.o; ++o) {
      int64_t g = o / og;
      for (int64_t y = 0; y < ho; ++y) {
        for (int64_t xo = 0; xo < wo; ++xo) {
          double acc = 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t ky = 0; ky < k.kh; ++ky) {
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t iy = y * k.sh + ky * k.dh - k.pt, ix = xo * k.sw + kx * k.dw - k.pl;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                acc += double(x[((n * k.c + g * cg + c) * k.h + iy) * k.w + ix]) *
                       w[((o * cg + c) * k.kh + ky) * k.kw + kx];
              }
            }
          }
          int64_t at = ((n * k.o + o) * ho + y) * wo + xo;
          double want = acc;
          if (k.epilogue == "bias_relu6") {
            want = std::min(std::max(acc + shift[o], 0.0), 6.0);
          } else if (k.epilogue != "none") {
            want = acc * scale[o] + shift[o];
            if (k.epilogue == "bn_residual_relu") want += r[at];
            if (row_residual) want += r[(n * k.o + o) * wo + xo];
            want = want > 0 ? want : 0;
          }
          double tol = 1e-5 * double(cg * k.kh * k.kw) + 1e-5;
          if (!(std::fabs(got[at] - want) <= tol) && bad++ < 5) {
            ADD_FAILURE() << "n " << n << " o " << o << " y " << y << " x " << xo << ": got " << got[at]
                          << ", want " << want;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// ---------------------------------------------------------------- structure

struct Census : StmtExprVisitor {
  int fma = 0, parallel = 0, nests7 = 0;
  int tail_loops = 0;  // shift-plane tail columns computed for a box of taps only
  std::vector<std::string> stored, allocated;
  std::vector<std::vector<int64_t>> allocated_shapes;  // static extents, -1 symbolic
  int depth = 0, max_depth = 0;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>()) fma += c->op == "fma";
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    if (f != nullptr) parallel += f->for_kind == ForKind::kParallel;
    if (f != nullptr) tail_loops += f->loop_var->name == "jj_tail";
    if (const auto* a = As<AllocateNode>(s)) {
      allocated.push_back(a->buffer->name);
      std::vector<int64_t> shape;
      for (const PrimExpr& d : a->buffer->shape) {
        const auto* imm = d.as<IntImmNode>();
        shape.push_back(imm != nullptr ? imm->value : -1);
      }
      allocated_shapes.push_back(shape);
    }
    if (const auto* st = As<BufferStoreNode>(s)) stored.push_back(st->buffer->name);
    StmtExprVisitor::VisitStmt(s);
  }
};

// The lowered PrimFunc holding the convolution.
PrimFunc LowerConv(const ConvCase& k, int threads, const params::ParamList& params) {
  Result<IRModule> mod = Parse(ConvModule(k));
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  options.params = params;
  options.winograd = k.winograd;
  Result<IRModule> lowered = driver::LowerModule(*mod, options);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  if (!lowered.ok()) return nullptr;
  for (const ModuleEntry& e : lowered->entries) {
    if (e.prim && e.name.find("conv2d") != std::string::npos && e.name.find("pack_weight") == std::string::npos) {
      return e.prim;
    }
  }
  ADD_FAILURE() << "no conv2d PrimFunc";
  return nullptr;
}

Census Count(const PrimFunc& f) {
  Census c;
  c.VisitStmt(f->body);
  return c;
}

int CountFma(const PrimFunc& f) { return Count(f).fma; }

// Whether the function allocates the packed input of the band scheme
// ("<input>_band") or of the whole-input scheme ("<input>_padded").
bool Allocates(const Census& c, const std::string& suffix) {
  for (const std::string& a : c.allocated)
    if (a.size() >= suffix.size() && a.compare(a.size() - suffix.size(), suffix.size(), suffix) == 0) return true;
  return false;
}

// Planes per channel of the packed input ("<input>_padded", dimension 2):
// stride phases (sh * sw) or shift planes (kw); -1 without one.
int64_t PackedPlanes(const Census& c) {
  for (size_t i = 0; i < c.allocated.size(); ++i) {
    const std::string& a = c.allocated[i];
    if (a.size() >= 7 && a.compare(a.size() - 7, 7, "_padded") == 0 && c.allocated_shapes[i].size() == 4) {
      return c.allocated_shapes[i][2];
    }
  }
  return -1;
}

TEST(ConvScheduleTest, ResNetBlockConvBecomesMicroKernelWithFusedEpilogue) {
  ConvCase k{1, 64, 56, 56, 64, 3, 3};
  k.pt = k.pl = k.pb = k.pr = 1;
  k.epilogue = "bn_residual_relu";
  PrimFunc f = LowerConv(k, 2);
  ASSERT_NE(f, nullptr);
  Census c = Count(f);
  EXPECT_EQ(c.fma, 1);  // 64 channels = 8 full row blocks: one kernel
  // The convolution's output and every intermediate of the epilogue are gone:
  // only the padded input, accumulators and the tile copy are allocated.
  for (const std::string& s : c.stored) EXPECT_TRUE(s == "x_padded" || s == "acc" || s == "tile" || s == "gv") << s;
  EXPECT_EQ(c.stored.back(), "gv");
  EXPECT_EQ(c.parallel, 2);  // packing and tiles
  // One thread: nothing parallel.
  EXPECT_EQ(Count(LowerConv(k, 1)).parallel, 0);
}

TEST(ConvScheduleTest, DepthwiseWithFewChannelsPacksTheWholeInputOnce) {
  // 2 channels of 14 x 14: too few bands, so the input is packed once
  // (parallel over channels and pieces of rows: 2 channels make 16 tasks);
  // the tile loop is too little work to be parallel.
  ConvCase k{1, 2, 14, 14, 2, 3, 3};
  k.groups = 2;
  k.pt = k.pl = k.pb = k.pr = 1;
  Census c = Count(LowerConv(k, 2));
  EXPECT_EQ(c.parallel, 1);
  EXPECT_TRUE(Allocates(c, "_padded"));
  EXPECT_FALSE(Allocates(c, "_band"));
  CheckConv(k, 2);
}

TEST(ConvScheduleTest, DepthwiseConvPacksEachChannelInItsTask) {
  // MobileNetV2's 3x3 depthwise with bias and ReLU6: one task per channel
  // (band = the whole plane), one kernel with the clip fused into its store.
  ConvCase k{1, 32, 112, 112, 32, 3, 3};
  k.groups = 32;
  k.pt = k.pl = k.pb = k.pr = 1;
  k.epilogue = "bias_relu6";
  Census c = Count(LowerConv(k, 2));
  EXPECT_EQ(c.fma, 1);
  EXPECT_EQ(c.parallel, 1);
  for (const std::string& s : c.stored) EXPECT_TRUE(s == "x_band" || s == "acc" || s == "tile" || s == "gv") << s;
}

// The rows (first extents) of the accumulator tiles ("acc") the function
// allocates, in order.
std::vector<int64_t> AccRows(const Census& c) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < c.allocated.size(); ++i)
    if (c.allocated[i] == "acc" && !c.allocated_shapes[i].empty()) rows.push_back(c.allocated_shapes[i][0]);
  return rows;
}

TEST(ConvScheduleTest, LeftoverChannelsGetOneTileOfTheirOwn) {
  // 12 = 8 + a tile of the 4 rows left (an 18 x 18 output built for two
  // threads: no shift planes, whose tiles are 6 rows at 7 x 7), not 4
  // one-row tiles.
  ConvCase k{1, 5, 20, 20, 12, 3, 3};
  PrimFunc f = LowerConv(k, 2);
  ASSERT_NE(f, nullptr);
  Census c = Count(f);
  EXPECT_EQ(c.fma, 2);
  EXPECT_EQ(AccRows(c), (std::vector<int64_t>{8, 4}));
  CheckConv(k, 2);
  // DeepCut's 1-D branches (a row of 21, kernels 1 x 9 to 1 x 12, 150 or
  // 100 channels): shift-plane tiles of 24 channels and one of the 6 or 4
  // left; odd channel counts and widths around them.
  struct Want {
    ConvCase k;
    std::vector<int64_t> rows;
  };
  for (const Want& want : {Want{{1, 32, 1, 21, 150, 1, 11}, {24, 6}}, Want{{1, 32, 1, 21, 100, 1, 12}, {24, 4}},
                           Want{{1, 32, 1, 21, 150, 1, 9}, {24, 6}}, Want{{2, 7, 1, 19, 29, 1, 5}, {24, 5}},
                           Want{{1, 9, 3, 23, 13, 1, 10}, {8, 5}}}) {
    ConvCase d = want.k;
    d.epilogue = "bias_relu6";
    Census dc = Count(LowerConv(d, 1));
    EXPECT_EQ(PackedPlanes(dc), d.kw) << d.Name();
    EXPECT_EQ(AccRows(dc), want.rows) << d.Name();
    CheckConv(d, 1);
    CheckConv(d, 2);
  }
}

TEST(ConvScheduleTest, NonConvolutionsAreLeftAlone) {
  // S[i] += A[i, j] is a reduction but no convolution.
  Var i = MakeVar("i"), j = MakeVar("j");
  Buffer a = MakeBuffer("A", {PrimExpr(8), PrimExpr(8)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(8)}, DType::Float32());
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(j), 0),
                                               Store(s, FloatImm(DType::Float32(), 0), {PrimExpr(i)}), nullptr);
  Stmt upd = Store(s, Load(s, {PrimExpr(i)}) + Load(a, {PrimExpr(i), PrimExpr(j)}), {PrimExpr(i)});
  auto f = std::make_shared<PrimFuncNode>();
  f->name = "f";
  for (const Buffer& b : {a, s}) {
    Var h = MakeVar(b->name + "_handle", HandleType());
    f->params.push_back(h);
    f->buffer_map.push_back({h, b});
  }
  f->body = std::make_shared<ForNode>(i, 0, 8, ForKind::kSerial,
                                      std::make_shared<ForNode>(j, 0, 8, ForKind::kSerial, Seq({init, upd})));
  PrimFunc pf = f;
  EXPECT_EQ(ScheduleConvs(pf, 8), pf);
}

// ---------------------------------------------------------------- numbers

TEST(ConvScheduleNumbersTest, PaddedStridedDilated) {
  std::vector<ConvCase> cases;
  ConvCase a{1, 3, 20, 22, 16, 3, 3};  // padding 1: the ResNet 3x3 shape
  a.pt = a.pl = a.pb = a.pr = 1;
  cases.push_back(a);
  ConvCase b{1, 3, 31, 29, 10, 7, 7};  // the ResNet stem: 7x7 stride 2 padding 3, odd sizes
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 3;
  cases.push_back(b);
  ConvCase c{2, 6, 13, 17, 9, 3, 2};  // batch 2, asymmetric padding, different strides and dilations
  c.sh = 1, c.sw = 3, c.dh = 2, c.dw = 1;
  c.pt = 2, c.pl = 0, c.pb = 1, c.pr = 3;
  cases.push_back(c);
  ConvCase d{1, 8, 7, 7, 20, 1, 1};  // 1x1, no padding
  cases.push_back(d);
  ConvCase e{1, 4, 5, 5, 3, 5, 5};  // the kernel covers the whole (unpadded) input: 1x1 output
  cases.push_back(e);
  ConvCase f{1, 2, 12, 12, 4, 3, 3};  // stride 2 without padding: the last rows and columns are unused
  f.sh = f.sw = 2;
  cases.push_back(f);
  ConvCase g{1, 16, 40, 3, 8, 3, 3};  // output narrower than a vector, tall
  g.pt = g.pl = g.pb = g.pr = 1;
  cases.push_back(g);
  ConvCase h{1, 2, 2, 2, 3, 3, 3};  // input smaller than the kernel, padding 1
  h.pt = h.pl = h.pb = h.pr = 1;
  cases.push_back(h);
  ConvCase i{1, 2, 4, 5, 3, 3, 3};  // padding larger than the kernel: whole output rows of zeros
  i.pt = 4, i.pl = 5, i.pb = 4, i.pr = 3;
  i.sh = 3, i.sw = 2;
  cases.push_back(i);
  int variant = 0;
  for (const ConvCase& k : cases) CheckConv(k, (variant++ % 2) ? 2 : 1);
}

TEST(ConvScheduleNumbersTest, Groups) {
  ConvCase a{1, 8, 10, 10, 12, 3, 3};  // 2 groups of 4 -> 6
  a.groups = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  ConvCase b{1, 16, 11, 9, 16, 3, 3};  // depthwise
  b.groups = 16;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.sh = b.sw = 2;
  ConvCase c{1, 6, 8, 8, 12, 3, 3};  // depthwise with multiplier 2
  c.groups = 6;
  c.pt = c.pl = 1;
  c.pb = c.pr = 0;
  for (const ConvCase& k : {a, b, c}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, GroupedConvPacksEachGroupInItsBands) {
  // Grouped convolutions of several output channels per group (RegNet's
  // group width 16): one band task per (image, group, rows), packing only
  // that group's input channels (GroupBands). Stride 1 and 2, odd sizes,
  // bands of equal rows and a shorter last one, groups of 12 output
  // channels (a row block of 8 and 4 single rows), epilogues, weights bound
  // (packed at compile time) and pre-packed; batch 2 with 12 channels per
  // group (numbers only).
  std::vector<ConvCase> cases;
  ConvCase a{1, 64, 30, 30, 64, 3, 3};  // 4 groups of 16, stride 2
  a.groups = 4;
  a.sh = a.sw = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  a.weights = "constant";
  cases.push_back(a);
  ConvCase b{1, 48, 28, 28, 48, 3, 3};  // 3 groups of 16, 28 rows: 2 bands of 14
  b.groups = 3;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_residual_relu";
  b.weights = "constant";
  cases.push_back(b);
  ConvCase c{2, 36, 13, 11, 36, 3, 3};  // batch 2, 3 groups of 12 in and out (numbers only)
  c.groups = 3;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bias_relu6";
  ConvCase d{1, 160, 7, 7, 160, 3, 3};  // 10 groups of 16 at 7 x 7 (one band each)
  d.groups = 10;
  d.pt = d.pl = d.pb = d.pr = 1;
  d.weights = "packed";
  cases.push_back(d);
  ConvCase e{1, 64, 23, 21, 96, 3, 3};  // 8 groups of 8 -> 12, stride 2, padding at the end
  e.groups = 8;
  e.sh = e.sw = 2;
  e.pb = e.pr = 1;
  e.epilogue = "bn_residual_relu";
  e.weights = "constant";
  cases.push_back(e);
  for (const ConvCase& k : cases) {
    params::ParamList bound = BoundWeights(k);
    Census census = Count(LowerConv(k, 2, bound));
    EXPECT_TRUE(Allocates(census, "_band")) << k.Name();
    EXPECT_FALSE(Allocates(census, "_padded")) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  for (const std::string& weights : {"input", "constant"}) {
    c.weights = weights;
    CheckConv(c, 1);
    CheckConv(c, 2);
  }
  // Two groups of a 5 x 5 plane are too few band tasks: the whole input,
  // packed once.
  ConvCase f{1, 32, 5, 5, 32, 3, 3};
  f.groups = 2;
  f.pt = f.pl = f.pb = f.pr = 1;
  f.weights = "constant";
  Census census = Count(LowerConv(f, 2, BoundWeights(f)));
  EXPECT_TRUE(Allocates(census, "_padded"));
  EXPECT_FALSE(Allocates(census, "_band"));
  CheckConv(f, 1);
  CheckConv(f, 2);
}

TEST(ConvScheduleNumbersTest, Depthwise) {
  // MobileNetV2-like depthwise convolutions (one task per channel): odd
  // sizes, stride 1 and 2, symmetric and TF-style asymmetric padding, bias +
  // ReLU6, channel multiplier 2.
  std::vector<ConvCase> cases;
  ConvCase a{1, 24, 29, 31, 24, 3, 3};
  a.groups = 24;
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bias_relu6";
  cases.push_back(a);
  ConvCase b{1, 16, 23, 21, 16, 3, 3};  // stride 2
  b.groups = 16;
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 1;
  cases.push_back(b);
  ConvCase c{1, 40, 7, 7, 40, 3, 3};  // the last stages' 7 x 7
  c.groups = 40;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bias_relu6";
  cases.push_back(c);
  ConvCase d{1, 12, 15, 15, 12, 3, 3};  // stride 2, padding only at the end
  d.groups = 12;
  d.sh = d.sw = 2;
  d.pb = d.pr = 1;
  d.epilogue = "bias_relu6";
  cases.push_back(d);
  // Stride 2 with rows of 13 and 27 interior columns: split into even and
  // odd columns (window_deinterleave.h), the halves explicit vectors.
  for (int64_t w : {28, 56}) {
    ConvCase g{1, 3, 9, w, 3, 3, 3};
    g.groups = 3;
    g.sh = g.sw = 2;
    g.pt = g.pl = g.pb = g.pr = 1;
    g.epilogue = "bias_relu6";
    cases.push_back(g);
  }
  ConvCase e{1, 8, 10, 12, 16, 3, 3};  // multiplier 2
  e.groups = 8;
  e.pt = e.pl = e.pb = e.pr = 1;
  cases.push_back(e);
  ConvCase f{2, 9, 6, 5, 9, 5, 5};  // batch 2, 5 x 5 taps wider than the input
  f.groups = 9;
  f.pt = f.pl = f.pb = f.pr = 2;
  cases.push_back(f);
  for (const ConvCase& k : cases) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_EQ(Allocates(census, "_band"), !StridedDepthwise(k)) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, DepthwiseBands) {
  // Depthwise with few channels: several bands per image and channel, the
  // last one shorter than the others.
  ConvCase a{1, 2, 41, 40, 2, 3, 3};  // 4 bands of 13 rows (the last 2)
  a.groups = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  ConvCase b{2, 3, 60, 60, 6, 3, 3};  // batch 2, multiplier 2: bands of 29, 29 and 2 rows
  b.groups = 3;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_residual_relu";
  ConvCase c{1, 2, 121, 119, 2, 3, 3};  // stride 2: 7 bands of 9 rows (the last 7)
  c.groups = 2;
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bias_relu6";
  // Rows stored whole (their last lanes spill into the next row, which is
  // stored next) except a band's last row, with a residual read at the
  // spilled columns too: rows of 14 in 16-column tiles, 4 bands.
  ConvCase d{1, 3, 100, 14, 3, 3, 3};
  d.groups = 3;
  d.pt = d.pl = d.pb = d.pr = 1;
  d.epilogue = "bn_residual_relu";
  // Two column tiles per row, the second holding 6 output columns.
  ConvCase e{1, 2, 30, 70, 2, 3, 3};
  e.groups = 2;
  e.pt = e.pl = e.pb = e.pr = 1;
  e.epilogue = "bn_residual_relu";
  // Rows of 15 in 32-column tiles: a row's spill covers the next row and
  // two columns of the one after. (Spilling into a later band's rows goes
  // unseen with one thread, which computes that band afterwards; this case
  // runs the path, the numbers check the rows it stores.)
  ConvCase f{1, 3, 100, 15, 3, 3, 3};
  f.groups = 3;
  f.pt = f.pl = f.pb = f.pr = 1;
  f.epilogue = "bias_relu6";
  for (const ConvCase& k : {a, b, c, d, e, f}) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_EQ(Allocates(census, "_band"), !StridedDepthwise(k)) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, FusedEpilogues) {
  ConvCase a{1, 16, 14, 14, 24, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  ConvCase b = a;
  b.epilogue = "bn_residual_relu";
  b.o = 21;  // row blocks of 8 and single rows
  ConvCase c{2, 3, 23, 23, 8, 7, 7};
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 3;
  c.epilogue = "bn_residual_relu";
  for (const ConvCase& k : {a, b, c}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleTest, PointwiseConvReadsItsInputInPlace) {
  // 1x1, stride 1, no padding: no packed copy of the input; a strided or
  // padded 1x1 still packs.
  ConvCase k{1, 24, 14, 14, 40, 1, 1};
  k.epilogue = "bias_relu6";
  Census c = Count(LowerConv(k, 2));
  EXPECT_FALSE(Allocates(c, "_padded"));
  EXPECT_FALSE(Allocates(c, "_band"));
  // Flat write-back: the accumulators go straight to the output, with no
  // tile copy for the row-segment arithmetic.
  EXPECT_FALSE(Allocates(c, "tile"));
  ConvCase strided = k;
  strided.sh = strided.sw = 2;
  EXPECT_TRUE(Allocates(Count(LowerConv(strided, 2)), "_padded"));
}

TEST(ConvScheduleTest, StridedPointwisePacksOnlyThePhaseItReads) {
  // A 1x1 kernel with a stride reads one row and column phase of the input:
  // one packed plane, not sh x sw. Even and odd sizes, padding (the phase
  // then starts in the padding), unequal strides, a batch, two threads.
  ConvCase a{1, 32, 28, 28, 40, 1, 1};
  a.sh = a.sw = 2;
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 24, 13, 15, 16, 1, 1};
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 1;
  ConvCase c{1, 16, 17, 19, 24, 1, 1};
  c.sh = 3, c.sw = 2;
  for (const ConvCase& k : {a, b, c}) {
    EXPECT_EQ(PackedPlanes(Count(LowerConv(k, 2))), 1) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleTest, PointwiseLastColumnTileIsNarrower) {
  // 13 x 13 = 169 columns: three 48-wide tiles and a 32-wide last one (a
  // kernel of its own), not four 48-wide tiles; 16 x 16 = 256 columns need
  // no narrower tile (256 = 16 x 16: 32-wide tiles all through).
  ConvCase k{1, 24, 13, 13, 40, 1, 1};
  EXPECT_EQ(Count(LowerConv(k, 1)).fma, 2);
  ConvCase even{1, 24, 16, 16, 40, 1, 1};
  EXPECT_EQ(Count(LowerConv(even, 1)).fma, 1);
}

TEST(ConvScheduleNumbersTest, PointwiseInPlace) {
  // H * W of 49 (the last column tile moved back over the first), 200 (a
  // partial last tile), 16 (one tile), 15 (too small: packed), a batch of 2
  // (the last tile of image 0 must not read image 1), constant weights,
  // leftover single-row channels, fused epilogues.
  ConvCase a{1, 32, 7, 7, 40, 1, 1};
  a.epilogue = "bias_relu6";
  ConvCase b{1, 24, 10, 20, 36, 1, 1};
  b.epilogue = "bn_residual_relu";
  ConvCase c{2, 16, 4, 4, 24, 1, 1};
  ConvCase d{1, 8, 3, 5, 16, 1, 1};
  ConvCase e{2, 20, 7, 7, 33, 1, 1};
  e.weights = "constant";
  e.epilogue = "bn_relu";
  // A narrower last column tile (169 = 3 x 48 + 25: 32 wide), a batch of 2,
  // leftover channels, a residual read through it.
  ConvCase f{2, 24, 13, 13, 41, 1, 1};
  f.epilogue = "bn_residual_relu";
  // An input over 512 KB with 3 row blocks: each column tile's row blocks
  // run back to back (RowBlocksFastest), 61 x 59 = 3599 columns (a partial
  // last tile).
  ConvCase g{1, 40, 61, 59, 24, 1, 1};
  g.epilogue = "bn_residual_relu";
  // Remainder tiles (packed weights, a few last columns one 8-channel
  // vector each) with their partial sums over interleaved channels: 49 =
  // 48 + 1 column (4 sums; 37 channels, one left over), 50 = 48 + 2 (2
  // sums; 19 channels) in a batch of 2.
  ConvCase h{1, 37, 7, 7, 24, 1, 1};
  h.weights = "packed";
  h.epilogue = "bias_relu6";
  ConvCase i{2, 19, 5, 10, 16, 1, 1};
  i.weights = "packed";
  i.epilogue = "bn_residual_relu";
  for (const ConvCase& k : {a, b, c, d, e, f, g, h, i}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

// The value of the tile loop's `rb` (row block) let, printed; "" if none.
std::string RowBlockIndex(const PrimFunc& f) {
  struct Finder : StmtExprVisitor {
    std::string found;
    void VisitStmt(const Stmt& s) override {
      if (const auto* l = As<LetStmtNode>(s)) {
        if (l->var->name == "rb" && found.empty()) found = text::PrintPrimExpr(l->value);
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } finder;
  finder.VisitStmt(f->body);
  return finder.found;
}

TEST(ConvScheduleNumbersTest, PointwiseColumnChunks) {
  // An input over 512 KB (64 x 45 x 47 floats, 529 KB) and 9 row blocks:
  // the tile loop runs every row block over a chunk of column tiles (21 of
  // 48 columns: 256 KB of input) before the next chunk, the last chunk
  // holding the 3 tiles left (45 = 21 + 21 + 3), so the row block divides
  // by the chunk's width, min(21, 45 - first). A batch of 2 and a residual
  // epilogue; a partial last column tile (2115 = 44 x 48 + 3).
  ConvCase k{1, 64, 45, 47, 72, 1, 1};
  k.epilogue = "bn_residual_relu";
  ConvCase batch = k;
  batch.n = 2;
  for (const ConvCase& c : {k, batch}) {
    std::string rb = RowBlockIndex(LowerConv(c, 2));
    EXPECT_NE(rb.find("T.min(21"), std::string::npos) << c.Name() << ": " << rb;
    CheckConv(c, 1);
    CheckConv(c, 2);
  }
  // An input that L2 keeps (24 x 45 x 47 floats, 198 KB): column tiles
  // fastest over the whole plane, the row block a plain division.
  ConvCase small{1, 24, 45, 47, 72, 1, 1};
  EXPECT_EQ(RowBlockIndex(LowerConv(small, 2)).find("T.min"), std::string::npos);
}

TEST(ConvScheduleNumbersTest, PointwiseOnTinyPlanesIsMatrixVector) {
  // Squeeze-and-excitation FCs: 1x1 on a pooled 1 x 1 plane (and 2 x 2),
  // packed weights. No packed input and no 16-column tile: each row block
  // is one RemainderTile (8 channels per vector, partial sums over
  // interleaved channels), 4 FMAs per unrolled group of 4 input channels.
  ConvCase a{1, 96, 1, 1, 24, 1, 1};
  a.weights = "packed";
  a.epilogue = "bias_relu6";
  ConvCase b{2, 37, 1, 1, 16, 1, 1};
  b.weights = "packed";
  b.epilogue = "bn_residual_relu";
  ConvCase c{1, 20, 2, 2, 32, 1, 1};
  c.weights = "packed";
  for (const ConvCase& k : {a, b, c}) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_FALSE(Allocates(census, "_padded")) << k.Name();
    EXPECT_TRUE(std::count(census.allocated.begin(), census.allocated.end(), "acc_rem") == 1) << k.Name();
    EXPECT_TRUE(std::count(census.allocated.begin(), census.allocated.end(), "acc") == 0) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, RowTilesForFewTaps) {
  // Few taps per output (a 3-channel stem, grouped 3x3 of 4 channels per
  // group): tiles of one output row, stored as whole vectors (no copy of
  // the accumulators), the last column tile moved back to end at the row's
  // end. SqueezeNet's stem shape with 16 channels: 111 columns, 32 + 32 + a
  // 48-wide last tile from column 63; 64 columns in two tiles with a batch
  // of 2, leftover single-row channels, a residual; groups.
  ConvCase a{1, 3, 224, 224, 16, 3, 3};
  a.sh = a.sw = 2;
  a.epilogue = "bn_relu";
  ConvCase b{2, 3, 64, 64, 21, 3, 3};
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_residual_relu";
  ConvCase c{1, 8, 66, 66, 16, 3, 3};
  c.groups = 2;
  for (const ConvCase& k : {a, b, c}) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_TRUE(Allocates(census, "_padded")) << k.Name();
    EXPECT_FALSE(Allocates(census, "tile")) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  // Many taps (32 x 3 x 3 = 288): the flat tiles and their row-segment
  // write-back.
  ConvCase many{1, 32, 30, 30, 16, 3, 3};
  // (Built for two threads: with one, its 28 x 28 plane takes shift planes.)
  EXPECT_TRUE(Allocates(Count(LowerConv(many, 2)), "tile"));
}

TEST(ConvScheduleNumbersTest, ShiftPlanesForSmallPlanes) {
  // Stride 1, weights read as given, output planes of at most 64 elements:
  // the input is packed as one plane per kernel column (kw planes, rows Wo
  // apart) and a tile is a whole plane (49 = 3 vectors of 16 and one of 1).
  // 7x7 with a residual epilogue; 5x5 in a batch of 2 with 13 channels (a
  // 12-row tile and a leftover row); 6x6 without padding; a 1x3 kernel; a
  // dilated 3x3; asymmetric padding. Planes of several tiles: 14 x 14 =
  // 4 x 48 + a last tile of 4 columns (20 channels: leftover rows too),
  // 12 x 12 = 3 x 48.
  ConvCase a{1, 16, 7, 7, 24, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 8, 5, 5, 13, 3, 3};
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bias_relu6";
  ConvCase c{1, 4, 8, 8, 16, 3, 3};
  ConvCase d{1, 5, 7, 9, 8, 1, 3};
  d.pl = d.pr = 1;
  d.epilogue = "bn_relu";
  ConvCase e{1, 3, 9, 9, 8, 3, 3};
  e.dh = e.dw = 2;
  e.pt = e.pl = e.pb = e.pr = 1;
  ConvCase f{1, 6, 6, 6, 10, 3, 3};
  f.pt = 2;
  f.pl = 1;
  f.pr = 2;
  ConvCase g{1, 8, 14, 14, 20, 3, 3};
  g.pt = g.pl = g.pb = g.pr = 1;
  g.epilogue = "bn_residual_relu";
  ConvCase h{1, 4, 12, 12, 8, 3, 3};
  h.pt = h.pl = h.pb = h.pr = 1;
  // An epilogue the flat store cannot take (a residual broadcast over the
  // rows): the tile is copied out and stored row segment by row segment,
  // 49 columns in one tile and 14 x 14 in several.
  ConvCase i = a;
  i.epilogue = "row_residual_relu";
  ConvCase j = g;
  j.epilogue = "row_residual_relu";
  for (const ConvCase* kp : {&a, &b, &c, &d, &e, &f, &g, &h, &i, &j}) {
    const ConvCase& k = *kp;
    Census census = Count(LowerConv(k, 2));
    EXPECT_EQ(PackedPlanes(census), k.kw) << k.Name();  // one plane per kernel column
    // The row-broadcast residual is fused and goes through the copied tile.
    EXPECT_EQ(Allocates(census, "tile"), k.epilogue == "row_residual_relu") << k.Name();
    // Whole-plane tiles whose tail columns read only padding at some taps
    // skip those taps for the tail: 7 x 7 with padding 1 (the 49th column
    // reads the input at 4 of 9 taps) and the dilated 9 x 9 -> 7 x 7. In the
    // 5 x 5 and the asymmetric 6 x 7 every tap reaches some tail column, 8 x 8
    // has no tail, and multi-tile planes are left alone.
    bool skips = kp == &a || kp == &e || kp == &i;
    EXPECT_EQ(census.tail_loops > 0, skips) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  // 28 x 28 (784 columns): shift planes in kernels built for one thread
  // only (with two, the three packed copies are shared between the cores).
  {
    ConvCase m{1, 4, 28, 28, 8, 3, 3};
    m.pt = m.pl = m.pb = m.pr = 1;
    for (int threads : {1, 2}) {
      EXPECT_EQ(PackedPlanes(Count(LowerConv(m, threads))), threads == 1 ? m.kw : 1) << "threads " << threads;
      CheckConv(m, threads);
    }
  }
  // Not for larger planes (18 x 18 = 324 columns), strides, or packed weights.
  ConvCase big{1, 8, 18, 18, 16, 3, 3};
  big.pt = big.pl = big.pb = big.pr = 1;
  ConvCase strided{1, 8, 13, 13, 16, 3, 3};
  strided.sh = strided.sw = 2;
  ConvCase packed = a;
  packed.weights = "packed";
  for (const ConvCase& k : {big, strided, packed}) {
    EXPECT_EQ(PackedPlanes(Count(LowerConv(k, 2))), k.sh * k.sw) << k.Name();
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, ResNetLayerShapes) {
  // Two layers of issue 4 at their real sizes (the others differ only in
  // channel counts), so the tiles, edges and threads are the benchmark's.
  ConvCase a{1, 256, 14, 14, 256, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  CheckConv(a, 2);
  ConvCase b{1, 3, 224, 224, 64, 7, 7};
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 3;
  // The stem's 147 taps per output still run row tiles (no accumulator copy).
  EXPECT_FALSE(Allocates(Count(LowerConv(b, 2)), "tile"));
  CheckConv(b, 2);
}

// ------------------------------------------------------- packed weights

TEST(ConvScheduleTest, ConstantWeightsArePackedAndReadInBlocks) {
  ConvCase k{1, 16, 14, 14, 24, 3, 3};
  k.pt = k.pl = k.pb = k.pr = 1;
  k.epilogue = "bn_residual_relu";
  k.weights = "constant";
  PrimFunc f = LowerConv(k, 2, BoundWeights(k));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(MaxParamRank(f), 5u);  // the kernel reads the packed (3, 16, 3, 3, 8) constant
  EXPECT_EQ(CountFma(f), 1);  // 24 channels = 3 blocks: one 8-row kernel, no leftovers
  // Not packable (12 channels): the plain weight, as before.
  k.o = 12;
  f = LowerConv(k, 2, BoundWeights(k));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(MaxParamRank(f), 4u);
}

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
  ConvCase a{1, 32, 24, 24, 24, 3, 3};  // 36 tiles of 4x4, 24 channels: channel-major
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
  // side, 2 tile rows, both reading padding).
  ConvCase h{1, 32, 56, 56, 24, 3, 3};
  h.pt = h.pl = 1;
  ConvCase i{1, 32, 6, 64, 24, 3, 3};
  i.pt = i.pl = i.pb = i.pr = 1;
  i.epilogue = "bn_relu";
  const std::vector<WinogradCase> cases = {{a, "f4x3", false}, {b, "f4x3", true}, {c, "f2x3", false},
                                           {d, "f2x3", false}, {e, "f2x3", true},  {f, "f2x3", true},
                                           {g, "f4x3", false}, {h, "f4x3", false}, {i, "f4x3", false}};
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

}  // namespace
}  // namespace tir
}  // namespace kiln

namespace kiln {
namespace tir {
namespace {

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
  // instead of about 45 in PP-OCRv4's profile).
  ConvCase k{1, 120, 1, 1, 480, 1, 1};
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
