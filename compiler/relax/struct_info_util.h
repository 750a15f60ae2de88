// Helpers for reading and comparing struct info during inference and lowering.
#ifndef KILN_COMPILER_RELAX_STRUCT_INFO_UTIL_H_
#define KILN_COMPILER_RELAX_STRUCT_INFO_UTIL_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/relax.h"

namespace kiln {
namespace relax {

// The tensor struct info of an expression (after normalization), or nullptr.
const ir::TensorSInfo* TensorInfoOf(const ir::Expr& e);

enum class DimRelation { kEqual, kNotEqual, kUnknown };
// Decides a == b for two dimension expressions as far as arithmetic proves it.
DimRelation CompareDims(const ir::PrimExpr& a, const ir::PrimExpr& b);

std::optional<int64_t> ConstDim(const ir::PrimExpr& e);
// "n", "784", "n * 4"
std::string DimString(const ir::PrimExpr& e);
// "(n, 784)"
std::string ShapeString(const std::vector<ir::PrimExpr>& shape);
// R.Tensor((n, 784), "float32") style, short.
std::string SInfoString(const ir::StructInfo& s);

// True when every dimension is a constant.
bool IsStaticShape(const std::vector<ir::PrimExpr>& shape);

// Whether `value` may be bound to a variable annotated with `annotation`:
// kNotEqual when provably incompatible (rank, dtype or a dimension).
DimRelation CheckCompatible(const ir::StructInfo& annotation, const ir::StructInfo& value, std::string* why);

// The most specific struct info both `a` and `b` satisfy (the value of an if
// whose branches give them): a tensor keeps its shape only where every
// dimension is provably equal, else its rank; a dtype that differs becomes
// unknown; tuples field by field; anything else different becomes Object.
ir::StructInfo StructInfoLCA(const ir::StructInfo& a, const ir::StructInfo& b);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_STRUCT_INFO_UTIL_H_
