// Internal to compiler/codegen: emits the kernels of GPU-scheduled PrimFuncs
// into an LLVM module for the NVPTX target (nvptx_codegen.h has the
// contract of the generated code).
#ifndef KILN_COMPILER_CODEGEN_NVPTX_KERNEL_EMITTER_H_
#define KILN_COMPILER_CODEGEN_NVPTX_KERNEL_EMITTER_H_

#include <vector>

#include "compiler/codegen/llvm_headers.h"
#include "compiler/codegen/nvptx_codegen.h"

namespace kiln {
namespace codegen {

// `module` has the NVPTX triple and data layout set. Fills `out` with one
// GpuFunction per PrimFunc, in order.
Status EmitNvptxKernels(const std::vector<ir::PrimFunc>& funcs, llvm::Module* module, std::vector<GpuFunction>* out);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_NVPTX_KERNEL_EMITTER_H_
