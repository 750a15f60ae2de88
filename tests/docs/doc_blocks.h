// Fenced code blocks of a Markdown file, for tests/docs/ (the guide's
// examples are run by the test suite).
//
// ExtractFencedBlocks follows CommonMark's fences: an opening line of at
// least three backticks or tildes, indented by at most three spaces, whose
// remainder is the info string ("c run", "sh run", "relax compile", ...); the
// block ends at a line of the same character, at least as long, with nothing
// else on it. The opening fence's indentation is removed from the content
// lines. A block that is never closed runs to the end of the file and has
// closed == false.
#ifndef KILN_TESTS_DOCS_DOC_BLOCKS_H_
#define KILN_TESTS_DOCS_DOC_BLOCKS_H_

#include <string>
#include <vector>

namespace kiln {
namespace docs {

struct DocBlock {
  int line = 0;      // 1-based line of the opening fence
  std::string info;  // the info string, trimmed, runs of blanks made one space
  std::string text;  // the content, each line ending in '\n'
  bool closed = true;
};

std::vector<DocBlock> ExtractFencedBlocks(const std::string& markdown);

}  // namespace docs
}  // namespace kiln

#endif  // KILN_TESTS_DOCS_DOC_BLOCKS_H_
