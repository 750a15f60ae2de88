// Internal to compiler/text: what the IR builders share. The syntax tree
// (ast.h) becomes Relax functions (relax_builder.cc) and TIR PrimFuncs
// (tir_builder.cc); symbolic integer expressions of both are built by
// TirExprBuilder (tir_expr_builder.cc).
#ifndef KILN_COMPILER_TEXT_BUILDER_H_
#define KILN_COMPILER_TEXT_BUILDER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/text/ast.h"
#include "compiler/text/lexer.h"

namespace kiln {
namespace text {

// What every function builder of one module knows.
struct ModuleContext {
  const SourceFile* src = nullptr;
  std::string class_name;                 // "Module": `cls = Module` is an alias of it
  std::set<std::string> function_names;   // every def of the class, for cls.f and bare f
  const std::vector<Comment>* comments = nullptr;
  // The table metadata["relax.expr.Constant"][i] indexes; null: none given.
  const std::vector<ir::Expr>* constants = nullptr;
  // Set when a metadata reference is parsed; may be null.
  bool* uses_constants = nullptr;
};

// Builds TIR expressions from the syntax tree. Names resolve through a stack of
// scopes (function, loops, blocks); buffers are looked up for subscripts.
class TirExprBuilder {
 public:
  explicit TirExprBuilder(const SourceFile& src) : src_(src) { scopes_.emplace_back(); }

  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }
  void DefineVar(const std::string& name, const ir::Var& v) { scopes_.back().vars[name] = v; }
  void DefineBuffer(const std::string& name, const ir::Buffer& b) { scopes_.back().buffers[name] = b; }
  ir::Var FindVar(const std::string& name) const;
  ir::Buffer FindBuffer(const std::string& name) const;

  // When set, unknown names become new int64 Vars defined in the outermost
  // scope (quoted dimensions of Relax parameters, "n").
  bool introduce_unknown = false;

  // `default_int`: the dtype of bare integer literals where no operand decides
  // (int64 in shapes, int32 elsewhere, as TVM does).
  Result<ir::PrimExpr> Build(const AstExpr& e, DType default_int);
  // Like Build; a bare literal becomes a literal of `want` (Y[i] = 0 stores a
  // float32 zero into a float32 buffer).
  Result<ir::PrimExpr> BuildAs(const AstExpr& e, DType want);
  // Builds a pair of operands with literal adaptation (start/stop of a range).
  Status BuildPair(const AstExpr& a, const AstExpr& b, DType default_int, ir::PrimExpr* out_a, ir::PrimExpr* out_b);
  // A shape: a tuple, list or single expression of dimensions, int64 by default.
  Result<std::vector<ir::PrimExpr>> BuildShape(const AstExpr& e);
  // A buffer region `X[vi, 0:784]` for T.reads / T.writes.
  Result<ir::BufferRegion> BuildRegion(const AstExpr& e);

  const SourceFile& src() const { return src_; }

 private:
  struct Typed {
    ir::PrimExpr e;
    bool bare = false;  // an untyped literal that adapts to the other operand
  };
  struct Scope {
    std::map<std::string, ir::Var> vars;
    std::map<std::string, ir::Buffer> buffers;
  };
  Result<Typed> B(const AstExpr& e, DType default_int);
  Result<Typed> Call(const AstExpr& e, DType default_int);
  Result<ir::PrimExpr> Load(const AstExpr& e, DType default_int);
  void Adapt(Typed* a, Typed* b) const;

  const SourceFile& src_;
  std::vector<Scope> scopes_;
};

// The extent of [lo, hi): folds literals and hi = lo + x, so that printing a
// loop as range(lo, lo + x) and parsing it back gives the same extent x.
ir::PrimExpr RangeExtent(const ir::PrimExpr& lo, const ir::PrimExpr& hi);

// "float32" from a string literal; the message names what the dtype is for.
Result<DType> DTypeFromAst(const SourceFile& src, const AstExpr& e, const std::string& what);
// If `e` is `T.int64`, `T.float32`, ... (attribute, not called), its dtype.
bool TirDTypeName(const AstExpr& e, DType* out);
// A value of R.func_attr / T.func_attr / an operator keyword.
Result<ir::AttrValue> AttrFromAst(const SourceFile& src, const AstExpr& e);
Result<ir::AttrMap> AttrDictFromAst(const SourceFile& src, const AstExpr& e);

Result<ir::Function> BuildRelaxFunction(const ModuleContext& ctx, const AstStmt& def, bool is_private);
Result<ir::PrimFunc> BuildPrimFunc(const ModuleContext& ctx, const AstStmt& def);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_BUILDER_H_
