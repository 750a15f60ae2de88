#include "compiler/tir/conv_match.h"

#include <optional>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace conv {

using namespace ir;    // NOLINT
using namespace nest;  // NOLINT: the shared nest helpers

namespace {

bool IsFloatZero(const PrimExpr& e) {
  const auto* f = e.as<FloatImmNode>();
  return f != nullptr && f->value == 0.0;
}

// The value of `e` with the given variables set to constants, when it folds.
std::optional<int64_t> EvalAt(const PrimExpr& e, const std::vector<std::pair<const VarNode*, int64_t>>& at) {
  VarMap map;
  for (const auto& kv : at) map[kv.first] = I64(kv.second);
  return arith::AsConstInt(arith::Simplify(Substitute(e, map)));
}

// `e` equals stride * outer + dil * tap - pad for the loop variables `outer`
// and `tap` (proven, not sampled), with stride, dil >= 1 and pad >= 0.
bool MatchAffine(const PrimExpr& e, const Var& outer, const Var& tap, int64_t* stride, int64_t* dil, int64_t* pad) {
  auto v00 = EvalAt(e, {{outer.get(), 0}, {tap.get(), 0}});
  auto v10 = EvalAt(e, {{outer.get(), 1}, {tap.get(), 0}});
  auto v01 = EvalAt(e, {{outer.get(), 0}, {tap.get(), 1}});
  if (!v00 || !v10 || !v01) return false;
  *stride = *v10 - *v00;
  *dil = *v01 - *v00;
  *pad = -*v00;
  if (*stride <= 0 || *dil <= 0 || *pad < 0) return false;
  return arith::CanProveEqual(e, PrimExpr(outer) * I64(*stride) + PrimExpr(tap) * I64(*dil) - I64(*pad));
}

// An access index at the loop point: the loop variable itself, or 0 when the
// loop has extent 1.
bool IsLoopIndex(const PrimExpr& e, const ForNode* loop) {
  if (IsVar(e, loop->loop_var.get())) return true;
  const int64_t* ext = ConstInt(loop->extent);
  return ext != nullptr && *ext == 1 && IsZero(e);
}

bool AtLoopPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops) {
  if (idx.size() != loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!IsLoopIndex(idx[d], loops[d])) return false;
  return true;
}

bool ExactlyLoopVars(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops, size_t first) {
  if (idx.size() + first > loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!IsVar(idx[d], loops[first + d]->loop_var.get())) return false;
  return true;
}

// The bounds checks of the padded read: which of iy >= 0, iy < H, ix >= 0,
// ix < W the condition holds (H and W may be symbolic). False when it holds
// anything else.
bool MatchInsideCond(const PrimExpr& cond, const PrimExpr& iy, const PrimExpr& ix, const PrimExpr& h,
                     const PrimExpr& w, bool have[4]) {
  std::vector<PrimExpr> terms;
  Conjuncts(cond, &terms);
  for (const PrimExpr& t : terms) {
    const auto* ge = t.as<GENode>();
    const auto* lt = t.as<LTNode>();
    const BinaryNode* b = ge ? static_cast<const BinaryNode*>(ge) : static_cast<const BinaryNode*>(lt);
    if (b == nullptr) return false;
    bool is_y = arith::CanProveEqual(b->a, iy), is_x = !is_y && arith::CanProveEqual(b->a, ix);
    if (!is_y && !is_x) return false;
    if (ge != nullptr && IsZero(b->b)) {
      have[is_y ? 0 : 2] = true;
    } else if (lt != nullptr && arith::CanProveEqual(b->b, is_y ? h : w)) {
      have[is_y ? 1 : 3] = true;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

bool Float32Plain(const Buffer& b, size_t ndim) {
  if (b->dtype != DType::Float32() || !b->strides.empty() || b->shape.size() != ndim) return false;
  for (const PrimExpr& d : b->shape)
    if (ConstInt(d) == nullptr) return false;
  return true;
}

bool IsHalfFloat(const DType& t) { return t.is_float() && t.bits == 16 && t.lanes == 1; }

bool FloatPlain(const Buffer& b, size_t ndim) {
  if (!IsHalfFloat(b->dtype)) return Float32Plain(b, ndim);
  if (!b->strides.empty() || b->shape.size() != ndim) return false;
  for (const PrimExpr& d : b->shape)
    if (ConstInt(d) == nullptr) return false;
  return true;
}

PrimExpr WidenF32(const PrimExpr& e) { return e.dtype() == DType::Float32() ? e : Cast(DType::Float32(), e); }

bool ScheduledWithHalfOperands(int64_t groups, int64_t in_per_group) { return !(groups > 1 && in_per_group == 1); }

int64_t Dim(const Buffer& b, size_t d) { return *ConstInt(b->shape[d]); }

bool MatchConvReduction(const Stmt& body, const std::vector<const ForNode*>& L, ConvReduction* r,
                        bool half_operands) {
  if (L.size() != 7) return false;
  const auto* seq = As<SeqStmtNode>(body);
  if (seq == nullptr || seq->seq.size() != 2) return false;
  const auto* guard = As<IfThenElseNode>(seq->seq[0]);
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  if (guard == nullptr || guard->else_case || update == nullptr) return false;
  // The init guard: every reduction variable of extent > 1 compared to 0.
  if (!IsInitGuard(guard->cond, L, 4)) return false;
  const auto* init = As<BufferStoreNode>(guard->then_case);
  if (init == nullptr || init->buffer != update->buffer || !IsFloatZero(init->value)) return false;
  r->out = update->buffer;
  auto compact4 = [](const Buffer& b) {
    return b->dtype == DType::Float32() && b->strides.empty() && b->shape.size() == 4;
  };
  // The operands' element type: float32, or (half_operands) 16-bit float
  // widened by the load's cast.
  auto operand_type = [&](const DType& t) { return t == DType::Float32() || (half_operands && IsHalfFloat(t)); };
  if (!compact4(r->out) || !ExactlyLoopVars(update->indices, L, 0) || !ExactlyLoopVars(init->indices, L, 0)) {
    return false;
  }
  const auto* add = update->value.as<AddNode>();
  if (add == nullptr) return false;
  PrimExpr acc = add->a, rhs = add->b;
  auto is_acc = [&](const PrimExpr& e) {
    const auto* l = e.as<BufferLoadNode>();
    return l != nullptr && l->buffer == r->out && ExactlyLoopVars(l->indices, L, 0);
  };
  if (!is_acc(acc)) std::swap(acc, rhs);
  if (!is_acc(acc)) return false;
  PrimExpr cond, prod = rhs;
  if (const auto* call = rhs.as<CallNode>()) {
    if (call->op != "if_then_else" || call->args.size() != 3 || !IsFloatZero(call->args[2])) return false;
    cond = call->args[0];
    prod = call->args[1];
  } else if (const auto* sel = rhs.as<SelectNode>()) {
    if (!IsFloatZero(sel->false_value)) return false;
    cond = sel->cond;
    prod = sel->true_value;
  }
  const auto* mul = prod.as<MulNode>();
  if (mul == nullptr) return false;
  // A load, or (half_operands) a load of a 16-bit float buffer widened to float32.
  auto operand = [&](const PrimExpr& e) -> const BufferLoadNode* {
    const auto* cast = e.as<CastNode>();
    if (cast == nullptr) return e.as<BufferLoadNode>();
    const auto* l = cast->value.as<BufferLoadNode>();
    bool widened = half_operands && l != nullptr && IsHalfFloat(l->buffer->dtype) && cast->dtype == DType::Float32();
    return widened ? l : nullptr;
  };
  const auto* x = operand(mul->a);
  const auto* wt = operand(mul->b);
  if (x == nullptr || wt == nullptr) return false;
  // OIHW: W[o, c, ky, kx]; packed (kernel_layout "OIHW<b>o"): W[o / b, c, ky, kx, o % b].
  auto is_weight = [&](const BufferLoadNode* l) {
    const auto& idx = l->indices;
    if (idx.size() != 4 && idx.size() != 5) return false;
    for (size_t d = 1; d < 4; ++d)  // c, ky, kx
      if (!IsVar(idx[d], L[3 + d]->loop_var.get())) return false;
    if (idx.size() == 4) return IsVar(idx[0], L[1]->loop_var.get());
    const int64_t* b = ConstInt(l->buffer->shape[4]);
    if (b == nullptr || *b <= 0) return false;
    PrimExpr o(L[1]->loop_var);
    return arith::CanProveEqual(idx[0], MakeBinary(TirKind::kFloorDiv, o, I64(*b))) &&
           arith::CanProveEqual(idx[4], MakeBinary(TirKind::kFloorMod, o, I64(*b)));
  };
  if (!is_weight(wt)) std::swap(x, wt);
  if (!is_weight(wt)) return false;
  r->weight = wt->buffer;
  r->data = x->buffer;
  r->x_load = x;
  r->w_load = wt;
  bool data4 = operand_type(r->data->dtype) && r->data->strides.empty() && r->data->shape.size() == 4;
  if (!operand_type(r->weight->dtype) || !r->weight->strides.empty() ||
      r->weight->shape.size() != wt->indices.size() || !data4 || x->indices.size() != 4 ||
      r->weight == r->out || r->data == r->out) {
    return false;
  }
  const PrimExpr& iy = x->indices[2];
  const PrimExpr& ix = x->indices[3];
  if (!MatchAffine(iy, L[2]->loop_var, L[5]->loop_var, &r->sh, &r->dh, &r->pt)) return false;
  if (!MatchAffine(ix, L[3]->loop_var, L[6]->loop_var, &r->sw, &r->dw, &r->pl)) return false;
  for (bool& h : r->have) h = false;
  r->inside = cond;
  return !cond.defined() || MatchInsideCond(cond, iy, ix, r->data->shape[2], r->data->shape[3], r->have);
}

bool MatchConv(const Stmt& s, ConvNest* m, bool half_operands) {
  Stmt body;
  m->loops = PeelNest(s, &body);
  const auto& L = m->loops;
  if (L.size() != 7) return false;
  int64_t ext[7];
  for (size_t d = 0; d < 7; ++d) {
    const int64_t* e = ConstInt(L[d]->extent);
    if (!IsZero(L[d]->min) || e == nullptr || *e <= 0) return false;
    ext[d] = *e;
  }
  m->n = ext[0], m->o = ext[1], m->ho = ext[2], m->wo = ext[3], m->ki = ext[4], m->kh = ext[5], m->kw = ext[6];
  ConvReduction r;
  if (!MatchConvReduction(body, L, &r, half_operands)) return false;
  m->out = r.out, m->weight = r.weight, m->data = r.data;
  m->sh = r.sh, m->sw = r.sw, m->dh = r.dh, m->dw = r.dw, m->pt = r.pt, m->pl = r.pl;
  const size_t wrank = r.w_load->indices.size();
  if (!Float32Plain(m->out, 4) || !FloatPlain(m->weight, wrank) || !FloatPlain(m->data, 4)) return false;
  for (size_t d = 0; d < 4; ++d)
    if (Dim(m->out, d) != ext[d]) return false;
  m->wblock = wrank == 5 ? Dim(m->weight, 4) : 0;
  int64_t o_dim = wrank == 5 ? Dim(m->weight, 0) * m->wblock : Dim(m->weight, 0);
  if (o_dim != m->o || Dim(m->weight, 1) != m->ki || Dim(m->weight, 2) != m->kh || Dim(m->weight, 3) != m->kw) {
    return false;
  }
  m->ch = Dim(m->data, 1), m->h = Dim(m->data, 2), m->w = Dim(m->data, 3);
  if (Dim(m->data, 0) != m->n || !IsLoopIndex(r.x_load->indices[0], L[0])) return false;
  // Channel: c (one group) or (o / opg) * ki + c.
  const PrimExpr& chi = r.x_load->indices[1];
  const Var& ov = L[1]->loop_var;
  const Var& cv = L[4]->loop_var;
  if (arith::CanProveEqual(chi, PrimExpr(cv))) {
    m->groups = 1;
    m->opg = m->o;
    if (m->ch != m->ki) return false;
  } else {
    m->opg = 0;
    for (int64_t oo = 1; oo < m->o && m->opg == 0; ++oo) {
      auto v = EvalAt(chi, {{ov.get(), oo}, {cv.get(), 0}});
      if (!v) return false;
      if (*v != 0) m->opg = oo;
    }
    if (m->opg == 0 || m->o % m->opg != 0) return false;
    m->groups = m->o / m->opg;
    if (m->ch != m->ki * m->groups) return false;
    if (!arith::CanProveEqual(chi, MakeBinary(TirKind::kFloorDiv, PrimExpr(ov), I64(m->opg)) * I64(m->ki) + PrimExpr(cv))) return false;
  }
  // Bounds: every check that can fail must be present.
  bool need[4] = {m->pt > 0, (m->ho - 1) * m->sh + (m->kh - 1) * m->dh - m->pt >= m->h, m->pl > 0,
                  (m->wo - 1) * m->sw + (m->kw - 1) * m->dw - m->pl >= m->w};
  for (int t = 0; t < 4; ++t)
    if (need[t] && !r.have[t]) return false;
  return true;
}


bool MatchStage(const Stmt& s, const Buffer& src, const ConvNest& cv, Stage* e) {
  Stmt body;
  e->loops = PeelNest(s, &body);
  if (e->loops.size() != 4) return false;
  const int64_t ext[4] = {cv.n, cv.o, cv.ho, cv.wo};
  for (size_t d = 0; d < 4; ++d) {
    const int64_t* x = ConstInt(e->loops[d]->extent);
    if (!IsZero(e->loops[d]->min) || x == nullptr || *x != ext[d]) return false;
  }
  const auto* st = As<BufferStoreNode>(body);
  if (st == nullptr || st->buffer == src || !FloatPlain(st->buffer, 4)) return false;
  for (size_t d = 0; d < 4; ++d)
    if (Dim(st->buffer, d) != ext[d]) return false;
  if (!AtLoopPoint(st->indices, e->loops)) return false;
  BufferRefs refs;
  refs.VisitExpr(st->value);
  if (refs.loads.count(st->buffer->data.get()) || !refs.loads.count(src->data.get())) return false;
  for (const BufferLoadNode* l : refs.load_nodes) {
    if (l->buffer == src && !AtLoopPoint(l->indices, e->loops)) return false;
  }
  e->src = src;
  e->dst = st->buffer;
  e->dst_idx = st->indices;
  e->value = st->value;
  return true;
}


bool MatchChannelConcat(const Stmt& s, const Buffer& dst, std::vector<ConcatSource>* out) {
  Stmt body;
  std::vector<const ForNode*> loops = PeelNest(s, &body);
  const auto* st = As<BufferStoreNode>(body);
  if (loops.size() != 4 || st == nullptr || st->buffer != dst || !Float32Plain(dst, 4)) return false;
  for (size_t d = 0; d < 4; ++d) {
    const int64_t* x = ConstInt(loops[d]->extent);
    if (!IsZero(loops[d]->min) || x == nullptr || *x != Dim(dst, d)) return false;
  }
  if (!AtLoopPoint(st->indices, loops)) return false;
  const VarNode* cvar = loops[1]->loop_var.get();
  std::vector<ConcatSource> srcs;
  int64_t lo = 0;
  // The load of channels [lo, hi) from one source.
  auto take = [&](const PrimExpr& e, int64_t hi) {
    const auto* l = e.as<BufferLoadNode>();
    if (l == nullptr || l->buffer == dst || !Float32Plain(l->buffer, 4) || l->indices.size() != 4) return false;
    if (Dim(l->buffer, 1) != hi - lo) return false;
    for (size_t d : {0, 2, 3}) {
      if (Dim(l->buffer, d) != Dim(dst, d) || !IsLoopIndex(l->indices[d], loops[d])) return false;
    }
    if (!arith::CanProveEqual(l->indices[1], PrimExpr(loops[1]->loop_var) - I64(lo))) return false;
    srcs.push_back({l->buffer, lo, hi - lo, nullptr});
    lo = hi;
    return true;
  };
  PrimExpr e = st->value;
  while (true) {
    const auto* call = e.as<CallNode>();
    if (call == nullptr) break;
    if (call->op != "if_then_else" || call->args.size() != 3) return false;
    const auto* lt = call->args[0].as<LTNode>();
    const int64_t* k = lt ? ConstInt(lt->b) : nullptr;
    if (k == nullptr || !IsVar(lt->a, cvar) || *k <= lo || *k >= Dim(dst, 1)) return false;
    if (!take(call->args[1], *k)) return false;
    e = call->args[2];
  }
  if (srcs.empty() || !take(e, Dim(dst, 1))) return false;
  *out = std::move(srcs);
  return true;
}

}  // namespace conv
}  // namespace tir
}  // namespace kiln
