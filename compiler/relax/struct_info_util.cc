#include "compiler/relax/struct_info_util.h"

#include "compiler/arith/simplify.h"

namespace kiln {
namespace relax {

const ir::TensorSInfo* TensorInfoOf(const ir::Expr& e) {
  return e ? ir::SInfoAs<ir::TensorSInfo>(e->struct_info) : nullptr;
}

std::optional<int64_t> ConstDim(const ir::PrimExpr& e) { return arith::AsConstInt(e); }

DimRelation CompareDims(const ir::PrimExpr& a, const ir::PrimExpr& b) {
  if (a.same_as(b)) return DimRelation::kEqual;
  ir::PrimExpr diff = arith::Simplify(a - b);
  if (auto c = arith::AsConstInt(diff)) return *c == 0 ? DimRelation::kEqual : DimRelation::kNotEqual;
  return DimRelation::kUnknown;
}

std::string DimString(const ir::PrimExpr& e) { return arith::ToDebugString(e); }

std::string ShapeString(const std::vector<ir::PrimExpr>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += DimString(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string SInfoString(const ir::StructInfo& s) {
  if (!s) return "<unknown>";
  switch (s->kind) {
    case ir::SInfoKind::kObject: return "R.Object";
    case ir::SInfoKind::kPrim: return "R.Prim(\"" + DTypeToString(static_cast<const ir::PrimSInfo&>(*s).dtype) + "\")";
    case ir::SInfoKind::kShape: {
      const auto& sh = static_cast<const ir::ShapeSInfo&>(*s);
      if (sh.has_values) return "R.Shape(" + ShapeString(sh.values) + ")";
      return "R.Shape(ndim=" + std::to_string(sh.ndim) + ")";
    }
    case ir::SInfoKind::kTensor: {
      const auto& t = static_cast<const ir::TensorSInfo&>(*s);
      std::string dt = t.has_dtype ? "\"" + DTypeToString(t.dtype) + "\"" : "";
      if (t.has_shape) return "R.Tensor(" + ShapeString(t.shape) + (dt.empty() ? "" : ", " + dt) + ")";
      return "R.Tensor(ndim=" + std::to_string(t.ndim) + (dt.empty() ? "" : ", dtype=" + dt) + ")";
    }
    case ir::SInfoKind::kTuple: {
      const auto& t = static_cast<const ir::TupleSInfo&>(*s);
      std::string r = "R.Tuple(";
      for (size_t i = 0; i < t.fields.size(); ++i) r += (i ? ", " : "") + SInfoString(t.fields[i]);
      return r + ")";
    }
    case ir::SInfoKind::kFunc: return "R.Callable";
  }
  return "?";
}

bool IsStaticShape(const std::vector<ir::PrimExpr>& shape) {
  for (const auto& d : shape)
    if (!ConstDim(d)) return false;
  return true;
}

DimRelation CheckCompatible(const ir::StructInfo& annotation, const ir::StructInfo& value, std::string* why) {
  if (!annotation || !value || annotation->kind == ir::SInfoKind::kObject) return DimRelation::kEqual;
  if (annotation->kind != value->kind) {
    *why = "expected " + SInfoString(annotation) + ", got " + SInfoString(value);
    return DimRelation::kNotEqual;
  }
  if (annotation->kind == ir::SInfoKind::kTensor) {
    const auto& a = static_cast<const ir::TensorSInfo&>(*annotation);
    const auto& v = static_cast<const ir::TensorSInfo&>(*value);
    if (a.has_dtype && v.has_dtype && a.dtype != v.dtype) {
      *why = "dtype " + DTypeToString(a.dtype) + " was declared but the value is " + DTypeToString(v.dtype);
      return DimRelation::kNotEqual;
    }
    if (a.ndim >= 0 && v.ndim >= 0 && a.ndim != v.ndim) {
      *why = "rank " + std::to_string(a.ndim) + " was declared but the value has rank " + std::to_string(v.ndim);
      return DimRelation::kNotEqual;
    }
    DimRelation result = DimRelation::kEqual;
    if (a.has_shape && v.has_shape) {
      for (size_t i = 0; i < a.shape.size(); ++i) {
        DimRelation r = CompareDims(a.shape[i], v.shape[i]);
        if (r == DimRelation::kNotEqual) {
          *why = "dimension " + std::to_string(i) + ": declared " + DimString(a.shape[i]) + ", inferred " +
                 DimString(v.shape[i]);
          return r;
        }
        if (r == DimRelation::kUnknown) result = r;
      }
    }
    return result;
  }
  if (annotation->kind == ir::SInfoKind::kTuple) {
    const auto& a = static_cast<const ir::TupleSInfo&>(*annotation);
    const auto& v = static_cast<const ir::TupleSInfo&>(*value);
    if (a.fields.size() != v.fields.size()) {
      *why = "a tuple of " + std::to_string(a.fields.size()) + " was declared, the value has " +
             std::to_string(v.fields.size());
      return DimRelation::kNotEqual;
    }
    DimRelation result = DimRelation::kEqual;
    for (size_t i = 0; i < a.fields.size(); ++i) {
      DimRelation r = CheckCompatible(a.fields[i], v.fields[i], why);
      if (r == DimRelation::kNotEqual) {
        *why = "field " + std::to_string(i) + ": " + *why;
        return r;
      }
      if (r == DimRelation::kUnknown) result = r;
    }
    return result;
  }
  return DimRelation::kEqual;
}

ir::StructInfo StructInfoLCA(const ir::StructInfo& a, const ir::StructInfo& b) {
  if (!a || !b) return std::make_shared<ir::ObjectSInfo>();
  if (a == b) return a;
  const auto* ta = ir::SInfoAs<ir::TensorSInfo>(a);
  const auto* tb = ir::SInfoAs<ir::TensorSInfo>(b);
  if (ta && tb) {
    bool dtype = ta->has_dtype && tb->has_dtype && ta->dtype == tb->dtype;
    int ndim = ta->ndim == tb->ndim ? ta->ndim : -1;
    bool shape = ta->has_shape && tb->has_shape && ta->shape.size() == tb->shape.size();
    for (size_t i = 0; shape && i < ta->shape.size(); ++i) shape = CompareDims(ta->shape[i], tb->shape[i]) == DimRelation::kEqual;
    if (shape && dtype) return a;
    return std::make_shared<ir::TensorSInfo>(shape, shape ? ta->shape : std::vector<ir::PrimExpr>{}, ndim,
                                             dtype ? ta->dtype : DType(), dtype);
  }
  const auto* ua = ir::SInfoAs<ir::TupleSInfo>(a);
  const auto* ub = ir::SInfoAs<ir::TupleSInfo>(b);
  if (ua && ub && ua->fields.size() == ub->fields.size()) {
    std::vector<ir::StructInfo> fields;
    for (size_t i = 0; i < ua->fields.size(); ++i) fields.push_back(StructInfoLCA(ua->fields[i], ub->fields[i]));
    return std::make_shared<ir::TupleSInfo>(std::move(fields));
  }
  const auto* sa = ir::SInfoAs<ir::ShapeSInfo>(a);
  const auto* sb = ir::SInfoAs<ir::ShapeSInfo>(b);
  if (sa && sb) {
    bool values = sa->has_values && sb->has_values && sa->values.size() == sb->values.size();
    for (size_t i = 0; values && i < sa->values.size(); ++i) values = CompareDims(sa->values[i], sb->values[i]) == DimRelation::kEqual;
    if (values) return a;
    return std::make_shared<ir::ShapeSInfo>(false, std::vector<ir::PrimExpr>{}, sa->ndim == sb->ndim ? sa->ndim : -1);
  }
  const auto* pa = ir::SInfoAs<ir::PrimSInfo>(a);
  const auto* pb = ir::SInfoAs<ir::PrimSInfo>(b);
  if (pa && pb && pa->dtype == pb->dtype) {
    if (pa->value.defined() && pb->value.defined() && CompareDims(pa->value, pb->value) == DimRelation::kEqual) return a;
    return std::make_shared<ir::PrimSInfo>(pa->dtype);
  }
  std::string why;
  if (CheckCompatible(a, b, &why) == DimRelation::kEqual && CheckCompatible(b, a, &why) == DimRelation::kEqual) return a;
  return std::make_shared<ir::ObjectSInfo>();
}

}  // namespace relax
}  // namespace kiln
