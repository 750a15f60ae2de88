// Whole-model tuning's tasks: the distinct kernels of a compiled model.
// The kernels are the PrimFuncs that lower-tir would schedule
// (driver::LowerModuleToKernels: after fusion, in block form). Kernels that
// are the same workload (the database's structural hash, database.h) are one
// task; its weight is how many times the model calls them: the call sites
// in the Relax functions (R.call_tir and friends name the PrimFunc), each
// site counted once per call of the Relax function that holds it (a public
// function is called once; a private one as often as its callers call it;
// a loop body's site counts once, as the trip count is not known).
//
// A task the runner cannot measure is kept with the reason it is skipped:
// a parameter that is not a float32 buffer (the runner fills float32 inputs
// only) or a buffer with a symbolic shape (the runner allocates static
// shapes; fix the dimension with --dim to tune such a kernel).
#ifndef KILN_COMPILER_TUNE_TASKS_H_
#define KILN_COMPILER_TUNE_TASKS_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace kiln {
namespace tune {

struct TuneTask {
  std::string name;                  // the first kernel's name
  std::vector<std::string> kernels;  // every kernel of this workload, in module order
  ir::PrimFunc func;                 // the first kernel
  std::string workload;              // Database::WorkloadHash
  int calls = 0;                     // the weight
  std::string skip_reason;           // empty: tunable
};

// The tasks of `kernels` in module order of their first kernel. PrimFuncs
// the Relax functions never call are left out.
std::vector<TuneTask> ExtractTasks(const ir::IRModule& kernels);

// Why the runner cannot measure `func`, or "" when it can.
std::string UntunableReason(const ir::PrimFunc& func);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TASKS_H_
