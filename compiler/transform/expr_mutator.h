// ExprMutator: the rebuilding walk over a Relax function shared by the
// transform passes. Each Visit* returns the same node when nothing below it
// changed (unchanged subtrees are shared with the input module).
//
// Rebuilt nodes keep the span and the struct_info of the node they replace;
// a pass that changes types re-runs normalization (InferStructInfo) on its
// result.
//
// Variables: a binding's variable is kept unless its annotation (or
// match_cast struct info) changes under VisitStructInfo, or `copy_vars_` is
// set; a replaced variable is recorded in `var_remap_`, and every use of a
// key of `var_remap_` becomes the mapped expression.
//
// Thread-compatible: one instance per walk.
#ifndef KILN_COMPILER_TRANSFORM_EXPR_MUTATOR_H_
#define KILN_COMPILER_TRANSFORM_EXPR_MUTATOR_H_

#include <unordered_map>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/relax/infer_struct_info.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;

  virtual ir::Function VisitFunction(const ir::Function& f);
  virtual ir::Expr VisitExpr(const ir::Expr& e);
  // A block's bindings, appended to `out` (a binding may become zero or
  // several bindings).
  virtual void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out);
  virtual ir::BindingBlock VisitBlock(const ir::BindingBlock& block);
  // Struct info and shape values: identity unless a pass substitutes.
  virtual ir::StructInfo VisitStructInfo(const ir::StructInfo& s) { return s; }
  virtual ir::PrimExpr VisitPrimExpr(const ir::PrimExpr& e) { return e; }

 protected:
  // The variable defined by a binding or a parameter, renewed if its
  // annotation changes; records the remap.
  ir::RVar VisitVarDef(const ir::RVar& v, const ir::StructInfo& new_annotation);
  // Applies VisitStructInfo to every struct info inside `s` (tuple fields,
  // function params) through VisitPrimExpr on shapes; helper for passes
  // that substitute symbolic variables.
  ir::StructInfo MapShapes(const ir::StructInfo& s);
  std::vector<ir::Expr> VisitList(const std::vector<ir::Expr>& xs, bool* changed);

  std::unordered_map<const ir::VarExpr*, ir::Expr> var_remap_;
  bool copy_vars_ = false;
};

// Runs a fresh `Mutator` (an ExprMutator) over every Relax function of
// `mod`. With `renormalize`, a module in which anything changed gets its
// struct info inferred again (for passes that create new expressions).
template <typename Mutator>
Result<ir::IRModule> MutateFunctions(const ir::IRModule& mod, bool renormalize) {
  ir::IRModule out = mod;
  bool changed = false;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    Mutator m;
    ir::Function f = m.VisitFunction(e.relax);
    changed |= f != e.relax;
    e.relax = f;
  }
  if (!changed || !renormalize) return out;
  return relax::InferStructInfo(out);
}

// Copies span and struct_info from `old` onto the new node `e`.
ir::Expr WithInfoOf(ir::Expr e, const ir::Expr& old);

// True when a binding's value has no side effect and may be dropped or
// shared: variables, constants, tuples, shapes, prim values, calls of
// registered operators including call_tir (not call_packed,
// call_dps_packed, packed functions or Relax functions, whose effects Kiln
// does not know).
bool IsPureValue(const ir::Expr& e);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_EXPR_MUTATOR_H_
