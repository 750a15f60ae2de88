// Half convolutions (--precision=fp16|bf16, docs/precision.md): the conv
// schedule takes float16 / bfloat16 data and weights widened by a cast, so
// the convolution is tiled (fma tiles, not the 7-deep generic nest), its
// fused epilogue stored without half arithmetic, and its numbers match a
// double-precision reference of the float32 convolution within the half
// rounding.
#include "compiler/tir/conv_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compiler/tir/conv_match.h"
#include "compiler/tir/conv_schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace conv_test;  // NOLINT
using namespace ir;         // NOLINT
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;
using transform::Precision;

driver::CompileOptions Options(const ConvCase& k, int threads, Precision p) {
  driver::CompileOptions o;
  o.num_threads_hint = threads;
  o.params = BoundWeights(k);
  o.winograd = false;
  o.precision = p;
  return o;
}

bool IsHalf(const DType& t) { return t.is_float() && t.bits == 16; }

// Loads of float16 / bfloat16 buffers (parameters, or the casts fusion put
// in front of the convolution).
int HalfLoads(const PrimFunc& f) {
  struct Visitor : StmtExprVisitor {
    int count = 0;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) count += IsHalf(l->buffer->dtype);
      StmtExprVisitor::VisitExpr(e);
    }
  } v;
  v.VisitStmt(f->body);
  return v.count;
}

// Half-typed arithmetic (binary operators, selects, calls other than loads
// and casts) anywhere in the function.
int HalfArithmetic(const PrimFunc& f) {
  struct Visitor : StmtExprVisitor {
    int count = 0;
    void VisitExpr(const PrimExpr& e) override {
      if (IsHalf(e.dtype()) && !e.as<BufferLoadNode>() && !e.as<CastNode>() && !e.as<FloatImmNode>()) ++count;
      StmtExprVisitor::VisitExpr(e);
    }
  } v;
  v.VisitStmt(f->body);
  return v.count;
}

// The half-precision build of `k` against the double reference of the
// float32 convolution + epilogue: every element within 4 rounding steps of
// the terms it sums (the data, the weight, the accumulator's rounding to
// half, the epilogue's operands and the stored value each round once).
void CheckHalf(const ConvCase& k, int threads, Precision p) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads) + (p == Precision::kFloat16 ? " fp16" : " bf16"));
  PrimFunc lowered = LowerConv(k, threads, BoundWeights(k), p);
  ASSERT_TRUE(lowered != nullptr);
  EXPECT_GT(HalfLoads(lowered), 0) << "the convolution does not read half: did mixed-precision run?";
  EXPECT_GE(CountFma(lowered), 1) << "the half convolution was not tiled";
  EXPECT_EQ(HalfArithmetic(lowered), 0) << "the epilogue computes in half";

  auto mod = test_util::CompileAndLoad(ConvModule(k), Options(k, threads, p), threads);
  ASSERT_NE(mod, nullptr);
  int64_t ho = k.Ho(), wo = k.Wo(), cg = k.c / k.groups, og = k.o / k.groups;
  std::vector<float> x = RandomFloats(k.n * k.c * k.h * k.w, 1), w = Weights(k), scale = RandomFloats(k.o, 3),
                     shift = RandomFloats(k.o, 4), r = RandomFloats(k.n * k.o * ho * wo, 5);
  std::vector<Any> args = {FloatTensor({k.n, k.c, k.h, k.w}, x), WeightArg(k, w), FloatTensor({k.o, 1, 1}, scale),
                           FloatTensor({k.o, 1, 1}, shift), FloatTensor({k.n, k.o, ho, wo}, r)};
  if (k.weights == "constant") args.erase(args.begin() + 1);
  Result<Tensor> out = InvokeMain(*mod, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const float* got = out->data<float>();
  const double eps = p == Precision::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  int bad = 0;
  double worst = 0;
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t o = 0; o < k.o; ++o) {
      int64_t g = o / og;
      for (int64_t y = 0; y < ho; ++y) {
        for (int64_t xo = 0; xo < wo; ++xo) {
          double acc = 0, mag = 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t ky = 0; ky < k.kh; ++ky) {
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t iy = y * k.sh + ky * k.dh - k.pt, ix = xo * k.sw + kx * k.dw - k.pl;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                double t = double(x[((n * k.c + g * cg + c) * k.h + iy) * k.w + ix]) * w[((o * cg + c) * k.kh + ky) * k.kw + kx];
                acc += t;
                mag += std::fabs(t);
              }
            }
          }
          int64_t at = ((n * k.o + o) * ho + y) * wo + xo;
          double want = acc, bound = mag;
          if (k.epilogue == "bias_relu6") {
            want = std::min(std::max(acc + shift[o], 0.0), 6.0);
            bound = mag + std::fabs(shift[o]);
          } else if (k.epilogue != "none") {
            want = acc * scale[o] + shift[o];
            bound = mag * std::fabs(scale[o]) + std::fabs(shift[o]);
            if (k.epilogue == "bn_residual_relu") want += r[at], bound += std::fabs(r[at]);
            want = want > 0 ? want : 0;
          }
          double err = std::fabs(got[at] - want);
          worst = std::max(worst, err / (bound + 1e-30));
          if (!(err <= 4 * eps * bound + 1e-6) && bad++ < 5) {
            ADD_FAILURE() << "n " << n << " o " << o << " y " << y << " x " << xo << ": got " << got[at] << ", want "
                          << want << " (bound " << 4 * eps * bound << ")";
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(worst, 0.0) << "no rounding at all: did anything run in half?";
}

std::vector<ConvCase> Cases() {
  std::vector<ConvCase> cases;
  ConvCase a{1, 16, 12, 12, 24, 3, 3};  // 3x3 padding 1, bound weights (packed at compile time, then half)
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  a.weights = "constant";
  cases.push_back(a);
  ConvCase b{1, 24, 14, 14, 32, 1, 1};  // pointwise: the tiles read the half input in place
  b.epilogue = "bias_relu6";
  b.weights = "constant";
  cases.push_back(b);
  ConvCase c{2, 8, 15, 13, 16, 3, 3};  // batch 2, stride 2, run-time weights, a half residual
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bn_residual_relu";
  cases.push_back(c);
  ConvCase d{1, 16, 10, 10, 32, 3, 3};  // 8 groups of 2 -> 4 channels, stride 1
  d.groups = 8;
  d.pt = d.pl = d.pb = d.pr = 1;
  d.epilogue = "bn_relu";
  cases.push_back(d);
  ConvCase e{1, 8, 9, 11, 12, 3, 3};  // 2 groups of 4 -> 6, no padding, no epilogue
  e.groups = 2;
  cases.push_back(e);
  return cases;
}

TEST(ConvScheduleHalfTest, Float16IsTiledAndWithinTheRounding) {
  int variant = 0;
  for (const ConvCase& k : Cases()) CheckHalf(k, (variant++ % 2) ? 2 : 1, Precision::kFloat16);
}

TEST(ConvScheduleHalfTest, BFloat16IsTiledAndWithinTheRounding) {
  int variant = 1;
  for (const ConvCase& k : Cases()) CheckHalf(k, (variant++ % 2) ? 2 : 1, Precision::kBFloat16);
}

TEST(ConvScheduleHalfTest, DepthwiseStaysFloat32) {
  // Depthwise convolutions (one input channel per group) are the depthwise
  // schedules', which take float32 only (ScheduledWithHalfOperands): at
  // fp16 mixed-precision leaves them float32, scheduled as in a float32
  // build, and ConvKernel does not see them in half.
  EXPECT_FALSE(tir::conv::ScheduledWithHalfOperands(16, 1));
  EXPECT_TRUE(tir::conv::ScheduledWithHalfOperands(8, 2));
  EXPECT_TRUE(tir::conv::ScheduledWithHalfOperands(1, 1));
  for (int stride : {1, 2}) {
    ConvCase d{1, 16, 10, 10, 16, 3, 3};
    d.groups = 16;
    d.sh = d.sw = stride;
    d.pt = d.pl = d.pb = d.pr = 1;
    d.epilogue = "bn_relu";
    PrimFunc f = LowerConv(d, 1, BoundWeights(d), Precision::kFloat16);
    ASSERT_TRUE(f != nullptr);
    EXPECT_EQ(HalfLoads(f), 0);
    EXPECT_LT(MaxLoopDepth(f->body), 7);
  }
}

TEST(ConvScheduleHalfTest, Float32BuildKeepsItsKernel) {
  // --precision=fp32 changes nothing: the float32 conv is tiled as before
  // and reads no half buffer.
  ConvCase a = Cases()[0];
  PrimFunc f = LowerConv(a, 1, BoundWeights(a), Precision::kFloat32);
  ASSERT_TRUE(f != nullptr);
  for (const auto& kv : f->buffer_map) EXPECT_FALSE(IsHalf(kv.second->dtype));
  EXPECT_GE(CountFma(f), 1);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
