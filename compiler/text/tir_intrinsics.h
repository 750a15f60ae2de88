// The TIR intrinsics the text form knows by name: `T.exp(x)` is a CallNode
// with op "exp" whose dtype is its first argument's. One table for the parser
// and the printer.
#ifndef KILN_COMPILER_TEXT_TIR_INTRINSICS_H_
#define KILN_COMPILER_TEXT_TIR_INTRINSICS_H_

#include <string>

namespace kiln {
namespace text {

struct TirIntrinsic {
  const char* name;  // after "T."
  const char* op;    // CallNode::op
  int arity;
  bool predicate = false;  // the result is bool (T.isnan), not the argument's dtype
};

// nullptr when unknown.
const TirIntrinsic* FindTirIntrinsic(const std::string& name);
const TirIntrinsic* FindTirIntrinsicByOp(const std::string& op);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_TIR_INTRINSICS_H_
