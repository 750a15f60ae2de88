// SourceFile and diagnostics of the text front end.
//
// Every parse error is an InvalidArgument Status whose message is
//   file:line:col: error: <what was expected>
//       <the source line>
//       <caret under the column>
// so a user can find the spot without opening the file.
//
// Thread-compatible value types.
#ifndef KILN_COMPILER_TEXT_SOURCE_H_
#define KILN_COMPILER_TEXT_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/span.h"
#include "runtime/status.h"

namespace kiln {
namespace text {

// A position in the source: 1-based line and column.
struct Loc {
  int line = 0;
  int col = 0;
};

class SourceFile {
 public:
  SourceFile(std::string text, std::string name);

  const std::string& text() const { return text_; }
  const std::string& name() const { return *name_; }
  // Line `line` (1-based) without its newline; "" when out of range.
  std::string Line(int line) const;
  // An IR span for `loc`, sharing this file's name.
  ir::SourceSpan Span(Loc loc) const { return ir::SourceSpan{name_, loc.line, loc.col}; }
  // The formatted error described in the header comment.
  Status Error(Loc loc, const std::string& message) const;

 private:
  std::string text_;
  std::shared_ptr<const std::string> name_;
  std::vector<size_t> line_starts_;
};

// For errors raised after parsing (normalization, legalization) whose message
// starts with "<file>:<line>:<col>: " for this file: the same message with the
// source line and a caret appended, as parse errors have them. Other statuses
// (and messages that already quote a line) come back unchanged.
Status QuoteSourceLine(const Status& s, const SourceFile& file);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_SOURCE_H_
