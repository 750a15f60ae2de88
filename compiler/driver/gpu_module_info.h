// The .vmfb's GPU kernel segment (compiler/writer GpuModuleInfo) from the
// NVPTX code generator's output: PTX, and for each kernel function the launch
// table the VM needs (parameters, workspaces, grid sizes as expressions of
// the function's arguments in runtime/kernel_cost.h's grammar).
#ifndef KILN_COMPILER_DRIVER_GPU_MODULE_INFO_H_
#define KILN_COMPILER_DRIVER_GPU_MODULE_INFO_H_

#include <vector>

#include "compiler/codegen/nvptx_codegen.h"
#include "compiler/writer/vmfb_program.h"
#include "runtime/status.h"

namespace kiln {
namespace driver {

// `funcs` are the PrimFuncs BuildPtx compiled, in the same order. kInternal
// when an expression cannot be written over the arguments (a dimension no
// argument carries).
Result<compiler::GpuModuleInfo> MakeGpuModuleInfo(const codegen::PtxBuild& build,
                                                  const std::vector<ir::PrimFunc>& funcs);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_GPU_MODULE_INFO_H_
