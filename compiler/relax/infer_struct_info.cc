#include "compiler/relax/infer_struct_info.h"

#include <map>
#include <memory>

#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::Expr;
using ir::StructInfo;

class Inferer {
 public:
  explicit Inferer(ir::IRModule* mod) : mod_(*mod), out_(mod) {}

  // Infers the Relax function `name` once, replacing its module entry. A
  // call of a function later in the module infers that one first, so results
  // do not depend on function order; a recursive call sees only the declared
  // result.
  Status InferEntry(const std::string& name) {
    int& state = state_[name];
    if (state != kTodo) return Status::Ok();
    state = kInProgress;
    for (auto& entry : out_->entries) {
      if (entry.name != name || !entry.relax) continue;
      KILN_ASSIGN_OR_RETURN(entry.relax, VisitFunction(entry.relax));
    }
    state_[name] = kDone;
    return Status::Ok();
  }

  Result<StructInfo> InferExpr(const Expr& e) { return Visit(e); }

  Result<ir::Function> VisitFunction(const ir::Function& f) {
    for (const auto& p : f->params) {
      p->struct_info = p->annotation ? p->annotation : StructInfo(std::make_shared<ir::ObjectSInfo>());
    }
    KILN_ASSIGN_OR_RETURN(StructInfo body, Visit(f->body));
    if (f->ret_sinfo) {
      std::string why;
      if (CheckCompatible(f->ret_sinfo, body, &why) == DimRelation::kNotEqual) {
        return InvalidArgument(Where(f->span) + "function '" + f->name + "' returns " + SInfoString(body) +
                               " but declares " + SInfoString(f->ret_sinfo) + ": " + why);
      }
    }
    auto out = std::make_shared<ir::FunctionExpr>(*f);
    if (!out->ret_sinfo) out->ret_sinfo = body;
    out->struct_info = nullptr;
    std::vector<StructInfo> params;
    for (const auto& p : f->params) params.push_back(p->struct_info);
    out->struct_info = std::make_shared<ir::FuncSInfo>(params, out->ret_sinfo);
    return ir::Function(out);
  }

 private:
  Result<StructInfo> Set(const Expr& e, Result<StructInfo> s) {
    if (s.ok()) e->struct_info = s.value();
    return s;
  }

  Result<StructInfo> Visit(const Expr& e) {
    switch (e->kind) {
      case ir::ExprKind::kVar: {
        if (!e->struct_info) {
          return Internal(Where(e->span) + "variable '" + static_cast<const ir::VarExpr&>(*e).name +
                          "' used before its definition was normalized");
        }
        return e->struct_info;
      }
      case ir::ExprKind::kConstant: {
        const auto& c = static_cast<const ir::ConstantExpr&>(*e);
        std::vector<ir::PrimExpr> shape;
        for (int64_t d : c.data.shape()) shape.push_back(ir::PrimExpr(d));
        return Set(e, ir::MakeTensorSInfo(shape, c.data.dtype()));
      }
      case ir::ExprKind::kTuple: {
        std::vector<StructInfo> fields;
        for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) {
          KILN_ASSIGN_OR_RETURN(StructInfo s, Visit(f));
          fields.push_back(s);
        }
        return Set(e, StructInfo(std::make_shared<ir::TupleSInfo>(fields)));
      }
      case ir::ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const ir::TupleGetItemExpr&>(*e);
        KILN_ASSIGN_OR_RETURN(StructInfo t, Visit(g.tuple));
        const auto* tuple = ir::SInfoAs<ir::TupleSInfo>(t);
        if (!tuple) return InvalidArgument(Where(e->span) + "indexing [" + std::to_string(g.index) + "] into " + SInfoString(t) + ", which is not a tuple");
        if (g.index < 0 || g.index >= static_cast<int>(tuple->fields.size())) {
          return InvalidArgument(Where(e->span) + "tuple index " + std::to_string(g.index) + " out of range for a tuple of " +
                                 std::to_string(tuple->fields.size()));
        }
        return Set(e, tuple->fields[g.index]);
      }
      case ir::ExprKind::kShapeExpr: {
        const auto& s = static_cast<const ir::ShapeExpr&>(*e);
        return Set(e, StructInfo(std::make_shared<ir::ShapeSInfo>(true, s.values, -1)));
      }
      case ir::ExprKind::kPrimValue: {
        const auto& p = static_cast<const ir::PrimValueExpr&>(*e);
        return Set(e, StructInfo(std::make_shared<ir::PrimSInfo>(p.value.dtype(), p.value)));
      }
      case ir::ExprKind::kStringImm:
      case ir::ExprKind::kDataTypeImm:
      case ir::ExprKind::kExternFunc:
      case ir::ExprKind::kOp:
        return Set(e, StructInfo(std::make_shared<ir::ObjectSInfo>()));
      case ir::ExprKind::kGlobalVar: {
        const auto& g = static_cast<const ir::GlobalVarExpr&>(*e);
        if (!mod_.Find(g.name)) return NotFound(Where(e->span) + "no function named '" + g.name + "' in the module");
        return Set(e, StructInfo(std::make_shared<ir::ObjectSInfo>()));
      }
      case ir::ExprKind::kCall:
        return Set(e, VisitCall(static_cast<const ir::CallExpr&>(*e)));
      case ir::ExprKind::kSeqExpr:
        return Set(e, VisitSeq(static_cast<const ir::SeqExprNode&>(*e)));
      case ir::ExprKind::kIf: {
        const auto& i = static_cast<const ir::IfExpr&>(*e);
        KILN_ASSIGN_OR_RETURN(StructInfo c, Visit(i.cond));
        KILN_ASSIGN_OR_RETURN(StructInfo t, Visit(i.then_branch));
        KILN_ASSIGN_OR_RETURN(StructInfo f, Visit(i.else_branch));
        std::string why;
        if (CheckCompatible(t, f, &why) == DimRelation::kNotEqual) {
          return InvalidArgument(Where(e->span) + "the branches of if return different types: " + why);
        }
        // Not the then branch's: a shape only one branch gives would be
        // trusted by later operators, whichever branch ran.
        return Set(e, StructInfoLCA(t, f));
      }
      case ir::ExprKind::kFunction:
        return Unimplemented(Where(e->span) + "nested functions are not supported");
    }
    return Internal("unknown expression kind");
  }

  Result<StructInfo> VisitSeq(const ir::SeqExprNode& seq) {
    for (const auto& block : seq.blocks) {
      for (const auto& b : block.bindings) {
        KILN_ASSIGN_OR_RETURN(StructInfo value, Visit(b.value));
        if (b.match_cast) {
          std::string why;
          if (CheckCompatible(b.match_cast, value, &why) == DimRelation::kNotEqual) {
            return InvalidArgument(Where(b.span) + "R.match_cast of '" + b.var->name + "' can never succeed: " + why);
          }
          b.var->struct_info = b.match_cast;
        } else if (b.var->annotation) {
          std::string why;
          if (CheckCompatible(b.var->annotation, value, &why) == DimRelation::kNotEqual) {
            return InvalidArgument(Where(b.span) + "'" + b.var->name + "' is annotated " + SInfoString(b.var->annotation) +
                                   " but its value is " + SInfoString(value) + ": " + why);
          }
          b.var->struct_info = b.var->annotation;
        } else {
          b.var->struct_info = value;
        }
      }
    }
    return Visit(seq.body);
  }

  Result<StructInfo> VisitCall(const ir::CallExpr& call) {
    for (const auto& a : call.args) KILN_RETURN_IF_ERROR(Visit(a).status());
    if (const auto* op = ir::ExprAs<ir::OpExpr>(call.op)) {
      const OpInfo* info = FindOp(op->name);
      if (!info) return NotFound(Where(call.span) + "unknown operator '" + op->name + "'");
      if (info->num_args >= 0 && static_cast<int>(call.args.size()) != info->num_args) {
        return InvalidArgument(Where(call.span) + op->name + " takes " + std::to_string(info->num_args) +
                               " arguments, got " + std::to_string(call.args.size()));
      }
      if (op->name == "relax.call_tir") KILN_RETURN_IF_ERROR(CheckCallTir(call));
      return info->infer(call);
    }
    if (const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(call.op)) {
      ir::Function callee = mod_.FindRelax(gv->name);
      if (!callee) {
        return NotFound(Where(call.span) + "no Relax function named '" + gv->name + "' in the module" +
                        (mod_.FindPrim(gv->name) ? " (it is a PrimFunc: call it with R.call_tir)" : ""));
      }
      if (callee->params.size() != call.args.size()) {
        return InvalidArgument(Where(call.span) + "'" + gv->name + "' takes " + std::to_string(callee->params.size()) +
                               " arguments, got " + std::to_string(call.args.size()));
      }
      if (!callee->ret_sinfo) {
        KILN_RETURN_IF_ERROR(InferEntry(gv->name));
        callee = mod_.FindRelax(gv->name);
      }
      // Callee results are taken as declared (or inferred); symbolic variables
      // of the callee are not yet substituted by the caller's values.
      if (callee->ret_sinfo) return callee->ret_sinfo;
      return StructInfo(std::make_shared<ir::ObjectSInfo>());
    }
    if (ir::ExprAs<ir::ExternFuncExpr>(call.op)) {
      if (!call.sinfo_args.empty()) return call.sinfo_args[0];
      return StructInfo(std::make_shared<ir::ObjectSInfo>());
    }
    return Unimplemented(Where(call.span) + "calling a value that is not an operator, a module function or a packed function");
  }

  Status CheckCallTir(const ir::CallExpr& call) {
    const auto* gv = call.args.empty() ? nullptr : ir::ExprAs<ir::GlobalVarExpr>(call.args[0]);
    if (!gv) return InvalidArgument(Where(call.span) + "R.call_tir expects a PrimFunc of the module as its first argument");
    ir::PrimFunc f = mod_.FindPrim(gv->name);
    if (!f) return NotFound(Where(call.span) + "R.call_tir: no PrimFunc named '" + gv->name + "' in the module");
    const auto* args = call.args.size() > 1 ? ir::ExprAs<ir::TupleExpr>(call.args[1]) : nullptr;
    size_t n_in = args ? args->fields.size() : 0;
    size_t n_out = call.sinfo_args.size();
    size_t n_tir_vars = 0;
    if (call.args.size() > 2) {
      if (const auto* s = ir::ExprAs<ir::ShapeExpr>(call.args[2])) n_tir_vars = s->values.size();
    }
    if (n_in + n_out + n_tir_vars != f->params.size()) {
      return InvalidArgument(Where(call.span) + "R.call_tir: '" + gv->name + "' has " + std::to_string(f->params.size()) +
                             " parameters but the call passes " + std::to_string(n_in) + " inputs and " +
                             std::to_string(n_out) + " outputs");
    }
    return Status::Ok();
  }

  enum { kTodo = 0, kInProgress, kDone };
  const ir::IRModule& mod_;
  ir::IRModule* out_;
  std::map<std::string, int> state_;
};

}  // namespace

Result<ir::IRModule> InferStructInfo(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  Inferer inferer(&out);
  for (size_t i = 0; i < out.entries.size(); ++i) {
    if (out.entries[i].relax) KILN_RETURN_IF_ERROR(inferer.InferEntry(out.entries[i].name));
  }
  return out;
}

Result<ir::StructInfo> InferExprStructInfo(const ir::IRModule& mod, const ir::Expr& e) {
  ir::IRModule scratch = mod;
  Inferer inferer(&scratch);
  return inferer.InferExpr(e);
}

}  // namespace relax
}  // namespace kiln
