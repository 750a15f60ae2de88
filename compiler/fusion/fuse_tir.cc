#include "compiler/fusion/fuse_tir.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "compiler/fusion/fuse_ops.h"
#include "compiler/fusion/op_pattern.h"
#include "compiler/fusion/prim_func_instance.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace fusion {
namespace {

using ir::Buffer;
using ir::PrimExpr;

class VarCollector : public tir::StmtExprVisitor {
 public:
  std::vector<const ir::VarNode*> vars;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) vars.push_back(v);
    tir::StmtExprVisitor::VisitExpr(e);
  }
};

const ir::TensorSInfo* TensorOf(const ir::RVar& v) {
  const ir::StructInfo& s = v->struct_info ? v->struct_info : v->annotation;
  return ir::SInfoAs<ir::TensorSInfo>(s);
}

// The R.Shape struct info of a fused function's scalars parameter
// (fuse_ops.h), or nullptr for any other parameter.
const ir::ShapeSInfo* ScalarsOf(const ir::RVar& v) {
  const ir::StructInfo& s = v->struct_info ? v->struct_info : v->annotation;
  return ir::SInfoAs<ir::ShapeSInfo>(s);
}

// Shapes of the fused function in the PrimFunc's own variables.
class ShapeScope {
 public:
  explicit ShapeScope(std::string where) : where_(std::move(where)) {}

  // Plain dimensions of parameters and of the result name the variables.
  void Declare(const std::vector<PrimExpr>& shape) {
    for (const auto& d : shape) {
      const auto* v = d.as<ir::VarNode>();
      if (v && !map_.count(v)) {
        ir::Var local = ir::MakeVar(v->name, v->dtype);
        map_[v] = PrimExpr(local);
        locals_.insert(local.get());
        vars_.push_back(local);
      }
    }
  }

  // The local variable of a declared variable `v`.
  ir::Var LocalVar(const ir::VarNode* v) const {
    const PrimExpr& l = map_.at(v);
    for (const auto& kv : vars_)
      if (kv.get() == l.get()) return kv;
    return nullptr;
  }

  Result<std::vector<PrimExpr>> Local(const std::vector<PrimExpr>& shape) const {
    std::vector<PrimExpr> out;
    for (const auto& d : shape) {
      PrimExpr l = tir::Substitute(d, map_);
      VarCollector vc;
      vc.VisitExpr(l);
      for (const auto* v : vc.vars) {
        if (!locals_.count(v)) {
          return Unimplemented(where_ + ": symbolic variable '" + v->name +
                               "' is not a plain dimension of a parameter or of the result");
        }
      }
      out.push_back(l);
    }
    return out;
  }

 private:
  std::string where_;
  tir::VarMap map_;
  std::set<const ir::VarNode*> locals_;
  std::vector<ir::Var> vars_;
};

struct FusedCall {
  const ir::Binding* binding;
  ir::PrimFunc callee;
  const ir::TupleExpr* args;
  const ir::TensorSInfo* out;
  const ir::ShapeExpr* tir_vars;  // may be null
};

Result<FusedCall> AsFusedCall(const ir::IRModule& mod, const ir::Binding& b, const std::string& where) {
  const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
  const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  FusedCall fc{&b, nullptr, nullptr, nullptr, nullptr};
  bool shape_ok = true;
  if (op && op->name == "relax.call_tir" && (call->args.size() == 2 || call->args.size() == 3) &&
      call->sinfo_args.size() == 1 && !b.match_cast) {
    const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(call->args[0]);
    fc.args = ir::ExprAs<ir::TupleExpr>(call->args[1]);
    fc.out = ir::SInfoAs<ir::TensorSInfo>(call->sinfo_args[0]);
    if (call->args.size() == 3) {
      fc.tir_vars = ir::ExprAs<ir::ShapeExpr>(call->args[2]);
      shape_ok = fc.tir_vars != nullptr;
    }
    if (gv) fc.callee = mod.FindPrim(gv->name);
  }
  if (!fc.callee || !fc.args || !fc.out || !fc.out->has_shape || !shape_ok) {
    return InvalidArgument(where + ": binding '" + b.var->name +
                           "' is not an R.call_tir of a PrimFunc with one tensor result");
  }
  return fc;
}

ir::AttrValue IntAttr(int64_t v) {
  ir::AttrValue a;
  a.kind = ir::AttrValue::Kind::kInt;
  a.i = v;
  return a;
}

// The fused function's result shape in the caller's dimensions.
ir::StructInfo CallerResult(const ir::FunctionExpr& f, const ir::CallExpr& call) {
  const auto* ret = ir::SInfoAs<ir::TensorSInfo>(f.ret_sinfo);
  if (!ret || !ret->has_shape || f.params.size() != call.args.size()) return call.struct_info;
  tir::VarMap map;
  for (size_t i = 0; i < f.params.size(); ++i) {
    std::vector<PrimExpr> pdims, adims;
    if (const auto* ps = ScalarsOf(f.params[i])) {
      const auto* as = ir::SInfoAs<ir::ShapeSInfo>(call.args[i]->struct_info);
      if (!as || !as->has_values) continue;
      pdims = ps->values;
      adims = as->values;
    } else {
      const auto* p = TensorOf(f.params[i]);
      const auto* a = ir::SInfoAs<ir::TensorSInfo>(call.args[i]->struct_info);
      if (!p || !a || !p->has_shape || !a->has_shape) continue;
      pdims = p->shape;
      adims = a->shape;
    }
    if (pdims.size() != adims.size()) continue;
    for (size_t d = 0; d < pdims.size(); ++d) {
      const auto* v = pdims[d].as<ir::VarNode>();
      if (v && !map.count(v)) map[v] = adims[d];
    }
  }
  std::vector<PrimExpr> shape;
  for (const auto& d : ret->shape) shape.push_back(tir::Substitute(d, map));
  return ir::MakeTensorSInfo(shape, ret->dtype);
}

}  // namespace

Result<ir::PrimFunc> BuildFusedPrimFunc(const ir::IRModule& mod, const ir::FunctionExpr& fused, const std::string& name) {
  std::string where = "fuse_tir: fused function '" + name + "'";
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(fused.body);
  const auto* result = seq ? ir::ExprAs<ir::VarExpr>(seq->body) : nullptr;
  if (!result) return InvalidArgument(where + ": the result is not a variable bound in its body");
  const ir::Binding* result_binding = nullptr;
  std::vector<FusedCall> calls;
  for (const auto& block : seq->blocks) {
    for (const auto& b : block.bindings) {
      KILN_ASSIGN_OR_RETURN(FusedCall fc, AsFusedCall(mod, b, where));
      calls.push_back(fc);
      if (b.var.get() == result) result_binding = &b;
    }
  }
  if (!result_binding) return InvalidArgument(where + ": the result is not a variable bound in its body");

  ShapeScope scope(where);
  std::vector<const ir::TensorSInfo*> param_types;
  std::vector<ir::RVar> tensor_params = fused.params;
  // The variables the kernel takes as scalars (the last parameter, an
  // R.Shape of plain variables).
  std::vector<PrimExpr> scalars;
  if (!tensor_params.empty()) {
    if (const auto* sh = ScalarsOf(tensor_params.back())) {
      bool plain = sh->has_values;
      for (const auto& d : sh->values) plain &= d.as<ir::VarNode>() != nullptr;
      if (!plain) {
        return InvalidArgument(where + ": parameter '" + tensor_params.back()->name +
                               "' is a shape but not of symbolic variables");
      }
      scalars = sh->values;
      scope.Declare(scalars);
      tensor_params.pop_back();
    }
  }
  for (const auto& p : tensor_params) {
    const auto* t = TensorOf(p);
    if (!t || !t->has_shape || !t->has_dtype) {
      return InvalidArgument(where + ": parameter '" + p->name + "' is not a tensor of known shape and dtype");
    }
    param_types.push_back(t);
    scope.Declare(t->shape);
  }
  const ir::TensorSInfo* result_type = nullptr;
  for (const auto& c : calls)
    if (c.binding == result_binding) result_type = c.out;
  scope.Declare(result_type->shape);

  auto func = std::make_shared<ir::PrimFuncNode>();
  func->name = name;
  std::unordered_map<const ir::VarExpr*, Buffer> buffers;
  auto add_param = [&](const std::string& n, const Buffer& b) {
    ir::Var handle = ir::MakeVar(n + "_handle", ir::HandleType());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  };
  for (size_t i = 0; i < tensor_params.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, scope.Local(param_types[i]->shape));
    Buffer b = ir::MakeBuffer(tensor_params[i]->name, shape, param_types[i]->dtype);
    buffers[tensor_params[i].get()] = b;
    add_param(tensor_params[i]->name, b);
  }

  std::vector<Buffer> allocs;
  std::vector<ir::Stmt> stmts;
  std::set<std::string> block_names = {"root"};
  OpPattern pattern = kElemWise;
  for (const auto& c : calls) {
    std::vector<Buffer> args;
    for (const auto& a : c.args->fields) {
      const auto* v = ir::ExprAs<ir::VarExpr>(a);
      if (!v) {
        return Unimplemented(where + ": binding '" + c.binding->var->name +
                             "' passes a value that is not a variable (fuse_ops passes constants as parameters)");
      }
      auto it = buffers.find(v);
      if (it == buffers.end()) {
        return InvalidArgument(where + ": binding '" + c.binding->var->name + "' reads '" + v->name +
                               "', which is neither a parameter nor bound before it");
      }
      args.push_back(it->second);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, scope.Local(c.out->shape));
    Buffer out = ir::MakeBuffer(c.binding->var->name, shape, c.out->dtype);
    if (c.binding == result_binding) {
      add_param(c.binding->var->name, out);
    } else {
      allocs.push_back(out);
    }
    buffers[c.binding->var.get()] = out;
    args.push_back(out);
    std::vector<PrimExpr> scalar_args;
    if (c.tir_vars) {
      KILN_ASSIGN_OR_RETURN(scalar_args, scope.Local(c.tir_vars->values));
    }
    KILN_ASSIGN_OR_RETURN(PrimFuncInstance inst, InstantiatePrimFunc(c.callee, args, scalar_args, &block_names,
                                                                              c.binding != result_binding));
    allocs.insert(allocs.end(), inst.root_allocs.begin(), inst.root_allocs.end());
    stmts.push_back(inst.body);
    pattern = std::max(pattern, GetOpPattern(c.callee));
  }

  for (const auto& v : scalars) func->params.push_back(scope.LocalVar(v.as<ir::VarNode>()));

  ir::Block root;
  root.name = "root";
  root.alloc_buffers = std::move(allocs);
  root.body = ir::Seq(std::move(stmts));
  func->body = std::make_shared<ir::BlockRealizeNode>(std::vector<PrimExpr>{}, ir::IntImm(DType::Bool(), 1), std::move(root));
  func->attrs["tir.noalias"].kind = ir::AttrValue::Kind::kBool;
  func->attrs["tir.noalias"].i = 1;
  func->attrs[kOpPatternAttr] = IntAttr(pattern);
  func->span = fused.span;
  return ir::PrimFunc(func);
}

Result<ir::IRModule> FuseTIR(const ir::IRModule& mod) {
  std::map<std::string, ir::PrimFunc> built;
  for (const auto& e : mod.entries) {
    if (!e.relax || !IsPrimitiveFunction(*e.relax)) continue;
    KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, BuildFusedPrimFunc(mod, *e.relax, e.name));
    built[e.name] = f;
  }
  if (built.empty()) return mod;

  ir::IRModule out = mod;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    auto b = built.find(e.name);
    if (b != built.end()) {
      e.prim = b->second;
      e.relax = nullptr;
      continue;
    }
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e.relax->body);
    if (!seq) continue;
    bool changed = false;
    std::vector<ir::BindingBlock> blocks = seq->blocks;
    // Calls inside If branches (winograd-conv2d's run-time choices) too.
    std::function<Status(std::vector<ir::BindingBlock>&)> rewrite = [&](std::vector<ir::BindingBlock>& blocks) -> Status {
    for (auto& block : blocks) {
      for (auto& binding : block.bindings) {
        if (const auto* i = ir::ExprAs<ir::IfExpr>(binding.value)) {
          ir::Expr then_arm = i->then_branch, else_arm = i->else_branch;
          for (ir::Expr* arm : {&then_arm, &else_arm}) {
            const auto* s = ir::ExprAs<ir::SeqExprNode>(*arm);
            if (!s) continue;
            std::vector<ir::BindingBlock> bs = s->blocks;
            KILN_RETURN_IF_ERROR(rewrite(bs));
            auto ns = std::make_shared<ir::SeqExprNode>(std::move(bs), s->body);
            ns->span = s->span;
            ns->struct_info = s->struct_info;
            *arm = ns;
          }
          auto ni = std::make_shared<ir::IfExpr>(i->cond, then_arm, else_arm);
          ni->span = i->span;
          ni->struct_info = i->struct_info;
          binding.value = ni;
          changed = true;
          continue;
        }
        const auto* call = ir::ExprAs<ir::CallExpr>(binding.value);
        const auto* gv = call ? ir::ExprAs<ir::GlobalVarExpr>(call->op) : nullptr;
        if (!gv || !built.count(gv->name)) continue;
        const ir::FunctionExpr& fused = *mod.FindRelax(gv->name);
        ir::StructInfo out_sinfo = CallerResult(fused, *call);
        std::vector<ir::Expr> tensors = call->args;
        ir::Expr tir_vars;
        if (!fused.params.empty() && ScalarsOf(fused.params.back()) && !tensors.empty()) {
          tir_vars = tensors.back();
          tensors.pop_back();
          if (!ir::ExprAs<ir::ShapeExpr>(tir_vars)) {
            return InvalidArgument("fuse_tir: the call of '" + gv->name + "' in '" + e.name +
                                   "' passes its scalars in a value that is not R.shape([...])");
          }
        }
        auto args = std::make_shared<ir::TupleExpr>(tensors);
        std::vector<ir::StructInfo> arg_sinfo;
        for (const auto& a : tensors) arg_sinfo.push_back(a->struct_info);
        args->struct_info = std::make_shared<ir::TupleSInfo>(arg_sinfo);
        auto callee = std::make_shared<ir::GlobalVarExpr>(gv->name);
        callee->struct_info = std::make_shared<ir::ObjectSInfo>();
        std::vector<ir::Expr> call_args{callee, args};
        if (tir_vars) call_args.push_back(tir_vars);
        ir::Expr tir_call = ir::MakeOpCall("relax.call_tir", std::move(call_args), {}, {out_sinfo});
        tir_call->struct_info = out_sinfo;
        std::const_pointer_cast<ir::ExprNode>(tir_call)->span = call->span;
        binding.value = tir_call;
        changed = true;
      }
    }
    return Status();
    };
    KILN_RETURN_IF_ERROR(rewrite(blocks));
    if (!changed) continue;
    auto nseq = std::make_shared<ir::SeqExprNode>(std::move(blocks), seq->body);
    nseq->span = seq->span;
    nseq->struct_info = seq->struct_info;
    auto nf = std::make_shared<ir::FunctionExpr>(*e.relax);
    nf->body = nseq;
    e.relax = nf;
  }
  return out;
}

}  // namespace fusion
}  // namespace kiln
