// Parser from tokens to the Python-subset syntax tree (ast.h).
//
// Statements: decorators, class, def (annotated parameters, `->` result),
// with [as], for ... in, if/elif/else, return, pass, assignment with optional
// annotation and tuple targets, expression statements.
// Expressions, by increasing precedence: or, and, not, comparisons
// (< <= > >= == !=), + -, * / // %, unary - +, ** , then atoms with trailers
// (calls with keyword arguments, subscripts with slices, attributes). Atoms:
// names, numbers, strings (adjacent ones concatenate), True/False/None,
// parenthesized expressions and tuples, lists, dicts.
#ifndef KILN_COMPILER_TEXT_PY_PARSER_H_
#define KILN_COMPILER_TEXT_PY_PARSER_H_

#include <string>
#include <vector>

#include "compiler/text/ast.h"
#include "compiler/text/lexer.h"

namespace kiln {
namespace text {

// Parses a whole file. Errors carry file:line:col and say what was expected.
Result<std::vector<AstStmtP>> ParsePython(const SourceFile& src, const TokenStream& tokens);

// Parses one expression (used for quoted dimensions such as "n * 4"); the
// tree's locations are relative to `text`.
Result<AstExprP> ParsePythonExpr(const std::string& text);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_PY_PARSER_H_
