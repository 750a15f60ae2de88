#include "compiler/text/lexer.h"

#include <gtest/gtest.h>

namespace kiln {
namespace text {
namespace {

std::vector<Tok> Kinds(const TokenStream& t) {
  std::vector<Tok> k;
  for (const auto& x : t.tokens) k.push_back(x.kind);
  return k;
}

TEST(LexerTest, IndentDedentAndBrackets) {
  SourceFile src("def f(a,\n      b):\n    x = 1  # note\n\n    return x\ny = 2.5\n", "t.py");
  Result<TokenStream> r = Tokenize(src);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<Tok> k = Kinds(*r);
  // def f ( a , b ) : NL INDENT x = 1 NL return x NL DEDENT y = 2.5 NL END
  std::vector<Tok> want = {Tok::kName, Tok::kName, Tok::kOp,   Tok::kName,    Tok::kOp,     Tok::kName,
                           Tok::kOp,   Tok::kOp,   Tok::kNewline, Tok::kIndent, Tok::kName, Tok::kOp,
                           Tok::kInt,  Tok::kNewline, Tok::kName, Tok::kName,   Tok::kNewline, Tok::kDedent,
                           Tok::kName, Tok::kOp,   Tok::kFloat, Tok::kNewline, Tok::kEnd};
  EXPECT_EQ(k, want);
  ASSERT_EQ(r->comments.size(), 1u);
  EXPECT_EQ(r->comments[0].text, "note");
  EXPECT_EQ(r->comments[0].loc.line, 3);
  EXPECT_EQ(r->tokens[20].float_value, 2.5);
}

TEST(LexerTest, StringsAndLocations) {
  SourceFile src("x = \"a\\\"b\" 'c'\n", "t.py");
  Result<TokenStream> r = Tokenize(src);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens[2].text, "a\"b");
  EXPECT_EQ(r->tokens[2].loc.col, 5);
  EXPECT_EQ(r->tokens[3].text, "c");
}

TEST(LexerTest, Errors) {
  struct Case {
    const char* src;
    const char* message;
  } cases[] = {
      {"x = (1,\n", "t.py:2:1: error: expected ')' to close '(' opened at 1:5 before the end of the file"},
      {"x = [1)\n", "t.py:1:7: error: expected ']' to close '[' opened at 1:5, got ')'"},
      {"x = 1)\n", "t.py:1:6: error: unmatched ')'"},
      {"x = \"abc\n", "t.py:1:5: error: unterminated string literal"},
      {"x = $\n", "t.py:1:5: error: unexpected character '$'"},
      {"if a:\n    x\n  y\n", "t.py:3:3: error: unindent does not match any outer indentation level"},
      {"if a:\n\tx\n", "t.py:2:1: error: tabs are not allowed in indentation"},
      {"x = 99999999999999999999\n", "t.py:1:5: error: integer literal 99999999999999999999 does not fit in 64 bits"},
  };
  for (const Case& c : cases) {
    SourceFile src(c.src, "t.py");
    Result<TokenStream> r = Tokenize(src);
    ASSERT_FALSE(r.ok()) << c.src;
    EXPECT_EQ(r.status().message().rfind(c.message, 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace text
}  // namespace kiln
