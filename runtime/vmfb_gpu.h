// The GPU kernel segment of a .vmfb (schemas/vmfb.fbs GpuModule; written by
// kiln-compile --target=cuda): its checks, shared by the loader and the CUDA
// launcher (runtime/cuda/gpu_linker.h).
//
// ValidateGpuModules runs at every load of a file that has GPU modules, before
// anything reaches a device, so a damaged or mismatched file fails with a
// message naming the kernel, never inside the driver:
//   - the format is "ptx" (kUnimplemented otherwise) and the arch is sm_XY;
//   - the PTX is there, and its `.target` is the module's arch (kDataLoss);
//   - every kernel's `.entry` is in the PTX with as many parameters as the
//     launch table gives it (kDataLoss naming the kernel);
//   - every kernel function implements a Kernel callable of the same name
//     with the same argument count, and its parameters name arguments,
//     dimensions and workspaces that exist (kDataLoss naming the function);
//   - every grid and workspace expression parses (kDataLoss) and every
//     block size is in [1, 1024].
//
// Thread-safe: pure functions.
#ifndef KILN_RUNTIME_VMFB_GPU_H_
#define KILN_RUNTIME_VMFB_GPU_H_

#include <string>

#include "runtime/program.h"
#include "runtime/status.h"

namespace kiln {

// Program::target.triple of a file written by kiln-compile --target=cuda
// (readable with PeekVmfbInfo, before loading).
constexpr const char* kGpuTargetTriple = "nvptx64-nvidia-cuda";

Status ValidateGpuModules(const Program& program);

// Which image of `module` a device of compute capability major.minor loads:
// the cubin where it runs there (same major, minor at least the cubin's:
// cubins are compatible forward within a major version only), else the PTX
// through the driver's JIT (forward to any newer device), else none.
enum class GpuImage { kCubin, kPtx, kNone };
GpuImage ChooseGpuImage(const ProgramGpuModule& module, int cc_major, int cc_minor);

// "GPU module 0 (ptx, sm_80): 5 kernel functions, 7 kernels, 12345 bytes of PTX".
std::string DescribeGpuModule(const ProgramGpuModule& module, size_t index);

}  // namespace kiln

#endif  // KILN_RUNTIME_VMFB_GPU_H_
