// User design spaces written as text, no rebuild needed: a file of schedule
// statements in the MLC course's Python form, which is also the form
// tir::Trace::ToString prints (so a printed trace reads back as a space with
// every decision fixed):
//
//   def stochastic_schedule_mm(sch):          # optional; its body is read
//       block_C = sch.get_block("C", "mm")    # a second name is accepted, unused
//       i, j, k = sch.get_loops(block=block_C)
//       j_factors = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=64)
//       j0, j1 = sch.split(loop=j, factors=j_factors)
//       sch.reorder(i, j0, k, j1)
//       sch.vectorize(j1)
//       u = sch.sample_categorical(candidates=[0, 1], probs=[0.5, 0.5])
//       sch.decompose_reduction(block_C, k)
//       return sch                             # optional
//
// One statement per line (a call may continue over lines inside brackets),
// `#` comments. Each statement is `[names =] sch.PRIMITIVE(args)` with
// arguments by position or keyword (the names of tir::Schedule's trace):
//   get_block(name[, func_name]) -> block     get_loops(block) -> loops
//   get_child_blocks(block|loop) -> blocks    split(loop, factors) -> loops
//   fuse(loop, ...) -> loop                   reorder(loop, ...)
//   parallel(loop) vectorize(loop) unroll(loop)
//   sample_perfect_tile(loop, n, max_innermost_factor=16[, decision]) -> n ints
//   sample_categorical(candidates, probs[, decision]) -> int
//   sample_compute_location(block[, decision]) -> loop
//   compute_inline(block) reverse_compute_inline(block)
//   compute_at(block, loop) reverse_compute_at(block, loop)
//   cache_read(block, read_buffer_index, storage_scope) -> block
//   cache_write(block, write_buffer_index, storage_scope) -> block
//   decompose_reduction(block, loop) -> block
//   annotate(key, value) (value: a sampled int; records a default-schedule knob)
//   storage_align(buffer, axis, factor, offset)
// split's factors are integers (None for the one inferred) or sampled ints
// (a name bound by sample_perfect_tile, or a list of sample names), not a mix.
// `decision=` fixes a sampling instruction's choice; without it each seed
// chooses anew. ROOT and INLINE name sample_compute_location's two non-loop
// locations.
//
// Parsing checks the syntax, the primitives, the arguments' kinds and the
// number of names bound (errors quote FILE:LINE:COLUMN). Whether a statement
// applies to a given PrimFunc (a block that exists, a tile that divides) is
// for ApplyTextSpace, whose error names the statement's line too.
#ifndef KILN_COMPILER_TUNE_SPACE_TEXT_H_
#define KILN_COMPILER_TUNE_SPACE_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/schedule.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

struct TextSpace {
  std::string file;  // for messages
  // One instruction per statement; handles are numbered by the parser.
  tir::Trace trace;
  struct Pos {
    int line = 0, column = 0;
    std::string text;  // the statement as written (first line)
  };
  std::vector<Pos> where;  // per instruction
};

// Fails with kInvalidArgument "FILE:LINE:COL: ..." on a syntax error, an
// unknown primitive or keyword, an argument of the wrong kind, a name never
// bound, or a wrong number of names bound.
Result<TextSpace> ParseTextSpace(const std::string& text, const std::string& file);
// Reads and parses `path` (kNotFound when it cannot be read).
Result<TextSpace> LoadTextSpace(const std::string& path);

// One point of the space on `func`: its statements replayed in order, the
// sampling instructions without a decision choosing from `seed`
// (deterministic for a seed). The schedule's trace is the point (it replays
// with tir::Schedule::Replay). A statement that does not apply to `func`
// fails with "FILE:LINE:COL: `statement`: why".
Result<tir::Schedule> ApplyTextSpace(const ir::PrimFunc& func, const TextSpace& space, uint64_t seed);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_SPACE_TEXT_H_
