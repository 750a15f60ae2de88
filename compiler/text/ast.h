// The Python-subset syntax tree that TVMScript text parses into, before any
// IR is built. Nodes own their children; the tree is built once and read by
// the IR builders (relax_builder.cc, tir_builder.cc).
#ifndef KILN_COMPILER_TEXT_AST_H_
#define KILN_COMPILER_TEXT_AST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/text/source.h"

namespace kiln {
namespace text {

struct AstExpr;
using AstExprP = std::shared_ptr<const AstExpr>;

enum class AstKind : uint8_t {
  kName,       // str
  kInt,        // i
  kFloat,      // f
  kString,     // str
  kBool,       // i (0/1)
  kNone,
  kAttr,       // base.str
  kCall,       // base(items..., kwargs...)
  kSubscript,  // base[items...]
  kSlice,      // lo:hi inside a subscript: items = {lo, hi}
  kTuple,      // items
  kList,       // items
  kDict,       // items: key0, value0, key1, value1, ...
  kUnary,      // str op ("-", "+", "not"), items = {operand}
  kBinary,     // str op ("+", "*", "//", "<", "and", ...), items = {lhs, rhs}
};

struct AstExpr {
  AstKind kind;
  Loc loc;
  std::string str;
  int64_t i = 0;
  double f = 0;
  AstExprP base;
  std::vector<AstExprP> items;
  std::vector<std::pair<std::string, AstExprP>> kwargs;  // call keyword arguments in order
  std::vector<Loc> kwarg_locs;

  // "R.nn.relu" for a chain of names and attributes; "" otherwise.
  std::string DottedName() const {
    if (kind == AstKind::kName) return str;
    if (kind == AstKind::kAttr && base) {
      std::string b = base->DottedName();
      return b.empty() ? "" : b + "." + str;
    }
    return "";
  }
  const AstExpr* Kwarg(const std::string& name) const {
    for (const auto& kv : kwargs)
      if (kv.first == name) return kv.second.get();
    return nullptr;
  }
};

struct AstStmt;
using AstStmtP = std::shared_ptr<const AstStmt>;

// kImport: `import tvm` / `from tvm.script import relax as R`, accepted (and
// ignored) at the top of a file so that TVMScript pasted from Python parses.
enum class StmtKind : uint8_t { kExpr, kAssign, kReturn, kFor, kWith, kIf, kDef, kClass, kPass, kImport };

struct AstParam {
  std::string name;
  Loc loc;
  AstExprP annotation;  // may be null
};

struct AstStmt {
  StmtKind kind;
  Loc loc;
  int end_line = 0;                  // last line of a compound statement's body
  std::vector<AstExprP> decorators;  // def/class
  std::string name;                  // def/class
  std::vector<AstParam> params;      // def
  AstExprP returns;                  // def return annotation, may be null
  AstExprP target;                   // assign lhs, for target, with `as` target (may be null)
  AstExprP annotation;               // assign annotation, may be null
  AstExprP value;                    // assign rhs, return value, expr, for iterable, with item, if condition
  std::vector<AstStmtP> body;
  std::vector<AstStmtP> orelse;      // if: the else branch (an elif is one nested if)
};

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_AST_H_
