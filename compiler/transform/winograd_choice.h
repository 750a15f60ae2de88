// A convolution whose better form depends on a symbolic plane size: both
// forms in the module and a run-time branch on the shape (winograd-conv2d).
//
//   y = R.nn.conv2d(x, W)
//   a = R.add(y, b); z = R.nn.relu(a)        (the elementwise epilogue)
// becomes
//   z = R.If(cond) { winograd bindings; a' = R.add(y_w, b); z_w = relu(a'); z_w }
//       else       { y_d = R.nn.conv2d(x, W); a'' = R.add(y_d, b); z_d = ...; z_d }
// with cond a shape expression (a PrimValue: no tensor is read to decide).
// The epilogue is copied into both branches so that fuse-ops fuses it into
// each branch's last kernel as it would without the branch (the output
// transform or the direct convolution); left after the If it would be a
// kernel of its own, a pass over the whole output.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_CHOICE_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_CHOICE_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/relax.h"

namespace kiln {
namespace transform {

// R.If(cond, {then_bindings; then_result}, {else_bindings; else_result}),
// each branch one dataflow block whose result (a non-dataflow variable) is
// bound last.
ir::Expr MakeShapeChoice(const ir::PrimExpr& cond, std::vector<ir::Binding> then_bindings,
                         const ir::RVar& then_result, std::vector<ir::Binding> else_bindings,
                         const ir::RVar& else_result);

// Moves into both branches of each If bound to a variable of `choices` the
// elementwise bindings after it (in its block) that read its result or
// each other and otherwise only constants and variables bound before the
// If, as long as exactly one of their results is used after them; that
// result is then what the If binds. Each branch gets its own copy (fresh
// variables, named by `fresh`). Other bindings are untouched.
ir::Function SinkEpilogueIntoChoices(const ir::Function& f, const std::set<const ir::VarExpr*>& choices,
                                     const std::function<std::string(const std::string&)>& fresh);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_CHOICE_H_
