// The trace of a tir::Schedule: the primitives applied, in order, with their
// inputs and outputs, printable as Python-like text:
//   b0 = sch.get_block("C")
//   l1, l2, l3 = sch.get_loops(b0)
//   l4, l5 = sch.split(l2, factors=[None, 16])
//   sch.vectorize(l5)
// Handles (random variables, "RV" as in TVM) are numbered in one sequence
// per schedule: b<id> for blocks, l<id> for loops. Thread-compatible.
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

// An index map for transform_layout: `lambda src...: (dst...)`.
struct IndexMap {
  std::vector<ir::Var> src;
  std::vector<ir::PrimExpr> dst;
};

// One input of an instruction.
struct TraceArg {
  enum class Kind : uint8_t { kBlock, kLoop, kInt, kInts, kString, kIndexMap } kind = Kind::kInt;
  int64_t i = 0;                    // handle id or int
  std::vector<int64_t> ints;        // kInts (-1 prints as None)
  std::string s;                    // kString
  std::vector<ir::Var> map_src;     // kIndexMap
  std::vector<ir::PrimExpr> map_dst;

  static TraceArg Block(BlockRV b) { TraceArg a; a.kind = Kind::kBlock; a.i = b.id; return a; }
  static TraceArg Loop(LoopRV l) { TraceArg a; a.kind = Kind::kLoop; a.i = l.id; return a; }
  static TraceArg Int(int64_t v) { TraceArg a; a.kind = Kind::kInt; a.i = v; return a; }
  static TraceArg Ints(std::vector<int64_t> v) { TraceArg a; a.kind = Kind::kInts; a.ints = std::move(v); return a; }
  static TraceArg Str(std::string v) { TraceArg a; a.kind = Kind::kString; a.s = std::move(v); return a; }
};

struct Instruction {
  std::string name;  // the primitive: "split", "compute_at", ...
  std::vector<TraceArg> inputs;
  // New handles, in order; each is a block (true) or a loop (false).
  std::vector<int64_t> outputs;
  std::vector<bool> output_is_block;
  // How the inputs print ("factors=" before a list, ...): keyword names per
  // input position, empty for positional.
  std::vector<std::string> keywords;
};

class Trace {
 public:
  const std::vector<Instruction>& instructions() const { return insts_; }
  void Append(Instruction inst) { insts_.push_back(std::move(inst)); }
  // One line per instruction, each ending in '\n'.
  std::string ToString() const;

 private:
  std::vector<Instruction> insts_;
};

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SCHEDULE_TRACE_H_
