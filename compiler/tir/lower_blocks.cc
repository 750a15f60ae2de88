#include "compiler/tir/lower_blocks.h"

#include <memory>

#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

bool IsConstTrue(const PrimExpr& e) {
  if (!e.defined()) return true;
  const auto* imm = e.as<IntImmNode>();
  return imm != nullptr && imm->value != 0;
}

class BlockLowerer : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    const auto* br = As<BlockRealizeNode>(s);
    if (br == nullptr) return StmtExprMutator::MutateStmt(s);
    const Block& block = br->block;
    KILN_CHECK(br->iter_values.size() == block.iter_vars.size(),
               "block %s: %zu iter values for %zu iter vars", block.name.c_str(),
               br->iter_values.size(), block.iter_vars.size());
    // Inner blocks first: their iter values may mention our iter vars, which
    // the substitution below then replaces.
    Stmt body = MutateStmt(block.body);
    Stmt init = MutateStmt(block.init);

    VarMap map;
    for (size_t i = 0; i < block.iter_vars.size(); ++i) map[block.iter_vars[i].var.get()] = br->iter_values[i];
    body = Substitute(body, map);
    if (init) {
      init = Substitute(init, map);
      PrimExpr cond;
      for (size_t i = 0; i < block.iter_vars.size(); ++i) {
        const IterVar& iv = block.iter_vars[i];
        if (iv.kind != IterKind::kReduce) continue;
        PrimExpr eq = MakeBinary(TirKind::kEQ, br->iter_values[i], Substitute(iv.min, map));
        cond = cond.defined() ? MakeBinary(TirKind::kAnd, cond, eq) : eq;
      }
      Stmt guarded = cond.defined() ? std::make_shared<IfThenElseNode>(cond, init, nullptr) : init;
      body = Seq({guarded, body});
    }
    for (auto it = block.alloc_buffers.rbegin(); it != block.alloc_buffers.rend(); ++it) {
      body = std::make_shared<AllocateNode>(*it, body);
    }
    if (!IsConstTrue(br->predicate)) {
      body = std::make_shared<IfThenElseNode>(Substitute(br->predicate, map), body, nullptr);
    }
    return body;
  }
};

}  // namespace

Stmt LowerBlocks(const Stmt& body) { return BlockLowerer().MutateStmt(body); }

PrimFunc LowerBlocks(const PrimFunc& func) {
  Stmt body = LowerBlocks(func->body);
  if (body == func->body) return func;
  auto copy = std::make_shared<PrimFuncNode>(*func);
  copy->body = body;
  return copy;
}

}  // namespace tir
}  // namespace kiln
