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

// Output points per image (rows x columns) at most: wider planes fill the
// column tiles of the conv schedules.
constexpr int64_t kMaxPoints = 8;
// Reduction length (channels x taps) at least this many (one AVX-512
// vector).
constexpr int64_t kMinReduction = 16;
// Accumulators per tile at most (of 32 vector registers, R + HW more hold
// the loads).
constexpr int64_t kMaxAccumulators = 24;
// Output channels per tile at most.
constexpr int64_t kMaxRows = 4;

PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }

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
  if (m->ho * m->wo > kMaxPoints || m->ki * m->kh * m->kw < kMinReduction) return false;
  if (!conv::MatchConvReduction(body, L, &m->r)) return false;
  const conv::ConvReduction& r = m->r;
  // An OIHW weight of exactly the loops' extents (read as rows [O, C*KH*KW]).
  if (r.w_load->indices.size() != 4 || !r.weight->strides.empty()) return false;
  for (size_t d = 0; d < 4; ++d) {
    const int64_t* e = ConstInt(r.weight->shape[d]);
    if (e == nullptr || *e != *ConstInt(L[d == 0 ? 1 : d + 3]->extent)) return false;
  }
  // The staged input may not depend on the output channel (groups).
  if (Uses(r.x_load->indices[0], {L[1]->loop_var.get()}) || Uses(r.x_load->indices[1], {L[1]->loop_var.get()})) {
    return false;
  }
  return SameExtent(r.out->shape[1], L[1]->extent) && SameExtent(r.out->shape[2], L[2]->extent) &&
         SameExtent(r.out->shape[3], L[3]->extent) &&
         (SameExtent(r.out->shape[0], L[0]->extent) || arith::CanProveEqual(r.out->shape[0], L[0]->extent));
}

Buffer NewBuffer(const std::string& name, std::vector<PrimExpr> shape, const std::string& scope) {
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = MakeVar(name + "_data", HandleType());
  node->dtype = DType::Float32();
  node->shape = std::move(shape);
  node->scope = scope;
  return node;
}

// The rewritten nest (conv_dot_schedule.h).
Stmt BuildDotConv(const DotConv& cv, int threads) {
  const auto& L = cv.loops;
  const DType f32 = DType::Float32();
  const ForKind outer = threads >= 2 ? ForKind::kParallel : ForKind::kSerial;
  const int64_t hw = cv.ho * cv.wo, k = cv.ki * cv.kh * cv.kw;
  const int64_t v = k >= 64 || k % 16 == 0 ? 16 : 8;
  const int64_t blocks = k / v, tail = k % v;
  const int64_t rows = std::max<int64_t>(1, std::min({kMaxRows, cv.o, kMaxAccumulators / hw}));
  const int64_t tiles = (cv.o + rows - 1) / rows;
  const int64_t n_acc = rows * hw;
  PrimExpr images = L[0]->extent;

  // 1. The staged input: col[n, p, j] = X's value (0 in the padding) at
  // output point p = y * Wo + x and reduction index j = (c * KH + ky) * KW + kx.
  Buffer col = NewBuffer("col", {images, I64(hw), I64(k)}, "global");
  Var pn = MakeVar("pn"), py = MakeVar("py"), px = MakeVar("px"), pc = MakeVar("pc"), pky = MakeVar("pky"),
      pkx = MakeVar("pkx");
  VarMap at_pack;
  at_pack[L[0]->loop_var.get()] = PrimExpr(pn);
  at_pack[L[2]->loop_var.get()] = PrimExpr(py);
  at_pack[L[3]->loop_var.get()] = PrimExpr(px);
  at_pack[L[4]->loop_var.get()] = PrimExpr(pc);
  at_pack[L[5]->loop_var.get()] = PrimExpr(pky);
  at_pack[L[6]->loop_var.get()] = PrimExpr(pkx);
  std::vector<PrimExpr> xidx;
  for (const PrimExpr& e : cv.r.x_load->indices) xidx.push_back(arith::Simplify(Substitute(e, at_pack)));
  PrimExpr value = Load(cv.r.data, xidx);
  if (cv.r.inside.defined()) {
    PrimExpr inside = arith::Simplify(Substitute(cv.r.inside, at_pack));
    value = PrimExpr(std::make_shared<CallNode>(f32, "if_then_else", std::vector<PrimExpr>{inside, value, FloatImm(f32, 0.0)}));
  }
  PrimExpr j = (PrimExpr(pc) * I64(cv.kh) + PrimExpr(pky)) * I64(cv.kw) + PrimExpr(pkx);
  Stmt pack = Store(col, value, {PrimExpr(pn), PrimExpr(py) * I64(cv.wo) + PrimExpr(px), j});
  pack = MakeFor(pkx, I64(cv.kw), ForKind::kSerial, pack);
  pack = MakeFor(pky, I64(cv.kh), ForKind::kSerial, pack);
  pack = MakeFor(pc, I64(cv.ki), ForKind::kSerial, pack);
  pack = MakeFor(px, I64(cv.wo), ForKind::kSerial, pack);
  pack = MakeFor(py, I64(cv.ho), ForKind::kSerial, pack);
  pack = MakeFor(pn, images, outer, pack);

  // 2. Tiles of R output channels x all HW points: R * HW accumulators of
  // V lanes over the reduction, W read as rows of K (a view).
  auto wrow = std::make_shared<BufferNode>(*cv.r.weight);
  wrow->shape = {I64(cv.o), I64(k)};
  Buffer wv = wrow;
  Var t = MakeVar("t"), n = MakeVar("n"), o0 = MakeVar("o0");
  Buffer acc = NewBuffer("acc", {I64(n_acc), I64(v)}, "local");
  Var zi = MakeVar("zi"), zl = MakeVar("zl");
  Stmt zero = MakeFor(zi, I64(n_acc), ForKind::kUnrolled,
                      MakeFor(zl, I64(v), ForKind::kVectorized, Store(acc, FloatImm(f32, 0.0), {PrimExpr(zi), PrimExpr(zl)})));
  auto fma_at = [&](const PrimExpr& jj, const Var& ri, const Var& pi, const PrimExpr& lane) {
    PrimExpr slot = PrimExpr(ri) * I64(hw) + PrimExpr(pi);
    PrimExpr cur = Load(acc, {slot, lane});
    PrimExpr w = Load(wv, {PrimExpr(o0) + PrimExpr(ri), jj});
    PrimExpr x = Load(col, {PrimExpr(n), PrimExpr(pi), jj});
    return Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, cur})), {slot, lane});
  };
  std::vector<Stmt> tile_body = {zero};
  if (blocks > 0) {
    Var kb = MakeVar("kb"), ri = MakeVar("ri"), pi = MakeVar("pi"), l = MakeVar("l");
    Stmt taps = MakeFor(l, I64(v), ForKind::kVectorized, fma_at(PrimExpr(kb) * I64(v) + PrimExpr(l), ri, pi, PrimExpr(l)));
    taps = MakeFor(pi, I64(hw), ForKind::kUnrolled, taps);
    taps = MakeFor(ri, I64(rows), ForKind::kUnrolled, taps);
    tile_body.push_back(MakeFor(kb, I64(blocks), ForKind::kSerial, taps));
  }
  if (tail > 0) {
    // The last K % V terms into lane 0.
    Var kt = MakeVar("kt"), ri = MakeVar("ri"), pi = MakeVar("pi");
    Stmt taps = fma_at(I64(blocks * v) + PrimExpr(kt), ri, pi, I64(0));
    taps = MakeFor(pi, I64(hw), ForKind::kUnrolled, taps);
    taps = MakeFor(ri, I64(rows), ForKind::kUnrolled, taps);
    tile_body.push_back(MakeFor(kt, I64(tail), ForKind::kSerial, taps));
  }
  // Each accumulator summed across its lanes: halves added until one lane.
  for (int64_t h = v / 2; h >= 1; h /= 2) {
    Var fi = MakeVar("fi"), fl = MakeVar("fl");
    PrimExpr sum = Load(acc, {PrimExpr(fi), PrimExpr(fl)}) + Load(acc, {PrimExpr(fi), PrimExpr(fl) + I64(h)});
    tile_body.push_back(MakeFor(fi, I64(n_acc), ForKind::kUnrolled,
                                MakeFor(fl, I64(h), h > 1 ? ForKind::kVectorized : ForKind::kSerial,
                                        Store(acc, sum, {PrimExpr(fi), PrimExpr(fl)}))));
  }
  Var wr = MakeVar("wr"), wy = MakeVar("wy"), wx = MakeVar("wx");
  PrimExpr slot = PrimExpr(wr) * I64(hw) + PrimExpr(wy) * I64(cv.wo) + PrimExpr(wx);
  Stmt write = Store(cv.r.out, Load(acc, {slot, I64(0)}),
                     {PrimExpr(n), PrimExpr(o0) + PrimExpr(wr), PrimExpr(wy), PrimExpr(wx)});
  write = MakeFor(wx, I64(cv.wo), ForKind::kUnrolled, write);
  write = MakeFor(wy, I64(cv.ho), ForKind::kUnrolled, write);
  tile_body.push_back(MakeFor(wr, I64(rows), ForKind::kUnrolled, write));
  Stmt tile = std::make_shared<AllocateNode>(acc, Seq(tile_body));
  // t over (image, channel tile); the last tile moved back to end at O.
  tile = std::make_shared<LetStmtNode>(o0, Min(Mod(PrimExpr(t), I64(tiles)) * I64(rows), I64(cv.o - rows)), tile);
  tile = std::make_shared<LetStmtNode>(n, Div(PrimExpr(t), I64(tiles)), tile);
  Stmt tile_loop = MakeFor(t, arith::Simplify(images * I64(tiles)), outer, tile);
  return std::make_shared<AllocateNode>(col, Seq({pack, tile_loop}));
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
