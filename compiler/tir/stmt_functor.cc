#include "compiler/tir/stmt_functor.h"

#include <memory>
#include <utility>

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT: the IR vocabulary is what this file is about

namespace {

template <typename T>
PrimExpr WithSpan(std::shared_ptr<T> n, const TirNode* old) {
  n->span = old->span;
  return PrimExpr(std::move(n));
}

template <typename T>
Stmt StmtWithSpan(std::shared_ptr<T> n, const TirNode* old) {
  n->span = old->span;
  return n;
}

}  // namespace

bool StmtExprMutator::MutateExprs(const std::vector<PrimExpr>& in, std::vector<PrimExpr>* out) {
  bool changed = false;
  out->clear();
  out->reserve(in.size());
  for (const auto& e : in) {
    out->push_back(MutateExpr(e));
    changed |= !out->back().same_as(e);
  }
  return changed;
}

PrimExpr StmtExprMutator::MutateExpr(const PrimExpr& e) {
  if (!e.defined()) return e;
  const PrimExprNode* n = e.get();
  TirKind k = n->kind();
  if (IsBinary(k)) {
    const auto* b = static_cast<const BinaryNode*>(n);
    PrimExpr a = MutateExpr(b->a), c = MutateExpr(b->b);
    if (a.same_as(b->a) && c.same_as(b->b)) return e;
    PrimExpr r = MakeBinary(k, a, c);
    const_cast<PrimExprNode*>(r.get())->span = n->span;
    return r;
  }
  switch (k) {
    case TirKind::kIntImm:
    case TirKind::kFloatImm:
    case TirKind::kStringImm:
    case TirKind::kVar:
      return e;
    case TirKind::kNot: {
      const auto* x = e.as<NotNode>();
      PrimExpr a = MutateExpr(x->a);
      if (a.same_as(x->a)) return e;
      return WithSpan(std::make_shared<NotNode>(a), n);
    }
    case TirKind::kCast: {
      const auto* x = e.as<CastNode>();
      PrimExpr v = MutateExpr(x->value);
      if (v.same_as(x->value)) return e;
      return WithSpan(std::make_shared<CastNode>(x->dtype, v), n);
    }
    case TirKind::kSelect: {
      const auto* x = e.as<SelectNode>();
      PrimExpr c = MutateExpr(x->cond), t = MutateExpr(x->true_value), f = MutateExpr(x->false_value);
      if (c.same_as(x->cond) && t.same_as(x->true_value) && f.same_as(x->false_value)) return e;
      return WithSpan(std::make_shared<SelectNode>(c, t, f), n);
    }
    case TirKind::kBufferLoad: {
      const auto* x = e.as<BufferLoadNode>();
      std::vector<PrimExpr> idx;
      if (!MutateExprs(x->indices, &idx)) return e;
      return WithSpan(std::make_shared<BufferLoadNode>(x->buffer, std::move(idx)), n);
    }
    case TirKind::kCall: {
      const auto* x = e.as<CallNode>();
      std::vector<PrimExpr> args;
      if (!MutateExprs(x->args, &args)) return e;
      return WithSpan(std::make_shared<CallNode>(x->dtype, x->op, std::move(args)), n);
    }
    default:
      break;
  }
  KILN_CHECK(false, "StmtExprMutator: unexpected expression kind %s", TirKindName(k));
  return e;
}

Stmt StmtExprMutator::MutateStmt(const Stmt& s) {
  if (!s) return s;
  switch (s->kind()) {
    case TirKind::kBufferStore: {
      const auto* x = As<BufferStoreNode>(s);
      PrimExpr v = MutateExpr(x->value);
      std::vector<PrimExpr> idx;
      bool changed = MutateExprs(x->indices, &idx);
      if (!changed && v.same_as(x->value)) return s;
      return StmtWithSpan(std::make_shared<BufferStoreNode>(x->buffer, v, std::move(idx)), s.get());
    }
    case TirKind::kFor: {
      const auto* x = As<ForNode>(s);
      PrimExpr mn = MutateExpr(x->min), ext = MutateExpr(x->extent);
      Stmt body = MutateStmt(x->body);
      if (mn.same_as(x->min) && ext.same_as(x->extent) && body == x->body) return s;
      return StmtWithSpan(std::make_shared<ForNode>(x->loop_var, mn, ext, x->for_kind, body, x->thread_tag), s.get());
    }
    case TirKind::kSeqStmt: {
      const auto* x = As<SeqStmtNode>(s);
      std::vector<Stmt> seq;
      bool changed = false;
      for (const auto& c : x->seq) {
        seq.push_back(MutateStmt(c));
        changed |= seq.back() != c;
      }
      if (!changed) return s;
      Stmt r = Seq(std::move(seq));
      if (r) const_cast<StmtNode*>(r.get())->span = s->span;
      return r;
    }
    case TirKind::kIfThenElse: {
      const auto* x = As<IfThenElseNode>(s);
      PrimExpr c = MutateExpr(x->cond);
      Stmt t = MutateStmt(x->then_case), f = MutateStmt(x->else_case);
      if (c.same_as(x->cond) && t == x->then_case && f == x->else_case) return s;
      return StmtWithSpan(std::make_shared<IfThenElseNode>(c, t, f), s.get());
    }
    case TirKind::kLetStmt: {
      const auto* x = As<LetStmtNode>(s);
      PrimExpr v = MutateExpr(x->value);
      Stmt body = MutateStmt(x->body);
      if (v.same_as(x->value) && body == x->body) return s;
      return StmtWithSpan(std::make_shared<LetStmtNode>(x->var, v, body), s.get());
    }
    case TirKind::kEvaluate: {
      const auto* x = As<EvaluateNode>(s);
      PrimExpr v = MutateExpr(x->value);
      if (v.same_as(x->value)) return s;
      return StmtWithSpan(std::make_shared<EvaluateNode>(v), s.get());
    }
    case TirKind::kAllocate: {
      const auto* x = As<AllocateNode>(s);
      Stmt body = MutateStmt(x->body);
      if (body == x->body) return s;
      return StmtWithSpan(std::make_shared<AllocateNode>(x->buffer, body), s.get());
    }
    case TirKind::kBlockRealize: {
      const auto* x = As<BlockRealizeNode>(s);
      std::vector<PrimExpr> values;
      bool changed = MutateExprs(x->iter_values, &values);
      PrimExpr pred = MutateExpr(x->predicate);
      changed |= !pred.same_as(x->predicate);
      Block b = x->block;
      for (auto& iv : b.iter_vars) {
        PrimExpr mn = MutateExpr(iv.min), ext = MutateExpr(iv.extent);
        changed |= !mn.same_as(iv.min) || !ext.same_as(iv.extent);
        iv.min = mn;
        iv.extent = ext;
      }
      for (auto* regions : {&b.reads, &b.writes}) {
        for (auto& region : *regions) {
          for (auto& r : region.ranges) {
            PrimExpr mn = MutateExpr(r.first), ext = MutateExpr(r.second);
            changed |= !mn.same_as(r.first) || !ext.same_as(r.second);
            r = {mn, ext};
          }
        }
      }
      b.init = MutateStmt(x->block.init);
      b.body = MutateStmt(x->block.body);
      changed |= b.init != x->block.init || b.body != x->block.body;
      if (!changed) return s;
      return StmtWithSpan(std::make_shared<BlockRealizeNode>(std::move(values), pred, std::move(b)), s.get());
    }
    default:
      break;
  }
  KILN_CHECK(false, "StmtExprMutator: unexpected statement kind %s", TirKindName(s->kind()));
  return s;
}

void StmtExprVisitor::VisitExpr(const PrimExpr& e) {
  if (!e.defined()) return;
  const PrimExprNode* n = e.get();
  if (IsBinary(n->kind())) {
    const auto* b = static_cast<const BinaryNode*>(n);
    VisitExpr(b->a);
    VisitExpr(b->b);
    return;
  }
  switch (n->kind()) {
    case TirKind::kNot: VisitExpr(e.as<NotNode>()->a); return;
    case TirKind::kCast: VisitExpr(e.as<CastNode>()->value); return;
    case TirKind::kSelect: {
      const auto* x = e.as<SelectNode>();
      VisitExpr(x->cond);
      VisitExpr(x->true_value);
      VisitExpr(x->false_value);
      return;
    }
    case TirKind::kBufferLoad:
      for (const auto& i : e.as<BufferLoadNode>()->indices) VisitExpr(i);
      return;
    case TirKind::kCall:
      for (const auto& a : e.as<CallNode>()->args) VisitExpr(a);
      return;
    default:
      return;  // leaves
  }
}

void StmtExprVisitor::VisitStmt(const Stmt& s) {
  if (!s) return;
  switch (s->kind()) {
    case TirKind::kBufferStore: {
      const auto* x = As<BufferStoreNode>(s);
      VisitExpr(x->value);
      for (const auto& i : x->indices) VisitExpr(i);
      return;
    }
    case TirKind::kFor: {
      const auto* x = As<ForNode>(s);
      VisitExpr(x->min);
      VisitExpr(x->extent);
      VisitStmt(x->body);
      return;
    }
    case TirKind::kSeqStmt:
      for (const auto& c : As<SeqStmtNode>(s)->seq) VisitStmt(c);
      return;
    case TirKind::kIfThenElse: {
      const auto* x = As<IfThenElseNode>(s);
      VisitExpr(x->cond);
      VisitStmt(x->then_case);
      VisitStmt(x->else_case);
      return;
    }
    case TirKind::kLetStmt: {
      const auto* x = As<LetStmtNode>(s);
      VisitExpr(x->value);
      VisitStmt(x->body);
      return;
    }
    case TirKind::kEvaluate: VisitExpr(As<EvaluateNode>(s)->value); return;
    case TirKind::kAllocate: VisitStmt(As<AllocateNode>(s)->body); return;
    case TirKind::kBlockRealize: {
      const auto* x = As<BlockRealizeNode>(s);
      for (const auto& v : x->iter_values) VisitExpr(v);
      VisitExpr(x->predicate);
      for (const auto& iv : x->block.iter_vars) {
        VisitExpr(iv.min);
        VisitExpr(iv.extent);
      }
      VisitStmt(x->block.init);
      VisitStmt(x->block.body);
      return;
    }
    default:
      KILN_CHECK(false, "StmtExprVisitor: unexpected statement kind %s", TirKindName(s->kind()));
  }
}

}  // namespace tir
}  // namespace kiln
