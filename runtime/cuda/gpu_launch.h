// The host side of one call of a GPU kernel function (runtime/program.h
// ProgramGpuFunction, from the .vmfb's GPU segment): from the arguments the
// bytecode passes (tensors and ints), the value of every kernel parameter,
// the bytes of each workspace and each kernel's grid. No driver is needed, so
// this is tested on machines without a GPU; gpu_linker.h launches the plan.
//
// Errors (kInvalidArgument, naming the function): a wrong argument count, a
// scalar where a buffer is expected (or the reverse), a dimension past a
// tensor's rank, a grid that does not evaluate or exceeds 2^31-1 blocks.
//
// Thread-safe: a pure function.
#ifndef KILN_RUNTIME_CUDA_GPU_LAUNCH_H_
#define KILN_RUNTIME_CUDA_GPU_LAUNCH_H_

#include <cstdint>
#include <vector>

#include <dlpack/dlpack.h>

#include "runtime/any.h"
#include "runtime/program.h"
#include "runtime/span.h"
#include "runtime/status.h"

namespace kiln {
namespace cuda {

struct GpuLaunchPlan {
  // One 8-byte value per kernel parameter (a device address or an int64),
  // in PTX parameter order; workspace slots hold 0 until the launcher fills
  // them with the address of workspace `workspace_slots[i].second`.
  std::vector<uint64_t> values;
  std::vector<std::pair<size_t, int32_t>> workspace_slots;  // (param index, workspace)
  std::vector<uint64_t> workspace_bytes;                    // by workspace
  std::vector<uint32_t> grids;                              // by kernel; 0: nothing to launch
};

Result<GpuLaunchPlan> PlanGpuLaunch(const ProgramGpuFunction& function, Span<const Any> args);

// Every tensor the kernels read as a buffer is in memory of `device` (or
// managed memory): a host tensor there would fault on the GPU, so it is
// refused first (kInvalidArgument: "GPU kernel function 'f': argument 1 is
// on cpu; its kernels read memory of cuda:0").
Status CheckGpuArgumentDevices(const ProgramGpuFunction& function, Span<const Any> args, DLDevice device);

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_GPU_LAUNCH_H_
