// Soundness: random integer expressions evaluate to the same value before and
// after Simplify, for random values of their variables (a fixed seed, so the
// test is deterministic). Also checks that every proof is true on the samples.
#include <gtest/gtest.h>

#include <random>

#include "compiler/arith/simplify.h"

namespace kiln {
namespace arith {
namespace {

using namespace ir;

using Env = std::map<const VarNode*, int64_t>;

// Evaluates an integer or bool expression; false if undefined (division by 0).
bool Eval(const PrimExpr& e, const Env& env, int64_t* out) {
  if (const auto* c = e.as<IntImmNode>()) return *out = c->value, true;
  if (const auto* v = e.as<VarNode>()) return *out = env.at(v), true;
  if (const auto* s = e.as<SelectNode>()) {
    int64_t c, t, f;
    if (!Eval(s->cond, env, &c) || !Eval(s->true_value, env, &t) || !Eval(s->false_value, env, &f)) return false;
    return *out = c ? t : f, true;
  }
  if (const auto* n = e.as<NotNode>()) {
    int64_t a;
    if (!Eval(n->a, env, &a)) return false;
    return *out = !a, true;
  }
  const auto* b = static_cast<const BinaryNode*>(e.get());
  int64_t x, y;
  if (!IsBinary(e->kind()) || !Eval(b->a, env, &x) || !Eval(b->b, env, &y)) return false;
  switch (e->kind()) {
    case TirKind::kAdd: *out = x + y; return true;
    case TirKind::kSub: *out = x - y; return true;
    case TirKind::kMul: *out = x * y; return true;
    case TirKind::kDiv: if (y == 0) return false; *out = x / y; return true;
    case TirKind::kFloorDiv: if (y == 0) return false; *out = FloorDiv(x, y); return true;
    case TirKind::kFloorMod: if (y == 0) return false; *out = FloorMod(x, y); return true;
    case TirKind::kMin: *out = std::min(x, y); return true;
    case TirKind::kMax: *out = std::max(x, y); return true;
    case TirKind::kEQ: *out = x == y; return true;
    case TirKind::kNE: *out = x != y; return true;
    case TirKind::kLT: *out = x < y; return true;
    case TirKind::kLE: *out = x <= y; return true;
    case TirKind::kGT: *out = x > y; return true;
    case TirKind::kGE: *out = x >= y; return true;
    case TirKind::kAnd: *out = x && y; return true;
    case TirKind::kOr: *out = x || y; return true;
    default: return false;
  }
}

class Generator {
 public:
  Generator(uint32_t seed, std::vector<Var> vars) : gen_(seed), vars_(std::move(vars)) {}

  PrimExpr Int(int depth) {
    int pick = Uniform(0, depth <= 0 ? 1 : 9);
    switch (pick) {
      case 0: return PrimExpr(Uniform(-6, 6));
      case 1: return PrimExpr(vars_[Uniform(0, static_cast<int>(vars_.size()) - 1)]);
      case 2: return Int(depth - 1) + Int(depth - 1);
      case 3: return Int(depth - 1) - Int(depth - 1);
      case 4: return Int(depth - 1) * PrimExpr(Uniform(-4, 4));
      case 5: return Int(depth - 1) * Int(depth - 2);
      case 6: return MakeBinary(Uniform(0, 1) ? TirKind::kFloorDiv : TirKind::kFloorMod, Int(depth - 1),
                                PrimExpr(NonZero()));
      case 7: return MakeBinary(Uniform(0, 1) ? TirKind::kMin : TirKind::kMax, Int(depth - 1), Int(depth - 1));
      case 8: return PrimExpr(std::make_shared<SelectNode>(Bool(depth - 1), Int(depth - 1), Int(depth - 1)));
      default: return MakeBinary(TirKind::kDiv, Int(depth - 1), PrimExpr(NonZero()));
    }
  }

  PrimExpr Bool(int depth) {
    static const TirKind kCmp[] = {TirKind::kEQ, TirKind::kNE, TirKind::kLT, TirKind::kLE, TirKind::kGT, TirKind::kGE};
    int pick = Uniform(0, depth <= 0 ? 0 : 2);
    if (pick == 0) return MakeBinary(kCmp[Uniform(0, 5)], Int(depth - 1), Int(depth - 1));
    if (pick == 1) return MakeBinary(Uniform(0, 1) ? TirKind::kAnd : TirKind::kOr, Bool(depth - 1), Bool(depth - 1));
    return PrimExpr(std::make_shared<NotNode>(Bool(depth - 1)));
  }

  int64_t Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }
  int64_t NonZero() {
    int64_t v = Uniform(-5, 5);
    return v == 0 ? 4 : v;
  }

 private:
  std::mt19937 gen_;
  std::vector<Var> vars_;
};

TEST(SimplifyRandom, PreservesValues) {
  Var n = MakeVar("n"), m = MakeVar("m"), k = MakeVar("k");
  Generator g(12345, {n, m, k});
  int checked = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const bool use_bounds = iter % 2 == 1;  // half the time: all variables >= 0
    VarBounds bounds = use_bounds ? LowerBounds({n, m, k}) : VarBounds{};
    PrimExpr e = iter % 3 == 0 ? g.Bool(3) : g.Int(4);
    PrimExpr s = Simplify(e, bounds);
    for (int sample = 0; sample < 8; ++sample) {
      Env env;
      for (const Var& v : {n, m, k}) env[v.get()] = use_bounds ? g.Uniform(0, 12) : g.Uniform(-12, 12);
      int64_t want, got;
      if (!Eval(e, env, &want)) continue;
      ASSERT_TRUE(Eval(s, env, &got)) << ToDebugString(e) << "  ->  " << ToDebugString(s);
      ASSERT_EQ(want, got) << ToDebugString(e) << "  ->  " << ToDebugString(s) << " at n=" << env[n.get()]
                           << " m=" << env[m.get()] << " k=" << env[k.get()];
      ++checked;
    }
    if (e.dtype() == DType::Bool() && CanProve(e, bounds)) {
      Env env;
      for (const Var& v : {n, m, k}) env[v.get()] = use_bounds ? g.Uniform(0, 12) : g.Uniform(-12, 12);
      int64_t value;
      if (Eval(e, env, &value)) {
        EXPECT_EQ(value, 1) << "proved but false: " << ToDebugString(e);
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(SimplifyRandom, EqualityProofsHold) {
  Var n = MakeVar("n"), m = MakeVar("m");
  Generator g(777, {n, m});
  int proved = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    PrimExpr a = g.Int(3), b = g.Int(3);
    // Rewrite b into a different but equal form half the time.
    if (iter % 2 == 0) b = a + (b - b) * 3;
    if (!CanProveEqual(a, b)) continue;
    ++proved;
    for (int sample = 0; sample < 5; ++sample) {
      Env env{{n.get(), g.Uniform(-9, 9)}, {m.get(), g.Uniform(-9, 9)}};
      int64_t x, y;
      if (Eval(a, env, &x) && Eval(b, env, &y)) {
        ASSERT_EQ(x, y) << ToDebugString(a) << " vs " << ToDebugString(b);
      }
    }
  }
  EXPECT_GE(proved, 1000);
}

}  // namespace
}  // namespace arith
}  // namespace kiln
