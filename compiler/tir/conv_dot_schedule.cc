#include "compiler/tir/conv_dot_schedule.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// Output columns at most this many: wider rows fill the column tiles of
// the conv schedules.
constexpr int64_t kMaxColumns = 8;
// Taps per kernel row at least this many (one AVX-512 vector).
constexpr int64_t kMinTaps = 16;
// Accumulators per tile at most (of 32 vector registers, R + Wo more hold
// the loads).
constexpr int64_t kMaxAccumulators = 24;
// Output channels per tile at most.
constexpr int64_t kMaxRows = 4;

PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }

Stmt MakeFor(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

struct DotConv {
  std::vector<const ForNode*> loops;  // n, o, y, x, c, ky, kx
  conv::ConvReduction r;
  int64_t o = 0, ho = 0, wo = 0, ki = 0, kh = 0, kw = 0;
};

bool MatchDotConv(const Stmt& s, DotConv* m) {
  Stmt body;
  m->loops = PeelNest(s, &body);
  const auto& L = m->loops;
  if (L.size() != 7) return false;
  for (const ForNode* l : L)
    if (!IsZero(l->min)) return false;
  int64_t* ext[] = {&m->o, &m->ho, &m->wo, &m->ki, &m->kh, &m->kw};
  for (size_t d = 1; d < 7; ++d) {
    const int64_t* e = ConstInt(L[d]->extent);
    if (e == nullptr || *e <= 0) return false;
    *ext[d - 1] = *e;
  }
  if (m->wo > kMaxColumns || m->kw < kMinTaps || m->kw % 8 != 0) return false;
  if (!conv::MatchConvReduction(body, L, &m->r)) return false;
  const conv::ConvReduction& r = m->r;
  // An unpadded read along contiguous taps of an OIHW weight.
  if (r.inside.defined() || r.pt != 0 || r.pl != 0 || r.dw != 1 || r.w_load->indices.size() != 4) return false;
  if (!r.weight->strides.empty() || !r.data->strides.empty()) return false;
  return SameExtent(r.out->shape[1], L[1]->extent) && SameExtent(r.out->shape[2], L[2]->extent) &&
         SameExtent(r.out->shape[3], L[3]->extent) &&
         (SameExtent(r.out->shape[0], L[0]->extent) || arith::CanProveEqual(r.out->shape[0], L[0]->extent));
}

Buffer LocalBuffer(const std::string& name, std::vector<PrimExpr> shape) {
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = MakeVar(name + "_data", HandleType());
  node->dtype = DType::Float32();
  node->shape = std::move(shape);
  node->scope = "local";
  return node;
}

// The rewritten nest (conv_dot_schedule.h).
Stmt BuildDotConv(const DotConv& cv, int threads) {
  const auto& L = cv.loops;
  const DType f32 = DType::Float32();
  const int64_t v = cv.kw % 16 == 0 ? 16 : 8;
  const int64_t rows = std::max<int64_t>(1, std::min({kMaxRows, cv.o, kMaxAccumulators / cv.wo}));
  const int64_t tiles = (cv.o + rows - 1) / rows;
  const int64_t n_acc = rows * cv.wo;
  Var t = MakeVar("t"), n = MakeVar("n"), y = MakeVar("y"), o0 = MakeVar("o0");
  Buffer acc = LocalBuffer("acc", {I64(n_acc), I64(v)});
  // Zero.
  Var zi = MakeVar("zi"), zl = MakeVar("zl");
  Stmt zero = MakeFor(zi, I64(n_acc), ForKind::kUnrolled,
                      MakeFor(zl, I64(v), ForKind::kVectorized, Store(acc, FloatImm(f32, 0.0), {PrimExpr(zi), PrimExpr(zl)})));
  // The taps: (c, ky, tap block) loops around R x Wo unrolled vector FMAs.
  Var c = MakeVar("c"), ky = MakeVar("ky"), kb = MakeVar("kb"), ri = MakeVar("ri"), xi = MakeVar("xi"), l = MakeVar("l");
  VarMap at;
  at[L[0]->loop_var.get()] = PrimExpr(n);
  at[L[1]->loop_var.get()] = PrimExpr(o0) + PrimExpr(ri);
  at[L[2]->loop_var.get()] = PrimExpr(y);
  at[L[3]->loop_var.get()] = PrimExpr(xi);
  at[L[4]->loop_var.get()] = PrimExpr(c);
  at[L[5]->loop_var.get()] = PrimExpr(ky);
  at[L[6]->loop_var.get()] = PrimExpr(kb) * I64(v) + PrimExpr(l);
  auto idx = [&](const BufferLoadNode* load) {
    std::vector<PrimExpr> out;
    for (const PrimExpr& e : load->indices) out.push_back(arith::Simplify(Substitute(e, at)));
    return out;
  };
  PrimExpr slot = PrimExpr(ri) * I64(cv.wo) + PrimExpr(xi);
  PrimExpr cur = Load(acc, {slot, PrimExpr(l)});
  PrimExpr fma = PrimExpr(std::make_shared<CallNode>(
      f32, "fma", std::vector<PrimExpr>{Load(cv.r.weight, idx(cv.r.w_load)), Load(cv.r.data, idx(cv.r.x_load)), cur}));
  Stmt taps = MakeFor(l, I64(v), ForKind::kVectorized, Store(acc, fma, {slot, PrimExpr(l)}));
  taps = MakeFor(xi, I64(cv.wo), ForKind::kUnrolled, taps);
  taps = MakeFor(ri, I64(rows), ForKind::kUnrolled, taps);
  taps = MakeFor(kb, I64(cv.kw / v), ForKind::kSerial, taps);
  taps = MakeFor(ky, I64(cv.kh), ForKind::kSerial, taps);
  taps = MakeFor(c, I64(cv.ki), ForKind::kSerial, taps);
  // Each accumulator summed across its lanes: halves added until one lane.
  std::vector<Stmt> folds;
  for (int64_t h = v / 2; h >= 1; h /= 2) {
    Var fi = MakeVar("fi"), fl = MakeVar("fl");
    PrimExpr sum = Load(acc, {PrimExpr(fi), PrimExpr(fl)}) + Load(acc, {PrimExpr(fi), PrimExpr(fl) + I64(h)});
    folds.push_back(MakeFor(fi, I64(n_acc), ForKind::kUnrolled,
                            MakeFor(fl, I64(h), h > 1 ? ForKind::kVectorized : ForKind::kSerial,
                                    Store(acc, sum, {PrimExpr(fi), PrimExpr(fl)}))));
  }
  Var wr = MakeVar("wr"), wx = MakeVar("wx");
  Stmt write = MakeFor(
      wr, I64(rows), ForKind::kUnrolled,
      MakeFor(wx, I64(cv.wo), ForKind::kUnrolled,
              Store(cv.r.out, Load(acc, {PrimExpr(wr) * I64(cv.wo) + PrimExpr(wx), I64(0)}),
                    {PrimExpr(n), PrimExpr(o0) + PrimExpr(wr), PrimExpr(y), PrimExpr(wx)})));
  std::vector<Stmt> tile_body = {zero, taps};
  tile_body.insert(tile_body.end(), folds.begin(), folds.end());
  tile_body.push_back(write);
  Stmt tile = std::make_shared<AllocateNode>(acc, Seq(tile_body));
  // t over (n, y, channel tile); the last tile moved back to end at O.
  PrimExpr per_image = I64(cv.ho * tiles);
  tile = std::make_shared<LetStmtNode>(o0, Min(MakeBinary(TirKind::kFloorMod, PrimExpr(t), I64(tiles)) * I64(rows), I64(cv.o - rows)), tile);
  tile = std::make_shared<LetStmtNode>(
      y, MakeBinary(TirKind::kFloorMod, MakeBinary(TirKind::kFloorDiv, PrimExpr(t), I64(tiles)), I64(cv.ho)), tile);
  tile = std::make_shared<LetStmtNode>(n, MakeBinary(TirKind::kFloorDiv, PrimExpr(t), per_image), tile);
  PrimExpr count = arith::Simplify(L[0]->extent * per_image);
  return MakeFor(t, count, threads >= 2 ? ForKind::kParallel : ForKind::kSerial, tile);
}

class DotRewriter : public StmtExprMutator {
 public:
  explicit DotRewriter(int threads) : threads_(threads) {}
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s)) {
      DotConv cv;
      if (!MatchDotConv(s, &cv)) return s;
      changed = true;
      return BuildDotConv(cv, threads_);
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  int threads_;
};

}  // namespace

PrimFunc ScheduleDotConvs(const PrimFunc& func, int num_threads_hint) {
  DotRewriter rewriter(num_threads_hint);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
