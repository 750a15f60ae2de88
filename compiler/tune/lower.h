// The TIR lowering the compiler applies to each PrimFunc before codegen
// (driver's "lower-tir"), in two forms: with the default schedule, and for a
// function a tuning record already scheduled (block TIR out of a
// tir::Schedule), which skips the default schedule so the record's loops are
// what the code runs. The tuner measures exactly what the compiler will build.
#ifndef KILN_COMPILER_TUNE_LOWER_H_
#define KILN_COMPILER_TUNE_LOWER_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tune {

// Pre: `func` in block form or lowered. `threads` as ApplyDefaultSchedule's hint.
ir::PrimFunc LowerWithDefaultSchedule(const ir::PrimFunc& func, int threads);
// Pre: `scheduled` in block form (Schedule::func()). A function with knobs
// on its root block (a DefaultSpace point) gets the default schedule with
// those knobs and the thread hint its "threads" knob names.
ir::PrimFunc LowerScheduled(const ir::PrimFunc& scheduled);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_LOWER_H_
