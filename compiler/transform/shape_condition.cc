#include "compiler/transform/shape_condition.h"

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

// Elements of small tensors: more would not be a condition's arithmetic.
constexpr int64_t kMaxElements = 16;

const ir::CallExpr* OpCallOf(const ir::Expr& e, std::string* op) {
  const auto* call = ir::ExprAs<ir::CallExpr>(e);
  const auto* o = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  if (!o) return nullptr;
  *op = o->name;
  return call;
}

// The elements of an integer or bool constant, or false.
bool ConstantElements(const ir::ConstantExpr& c, std::vector<ir::PrimExpr>* out) {
  const Tensor& t = c.data;
  if (!t.defined() || t.ndim() > 1 || t.NumElements() > kMaxElements) return false;
  DType d = t.dtype();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (d == DType::Int64()) {
      out->push_back(ir::IntImm(DType::Int64(), t.data<int64_t>()[i]));
    } else if (d == DType::Int32()) {
      out->push_back(ir::IntImm(DType::Int64(), t.data<int32_t>()[i]));
    } else if (d == DType::Bool()) {
      out->push_back(ir::IntImm(DType::Bool(), t.data<uint8_t>()[i] != 0));
    } else {
      return false;
    }
  }
  return true;
}

class ShapeConditionFolder : public ExprMutator {
 public:
  ir::Function VisitFunction(const ir::Function& f) override {
    known_.clear();
    return ExprMutator::VisitFunction(f);
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    if (!b.match_cast) {
      std::vector<ir::PrimExpr> values;
      if (Evaluate(b.value, &values)) known_[b.var.get()] = std::move(values);
    }
    ExprMutator::VisitBinding(b, in_dataflow, out);
  }

  ir::Expr VisitExpr(const ir::Expr& e) override {
    const auto* i = ir::ExprAs<ir::IfExpr>(e);
    if (!i) return ExprMutator::VisitExpr(e);
    ir::Expr t = VisitExpr(i->then_branch), f = VisitExpr(i->else_branch);
    std::vector<ir::PrimExpr> values;
    if (!ir::ExprAs<ir::VarExpr>(i->cond) || !Evaluate(i->cond, &values) || values.size() != 1) {
      if (t == i->then_branch && f == i->else_branch) return e;
      return WithInfoOf(std::make_shared<ir::IfExpr>(i->cond, t, f), e);
    }
    ir::PrimExpr c = values[0];
    if (c.dtype() != DType::Bool()) c = ir::MakeBinary(ir::TirKind::kNE, c, ir::IntImm(c.dtype(), 0));
    auto value = std::make_shared<ir::PrimValueExpr>(arith::Simplify(c));
    value->span = i->cond->span;
    ir::Expr cond = value;
    return WithInfoOf(std::make_shared<ir::IfExpr>(cond, t, f), e);
  }

 private:
  // The elements (row-major) of the value `e` computes, when they follow
  // from shape values and constants alone.
  bool Evaluate(const ir::Expr& e, std::vector<ir::PrimExpr>* out) const {
    if (!EvaluateElements(e, out)) return false;
    // The element list must be the value's whole content: its type gives a
    // static shape of that many elements (broadcasting to a larger shape,
    // say, is not followed).
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
    if (!t || !t->has_shape) return false;
    int64_t n = 1;
    for (const auto& d : t->shape) {
      auto c = relax::ConstDim(d);
      if (!c) return false;
      n *= *c;
    }
    return n == static_cast<int64_t>(out->size());
  }

  bool EvaluateElements(const ir::Expr& e, std::vector<ir::PrimExpr>* out) const {
    if (const auto* v = ir::ExprAs<ir::VarExpr>(e)) {
      auto it = known_.find(v);
      if (it == known_.end()) return false;
      *out = it->second;
      return true;
    }
    if (const auto* c = ir::ExprAs<ir::ConstantExpr>(e)) return ConstantElements(*c, out);
    std::string op;
    const ir::CallExpr* call = OpCallOf(e, &op);
    if (!call || call->args.empty()) return false;
    if (op == "relax.shape_to_tensor") {
      const auto* s = ir::SInfoAs<ir::ShapeSInfo>(call->args[0]->struct_info);
      if (!s || !s->has_values || static_cast<int64_t>(s->values.size()) > kMaxElements) return false;
      *out = s->values;
      return true;
    }
    if (op == "relax.reshape" || op == "relax.squeeze" || op == "relax.expand_dims") return Evaluate(call->args[0], out);
    if (op == "relax.logical_not") {
      if (!Evaluate(call->args[0], out)) return false;
      for (auto& x : *out) x = ir::MakeBinary(ir::TirKind::kEQ, x, ir::IntImm(x.dtype(), 0));
      return true;
    }
    static const std::map<std::string, ir::TirKind> kBinary = {
        {"relax.equal", ir::TirKind::kEQ},         {"relax.not_equal", ir::TirKind::kNE},
        {"relax.less", ir::TirKind::kLT},          {"relax.less_equal", ir::TirKind::kLE},
        {"relax.greater", ir::TirKind::kGT},       {"relax.greater_equal", ir::TirKind::kGE},
        {"relax.logical_and", ir::TirKind::kAnd},  {"relax.logical_or", ir::TirKind::kOr}};
    auto k = kBinary.find(op);
    if (k == kBinary.end() || call->args.size() != 2) return false;
    std::vector<ir::PrimExpr> a, b;
    if (!Evaluate(call->args[0], &a) || !Evaluate(call->args[1], &b)) return false;
    // Broadcasting of flat element lists: equal counts, or one element.
    if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return false;
    size_t n = std::max(a.size(), b.size());
    out->clear();
    for (size_t j = 0; j < n; ++j)
      out->push_back(ir::MakeBinary(k->second, a[a.size() == 1 ? 0 : j], b[b.size() == 1 ? 0 : j]));
    return true;
  }

  std::unordered_map<const ir::VarExpr*, std::vector<ir::PrimExpr>> known_;
};

}  // namespace

Result<ir::IRModule> FoldShapeConditions(const ir::IRModule& mod) {
  return MutateFunctions<ShapeConditionFolder>(mod, /*renormalize=*/true);
}

}  // namespace transform
}  // namespace kiln
