#include "compiler/relax/nn_attrs.h"

#include <algorithm>
#include <cstring>

#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace nn {

AttrReader::AttrReader(const ir::CallExpr& call) : call_(call), op_(OpDisplayName(call)) {}

Status AttrReader::Error(const std::string& msg) const { return InvalidArgument(Where(call_.span) + op_ + ": " + msg); }

Status AttrReader::CheckKnown(std::initializer_list<const char*> known) const {
  for (const auto& kv : call_.attrs) {
    bool ok = false;
    for (const char* k : known) ok |= kv.first == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
    return Error("unknown attribute '" + kv.first + "'" + (list.empty() ? " (it takes none)" : " (known: " + list + ")"));
  }
  return Status::Ok();
}

const ir::AttrValue* AttrReader::Find(const char* key) const {
  auto it = call_.attrs.find(key);
  if (it == call_.attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return nullptr;
  return &it->second;
}

bool AttrReader::Has(const char* key) const { return Find(key) != nullptr; }

Result<int64_t> AttrReader::Int(const char* key, int64_t def) const {
  const ir::AttrValue* v = Find(key);
  if (!v) return def;
  if (v->kind == ir::AttrValue::Kind::kInt) return v->i;
  if (v->kind == ir::AttrValue::Kind::kIntList && v->ints.size() == 1) return v->ints[0];
  return Error(std::string(key) + " must be an integer");
}

Result<double> AttrReader::Float(const char* key, double def) const {
  const ir::AttrValue* v = Find(key);
  if (!v) return def;
  if (v->kind == ir::AttrValue::Kind::kFloat) return v->f;
  if (v->kind == ir::AttrValue::Kind::kInt) return static_cast<double>(v->i);
  return Error(std::string(key) + " must be a number");
}

Result<bool> AttrReader::Bool(const char* key, bool def) const {
  const ir::AttrValue* v = Find(key);
  if (!v) return def;
  if (v->kind == ir::AttrValue::Kind::kBool || (v->kind == ir::AttrValue::Kind::kInt && (v->i == 0 || v->i == 1)))
    return v->i != 0;
  return Error(std::string(key) + " must be True or False");
}

Result<std::string> AttrReader::String(const char* key, const std::string& def,
                                       std::initializer_list<const char*> allowed) const {
  const ir::AttrValue* v = Find(key);
  if (!v) return def;
  if (v->kind != ir::AttrValue::Kind::kString) return Error(std::string(key) + " must be a string");
  if (allowed.size() == 0) return v->s;
  std::string list;
  for (const char* a : allowed) {
    if (v->s == a) return v->s;
    list += std::string(list.empty() ? "\"" : ", \"") + a + "\"";
  }
  return Error(std::string(key) + " \"" + v->s + "\" is not supported (expected one of " + list + ")");
}

Result<std::vector<int64_t>> AttrReader::IntList(const char* key, const std::vector<int64_t>& def) const {
  const ir::AttrValue* v = Find(key);
  if (!v) return def;
  if (v->kind == ir::AttrValue::Kind::kIntList) return v->ints;
  if (v->kind == ir::AttrValue::Kind::kInt) return std::vector<int64_t>{v->i};
  return Error(std::string(key) + " must be a list of integers");
}

Result<std::vector<int64_t>> AttrReader::IntListN(const char* key, const std::vector<int64_t>& def, size_t n) const {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, IntList(key, def));
  if (v.size() == n) return v;
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  return Error(std::string(key) + " takes 1 or " + std::to_string(n) + " values, got " + std::to_string(v.size()));
}

Result<std::optional<DType>> AttrReader::OptionalDType(const char* key) const {
  const ir::AttrValue* v = Find(key);
  if (!v) return std::optional<DType>();
  if (v->kind != ir::AttrValue::Kind::kString) return Error(std::string(key) + " must be a dtype string");
  if (v->s.empty() || v->s == "void") return std::optional<DType>();
  Result<DType> t = ParseDType(v->s);
  if (!t.ok()) return Error(std::string(key) + ": unknown dtype \"" + v->s + "\"");
  return std::optional<DType>(*t);
}

Result<int> NormalizeAxis(const AttrReader& r, int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim) {
    return r.Error("axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(ndim));
  }
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

Result<std::vector<int>> NormalizeAxes(const AttrReader& r, const std::vector<int64_t>& axes, int ndim) {
  std::vector<int> out;
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int n, NormalizeAxis(r, a, ndim));
    if (std::find(out.begin(), out.end(), n) != out.end()) return r.Error("axis " + std::to_string(a) + " is repeated");
    out.push_back(n);
  }
  return out;
}

bool IsUnitDim(const ir::PrimExpr& d) {
  auto c = ConstDim(d);
  return c && *c == 1;
}

Result<std::vector<ir::PrimExpr>> BroadcastDims(const AttrReader& r, const std::vector<ir::PrimExpr>& a,
                                                const std::vector<ir::PrimExpr>& b, const char* what) {
  size_t n = std::max(a.size(), b.size());
  std::vector<ir::PrimExpr> out(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::PrimExpr* da = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const ir::PrimExpr* db = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    ir::PrimExpr d;
    if (!da || (db && IsUnitDim(*da))) {
      d = *db;
    } else if (!db || IsUnitDim(*db)) {
      d = *da;
    } else {
      DimRelation rel = CompareDims(*da, *db);
      if (rel == DimRelation::kNotEqual) {
        return r.Error(std::string(what) + " " + ShapeString(a) + " and " + ShapeString(b) + " do not broadcast (" +
                       DimString(*da) + " vs " + DimString(*db) + ")");
      }
      if (rel == DimRelation::kUnknown) {
        return Unimplemented(Where(r.call().span) + r.op() + ": cannot prove that dimensions " + DimString(*da) +
                             " and " + DimString(*db) + " are equal or 1");
      }
      d = *da;
    }
    out[n - 1 - i] = d;
  }
  return out;
}

Result<const ir::TensorSInfo*> TensorArg(const AttrReader& r, size_t i, const char* what) {
  const ir::TensorSInfo* t = i < r.call().args.size() ? TensorInfoOf(r.call().args[i]) : nullptr;
  if (!t) return r.Error("expects a tensor as argument " + std::to_string(i + 1) + " (" + what + ")");
  return t;
}

Result<const ir::TensorSInfo*> ShapedArg(const AttrReader& r, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, TensorArg(r, i, what));
  if (!t->has_shape) return Unimplemented(Where(r.call().span) + r.op() + ": legalization needs known shapes");
  return t;
}

Result<const ir::TensorSInfo*> ShapedResult(const AttrReader& r) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(r.call().struct_info);
  if (!t || !t->has_shape) return Unimplemented(Where(r.call().span) + r.op() + ": legalization needs known shapes");
  return t;
}

std::vector<ir::PrimExpr> KeptDims(const std::vector<ir::PrimExpr>& shape, const std::vector<int>& axes) {
  std::vector<ir::PrimExpr> out;
  for (size_t i = 0; i < shape.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) out.push_back(shape[i]);
  return out;
}

std::vector<ir::PrimExpr> AxesDims(const std::vector<ir::PrimExpr>& shape, const std::vector<int>& axes) {
  std::vector<ir::PrimExpr> out;
  for (int a : axes) out.push_back(shape[a]);
  return out;
}

std::vector<ir::PrimExpr> MergeIndex(size_t ndim, const std::vector<int>& axes, const std::vector<ir::PrimExpr>& kept,
                                     const std::vector<ir::PrimExpr>& red) {
  std::vector<ir::PrimExpr> out;
  size_t k = 0;
  for (size_t i = 0; i < ndim; ++i) {
    auto it = std::find(axes.begin(), axes.end(), static_cast<int>(i));
    out.push_back(it == axes.end() ? kept[k++] : red[it - axes.begin()]);
  }
  return out;
}

std::vector<ir::PrimExpr> KeptIndex(const std::vector<int>& axes, const std::vector<ir::PrimExpr>& full) {
  std::vector<ir::PrimExpr> out;
  for (size_t i = 0; i < full.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) out.push_back(full[i]);
  return out;
}

ir::PrimExpr DimProduct(const std::vector<ir::PrimExpr>& dims) {
  ir::PrimExpr p(int64_t{1});
  for (const auto& d : dims) p = p * d;
  return p;
}

DType ComputeType(DType t) { return t == DType::Float16() ? DType::Float32() : t; }

ir::PrimExpr CastTo(DType t, const ir::PrimExpr& e) { return e.dtype() == t ? e : ir::Cast(t, e); }

ir::PrimExpr LowestFinite(DType t) {
  if (t.bits == 16) return ir::FloatImm(t, -65504.0);
  if (t.bits == 64) return ir::FloatImm(t, -1.7976931348623157e308);
  return ir::FloatImm(t, -3.4028234663852886e38);
}

ir::PrimExpr Const(DType dtype, double v) {
  return dtype.is_float() ? ir::FloatImm(dtype, v) : ir::IntImm(dtype, static_cast<int64_t>(v));
}

ir::PrimExpr Intrin(const char* op, std::vector<ir::PrimExpr> args) {
  DType t = args[0].dtype();
  return ir::PrimExpr(std::make_shared<ir::CallNode>(t, op, std::move(args)));
}

ir::PrimExpr IfThenElse(ir::PrimExpr cond, ir::PrimExpr t, ir::PrimExpr f) {
  DType dt = t.dtype();
  return ir::PrimExpr(
      std::make_shared<ir::CallNode>(dt, "if_then_else", std::vector<ir::PrimExpr>{std::move(cond), std::move(t), std::move(f)}));
}

}  // namespace nn
}  // namespace relax
}  // namespace kiln
