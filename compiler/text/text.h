// The text form of Kiln IR: the TVMScript subset that TVM prints for Relax +
// TIR modules (Python syntax; no Python runs).
//
//   # from tvm.script import ir as I
//   # from tvm.script import tir as T
//   # from tvm.script import relax as R
//
//   @I.ir_module
//   class Module:
//       @T.prim_func
//       def relu0(X: T.Buffer((1, 128), "float32"), Y: T.Buffer((1, 128), "float32")): ...
//       @R.function
//       def main(x: R.Tensor(("n", 784), dtype="float32")) -> R.Tensor(("n", 10), dtype="float32"): ...
//
// Beyond TVM's printed form the parser also reads what people write by hand
// or paste from Python: `import` lines, `@tvm.script.ir_module`, R.Tensor with
// a positional dtype, `elif`, `-> None` on a T.prim_func, T.min_value(...).
// Relax if/else is read as TVM prints it: both branches end by assigning the
// same variable, which holds the If's value afterwards; names bound inside a
// branch are local to it.
//
// Parsing fails with InvalidArgument (Unimplemented for valid TVMScript Kiln
// does not support yet) whose message is
//   file:line:col: error: <what was expected>
// followed by the source line and a caret.
//
// Printing is canonical: PrintModule(ParseModule(PrintModule(m))) ==
// PrintModule(m), and the parsed module is StructuralEqual to m.
//
// All functions are thread-safe (no shared state).
#ifndef KILN_COMPILER_TEXT_TEXT_H_
#define KILN_COMPILER_TEXT_TEXT_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace text {

// `file_name` only labels diagnostics and spans. Without a constant table, a
// metadata["relax.expr.Constant"][i] reference is an error.
Result<ir::IRModule> ParseModule(const std::string& source, const std::string& file_name);
// metadata["relax.expr.Constant"][i] is entry i of `constants` (each a
// ir::ConstantExpr, as PrintModule below returns them); the parsed module gets
// its own ConstantExpr nodes sharing the tensors' data. An index out of range
// or an entry that is not a ConstantExpr is an InvalidArgument error.
Result<ir::IRModule> ParseModule(const std::string& source, const std::string& file_name,
                                 const std::vector<ir::Expr>& constants);
// The same; *uses_constants tells whether the text refers to the table at
// all (a module TVM printed after BindParams does; most do not).
Result<ir::IRModule> ParseModule(const std::string& source, const std::string& file_name,
                                 const std::vector<ir::Expr>& constants, bool* uses_constants);
// Reads `path` (NotFound when it cannot be read) and parses it.
Result<ir::IRModule> ParseModuleFile(const std::string& path);
Result<ir::IRModule> ParseModuleFile(const std::string& path, const std::vector<ir::Expr>& constants);

// Constants print the way TVM prints them: a scalar without a name inline as
// R.const(1.5, "float32"); every other ConstantExpr (a tensor, or a weight bound
// to a parameter name) as metadata["relax.expr.Constant"][i], its data kept out
// of the text. `constants` (cleared first) receives the table, index i holding
// the i-th distinct constant in print order; ParseModule(text, name, *constants)
// reads the module back.
std::string PrintModule(const ir::IRModule& module, std::vector<ir::Expr>* constants);
// The same text; the table is dropped (a closing comment says so when the
// text refers to it), so the text alone does not parse back if it has any
// metadata reference.
std::string PrintModule(const ir::IRModule& module);
// "n * 4 + 1"; integer literals of the expression's own context print bare.
std::string PrintPrimExpr(const ir::PrimExpr& e);
// R.Tensor((n, 784), dtype="float32")
std::string PrintStructInfo(const ir::StructInfo& s);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_TEXT_H_
