#include "compiler/transform/decompose_ops.h"

#include <map>
#include <memory>
#include <set>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

double FloatAttr(const ir::AttrMap& attrs, const char* name, double dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (it->second.kind == ir::AttrValue::Kind::kFloat) return it->second.f;
  if (it->second.kind == ir::AttrValue::Kind::kInt) return static_cast<double>(it->second.i);
  return dflt;
}

int64_t IntAttr(const ir::AttrMap& attrs, const char* name, int64_t dflt) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->second.kind == ir::AttrValue::Kind::kInt ? it->second.i : dflt;
}

bool BoolAttr(const ir::AttrMap& attrs, const char* name, bool dflt) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->second.kind == ir::AttrValue::Kind::kBool ? it->second.i != 0 : dflt;
}

class Decomposer : public ExprMutator {
 public:
  ir::Function VisitFunction(const ir::Function& f) override {
    names_.clear();
    tuples_.clear();
    for (const auto& p : f->params) names_.insert(p->name);
    return ExprMutator::VisitFunction(f);
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    names_.insert(b.var->name);
    std::vector<ir::Binding> mine;
    ExprMutator::VisitBinding(b, in_dataflow, &mine);
    for (auto& nb : mine) {
      // y[i] of a tuple this pass built: the field itself.
      if (const auto* g = ir::ExprAs<ir::TupleGetItemExpr>(nb.value); g && !nb.match_cast) {
        if (const auto* v = ir::ExprAs<ir::VarExpr>(g->tuple)) {
          auto it = tuples_.find(v);
          if (it != tuples_.end() && g->index >= 0 && g->index < static_cast<int>(it->second.size())) {
            nb.value = it->second[g->index];
          }
        }
      }
      const auto* call = ir::ExprAs<ir::CallExpr>(nb.value);
      const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
      if (op && op->name == "relax.nn.batch_norm" && call->args.size() == 5 && !nb.match_cast) {
        if (DecomposeBatchNorm(*call, nb, in_dataflow, out)) continue;
      }
      out->push_back(std::move(nb));
    }
  }

 private:
  bool DecomposeBatchNorm(const ir::CallExpr& call, const ir::Binding& b, bool dataflow, std::vector<ir::Binding>* out) {
    const auto* x = ir::SInfoAs<ir::TensorSInfo>(call.args[0]->struct_info);
    if (!x || x->ndim < 1 || !x->has_dtype) return false;
    int64_t axis = IntAttr(call.attrs, "axis", 1);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis >= x->ndim) return false;  // normalization reported it
    double eps = FloatAttr(call.attrs, "epsilon", 1e-5);
    bool center = BoolAttr(call.attrs, "center", true);
    bool scale_on = BoolAttr(call.attrs, "scale", true);
    const ir::Expr& gamma = call.args[1];
    const ir::Expr& beta = call.args[2];
    const ir::Expr& mean = call.args[3];
    const ir::Expr& var = call.args[4];

    auto emit = [&](ir::Expr value) {
      ir::RVar v = ir::MakeRVar(Fresh(), nullptr, dataflow);
      out->push_back(ir::Binding{v, std::move(value), nullptr, b.span});
      return ir::Expr(v);
    };
    auto op = [&](const char* name, std::vector<ir::Expr> args, ir::AttrMap attrs = {}) {
      return emit(ir::MakeOpCall(name, std::move(args), std::move(attrs)));
    };
    Result<Tensor> eps_t = Tensor::Empty(Span<const int64_t>(), x->dtype);
    if (!eps_t.ok() || x->dtype != DType::Float32()) return false;  // float32 only, for now
    eps_t->data<float>()[0] = static_cast<float>(eps);
    ir::Expr eps_c = ir::MakeConstant(std::move(*eps_t));

    ir::Expr sd = op("relax.sqrt", {op("relax.add", {var, eps_c})});
    ir::Expr scale = scale_on ? op("relax.divide", {gamma, sd}) : op("relax.divide", {OneLike(eps_c), sd});
    ir::Expr shifted_mean = op("relax.multiply", {mean, scale});
    ir::Expr shift = center ? op("relax.subtract", {beta, shifted_mean}) : op("relax.negative", {shifted_mean});
    // (C,) -> (C, 1, ..., 1) so it broadcasts along `axis`.
    int64_t trailing = x->ndim - 1 - axis;
    if (trailing > 0) {
      ir::AttrValue axes;
      axes.kind = ir::AttrValue::Kind::kIntList;
      for (int64_t i = 1; i <= trailing; ++i) axes.ints.push_back(i);
      scale = op("relax.expand_dims", {scale}, {{"axis", axes}});
      shift = op("relax.expand_dims", {shift}, {{"axis", axes}});
    }
    ir::Expr y = op("relax.add", {op("relax.multiply", {call.args[0], scale}), shift});
    std::vector<ir::Expr> fields{y, mean, var};
    out->push_back(ir::Binding{b.var, std::make_shared<ir::TupleExpr>(fields), nullptr, b.span});
    tuples_[b.var.get()] = fields;
    return true;
  }

  static ir::Expr OneLike(const ir::Expr& scalar) {
    const auto& c = static_cast<const ir::ConstantExpr&>(*scalar);
    Tensor one = Tensor::Empty(Span<const int64_t>(), c.data.dtype()).value();
    one.data<float>()[0] = 1.0f;
    return ir::MakeConstant(std::move(one));
  }

  std::string Fresh() {
    for (int i = 0;; ++i) {
      std::string n = i == 0 ? "bn" : "bn" + std::to_string(i);
      if (names_.insert(n).second) return n;
    }
  }

  std::set<std::string> names_;
  std::map<const ir::VarExpr*, std::vector<ir::Expr>> tuples_;
};

}  // namespace

Result<ir::IRModule> DecomposeOpsForInference(const ir::IRModule& mod) {
  // The new bindings need struct info.
  return MutateFunctions<Decomposer>(mod, /*renormalize=*/true);
}

}  // namespace transform
}  // namespace kiln
