// TIR expressions from the syntax tree, with TVM's literal typing: a bare
// integer takes the dtype of the other operand of its binary operation, or the
// context's default (int64 in shapes, int32 elsewhere); a bare float takes the
// other operand's float dtype, or float32.
#include <cmath>
#include <cstdint>

#include "compiler/text/builder.h"
#include "compiler/text/tir_intrinsics.h"

namespace kiln {
namespace text {

using ir::PrimExpr;

ir::Var TirExprBuilder::FindVar(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->vars.find(name);
    if (f != it->vars.end()) return f->second;
  }
  return nullptr;
}

ir::Buffer TirExprBuilder::FindBuffer(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->buffers.find(name);
    if (f != it->buffers.end()) return f->second;
  }
  return nullptr;
}

bool TirDTypeName(const AstExpr& e, DType* out) {
  if (e.kind != AstKind::kAttr || !e.base || e.base->kind != AstKind::kName || e.base->str != "T") return false;
  static const char* kNames[] = {"int8",    "int16",   "int32",   "int64",   "uint8", "uint16", "uint32",
                                 "uint64",  "float16", "float32", "float64", "bool",  "bfloat16"};
  for (const char* n : kNames) {
    if (e.str == n) {
      Result<DType> t = ParseDType(n);
      *out = t.value();
      return true;
    }
  }
  return false;
}

Result<DType> DTypeFromAst(const SourceFile& src, const AstExpr& e, const std::string& what) {
  if (e.kind != AstKind::kString) {
    std::string got = e.kind == AstKind::kInt ? std::to_string(e.i) : e.kind == AstKind::kName ? e.str : "an expression";
    return src.Error(e.loc, what + " dtype must be a string, got " + got);
  }
  Result<DType> t = ParseDType(e.str);
  if (!t.ok()) return src.Error(e.loc, "unknown dtype \"" + e.str + "\" for " + what + " (expected e.g. \"float32\")");
  return t.value();
}

Result<ir::AttrValue> AttrFromAst(const SourceFile& src, const AstExpr& e) {
  ir::AttrValue v;
  DType t;
  switch (e.kind) {
    case AstKind::kNone: v.kind = ir::AttrValue::Kind::kNone; return v;
    case AstKind::kBool: v.kind = ir::AttrValue::Kind::kBool; v.i = e.i; return v;
    case AstKind::kInt: v.kind = ir::AttrValue::Kind::kInt; v.i = e.i; return v;
    case AstKind::kFloat: v.kind = ir::AttrValue::Kind::kFloat; v.f = e.f; return v;
    case AstKind::kString: v.kind = ir::AttrValue::Kind::kString; v.s = e.str; return v;
    case AstKind::kList:
    case AstKind::kTuple:
      v.kind = ir::AttrValue::Kind::kIntList;
      for (const auto& item : e.items) {
        if (item->kind != AstKind::kInt) return src.Error(item->loc, "attribute lists may only hold integers");
        v.ints.push_back(item->i);
      }
      return v;
    case AstKind::kDict:
      // {"n": 128}: TVM's tir_var_upper_bound; string keys, integer values.
      v.kind = ir::AttrValue::Kind::kIntDict;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        const AstExpr& k = *e.items[i];
        const AstExpr& val = *e.items[i + 1];
        if (k.kind != AstKind::kString) return src.Error(k.loc, "dict attribute keys must be strings");
        if (val.kind != AstKind::kInt) return src.Error(val.loc, "dict attribute values must be integers");
        v.int_dict[k.str] = val.i;
      }
      return v;
    case AstKind::kCall:
      // float("inf"), float("-inf"), float("nan"): Python's spelling.
      if (e.base && e.base->DottedName() == "float" && e.items.size() == 1 && e.items[0]->kind == AstKind::kString) {
        const std::string& w = e.items[0]->str;
        if (w != "inf" && w != "-inf" && w != "nan") return src.Error(e.items[0]->loc, "expected \"inf\", \"-inf\" or \"nan\"");
        v.kind = ir::AttrValue::Kind::kFloat;
        v.f = w == "inf" ? HUGE_VAL : w == "-inf" ? -HUGE_VAL : std::nan("");
        return v;
      }
      // T.bool(True), T.int32(1), R.prim_value(1) as TVM prints typed attributes.
      if (e.base && e.items.size() == 1 && (TirDTypeName(*e.base, &t) || e.base->DottedName() == "R.prim_value")) {
        const AstExpr& a = *e.items[0];
        if (a.kind == AstKind::kBool || (t == DType::Bool() && a.kind == AstKind::kInt)) {
          v.kind = ir::AttrValue::Kind::kBool;
          v.i = a.i != 0;
          return v;
        }
        if (a.kind == AstKind::kInt || a.kind == AstKind::kFloat) return AttrFromAst(src, a);
      }
      break;
    default: break;
  }
  return src.Error(e.loc, "unsupported attribute value (expected None, a bool, number, string, list of ints or dict of ints)");
}

Result<ir::AttrMap> AttrDictFromAst(const SourceFile& src, const AstExpr& e) {
  if (e.kind != AstKind::kDict) return src.Error(e.loc, "expected a dict of attributes {\"name\": value, ...}");
  ir::AttrMap out;
  for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
    const AstExpr& k = *e.items[i];
    if (k.kind != AstKind::kString) return src.Error(k.loc, "attribute names must be strings");
    KILN_ASSIGN_OR_RETURN(out[k.str], AttrFromAst(src, *e.items[i + 1]));
  }
  return out;
}

void TirExprBuilder::Adapt(Typed* a, Typed* b) const {
  if (a->bare == b->bare) return;
  Typed* lit = a->bare ? a : b;
  const Typed* other = a->bare ? b : a;
  DType want = other->e.dtype();
  if (want == ir::HandleType()) return;
  if (const auto* i = lit->e.as<ir::IntImmNode>()) {
    lit->e = want.is_float() ? ir::FloatImm(want, static_cast<double>(i->value)) : ir::IntImm(want, i->value);
  } else if (const auto* f = lit->e.as<ir::FloatImmNode>()) {
    if (want.is_float()) lit->e = ir::FloatImm(want, f->value);
  }
  lit->bare = false;
}

Result<PrimExpr> TirExprBuilder::Build(const AstExpr& e, DType default_int) {
  KILN_ASSIGN_OR_RETURN(Typed t, B(e, default_int));
  return t.e;
}

Result<PrimExpr> TirExprBuilder::BuildAs(const AstExpr& e, DType want) {
  KILN_ASSIGN_OR_RETURN(Typed t, B(e, want.is_float() ? DType::Int32() : want));
  if (t.bare) {
    Typed target{ir::IntImm(want, 0), false};
    if (want.is_float()) target.e = ir::FloatImm(want, 0);
    Adapt(&t, &target);
  }
  return t.e;
}

namespace {

// The same expression over the same variables (by identity, unlike
// ir::StructuralEqual, which matches free variables at first use): literals,
// variables and arithmetic, what the bounds of a slice are written with.
bool SameExpr(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a->kind() != b->kind() || a.dtype() != b.dtype()) return false;
  if (const auto* x = a.as<ir::IntImmNode>()) return x->value == b.as<ir::IntImmNode>()->value;
  if (ir::IsBinary(a->kind())) {
    const auto* x = static_cast<const ir::BinaryNode*>(a.get());
    const auto* y = static_cast<const ir::BinaryNode*>(b.get());
    return SameExpr(x->a, y->a) && SameExpr(x->b, y->b);
  }
  return false;  // variables are equal only as the same node (same_as above)
}

}  // namespace

PrimExpr RangeExtent(const PrimExpr& lo, const PrimExpr& hi) {
  const auto* l = lo.as<ir::IntImmNode>();
  const auto* h = hi.as<ir::IntImmNode>();
  if (l && h) return ir::IntImm(hi.dtype(), h->value - l->value);
  if (l && l->value == 0) return hi;
  // hi = lo + x, as TVM prints a region (A[vi * 16:vi * 16 + 16]).
  if (const auto* add = hi.as<ir::AddNode>()) {
    if (SameExpr(add->a, lo)) return add->b;
  }
  return ir::MakeBinary(ir::TirKind::kSub, hi, lo);
}

Status TirExprBuilder::BuildPair(const AstExpr& a, const AstExpr& b, DType default_int, PrimExpr* out_a,
                                 PrimExpr* out_b) {
  KILN_ASSIGN_OR_RETURN(Typed ta, B(a, default_int));
  KILN_ASSIGN_OR_RETURN(Typed tb, B(b, default_int));
  Adapt(&ta, &tb);
  *out_a = ta.e;
  *out_b = tb.e;
  return Status::Ok();
}

Result<std::vector<PrimExpr>> TirExprBuilder::BuildShape(const AstExpr& e) {
  std::vector<PrimExpr> out;
  if (e.kind == AstKind::kTuple || e.kind == AstKind::kList) {
    for (const auto& item : e.items) {
      KILN_ASSIGN_OR_RETURN(PrimExpr d, Build(*item, DType::Int64()));
      out.push_back(std::move(d));
    }
    return out;
  }
  KILN_ASSIGN_OR_RETURN(PrimExpr d, Build(e, DType::Int64()));
  out.push_back(std::move(d));
  return out;
}

Result<ir::BufferRegion> TirExprBuilder::BuildRegion(const AstExpr& e) {
  if (e.kind != AstKind::kSubscript || e.base->kind != AstKind::kName)
    return src_.Error(e.loc, "expected a buffer region such as X[vi, 0:784]");
  ir::BufferRegion r;
  r.buffer = FindBuffer(e.base->str);
  if (!r.buffer) return src_.Error(e.base->loc, "undefined buffer '" + e.base->str + "'");
  if (e.items.size() != r.buffer->shape.size())
    return src_.Error(e.loc, StrFormat("buffer '%s' has %zu dimensions, got %zu indices", e.base->str.c_str(),
                                       r.buffer->shape.size(), e.items.size()));
  for (const auto& item : e.items) {
    if (item->kind == AstKind::kSlice) {
      if (!item->items[0] || !item->items[1])
        return src_.Error(item->loc, "a region slice needs both bounds, as in 0:784");
      PrimExpr lo, hi;
      KILN_RETURN_IF_ERROR(BuildPair(*item->items[0], *item->items[1], DType::Int32(), &lo, &hi));
      r.ranges.emplace_back(lo, RangeExtent(lo, hi));
    } else {
      KILN_ASSIGN_OR_RETURN(PrimExpr i, Build(*item, DType::Int32()));
      r.ranges.emplace_back(i, ir::IntImm(i.dtype(), 1));
    }
  }
  return r;
}

Result<PrimExpr> TirExprBuilder::Load(const AstExpr& e, DType default_int) {
  if (e.base->kind != AstKind::kName) return src_.Error(e.loc, "only buffers can be indexed in TIR");
  ir::Buffer b = FindBuffer(e.base->str);
  if (!b) {
    if (FindVar(e.base->str)) return src_.Error(e.base->loc, "'" + e.base->str + "' is a variable, not a buffer");
    return src_.Error(e.base->loc, "undefined buffer '" + e.base->str + "'");
  }
  if (e.items.size() != b->shape.size())
    return src_.Error(e.loc, StrFormat("buffer '%s' has %zu dimensions, got %zu indices", e.base->str.c_str(),
                                       b->shape.size(), e.items.size()));
  std::vector<PrimExpr> idx;
  for (const auto& item : e.items) {
    if (item->kind == AstKind::kSlice) return src_.Error(item->loc, "slices are only allowed in T.reads/T.writes");
    KILN_ASSIGN_OR_RETURN(PrimExpr i, Build(*item, DType::Int32()));
    idx.push_back(std::move(i));
  }
  return ir::Load(b, std::move(idx));
}

Result<TirExprBuilder::Typed> TirExprBuilder::B(const AstExpr& e, DType default_int) {
  switch (e.kind) {
    case AstKind::kInt: return Typed{ir::IntImm(default_int, e.i), true};
    case AstKind::kFloat: return Typed{ir::FloatImm(DType::Float32(), e.f), true};
    case AstKind::kBool: return Typed{ir::IntImm(DType::Bool(), e.i), false};
    case AstKind::kString: return Typed{PrimExpr(std::make_shared<ir::StringImmNode>(e.str)), false};
    case AstKind::kName: {
      if (ir::Var v = FindVar(e.str)) return Typed{PrimExpr(v), false};
      if (FindBuffer(e.str)) return src_.Error(e.loc, "buffer '" + e.str + "' used as a value; index it, as in " + e.str + "[i]");
      if (introduce_unknown) {
        ir::Var v = ir::MakeVar(e.str, DType::Int64());
        scopes_.front().vars[e.str] = v;
        return Typed{PrimExpr(v), false};
      }
      return src_.Error(e.loc, "undefined variable '" + e.str + "'");
    }
    case AstKind::kSubscript: {
      KILN_ASSIGN_OR_RETURN(PrimExpr l, Load(e, default_int));
      return Typed{l, false};
    }
    case AstKind::kUnary: {
      KILN_ASSIGN_OR_RETURN(Typed a, B(*e.items[0], default_int));
      if (e.str == "not") return Typed{PrimExpr(std::make_shared<ir::NotNode>(a.e)), false};
      DType t = a.e.dtype();
      PrimExpr zero = t.is_float() ? ir::FloatImm(t, 0) : ir::IntImm(t, 0);
      return Typed{ir::MakeBinary(ir::TirKind::kSub, zero, a.e), false};
    }
    case AstKind::kBinary: {
      KILN_ASSIGN_OR_RETURN(Typed a, B(*e.items[0], default_int));
      KILN_ASSIGN_OR_RETURN(Typed b, B(*e.items[1], default_int));
      Adapt(&a, &b);
      static const std::pair<const char*, ir::TirKind> kOps[] = {
          {"+", ir::TirKind::kAdd},   {"-", ir::TirKind::kSub},       {"*", ir::TirKind::kMul},
          {"/", ir::TirKind::kDiv},   {"//", ir::TirKind::kFloorDiv}, {"%", ir::TirKind::kFloorMod},
          {"<", ir::TirKind::kLT},    {"<=", ir::TirKind::kLE},       {">", ir::TirKind::kGT},
          {">=", ir::TirKind::kGE},   {"==", ir::TirKind::kEQ},       {"!=", ir::TirKind::kNE},
          {"and", ir::TirKind::kAnd}, {"or", ir::TirKind::kOr}};
      for (const auto& op : kOps)
        if (e.str == op.first) return Typed{ir::MakeBinary(op.second, a.e, b.e), a.bare && b.bare};
      if (e.str == "**")
        return Typed{PrimExpr(std::make_shared<ir::CallNode>(a.e.dtype(), "pow", std::vector<PrimExpr>{a.e, b.e})),
                     false};
      return src_.Error(e.loc, "operator '" + e.str + "' is not supported in TIR");
    }
    case AstKind::kCall: return Call(e, default_int);
    case AstKind::kAttr: {
      DType t;
      if (TirDTypeName(e, &t))
        return src_.Error(e.loc, "T." + e.str + " is a type; write T." + e.str + "(value) for a literal");
      return src_.Error(e.loc, "unknown name " + e.DottedName());
    }
    default: break;
  }
  return src_.Error(e.loc, "expected a TIR expression");
}

Result<TirExprBuilder::Typed> TirExprBuilder::Call(const AstExpr& e, DType default_int) {
  std::string callee = e.base->DottedName();
  auto arity = [&](size_t n) -> Status {
    if (e.items.size() != n)
      return src_.Error(e.loc, StrFormat("%s takes %zu arguments, got %zu", callee.c_str(), n, e.items.size()));
    return Status::Ok();
  };
  DType t;
  if (TirDTypeName(*e.base, &t)) {
    if (e.items.empty())
      return src_.Error(e.loc, callee + "() declares a symbolic variable; write it as a statement: n = " + callee + "()");
    KILN_RETURN_IF_ERROR(arity(1));
    const AstExpr& a = *e.items[0];
    if (a.kind == AstKind::kInt || a.kind == AstKind::kBool)
      return Typed{t.is_float() ? ir::FloatImm(t, static_cast<double>(a.i)) : ir::IntImm(t, a.i), false};
    if (a.kind == AstKind::kFloat) {
      if (!t.is_float()) return src_.Error(a.loc, callee + " needs an integer literal, got a float");
      return Typed{ir::FloatImm(t, a.f), false};
    }
    if (a.kind == AstKind::kString && t.is_float()) {
      double v = a.str == "inf" ? HUGE_VAL : a.str == "-inf" ? -HUGE_VAL : a.str == "nan" ? NAN : 0;
      if (a.str != "inf" && a.str != "-inf" && a.str != "nan")
        return src_.Error(a.loc, "expected \"inf\", \"-inf\" or \"nan\"");
      return Typed{ir::FloatImm(t, v), false};
    }
    KILN_ASSIGN_OR_RETURN(PrimExpr v, Build(a, default_int));
    return Typed{ir::Cast(t, v), false};
  }
  // T.min_value("float32") / T.max_value("int8"): the literal, as TVM folds it.
  if (callee == "T.min_value" || callee == "T.max_value") {
    KILN_RETURN_IF_ERROR(arity(1));
    KILN_ASSIGN_OR_RETURN(DType t, DTypeFromAst(src_, *e.items[0], callee));
    bool is_max = callee == "T.max_value";
    if (t.lanes == 1 && t.code == kDLFloat && (t.bits == 16 || t.bits == 32 || t.bits == 64)) {
      double v = t.bits == 16 ? 65504.0 : t.bits == 32 ? 3.4028234663852886e+38 : 1.7976931348623157e+308;
      return Typed{ir::FloatImm(t, is_max ? v : -v), false};
    }
    if (t.lanes == 1 && t.code == kDLInt && t.bits >= 8 && t.bits <= 64) {
      int64_t hi = t.bits == 64 ? INT64_MAX : (int64_t{1} << (t.bits - 1)) - 1;
      return Typed{ir::IntImm(t, is_max ? hi : -hi - 1), false};
    }
    if (t.lanes == 1 && t.code == kDLUInt && t.bits >= 8 && t.bits < 64) {
      return Typed{ir::IntImm(t, is_max ? (int64_t{1} << t.bits) - 1 : 0), false};
    }
    return src_.Error(e.items[0]->loc, callee + " does not support dtype " + DTypeToString(t));
  }
  if (callee == "T.Cast" || callee == "T.cast") {
    KILN_RETURN_IF_ERROR(arity(2));
    bool dtype_first = callee == "T.Cast";
    KILN_ASSIGN_OR_RETURN(DType ct, DTypeFromAst(src_, *e.items[dtype_first ? 0 : 1], callee));
    KILN_ASSIGN_OR_RETURN(PrimExpr v, Build(*e.items[dtype_first ? 1 : 0], default_int));
    return Typed{ir::Cast(ct, v), false};
  }
  if (callee == "T.max" || callee == "T.min" || callee == "T.floordiv" || callee == "T.floormod" ||
      callee == "T.truncdiv") {
    KILN_RETURN_IF_ERROR(arity(2));
    KILN_ASSIGN_OR_RETURN(Typed a, B(*e.items[0], default_int));
    KILN_ASSIGN_OR_RETURN(Typed b, B(*e.items[1], default_int));
    Adapt(&a, &b);
    ir::TirKind k = callee == "T.max"        ? ir::TirKind::kMax
                    : callee == "T.min"      ? ir::TirKind::kMin
                    : callee == "T.floordiv" ? ir::TirKind::kFloorDiv
                    : callee == "T.floormod" ? ir::TirKind::kFloorMod
                                             : ir::TirKind::kDiv;
    return Typed{ir::MakeBinary(k, a.e, b.e), false};
  }
  if (callee == "T.Select" || callee == "T.if_then_else") {
    KILN_RETURN_IF_ERROR(arity(3));
    KILN_ASSIGN_OR_RETURN(PrimExpr c, Build(*e.items[0], default_int));
    KILN_ASSIGN_OR_RETURN(Typed a, B(*e.items[1], default_int));
    KILN_ASSIGN_OR_RETURN(Typed b, B(*e.items[2], default_int));
    Adapt(&a, &b);
    if (callee == "T.Select") return Typed{PrimExpr(std::make_shared<ir::SelectNode>(c, a.e, b.e)), false};
    return Typed{PrimExpr(std::make_shared<ir::CallNode>(a.e.dtype(), "if_then_else", std::vector<PrimExpr>{c, a.e, b.e})),
                 false};
  }
  if (callee == "T.call_intrin") {
    if (e.items.size() < 2) return src_.Error(e.loc, "T.call_intrin takes a dtype, an operator name and arguments");
    KILN_ASSIGN_OR_RETURN(DType ct, DTypeFromAst(src_, *e.items[0], "T.call_intrin"));
    if (e.items[1]->kind != AstKind::kString) return src_.Error(e.items[1]->loc, "expected the operator name as a string");
    std::vector<PrimExpr> out;
    for (size_t i = 2; i < e.items.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(PrimExpr v, Build(*e.items[i], default_int));
      out.push_back(std::move(v));
    }
    return Typed{PrimExpr(std::make_shared<ir::CallNode>(ct, e.items[1]->str, std::move(out))), false};
  }
  if (callee.size() > 2 && callee.compare(0, 2, "T.") == 0) {
    const TirIntrinsic* intrin = FindTirIntrinsic(callee.substr(2));
    if (intrin) {
      KILN_RETURN_IF_ERROR(arity(static_cast<size_t>(intrin->arity)));
      std::vector<Typed> typed;
      for (const auto& a : e.items) {
        KILN_ASSIGN_OR_RETURN(Typed v, B(*a, default_int));
        typed.push_back(v);
      }
      if (typed.size() == 2) Adapt(&typed[0], &typed[1]);
      std::vector<PrimExpr> out;
      for (auto& v : typed) out.push_back(v.e);
      DType rt = out[0].dtype();
      // A bare int literal argument of a float intrinsic (T.exp(1)) is a float.
      if (typed[0].bare && !rt.is_float()) rt = DType::Float32();
      if (intrin->predicate) rt = DType::Bool();
      return Typed{PrimExpr(std::make_shared<ir::CallNode>(rt, intrin->op, std::move(out))), false};
    }
  }
  return src_.Error(e.base->loc, "unknown TIR function " + (callee.empty() ? std::string("call") : callee));
}

}  // namespace text
}  // namespace kiln
