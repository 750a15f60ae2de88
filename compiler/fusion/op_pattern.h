// Reading a PrimFunc's fusion pattern (the kinds and the attribute are in
// compiler/ir/op_pattern.h, shared with the operator table).
#ifndef KILN_COMPILER_FUSION_OP_PATTERN_H_
#define KILN_COMPILER_FUSION_OP_PATTERN_H_

#include "compiler/ir/op_pattern.h"
#include "compiler/ir/tir.h"

namespace kiln {
namespace fusion {

using ir::OpPattern;
using ir::kElemWise;
using ir::kBroadcast;
using ir::kInjective;
using ir::kCommReduce;
using ir::kOutEWiseFusable;
using ir::kTuple;
using ir::kOpaque;
using ir::kOpPatternAttr;

// The kind a PrimFunc is annotated with; kOpaque when the attribute is absent,
// not an integer, or not one of the kinds above.
OpPattern GetOpPattern(const ir::PrimFunc& func);

// "elemwise", "broadcast", "injective", "comm_reduce", "out_ewise_fusable",
// "tuple", "opaque".
const char* OpPatternName(OpPattern p);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_OP_PATTERN_H_
