// Operator pattern kinds: how the loops of a kernel relate its outputs to its
// inputs, which decides whether two kernels may be fused. The operator table
// (relax/op_registry.h) gives each operator one; legalization records it on
// the PrimFunc as the integer attribute "op_pattern"; fusion reads it. The
// numbering is TVM's (OpPatternKind), so modules printed by TVM keep their
// meaning.
//
// Ordered from most to least fusable: every element of the output depends on
// - kElemWise: the same element of each input (add of equal shapes, relu);
// - kBroadcast: one element of each input, some input dimensions fixed or
//   missing (bias add);
// - kInjective: one element of each input, any index arithmetic (transpose,
//   reshape, slicing);
// - kCommReduce: a reduction over one or more axes (sum, max);
// - kOutEWiseFusable: a reduction whose result can take an elementwise
//   epilogue but whose inputs are re-read many times (matmul, conv);
// - kTuple: a tuple of values (TVM only; Kiln never produces it);
// - kOpaque: anything else; never fused.
#ifndef KILN_COMPILER_IR_OP_PATTERN_H_
#define KILN_COMPILER_IR_OP_PATTERN_H_

namespace kiln {
namespace ir {

enum OpPattern : int {
  kElemWise = 0,
  kBroadcast = 1,
  kInjective = 2,
  kCommReduce = 3,
  kOutEWiseFusable = 4,
  kTuple = 7,
  kOpaque = 8,
};

// The PrimFunc attribute holding the kind (an int).
constexpr const char kOpPatternAttr[] = "op_pattern";

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_OP_PATTERN_H_
