// Tokenizer for the Python subset that TVMScript uses.
//
// Produces NAME, INT, FLOAT, STRING and OP tokens plus Python's layout tokens:
// NEWLINE at the end of each logical line, INDENT/DEDENT when the indentation
// of a logical line grows or shrinks. Blank lines and comments produce nothing;
// newlines inside (), [] and {} do not end a line. Indentation is spaces only.
//
// Comments are kept aside (line + text) because one of them carries meaning in
// TVM's output: `# with T.block("root"):` marks an implicit root block.
#ifndef KILN_COMPILER_TEXT_LEXER_H_
#define KILN_COMPILER_TEXT_LEXER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/text/source.h"
#include "runtime/status.h"

namespace kiln {
namespace text {

enum class Tok : uint8_t { kName, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEnd };

struct Token {
  Tok kind;
  std::string text;  // NAME/OP spelling; STRING: the decoded value; INT/FLOAT: spelling
  Loc loc;
  int64_t int_value = 0;
  double float_value = 0;
};

struct Comment {
  Loc loc;
  std::string text;  // without the leading '#' and surrounding spaces
};

struct TokenStream {
  std::vector<Token> tokens;  // always ends with kEnd
  std::vector<Comment> comments;
};

// Fails with a located diagnostic on a bad character, an unterminated string,
// an unbalanced bracket, tabs in indentation or an inconsistent dedent.
Result<TokenStream> Tokenize(const SourceFile& src);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_LEXER_H_
