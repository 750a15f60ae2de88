// The fence parser, and the runner on testdata/broken.md: every block marked
// "expect: fail" must fail with its FILE:LINE, every "expect: ok" must pass.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/docs/doc_blocks.h"
#include "tests/docs/doc_runner.h"

namespace kiln {
namespace docs {
namespace {

TEST(ExtractFencedBlocksTest, InfoStringsLinesAndText) {
  std::vector<DocBlock> blocks = ExtractFencedBlocks(
      "text\n"
      "```c   run\n"
      "int main(void) { return 0; }\n"
      "```\n"
      "\n"
      "~~~~sh run\n"
      "echo '```'\n"
      "~~~\n"
      "still inside\n"
      "~~~~~\n"
      "``` not a fence ` with a backtick\n"
      "  ```relax compile\n"
      "  @I.ir_module\n"
      "    indented\n"
      "  ```\n");
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].line, 2);
  EXPECT_EQ(blocks[0].info, "c run");
  EXPECT_EQ(blocks[0].text, "int main(void) { return 0; }\n");
  EXPECT_EQ(blocks[1].line, 6);
  EXPECT_EQ(blocks[1].info, "sh run");
  EXPECT_EQ(blocks[1].text, "echo '```'\n~~~\nstill inside\n");
  EXPECT_EQ(blocks[2].line, 12);
  EXPECT_EQ(blocks[2].info, "relax compile");
  EXPECT_EQ(blocks[2].text, "@I.ir_module\n  indented\n");
  for (const DocBlock& b : blocks) EXPECT_TRUE(b.closed);
}

TEST(ExtractFencedBlocksTest, UnclosedBlockRunsToTheEnd) {
  std::vector<DocBlock> blocks = ExtractFencedBlocks("```sh run\nls\n``\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_FALSE(blocks[0].closed);
  EXPECT_EQ(blocks[0].text, "ls\n``\n");
}

TEST(ExtractFencedBlocksTest, NoBlocks) {
  EXPECT_TRUE(ExtractFencedBlocks("").empty());
  EXPECT_TRUE(ExtractFencedBlocks("`inline` and ``two``\n    ```indented four: code, not a fence\n").empty());
}

RunnerOptions TestOptions(const std::string& work) {
  RunnerOptions o;
  o.kiln_compile = KILN_COMPILE_PATH;
  std::istringstream dirs(KILN_TOOL_DIRS);
  for (std::string dir; std::getline(dirs, dir, ':');) o.path_dirs.push_back(dir);
  o.cc = KILN_DOCS_CC;
  o.cxx = KILN_DOCS_CXX;
  o.include_dir = KILN_INCLUDE_DIR;
  o.library_dir = KILN_LIBRARY_DIR;
  o.extra_flags = KILN_DOCS_FLAGS;
  o.examples_dir = KILN_EXAMPLES_DIR;
  o.work_dir = work;
  o.timeout_s = 120;
  return o;
}

TEST(DocRunnerTest, ReportsEveryBrokenBlockWithItsLine) {
  const std::string page = std::string(KILN_DOCS_TESTDATA) + "/broken.md";
  std::ifstream in(page);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<DocBlock> blocks = ExtractFencedBlocks(text.str());

  std::ostringstream log;
  int failed = RunDocs(TestOptions(KILN_DOCS_WORK "/broken"), {page}, log);
  SCOPED_TRACE(log.str());

  int expected_failures = 0, expected_ok = 0;
  for (const DocBlock& block : blocks) {
    std::string where = page + ":" + std::to_string(block.line) + ": ";
    if (block.text.find("expect: fail") != std::string::npos) {
      ++expected_failures;
      EXPECT_NE(log.str().find(where + "error: "), std::string::npos) << "not reported as failing: " << where;
    } else if (block.text.find("expect: ok") != std::string::npos) {
      ++expected_ok;
      EXPECT_NE(log.str().find(where + "ok"), std::string::npos) << "not reported as passing: " << where;
    } else {
      EXPECT_EQ(log.str().find(where), std::string::npos) << "a block that is not runnable ran: " << where;
    }
  }
  EXPECT_EQ(expected_failures, 8);
  EXPECT_EQ(expected_ok, 6);
  EXPECT_EQ(failed, expected_failures);
  // The failing step's output is shown: the compiler's complaint.
  EXPECT_NE(log.str().find("undeclared_name"), std::string::npos);
  // The bad .relax block failed in the parser (not for want of a compiler).
  EXPECT_NE(log.str().find(".relax:2:"), std::string::npos);
}

TEST(DocRunnerTest, MissingInputIsAnError) {
  std::ostringstream log;
  EXPECT_EQ(RunDocs(TestOptions(KILN_DOCS_WORK "/missing"), {"/nonexistent/guide.md"}, log), -1);
  EXPECT_NE(log.str().find("/nonexistent/guide.md: error: no such file or directory"), std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace docs
}  // namespace kiln
