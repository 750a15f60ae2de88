#include "compiler/text/lexer.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace text {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

char Closer(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

class Lexer {
 public:
  explicit Lexer(const SourceFile& src) : src_(src), s_(src.text()) {}

  Result<TokenStream> Run() {
    indents_.push_back(0);
    bool at_line_start = true;
    while (pos_ < s_.size()) {
      if (at_line_start && brackets_.empty()) {
        KILN_RETURN_IF_ERROR(LineStart());
        at_line_start = false;
        continue;
      }
      char c = s_[pos_];
      if (c == '\n') {
        if (brackets_.empty()) {
          if (line_has_tokens_) Push(Tok::kNewline, "\n", Here());
          line_has_tokens_ = false;
          at_line_start = true;
        }
        Advance();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        Advance();
        continue;
      }
      if (c == '\\' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') {  // explicit continuation
        Advance();
        Advance();
        continue;
      }
      if (c == '#') {
        ReadComment();
        continue;
      }
      KILN_RETURN_IF_ERROR(Token1());
    }
    if (!brackets_.empty()) {
      const Open& o = brackets_.back();
      return src_.Error(Here(), StrFormat("expected '%c' to close '%c' opened at %d:%d before the end of the file",
                                          Closer(o.c), o.c, o.loc.line, o.loc.col));
    }
    if (line_has_tokens_) Push(Tok::kNewline, "\n", Here());
    while (indents_.size() > 1) {
      indents_.pop_back();
      Push(Tok::kDedent, "", Here());
    }
    Push(Tok::kEnd, "", Here());
    return std::move(out_);
  }

 private:
  struct Open {
    char c;
    Loc loc;
  };

  Loc Here() const { return Loc{line_, col_}; }
  void Advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void Push(Tok kind, std::string text, Loc loc) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.loc = loc;
    out_.tokens.push_back(std::move(t));
    if (kind != Tok::kNewline && kind != Tok::kIndent && kind != Tok::kDedent) line_has_tokens_ = true;
  }

  void ReadComment() {
    Loc loc = Here();
    size_t begin = pos_ + 1;
    while (pos_ < s_.size() && s_[pos_] != '\n') Advance();
    std::string text = s_.substr(begin, pos_ - begin);
    size_t a = text.find_first_not_of(" \t\r");
    size_t b = text.find_last_not_of(" \t\r");
    out_.comments.push_back(Comment{loc, a == std::string::npos ? "" : text.substr(a, b - a + 1)});
  }

  // Measures the indentation of a logical line and emits INDENT/DEDENT; blank
  // and comment-only lines are skipped without affecting indentation.
  Status LineStart() {
    int width = 0;
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) {
      if (s_[pos_] == '\t') return src_.Error(Here(), "tabs are not allowed in indentation; indent with spaces");
      if (s_[pos_] == ' ') ++width;
      Advance();
    }
    if (pos_ >= s_.size() || s_[pos_] == '\n' || s_[pos_] == '#') return Status::Ok();
    Loc loc = Here();
    if (width > indents_.back()) {
      indents_.push_back(width);
      Push(Tok::kIndent, "", loc);
      line_has_tokens_ = false;
    } else {
      while (width < indents_.back()) {
        indents_.pop_back();
        Push(Tok::kDedent, "", loc);
      }
      line_has_tokens_ = false;
      if (width != indents_.back())
        return src_.Error(loc, "unindent does not match any outer indentation level");
    }
    return Status::Ok();
  }

  Status Token1() {
    Loc loc = Here();
    char c = s_[pos_];
    if (IsNameStart(c)) {
      size_t b = pos_;
      while (pos_ < s_.size() && IsNameChar(s_[pos_])) Advance();
      Push(Tok::kName, s_.substr(b, pos_ - b), loc);
      return Status::Ok();
    }
    if (IsDigit(c) || (c == '.' && pos_ + 1 < s_.size() && IsDigit(s_[pos_ + 1]))) return Number(loc);
    if (c == '"' || c == '\'') return String(loc);
    if (c == '(' || c == '[' || c == '{') {
      brackets_.push_back(Open{c, loc});
      Advance();
      Push(Tok::kOp, std::string(1, c), loc);
      return Status::Ok();
    }
    if (c == ')' || c == ']' || c == '}') {
      if (brackets_.empty()) return src_.Error(loc, StrFormat("unmatched '%c'", c));
      const Open& o = brackets_.back();
      if (Closer(o.c) != c)
        return src_.Error(loc, StrFormat("expected '%c' to close '%c' opened at %d:%d, got '%c'", Closer(o.c), o.c,
                                         o.loc.line, o.loc.col, c));
      brackets_.pop_back();
      Advance();
      Push(Tok::kOp, std::string(1, c), loc);
      return Status::Ok();
    }
    static const char* kOps[] = {"//=", "+=", "-=", "*=", "/=", "%=",
                                 "**", "//", "->", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%",
                                 "<",  ">",  "=",  ",",  ":",  ".",  "@",  "~"};
    for (const char* op : kOps) {
      size_t n = std::strlen(op);
      if (s_.compare(pos_, n, op) == 0) {
        for (size_t i = 0; i < n; ++i) Advance();
        Push(Tok::kOp, op, loc);
        return Status::Ok();
      }
    }
    return src_.Error(loc, StrFormat("unexpected character '%c'", c));
  }

  Status Number(Loc loc) {
    size_t b = pos_;
    bool is_float = false;
    while (pos_ < s_.size() && (IsDigit(s_[pos_]) || s_[pos_] == '_')) Advance();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      Advance();
      while (pos_ < s_.size() && IsDigit(s_[pos_])) Advance();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t save = pos_;
      int save_col = col_;
      Advance();
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) Advance();
      if (pos_ < s_.size() && IsDigit(s_[pos_])) {
        is_float = true;
        while (pos_ < s_.size() && IsDigit(s_[pos_])) Advance();
      } else {
        pos_ = save;
        col_ = save_col;
      }
    }
    std::string spelling;
    for (size_t i = b; i < pos_; ++i)
      if (s_[i] != '_') spelling += s_[i];
    if (pos_ < s_.size() && IsNameStart(s_[pos_]))
      return src_.Error(Here(), "invalid number literal: a name cannot start right after a number");
    Token t;
    t.kind = is_float ? Tok::kFloat : Tok::kInt;
    t.text = spelling;
    t.loc = loc;
    errno = 0;
    if (is_float) {
      t.float_value = std::strtod(spelling.c_str(), nullptr);
    } else {
      t.int_value = std::strtoll(spelling.c_str(), nullptr, 10);
      if (errno == ERANGE) return src_.Error(loc, "integer literal " + spelling + " does not fit in 64 bits");
    }
    out_.tokens.push_back(std::move(t));
    line_has_tokens_ = true;
    return Status::Ok();
  }

  Status String(Loc loc) {
    char q = s_[pos_];
    Advance();
    std::string value;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') return src_.Error(loc, "unterminated string literal");
      char c = s_[pos_];
      if (c == q) {
        Advance();
        break;
      }
      if (c == '\\' && pos_ + 1 < s_.size()) {
        Advance();
        char e = s_[pos_];
        switch (e) {
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          case '\\': value += '\\'; break;
          case '"': value += '"'; break;
          case '\'': value += '\''; break;
          default: value += '\\'; value += e; break;
        }
        Advance();
        continue;
      }
      value += c;
      Advance();
    }
    Push(Tok::kString, value, loc);
    return Status::Ok();
  }

  const SourceFile& src_;
  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  bool line_has_tokens_ = false;
  std::vector<int> indents_;
  std::vector<Open> brackets_;
  TokenStream out_;
};

}  // namespace

Result<TokenStream> Tokenize(const SourceFile& src) { return Lexer(src).Run(); }

}  // namespace text
}  // namespace kiln
