// tir::Schedule: loop and block transformations of one PrimFunc in block form
// (a root BlockRealize holding T.alloc_buffer's and loop nests of T.block's,
// as legalization and fuse-tir produce it), recorded in a replayable trace.
//
// Handles. A BlockRV names a block (block names are unique in a function; new
// blocks get fresh names); a LoopRV names a loop by its loop variable. Both
// stay valid while the block / loop exists: a loop replaced by split or fuse
// is gone and using its handle fails with kInvalidArgument.
//
// Every primitive first checks its preconditions and returns a Status that
// says why it refuses (kInvalidArgument for misuse such as loops not in one
// nest; kFailedPrecondition when the program does not allow it, e.g. inlining
// a reduction). A refused primitive leaves the function and the trace as they
// were. An applied primitive never changes what the function computes (up to
// the order of floating-point reductions for reorder).
//
// Trace: every applied primitive is appended to trace() with its inputs
// (handles, ints, strings) and outputs (new handles). Trace::ToString prints
// Python-like text (`l1, l2 = sch.split(l0, factors=[None, 16])`); Replay
// applies a trace to an unscheduled function and gives a structurally equal
// result.
//
// Sampling. sample_* instructions make a random choice (from the schedule's
// seeded generator) and record it as the instruction's decision; their
// results are ExprRVs / LoopRVs that later primitives take (split's factors,
// compute_at's loop), so a trace replayed with other decisions applies them
// all the way down. Replay with the recorded decisions is deterministic;
// ReplayWithNewDecisions(seed) is deterministic for a seed. A recorded
// decision that does not fit the function it is replayed on (a tile that does
// not divide the loop, an index past the candidates) fails with
// kFailedPrecondition naming the instruction; nothing crashes.
//
// Not thread-safe (one Schedule per thread); the PrimFuncs it hands out are
// immutable and may be shared.
#ifndef KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_H_
#define KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_H_

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/trace.h"
#include "runtime/status.h"

namespace kiln {
namespace tir {



class Schedule {
 public:
  // Pre: none. Fails with kInvalidArgument when `func` is not in block form
  // (its body is not a root BlockRealize) or two blocks share a name.
  // `seed` seeds the generator of the sampling instructions.
  static Result<Schedule> Create(const ir::PrimFunc& func, uint64_t seed = 1);

  const ir::PrimFunc& func() const { return func_; }
  const ir::PrimFunc& original() const { return original_; }
  const Trace& trace() const { return trace_; }

  // ---------------------------------------------------------- lookup
  // The block named `name` (not the root).
  Result<BlockRV> GetBlock(const std::string& name);
  // The loops around `block` up to its parent block, outermost first.
  Result<std::vector<LoopRV>> GetLoops(const BlockRV& block);
  // Blocks directly under `block` (not inside a nested block), in order.
  Result<std::vector<BlockRV>> GetChildBlocks(const BlockRV& block);
  Result<std::vector<BlockRV>> GetChildBlocks(const LoopRV& loop);
  // Names for messages and tests.
  Result<std::string> BlockName(const BlockRV& block) const;

  // ---------------------------------------------------------- loops
  // Splits `loop` into len(factors) nested loops, outermost first. At most one
  // factor may be -1 (inferred: ceil(extent / product of the others)). When the
  // product exceeds the extent the blocks under the loop get a T.where
  // predicate; a product provably smaller than the extent (or not provably
  // covering a symbolic extent without an inferred factor) is refused.
  Result<std::vector<LoopRV>> Split(const LoopRV& loop, const std::vector<int64_t>& factors);
  // Fuses a chain of perfectly nested loops (each the whole body of the
  // previous one), outermost first, into one loop.
  Result<LoopRV> Fuse(const std::vector<LoopRV>& loops);
  // Reorders loops of one perfect nest: the given loops take, in the order
  // given, the positions the given loops occupy.
  Status Reorder(const std::vector<LoopRV>& loops);
  // Loop kinds. Parallel and vectorize refuse a loop that a reduction iteration
  // variable of a block under it depends on, and a loop that is not serial.
  Status Parallel(const LoopRV& loop);
  Status Vectorize(const LoopRV& loop);
  Status Unroll(const LoopRV& loop);
  // Sets annotation `key` of the root block to the integer `value` holds (a
  // sampled knob of the default schedules, compiler/tir/schedule_knobs.h,
  // read when the function is lowered). Changes no loop or computation.
  Status Annotate(const std::string& key, const ExprRV& value);
  // Splits each loop by its factor (a tile size; the outer extent is
  // inferred) and reorders to all outer loops then all inner loops. Returns
  // outers then inners. Recorded as its splits and reorder.
  Result<std::vector<LoopRV>> Tile(const std::vector<LoopRV>& loops, const std::vector<int64_t>& tile_sizes);

  // ---------------------------------------------------------- sampling
  // `n` factors of the static extent of `loop` whose product is the extent
  // (a perfect tiling), the innermost at most `max_innermost_factor`;
  // uniformly random innermost among the divisors allowed, then each prime
  // factor of the rest to a uniformly random outer position.
  Result<std::vector<ExprRV>> SamplePerfectTile(const LoopRV& loop, int n, int64_t max_innermost_factor);
  // One of `candidates`, candidate k with probability probs[k] / sum(probs).
  Result<ExprRV> SampleCategorical(const std::vector<int64_t>& candidates, const std::vector<double>& probs);
  // A place to compute `block`: kRootLoopId (stay), kInlineLoopId (when
  // compute_inline applies) or a new handle of a loop where compute_at
  // applies, uniformly among those legal now.
  Result<LoopRV> SampleComputeLocation(const BlockRV& block);
  // The value of a sampled integer.
  Result<int64_t> Get(const ExprRV& v) const;
  // split with sampled factors (recorded as split); recorded with the handles, so a replay with
  // new decisions splits by the new values.
  Result<std::vector<LoopRV>> SplitSampled(const LoopRV& loop, const std::vector<ExprRV>& factors);

  // ---------------------------------------------------------- blocks
  // Inlines a spatial block that writes one intermediate buffer B[v0, v1...]
  // (its iteration variables, each once) into every reader, then removes it.
  Status ComputeInline(const BlockRV& block);
  // Inlines a spatial consumer block that reads one intermediate buffer
  // B[v0, v1...] into that buffer's only producer, which then writes the
  // consumer's output.
  Status ReverseComputeInline(const BlockRV& block);
  // Moves producer `block` under `loop` (a loop of its consumers), computing
  // only the region of its output the blocks under `loop` read. The handles
  // of sample_compute_location's non-loop places: kRootLoopId leaves the block
  // where it is, kInlineLoopId inlines it.
  Status ComputeAt(const BlockRV& block, const LoopRV& loop);
  // Moves consumer `block` under `loop` (a loop of its producer), consuming the
  // region the blocks under `loop` write.
  Status ReverseComputeAt(const BlockRV& block, const LoopRV& loop);
  // A new block copying the read buffer `read_index` of `block` into a new
  // buffer of `scope`; `block` then reads the copy. Returns the copy block.
  Result<BlockRV> CacheRead(const BlockRV& block, int read_index, const std::string& scope);
  // `block` writes a new buffer of `scope` instead of its write buffer
  // `write_index`; a new block copies it back. Returns the copy block.
  Result<BlockRV> CacheWrite(const BlockRV& block, int write_index, const std::string& scope);
  // Hoists the init of a reduction block out of `loop` into a new block
  // "<name>_init" placed before `loop`. Returns the init block.
  Result<BlockRV> DecomposeReduction(const BlockRV& block, const LoopRV& loop);
  // Re-lays-out the buffer `buffer_name` (an allocated buffer or a parameter;
  // for a parameter the function's signature changes) by an injective index
  // map; every access is rewritten.
  Status TransformLayout(const std::string& buffer_name, const IndexMap& map);
  // Pads the innermost dimension of the allocated buffer `buffer_name` (static
  // shape) so that the stride of dimension `axis` is `offset` modulo `factor`.
  Status StorageAlign(const std::string& buffer_name, int axis, int64_t factor, int64_t offset);

  // Applies `trace` (recorded on a function structurally equal to `func`) to
  // `func`.
  static Result<Schedule> Replay(const ir::PrimFunc& func, const Trace& trace);
  // Applies `trace` with every sampling instruction choosing anew from a
  // generator seeded by `seed`; the new decisions are in the result's trace.
  static Result<Schedule> ReplayWithNewDecisions(const ir::PrimFunc& func, const Trace& trace, uint64_t seed);
  // Applies `trace` keeping the decisions it records and sampling (from
  // `seed`) where a sampling instruction has none: a user-written space
  // (compiler/tune/space_text.h) with some decisions fixed by hand. On
  // failure, `*failed_at` (when non-null) is the index of the instruction
  // that failed, or the trace's size when no instruction did.
  static Result<Schedule> ReplayFillingDecisions(const ir::PrimFunc& func, const Trace& trace, uint64_t seed,
                                                 size_t* failed_at = nullptr);

 private:
  Schedule() = default;
  BlockRV NewBlockRV(const std::string& name);
  LoopRV NewLoopRV(const ir::Var& var);
  ExprRV NewExprRV(int64_t value);
  static Result<Schedule> ReplayImpl(const ir::PrimFunc& func, const Trace& trace, bool keep_decisions,
                                     uint64_t seed, bool keep_given = false, size_t* failed_at = nullptr);
  // Records a sampling instruction with its outputs and decision.
  void RecordSample(const std::string& name, std::vector<TraceArg> inputs, std::vector<std::string> keywords,
                    std::vector<int64_t> outputs, Instruction::Output kind, std::vector<int64_t> decision);
  // Loop variables where compute_at(block) applies now, in pre-order, and
  // whether compute_inline applies.
  Result<std::vector<ir::Var>> ComputeLocations(const BlockRV& block, bool* can_inline);
  Result<std::string> Resolve(const BlockRV& b) const;
  Result<ir::Var> Resolve(const LoopRV& l) const;
  const ir::Stmt& body() const { return func_->body; }
  void SetBody(const ir::Stmt& body);
  void Record(const std::string& name, std::vector<TraceArg> inputs, std::vector<std::string> keywords,
              const std::vector<BlockRV>& out_blocks, const std::vector<LoopRV>& out_loops);
  // Applies one recorded instruction with inputs already mapped to this
  // schedule's handles; appends the new handles to `outputs`. A sampling
  // instruction takes its decision from `inst` when `keep_decision`.
  Status Apply(const Instruction& inst, bool keep_decision, std::vector<int64_t>* outputs);

  ir::PrimFunc original_;
  ir::PrimFunc func_;
  Trace trace_;
  int64_t next_id_ = 0;
  std::map<int64_t, std::string> blocks_;  // BlockRV id -> block name
  std::map<int64_t, ir::Var> loops_;       // LoopRV id -> loop variable
  std::map<int64_t, int64_t> values_;      // ExprRV id -> value
  std::mt19937_64 rng_;
  // Set by Apply while it replays a sampling instruction with its recorded
  // decision: the sampler validates and takes it instead of drawing.
  const std::vector<int64_t>* forced_decision_ = nullptr;
};

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_H_
