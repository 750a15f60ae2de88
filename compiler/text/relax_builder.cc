// AST -> Relax Function.
//
// Names: Relax variables live in one function-wide map; the dataflow variables
// of a `with R.dataflow():` block leave it when the block ends (only the names
// given to R.output survive, as non-dataflow Vars). Symbolic dimensions are
// int64 TIR Vars of the function: a quoted dimension ("n") in an annotation
// introduces one, `n = T.int64()` declares one (or names the same one again),
// and a bare name (n) refers to one.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "compiler/text/builder.h"
#include "compiler/text/constant_data.h"
#include "compiler/text/py_parser.h"
#include "compiler/text/relax_ops.h"

namespace kiln {
namespace text {
namespace {

using ir::Expr;
using ir::PrimExpr;
using ir::StructInfo;

bool IsCallTo(const AstExpr* e, const char* name) {
  return e && e->kind == AstKind::kCall && e->base->DottedName() == name;
}

// Copies a tree parsed from a quoted dimension, placing every node at `loc`
// so that diagnostics point at the string in the real file.
AstExprP Relocate(const AstExpr& e, Loc loc) {
  auto c = std::make_shared<AstExpr>(e);
  c->loc = loc;
  if (c->base) c->base = Relocate(*c->base, loc);
  for (auto& i : c->items)
    if (i) i = Relocate(*i, loc);
  for (auto& kv : c->kwargs) kv.second = Relocate(*kv.second, loc);
  return c;
}

class RelaxFuncBuilder {
 public:
  explicit RelaxFuncBuilder(const ModuleContext& ctx) : ctx_(ctx), src_(*ctx.src), sym_(src_) {}

  Result<ir::Function> Build(const AstStmt& def, bool is_private) {
    auto fn = std::make_shared<ir::FunctionExpr>();
    fn->name = def.name;
    fn->is_private = is_private;
    fn->span = src_.Span(def.loc);
    for (const AstParam& p : def.params) {
      if (!p.annotation)
        return src_.Error(p.loc, "parameter '" + p.name + "' needs a struct info annotation such as R.Tensor((1, 784), dtype=\"float32\")");
      if (vars_.count(p.name)) return src_.Error(p.loc, "duplicate parameter '" + p.name + "'");
      KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(*p.annotation));
      auto v = std::make_shared<ir::VarExpr>(p.name, s, false);
      v->span = src_.Span(p.loc);
      vars_[p.name] = v;
      fn->params.push_back(v);
    }
    if (def.returns) {
      KILN_ASSIGN_OR_RETURN(fn->ret_sinfo, SInfo(*def.returns));
    }
    KILN_ASSIGN_OR_RETURN(fn->body, Body(def, fn.get()));
    return ir::Function(fn);
  }

 private:
  // ------------------------------------------------------------ struct info

  Result<PrimExpr> Dim(const AstExpr& e) {
    if (e.kind == AstKind::kString) {
      Result<AstExprP> parsed = ParsePythonExpr(e.str);
      if (!parsed.ok()) return src_.Error(e.loc, "cannot parse dimension \"" + e.str + "\"");
      AstExprP d = Relocate(*parsed.value(), e.loc);
      sym_.introduce_unknown = true;
      Result<PrimExpr> r = sym_.Build(*d, DType::Int64());
      sym_.introduce_unknown = false;
      return r;
    }
    return sym_.Build(e, DType::Int64());
  }

  Result<std::vector<PrimExpr>> Dims(const AstExpr& e, const char* what) {
    if (e.kind != AstKind::kTuple && e.kind != AstKind::kList)
      return src_.Error(e.loc, std::string(what) + " shape must be a tuple or list of dimensions, as in (n, 784)");
    std::vector<PrimExpr> out;
    for (const auto& item : e.items) {
      KILN_ASSIGN_OR_RETURN(PrimExpr d, Dim(*item));
      out.push_back(std::move(d));
    }
    return out;
  }

  Result<int> NDim(const AstExpr& e, const char* what) {
    if (e.kind != AstKind::kInt || e.i < -1) return src_.Error(e.loc, std::string(what) + " ndim must be an integer");
    return static_cast<int>(e.i);
  }

  Status NoExtraArgs(const AstExpr& call, size_t max_positional, std::initializer_list<const char*> keywords) {
    const std::string what = call.base->DottedName();
    if (call.items.size() > max_positional)
      return src_.Error(call.items[max_positional]->loc, StrFormat("%s takes at most %zu positional arguments", what.c_str(), max_positional));
    for (size_t i = 0; i < call.kwargs.size(); ++i) {
      bool ok = false;
      for (const char* k : keywords) ok |= call.kwargs[i].first == k;
      if (!ok) return src_.Error(call.kwarg_locs[i], "unknown keyword argument '" + call.kwargs[i].first + "' of " + what);
    }
    return Status::Ok();
  }

  Result<StructInfo> SInfo(const AstExpr& e) {
    std::string name = e.kind == AstKind::kCall ? e.base->DottedName() : e.DottedName();
    bool called = e.kind == AstKind::kCall;
    if (name == "R.Object") return StructInfo(std::make_shared<ir::ObjectSInfo>());
    if (name == "R.Tensor") {
      if (!called) return StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, -1, DType::Float32(), false));
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 2, {"shape", "dtype", "ndim"}));
      const AstExpr* shape = e.items.size() > 0 ? e.items[0].get() : e.Kwarg("shape");
      const AstExpr* dtype = e.items.size() > 1 ? e.items[1].get() : e.Kwarg("dtype");
      const AstExpr* ndim = e.Kwarg("ndim");
      if (shape && shape->kind == AstKind::kString && !dtype) std::swap(shape, dtype);  // R.Tensor("float32")
      if (shape && shape->kind == AstKind::kNone) shape = nullptr;
      DType t = DType::Float32();
      bool has_dtype = false;
      if (dtype && dtype->kind != AstKind::kNone) {
        KILN_ASSIGN_OR_RETURN(t, DTypeFromAst(src_, *dtype, "R.Tensor"));
        has_dtype = true;
      }
      if (shape) {
        KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, Dims(*shape, "R.Tensor"));
        if (ndim) {
          KILN_ASSIGN_OR_RETURN(int nd, NDim(*ndim, "R.Tensor"));
          if (nd != static_cast<int>(dims.size()))
            return src_.Error(ndim->loc, StrFormat("R.Tensor ndim=%d disagrees with its shape of %zu dimensions", nd, dims.size()));
        }
        return StructInfo(std::make_shared<ir::TensorSInfo>(true, std::move(dims), -1, t, has_dtype));
      }
      int nd = -1;
      if (ndim) {
        KILN_ASSIGN_OR_RETURN(nd, NDim(*ndim, "R.Tensor"));
      }
      return StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, nd, t, has_dtype));
    }
    if (name == "R.Shape") {
      if (!called) return StructInfo(std::make_shared<ir::ShapeSInfo>(false, std::vector<PrimExpr>{}, -1));
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 1, {"values", "ndim"}));
      const AstExpr* values = e.items.size() > 0 ? e.items[0].get() : e.Kwarg("values");
      if (values) {
        KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, Dims(*values, "R.Shape"));
        return StructInfo(std::make_shared<ir::ShapeSInfo>(true, std::move(dims), -1));
      }
      int nd = -1;
      if (const AstExpr* ndim = e.Kwarg("ndim")) {
        KILN_ASSIGN_OR_RETURN(nd, NDim(*ndim, "R.Shape"));
      }
      return StructInfo(std::make_shared<ir::ShapeSInfo>(false, std::vector<PrimExpr>{}, nd));
    }
    if (name == "R.Tuple") {
      std::vector<StructInfo> fields;
      if (called) {
        KILN_RETURN_IF_ERROR(NoExtraArgs(e, static_cast<size_t>(-1) >> 1, {}));
        std::vector<AstExprP> items = e.items;
        if (items.size() == 1 && (items[0]->kind == AstKind::kList || items[0]->kind == AstKind::kTuple)) items = items[0]->items;
        for (const auto& f : items) {
          KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(*f));
          fields.push_back(std::move(s));
        }
      }
      return StructInfo(std::make_shared<ir::TupleSInfo>(std::move(fields)));
    }
    if (name == "R.Prim") {
      if (!called) return src_.Error(e.loc, "R.Prim needs a dtype, as in R.Prim(\"int64\")");
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 1, {"dtype", "value"}));
      const AstExpr* dtype = e.items.size() > 0 ? e.items[0].get() : e.Kwarg("dtype");
      if (const AstExpr* value = e.Kwarg("value")) {
        KILN_ASSIGN_OR_RETURN(PrimExpr v, Dim(*value));
        return StructInfo(std::make_shared<ir::PrimSInfo>(v.dtype(), v));
      }
      if (!dtype) return src_.Error(e.loc, "R.Prim needs a dtype, as in R.Prim(\"int64\")");
      KILN_ASSIGN_OR_RETURN(DType t, DTypeFromAst(src_, *dtype, "R.Prim"));
      return StructInfo(std::make_shared<ir::PrimSInfo>(t));
    }
    if (name == "R.Callable") return src_.Error(e.loc, "R.Callable annotations are not supported yet");
    return src_.Error(e.loc, "expected a struct info annotation such as R.Tensor((1, 784), dtype=\"float32\"), got " +
                                 (name.empty() ? std::string("an expression") : name));
  }

  // One struct info, or several from a list/tuple (out_sinfo=[a, b]).
  Result<std::vector<StructInfo>> SInfoList(const AstExpr& e) {
    std::vector<StructInfo> out;
    if (e.kind == AstKind::kList || e.kind == AstKind::kTuple) {
      for (const auto& item : e.items) {
        KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(*item));
        out.push_back(std::move(s));
      }
    } else {
      KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(e));
      out.push_back(std::move(s));
    }
    return out;
  }

  // ------------------------------------------------------------ statements

  bool IsClassAlias(const AstExpr& e) const {
    // `cls` is TVM's conventional alias; accepted even without `cls = Module`.
    return e.kind == AstKind::kName && (e.str == ctx_.class_name || e.str == "cls" || aliases_.count(e.str)) &&
           !vars_.count(e.str);
  }

  // The statements of a function body or of an if/else branch.
  struct Stmts {
    std::vector<ir::BindingBlock> blocks;
    ir::BindingBlock cur;  // the open non-dataflow block
    Expr result;           // set by `return` (function body only)
    void Flush() {
      if (!cur.bindings.empty()) blocks.push_back(std::move(cur));
      cur = ir::BindingBlock();
    }
  };

  Result<Expr> Body(const AstStmt& def, ir::FunctionExpr* fn) {
    Stmts st;
    for (const auto& sp : def.body) {
      if (st.result) return src_.Error(sp->loc, "statement after 'return'");
      KILN_RETURN_IF_ERROR(Stmt(*sp, fn, &st));
    }
    st.Flush();
    if (!st.result) return src_.Error(def.loc, "Relax function '" + def.name + "' has no return statement");
    auto seq = std::make_shared<ir::SeqExprNode>(std::move(st.blocks), st.result);
    seq->span = st.result->span;
    return Expr(seq);
  }

  // One statement outside dataflow blocks. `fn` is null inside an if/else
  // branch, where return and R.func_attr are not allowed.
  Status Stmt(const AstStmt& s, ir::FunctionExpr* fn, Stmts* st) {
    DType t;
    switch (s.kind) {
      case StmtKind::kPass: return Status::Ok();
      case StmtKind::kReturn: {
        if (!fn)
          return src_.Error(s.loc, "'return' inside if/else is not supported; assign the result in both branches and return it after the if");
        if (!s.value) return src_.Error(s.loc, "a Relax function must return a value");
        KILN_ASSIGN_OR_RETURN(st->result, Value(*s.value));
        return Status::Ok();
      }
      case StmtKind::kWith: {
        if (!IsCallTo(s.value.get(), "R.dataflow") || !s.value->items.empty() || s.target)
          return src_.Error(s.value->loc, "expected 'with R.dataflow():' in a Relax function");
        st->Flush();
        KILN_ASSIGN_OR_RETURN(ir::BindingBlock df, Dataflow(s));
        st->blocks.push_back(std::move(df));
        return Status::Ok();
      }
      case StmtKind::kExpr: {
        if (IsCallTo(s.value.get(), "R.func_attr")) {
          if (!fn) return src_.Error(s.loc, "R.func_attr belongs at the top of the function, not inside if/else");
          if (s.value->items.size() != 1) return src_.Error(s.loc, "R.func_attr takes one dict");
          KILN_ASSIGN_OR_RETURN(fn->attrs, AttrDictFromAst(src_, *s.value->items[0]));
          return Status::Ok();
        }
        if (IsCallTo(s.value.get(), "R.output"))
          return src_.Error(s.loc, "R.output must be the last statement of a 'with R.dataflow():' block");
        return src_.Error(s.loc, "a Relax expression statement has no effect; bind its value to a name");
      }
      case StmtKind::kAssign:
        if (IsSymDecl(s)) return DeclareSyms(s);
        if (s.value && s.target->kind == AstKind::kName && IsClassAlias(*s.value)) {
          aliases_.insert(s.target->str);  // cls = Module
          return Status::Ok();
        }
        return Bind(s, false, {}, &st->cur);
      case StmtKind::kIf: return If(s, &st->cur);
      default: return src_.Error(s.loc, "unexpected statement in a Relax function");
    }
  }

  // What a branch assigns last: the result's name and annotation.
  struct BranchResult {
    std::string name;
    Loc loc;
    const AstExpr* annotation = nullptr;
  };

  // `if c:` ... `y = a` `else:` ... `y = b`, as TVM prints it: the binding
  // y = If(c, SeqExpr(then..., a), SeqExpr(else..., b)). Names bound inside a
  // branch are local to it; only y is visible after the if. `elif` (a branch
  // ending in an if that binds y) is accepted too.
  Status If(const AstStmt& s, ir::BindingBlock* block) {
    if (s.orelse.empty())
      return src_.Error(s.loc, "an if in a Relax function needs an else branch; both branches assign the result variable");
    KILN_ASSIGN_OR_RETURN(Expr cond, Value(*s.value));
    BranchResult then_r, else_r;
    KILN_ASSIGN_OR_RETURN(Expr then_seq, Branch(s.body, &then_r));
    KILN_ASSIGN_OR_RETURN(Expr else_seq, Branch(s.orelse, &else_r));
    const std::string& name = then_r.name;
    if (else_r.name != name)
      return src_.Error(else_r.loc, "both branches of if must end by assigning the same variable: expected '" + name +
                                        "', got '" + else_r.name + "'");
    if (vars_.count(name)) return src_.Error(then_r.loc, "variable '" + name + "' is already defined");
    StructInfo annotation;
    const AstExpr* ann = then_r.annotation ? then_r.annotation : else_r.annotation;
    if (ann) {
      KILN_ASSIGN_OR_RETURN(annotation, SInfo(*ann));
    }
    auto v = std::make_shared<ir::VarExpr>(name, annotation, false);
    v->span = src_.Span(then_r.loc);
    auto value = std::make_shared<ir::IfExpr>(cond, then_seq, else_seq);
    value->span = src_.Span(s.loc);
    ir::Binding b;
    b.var = v;
    b.value = value;
    b.span = src_.Span(s.loc);
    vars_[name] = v;
    block->bindings.push_back(std::move(b));
    return Status::Ok();
  }

  // One branch: its statements, the last of which assigns the branch's value
  // (or is an if whose result is the branch's value).
  Result<Expr> Branch(const std::vector<AstStmtP>& body, BranchResult* out) {
    const AstStmt& last = *body.back();
    bool nested_if = last.kind == StmtKind::kIf;
    DType t;
    if (!nested_if && (last.kind != StmtKind::kAssign || !last.value || last.target->kind != AstKind::kName ||
                       IsTypeDecl(*last.value, &t) || IsClassAlias(*last.value)))
      return src_.Error(last.loc, "the last statement of an if/else branch must assign the result, as in 'y = R.add(a, b)'");
    if (!nested_if && IsCallTo(last.value.get(), "R.match_cast"))
      return src_.Error(last.value->loc, "an if/else branch cannot end with R.match_cast; bind it first, then assign the result");
    std::map<std::string, ir::RVar> saved = vars_;
    Stmts st;
    size_t n = nested_if ? body.size() : body.size() - 1;
    for (size_t i = 0; i < n; ++i) KILN_RETURN_IF_ERROR(Stmt(*body[i], nullptr, &st));
    Expr value;
    if (nested_if) {
      const ir::RVar& inner = st.cur.bindings.back().var;
      value = inner;
      out->name = inner->name;
      out->loc = Loc{inner->span.line, inner->span.col};
    } else {
      KILN_ASSIGN_OR_RETURN(value, Value(*last.value));
      out->name = last.target->str;
      out->loc = last.target->loc;
      out->annotation = last.annotation.get();
    }
    st.Flush();
    vars_ = std::move(saved);  // names of the branch do not outlive it
    auto seq = std::make_shared<ir::SeqExprNode>(std::move(st.blocks), value);
    seq->span = src_.Span(last.loc);
    return Expr(seq);
  }

  static bool IsTypeDecl(const AstExpr& e, DType* t) {
    return e.kind == AstKind::kCall && e.items.empty() && e.kwargs.empty() && TirDTypeName(*e.base, t);
  }

  // `n = T.int64()`, or several at once as TVM prints a Relax function's
  // symbolic variables: `m, n, k = T.int64(), T.int64(), T.int64()`.
  static bool IsSymDecl(const AstStmt& s) {
    DType t;
    if (s.kind != StmtKind::kAssign || !s.value) return false;
    if (s.target->kind == AstKind::kName) return IsTypeDecl(*s.value, &t);
    if (s.target->kind != AstKind::kTuple || s.value->kind != AstKind::kTuple) return false;
    for (const auto& v : s.value->items)
      if (IsTypeDecl(*v, &t)) return true;  // DeclareSyms reports the others
    return false;
  }

  Status DeclareSyms(const AstStmt& s) {
    DType t;
    if (s.target->kind == AstKind::kName) {
      IsTypeDecl(*s.value, &t);
      return DeclareSym(*s.target, t);
    }
    const auto& names = s.target->items;
    const auto& decls = s.value->items;
    if (names.size() != decls.size())
      return src_.Error(s.loc, "the number of names and of T.int64() declarations differ");
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i]->kind != AstKind::kName) return src_.Error(names[i]->loc, "expected a variable name");
      if (!IsTypeDecl(*decls[i], &t))
        return src_.Error(decls[i]->loc, "expected T.int64() or T.int32()");
      KILN_RETURN_IF_ERROR(DeclareSym(*names[i], t));
    }
    return Status::Ok();
  }

  Status DeclareSym(const AstExpr& target, DType t) {
    if (ir::Var v = sym_.FindVar(target.str)) {
      if (v->dtype != t) return src_.Error(target.loc, "symbolic variable '" + target.str + "' was already declared with another dtype");
      return Status::Ok();  // names the same variable again
    }
    sym_.DefineVar(target.str, ir::MakeVar(target.str, t));
    return Status::Ok();
  }

  Result<ir::BindingBlock> Dataflow(const AstStmt& w) {
    ir::BindingBlock block;
    block.is_dataflow = true;
    std::set<std::string> outputs;
    const AstStmt* output_stmt = nullptr;
    if (!w.body.empty() && w.body.back()->kind == StmtKind::kExpr && IsCallTo(w.body.back()->value.get(), "R.output")) {
      output_stmt = w.body.back().get();
      for (const auto& a : output_stmt->value->items) {
        if (a->kind != AstKind::kName) return src_.Error(a->loc, "R.output takes variable names");
        outputs.insert(a->str);
      }
    }
    std::vector<std::string> bound;
    for (const auto& sp : w.body) {
      const AstStmt& s = *sp;
      if (&s == output_stmt) break;
      if (IsSymDecl(s)) {
        KILN_RETURN_IF_ERROR(DeclareSyms(s));
        continue;
      }
      if (s.kind == StmtKind::kExpr && IsCallTo(s.value.get(), "R.output"))
        return src_.Error(s.loc, "R.output must be the last statement of a 'with R.dataflow():' block");
      if (s.kind == StmtKind::kPass) continue;
      if (s.kind == StmtKind::kIf)
        return src_.Error(s.loc, "if/else is not allowed inside a dataflow block; put it after the block");
      if (s.kind != StmtKind::kAssign)
        return src_.Error(s.loc, "only bindings and R.output are allowed in a dataflow block");
      KILN_RETURN_IF_ERROR(Bind(s, true, outputs, &block));
      bound.push_back(s.target->str);
    }
    if (output_stmt) {
      for (const auto& a : output_stmt->value->items) {
        bool found = false;
        for (const auto& b : bound) found |= b == a->str;
        if (!found) return src_.Error(a->loc, "R.output names '" + a->str + "', which is not bound in this dataflow block");
      }
    }
    for (const auto& b : bound)
      if (!outputs.count(b)) vars_.erase(b);  // dataflow vars do not outlive their block
    return block;
  }

  // R.match_cast's messages=[...]: a list of strings, one per dimension of
  // the matched shape (ir::Binding::messages).
  Result<std::vector<std::string>> MatchMessages(const AstExpr& e, const StructInfo& sinfo) {
    if (e.kind != AstKind::kList) return src_.Error(e.loc, "messages= takes a list of strings, one per dimension");
    std::vector<std::string> out;
    for (const auto& item : e.items) {
      if (item->kind != AstKind::kString) return src_.Error(item->loc, "messages= takes a list of strings");
      out.push_back(item->str);
    }
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(sinfo);
    const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(sinfo);
    int64_t ndim = t && t->has_shape ? static_cast<int64_t>(t->shape.size())
                   : sh && sh->has_values ? static_cast<int64_t>(sh->values.size())
                                          : -1;
    if (static_cast<int64_t>(out.size()) != ndim) {
      return src_.Error(e.loc, "messages= has " + std::to_string(out.size()) + " strings; the matched shape has " +
                                   (ndim < 0 ? std::string("no dimensions to check") : std::to_string(ndim) + " dimensions"));
    }
    return out;
  }

  Status Bind(const AstStmt& s, bool in_dataflow, const std::set<std::string>& outputs, ir::BindingBlock* block) {
    if (!s.value) return src_.Error(s.loc, "expected '=' and a value");
    if (s.target->kind != AstKind::kName)
      return src_.Error(s.target->loc, "a Relax binding binds one name; unpack tuples with t[0], t[1]");
    const std::string& name = s.target->str;
    if (vars_.count(name)) return src_.Error(s.target->loc, "variable '" + name + "' is already defined");
    ir::Binding b;
    b.span = src_.Span(s.loc);
    StructInfo annotation;
    if (s.annotation) {
      KILN_ASSIGN_OR_RETURN(annotation, SInfo(*s.annotation));
    }
    if (IsCallTo(s.value.get(), "R.match_cast")) {
      const AstExpr& c = *s.value;
      const AstExpr* messages = c.Kwarg("messages");
      if (c.items.size() != 2 || c.kwargs.size() != (messages ? 1u : 0u))
        return src_.Error(c.loc, "R.match_cast takes a value and a struct info, as in R.match_cast(x, R.Tensor((n,), \"float32\")), "
                                 "and optionally messages=[\"...\", ...]");
      KILN_ASSIGN_OR_RETURN(b.value, Value(*c.items[0]));
      KILN_ASSIGN_OR_RETURN(b.match_cast, SInfo(*c.items[1]));
      if (messages) { KILN_ASSIGN_OR_RETURN(b.messages, MatchMessages(*messages, b.match_cast)); }
    } else {
      KILN_ASSIGN_OR_RETURN(b.value, Value(*s.value));
    }
    auto v = std::make_shared<ir::VarExpr>(name, annotation, in_dataflow && !outputs.count(name));
    v->span = src_.Span(s.target->loc);
    b.var = v;
    vars_[name] = v;
    block->bindings.push_back(std::move(b));
    return Status::Ok();
  }

  // ------------------------------------------------------------ expressions

  Result<Expr> Value(const AstExpr& e) {
    KILN_ASSIGN_OR_RETURN(Expr x, ValueImpl(e));
    if (x->span.known()) return x;
    // Nodes are immutable once shared; a fresh node gets its span here.
    const_cast<ir::ExprNode*>(x.get())->span = src_.Span(e.loc);
    return x;
  }

  Result<Expr> GlobalFunc(const std::string& name, Loc loc) {
    if (!ctx_.function_names.count(name)) return src_.Error(loc, "module has no function '" + name + "'");
    return Expr(std::make_shared<ir::GlobalVarExpr>(name));
  }

  Result<Expr> ValueImpl(const AstExpr& e) {
    switch (e.kind) {
      case AstKind::kName: {
        auto it = vars_.find(e.str);
        if (it != vars_.end()) return Expr(it->second);
        if (ctx_.function_names.count(e.str)) return Expr(std::make_shared<ir::GlobalVarExpr>(e.str));
        return src_.Error(e.loc, "undefined variable '" + e.str + "'");
      }
      case AstKind::kAttr:
        if (e.base && IsClassAlias(*e.base)) return GlobalFunc(e.str, e.loc);
        return src_.Error(e.loc, "unexpected " + (e.DottedName().empty() ? std::string("attribute") : e.DottedName()) + " in a Relax expression");
      case AstKind::kTuple: {
        std::vector<Expr> fields;
        for (const auto& f : e.items) {
          KILN_ASSIGN_OR_RETURN(Expr x, Value(*f));
          fields.push_back(std::move(x));
        }
        return Expr(std::make_shared<ir::TupleExpr>(std::move(fields)));
      }
      case AstKind::kSubscript: {
        if (e.base->kind == AstKind::kSubscript && e.base->base->kind == AstKind::kName && e.base->base->str == "metadata" &&
            !vars_.count("metadata"))
          return Metadata(e);
        if (e.items.size() != 1 || e.items[0]->kind != AstKind::kInt || e.items[0]->i < 0)
          return src_.Error(e.loc, "a tuple is indexed by one non-negative integer, as in t[0]");
        KILN_ASSIGN_OR_RETURN(Expr t, Value(*e.base));
        return Expr(std::make_shared<ir::TupleGetItemExpr>(t, static_cast<int>(e.items[0]->i)));
      }
      case AstKind::kString: return Expr(std::make_shared<ir::StringImmExpr>(e.str));
      case AstKind::kInt: return Expr(std::make_shared<ir::PrimValueExpr>(ir::IntImm(DType::Int64(), e.i)));
      // Python scalars as TVM converts them: True -> bool, 1.5 -> float64.
      case AstKind::kBool: return Expr(std::make_shared<ir::PrimValueExpr>(ir::IntImm(DType::Bool(), e.i)));
      case AstKind::kFloat: return Expr(std::make_shared<ir::PrimValueExpr>(ir::FloatImm(DType::Float64(), e.f)));
      case AstKind::kCall: return Call(e);
      default: break;
    }
    return src_.Error(e.loc, "expected a Relax expression");
  }

  Result<std::vector<Expr>> Args(const std::vector<AstExprP>& items, size_t begin) {
    std::vector<Expr> out;
    for (size_t i = begin; i < items.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Expr x, Value(*items[i]));
      out.push_back(std::move(x));
    }
    return out;
  }

  Result<Expr> Call(const AstExpr& e) {
    std::string callee = e.base->DottedName();
    if (callee == "R.call_tir") return CallDps(e, "relax.call_tir");
    if (callee == "R.call_dps_packed") return CallDps(e, "relax.call_dps_packed");
    // Kiln does not track purity: R.call_pure_packed is R.call_packed.
    if (callee == "R.call_packed" || callee == "R.call_pure_packed") return CallPacked(e);
    if (callee == "R.tuple") {
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, static_cast<size_t>(-1) >> 1, {}));
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> fields, Args(e.items, 0));
      return Expr(std::make_shared<ir::TupleExpr>(std::move(fields)));
    }
    if (callee == "R.const") return Const(e);
    if (callee == "R.shape") {
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 1, {}));
      if (e.items.size() != 1) return src_.Error(e.loc, "R.shape takes a list of dimensions, as in R.shape([n, 4])");
      KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, Dims(*e.items[0], "R.shape"));
      return Expr(std::make_shared<ir::ShapeExpr>(std::move(dims)));
    }
    if (callee == "R.prim_value") {
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 1, {}));
      if (e.items.size() != 1) return src_.Error(e.loc, "R.prim_value takes one value");
      KILN_ASSIGN_OR_RETURN(PrimExpr v, sym_.Build(*e.items[0], DType::Int64()));
      return Expr(std::make_shared<ir::PrimValueExpr>(v));
    }
    if (callee == "R.str") {
      if (e.items.size() != 1 || e.items[0]->kind != AstKind::kString) return src_.Error(e.loc, "R.str takes one string");
      return Expr(std::make_shared<ir::StringImmExpr>(e.items[0]->str));
    }
    if (callee == "R.dtype") {
      if (e.items.size() != 1) return src_.Error(e.loc, "R.dtype takes one dtype string");
      KILN_ASSIGN_OR_RETURN(DType t, DTypeFromAst(src_, *e.items[0], "R.dtype"));
      return Expr(std::make_shared<ir::DataTypeImmExpr>(t));
    }
    if (callee == "R.ExternFunc") {
      if (e.items.size() != 1 || e.items[0]->kind != AstKind::kString)
        return src_.Error(e.loc, "R.ExternFunc takes the packed function's name as a string");
      return Expr(std::make_shared<ir::ExternFuncExpr>(e.items[0]->str));
    }
    if (callee == "R.match_cast")
      return src_.Error(e.loc, "R.match_cast must be the whole value of a binding: lv = R.match_cast(x, ...)");
    if (callee == "R.output") return src_.Error(e.loc, "R.output must be the last statement of a dataflow block");
    // cls.g(x) / g(x): a call to another function of the module.
    if ((e.base->kind == AstKind::kAttr && e.base->base && IsClassAlias(*e.base->base)) ||
        (e.base->kind == AstKind::kName && !vars_.count(e.base->str) && ctx_.function_names.count(e.base->str))) {
      if (!e.kwargs.empty()) return src_.Error(e.kwarg_locs[0], "calls of module functions take no keyword arguments");
      KILN_ASSIGN_OR_RETURN(Expr f, Value(*e.base));
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, Args(e.items, 0));
      return Expr(std::make_shared<ir::CallExpr>(f, std::move(args)));
    }
    if (callee.size() > 2 && callee.compare(0, 2, "R.") == 0) {
      std::string op = callee.substr(2);
      if (!IsKnownRelaxOp(op)) return src_.Error(e.base->loc, "unknown operator " + callee);
      KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, Args(e.items, 0));
      ir::AttrMap attrs;
      for (size_t i = 0; i < e.kwargs.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(attrs[e.kwargs[i].first], AttrFromAst(src_, *e.kwargs[i].second));
      }
      return ir::MakeOpCall("relax." + op, std::move(args), std::move(attrs));
    }
    if (e.base->kind == AstKind::kName && !vars_.count(e.base->str))
      return src_.Error(e.base->loc, "undefined function '" + e.base->str + "'");
    return src_.Error(e.base->loc, "unsupported call " + (callee.empty() ? std::string("expression") : callee) + " in a Relax function");
  }

  // R.call_tir(cls.f, (x, w), out_sinfo=..., tir_vars=R.shape([...])) and
  // R.call_dps_packed("env.linear", (x, w), out_sinfo=...).
  Result<Expr> CallDps(const AstExpr& e, const char* op) {
    std::string what = e.base->DottedName();
    bool tir = std::strcmp(op, "relax.call_tir") == 0;
    if (tir) {
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 4, {"out_sinfo", "tir_vars"}));
    } else {
      KILN_RETURN_IF_ERROR(NoExtraArgs(e, 3, {"out_sinfo"}));
    }
    if (e.items.size() < 2) return src_.Error(e.loc, what + " takes a callee, a tuple of arguments and out_sinfo");
    Expr callee;
    if (tir) {
      KILN_ASSIGN_OR_RETURN(callee, Value(*e.items[0]));
      if (!ir::ExprAs<ir::GlobalVarExpr>(callee))
        return src_.Error(e.items[0]->loc, "R.call_tir calls a T.prim_func of the module, as in cls.f");
    } else {
      if (e.items[0]->kind != AstKind::kString)
        return src_.Error(e.items[0]->loc, what + " needs the packed function's name as a string, as in \"env.linear\"");
      callee = std::make_shared<ir::ExternFuncExpr>(e.items[0]->str);
    }
    KILN_ASSIGN_OR_RETURN(Expr args, Value(*e.items[1]));
    if (!ir::ExprAs<ir::TupleExpr>(args)) args = std::make_shared<ir::TupleExpr>(std::vector<Expr>{args});
    const AstExpr* out = e.items.size() > 2 ? e.items[2].get() : e.Kwarg("out_sinfo");
    if (!out) return src_.Error(e.loc, what + " needs out_sinfo=R.Tensor(...)");
    KILN_ASSIGN_OR_RETURN(std::vector<StructInfo> sinfo, SInfoList(*out));
    std::vector<Expr> call_args{callee, args};
    const AstExpr* tir_vars = e.items.size() > 3 ? e.items[3].get() : e.Kwarg("tir_vars");
    if (tir_vars && tir_vars->kind != AstKind::kNone) {
      KILN_ASSIGN_OR_RETURN(Expr tv, Value(*tir_vars));
      if (!ir::ExprAs<ir::ShapeExpr>(tv)) return src_.Error(tir_vars->loc, "tir_vars must be R.shape([...])");
      call_args.push_back(tv);
    }
    return ir::MakeOpCall(op, std::move(call_args), {}, std::move(sinfo));
  }

  Result<Expr> CallPacked(const AstExpr& e) {
    KILN_RETURN_IF_ERROR(NoExtraArgs(e, static_cast<size_t>(-1) >> 1, {"sinfo_args"}));
    if (e.items.empty() || e.items[0]->kind != AstKind::kString)
      return src_.Error(e.loc, e.base->DottedName() + " needs the packed function's name as a string first");
    const AstExpr* s = e.Kwarg("sinfo_args");
    if (!s) return src_.Error(e.loc, e.base->DottedName() + " needs sinfo_args=... (the struct info of its result)");
    KILN_ASSIGN_OR_RETURN(std::vector<StructInfo> sinfo, SInfoList(*s));
    KILN_ASSIGN_OR_RETURN(std::vector<Expr> args, Args(e.items, 1));
    return Expr(std::make_shared<ir::CallExpr>(std::make_shared<ir::ExternFuncExpr>(e.items[0]->str), std::move(args),
                                               ir::AttrMap{}, std::move(sinfo)));
  }

  // R.const(value, "dtype"): a number, a bool or nested lists of them. As in
  // TVM, the dtype defaults to float32 when any element is a float, bool when
  // all are bools, int32 otherwise.
  Result<Expr> Const(const AstExpr& e) {
    KILN_RETURN_IF_ERROR(NoExtraArgs(e, 2, {"dtype"}));
    if (e.items.empty()) return src_.Error(e.loc, "R.const needs a value");
    std::vector<int64_t> shape;
    std::vector<const AstExpr*> leaves;
    int leaf_depth = -1;
    KILN_RETURN_IF_ERROR(ConstShape(*e.items[0], 0, &shape, &leaves, &leaf_depth));
    std::vector<Literal> lits;
    bool any_float = false, all_bool = true;
    for (const AstExpr* leaf : leaves) {
      bool is_bool = false;
      KILN_ASSIGN_OR_RETURN(Literal l, ConstLiteral(*leaf, &is_bool));
      any_float |= l.is_float;
      all_bool &= is_bool;
      lits.push_back(l);
    }
    DType t = any_float ? DType::Float32() : all_bool && !leaves.empty() ? DType::Bool() : DType::Int32();
    const AstExpr* dtype = e.items.size() > 1 ? e.items[1].get() : e.Kwarg("dtype");
    if (dtype) {
      KILN_ASSIGN_OR_RETURN(t, DTypeFromAst(src_, *dtype, "R.const"));
      if (!IsConstantDType(t)) return src_.Error(dtype->loc, "R.const does not support dtype " + DTypeToString(t));
    }
    for (size_t i = 0; i < lits.size(); ++i) {
      if (!LiteralFits(lits[i], t)) {
        char value[32];
        std::snprintf(value, sizeof(value), "%g", lits[i].f);
        return src_.Error(leaves[i]->loc, std::string("R.const: ") + value + " cannot be stored as " + DTypeToString(t) +
                                              " (an integer dtype takes finite values within int64)");
      }
    }
    Result<Tensor> r = Tensor::Empty(Span<const int64_t>(shape.data(), shape.size()), t);
    if (!r.ok()) return src_.Error(e.loc, "R.const: " + r.status().message());
    for (size_t i = 0; i < lits.size(); ++i) StoreLiteral(r.value(), static_cast<int64_t>(i), lits[i]);
    return Expr(std::make_shared<ir::ConstantExpr>(r.value()));
  }

  // The shape of nested lists and their leaves in row-major order; every
  // leaf sits at the same depth and sibling lists have the same length.
  Status ConstShape(const AstExpr& v, int depth, std::vector<int64_t>* shape, std::vector<const AstExpr*>* leaves,
                    int* leaf_depth) {
    if (v.kind != AstKind::kList && v.kind != AstKind::kTuple) {
      if (*leaf_depth < 0) *leaf_depth = depth;
      if (depth != *leaf_depth || depth != static_cast<int>(shape->size()))
        return src_.Error(v.loc, "R.const lists must be rectangular: a number where a list was expected");
      leaves->push_back(&v);
      return Status::Ok();
    }
    if (*leaf_depth >= 0 && depth >= *leaf_depth)
      return src_.Error(v.loc, "R.const lists must be rectangular: a list where a number was expected");
    int64_t n = static_cast<int64_t>(v.items.size());
    if (depth == static_cast<int>(shape->size())) {
      shape->push_back(n);
    } else if ((*shape)[depth] != n) {
      return src_.Error(v.loc, StrFormat("R.const lists must be rectangular: expected %lld elements, got %lld",
                                         static_cast<long long>((*shape)[depth]), static_cast<long long>(n)));
    }
    for (const auto& item : v.items) KILN_RETURN_IF_ERROR(ConstShape(*item, depth + 1, shape, leaves, leaf_depth));
    return Status::Ok();
  }

  // 1, -2.5, True, float("inf").
  Result<Literal> ConstLiteral(const AstExpr& v, bool* is_bool) {
    Literal l;
    switch (v.kind) {
      case AstKind::kInt: l.i = v.i; return l;
      case AstKind::kBool: l.i = v.i; *is_bool = true; return l;
      case AstKind::kFloat: l.is_float = true; l.f = v.f; return l;
      case AstKind::kUnary:
        if ((v.str == "-" || v.str == "+") && v.items.size() == 1 && v.items[0]->kind != AstKind::kBool &&
            v.items[0]->kind != AstKind::kUnary) {
          bool b = false;
          KILN_ASSIGN_OR_RETURN(l, ConstLiteral(*v.items[0], &b));
          if (v.str == "-") {
            l.f = -l.f;
            l.i = -l.i;
          }
          return l;
        }
        break;
      case AstKind::kCall:
        if (v.base->DottedName() == "float" && v.items.size() == 1 && v.kwargs.empty() && v.items[0]->kind == AstKind::kString) {
          const std::string& w = v.items[0]->str;
          l.is_float = true;
          if (w == "inf" || w == "+inf") {
            l.f = HUGE_VAL;
          } else if (w == "-inf") {
            l.f = -HUGE_VAL;
          } else if (w == "nan") {
            l.f = std::nan("");
          } else {
            return src_.Error(v.items[0]->loc, "expected \"inf\", \"-inf\" or \"nan\"");
          }
          return l;
        }
        break;
      default: break;
    }
    return src_.Error(v.loc, "R.const needs numbers or bools, as in R.const([1.0, 2.0], \"float32\")");
  }

  // metadata["relax.expr.Constant"][i]: entry i of the caller's constant table.
  Result<Expr> Metadata(const AstExpr& e) {
    const AstExpr& section = *e.base;
    if (section.items.size() != 1 || section.items[0]->kind != AstKind::kString)
      return src_.Error(section.loc, "expected metadata[\"relax.expr.Constant\"][index]");
    if (section.items[0]->str != "relax.expr.Constant")
      return src_.Error(section.items[0]->loc, "unknown metadata section \"" + section.items[0]->str +
                                                   "\" (Kiln's constant table holds \"relax.expr.Constant\")");
    if (e.items.size() != 1 || e.items[0]->kind != AstKind::kInt || e.items[0]->i < 0)
      return src_.Error(e.loc, "a metadata constant is indexed by one non-negative integer, as in metadata[\"relax.expr.Constant\"][0]");
    if (ctx_.uses_constants) *ctx_.uses_constants = true;
    if (!ctx_.constants)
      return src_.Error(e.loc, "metadata[...] refers to a constant table, but none was given: parse with the table that "
                               "PrintModule returned, or bind weights with --params");
    int64_t i = e.items[0]->i;
    if (i >= static_cast<int64_t>(ctx_.constants->size()))
      return src_.Error(e.items[0]->loc, StrFormat("metadata constant %lld is out of range: the constant table has %zu entries",
                                                   static_cast<long long>(i), ctx_.constants->size()));
    const auto* c = ir::ExprAs<ir::ConstantExpr>((*ctx_.constants)[i]);
    if (!c || !c->data.defined())
      return src_.Error(e.items[0]->loc, StrFormat("entry %lld of the constant table is not a constant tensor", static_cast<long long>(i)));
    // A fresh node: the parsed module must not share (and set spans on) the caller's.
    return Expr(std::make_shared<ir::ConstantExpr>(c->data, c->name));
  }

  const ModuleContext& ctx_;
  const SourceFile& src_;
  TirExprBuilder sym_;
  std::map<std::string, ir::RVar> vars_;
  std::set<std::string> aliases_;
};

}  // namespace

Result<ir::Function> BuildRelaxFunction(const ModuleContext& ctx, const AstStmt& def, bool is_private) {
  return RelaxFuncBuilder(ctx).Build(def, is_private);
}

}  // namespace text
}  // namespace kiln
