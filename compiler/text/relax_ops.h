// The Relax operators the text form accepts as R.<name>(...) / R.nn.<name>(...).
// An unknown name is a parse error ("unknown operator R.matmull"), so typos
// are caught at the source line rather than deep in a pass.
#ifndef KILN_COMPILER_TEXT_RELAX_OPS_H_
#define KILN_COMPILER_TEXT_RELAX_OPS_H_

#include <string>

namespace kiln {
namespace text {

// `name` without the "R." prefix: "matmul", "nn.relu".
bool IsKnownRelaxOp(const std::string& name);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_RELAX_OPS_H_
