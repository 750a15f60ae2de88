#include "compiler/ir/structural_equal.h"

#include <cstring>
#include <map>
#include <vector>

namespace kiln {
namespace ir {
namespace {

class Equal {
 public:
  std::string why;

  // ------------------------------------------------------------ bookkeeping

  struct PathScope {
    PathScope(Equal* e, std::string s) : e_(e) { e_->path_.push_back(std::move(s)); }
    ~PathScope() { e_->path_.pop_back(); }
    Equal* e_;
  };

  bool Fail(const std::string& what) {
    if (why.empty()) {
      for (const auto& p : path_) why += p + " / ";
      why += what;
    }
    return false;
  }

  // A bijection between the definitions of both sides.
  template <typename T>
  struct Bijection {
    std::map<const T*, const T*> fwd, back;
    // Maps a to b when neither is mapped; true when a <-> b after the call.
    bool Match(const T* a, const T* b) {
      auto fa = fwd.find(a);
      auto fb = back.find(b);
      if (fa == fwd.end() && fb == back.end()) {
        fwd[a] = b;
        back[b] = a;
        return true;
      }
      return fa != fwd.end() && fa->second == b;
    }
  };

  bool DefineVar(const Var& a, const Var& b) {
    if (!a || !b) return a == b || Fail("variable missing on one side");
    if (a->dtype != b->dtype)
      return Fail("variable " + a->name + " has dtype " + DTypeToString(a->dtype) + " vs " + DTypeToString(b->dtype));
    if (!vars_.Match(a.get(), b.get())) return Fail("variable " + a->name + " vs " + b->name + " defined differently");
    return true;
  }

  // ------------------------------------------------------------ TIR

  bool P(const PrimExpr& a, const PrimExpr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined() || Fail("expression missing on one side");
    if (a->kind() != b->kind())
      return Fail(std::string("expression kind ") + TirKindName(a->kind()) + " vs " + TirKindName(b->kind()));
    if (a.dtype() != b.dtype())
      return Fail(std::string(TirKindName(a->kind())) + " dtype " + DTypeToString(a.dtype()) + " vs " + DTypeToString(b.dtype()));
    switch (a->kind()) {
      case TirKind::kIntImm:
        return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value ||
               Fail("integer " + std::to_string(a.as<IntImmNode>()->value) + " vs " + std::to_string(b.as<IntImmNode>()->value));
      case TirKind::kFloatImm: {
        double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
        return x == y || (x != x && y != y) || Fail("float " + std::to_string(x) + " vs " + std::to_string(y));
      }
      case TirKind::kStringImm:
        return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value || Fail("string literal differs");
      case TirKind::kVar: {
        auto va = std::static_pointer_cast<const VarNode>(a.node());
        auto vb = std::static_pointer_cast<const VarNode>(b.node());
        return vars_.Match(va.get(), vb.get()) || Fail("variable " + va->name + " vs " + vb->name);
      }
      case TirKind::kNot: return P(a.as<NotNode>()->a, b.as<NotNode>()->a);
      case TirKind::kCast: return P(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case TirKind::kSelect: {
        const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
        return P(x->cond, y->cond) && P(x->true_value, y->true_value) && P(x->false_value, y->false_value);
      }
      case TirKind::kBufferLoad: {
        const auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
        return BufferRef(x->buffer, y->buffer) && Exprs(x->indices, y->indices, "index");
      }
      case TirKind::kCall: {
        const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
        if (x->op != y->op) return Fail("call of " + x->op + " vs " + y->op);
        return Exprs(x->args, y->args, "arg");
      }
      default: break;
    }
    const auto* x = static_cast<const BinaryNode*>(a.get());
    const auto* y = static_cast<const BinaryNode*>(b.get());
    return P(x->a, y->a) && P(x->b, y->b);
  }

  bool Exprs(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b, const char* what) {
    if (a.size() != b.size()) return Fail(StrFormat("%zu vs %zu %ss", a.size(), b.size(), what));
    for (size_t i = 0; i < a.size(); ++i) {
      PathScope s(this, StrFormat("%s %zu", what, i));
      if (!P(a[i], b[i])) return false;
    }
    return true;
  }

  bool DefineBuffer(const Buffer& a, const Buffer& b) {
    PathScope s(this, "buffer " + a->name);
    if (a->dtype != b->dtype) return Fail("dtype " + DTypeToString(a->dtype) + " vs " + DTypeToString(b->dtype));
    if (a->scope != b->scope) return Fail("scope " + a->scope + " vs " + b->scope);
    if (!Exprs(a->shape, b->shape, "dim") || !Exprs(a->strides, b->strides, "stride")) return false;
    if (!buffers_.Match(a.get(), b.get())) return Fail("buffer " + a->name + " vs " + b->name + " defined differently");
    return true;
  }

  bool BufferRef(const Buffer& a, const Buffer& b) {
    if (buffers_.fwd.count(a.get()) || buffers_.back.count(b.get()))
      return buffers_.Match(a.get(), b.get()) || Fail("buffer " + a->name + " vs " + b->name);
    return DefineBuffer(a, b);
  }

  bool Regions(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b, const char* what) {
    if (a.size() != b.size()) return Fail(StrFormat("%zu vs %zu %s regions", a.size(), b.size(), what));
    for (size_t i = 0; i < a.size(); ++i) {
      PathScope s(this, StrFormat("%s %zu", what, i));
      if (!BufferRef(a[i].buffer, b[i].buffer)) return false;
      if (a[i].ranges.size() != b[i].ranges.size()) return Fail("region rank differs");
      for (size_t k = 0; k < a[i].ranges.size(); ++k)
        if (!P(a[i].ranges[k].first, b[i].ranges[k].first) || !P(a[i].ranges[k].second, b[i].ranges[k].second))
          return false;
    }
    return true;
  }

  bool S(const Stmt& a, const Stmt& b) {
    if (!a || !b) return (!a && !b) || Fail("statement missing on one side");
    if (a->kind() != b->kind())
      return Fail(std::string("statement ") + TirKindName(a->kind()) + " vs " + TirKindName(b->kind()));
    switch (a->kind()) {
      case TirKind::kBufferStore: {
        const auto *x = As<BufferStoreNode>(a), *y = As<BufferStoreNode>(b);
        PathScope s(this, "store to " + x->buffer->name);
        return BufferRef(x->buffer, y->buffer) && Exprs(x->indices, y->indices, "index") && P(x->value, y->value);
      }
      case TirKind::kFor: {
        const auto *x = As<ForNode>(a), *y = As<ForNode>(b);
        PathScope s(this, "for " + x->loop_var->name);
        if (x->for_kind != y->for_kind) return Fail(std::string("loop kind ") + ForKindName(x->for_kind) + " vs " + ForKindName(y->for_kind));
        if (x->thread_tag != y->thread_tag) return Fail("thread " + x->thread_tag + " vs " + y->thread_tag);
        return P(x->min, y->min) && P(x->extent, y->extent) && DefineVar(x->loop_var, y->loop_var) && S(x->body, y->body);
      }
      case TirKind::kSeqStmt: {
        const auto &x = As<SeqStmtNode>(a)->seq, &y = As<SeqStmtNode>(b)->seq;
        if (x.size() != y.size()) return Fail(StrFormat("%zu vs %zu statements", x.size(), y.size()));
        for (size_t i = 0; i < x.size(); ++i) {
          PathScope s(this, StrFormat("stmt %zu", i));
          if (!S(x[i], y[i])) return false;
        }
        return true;
      }
      case TirKind::kIfThenElse: {
        const auto *x = As<IfThenElseNode>(a), *y = As<IfThenElseNode>(b);
        PathScope s(this, "if");
        return P(x->cond, y->cond) && S(x->then_case, y->then_case) && S(x->else_case, y->else_case);
      }
      case TirKind::kLetStmt: {
        const auto *x = As<LetStmtNode>(a), *y = As<LetStmtNode>(b);
        PathScope s(this, "let " + x->var->name);
        return P(x->value, y->value) && DefineVar(x->var, y->var) && S(x->body, y->body);
      }
      case TirKind::kEvaluate: return P(As<EvaluateNode>(a)->value, As<EvaluateNode>(b)->value);
      case TirKind::kAllocate: {
        const auto *x = As<AllocateNode>(a), *y = As<AllocateNode>(b);
        return DefineBuffer(x->buffer, y->buffer) && S(x->body, y->body);
      }
      case TirKind::kBlockRealize: {
        const auto *x = As<BlockRealizeNode>(a), *y = As<BlockRealizeNode>(b);
        const Block &p = x->block, &q = y->block;
        PathScope s(this, "block " + p.name);
        if (p.name != q.name) return Fail("block name " + p.name + " vs " + q.name);
        if (!Exprs(x->iter_values, y->iter_values, "iter value") || !P(x->predicate, y->predicate)) return false;
        if (p.iter_vars.size() != q.iter_vars.size()) return Fail("number of block iterators differs");
        for (size_t i = 0; i < p.iter_vars.size(); ++i) {
          const IterVar &u = p.iter_vars[i], &v = q.iter_vars[i];
          PathScope si(this, "iter " + u.var->name);
          if (u.kind != v.kind) return Fail("spatial vs reduce");
          if (!P(u.min, v.min) || !P(u.extent, v.extent) || !DefineVar(u.var, v.var)) return false;
        }
        if (p.alloc_buffers.size() != q.alloc_buffers.size()) return Fail("number of allocated buffers differs");
        for (size_t i = 0; i < p.alloc_buffers.size(); ++i)
          if (!DefineBuffer(p.alloc_buffers[i], q.alloc_buffers[i])) return false;
        if (p.annotations != q.annotations) return Fail("block annotations differ");
        if (!Regions(p.reads, q.reads, "read") || !Regions(p.writes, q.writes, "write")) return false;
        {
          PathScope si(this, "init");
          if (!S(p.init, q.init)) return false;
        }
        return S(p.body, q.body);
      }
      default: return Fail("unknown statement kind");
    }
  }

  bool Attrs(const AttrMap& a, const AttrMap& b) {
    if (a == b) return true;
    for (const auto& kv : a)
      if (!b.count(kv.first) || !(b.at(kv.first) == kv.second)) return Fail("attribute " + kv.first + " differs");
    for (const auto& kv : b)
      if (!a.count(kv.first)) return Fail("attribute " + kv.first + " only on the right");
    return Fail("attributes differ");
  }

  bool Prim(const PrimFunc& a, const PrimFunc& b) {
    if (!a || !b) return a == b || Fail("function missing on one side");
    if (a->params.size() != b->params.size())
      return Fail(StrFormat("%zu vs %zu parameters", a->params.size(), b->params.size()));
    for (size_t i = 0; i < a->params.size(); ++i) {
      PathScope s(this, "param " + a->params[i]->name);
      if (!DefineVar(a->params[i], b->params[i])) return false;
    }
    if (a->buffer_map.size() != b->buffer_map.size()) return Fail("buffer_map sizes differ");
    // Buffers bind in parameter order, so the first shapes define the
    // symbolic variables on both sides alike.
    for (const auto& pa : a->params) {
      Buffer ba = a->BufferOf(pa);
      Buffer bb = b->BufferOf(b->params[&pa - &a->params[0]]);
      if (!ba || !bb) {
        if (ba || bb) return Fail("parameter " + pa->name + " is bound to a buffer on one side only");
        continue;
      }
      if (!DefineBuffer(ba, bb)) return false;
    }
    if (!Attrs(a->attrs, b->attrs)) return false;
    if (a->is_private != b->is_private) return Fail("private on one side only");
    PathScope s(this, "body");
    return S(a->body, b->body);
  }

  // ------------------------------------------------------------ Relax

  bool SI(const StructInfo& a, const StructInfo& b) {
    if (!a || !b) return (!a && !b) || Fail("struct info missing on one side");
    if (a->kind != b->kind) return Fail("struct info kinds differ");
    switch (a->kind) {
      case SInfoKind::kObject: return true;
      case SInfoKind::kPrim: {
        const auto *x = SInfoAs<PrimSInfo>(a), *y = SInfoAs<PrimSInfo>(b);
        return (x->dtype == y->dtype || Fail("R.Prim dtype differs")) && P(x->value, y->value);
      }
      case SInfoKind::kShape: {
        const auto *x = SInfoAs<ShapeSInfo>(a), *y = SInfoAs<ShapeSInfo>(b);
        if (x->has_values != y->has_values || x->ndim != y->ndim) return Fail("R.Shape differs");
        return Exprs(x->values, y->values, "dim");
      }
      case SInfoKind::kTensor: {
        const auto *x = SInfoAs<TensorSInfo>(a), *y = SInfoAs<TensorSInfo>(b);
        if (x->has_dtype != y->has_dtype || (x->has_dtype && x->dtype != y->dtype))
          return Fail("R.Tensor dtype " + DTypeToString(x->dtype) + " vs " + DTypeToString(y->dtype));
        if (x->has_shape != y->has_shape || x->ndim != y->ndim) return Fail(StrFormat("R.Tensor ndim %d vs %d", x->ndim, y->ndim));
        return Exprs(x->shape, y->shape, "dim");
      }
      case SInfoKind::kTuple: {
        const auto &x = SInfoAs<TupleSInfo>(a)->fields, &y = SInfoAs<TupleSInfo>(b)->fields;
        if (x.size() != y.size()) return Fail("R.Tuple sizes differ");
        for (size_t i = 0; i < x.size(); ++i)
          if (!SI(x[i], y[i])) return false;
        return true;
      }
      case SInfoKind::kFunc: {
        const auto *x = SInfoAs<FuncSInfo>(a), *y = SInfoAs<FuncSInfo>(b);
        if (x->opaque != y->opaque || x->params.size() != y->params.size()) return Fail("R.Callable differs");
        for (size_t i = 0; i < x->params.size(); ++i)
          if (!SI(x->params[i], y->params[i])) return false;
        return SI(x->ret, y->ret);
      }
    }
    return Fail("unknown struct info");
  }

  static StructInfo Effective(const VarExpr& v) { return v.struct_info ? v.struct_info : v.annotation; }

  bool DefineRVar(const RVar& a, const RVar& b) {
    if (a->is_dataflow != b->is_dataflow) return Fail("variable " + a->name + ": dataflow vs non-dataflow");
    {
      PathScope s(this, "struct info of " + a->name);
      if (!SI(Effective(*a), Effective(*b))) return false;
    }
    if (!rvars_.Match(a.get(), b.get())) return Fail("variable " + a->name + " vs " + b->name + " defined differently");
    return true;
  }

  bool Tensors(const Tensor& a, const Tensor& b) {
    if (a.defined() != b.defined()) return Fail("constant data missing on one side");
    if (!a.defined()) return true;
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return Fail("constant " + a.TypeString() + " vs " + b.TypeString());
    if (!a.IsCompact() || !b.IsCompact()) return Fail("non-compact constants cannot be compared");
    return std::memcmp(a.raw_data(), b.raw_data(), a.NumBytes()) == 0 || Fail("constant values differ");
  }

  bool Rx(const Expr& a, const Expr& b) {
    if (!a || !b) return (!a && !b) || Fail("expression missing on one side");
    if (a->kind != b->kind) return Fail("expression kinds differ");
    switch (a->kind) {
      case ExprKind::kVar: {
        const auto *x = ExprAs<VarExpr>(a), *y = ExprAs<VarExpr>(b);
        return rvars_.Match(x, y) || Fail("variable " + x->name + " vs " + y->name);
      }
      case ExprKind::kConstant: return Tensors(ExprAs<ConstantExpr>(a)->data, ExprAs<ConstantExpr>(b)->data);
      case ExprKind::kTuple: return RxList(ExprAs<TupleExpr>(a)->fields, ExprAs<TupleExpr>(b)->fields, "field");
      case ExprKind::kTupleGetItem: {
        const auto *x = ExprAs<TupleGetItemExpr>(a), *y = ExprAs<TupleGetItemExpr>(b);
        return (x->index == y->index || Fail("tuple index differs")) && Rx(x->tuple, y->tuple);
      }
      case ExprKind::kShapeExpr: return Exprs(ExprAs<ShapeExpr>(a)->values, ExprAs<ShapeExpr>(b)->values, "dim");
      case ExprKind::kPrimValue: return P(ExprAs<PrimValueExpr>(a)->value, ExprAs<PrimValueExpr>(b)->value);
      case ExprKind::kStringImm:
        return ExprAs<StringImmExpr>(a)->value == ExprAs<StringImmExpr>(b)->value || Fail("string differs");
      case ExprKind::kDataTypeImm:
        return ExprAs<DataTypeImmExpr>(a)->value == ExprAs<DataTypeImmExpr>(b)->value || Fail("dtype differs");
      case ExprKind::kGlobalVar: {
        const auto &x = ExprAs<GlobalVarExpr>(a)->name, &y = ExprAs<GlobalVarExpr>(b)->name;
        return x == y || Fail("function " + x + " vs " + y);
      }
      case ExprKind::kExternFunc: {
        const auto &x = ExprAs<ExternFuncExpr>(a)->global_symbol, &y = ExprAs<ExternFuncExpr>(b)->global_symbol;
        return x == y || Fail("packed function " + x + " vs " + y);
      }
      case ExprKind::kOp: {
        const auto &x = ExprAs<OpExpr>(a)->name, &y = ExprAs<OpExpr>(b)->name;
        return x == y || Fail("operator " + x + " vs " + y);
      }
      case ExprKind::kCall: {
        const auto *x = ExprAs<CallExpr>(a), *y = ExprAs<CallExpr>(b);
        {
          PathScope s(this, "callee");
          if (!Rx(x->op, y->op)) return false;
        }
        if (!RxList(x->args, y->args, "arg") || !Attrs(x->attrs, y->attrs)) return false;
        if (x->sinfo_args.size() != y->sinfo_args.size()) return Fail("number of sinfo_args differs");
        for (size_t i = 0; i < x->sinfo_args.size(); ++i) {
          PathScope s(this, StrFormat("sinfo_arg %zu", i));
          if (!SI(x->sinfo_args[i], y->sinfo_args[i])) return false;
        }
        return true;
      }
      case ExprKind::kSeqExpr: {
        const auto *x = ExprAs<SeqExprNode>(a), *y = ExprAs<SeqExprNode>(b);
        if (x->blocks.size() != y->blocks.size())
          return Fail(StrFormat("%zu vs %zu binding blocks", x->blocks.size(), y->blocks.size()));
        for (size_t i = 0; i < x->blocks.size(); ++i) {
          PathScope s(this, StrFormat("block %zu", i));
          const BindingBlock &p = x->blocks[i], &q = y->blocks[i];
          if (p.is_dataflow != q.is_dataflow) return Fail("dataflow vs plain block");
          if (p.bindings.size() != q.bindings.size())
            return Fail(StrFormat("%zu vs %zu bindings", p.bindings.size(), q.bindings.size()));
          for (size_t k = 0; k < p.bindings.size(); ++k) {
            const Binding &u = p.bindings[k], &v = q.bindings[k];
            PathScope sb(this, StrFormat("binding %zu (%s)", k, u.var->name.c_str()));
            {
              PathScope sv(this, "value");
              if (!Rx(u.value, v.value)) return false;
            }
            if (!u.match_cast != !v.match_cast) return Fail("match_cast on one side only");
            if (u.match_cast && !SI(u.match_cast, v.match_cast)) return false;
            if (u.messages != v.messages) return Fail("match_cast messages differ");
            if (!DefineRVar(u.var, v.var)) return false;
          }
        }
        PathScope s(this, "result");
        return Rx(x->body, y->body);
      }
      case ExprKind::kIf: {
        const auto *x = ExprAs<IfExpr>(a), *y = ExprAs<IfExpr>(b);
        return Rx(x->cond, y->cond) && Rx(x->then_branch, y->then_branch) && Rx(x->else_branch, y->else_branch);
      }
      case ExprKind::kFunction: return Fn(*ExprAs<FunctionExpr>(a), *ExprAs<FunctionExpr>(b));
    }
    return Fail("unknown expression kind");
  }

  bool RxList(const std::vector<Expr>& a, const std::vector<Expr>& b, const char* what) {
    if (a.size() != b.size()) return Fail(StrFormat("%zu vs %zu %ss", a.size(), b.size(), what));
    for (size_t i = 0; i < a.size(); ++i) {
      PathScope s(this, StrFormat("%s %zu", what, i));
      if (!Rx(a[i], b[i])) return false;
    }
    return true;
  }

  bool Fn(const FunctionExpr& a, const FunctionExpr& b) {
    if (a.is_private != b.is_private) return Fail("private vs public");
    if (a.params.size() != b.params.size()) return Fail(StrFormat("%zu vs %zu parameters", a.params.size(), b.params.size()));
    for (size_t i = 0; i < a.params.size(); ++i) {
      PathScope s(this, "param " + a.params[i]->name);
      if (!DefineRVar(a.params[i], b.params[i])) return false;
    }
    {
      PathScope s(this, "return struct info");
      if (!SI(a.ret_sinfo, b.ret_sinfo)) return false;
    }
    if (!Attrs(a.attrs, b.attrs)) return false;
    PathScope s(this, "body");
    return Rx(a.body, b.body);
  }

 private:
  std::vector<std::string> path_;
  Bijection<VarNode> vars_;
  Bijection<BufferNode> buffers_;
  Bijection<VarExpr> rvars_;

};

bool Finish(Equal& e, bool ok, std::string* why_not) {
  if (!ok && why_not) *why_not = e.why;
  return ok;
}

}  // namespace

bool StructuralEqual(const PrimExpr& a, const PrimExpr& b, std::string* why_not) {
  Equal e;
  return Finish(e, e.P(a, b), why_not);
}

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b, std::string* why_not) {
  Equal e;
  return Finish(e, e.Prim(a, b), why_not);
}

bool StructuralEqual(const Function& a, const Function& b, std::string* why_not) {
  Equal e;
  if (!a || !b) return Finish(e, (!a && !b) || e.Fail("function missing on one side"), why_not);
  return Finish(e, e.Fn(*a, *b), why_not);
}

bool StructuralEqual(const IRModule& a, const IRModule& b, std::string* why_not) {
  auto fail = [&](const std::string& m) {
    if (why_not) *why_not = m;
    return false;
  };
  if (a.name != b.name) return fail("module name " + a.name + " vs " + b.name);
  if (a.entries.size() != b.entries.size())
    return fail(StrFormat("%zu vs %zu functions", a.entries.size(), b.entries.size()));
  for (const auto& ea : a.entries) {
    const ModuleEntry* eb = b.Find(ea.name);
    if (!eb) return fail("function " + ea.name + " is missing on the right");
    if (!ea.prim != !eb->prim) return fail("function " + ea.name + ": PrimFunc vs Relax function");
    std::string why;
    bool ok = ea.prim ? StructuralEqual(ea.prim, eb->prim, &why) : StructuralEqual(ea.relax, eb->relax, &why);
    if (!ok) return fail("function " + ea.name + " / " + why);
  }
  return true;
}

}  // namespace ir
}  // namespace kiln
