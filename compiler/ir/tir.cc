#include "compiler/ir/tir.h"

namespace kiln {
namespace ir {

const char* TirKindName(TirKind kind) {
  switch (kind) {
#define KILN_PRIM_EXPR(Name) case TirKind::k##Name: return #Name;
#define KILN_STMT(Name) case TirKind::k##Name: return #Name;
#include "compiler/ir/node_kinds.def"
#undef KILN_PRIM_EXPR
#undef KILN_STMT
  }
  return "?";
}

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

bool IsThreadTag(const std::string& tag) {
  return tag == "blockIdx.x" || tag == "blockIdx.y" || tag == "blockIdx.z" || tag == "threadIdx.x" ||
         tag == "threadIdx.y" || tag == "threadIdx.z";
}

bool IsBinary(TirKind k) { return k >= TirKind::kAdd && k <= TirKind::kOr; }

PrimExpr::PrimExpr(int64_t v) : node_(std::make_shared<IntImmNode>(DType::Int64(), v)) {}

DType HandleType() { return DType{kDLOpaqueHandle, 64, 1}; }

Var MakeVar(const std::string& name, DType dtype) { return std::make_shared<VarNode>(name, dtype); }

PrimExpr IntImm(DType dtype, int64_t value) { return PrimExpr(std::make_shared<IntImmNode>(dtype, value)); }

PrimExpr FloatImm(DType dtype, double value) { return PrimExpr(std::make_shared<FloatImmNode>(dtype, value)); }

PrimExpr MakeBinary(TirKind kind, PrimExpr a, PrimExpr b) {
  bool cmp = kind >= TirKind::kEQ && kind <= TirKind::kOr;
  DType t = cmp ? DType::Bool() : a.dtype();
  switch (kind) {
#define KILN_CASE(Name) case TirKind::k##Name: return PrimExpr(std::make_shared<Name##Node>(t, std::move(a), std::move(b)));
    KILN_CASE(Add) KILN_CASE(Sub) KILN_CASE(Mul) KILN_CASE(Div) KILN_CASE(FloorDiv) KILN_CASE(FloorMod)
    KILN_CASE(Min) KILN_CASE(Max) KILN_CASE(EQ) KILN_CASE(NE) KILN_CASE(LT) KILN_CASE(LE) KILN_CASE(GT)
    KILN_CASE(GE) KILN_CASE(And) KILN_CASE(Or)
#undef KILN_CASE
    default: break;
  }
  KILN_CHECK(false, "MakeBinary: %s is not a binary kind", TirKindName(kind));
  return PrimExpr();
}

PrimExpr Cast(DType dtype, PrimExpr v) { return PrimExpr(std::make_shared<CastNode>(dtype, std::move(v))); }

PrimExpr Load(const Buffer& b, std::vector<PrimExpr> idx) {
  return PrimExpr(std::make_shared<BufferLoadNode>(b, std::move(idx)));
}

Buffer MakeBuffer(const std::string& name, std::vector<PrimExpr> shape, DType dtype) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->data = MakeVar(name + "_data", HandleType());
  b->dtype = dtype;
  b->shape = std::move(shape);
  return b;
}

Stmt Store(const Buffer& b, PrimExpr v, std::vector<PrimExpr> idx) {
  return std::make_shared<BufferStoreNode>(b, std::move(v), std::move(idx));
}

Stmt Seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s) continue;
    if (const auto* seq = As<SeqStmtNode>(s)) {
      for (const auto& inner : seq->seq) flat.push_back(inner);
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return std::make_shared<SeqStmtNode>(std::move(flat));
}

}  // namespace ir
}  // namespace kiln
