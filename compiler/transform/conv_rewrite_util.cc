#include "compiler/transform/conv_rewrite_util.h"

#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace transform {

std::string StringAttr(const ir::AttrMap& attrs, const char* name, const std::string& dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return dflt;
  return it->second.kind == ir::AttrValue::Kind::kString ? it->second.s : "?";
}

int64_t IntAttr(const ir::AttrMap& attrs, const char* name, int64_t dflt) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->second.kind == ir::AttrValue::Kind::kInt ? it->second.i : dflt;
}

bool IntsAttr(const ir::AttrMap& attrs, const char* name, size_t n, int64_t dflt, std::vector<int64_t>* out) {
  auto it = attrs.find(name);
  out->assign(n, dflt);
  if (it == attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return true;
  std::vector<int64_t> v;
  if (it->second.kind == ir::AttrValue::Kind::kInt) {
    v = {it->second.i};
  } else if (it->second.kind == ir::AttrValue::Kind::kIntList) {
    v = it->second.ints;
  } else {
    return false;
  }
  if (v.size() == 1) {
    out->assign(n, v[0]);
  } else if (v.size() == n) {
    *out = v;
  } else if (n == 4 && v.size() == 2) {
    *out = {v[0], v[1], v[0], v[1]};
  } else {
    return false;
  }
  return true;
}

bool StaticF32(const ir::Expr& e, std::vector<int64_t>* shape) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
  if (!t || !t->has_shape || !t->has_dtype || t->dtype != DType::Float32()) return false;
  shape->clear();
  for (const auto& d : t->shape) {
    auto c = relax::ConstDim(d);
    if (!c) return false;
    shape->push_back(*c);
  }
  return true;
}

bool DefaultConvLayoutsF32(const ir::AttrMap& attrs) {
  if (StringAttr(attrs, "data_layout", "NCHW") != "NCHW" || StringAttr(attrs, "kernel_layout", "OIHW") != "OIHW" ||
      StringAttr(attrs, "out_layout", "NCHW") != "NCHW") {
    return false;
  }
  std::string out_dtype = StringAttr(attrs, "out_dtype", "");
  return out_dtype.empty() || out_dtype == "void" || out_dtype == "float32";
}

ir::Function ConvBindingRewriter::VisitFunction(const ir::Function& f) {
  names_.clear();
  constants_.clear();
  for (const auto& p : f->params) names_.insert(p->name);
  return ExprMutator::VisitFunction(f);
}

void ConvBindingRewriter::VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) {
  names_.insert(b.var->name);
  std::vector<ir::Binding> mine;
  ExprMutator::VisitBinding(b, in_dataflow, &mine);
  for (auto& nb : mine) {
    if (const auto* k = ir::ExprAs<ir::ConstantExpr>(nb.value); k && !nb.match_cast) constants_[nb.var.get()] = k;
    const auto* call = ir::ExprAs<ir::CallExpr>(nb.value);
    const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
    if (op && op->name == op_ && call->args.size() == num_args_ && !nb.match_cast && status.ok()) {
      if (RewriteConv(*call, nb, in_dataflow, out)) continue;
    }
    out->push_back(std::move(nb));
  }
}

const ir::ConstantExpr* ConvBindingRewriter::ConstantOf(const ir::Expr& e) const {
  if (const auto* k = ir::ExprAs<ir::ConstantExpr>(e)) return k;
  const auto* v = ir::ExprAs<ir::VarExpr>(e);
  auto it = v ? constants_.find(v) : constants_.end();
  return it == constants_.end() ? nullptr : it->second;
}

std::string ConvBindingRewriter::FreshName(const std::string& base) {
  for (int i = 0;; ++i) {
    std::string n = i == 0 ? base : base + std::to_string(i);
    if (names_.insert(n).second) return n;
  }
}


Result<ir::Expr> PackingKernels::Call(const ir::Expr& w, const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& packed_shape) {
  std::string& kernel = kernels_[shape];
  if (kernel.empty()) {
    std::string name = mod_->UniqueName(prefix_);
    KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, build_(name, shape));
    mod_->Add(name, f);
    kernel = name;
  }
  ir::Expr callee = std::make_shared<ir::GlobalVarExpr>(kernel);
  callee->struct_info = std::make_shared<ir::ObjectSInfo>();
  auto args = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{w});
  args->struct_info = std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{w->struct_info});
  std::vector<ir::PrimExpr> dims;
  for (int64_t d : packed_shape) dims.push_back(ir::PrimExpr(d));
  return ir::MakeOpCall("relax.call_tir", {callee, args}, {}, {ir::MakeTensorSInfo(dims, DType::Float32())});
}

}  // namespace transform
}  // namespace kiln
