// A tir::Trace as JSON, for the tuning database:
//   [{"inst":"sample_perfect_tile","in":[["l",3],["i",4],["i",64]],"kw":["loop","n","max_innermost_factor"],
//     "out":[4,5,6,7],"out_kinds":"vvvv","decision":[2,4,4,4]}, ...]
// Inputs are tagged pairs: b (block), l (loop), i (int), is (ints), s
// (string), v (sampled ints: ExprRV ids), f (floats). transform_layout's
// index maps have no JSON form yet (refused with kUnimplemented).
#ifndef KILN_COMPILER_TUNE_TRACE_JSON_H_
#define KILN_COMPILER_TUNE_TRACE_JSON_H_

#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/json.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

Result<Json> TraceToJson(const tir::Trace& trace);
// Checks the structure (tags, kinds, counts); whether the trace applies to a
// function is for Schedule::Replay to say.
Result<tir::Trace> TraceFromJson(const Json& json);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TRACE_JSON_H_
