#include "compiler/transform/fold_softmax_nan_guard.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

// The call of operator `op` that `e` is, or null.
const ir::CallExpr* OpCall(const ir::Expr& e, const char* op) {
  const auto* call = ir::ExprAs<ir::CallExpr>(e);
  const auto* o = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  return o && o->name == op ? call : nullptr;
}

bool IsF32(const ir::Expr& e) {
  const auto* t = e ? ir::SInfoAs<ir::TensorSInfo>(e->struct_info) : nullptr;
  return t && t->has_dtype && t->dtype == DType::Float32();
}

class NanGuardFolder : public ExprMutator {
 public:
  explicit NanGuardFolder(ir::IRModule*) {}
  Status status;

  ir::Function VisitFunction(const ir::Function& f) override {
    uses_.clear();
    bound_.clear();
    CountUses(f->body, &uses_);  // a function is no use; its body holds them
    return ExprMutator::VisitFunction(f);
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    if (!b.match_cast) bound_[b.var.get()] = b.value;
    ir::Expr folded = b.match_cast ? nullptr : Fold(b.value);
    if (!folded) return ExprMutator::VisitBinding(b, in_dataflow, out);
    out->push_back(ir::Binding{b.var, folded, nullptr, b.span});
  }

 private:
  // The variable's value where it is bound in this function to a call of
  // `op` used exactly `uses` times, else null.
  const ir::CallExpr* BoundCall(const ir::Expr& e, const char* op, int uses) const {
    const auto* v = ir::ExprAs<ir::VarExpr>(e);
    if (!v) return nullptr;
    auto b = bound_.find(v);
    auto u = uses_.find(v);
    if (b == bound_.end() || u == uses_.end() || u->second != uses) return nullptr;
    return OpCall(b->second, op);
  }

  // The constant `e` is or its variable is bound to, or null.
  const ir::ConstantExpr* ConstantOf(const ir::Expr& e) const {
    if (const auto* k = ir::ExprAs<ir::ConstantExpr>(e)) return k;
    const auto* v = ir::ExprAs<ir::VarExpr>(e);
    auto b = v ? bound_.find(v) : bound_.end();
    return b == bound_.end() ? nullptr : ir::ExprAs<ir::ConstantExpr>(b->second);
  }

  // The softmax with nan_to that `value` (a where) amounts to, or null.
  ir::Expr Fold(const ir::Expr& value) const {
    const ir::CallExpr* where = OpCall(value, "relax.where");
    if (!where || where->args.size() != 3) return nullptr;
    const ir::Expr& s = where->args[2];
    const ir::CallExpr* isnan = BoundCall(where->args[0], "relax.isnan", 1);
    const auto* sv = ir::ExprAs<ir::VarExpr>(s);
    if (!isnan || isnan->args.size() != 1 || !sv || ir::ExprAs<ir::VarExpr>(isnan->args[0]) != sv) return nullptr;
    const ir::CallExpr* softmax = BoundCall(s, "relax.nn.softmax", 2);
    if (!softmax || softmax->args.size() != 1 || !IsF32(s)) return nullptr;
    const auto* k = ConstantOf(where->args[1]);
    if (!k || k->data.dtype() != DType::Float32() || k->data.NumElements() != 1) return nullptr;
    const auto* st = ir::SInfoAs<ir::TensorSInfo>(s->struct_info);
    if (st->ndim < 0 || k->data.ndim() > st->ndim) return nullptr;  // a constant of higher rank broadcasts s
    ir::AttrMap attrs = softmax->attrs;
    ir::AttrValue c;
    c.kind = ir::AttrValue::Kind::kFloat;
    c.f = k->data.data<float>()[0];
    attrs["nan_to"] = c;
    return ir::MakeOpCall("relax.nn.softmax", {softmax->args[0]}, attrs);
  }

  UseCounts uses_;
  std::unordered_map<const ir::VarExpr*, ir::Expr> bound_;
};

}  // namespace

Result<ir::IRModule> FoldSoftmaxNanGuard(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  bool changed = false;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    NanGuardFolder folder(&out);
    ir::Function g = folder.VisitFunction(e.relax);
    KILN_RETURN_IF_ERROR(folder.status);
    changed |= g != e.relax;
    e.relax = g;
  }
  if (!changed) return out;
  return relax::InferStructInfo(out);  // the new softmax calls need struct info
}

}  // namespace transform
}  // namespace kiln
