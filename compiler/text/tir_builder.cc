// AST -> TIR PrimFunc.
//
// A function's body becomes a root BlockRealize ("root", no iter vars) that
// holds the function-level T.alloc_buffer's, when the text has blocks,
// function-level allocations, or TVM's `# with T.block("root"):` comment;
// otherwise (already lowered code) the statements are the body as they are.
#include <algorithm>

#include "compiler/text/builder.h"

namespace kiln {
namespace text {
namespace {

using ir::PrimExpr;
using ir::Stmt;

bool IsCallTo(const AstExpr* e, const char* name) {
  return e && e->kind == AstKind::kCall && e->base->DottedName() == name;
}

// T.int64() / T.int32(): a symbolic variable declaration.
bool IsVarDecl(const AstExpr* e, DType* dtype) {
  return e && e->kind == AstKind::kCall && e->items.empty() && e->kwargs.empty() && TirDTypeName(*e->base, dtype);
}

bool ContainsBlock(const std::vector<AstStmtP>& stmts) {
  for (const auto& s : stmts) {
    if (s->kind == StmtKind::kWith && IsCallTo(s->value.get(), "T.block")) return true;
    if (ContainsBlock(s->body) || ContainsBlock(s->orelse)) return true;
  }
  return false;
}

class PrimFuncBuilder {
 public:
  explicit PrimFuncBuilder(const ModuleContext& ctx) : ctx_(ctx), src_(*ctx.src), ex_(src_) {}

  Result<ir::PrimFunc> Build(const AstStmt& def) {
    auto f = std::make_shared<ir::PrimFuncNode>();
    f_ = f.get();
    f->name = def.name;
    f->span = src_.Span(def.loc);
    for (const AstParam& p : def.params) KILN_RETURN_IF_ERROR(Param(p));
    // `-> None` is how older TVMScript (and the MLC course) spells "returns nothing".
    if (def.returns && def.returns->kind != AstKind::kNone)
      return src_.Error(def.returns->loc, "a T.prim_func returns nothing; remove the '->' annotation");

    std::vector<AstStmtP> body;
    for (const auto& sp : def.body) {
      const AstStmt& s = *sp;
      DType t;
      if (s.kind == StmtKind::kExpr && IsCallTo(s.value.get(), "T.func_attr")) {
        if (s.value->items.size() != 1) return src_.Error(s.loc, "T.func_attr takes one dict");
        KILN_ASSIGN_OR_RETURN(f->attrs, AttrDictFromAst(src_, *s.value->items[0]));
      } else if (s.kind == StmtKind::kAssign && s.value && IsVarDecl(s.value.get(), &t)) {
        KILN_RETURN_IF_ERROR(DeclareVar(*s.target, t));
      } else if (s.kind == StmtKind::kAssign && s.value && s.value->kind == AstKind::kTuple &&
                 s.target->kind == AstKind::kTuple && !s.value->items.empty() &&
                 IsVarDecl(s.value->items[0].get(), &t)) {
        if (s.target->items.size() != s.value->items.size())
          return src_.Error(s.loc, "the number of names and of T.int64() declarations differ");
        for (size_t i = 0; i < s.target->items.size(); ++i) {
          if (!IsVarDecl(s.value->items[i].get(), &t)) return src_.Error(s.value->items[i]->loc, "expected T.int64() or T.int32()");
          KILN_RETURN_IF_ERROR(DeclareVar(*s.target->items[i], t));
        }
      } else if (s.kind == StmtKind::kAssign && IsCallTo(s.value.get(), "T.match_buffer")) {
        KILN_RETURN_IF_ERROR(MatchBuffer(s));
      } else {
        body.push_back(sp);
      }
    }

    bool root_comment = false;
    for (const Comment& c : *ctx_.comments)
      if (c.loc.line > def.loc.line && c.loc.line <= def.end_line && c.text == "with T.block(\"root\"):") root_comment = true;
    bool explicit_root = body.size() == 1 && body[0]->kind == StmtKind::kWith &&
                         IsCallTo(body[0]->value.get(), "T.block") && body[0]->value->items.size() == 1 &&
                         body[0]->value->items[0]->kind == AstKind::kString && body[0]->value->items[0]->str == "root";
    bool top_alloc = false;
    for (const auto& s : body)
      if (s->kind == StmtKind::kAssign && IsCallTo(s->value.get(), "T.alloc_buffer")) top_alloc = true;

    if (!explicit_root && (root_comment || top_alloc || ContainsBlock(body))) {
      ir::Block root;
      root.name = "root";
      allocs_.push_back(&root.alloc_buffers);
      KILN_ASSIGN_OR_RETURN(root.body, Stmts(body, 0));
      allocs_.pop_back();
      f->body = std::make_shared<ir::BlockRealizeNode>(std::vector<PrimExpr>{}, ir::IntImm(DType::Bool(), 1),
                                                       std::move(root));
    } else {
      KILN_ASSIGN_OR_RETURN(f->body, Stmts(body, 0));
    }
    return ir::PrimFunc(f);
  }

 private:
  struct Loop {
    ir::Var var;
    PrimExpr min, extent;
  };

  Status DeclareVar(const AstExpr& target, DType t) {
    if (target.kind != AstKind::kName) return src_.Error(target.loc, "expected a variable name");
    if (ex_.FindVar(target.str)) return src_.Error(target.loc, "variable '" + target.str + "' is already defined");
    ex_.DefineVar(target.str, ir::MakeVar(target.str, t));
    return Status::Ok();
  }

  Status Param(const AstParam& p) {
    if (!p.annotation)
      return src_.Error(p.loc, "parameter '" + p.name + "' needs a type annotation (T.Buffer, T.handle or T.int64)");
    const AstExpr& a = *p.annotation;
    DType t;
    if (a.DottedName() == "T.handle") {
      ir::Var v = ir::MakeVar(p.name, ir::HandleType());
      f_->params.push_back(v);
      handles_[p.name] = v;
      return Status::Ok();
    }
    if (TirDTypeName(a, &t)) {
      if (ex_.FindVar(p.name)) return src_.Error(p.loc, "parameter '" + p.name + "' is already defined");
      ir::Var v = ir::MakeVar(p.name, t);
      f_->params.push_back(v);
      ex_.DefineVar(p.name, v);
      return Status::Ok();
    }
    if ((a.kind == AstKind::kCall || a.kind == AstKind::kSubscript) && a.base->DottedName() == "T.Buffer") {
      KILN_ASSIGN_OR_RETURN(ir::Buffer b, MakeBuffer(p.name, a, 0, "T.Buffer"));
      ir::Var v = ir::MakeVar(p.name, ir::HandleType());
      f_->params.push_back(v);
      f_->buffer_map.emplace_back(v, b);
      ex_.DefineBuffer(p.name, b);
      return Status::Ok();
    }
    return src_.Error(a.loc, "unsupported parameter annotation for a T.prim_func (expected T.Buffer(...), T.handle or T.int64)");
  }

  // T.Buffer(shape, dtype), T.match_buffer(h, shape, dtype), T.alloc_buffer(shape, dtype):
  // the shape is argument `shape_index`; dtype follows it or is a keyword.
  Result<ir::Buffer> MakeBuffer(const std::string& name, const AstExpr& call, size_t shape_index, const char* what) {
    const auto& args = call.items;
    if (args.size() <= shape_index) return src_.Error(call.loc, std::string(what) + " needs a shape");
    if (args.size() > shape_index + 2) return src_.Error(args[shape_index + 2]->loc, std::string(what) + " takes a shape and a dtype");
    auto b = std::make_shared<ir::BufferNode>();
    b->name = name;
    b->data = ir::MakeVar(name + "_data", ir::HandleType());
    KILN_ASSIGN_OR_RETURN(b->shape, ex_.BuildShape(*args[shape_index]));
    b->dtype = DType::Float32();
    const AstExpr* dtype = args.size() > shape_index + 1 ? args[shape_index + 1].get() : call.Kwarg("dtype");
    if (dtype) {
      KILN_ASSIGN_OR_RETURN(b->dtype, DTypeFromAst(src_, *dtype, what));
    }
    for (size_t i = 0; i < call.kwargs.size(); ++i) {
      const std::string& k = call.kwargs[i].first;
      const AstExpr& v = *call.kwargs[i].second;
      if (k == "dtype") continue;
      if (k == "strides") {
        KILN_ASSIGN_OR_RETURN(b->strides, ex_.BuildShape(v));
      } else if (k == "scope") {
        if (v.kind != AstKind::kString) return src_.Error(v.loc, "scope must be a string");
        b->scope = v.str;
      } else if (k == "elem_offset" || k == "align" || k == "offset_factor" || k == "buffer_type" ||
                 k == "axis_separators") {
        // Layout details of TVM that Kiln does not model; compact buffers only.
      } else {
        return src_.Error(call.kwarg_locs[i], "unknown keyword argument '" + k + "' of " + what);
      }
    }
    return ir::Buffer(b);
  }

  Status MatchBuffer(const AstStmt& s) {
    if (s.target->kind != AstKind::kName) return src_.Error(s.target->loc, "expected a buffer name");
    const AstExpr& call = *s.value;
    if (call.items.empty() || call.items[0]->kind != AstKind::kName)
      return src_.Error(call.loc, "T.match_buffer needs a T.handle parameter as its first argument");
    auto h = handles_.find(call.items[0]->str);
    if (h == handles_.end())
      return src_.Error(call.items[0]->loc, "'" + call.items[0]->str + "' is not a T.handle parameter of this function");
    if (f_->BufferOf(h->second))
      return src_.Error(call.items[0]->loc, "parameter '" + call.items[0]->str + "' is already bound to a buffer");
    KILN_ASSIGN_OR_RETURN(ir::Buffer b, MakeBuffer(s.target->str, call, 1, "T.match_buffer"));
    f_->buffer_map.emplace_back(h->second, b);
    ex_.DefineBuffer(s.target->str, b);
    return Status::Ok();
  }

  Result<Stmt> Stmts(const std::vector<AstStmtP>& stmts, size_t begin) {
    std::vector<Stmt> seq;
    for (size_t i = begin; i < stmts.size(); ++i) {
      const AstStmt& s = *stmts[i];
      switch (s.kind) {
        case StmtKind::kPass: break;
        case StmtKind::kFor: {
          KILN_ASSIGN_OR_RETURN(Stmt st, For(s));
          seq.push_back(std::move(st));
          break;
        }
        case StmtKind::kWith: {
          if (IsCallTo(s.value.get(), "T.block")) {
            KILN_ASSIGN_OR_RETURN(Stmt st, Block(s));
            seq.push_back(std::move(st));
          } else if (IsCallTo(s.value.get(), "T.init")) {
            return src_.Error(s.loc, "with T.init() must be directly inside a T.block");
          } else {
            return src_.Error(s.value->loc, "expected 'with T.block(\"name\"):' in a T.prim_func");
          }
          break;
        }
        case StmtKind::kIf: {
          KILN_ASSIGN_OR_RETURN(PrimExpr c, ex_.Build(*s.value, DType::Int32()));
          ex_.PushScope();
          Result<Stmt> then_case = Stmts(s.body, 0);
          ex_.PopScope();
          if (!then_case.ok()) return then_case.TakeStatus();
          Stmt else_case;
          if (!s.orelse.empty()) {
            ex_.PushScope();
            Result<Stmt> e = Stmts(s.orelse, 0);
            ex_.PopScope();
            if (!e.ok()) return e.TakeStatus();
            else_case = e.value();
          }
          seq.push_back(std::make_shared<ir::IfThenElseNode>(c, then_case.value(), else_case));
          break;
        }
        case StmtKind::kAssign: {
          if (!s.value) return src_.Error(s.loc, "expected '=' and a value");
          if (s.target->kind == AstKind::kSubscript) {
            KILN_ASSIGN_OR_RETURN(Stmt st, Store(s));
            seq.push_back(std::move(st));
            break;
          }
          if (s.target->kind != AstKind::kName) return src_.Error(s.target->loc, "expected a name or a buffer element");
          DType t;
          if (IsCallTo(s.value.get(), "T.alloc_buffer")) {
            if (allocs_.empty())
              return src_.Error(s.loc, "T.alloc_buffer must be directly inside a T.block or at the top of the function");
            KILN_ASSIGN_OR_RETURN(ir::Buffer b, MakeBuffer(s.target->str, *s.value, 0, "T.alloc_buffer"));
            allocs_.back()->push_back(b);
            ex_.DefineBuffer(s.target->str, b);
            break;
          }
          if (IsCallTo(s.value.get(), "T.decl_buffer")) {
            KILN_ASSIGN_OR_RETURN(ir::Buffer b, MakeBuffer(s.target->str, *s.value, 0, "T.decl_buffer"));
            ex_.PushScope();
            ex_.DefineBuffer(s.target->str, b);
            Result<Stmt> body = Stmts(stmts, i + 1);
            ex_.PopScope();
            if (!body.ok()) return body.TakeStatus();
            seq.push_back(std::make_shared<ir::AllocateNode>(b, body.value()));
            return ir::Seq(std::move(seq));
          }
          if (IsVarDecl(s.value.get(), &t))
            return src_.Error(s.loc, "symbolic variables must be declared at the top of the function");
          if (IsCallTo(s.value.get(), "T.match_buffer"))
            return src_.Error(s.loc, "T.match_buffer must be at the top of the function");
          // name = value: a LetStmt over the rest of the statements.
          PrimExpr value;
          if (s.annotation) {
            if (!TirDTypeName(*s.annotation, &t))
              return src_.Error(s.annotation->loc, "expected a TIR type such as T.int32 for a let variable");
            KILN_ASSIGN_OR_RETURN(value, ex_.BuildAs(*s.value, t));
          } else {
            KILN_ASSIGN_OR_RETURN(value, ex_.Build(*s.value, DType::Int32()));
            t = value.dtype();
          }
          ir::Var v = ir::MakeVar(s.target->str, t);
          ex_.PushScope();
          ex_.DefineVar(s.target->str, v);
          Result<Stmt> body = Stmts(stmts, i + 1);
          ex_.PopScope();
          if (!body.ok()) return body.TakeStatus();
          seq.push_back(std::make_shared<ir::LetStmtNode>(v, value, body.value()));
          return ir::Seq(std::move(seq));
        }
        case StmtKind::kExpr: {
          const AstExpr* e = s.value.get();
          std::string callee = e->kind == AstKind::kCall ? e->base->DottedName() : "";
          if (callee == "T.evaluate") {
            if (e->items.size() != 1) return src_.Error(e->loc, "T.evaluate takes one expression");
            KILN_ASSIGN_OR_RETURN(PrimExpr v, ex_.Build(*e->items[0], DType::Int32()));
            seq.push_back(std::make_shared<ir::EvaluateNode>(v));
          } else if (callee == "T.func_attr") {
            return src_.Error(s.loc, "T.func_attr must be at the top of the function");
          } else if (callee == "T.reads" || callee == "T.writes" || callee == "T.where" || callee == "T.block_attr") {
            return src_.Error(s.loc, callee + " must be directly inside a T.block");
          } else {
            KILN_ASSIGN_OR_RETURN(PrimExpr v, ex_.Build(*e, DType::Int32()));
            seq.push_back(std::make_shared<ir::EvaluateNode>(v));
          }
          break;
        }
        case StmtKind::kReturn: return src_.Error(s.loc, "'return' is not supported in a T.prim_func");
        default: return src_.Error(s.loc, "unexpected statement in a T.prim_func");
      }
    }
    return ir::Seq(std::move(seq));
  }

  Result<Stmt> Store(const AstStmt& s) {
    const AstExpr& t = *s.target;
    if (t.base->kind != AstKind::kName) return src_.Error(t.loc, "only buffers can be stored to");
    ir::Buffer b = ex_.FindBuffer(t.base->str);
    if (!b) return src_.Error(t.base->loc, "undefined buffer '" + t.base->str + "'");
    if (t.items.size() != b->shape.size())
      return src_.Error(t.loc, StrFormat("buffer '%s' has %zu dimensions, got %zu indices", t.base->str.c_str(),
                                         b->shape.size(), t.items.size()));
    std::vector<PrimExpr> idx;
    for (const auto& item : t.items) {
      if (item->kind == AstKind::kSlice) return src_.Error(item->loc, "slices cannot be stored to");
      KILN_ASSIGN_OR_RETURN(PrimExpr i, ex_.Build(*item, DType::Int32()));
      idx.push_back(std::move(i));
    }
    KILN_ASSIGN_OR_RETURN(PrimExpr v, ex_.BuildAs(*s.value, b->dtype));
    return ir::Store(b, v, std::move(idx));
  }

  Result<Stmt> For(const AstStmt& s) {
    const AstExpr* it = s.value.get();
    std::string callee = it->kind == AstKind::kCall ? it->base->DottedName() : "";
    std::vector<const AstExpr*> targets;
    if (s.target->kind == AstKind::kTuple) {
      for (const auto& t : s.target->items) targets.push_back(t.get());
    } else {
      targets.push_back(s.target.get());
    }
    for (const AstExpr* t : targets)
      if (t->kind != AstKind::kName) return src_.Error(t->loc, "expected a loop variable name");

    std::vector<Loop> loops;
    ir::ForKind kind = ir::ForKind::kSerial;
    std::string thread_tag;
    if (callee == "T.grid") {
      if (targets.size() != it->items.size())
        return src_.Error(s.loc, StrFormat("T.grid has %zu extents but the loop names %zu variables", it->items.size(),
                                           targets.size()));
      for (size_t i = 0; i < targets.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(PrimExpr ext, ex_.Build(*it->items[i], DType::Int32()));
        loops.push_back(Loop{ir::MakeVar(targets[i]->str, ext.dtype()), ir::IntImm(ext.dtype(), 0), ext});
      }
    } else if (callee == "range" || callee == "T.serial" || callee == "T.parallel" || callee == "T.vectorized" ||
               callee == "T.unroll" || callee == "T.thread_binding") {
      kind = callee == "T.parallel"     ? ir::ForKind::kParallel
             : callee == "T.vectorized" ? ir::ForKind::kVectorized
             : callee == "T.unroll"     ? ir::ForKind::kUnrolled
             : callee == "T.thread_binding" ? ir::ForKind::kThreadBinding
                                        : ir::ForKind::kSerial;
      if (targets.size() != 1) return src_.Error(s.target->loc, callee + " loops bind one variable");
      if (kind == ir::ForKind::kThreadBinding) {
        // T.thread_binding(stop, thread="threadIdx.x"), as TVMScript prints it.
        for (const auto& kv : it->kwargs) {
          if (kv.first != "thread" || kv.second->kind != AstKind::kString)
            return src_.Error(kv.second->loc, "T.thread_binding takes thread=\"<blockIdx|threadIdx>.<x|y|z>\"");
          thread_tag = kv.second->str;
        }
        if (!ir::IsThreadTag(thread_tag))
          return src_.Error(it->loc, "T.thread_binding needs thread= one of blockIdx.x/y/z, threadIdx.x/y/z; got '" +
                                         thread_tag + "'");
      }
      if (it->items.empty() || it->items.size() > 2)
        return src_.Error(it->loc, callee + " takes (stop) or (start, stop)");
      PrimExpr lo, hi;
      if (it->items.size() == 1) {
        KILN_ASSIGN_OR_RETURN(hi, ex_.Build(*it->items[0], DType::Int32()));
        lo = ir::IntImm(hi.dtype(), 0);
      } else {
        KILN_RETURN_IF_ERROR(ex_.BuildPair(*it->items[0], *it->items[1], DType::Int32(), &lo, &hi));
      }
      loops.push_back(Loop{ir::MakeVar(targets[0]->str, hi.dtype()), lo, RangeExtent(lo, hi)});
    } else {
      return src_.Error(it->loc, "expected T.grid, T.serial, T.parallel, T.vectorized, T.unroll, T.thread_binding or range after 'in'");
    }

    ex_.PushScope();
    for (size_t i = 0; i < loops.size(); ++i) {
      ex_.DefineVar(targets[i]->str, loops[i].var);
      loops_.push_back(loops[i]);
    }
    Result<Stmt> body = Stmts(s.body, 0);
    loops_.resize(loops_.size() - loops.size());
    ex_.PopScope();
    if (!body.ok()) return body.TakeStatus();
    Stmt st = body.value();
    for (size_t i = loops.size(); i-- > 0;)
      st = std::make_shared<ir::ForNode>(loops[i].var, loops[i].min, loops[i].extent, kind, st, thread_tag);
    return st;
  }

  const Loop* FindLoop(const ir::Var& v) const {
    for (const Loop& l : loops_)
      if (l.var == v) return &l;
    return nullptr;
  }

  Status AxisRemap(const AstStmt& s, ir::Block* blk, std::vector<PrimExpr>* values) {
    const AstExpr& call = *s.value;
    if (call.items.size() != 2 || call.items[0]->kind != AstKind::kString ||
        (call.items[1]->kind != AstKind::kList && call.items[1]->kind != AstKind::kTuple))
      return src_.Error(call.loc, "T.axis.remap takes a kinds string and a list of loop variables, as in T.axis.remap(\"SSR\", [i, j, k])");
    const std::string& kinds = call.items[0]->str;
    const auto& binds = call.items[1]->items;
    std::vector<const AstExpr*> targets;
    if (s.target->kind == AstKind::kTuple) {
      for (const auto& t : s.target->items) targets.push_back(t.get());
    } else {
      targets.push_back(s.target.get());
    }
    if (kinds.size() != binds.size() || targets.size() != binds.size())
      return src_.Error(call.loc, StrFormat("T.axis.remap: %zu kinds, %zu loop variables and %zu names must agree",
                                            kinds.size(), binds.size(), targets.size()));
    for (size_t i = 0; i < binds.size(); ++i) {
      char k = kinds[i];
      if (k != 'S' && k != 'R')
        return src_.Error(call.items[0]->loc, StrFormat("unknown iterator kind '%c' (expected S or R)", k));
      if (targets[i]->kind != AstKind::kName) return src_.Error(targets[i]->loc, "expected an iterator name");
      const AstExpr& b = *binds[i];
      ir::Var lv = b.kind == AstKind::kName ? ex_.FindVar(b.str) : nullptr;
      const Loop* loop = lv ? FindLoop(lv) : nullptr;
      if (!loop) return src_.Error(b.loc, "T.axis.remap binds to loop variables; '" + (b.kind == AstKind::kName ? b.str : std::string("expression")) + "' is not one");
      ir::IterVar iv;
      iv.var = ir::MakeVar(targets[i]->str, lv->dtype);
      iv.min = loop->min;
      iv.extent = loop->extent;
      iv.kind = k == 'S' ? ir::IterKind::kSpatial : ir::IterKind::kReduce;
      blk->iter_vars.push_back(iv);
      values->push_back(PrimExpr(lv));
      ex_.DefineVar(targets[i]->str, iv.var);
    }
    return Status::Ok();
  }

  Status Axis(const AstStmt& s, ir::IterKind kind, ir::Block* blk, std::vector<PrimExpr>* values) {
    const AstExpr& call = *s.value;
    if (s.target->kind != AstKind::kName) return src_.Error(s.target->loc, "expected an iterator name");
    if (call.items.size() != 2)
      return src_.Error(call.loc, "T.axis.spatial/reduce take a domain and a binding, as in T.axis.spatial(128, i)");
    KILN_ASSIGN_OR_RETURN(PrimExpr binding, ex_.Build(*call.items[1], DType::Int32()));
    DType t = binding.dtype();
    ir::IterVar iv;
    const AstExpr& dom = *call.items[0];
    if (dom.kind == AstKind::kTuple && dom.items.size() == 2) {
      PrimExpr lo, hi;
      KILN_ASSIGN_OR_RETURN(lo, ex_.BuildAs(*dom.items[0], t));
      KILN_ASSIGN_OR_RETURN(hi, ex_.BuildAs(*dom.items[1], t));
      iv.min = lo;
      iv.extent = RangeExtent(lo, hi);
    } else {
      KILN_ASSIGN_OR_RETURN(iv.extent, ex_.BuildAs(dom, t));
      iv.min = ir::IntImm(iv.extent.dtype(), 0);
    }
    iv.var = ir::MakeVar(s.target->str, t);
    iv.kind = kind;
    blk->iter_vars.push_back(iv);
    values->push_back(binding);
    ex_.DefineVar(s.target->str, iv.var);
    return Status::Ok();
  }

  Status Regions(const AstExpr& call, std::vector<ir::BufferRegion>* out) {
    for (const auto& item : call.items) {
      if (item->kind == AstKind::kList || item->kind == AstKind::kTuple) {
        for (const auto& r : item->items) {
          KILN_ASSIGN_OR_RETURN(ir::BufferRegion region, ex_.BuildRegion(*r));
          out->push_back(std::move(region));
        }
      } else {
        KILN_ASSIGN_OR_RETURN(ir::BufferRegion region, ex_.BuildRegion(*item));
        out->push_back(std::move(region));
      }
    }
    return Status::Ok();
  }

  Result<Stmt> Block(const AstStmt& s) {
    const AstExpr& call = *s.value;
    if (call.items.size() != 1 || call.items[0]->kind != AstKind::kString)
      return src_.Error(call.loc, "T.block takes the block's name as a string, as in T.block(\"Y\")");
    ir::Block blk;
    blk.name = call.items[0]->str;
    std::vector<PrimExpr> values;
    PrimExpr pred = ir::IntImm(DType::Bool(), 1);
    std::vector<AstStmtP> rest;
    ex_.PushScope();
    allocs_.push_back(&blk.alloc_buffers);
    Status st = [&]() -> Status {
      for (const auto& sp : s.body) {
        const AstStmt& b = *sp;
        const AstExpr* v = b.value.get();
        std::string callee = v && v->kind == AstKind::kCall ? v->base->DottedName() : "";
        if (b.kind == StmtKind::kAssign && callee == "T.axis.remap") {
          KILN_RETURN_IF_ERROR(AxisRemap(b, &blk, &values));
        } else if (b.kind == StmtKind::kAssign && (callee == "T.axis.spatial" || callee == "T.axis.S")) {
          KILN_RETURN_IF_ERROR(Axis(b, ir::IterKind::kSpatial, &blk, &values));
        } else if (b.kind == StmtKind::kAssign && (callee == "T.axis.reduce" || callee == "T.axis.R")) {
          KILN_RETURN_IF_ERROR(Axis(b, ir::IterKind::kReduce, &blk, &values));
        } else if (b.kind == StmtKind::kExpr && callee == "T.reads") {
          KILN_RETURN_IF_ERROR(Regions(*v, &blk.reads));
        } else if (b.kind == StmtKind::kExpr && callee == "T.writes") {
          KILN_RETURN_IF_ERROR(Regions(*v, &blk.writes));
        } else if (b.kind == StmtKind::kExpr && callee == "T.where") {
          if (v->items.size() != 1) return src_.Error(v->loc, "T.where takes one condition");
          KILN_ASSIGN_OR_RETURN(pred, ex_.Build(*v->items[0], DType::Int32()));
        } else if (b.kind == StmtKind::kExpr && callee == "T.block_attr") {
          if (v->items.size() != 1) return src_.Error(v->loc, "T.block_attr takes one dict");
          const AstExpr& d = *v->items[0];
          if (d.kind != AstKind::kDict) return src_.Error(d.loc, "T.block_attr takes a dict");
          for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
            if (d.items[i]->kind != AstKind::kString || d.items[i + 1]->kind != AstKind::kString)
              return src_.Error(d.items[i]->loc, "block attributes must map strings to strings");
            blk.annotations[d.items[i]->str] = d.items[i + 1]->str;
          }
        } else if (b.kind == StmtKind::kWith && callee == "T.init") {
          if (blk.init) return src_.Error(b.loc, "a block has at most one T.init()");
          ex_.PushScope();
          Result<Stmt> init = Stmts(b.body, 0);
          ex_.PopScope();
          if (!init.ok()) return init.TakeStatus();
          blk.init = init.value();
        } else {
          rest.push_back(sp);
        }
      }
      KILN_ASSIGN_OR_RETURN(blk.body, Stmts(rest, 0));
      return Status::Ok();
    }();
    allocs_.pop_back();
    ex_.PopScope();
    KILN_RETURN_IF_ERROR(st);
    return Stmt(std::make_shared<ir::BlockRealizeNode>(std::move(values), pred, std::move(blk)));
  }

  const ModuleContext& ctx_;
  const SourceFile& src_;
  TirExprBuilder ex_;
  ir::PrimFuncNode* f_ = nullptr;
  std::map<std::string, ir::Var> handles_;
  std::vector<Loop> loops_;
  std::vector<std::vector<ir::Buffer>*> allocs_;
};

}  // namespace

Result<ir::PrimFunc> BuildPrimFunc(const ModuleContext& ctx, const AstStmt& def) {
  return PrimFuncBuilder(ctx).Build(def);
}

}  // namespace text
}  // namespace kiln
