#include "compiler/transform/expr_mutator.h"

#include <memory>

#include "compiler/relax/op_registry.h"

namespace kiln {
namespace transform {

ir::Expr WithInfoOf(ir::Expr e, const ir::Expr& old) {
  const_cast<ir::ExprNode*>(e.get())->span = old->span;
  e->struct_info = old->struct_info;
  return e;
}

bool IsPureValue(const ir::Expr& e) {
  switch (e->kind) {
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      const auto* op = ir::ExprAs<ir::OpExpr>(c.op);
      if (!op || op->name == "relax.call_packed" || op->name == "relax.call_dps_packed") return false;
      if (!relax::FindOp(op->name)) return false;
      for (const auto& a : c.args)
        if (!IsPureValue(a)) return false;
      return true;
    }
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields)
        if (!IsPureValue(f)) return false;
      return true;
    case ir::ExprKind::kTupleGetItem: return IsPureValue(static_cast<const ir::TupleGetItemExpr&>(*e).tuple);
    case ir::ExprKind::kIf:
    case ir::ExprKind::kSeqExpr:
    case ir::ExprKind::kFunction: return false;
    default: return true;
  }
}

std::vector<ir::Expr> ExprMutator::VisitList(const std::vector<ir::Expr>& xs, bool* changed) {
  std::vector<ir::Expr> out;
  out.reserve(xs.size());
  for (const auto& x : xs) {
    out.push_back(VisitExpr(x));
    if (out.back() != x) *changed = true;
  }
  return out;
}

ir::StructInfo ExprMutator::MapShapes(const ir::StructInfo& s) {
  if (!s) return s;
  switch (s->kind) {
    case ir::SInfoKind::kTensor: {
      const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
      bool changed = false;
      std::vector<ir::PrimExpr> shape;
      for (const auto& d : t->shape) {
        shape.push_back(VisitPrimExpr(d));
        changed |= !shape.back().same_as(d);
      }
      if (!changed) return s;
      return std::make_shared<ir::TensorSInfo>(t->has_shape, shape, t->ndim, t->dtype, t->has_dtype);
    }
    case ir::SInfoKind::kShape: {
      const auto* t = ir::SInfoAs<ir::ShapeSInfo>(s);
      bool changed = false;
      std::vector<ir::PrimExpr> values;
      for (const auto& d : t->values) {
        values.push_back(VisitPrimExpr(d));
        changed |= !values.back().same_as(d);
      }
      if (!changed) return s;
      return std::make_shared<ir::ShapeSInfo>(t->has_values, values, t->ndim);
    }
    case ir::SInfoKind::kPrim: {
      const auto* t = ir::SInfoAs<ir::PrimSInfo>(s);
      if (!t->value.defined()) return s;
      ir::PrimExpr v = VisitPrimExpr(t->value);
      if (v.same_as(t->value)) return s;
      return std::make_shared<ir::PrimSInfo>(t->dtype, v);
    }
    case ir::SInfoKind::kTuple: {
      const auto* t = ir::SInfoAs<ir::TupleSInfo>(s);
      bool changed = false;
      std::vector<ir::StructInfo> fields;
      for (const auto& f : t->fields) {
        fields.push_back(MapShapes(f));
        changed |= fields.back() != f;
      }
      if (!changed) return s;
      return std::make_shared<ir::TupleSInfo>(fields);
    }
    case ir::SInfoKind::kFunc: {
      const auto* t = ir::SInfoAs<ir::FuncSInfo>(s);
      bool changed = false;
      std::vector<ir::StructInfo> params;
      for (const auto& p : t->params) {
        params.push_back(MapShapes(p));
        changed |= params.back() != p;
      }
      ir::StructInfo ret = MapShapes(t->ret);
      if (!changed && ret == t->ret) return s;
      auto out = std::make_shared<ir::FuncSInfo>(params, ret);
      out->opaque = t->opaque;
      return out;
    }
    case ir::SInfoKind::kObject: return s;
  }
  return s;
}

ir::RVar ExprMutator::VisitVarDef(const ir::RVar& v, const ir::StructInfo& new_annotation) {
  if (!copy_vars_ && new_annotation == v->annotation) return v;
  auto nv = std::make_shared<ir::VarExpr>(v->name, new_annotation, v->is_dataflow);
  nv->span = v->span;
  var_remap_[v.get()] = nv;
  return nv;
}

ir::Function ExprMutator::VisitFunction(const ir::Function& f) {
  bool changed = false;
  std::vector<ir::RVar> params;
  for (const auto& p : f->params) {
    params.push_back(VisitVarDef(p, VisitStructInfo(p->annotation)));
    changed |= params.back() != p;
  }
  ir::Expr body = VisitExpr(f->body);
  ir::StructInfo ret = VisitStructInfo(f->ret_sinfo);
  if (!changed && body == f->body && ret == f->ret_sinfo) return f;
  auto nf = std::make_shared<ir::FunctionExpr>(*f);
  nf->params = std::move(params);
  nf->body = body;
  nf->ret_sinfo = ret;
  return nf;
}

void ExprMutator::VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) {
  ir::Binding nb = b;
  nb.value = VisitExpr(b.value);
  nb.match_cast = VisitStructInfo(b.match_cast);
  nb.var = VisitVarDef(b.var, VisitStructInfo(b.var->annotation));
  out->push_back(std::move(nb));
}

ir::BindingBlock ExprMutator::VisitBlock(const ir::BindingBlock& block) {
  ir::BindingBlock out;
  out.is_dataflow = block.is_dataflow;
  for (const auto& b : block.bindings) VisitBinding(b, block.is_dataflow, &out.bindings);
  return out;
}

ir::Expr ExprMutator::VisitExpr(const ir::Expr& e) {
  if (!e) return e;
  switch (e->kind) {
    case ir::ExprKind::kVar: {
      auto it = var_remap_.find(static_cast<const ir::VarExpr*>(e.get()));
      return it == var_remap_.end() ? e : it->second;
    }
    case ir::ExprKind::kTuple: {
      const auto& t = static_cast<const ir::TupleExpr&>(*e);
      bool changed = false;
      std::vector<ir::Expr> fields = VisitList(t.fields, &changed);
      if (!changed) return e;
      return WithInfoOf(std::make_shared<ir::TupleExpr>(std::move(fields)), e);
    }
    case ir::ExprKind::kTupleGetItem: {
      const auto& g = static_cast<const ir::TupleGetItemExpr&>(*e);
      ir::Expr t = VisitExpr(g.tuple);
      if (t == g.tuple) return e;
      return WithInfoOf(std::make_shared<ir::TupleGetItemExpr>(t, g.index), e);
    }
    case ir::ExprKind::kShapeExpr: {
      const auto& s = static_cast<const ir::ShapeExpr&>(*e);
      bool changed = false;
      std::vector<ir::PrimExpr> values;
      for (const auto& v : s.values) {
        values.push_back(VisitPrimExpr(v));
        changed |= !values.back().same_as(v);
      }
      if (!changed) return e;
      return WithInfoOf(std::make_shared<ir::ShapeExpr>(std::move(values)), e);
    }
    case ir::ExprKind::kPrimValue: {
      const auto& p = static_cast<const ir::PrimValueExpr&>(*e);
      ir::PrimExpr v = VisitPrimExpr(p.value);
      if (v.same_as(p.value)) return e;
      return WithInfoOf(std::make_shared<ir::PrimValueExpr>(v), e);
    }
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      bool changed = false;
      ir::Expr op = VisitExpr(c.op);
      changed |= op != c.op;
      std::vector<ir::Expr> args = VisitList(c.args, &changed);
      std::vector<ir::StructInfo> sinfo;
      for (const auto& s : c.sinfo_args) {
        sinfo.push_back(VisitStructInfo(s));
        changed |= sinfo.back() != s;
      }
      if (!changed) return e;
      return WithInfoOf(std::make_shared<ir::CallExpr>(op, std::move(args), c.attrs, std::move(sinfo)), e);
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      bool changed = false;
      std::vector<ir::BindingBlock> blocks;
      for (const auto& b : s.blocks) {
        ir::BindingBlock nb = VisitBlock(b);
        bool same = nb.bindings.size() == b.bindings.size();
        for (size_t i = 0; same && i < nb.bindings.size(); ++i) {
          const auto &x = nb.bindings[i], &y = b.bindings[i];
          same = x.var == y.var && x.value == y.value && x.match_cast == y.match_cast;
        }
        changed |= !same;
        if (!nb.bindings.empty() || !b.bindings.empty()) {
          if (nb.bindings.empty()) continue;  // a block emptied by the pass goes away
        }
        blocks.push_back(std::move(nb));
      }
      ir::Expr body = VisitExpr(s.body);
      if (!changed && body == s.body) return e;
      return WithInfoOf(std::make_shared<ir::SeqExprNode>(std::move(blocks), body), e);
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      ir::Expr c = VisitExpr(i.cond), t = VisitExpr(i.then_branch), f = VisitExpr(i.else_branch);
      if (c == i.cond && t == i.then_branch && f == i.else_branch) return e;
      return WithInfoOf(std::make_shared<ir::IfExpr>(c, t, f), e);
    }
    default: return e;
  }
}

}  // namespace transform
}  // namespace kiln
