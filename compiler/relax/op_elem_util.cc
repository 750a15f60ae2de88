#include "compiler/relax/op_elem_util.h"

#include <algorithm>
#include <cmath>

#include "compiler/arith/simplify.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace elem {
namespace {

using Kind = ir::AttrValue::Kind;

const ir::AttrValue* FindAttr(const ir::CallExpr& call, const char* name) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end() || it->second.kind == Kind::kNone) return nullptr;
  return &it->second;
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "a bool";
    case Kind::kInt: return "an integer";
    case Kind::kFloat: return "a float";
    case Kind::kString: return "a string";
    case Kind::kIntList: return "a list";
    default: return "a dict";
  }
}

Status WrongKind(const ir::CallExpr& call, const char* name, const char* want, const ir::AttrValue& v) {
  return Error(call, std::string(name) + " must be " + want + ", got " + KindName(v.kind));
}

bool IsOne(const ir::PrimExpr& d) {
  auto c = ConstDim(d);
  return c && *c == 1;
}

}  // namespace

std::string OpLabel(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (!op) return "R.?";
  const std::string& n = op->name;
  return "R." + (n.compare(0, 6, "relax.") == 0 ? n.substr(6) : n);
}

std::string Prefix(const ir::CallExpr& call) { return Where(call.span) + OpLabel(call) + ": "; }

Status Error(const ir::CallExpr& call, const std::string& message) { return InvalidArgument(Prefix(call) + message); }

Result<int64_t> IntAttr(const ir::CallExpr& call, const char* name, int64_t def) {
  const ir::AttrValue* v = FindAttr(call, name);
  if (!v) return def;
  if (v->kind != Kind::kInt) return WrongKind(call, name, "an integer", *v);
  return v->i;
}

Result<bool> BoolAttr(const ir::CallExpr& call, const char* name, bool def) {
  const ir::AttrValue* v = FindAttr(call, name);
  if (!v) return def;
  // TVM prints some flags as T.bool(...) and older modules as 0/1.
  if (v->kind == Kind::kBool || (v->kind == Kind::kInt && (v->i == 0 || v->i == 1))) return v->i != 0;
  return WrongKind(call, name, "True or False", *v);
}

Result<double> FloatAttr(const ir::CallExpr& call, const char* name, double def) {
  const ir::AttrValue* v = FindAttr(call, name);
  if (!v) return def;
  if (v->kind == Kind::kFloat) return v->f;
  if (v->kind == Kind::kInt) return static_cast<double>(v->i);
  return WrongKind(call, name, "a number", *v);
}

Result<std::string> StringAttr(const ir::CallExpr& call, const char* name, const std::string& def) {
  const ir::AttrValue* v = FindAttr(call, name);
  if (!v) return def;
  if (v->kind != Kind::kString) return WrongKind(call, name, "a string", *v);
  return v->s;
}

Result<std::optional<DType>> DTypeAttr(const ir::CallExpr& call, const char* name) {
  KILN_ASSIGN_OR_RETURN(std::string s, StringAttr(call, name, ""));
  if (s.empty() || s == "void") return std::optional<DType>();
  Result<DType> t = ParseDType(s);
  if (!t.ok()) return Error(call, std::string(name) + " \"" + s + "\" is not a dtype");
  return std::optional<DType>(*t);
}

Result<std::optional<std::vector<int64_t>>> AxesAttr(const ir::CallExpr& call, const char* name) {
  const ir::AttrValue* v = FindAttr(call, name);
  if (!v) return std::optional<std::vector<int64_t>>();
  if (v->kind == Kind::kInt) return std::optional<std::vector<int64_t>>(std::vector<int64_t>{v->i});
  if (v->kind == Kind::kIntList) return std::optional<std::vector<int64_t>>(v->ints);
  return WrongKind(call, name, "a list of integers or None", *v);
}

Result<std::optional<int64_t>> AxisAttr(const ir::CallExpr& call, const char* name) {
  const ir::AttrValue* v = FindAttr(call, name);
  if (!v) return std::optional<int64_t>();
  if (v->kind == Kind::kInt) return std::optional<int64_t>(v->i);
  if (v->kind == Kind::kIntList && v->ints.size() == 1) return std::optional<int64_t>(v->ints[0]);
  return WrongKind(call, name, "an integer or None", *v);
}

Result<Scalar> ScalarArg(const ir::CallExpr& call, size_t index, const char* attr, std::optional<double> def) {
  Scalar s;
  if (index < call.args.size()) {
    const auto* pv = ir::ExprAs<ir::PrimValueExpr>(call.args[index]);
    if (!pv) return Error(call, std::string(attr) + " must be a constant R.prim_value");
    ir::PrimExpr v = arith::Simplify(pv->value);
    s.dtype = v.dtype();
    if (const auto* i = v.as<ir::IntImmNode>()) {
      s.value = static_cast<double>(i->value);
    } else if (const auto* f = v.as<ir::FloatImmNode>()) {
      s.value = f->value;
      s.is_float = true;
    } else {
      return Error(call, std::string(attr) + " must be a constant, got " + DimString(pv->value));
    }
    return s;
  }
  const ir::AttrValue* v = FindAttr(call, attr);
  if (v && v->kind == Kind::kInt) {
    s.value = static_cast<double>(v->i);
    return s;
  }
  if (v && v->kind == Kind::kFloat) {
    s.value = v->f;
    s.is_float = true;
    s.dtype = DType::Float32();
    return s;
  }
  if (v) return WrongKind(call, attr, "a number", *v);
  if (!def) return Error(call, std::string("missing ") + attr);
  s.value = *def;
  s.is_float = std::floor(*def) != *def;
  s.dtype = s.is_float ? DType::Float32() : DType::Int64();
  return s;
}

Result<int64_t> NormalizeAxis(const ir::CallExpr& call, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim) {
    return Error(call, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(ndim));
  }
  return axis < 0 ? axis + ndim : axis;
}

Result<std::vector<int64_t>> NormalizeAxes(const ir::CallExpr& call, const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(call, a, ndim));
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return Error(call, "axis " + std::to_string(a) + " is repeated");
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<ir::PrimExpr>> BroadcastShapes(const ir::CallExpr& call, const std::vector<ir::PrimExpr>& a,
                                                  const std::vector<ir::PrimExpr>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<ir::PrimExpr> out(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::PrimExpr* da = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const ir::PrimExpr* db = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    ir::PrimExpr r;
    if (!da) {
      r = *db;
    } else if (!db || IsOne(*db)) {
      r = *da;
    } else if (IsOne(*da)) {
      r = *db;
    } else {
      DimRelation rel = CompareDims(*da, *db);
      if (rel == DimRelation::kNotEqual) {
        return Error(call, "shapes " + ShapeString(a) + " and " + ShapeString(b) + " do not broadcast (" +
                               DimString(*da) + " vs " + DimString(*db) + ")");
      }
      if (rel == DimRelation::kUnknown) {
        return Unimplemented(Prefix(call) + "cannot prove that dimensions " + DimString(*da) + " and " +
                             DimString(*db) + " are equal or 1");
      }
      r = *da;
    }
    out[n - 1 - i] = r;
  }
  return out;
}

te::Indices BroadcastIndex(const std::vector<ir::PrimExpr>& in, const te::Indices& out) {
  te::Indices idx;
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) idx.push_back(IsOne(in[i]) ? ir::PrimExpr(int64_t{0}) : out[offset + i]);
  return idx;
}

Result<const ir::TensorSInfo*> TensorArg(const ir::CallExpr& call, size_t i, const char* what) {
  const ir::TensorSInfo* t = i < call.args.size() ? TensorInfoOf(call.args[i]) : nullptr;
  if (!t) {
    std::string got = i < call.args.size() ? SInfoString(call.args[i]->struct_info) : "nothing";
    return Error(call, std::string(what) + " must be a tensor, got " + got);
  }
  return t;
}

Result<const ir::TensorSInfo*> ShapedTensorArg(const ir::CallExpr& call, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, TensorArg(call, i, what));
  if (!t->has_shape) return Unimplemented(Prefix(call) + "legalization needs a known shape");
  if (!t->has_dtype) return Unimplemented(Prefix(call) + "legalization needs a known dtype");
  return t;
}

Result<const ir::TensorSInfo*> ShapedResult(const ir::CallExpr& call) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
  if (!t || !t->has_shape || !t->has_dtype) {
    return Unimplemented(Prefix(call) + "legalization needs a known result shape, got " + SInfoString(call.struct_info));
  }
  return t;
}

bool IsBool(DType t) { return t == DType::Bool(); }
bool IsSignedInt(DType t) { return t.code == kDLInt; }

ir::PrimExpr Const(DType dtype, double v) {
  if (dtype.is_float()) return ir::FloatImm(dtype, v);
  if (IsBool(dtype)) return ir::IntImm(dtype, v != 0);
  return ir::IntImm(dtype, static_cast<int64_t>(v));
}

ir::PrimExpr Intrin(DType dtype, const char* op, std::vector<ir::PrimExpr> args) {
  return ir::PrimExpr(std::make_shared<ir::CallNode>(dtype, op, std::move(args)));
}

ir::PrimExpr CastTo(DType dtype, const ir::PrimExpr& e) { return e.dtype() == dtype ? e : ir::Cast(dtype, e); }

ir::PrimExpr ToBool(const ir::PrimExpr& e) {
  if (IsBool(e.dtype())) return e;
  return ir::MakeBinary(ir::TirKind::kNE, e, Const(e.dtype(), 0));
}

ir::PrimExpr Select(ir::PrimExpr cond, ir::PrimExpr t, ir::PrimExpr f) {
  return ir::PrimExpr(std::make_shared<ir::SelectNode>(std::move(cond), std::move(t), std::move(f)));
}

ir::PrimExpr Bin(ir::TirKind kind, ir::PrimExpr a, ir::PrimExpr b) { return ir::MakeBinary(kind, std::move(a), std::move(b)); }

}  // namespace elem
}  // namespace relax
}  // namespace kiln
