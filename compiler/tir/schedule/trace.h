// The trace of a tir::Schedule: the primitives applied, in order, with their
// inputs and outputs, printable as Python-like text:
//   b0 = sch.get_block("C")
//   l1, l2, l3 = sch.get_loops(b0)
//   l4, l5 = sch.split(l2, factors=[None, 16])
//   sch.vectorize(l5)
//   v6, v7 = sch.sample_perfect_tile(l3, n=2, max_innermost_factor=16, decision=[8, 16])
// Handles (random variables, "RV" as in TVM) are numbered in one sequence
// per schedule: b<id> for blocks, l<id> for loops, v<id> for integers that a
// sampling instruction chose. A sampling instruction records its decision (the
// random choice it made), so replaying the trace with the recorded decisions
// gives the same function, and replaying it with new decisions explores the
// design space the trace describes. Thread-compatible.
#ifndef KILN_COMPILER_TIR_SCHEDULE_TRACE_H_
#define KILN_COMPILER_TIR_SCHEDULE_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

struct BlockRV {
  int64_t id = -1;
};
struct LoopRV {
  int64_t id = -1;
};
// An integer chosen by a sampling instruction (a tile size, a candidate).
// (The explicit constructor keeps split(l, {-1, 4}) meaning integer factors.)
struct ExprRV {
  ExprRV() = default;
  explicit ExprRV(int64_t i) : id(i) {}
  int64_t id = -1;
};

// sample_compute_location's two locations that are not loops: leave the block
// where it is (TVM's "root") or inline it into its consumers. ComputeAt takes
// them like any loop handle.
constexpr int64_t kRootLoopId = -1;
constexpr int64_t kInlineLoopId = -2;

// An index map for transform_layout: `lambda src...: (dst...)`.
struct IndexMap {
  std::vector<ir::Var> src;
  std::vector<ir::PrimExpr> dst;
};

// One input of an instruction.
struct TraceArg {
  // kExprs: a list whose entries are ExprRV ids (split's sampled factors).
  enum class Kind : uint8_t { kBlock, kLoop, kInt, kInts, kString, kIndexMap, kExprs, kFloats } kind = Kind::kInt;
  int64_t i = 0;                    // handle id or int
  std::vector<int64_t> ints;        // kInts (-1 prints as None), kExprs (ids)
  std::vector<double> floats;       // kFloats (sample_categorical's probabilities)
  std::string s;                    // kString
  std::vector<ir::Var> map_src;     // kIndexMap
  std::vector<ir::PrimExpr> map_dst;

  static TraceArg Block(BlockRV b) { TraceArg a; a.kind = Kind::kBlock; a.i = b.id; return a; }
  static TraceArg Loop(LoopRV l) { TraceArg a; a.kind = Kind::kLoop; a.i = l.id; return a; }
  static TraceArg Int(int64_t v) { TraceArg a; a.kind = Kind::kInt; a.i = v; return a; }
  static TraceArg Ints(std::vector<int64_t> v) { TraceArg a; a.kind = Kind::kInts; a.ints = std::move(v); return a; }
  static TraceArg Str(std::string v) { TraceArg a; a.kind = Kind::kString; a.s = std::move(v); return a; }
  static TraceArg Exprs(const std::vector<ExprRV>& v) {
    TraceArg a; a.kind = Kind::kExprs;
    for (const auto& e : v) a.ints.push_back(e.id);
    return a;
  }
  static TraceArg Floats(std::vector<double> v) { TraceArg a; a.kind = Kind::kFloats; a.floats = std::move(v); return a; }
};

struct Instruction {
  std::string name;  // the primitive: "split", "compute_at", ...
  std::vector<TraceArg> inputs;
  enum class Output : uint8_t { kBlock, kLoop, kExpr };
  // New handles, in order, with their kinds.
  std::vector<int64_t> outputs;
  std::vector<Output> output_kinds;
  // How the inputs print ("factors=" before a list, ...): keyword names per
  // input position, empty for positional.
  std::vector<std::string> keywords;
  // A sampling instruction's decision: the tile sizes of sample_perfect_tile,
  // the candidate index of sample_categorical, the location index of
  // sample_compute_location (kRootLoopId, kInlineLoopId or the k-th legal
  // loop). Empty for every other instruction.
  std::vector<int64_t> decision;
  bool is_sampling() const { return name.compare(0, 7, "sample_") == 0; }
};

class Trace {
 public:
  const std::vector<Instruction>& instructions() const { return insts_; }
  void Append(Instruction inst) { insts_.push_back(std::move(inst)); }
  // Pre: not empty.
  void SetLast(Instruction inst) { insts_.back() = std::move(inst); }
  // Pre: `index` < size. For mutation and tests: the same trace with one
  // instruction's decision replaced.
  void SetDecision(size_t index, std::vector<int64_t> decision) { insts_[index].decision = std::move(decision); }
  // One line per instruction, each ending in '\n'.
  std::string ToString() const;

 private:
  std::vector<Instruction> insts_;
};

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SCHEDULE_TRACE_H_
