// The default schedule's vector split rules (default_schedule.h):
// - aligned: a vectorized loop whose index divides its variable by constants
//   (a transpose folded into a reshape) is split so that each vector reads
//   contiguous elements. Checks the lowered loops (the chosen width and
//   unroll, and where the rule must not apply) and the numbers of compiled
//   [b, h, s, d] -> [b, s, h * d] permutes, static and symbolic, 1 and 2
//   threads, against a plain reference.
// - explicit: softmax's and the norms' loops, and loops that call math,
//   become 16-lane vectors two per unrolled step (static rows) or that and a
//   tail loop (symbolic rows); a plain bias add is left to LLVM; a norm's
//   static loops are split before the row schedule, softmax's after. Their
//   numbers are reduce_schedule_test's (softmax, layer_norm, rms_norm of
//   static and symbolic rows and columns).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/stmt_functor.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

// main(x: [b, h, s, d]) -> permute_dims(0, 2, 1, 3) reshaped to [b, s, h * d];
// `sym` names a symbolic s ("" for none).
std::string Module(int64_t b, int64_t h, int64_t s, int64_t d, const std::string& sym) {
  std::string sd = sym.empty() ? std::to_string(s) : "\"" + sym + "\"";
  std::string in = "R.Tensor((" + std::to_string(b) + ", " + std::to_string(h) + ", " + sd + ", " + std::to_string(d) +
                   "), dtype=\"float32\")";
  std::string out =
      "R.Tensor((" + std::to_string(b) + ", " + sd + ", " + std::to_string(h * d) + "), dtype=\"float32\")";
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + in + ") -> " + out + ":\n";
  if (!sym.empty()) src += "        " + sym + " = T.int64()\n";
  src += "        with R.dataflow():\n";
  src += "            t = R.permute_dims(x, axes=[0, 2, 1, 3])\n";
  src += "            y = R.reshape(t, R.shape([" + std::to_string(b) + ", " + (sym.empty() ? std::to_string(s) : sym) +
         ", " + std::to_string(h * d) + "]))\n";
  src += "            R.output(y)\n        return y\n";
  return src;
}

// The vectorized loops of `f` (extents) and the unrolled loops directly
// around them (extents), in order.
struct VectorLoops : StmtExprVisitor {
  std::vector<int64_t> vector_widths, unrolls;
  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      const auto* ext = f->extent.as<IntImmNode>();
      if (f->for_kind == ForKind::kUnrolled && ext != nullptr) {
        if (const auto* in = As<ForNode>(f->body))
          if (in->for_kind == ForKind::kVectorized) unrolls.push_back(ext->value);
      }
      if (f->for_kind == ForKind::kVectorized) vector_widths.push_back(ext != nullptr ? ext->value : -1);
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

VectorLoops LoopsOf(const std::string& source, int threads) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  PrimFunc f = LowerPrimFunc(source, options, "reshape");
  VectorLoops v;
  if (f) v.VisitStmt(f->body);
  return v;
}

// main(x) -> `expr` over x: (`dims`), for the explicit rule's checks.
std::string Unary(const std::string& dims, const std::string& expr, const std::string& sym = "") {
  std::string t = "R.Tensor((" + dims + "), dtype=\"float32\")";
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + t + ") -> " + t + ":\n";
  if (!sym.empty()) src += "        " + sym + " = T.int64()\n";
  src += "        with R.dataflow():\n            y = " + expr + "\n            R.output(y)\n        return y\n";
  return src;
}

VectorLoops LoopsOfNamed(const std::string& source, const std::string& name_part) {
  driver::CompileOptions options;
  options.num_threads_hint = 1;
  PrimFunc f = LowerPrimFunc(source, options, name_part);
  VectorLoops v;
  if (f) v.VisitStmt(f->body);
  return v;
}

int Count(const std::vector<int64_t>& v, int64_t x) { return static_cast<int>(std::count(v.begin(), v.end(), x)); }

TEST(ExplicitVectorSplitTest, SoftmaxRowsTakeSixteenLanesTwoPerStep) {
  // Static rows of 128: the exp and the output loops, 16 lanes under an
  // unroll by 2 (the lane reductions keep their own loops: 64 lanes, then
  // the tree's halving steps); no 128-lane loop is left.
  VectorLoops s = LoopsOfNamed(Unary("64, 128", "R.nn.softmax(x, axis=-1)"), "softmax");
  EXPECT_EQ(s.unrolls, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Count(s.vector_widths, 128), 0);
  // Symbolic rows and columns: the same, then a vectorized loop over the
  // rest (symbolic extent); each reduction's last elements as a 16-lane
  // window in a loop of one unrolled iteration (reduce_schedule.cc).
  VectorLoops y = LoopsOfNamed(Unary("4, \"n\"", "R.nn.softmax(x, axis=-1)", "n"), "softmax");
  EXPECT_EQ(y.unrolls, (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(Count(y.vector_widths, -1), 2);
  // Rows of 48 (not a multiple of 32): LLVM's loops, as before.
  VectorLoops n = LoopsOfNamed(Unary("64, 48", "R.nn.softmax(x, axis=-1)"), "softmax");
  EXPECT_TRUE(n.unrolls.empty());
}

// main(x: (dims), g, b: (cols,)) -> `expr` (a norm over the last axis).
std::string Norm(const std::string& dims, const std::string& cols, const std::string& expr, const std::string& sym = "") {
  std::string t = "R.Tensor((" + dims + "), dtype=\"float32\")", v = "R.Tensor((" + cols + ",), dtype=\"float32\")";
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + t + ", g: " + v + ", b: " + v +
                    ") -> " + t + ":\n";
  if (!sym.empty()) src += "        " + sym + " = T.int64()\n";
  src += "        with R.dataflow():\n            y = " + expr + "\n            R.output(y)\n        return y\n";
  return src;
}

// The number of top-level loops of the function `name_part` names (a fused
// row chain is one loop; a norm's sums outside it make more).
int TopLoops(const std::string& source, const std::string& name_part) {
  driver::CompileOptions options;
  options.num_threads_hint = 1;
  PrimFunc f = LowerPrimFunc(source, options, name_part);
  if (!f) return -1;
  struct Top : StmtExprVisitor {
    int loops = 0;
    void VisitStmt(const Stmt& s) override {
      if (As<ForNode>(s) != nullptr) {
        ++loops;
        return;  // not below it
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } t;
  t.VisitStmt(f->body);
  return t.loops;
}

TEST(ExplicitVectorSplitTest, NormsSplitBeforeTheRowScheduleSoftmaxAfter) {
  const std::string ln = "R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)";
  // layer_norm [256, 384], split first: the mean over the 256 row sums and
  // the output row take 16 lanes (two per unrolled step; the output's
  // reciprocal sits between its unroll and its vector loop); the sums over
  // all rows, the mean, then one loop over rows for the variance and the
  // output: three top-level loops, not one fused row loop (split after the
  // row schedule, only the output row had 16 lanes). 16-lane loops: those
  // two and the halving step of each lane tree (sum, variance).
  VectorLoops a = LoopsOfNamed(Norm("256, 384", "384", ln), "layer_norm");
  EXPECT_EQ(Count(a.vector_widths, 16), 4);
  EXPECT_EQ(a.unrolls, std::vector<int64_t>{2});  // the mean's
  EXPECT_EQ(Count(a.vector_widths, 384), 0);
  EXPECT_EQ(TopLoops(Norm("256, 384", "384", ln), "layer_norm"), 3);
  // [128, 768] the same way.
  EXPECT_EQ(Count(LoopsOfNamed(Norm("128, 768", "768", ln), "layer_norm").vector_widths, 16), 4);
  EXPECT_EQ(TopLoops(Norm("128, 768", "768", ln), "layer_norm"), 3);
  // Symbolic rows: the mean's loop over them split the same way, then a
  // vectorized tail (symbolic extent): four top-level loops (the sums, the
  // mean's blocks, its tail, the rows' variance and output).
  const std::string sym = Norm("\"n\", 384", "384", ln, "n");
  VectorLoops y = LoopsOfNamed(sym, "layer_norm");
  EXPECT_EQ(Count(y.vector_widths, 16), 4);
  EXPECT_EQ(Count(y.vector_widths, -1), 1);
  EXPECT_EQ(TopLoops(sym, "layer_norm"), 4);
  // rms_norm (no mean loop): one fused row loop, its output row in 16 lanes
  // (and the tree's halving step).
  const std::string rms = Norm("128, 768", "768", "R.nn.rms_norm(x, g, axes=[-1])");
  EXPECT_EQ(Count(LoopsOfNamed(rms, "rms_norm").vector_widths, 16), 2);
  EXPECT_EQ(TopLoops(rms, "rms_norm"), 1);
  // Softmax keeps its split after the row schedule: one fused row loop.
  EXPECT_EQ(TopLoops(Unary("256, 384", "R.nn.softmax(x, axis=-1)"), "softmax"), 1);
}

TEST(ExplicitVectorSplitTest, MathLoopsSplitPlainAddsDoNot) {
  VectorLoops e = LoopsOfNamed(Unary("8, 256", "R.exp(x)"), "exp");
  EXPECT_EQ(e.vector_widths, std::vector<int64_t>{16});
  EXPECT_EQ(e.unrolls, std::vector<int64_t>{2});
  // A bias add (memory bound): one loop of 256 lanes for LLVM.
  VectorLoops a = LoopsOfNamed(Unary("8, 256", "R.add(x, x)"), "add");
  EXPECT_EQ(a.vector_widths, std::vector<int64_t>{256});
  EXPECT_TRUE(a.unrolls.empty());
}

TEST(AlignedVectorSplitTest, HeadsBackIntoRowsTakeVectorsOfWholeHeads) {
  // d = 32: lcm 32, 16 lanes; the index (o * 128 + m * 16 + v) // 32 is one
  // head per vector. Steps of 128 elements where the extent allows (12 x 32
  // = 384): 16 x 8 (before: 16 x 2, one step per lcm).
  VectorLoops a = LoopsOf(Module(2, 12, 128, 32, ""), 1);
  EXPECT_EQ(a.vector_widths, std::vector<int64_t>{16});
  EXPECT_EQ(a.unrolls, std::vector<int64_t>{8});
  // d = 64 under a symbolic sequence (4 x 64 = 256): 16 x 8 (before 16 x 4).
  VectorLoops b = LoopsOf(Module(1, 4, 128, 64, "s"), 2);
  EXPECT_EQ(b.vector_widths, std::vector<int64_t>{16});
  EXPECT_EQ(b.unrolls, std::vector<int64_t>{8});
  // d = 32 over 3 heads (96, not a multiple of 64): one step per lcm, 16 x 2.
  VectorLoops e = LoopsOf(Module(1, 3, 16, 32, ""), 1);
  EXPECT_EQ(e.vector_widths, std::vector<int64_t>{16});
  EXPECT_EQ(e.unrolls, std::vector<int64_t>{2});
  // d = 8: one 8-lane vector per head, no unroll.
  VectorLoops c = LoopsOf(Module(1, 8, 64, 8, ""), 1);
  EXPECT_EQ(c.vector_widths, std::vector<int64_t>{8});
  EXPECT_TRUE(c.unrolls.empty());
}

TEST(AlignedVectorSplitTest, HeadsNotAMultipleOfEightKeepTheLoop) {
  // d = 12 (not a multiple of 8) and d = 256 (above 128): the loop stays
  // one vectorized loop over h * d, for LLVM.
  VectorLoops a = LoopsOf(Module(1, 4, 32, 12, ""), 1);
  EXPECT_EQ(a.vector_widths, std::vector<int64_t>{48});
  EXPECT_TRUE(a.unrolls.empty());
  VectorLoops b = LoopsOf(Module(1, 2, 16, 256, ""), 1);
  EXPECT_EQ(b.vector_widths, std::vector<int64_t>{512});
  EXPECT_TRUE(b.unrolls.empty());
}

// for i in 384: Y[i] = A[i // 32, i % 32] (or by `c` for both), unscheduled.
PrimFunc HandBuilt(int64_t c) {
  Var i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(384 / c), PrimExpr(c)}, DType::Float32());
  Buffer y = MakeBuffer("Y", {PrimExpr(384)}, DType::Float32());
  PrimExpr iv(i);
  Stmt body = Store(y, Load(a, {MakeBinary(TirKind::kFloorDiv, iv, IntImm(iv.dtype(), c)),
                                MakeBinary(TirKind::kFloorMod, iv, IntImm(iv.dtype(), c))}),
                    {iv});
  auto f = std::make_shared<PrimFuncNode>();
  f->name = "f";
  f->body = std::make_shared<ForNode>(i, 0, 384, ForKind::kSerial, body);
  return f;
}

TEST(AlignedVectorSplitTest, KnobsReplaceTheRule) {
  PrimFunc f = HandBuilt(32);
  PrimFunc rule = ApplyDefaultSchedule(f, 1);
  VectorLoops r;
  r.VisitStmt(rule->body);
  EXPECT_EQ(r.vector_widths, std::vector<int64_t>{16});
  EXPECT_EQ(r.unrolls, std::vector<int64_t>{8});  // 128-element steps of 384
  // elementwise.vector set: the knobs' split, not the rule's (the rule is
  // the point "0" of the knob space).
  ScheduleKnobs knobs;
  knobs.values["elementwise.vector"] = 8;
  knobs.values["elementwise.unroll"] = 8;
  PrimFunc tuned = ApplyDefaultSchedule(f, 1, knobs);
  VectorLoops t;
  t.VisitStmt(tuned->body);
  EXPECT_EQ(t.vector_widths, std::vector<int64_t>{8});
  EXPECT_EQ(t.unrolls, std::vector<int64_t>{8});
  // By 24 (a multiple of 8 but not of w = 16, so a vector would straddle
  // two rows of A): one loop of 384 lanes, as before the rule.
  PrimFunc odd = ApplyDefaultSchedule(HandBuilt(24), 1);
  VectorLoops o;
  o.VisitStmt(odd->body);
  EXPECT_EQ(o.vector_widths, std::vector<int64_t>{384});
  EXPECT_TRUE(o.unrolls.empty());
}

void CheckNumbers(int64_t b, int64_t h, int64_t s, int64_t d, const std::string& sym, int threads) {
  SCOPED_TRACE(Module(b, h, s, d, sym) + " threads=" + std::to_string(threads));
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  auto mod = CompileAndLoad(Module(b, h, s, d, sym), options, threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> x = RandomFloats(b * h * s * d, 11, 2.0f);
  Result<Tensor> y = InvokeMain(*mod, {FloatTensor({b, h, s, d}, x)});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_EQ(y->shape(), (std::vector<int64_t>{b, s, h * d}));
  const float* got = y->data<float>();
  int bad = 0;
  for (int64_t ib = 0; ib < b; ++ib)
    for (int64_t is = 0; is < s; ++is)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t id = 0; id < d; ++id) {
          float want = x[((ib * h + ih) * s + is) * d + id];
          float have = got[(ib * s + is) * h * d + ih * d + id];
          if (want != have && ++bad <= 5) ADD_FAILURE() << "at " << ib << "," << is << "," << ih << "," << id;
        }
  EXPECT_EQ(bad, 0);
}

TEST(AlignedVectorSplitTest, PermutedHeadsMatchTheReference) {
  for (int threads : {1, 2}) {
    CheckNumbers(2, 12, 16, 32, "", threads);
    CheckNumbers(1, 4, 8, 64, "", threads);
    CheckNumbers(1, 8, 5, 16, "", threads);
    CheckNumbers(1, 3, 7, 8, "", threads);
    CheckNumbers(2, 6, 9, 32, "s", threads);
    CheckNumbers(1, 3, 6, 32, "", threads);   // 96 columns: one step per lcm
    CheckNumbers(1, 4, 12, 12, "", threads);  // the rule does not apply
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
