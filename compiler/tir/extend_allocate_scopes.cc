#include "compiler/tir/extend_allocate_scopes.h"

#include <memory>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

class Extender : public StmtExprMutator {
 public:
  ir::Stmt MutateStmt(const ir::Stmt& s) override {
    const auto* seq = ir::As<ir::SeqStmtNode>(s);
    if (!seq) return StmtExprMutator::MutateStmt(s);
    // Children first, then fold trailing statements into Allocates, from the
    // back so nested Allocates each take what follows them.
    std::vector<ir::Stmt> items;
    bool changed = false;
    for (const auto& x : seq->seq) {
      ir::Stmt y = MutateStmt(x);
      changed |= y != x;
      // A sequence nested in a sequence prints as one flat list, which parses
      // back flat: splice it so the Allocates in it can take what follows.
      if (const auto* inner = ir::As<ir::SeqStmtNode>(y)) {
        items.insert(items.end(), inner->seq.begin(), inner->seq.end());
        changed = true;
      } else {
        items.push_back(y);
      }
    }
    for (size_t i = items.size(); i-- > 0;) {
      // `held` keeps the Allocate alive past items.resize(i): items may be its
      // only owner (one spliced out of a rewritten inner sequence).
      ir::Stmt held = items[i];
      const auto* alloc = ir::As<ir::AllocateNode>(held);
      if (!alloc || i + 1 == items.size()) continue;
      std::vector<ir::Stmt> body{alloc->body};
      body.insert(body.end(), items.begin() + i + 1, items.end());
      items.resize(i);
      // The new body may itself be seq(Allocate(...), moved statements) when
      // the Allocate's body was another Allocate: extend it in turn, so the
      // moved statements reach the innermost scope.
      items.push_back(std::make_shared<ir::AllocateNode>(alloc->buffer, MutateStmt(ir::Seq(body))));
      changed = true;
    }
    if (!changed) return s;
    return ir::Seq(items);
  }
};

}  // namespace

ir::PrimFunc ExtendAllocateScopes(const ir::PrimFunc& func) {
  Extender e;
  ir::Stmt body = e.MutateStmt(func->body);
  if (body == func->body) return func;
  auto out = std::make_shared<ir::PrimFuncNode>(*func);
  out->body = body;
  return out;
}

}  // namespace tir
}  // namespace kiln
