// Pass: bind params — turn parameters of one Relax function into constants.
//
// Each tensor of `params` whose name is a parameter of `func_name` replaces
// every use of that parameter by an ir::ConstantExpr (name = the parameter's
// name, printed as metadata[...]) and leaves the signature. The tensor's dtype
// and shape are checked against the parameter's annotation; a symbolic
// dimension (n) is bound to the tensor's size and substituted through the
// whole function (other parameters, annotations, match_cast, shapes, the
// result). Parameters not in `params` stay parameters.
//
// Pre: none (the result is normalized again).
// Post: the module is normalized (InferStructInfo ran).
// Failures (kInvalidArgument, naming the function and parameter):
//   no Relax function `func_name`; a tensor name that is not a parameter
//   (the message lists the parameter names); a dtype, rank or dimension that
//   differs from the annotation ("expected float32 (n, 784), got float32[2, 10]");
//   one symbolic variable bound to two different sizes.
#ifndef KILN_COMPILER_TRANSFORM_BIND_PARAMS_H_
#define KILN_COMPILER_TRANSFORM_BIND_PARAMS_H_

#include <string>

#include "compiler/ir/module.h"
#include "compiler/params/param_file.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> BindParams(const ir::IRModule& mod, const params::ParamList& params,
                                const std::string& func_name = "main");

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_BIND_PARAMS_H_
