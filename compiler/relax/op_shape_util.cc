#include "compiler/relax/op_shape_util.h"

#include <set>

#include "compiler/arith/simplify.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace relax {
namespace {

// The free variables of an expression (shape variables, loop variables).
class VarCollector : public tir::StmtExprVisitor {
 public:
  void VisitExpr(const ir::PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) {
      if (!bounds.count(v)) bounds[v] = arith::IntBounds::AtLeast(0);
      return;
    }
    tir::StmtExprVisitor::VisitExpr(e);
  }
  arith::VarBounds bounds;
};

// One integer from a Relax argument: a constant R.prim_value / literal.
std::optional<int64_t> ConstArgInt(const ir::Expr& e) {
  if (const auto* p = ir::ExprAs<ir::PrimValueExpr>(e)) return arith::AsConstInt(p->value);
  return std::nullopt;
}

Result<std::optional<std::vector<int64_t>>> IntListFromArg(const ir::CallExpr& call, size_t pos,
                                                           const std::string& name) {
  const ir::Expr& a = call.args[pos];
  std::vector<int64_t> out;
  auto fail = [&]() {
    return InvalidArgument(OpPrefix(call) + name + " (argument " + std::to_string(pos) +
                           ") must be a tuple of constant integers");
  };
  if (auto c = ConstArgInt(a)) return std::optional<std::vector<int64_t>>(std::vector<int64_t>{*c});
  if (const auto* t = ir::ExprAs<ir::TupleExpr>(a)) {
    for (const auto& f : t->fields) {
      auto c = ConstArgInt(f);
      if (!c) return fail();
      out.push_back(*c);
    }
    return std::optional<std::vector<int64_t>>(out);
  }
  if (const auto* s = ir::ExprAs<ir::ShapeExpr>(a)) {
    for (const auto& v : s->values) {
      auto c = arith::AsConstInt(v);
      if (!c) return fail();
      out.push_back(*c);
    }
    return std::optional<std::vector<int64_t>>(out);
  }
  return fail();
}

}  // namespace

std::string OpPrefix(const ir::CallExpr& call) { return Where(call.span) + OpDisplayName(call) + ": "; }

Status CheckArgCount(const ir::CallExpr& call, size_t min_args, size_t max_args) {
  size_t n = call.args.size();
  if (n >= min_args && n <= max_args) return Status::Ok();
  std::string want = min_args == max_args ? std::to_string(min_args)
                                          : std::to_string(min_args) + " to " + std::to_string(max_args);
  return InvalidArgument(OpPrefix(call) + "takes " + want + " arguments, got " + std::to_string(n));
}

Result<std::optional<std::vector<int64_t>>> GetIntList(const ir::CallExpr& call, const std::string& name, int pos) {
  auto it = call.attrs.find(name);
  if (it != call.attrs.end()) {
    const ir::AttrValue& v = it->second;
    switch (v.kind) {
      case ir::AttrValue::Kind::kNone: return std::optional<std::vector<int64_t>>();
      case ir::AttrValue::Kind::kInt: return std::optional<std::vector<int64_t>>(std::vector<int64_t>{v.i});
      case ir::AttrValue::Kind::kIntList: return std::optional<std::vector<int64_t>>(v.ints);
      default:
        return InvalidArgument(OpPrefix(call) + name + " must be an integer or a list of integers");
    }
  }
  if (pos >= 0 && static_cast<size_t>(pos) < call.args.size()) return IntListFromArg(call, pos, name);
  return std::optional<std::vector<int64_t>>();
}

Result<std::optional<std::vector<ir::PrimExpr>>> GetPrimList(const ir::CallExpr& call, const std::string& name,
                                                            int pos) {
  using List = std::optional<std::vector<ir::PrimExpr>>;
  if (call.attrs.find(name) == call.attrs.end() && pos >= 0 && static_cast<size_t>(pos) < call.args.size()) {
    const ir::Expr& a = call.args[pos];
    if (const auto* s = ir::ExprAs<ir::ShapeExpr>(a)) return List(s->values);
    if (const auto* t = ir::ExprAs<ir::TupleExpr>(a)) {
      std::vector<ir::PrimExpr> out;
      for (const auto& f : t->fields) {
        const auto* p = ir::ExprAs<ir::PrimValueExpr>(f);
        if (!p) {
          return InvalidArgument(OpPrefix(call) + name + " (argument " + std::to_string(pos) +
                                 ") must be a tuple of integers (R.prim_value) or R.shape([...])");
        }
        out.push_back(p->value);
      }
      return List(out);
    }
    if (const auto* p = ir::ExprAs<ir::PrimValueExpr>(a)) return List(std::vector<ir::PrimExpr>{p->value});
  }
  KILN_ASSIGN_OR_RETURN(auto ints, GetIntList(call, name, pos));
  if (!ints) return List();
  std::vector<ir::PrimExpr> out;
  for (int64_t v : *ints) out.push_back(ir::PrimExpr(v));
  return List(out);
}

Result<std::optional<int64_t>> GetInt(const ir::CallExpr& call, const std::string& name, int pos) {
  auto it = call.attrs.find(name);
  if (it != call.attrs.end()) {
    const ir::AttrValue& v = it->second;
    if (v.kind == ir::AttrValue::Kind::kNone) return std::optional<int64_t>();
    if (v.kind == ir::AttrValue::Kind::kInt) return std::optional<int64_t>(v.i);
    return InvalidArgument(OpPrefix(call) + name + " must be an integer");
  }
  if (pos >= 0 && static_cast<size_t>(pos) < call.args.size()) {
    if (auto c = ConstArgInt(call.args[pos])) return std::optional<int64_t>(*c);
    return InvalidArgument(OpPrefix(call) + name + " (argument " + std::to_string(pos) + ") must be a constant integer");
  }
  return std::optional<int64_t>();
}

Result<bool> GetBool(const ir::CallExpr& call, const std::string& name, bool default_value) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return default_value;
  if (it->second.kind == ir::AttrValue::Kind::kBool || it->second.kind == ir::AttrValue::Kind::kInt)
    return it->second.i != 0;
  return InvalidArgument(OpPrefix(call) + name + " must be True or False");
}

Result<std::string> GetString(const ir::CallExpr& call, const std::string& name, const std::string& default_value) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return default_value;
  if (it->second.kind == ir::AttrValue::Kind::kString) return it->second.s;
  return InvalidArgument(OpPrefix(call) + name + " must be a string");
}

Result<int> NormalizeAxis(const ir::CallExpr& call, int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim) {
    return InvalidArgument(OpPrefix(call) + "axis " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(ndim));
  }
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

Result<std::vector<int>> NormalizeAxes(const ir::CallExpr& call, const std::vector<int64_t>& axes, int ndim) {
  std::vector<int> out;
  std::set<int> seen;
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int n, NormalizeAxis(call, a, ndim));
    if (!seen.insert(n).second) {
      return InvalidArgument(OpPrefix(call) + "axis " + std::to_string(a) + " is given more than once");
    }
    out.push_back(n);
  }
  return out;
}

Result<const ir::TensorSInfo*> TensorArg(const ir::CallExpr& call, size_t i) {
  const ir::TensorSInfo* t = i < call.args.size() ? TensorInfoOf(call.args[i]) : nullptr;
  if (!t) {
    std::string got = i < call.args.size() ? SInfoString(call.args[i]->struct_info) : "nothing";
    return InvalidArgument(OpPrefix(call) + "argument " + std::to_string(i) + " must be a tensor, got " + got);
  }
  return t;
}

Result<const ir::TensorSInfo*> KnownTensorResult(const ir::CallExpr& call) {
  const ir::TensorSInfo* t = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
  if (!t || !t->has_shape || !t->has_dtype) {
    return Unimplemented(OpPrefix(call) + "legalization needs a result of known shape and dtype, got " +
                         SInfoString(call.struct_info));
  }
  return t;
}

Result<const ir::TensorSInfo*> KnownTensorArg(const ir::CallExpr& call, size_t i) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, TensorArg(call, i));
  if (!t->has_shape || !t->has_dtype) {
    return Unimplemented(OpPrefix(call) + "legalization needs argument " + std::to_string(i) +
                         " of known shape and dtype, got " + SInfoString(call.args[i]->struct_info));
  }
  return t;
}

std::vector<ir::PrimExpr> BindableShape(const std::vector<ir::PrimExpr>& shape, const std::string& prefix) {
  std::vector<ir::PrimExpr> out = shape;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].as<ir::IntImmNode>() || out[i].as<ir::VarNode>()) continue;
    out[i] = ir::PrimExpr(ir::MakeVar(prefix + "_dim" + std::to_string(i), DType::Int64()));
  }
  return out;
}

ir::PrimExpr SimplifyDim(const ir::PrimExpr& e, const arith::VarBounds& bounds) {
  VarCollector c;
  c.bounds = bounds;
  c.VisitExpr(e);
  return arith::Simplify(e, c.bounds);
}

arith::VarBounds IndexBounds(const std::vector<ir::PrimExpr>& index, const std::vector<ir::PrimExpr>& extents) {
  arith::VarBounds b;
  for (size_t i = 0; i < index.size() && i < extents.size(); ++i) {
    const auto* v = index[i].as<ir::VarNode>();
    auto c = arith::AsConstInt(extents[i]);
    if (v && c && *c >= 1) b[v] = arith::IntBounds::Range(0, *c - 1);
  }
  return b;
}

ir::PrimExpr ShapeProduct(const std::vector<ir::PrimExpr>& dims) {
  if (dims.empty()) return ir::PrimExpr(int64_t{1});
  ir::PrimExpr p = dims[0];
  for (size_t i = 1; i < dims.size(); ++i) p = p * dims[i];
  return SimplifyDim(p);
}

ir::PrimExpr FlatIndex(const std::vector<ir::PrimExpr>& shape, const std::vector<ir::PrimExpr>& index,
                       const arith::VarBounds& bounds) {
  ir::PrimExpr flat(int64_t{0});
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + index[i];
  return SimplifyDim(flat, bounds);
}

std::vector<ir::PrimExpr> UnflattenIndex(const std::vector<ir::PrimExpr>& shape, const ir::PrimExpr& flat,
                                         const arith::VarBounds& bounds) {
  std::vector<ir::PrimExpr> idx(shape.size());
  ir::PrimExpr rest = flat;
  for (size_t i = shape.size(); i-- > 0;) {
    if (i == 0) {
      idx[i] = SimplifyDim(rest, bounds);
    } else {
      idx[i] = SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorMod, rest, shape[i]), bounds);
      rest = ir::MakeBinary(ir::TirKind::kFloorDiv, rest, shape[i]);
    }
  }
  return idx;
}

ir::PrimExpr ToInt64(const ir::PrimExpr& e) {
  if (e.dtype() == DType::Int64()) return e;
  return ir::Cast(DType::Int64(), e);
}

ir::PrimExpr IfThenElse(const ir::PrimExpr& cond, const ir::PrimExpr& t, const ir::PrimExpr& f) {
  return ir::PrimExpr(std::make_shared<ir::CallNode>(t.dtype(), "if_then_else", std::vector<ir::PrimExpr>{cond, t, f}));
}

}  // namespace relax
}  // namespace kiln
