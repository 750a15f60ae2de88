// Visitor and mutator bases for TIR statements and expressions.
//
// StmtExprMutator rebuilds a tree bottom-up and returns the very same node
// when none of its children changed, so a pass that changes nothing allocates
// nothing and callers can test `same_as` / pointer equality. Subclasses
// override MutateExpr/MutateStmt, handle the kinds they care about and call the
// base implementation for the rest. Buffers are shared, never rewritten.
//
// StmtExprVisitor walks every expression and statement, children first
// visited in source order; BlockRealize visits iter values, predicate, the
// iter var domains, init and body (not the read/write regions).
//
// Both are thread-compatible (one instance per thread).
#ifndef KILN_COMPILER_TIR_STMT_FUNCTOR_H_
#define KILN_COMPILER_TIR_STMT_FUNCTOR_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

class StmtExprMutator {
 public:
  virtual ~StmtExprMutator() = default;
  // Null in, null out.
  virtual ir::PrimExpr MutateExpr(const ir::PrimExpr& e);
  virtual ir::Stmt MutateStmt(const ir::Stmt& s);

 protected:
  // Mutates each element; true when any changed.
  bool MutateExprs(const std::vector<ir::PrimExpr>& in, std::vector<ir::PrimExpr>* out);
};

class StmtExprVisitor {
 public:
  virtual ~StmtExprVisitor() = default;
  virtual void VisitExpr(const ir::PrimExpr& e);
  virtual void VisitStmt(const ir::Stmt& s);
};

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_STMT_FUNCTOR_H_
