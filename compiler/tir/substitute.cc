#include "compiler/tir/substitute.h"

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

class Substituter : public StmtExprMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  ir::PrimExpr MutateExpr(const ir::PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) {
      auto it = map_.find(v);
      return it == map_.end() ? e : it->second;
    }
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  const VarMap& map_;
};

}  // namespace

ir::PrimExpr Substitute(const ir::PrimExpr& e, const VarMap& map) {
  if (map.empty()) return e;
  return Substituter(map).MutateExpr(e);
}

ir::Stmt Substitute(const ir::Stmt& s, const VarMap& map) {
  if (map.empty()) return s;
  return Substituter(map).MutateStmt(s);
}

}  // namespace tir
}  // namespace kiln
