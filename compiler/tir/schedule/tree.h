// Internal helpers of tir::Schedule: finding blocks and loops with their
// ancestors, replacing or removing a statement, collecting accesses.
#ifndef KILN_COMPILER_TIR_SCHEDULE_TREE_H_
#define KILN_COMPILER_TIR_SCHEDULE_TREE_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {
namespace sched {

// A statement and the statements around it, from the function body (first)
// down to its parent (last).
struct Site {
  ir::Stmt stmt;
  std::vector<ir::Stmt> ancestors;
  bool found() const { return stmt != nullptr; }
};

Site FindBlock(const ir::Stmt& root, const std::string& name);
Site FindLoop(const ir::Stmt& root, const ir::VarNode* loop_var);

// Every BlockRealize under `root` (root included when it is one), pre-order.
std::vector<ir::Stmt> CollectBlocks(const ir::Stmt& root);
// The BlockRealizes under `s` not nested in another block below `s`.
std::vector<ir::Stmt> ChildBlocks(const ir::Stmt& s);

// Replaces the node `target` (by identity) with `replacement`. A null
// replacement removes it; a For, IfThenElse or non-root BlockRealize whose body
// becomes empty is removed too.
ir::Stmt Replace(const ir::Stmt& root, const ir::StmtNode* target, const ir::Stmt& replacement);

// Rewrites every statement for which `fn` returns non-null (not descending
// into the replacement).
ir::Stmt RewriteStmts(const ir::Stmt& root, const std::function<ir::Stmt(const ir::Stmt&)>& fn);
// Rewrites expressions bottom-up: `fn` sees each expression after its
// children were rewritten and returns it or a replacement.
ir::Stmt RewriteExprs(const ir::Stmt& root, const std::function<ir::PrimExpr(const ir::PrimExpr&)>& fn);

// Buffers (by data handle) a block's init and body load / store, not looking
// into nested blocks.
struct Accesses {
  std::vector<ir::Buffer> reads, writes;  // first-use order, no duplicates
  std::vector<const ir::BufferLoadNode*> loads;
  std::vector<const ir::BufferStoreNode*> stores;
};
Accesses BlockAccesses(const ir::Block& block);

bool Reads(const ir::Block& block, const ir::Buffer& buf);
bool Writes(const ir::Block& block, const ir::Buffer& buf);

// True when `e` mentions a variable of `vars`.
bool UsesAny(const ir::PrimExpr& e, const std::unordered_set<const ir::VarNode*>& vars);
bool UsesVar(const ir::PrimExpr& e, const ir::VarNode* var);

bool IsConstTrue(const ir::PrimExpr& e);
ir::PrimExpr True();
ir::PrimExpr And(const ir::PrimExpr& a, const ir::PrimExpr& b);  // skips constant true

// Block names in use, for fresh names.
std::string FreshBlockName(const ir::Stmt& root, const std::string& base);

// The whole-buffer region.
ir::BufferRegion FullRegion(const ir::Buffer& b);

// Recomputes the read/write regions of every block from its accesses: a
// buffer still accessed keeps its region, a newly accessed one gets the whole
// buffer, one no longer accessed is dropped.
ir::Stmt RefreshRegions(const ir::Stmt& root);

// Removes `buf` from the alloc_buffers of the block that allocates it.
ir::Stmt RemoveAlloc(const ir::Stmt& root, const ir::Buffer& buf);
// Adds `buf` to the root block's alloc_buffers (`root` is the root realize).
ir::Stmt AddRootAlloc(const ir::Stmt& root, const ir::Buffer& buf);

// Position of each block in pre-order (execution order), by name.
std::map<std::string, size_t> BlockOrder(const ir::Stmt& root);
// True when `anc` is one of site's ancestors.
bool IsAncestor(const Site& site, const ir::StmtNode* anc);
// The loop variables, iteration variables and block names of the function.
std::unordered_set<const ir::VarNode*> LocalVars(const ir::Stmt& root);
// Every variable `e` mentions.
std::unordered_set<const ir::VarNode*> VarsOf(const ir::PrimExpr& e);

}  // namespace sched
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SCHEDULE_TREE_H_
