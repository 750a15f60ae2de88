// Source locations of IR nodes, for diagnostics (file:line:col).
#ifndef KILN_COMPILER_IR_SPAN_H_
#define KILN_COMPILER_IR_SPAN_H_

#include <memory>
#include <string>

namespace kiln {
namespace ir {

struct SourceSpan {
  std::shared_ptr<const std::string> file;  // shared by every span of one file
  int line = 0;                              // 1-based; 0: unknown
  int col = 0;                               // 1-based
  bool known() const { return line > 0; }
  // "mlp.relax:12:5", or "" when unknown.
  std::string ToString() const {
    if (!known()) return "";
    return (file ? *file : std::string("<input>")) + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
};

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_SPAN_H_
