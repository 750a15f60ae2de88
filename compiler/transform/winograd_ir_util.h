// Small TIR-building helpers shared by the Winograd kernels
// (winograd_conv2d.cc's transforms, winograd_banded.cc's banded kernel):
// int64 constants and loop variables, loops from 0, conditionals, let
// bindings, float32 scratch buffers, and the sums of small integer
// multiples that apply B^T and A^T. Header-only; every function builds new
// immutable nodes and keeps no state.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_IR_UTIL_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_IR_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace transform {
namespace winograd_ir {

inline ir::PrimExpr I64(int64_t v) { return ir::IntImm(DType::Int64(), v); }
inline ir::PrimExpr F32(double v) { return ir::FloatImm(DType::Float32(), v); }
inline ir::Var LoopVar(const std::string& name) { return ir::MakeVar(name, DType::Int64()); }
inline ir::PrimExpr Bin(ir::TirKind k, ir::PrimExpr a, ir::PrimExpr b) {
  return ir::MakeBinary(k, std::move(a), std::move(b));
}

// for v in [0, extent) of the given kind.
inline ir::Stmt Loop(const ir::Var& v, ir::PrimExpr extent, ir::ForKind kind, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}
inline ir::Stmt Loop(const ir::Var& v, int64_t extent, ir::ForKind kind, ir::Stmt body) {
  return Loop(v, I64(extent), kind, std::move(body));
}
inline ir::Stmt If(ir::PrimExpr cond, ir::Stmt then_case, ir::Stmt else_case = nullptr) {
  return std::make_shared<ir::IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}
inline ir::Stmt Let(const ir::Var& v, ir::PrimExpr value, ir::Stmt body) {
  return std::make_shared<ir::LetStmtNode>(v, std::move(value), std::move(body));
}

// A float32 buffer of `scope` ("local", "global" workspace) for an
// AllocateNode; its data variable is `name`_data.
inline ir::Buffer MakeBuffer(const std::string& name, std::vector<ir::PrimExpr> shape, const char* scope) {
  auto b = std::make_shared<ir::BufferNode>();
  b->name = name;
  b->data = ir::MakeVar(name + "_data", ir::HandleType());
  b->dtype = DType::Float32();
  b->shape = std::move(shape);
  b->scope = scope;
  return b;
}
inline ir::Stmt Alloc(const ir::Buffer& b, ir::Stmt body) {
  return std::make_shared<ir::AllocateNode>(b, std::move(body));
}

// sum of coef * term over the nonzero coefficients (the small integers of
// B^T and A^T): +1 and -1 add and subtract, others multiply; 0.0f when every
// coefficient is zero.
inline ir::PrimExpr LinearSum(const std::vector<std::pair<double, ir::PrimExpr>>& terms) {
  ir::PrimExpr acc;
  for (const auto& [coef, t] : terms) {
    if (coef == 0) continue;
    double mag = coef < 0 ? -coef : coef;
    ir::PrimExpr term = mag == 1 ? t : Bin(ir::TirKind::kMul, F32(mag), t);
    if (!acc.defined()) {
      acc = coef > 0 ? term : Bin(ir::TirKind::kSub, F32(0), term);
    } else {
      acc = Bin(coef > 0 ? ir::TirKind::kAdd : ir::TirKind::kSub, acc, term);
    }
  }
  return acc.defined() ? acc : F32(0);
}

}  // namespace winograd_ir
}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_IR_UTIL_H_
