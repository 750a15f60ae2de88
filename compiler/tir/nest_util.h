// Small helpers the pattern-matching schedules (matmul_schedule,
// conv_schedule) share for reading lowered TIR: constants, loop nests, and
// which buffers a statement loads and stores.
#ifndef KILN_COMPILER_TIR_NEST_UTIL_H_
#define KILN_COMPILER_TIR_NEST_UTIL_H_

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace nest {

// The value of an integer literal, or nullptr. The pointer points into `e`'s
// node, so `e` must outlive it: a temporary (`ConstInt(Simplify(x))`) would
// leave it dangling once the statement ends, which ASan caught twice; the
// deleted overload makes that a compile error (name the expression first).
const int64_t* ConstInt(const ir::PrimExpr& e);
const int64_t* ConstInt(ir::PrimExpr&& e) = delete;
// An int64 literal.
ir::PrimExpr I64(int64_t v);
// fma(a, b, c) in c's dtype: the call codegen emits as one fused multiply-add.
ir::PrimExpr Fma(ir::PrimExpr a, ir::PrimExpr b, ir::PrimExpr c);
// The first element of each `lanes`-element chunk of [0, n) (n >= lanes), the
// last moved back to end at n: its first elements are done twice, to the same
// values, instead of a masked tail.
std::vector<int64_t> ChunkStarts(int64_t n, int64_t lanes);
// A new float32 buffer of `shape` in `scope` ("global", "local"), with a
// data variable of its own (NAME_data): the scratch and tile buffers that
// the schedules allocate.
ir::Buffer Float32Buffer(const std::string& name, std::vector<ir::PrimExpr> shape, const std::string& scope);
// `f` with another body: a copy, or `f` itself when `body` is its body.
ir::PrimFunc WithBody(const ir::PrimFunc& f, ir::Stmt body);
bool IsVar(const ir::PrimExpr& e, const ir::VarNode* v);
bool IsZero(const ir::PrimExpr& e);
// A float literal 0 (either sign).
bool IsFloatZero(const ir::PrimExpr& e);
// Same node, or equal integer constants.
bool SameExtent(const ir::PrimExpr& a, const ir::PrimExpr& b);
// SameExtent, or symbolic extents the simplifier proves equal (h * w * 16
// against 16 * w * h).
bool ProvenSameExtent(const ir::PrimExpr& a, const ir::PrimExpr& b);
// Same dtype and the same static extents (false when either has a symbolic one).
bool SameStaticShape(const ir::Buffer& a, const ir::Buffer& b);
// Whether `e` reads any of `vars`.
bool Uses(const ir::PrimExpr& e, const std::unordered_set<const ir::VarNode*>& vars);
// Whether a <= b is proven for every value >= 0 of the variables they read
// (shape variables: the offsets and extents of a concatenation's pieces).
bool ProveAtMost(const ir::PrimExpr& a, const ir::PrimExpr& b);

// Loads and stores of each buffer (keyed by its data handle) in a statement.
class BufferRefs : public StmtExprVisitor {
 public:
  std::unordered_map<const ir::VarNode*, int> loads, stores;
  std::vector<const ir::BufferLoadNode*> load_nodes;
  void VisitExpr(const ir::PrimExpr& e) override;
  void VisitStmt(const ir::Stmt& s) override;
  int Refs(const ir::VarNode* v) const;
};
BufferRefs RefsOf(const ir::Stmt& s);

// Every index list with which each buffer (keyed by its data handle) is
// loaded or stored in a statement, which buffers are stored to, the stores
// themselves, and which buffers are allocated inside the statement.
class BufferAccesses : public StmtExprVisitor {
 public:
  struct Info {
    std::vector<const std::vector<ir::PrimExpr>*> indices;
    bool stored = false;
  };
  std::unordered_map<const ir::VarNode*, Info> by_buffer;
  std::unordered_set<const ir::VarNode*> allocated;
  std::vector<const ir::BufferStoreNode*> stores;
  void VisitExpr(const ir::PrimExpr& e) override;
  void VisitStmt(const ir::Stmt& s) override;
};

// Replaces every load of one buffer by an expression (indices ignored: the
// caller has checked they are the canonical ones).
class ReplaceLoads : public StmtExprMutator {
 public:
  ReplaceLoads(const ir::VarNode* data, ir::PrimExpr with) : data_(data), with_(std::move(with)) {}
  ir::PrimExpr MutateExpr(const ir::PrimExpr& e) override;

 private:
  const ir::VarNode* data_;
  ir::PrimExpr with_;
};

// The terms of a conjunction (a && b && ..., any nesting).
void Conjuncts(const ir::PrimExpr& e, std::vector<ir::PrimExpr>* out);

// Whether `cond` is a reduction's init guard over loops[first..]: a
// conjunction of `v == 0` terms, each v one of those loops' variables, that
// names every one of them of extent > 1 (a loop of extent 1 may be left out).
bool IsInitGuard(const ir::PrimExpr& cond, const std::vector<const ir::ForNode*>& loops, size_t first);

// The loops of a perfect nest, outermost first; *body gets the statement
// inside the innermost one.
std::vector<const ir::ForNode*> PeelNest(const ir::Stmt& s, ir::Stmt* body);

// `s` without the Allocates whose buffer nothing references any more (after
// a rewrite fused the intermediate away).
ir::Stmt DropDeadAllocations(const ir::Stmt& s);

// One elementwise stage fused after a kernel's output (a matmul's, a
// per-position dense layer's): D[vars] = value over a nest of the output's
// loops, reading one or more buffers of `chain` (the output and the earlier
// stages' results) at [vars]; 0 stands for the variable of a loop of extent
// 1. GELU's x * 0.5 * (1 + erf(x / sqrt 2)) reads x twice, from two stages.
struct EpilogueStage {
  std::vector<const ir::ForNode*> loops;
  ir::Buffer dst;
  ir::PrimExpr value;
  std::vector<const ir::VarNode*> reads;  // the chain buffers it loads
};
// Whether `s` is such a stage over loops of `out_loops`' extents, storing a
// compact float32 buffer outside the chain (filled into *e).
bool MatchEpilogueStage(const ir::Stmt& s, const std::unordered_set<const ir::VarNode*>& chain,
                        const std::vector<const ir::ForNode*>& out_loops, EpilogueStage* e);

}  // namespace nest
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_NEST_UTIL_H_
