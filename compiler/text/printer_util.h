// Internal to compiler/text: pieces the Relax and TIR printers share.
#ifndef KILN_COMPILER_TEXT_PRINTER_UTIL_H_
#define KILN_COMPILER_TEXT_PRINTER_UTIL_H_

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace kiln {
namespace text {

// Gives every variable/buffer of a function a unique printable name. Names
// are scoped: a name is taken while its scope is open, so sibling loops may
// both be `i`, but an inner variable never shadows an outer one (which would
// make a later reference to the outer one read the inner one).
class Namer {
 public:
  Namer();
  void Push() { frames_.emplace_back(); }
  void Pop();
  // Names `key` (first call) in the innermost scope.
  std::string Define(const void* key, const std::string& hint);
  // The name of `key`; defines it in the outermost scope if it has none.
  std::string Get(const void* key, const std::string& hint);

 private:
  std::vector<std::vector<const void*>> frames_;
  std::map<const void*, std::string> names_;
  std::set<std::string> taken_;
};

// Shortest decimal that reads back as the same double ("0.5", "1e-05", "3").
std::string FloatRepr(double v);
std::string Quote(const std::string& s);
std::string AttrValueText(const ir::AttrValue& v);
std::string AttrDictText(const ir::AttrMap& m);

// Prints TIR expressions and statements; shared by the PrimFunc printer and
// the Relax printer (symbolic shapes). `namer` may be null: names print as
// they are.
class TirPrinter {
 public:
  explicit TirPrinter(Namer* namer) : namer_(namer) {}

  // `ctx_int`: the dtype a bare integer literal gets when parsed at this spot.
  std::string Expr(const ir::PrimExpr& e, DType ctx_int);
  // Two operands that the parser types together (see tir_expr_builder.cc).
  void Pair(const ir::PrimExpr& a, const ir::PrimExpr& b, DType ctx_int, std::string* sa, std::string* sb);
  std::string Shape(const std::vector<ir::PrimExpr>& dims);  // "(1, n)" with int64 literals bare
  std::string VarName(const ir::Var& v);
  std::string BufferName(const ir::Buffer& b);

  void PrimFunc(const ir::PrimFuncNode& f, const std::string& name, std::ostringstream& os, int indent);

 private:
  struct Loop {
    const ir::ForNode* node;
  };
  std::string E(const ir::PrimExpr& e, DType ctx_int, int* prec);
  std::string Operand(const ir::PrimExpr& e, DType ctx_int, int min_prec);
  std::string Literal(const ir::PrimExpr& e, bool bare);
  void Stmt(const ir::Stmt& s, std::ostringstream& os, int indent);
  void Block(const ir::BlockRealizeNode& br, std::ostringstream& os, int indent);
  std::string Region(const ir::BufferRegion& r);
  std::string BufferDecl(const ir::Buffer& b, const char* fn, const std::string& first_arg);

  Namer* namer_;
  std::vector<const ir::ForNode*> loops_;
};

void Indent(std::ostringstream& os, int n);

// Every Var used in `f` that no parameter, loop, block or let binds, in order
// of first use: the symbolic variables printed as `n = T.int64()`.
std::vector<ir::Var> FreeVars(const ir::PrimFuncNode& f);
// Collects Vars of an expression in order of first use (no duplicates).
void CollectVars(const ir::PrimExpr& e, std::vector<ir::Var>* out, std::set<const ir::VarNode*>* seen);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_PRINTER_UTIL_H_
