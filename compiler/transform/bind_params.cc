#include "compiler/transform/bind_params.h"

#include <map>
#include <memory>

#include "compiler/arith/simplify.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/tir/substitute.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

// Replaces bound parameters by constants and bound symbolic variables by
// their sizes. Every variable is copied so that normalizing the result never
// writes struct info into the input module's nodes.
class Binder : public ExprMutator {
 public:
  Binder(std::map<const ir::VarExpr*, ir::Expr> consts, tir::VarMap sym) : sym_(std::move(sym)) {
    for (auto& kv : consts) var_remap_[kv.first] = kv.second;
    copy_vars_ = true;
  }
  ir::StructInfo VisitStructInfo(const ir::StructInfo& s) override { return MapShapes(s); }
  // The function without its bound parameters (those already map to constants).
  ir::Function Run(const ir::Function& f) {
    auto out = std::make_shared<ir::FunctionExpr>(*f);
    out->params.clear();
    for (const auto& p : f->params)
      if (!var_remap_.count(p.get())) out->params.push_back(VisitVarDef(p, VisitStructInfo(p->annotation)));
    out->body = VisitExpr(f->body);
    out->ret_sinfo = VisitStructInfo(f->ret_sinfo);
    out->struct_info = nullptr;
    return out;
  }
  ir::PrimExpr VisitPrimExpr(const ir::PrimExpr& e) override {
    ir::PrimExpr r = tir::Substitute(e, sym_);
    return r.same_as(e) ? e : arith::Simplify(r);
  }

 private:
  tir::VarMap sym_;
};

std::string Expected(const ir::TensorSInfo& t) {
  return (t.has_dtype ? DTypeToString(t.dtype) : std::string("any dtype")) + " " +
         (t.has_shape ? relax::ShapeString(t.shape) : "ndim=" + std::to_string(t.ndim));
}

}  // namespace

Result<ir::IRModule> BindParams(const ir::IRModule& mod, const params::ParamList& params,
                                const std::string& func_name) {
  ir::Function f = mod.FindRelax(func_name);
  if (!f) return InvalidArgument("bind params: no Relax function named '" + func_name + "' in the module");
  std::map<std::string, ir::RVar> by_name;
  std::string names;
  for (const auto& p : f->params) {
    by_name[p->name] = p;
    names += (names.empty() ? "" : ", ") + p->name;
  }
  std::map<const ir::VarExpr*, ir::Expr> consts;
  tir::VarMap sym;
  std::vector<std::pair<std::string, ir::PrimExpr>> deferred;  // composite dims checked after binding
  for (const auto& nt : params) {
    auto it = by_name.find(nt.name);
    if (it == by_name.end()) {
      return InvalidArgument("bind params: '" + nt.name + "' is not a parameter of '" + func_name +
                             "' (its parameters: " + names + ")");
    }
    const ir::RVar& p = it->second;
    const Tensor& t = nt.tensor;
    std::string where = "bind params: parameter '" + nt.name + "' of '" + func_name + "'";
    if (const auto* ann = ir::SInfoAs<ir::TensorSInfo>(p->annotation)) {
      std::string mismatch = where + ": expected " + Expected(*ann) + ", got " + t.TypeString();
      if (ann->has_dtype && ann->dtype != t.dtype()) return InvalidArgument(mismatch);
      if (ann->ndim >= 0 && ann->ndim != t.ndim()) return InvalidArgument(mismatch);
      for (size_t i = 0; ann->has_shape && i < ann->shape.size(); ++i) {
        const ir::PrimExpr& d = ann->shape[i];
        int64_t actual = t.shape()[i];
        if (auto c = arith::AsConstInt(d)) {
          if (*c != actual) return InvalidArgument(mismatch);
        } else if (const auto* v = d.as<ir::VarNode>()) {
          auto bound = sym.find(v);
          if (bound != sym.end() && arith::AsConstInt(bound->second) != actual) {
            return InvalidArgument(where + ": dimension " + std::to_string(i) + " binds '" + v->name + "' to " +
                                   std::to_string(actual) + " but an earlier parameter bound it to " +
                                   relax::DimString(bound->second));
          }
          sym[v] = ir::PrimExpr(actual);
        } else {
          deferred.push_back({mismatch + " (dimension " + std::to_string(i) + ")", d - ir::PrimExpr(actual)});
        }
      }
    } else if (p->annotation && p->annotation->kind != ir::SInfoKind::kObject) {
      return InvalidArgument(where + ": the parameter is not a tensor, got a tensor " + t.TypeString());
    }
    auto c = std::make_shared<ir::ConstantExpr>(t, nt.name);
    consts[p.get()] = c;
  }
  for (const auto& d : deferred) {
    auto v = arith::AsConstInt(arith::Simplify(tir::Substitute(d.second, sym)));
    if (v && *v != 0) return InvalidArgument(d.first);
  }
  Binder binder(std::move(consts), std::move(sym));
  ir::Function out_f = binder.Run(f);
  ir::IRModule out = mod;
  out.Add(func_name, ir::Function(out_f));
  return relax::InferStructInfo(out);
}

}  // namespace transform
}  // namespace kiln
