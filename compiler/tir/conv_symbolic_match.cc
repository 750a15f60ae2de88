// The symbolic conv schedule's matchers: the conv nest with its epilogue
// (MatchSymConv), an elementwise nest after one (MatchEpilogueNest) and the
// elementwise nest that computes its input (MatchPrologueNest).
#include "compiler/tir/conv_symbolic_kernel.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace symconv {

// A load at the loop point of `loops`: each index the loop's variable, or 0
// where the loop's extent is 1 (legalize writes X[0, c, y, x] for a batch
// of one; the epilogue of such a convolution is still at the loop point).
bool AtLoopPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops) {
  if (idx.size() > loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (IsVar(idx[d], loops[d]->loop_var.get())) continue;
    const int64_t* ext = ConstInt(loops[d]->extent);
    if (ext == nullptr || *ext != 1 || !IsZero(idx[d])) return false;
  }
  return true;
}

bool ExactlyVars(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops, size_t first) {
  if (idx.size() + first > loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!IsVar(idx[d], loops[first + d]->loop_var.get())) return false;
  return true;
}

bool AnySymbolic(const std::vector<PrimExpr>& shape) {
  for (const PrimExpr& d : shape)
    if (ConstInt(d) == nullptr) return true;
  return false;
}

namespace {

// The reduction (conv_match.h's matcher, symbolic extents allowed), with the
// symbolic schedule's own limits: an OIHW weight or one packed in blocks of
// output channels (OIHW<b>o, W[o / b, c, ky, kx, o % b]: WeightIndex reads
// it), X's image and channel indices of n, o and c only, and no unguarded
// padding.
bool MatchReduction(const Stmt& body, SymConv* m) {
  const auto& L = m->loops;
  conv::ConvReduction r;
  if (!conv::MatchConvReduction(body, L, &r)) return false;
  if (r.w_load->indices.size() == 5) {
    const int64_t* b = ConstInt(r.weight->shape[4]);
    if (b == nullptr || *b <= 0) return false;
    m->wblock = *b;
  } else if (r.w_load->indices.size() != 4) {
    return false;
  }
  m->out = r.out, m->data = r.data, m->weight = r.weight;
  m->x_load = r.x_load, m->w_load = r.w_load;
  m->sh = r.sh, m->sw = r.sw, m->dh = r.dh, m->dw = r.dw, m->pt = r.pt, m->pl = r.pl;
  // The image and channel indices may use n, o and c only.
  std::unordered_set<const VarNode*> spatial = {L[2]->loop_var.get(), L[3]->loop_var.get(), L[5]->loop_var.get(),
                                                L[6]->loop_var.get()};
  if (Uses(r.x_load->indices[0], spatial) || Uses(r.x_load->indices[1], spatial)) return false;
  m->guarded = r.inside.defined();
  return m->guarded || (m->pt == 0 && m->pl == 0);
}

}  // namespace

bool EpilogueOk(const SymConv& cv) {
  const SymConv* m = &cv;
  const auto& L = cv.loops;
  // Epilogue: only stores, each at the loop point; C read only at the loop
  // point and never stored; no buffer read before an epilogue statement
  // stores it (overlapping tiles compute some points twice, which must give
  // the same values), and X and W never stored.
  std::unordered_set<const VarNode*> stored;
  for (const Stmt& st : m->epilogue) {
    const auto* store = As<BufferStoreNode>(st);
    if (store == nullptr || !ExactlyVars(store->indices, L, 0) || store->buffer->shape.size() != 4) return false;
    const VarNode* dst = store->buffer->data.get();
    if (dst == m->out->data.get() || dst == m->data->data.get() || dst == m->weight->data.get()) return false;
    BufferRefs r = RefsOf(st);
    for (const BufferLoadNode* l : r.load_nodes) {
      const VarNode* b = l->buffer->data.get();
      if (b == m->out->data.get() && !AtLoopPoint(l->indices, L)) return false;
      if (b == dst && !stored.count(b)) return false;
    }
    stored.insert(dst);
  }
  for (const Stmt& st : m->epilogue) {
    for (const BufferLoadNode* l : RefsOf(st).load_nodes)
      if (stored.count(l->buffer->data.get()) && !AtLoopPoint(l->indices, L)) return false;
  }
  return true;
}

bool MatchSymConv(const Stmt& s, SymConv* m) {
  Stmt body;
  std::vector<const ForNode*> outer = PeelNest(s, &body);
  if (outer.size() == 7) {
    m->loops = outer;
  } else if (outer.size() == 4) {
    // The reduction nest first, then the epilogue stores, in the (n, o, y, x) loops.
    const auto* seq = As<SeqStmtNode>(body);
    if (seq == nullptr || seq->seq.size() < 2) return false;
    Stmt inner_body;
    std::vector<const ForNode*> inner = PeelNest(seq->seq[0], &inner_body);
    if (inner.size() != 3) return false;
    m->loops = outer;
    m->loops.insert(m->loops.end(), inner.begin(), inner.end());
    m->epilogue.assign(seq->seq.begin() + 1, seq->seq.end());
    body = inner_body;
  } else {
    return false;
  }
  const auto& L = m->loops;
  for (const ForNode* l : L)
    if (!IsZero(l->min) || l->for_kind == ForKind::kVectorized) return false;
  // Channels and taps static; something else symbolic (static nests belong to ScheduleConvs).
  const int64_t* o = ConstInt(L[1]->extent);
  const int64_t* ki = ConstInt(L[4]->extent);
  const int64_t* kh = ConstInt(L[5]->extent);
  const int64_t* kw = ConstInt(L[6]->extent);
  if (o == nullptr || ki == nullptr || kh == nullptr || kw == nullptr || *o <= 0 || *ki <= 0 || *kh <= 0 ||
      *kw <= 0) {
    return false;
  }
  m->o = *o, m->ki = *ki, m->kh = *kh, m->kw = *kw;
  if (ConstInt(L[0]->extent) && ConstInt(L[2]->extent) && ConstInt(L[3]->extent)) return false;
  if (!MatchReduction(body, m)) return false;
  if (!AnySymbolic(m->data->shape) && !AnySymbolic(m->out->shape)) return false;
  for (size_t d = 0; d < 4; ++d)
    if (!ProvenSameExtent(m->out->shape[d], L[d]->extent))
      return false;
  return EpilogueOk(*m);
}

// The elementwise nest `s` after a convolution: four loops over the
// convolution's output extents (any kinds: the default schedule may have
// vectorized or parallelized them) around stores at the loop point; its
// statements with the convolution's loop variables, or false.
bool MatchEpilogueNest(const Stmt& s, const SymConv& cv, std::vector<Stmt>* out) {
  Stmt body;
  std::vector<const ForNode*> L = PeelNest(s, &body);
  if (L.size() != 4) return false;
  VarMap map;
  for (size_t d = 0; d < 4; ++d) {
    if (!IsZero(L[d]->min)) return false;
    if (!ProvenSameExtent(L[d]->extent, cv.loops[d]->extent))
      return false;
    map[L[d]->loop_var.get()] = PrimExpr(cv.loops[d]->loop_var);
  }
  std::vector<Stmt> stmts;
  if (const auto* seq = As<SeqStmtNode>(body)) {
    stmts = seq->seq;
  } else {
    stmts = {body};
  }
  for (const Stmt& st : stmts) {
    const auto* store = As<BufferStoreNode>(st);
    if (store == nullptr || !ExactlyVars(store->indices, L, 0)) return false;
    out->push_back(Substitute(st, map));
  }
  return true;
}

bool MatchPrologueNest(const Stmt& s, const Buffer& dst, const std::vector<PrimExpr>& at, PrimExpr* value) {
  Stmt body;
  std::vector<const ForNode*> L = PeelNest(s, &body);
  const auto* store = As<BufferStoreNode>(body);
  if (L.empty() || store == nullptr || store->buffer->data.get() != dst->data.get() ||
      store->indices.size() != at.size())
    return false;
  std::unordered_set<const VarNode*> vars;
  for (const ForNode* l : L) {
    if (!IsZero(l->min)) return false;
    vars.insert(l->loop_var.get());
  }
  // Each index a loop variable, or v // K or v % K of a constant K: every
  // loop variable in one index, or in the pair (v // K, v % K) that the
  // default schedule makes of two fused loops; so every loop point stores
  // its own element.
  std::unordered_map<const VarNode*, std::vector<std::pair<TirKind, int64_t>>> uses;
  for (const PrimExpr& e : store->indices) {
    if (const auto* v = e.as<VarNode>(); v != nullptr && vars.count(v)) {
      uses[v].push_back({TirKind::kVar, 0});
      continue;
    }
    const auto* b = dynamic_cast<const BinaryNode*>(e.get());
    if (b == nullptr || (e->kind() != TirKind::kFloorDiv && e->kind() != TirKind::kFloorMod)) return false;
    const auto* v = b->a.as<VarNode>();
    const int64_t* k = ConstInt(b->b);
    if (v == nullptr || !vars.count(v) || k == nullptr || *k <= 0) return false;
    uses[v].push_back({e->kind(), *k});
  }
  for (const VarNode* v : vars) {
    auto it = uses.find(v);
    if (it == uses.end()) return false;
    const auto& u = it->second;
    const bool plain = u.size() == 1 && u[0].first == TirKind::kVar;
    const bool pair = u.size() == 2 && u[0].first == TirKind::kFloorDiv && u[1].first == TirKind::kFloorMod &&
                      u[0].second == u[1].second;
    if (!plain && !pair) return false;
  }
  // The stored value at `at`: each index expression replaced by its
  // coordinate there; no loop variable may be left.
  struct AtPoint : StmtExprMutator {
    const std::vector<PrimExpr>* from;
    const std::vector<PrimExpr>* to;
    PrimExpr MutateExpr(const PrimExpr& e) override {
      for (size_t k = 0; k < from->size(); ++k)
        if (arith::StructuralEqual(e, (*from)[k])) return (*to)[k];
      return StmtExprMutator::MutateExpr(e);
    }
  } point;
  point.from = &store->indices;
  point.to = &at;
  PrimExpr v = point.MutateExpr(store->value);
  if (Uses(v, vars) || RefsOf(std::make_shared<EvaluateNode>(v)).loads.count(dst->data.get())) return false;
  // Cheap enough to compute again in every tile of channels that reads it:
  // at most kMaxPrologueOps adds, subtracts, multiplies, minima and maxima,
  // and one load that moves over the plane (the others, per image and
  // channel, are broadcasts). An exp or a divide, or a second tensor read
  // per point, would be redone O / MR times where the nest did it once.
  struct Cost : StmtExprVisitor {
    std::unordered_set<const VarNode*> plane;
    int ops = 0, plane_loads = 0;
    bool ok = true;
    void VisitExpr(const PrimExpr& e) override {
      switch (e->kind()) {
        case TirKind::kBufferLoad:
          for (const PrimExpr& i : e.as<BufferLoadNode>()->indices) {
            if (Uses(i, plane)) {
              ++plane_loads;
              break;
            }
          }
          return;
        case TirKind::kIntImm:
        case TirKind::kFloatImm:
        case TirKind::kVar:
          return;
        case TirKind::kAdd:
        case TirKind::kSub:
        case TirKind::kMul:
        case TirKind::kMin:
        case TirKind::kMax:
          ++ops;
          StmtExprVisitor::VisitExpr(e);
          return;
        default:
          ok = false;
      }
    }
  } cost;
  struct Vars : StmtExprVisitor {
    std::unordered_set<const VarNode*>* out;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* var = e.as<VarNode>()) out->insert(var);
      StmtExprVisitor::VisitExpr(e);
    }
  } plane_vars;
  plane_vars.out = &cost.plane;
  for (size_t k = at.size() >= 2 ? at.size() - 2 : 0; k < at.size(); ++k) plane_vars.VisitExpr(at[k]);
  cost.VisitExpr(v);
  if (!cost.ok || cost.ops > kMaxPrologueOps || cost.plane_loads > 1) return false;
  *value = v;
  return true;
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
