#include "compiler/text/py_parser.h"

namespace kiln {
namespace text {
namespace {

std::shared_ptr<AstExpr> NewExpr(AstKind kind, Loc loc) {
  auto e = std::make_shared<AstExpr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kName: return "'" + t.text + "'";
    case Tok::kInt:
    case Tok::kFloat: return "number " + t.text;
    case Tok::kString: return "string \"" + t.text + "\"";
    case Tok::kOp: return "'" + t.text + "'";
    case Tok::kNewline: return "end of line";
    case Tok::kIndent: return "indentation";
    case Tok::kDedent: return "end of block";
    case Tok::kEnd: return "end of file";
  }
  return "?";
}

class Parser {
 public:
  Parser(const SourceFile& src, const std::vector<Token>& toks) : src_(src), t_(toks) {}

  Result<std::vector<AstStmtP>> File() {
    std::vector<AstStmtP> out;
    while (!At(Tok::kEnd)) {
      if (Skip(Tok::kNewline)) continue;
      KILN_ASSIGN_OR_RETURN(AstStmtP s, Statement());
      out.push_back(std::move(s));
    }
    return out;
  }

  Result<AstExprP> OneExpr() {
    KILN_ASSIGN_OR_RETURN(AstExprP e, Test());
    Skip(Tok::kNewline);
    if (!At(Tok::kEnd)) return Expected("the end of the expression");
    return e;
  }

 private:
  const Token& Peek(size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool At(Tok kind) const { return Peek().kind == kind; }
  bool AtOp(const char* op) const { return Peek().kind == Tok::kOp && Peek().text == op; }
  bool AtName(const char* n) const { return Peek().kind == Tok::kName && Peek().text == n; }
  bool Skip(Tok kind) {
    if (!At(kind)) return false;
    ++pos_;
    return true;
  }
  bool SkipOp(const char* op) {
    if (!AtOp(op)) return false;
    ++pos_;
    return true;
  }
  Status Expected(const std::string& what) const {
    return src_.Error(Peek().loc, "expected " + what + ", got " + Describe(Peek()));
  }
  Status ExpectOp(const char* op) {
    if (SkipOp(op)) return Status::Ok();
    return Expected(std::string("'") + op + "'");
  }
  // The closing bracket of a bracket opened at `open`.
  Status ExpectClose(const char* close, const char* open, Loc open_loc) {
    if (SkipOp(close)) return Status::Ok();
    return src_.Error(Peek().loc, StrFormat("expected '%s' to close '%s' opened at %d:%d, got %s", close, open,
                                            open_loc.line, open_loc.col, Describe(Peek()).c_str()));
  }
  static bool IsKeyword(const std::string& s) {
    return s == "def" || s == "class" || s == "return" || s == "for" || s == "in" || s == "with" || s == "if" ||
           s == "else" || s == "elif" || s == "and" || s == "or" || s == "not" || s == "as" || s == "pass" ||
           s == "import" || s == "from";
  }

  // ------------------------------------------------------------ statements

  Result<AstStmtP> Statement() {
    Loc loc = Peek().loc;
    if (AtOp("@")) return Decorated();
    if (AtName("def")) return Def({});
    if (AtName("class")) return Class({});
    if (AtName("for")) return For();
    if (AtName("with")) return With();
    if (AtName("if")) return If();
    if (At(Tok::kIndent)) return src_.Error(loc, "unexpected indentation");
    return Simple();
  }

  Result<AstStmtP> Decorated() {
    std::vector<AstExprP> decorators;
    while (SkipOp("@")) {
      KILN_ASSIGN_OR_RETURN(AstExprP d, Test());
      decorators.push_back(std::move(d));
      if (!Skip(Tok::kNewline)) return Expected("end of line after the decorator");
    }
    if (AtName("def")) return Def(std::move(decorators));
    if (AtName("class")) return Class(std::move(decorators));
    return Expected("'def' or 'class' after decorators");
  }

  Result<std::string> Name(const char* what) {
    if (!At(Tok::kName) || IsKeyword(Peek().text)) return Expected(what);
    return t_[pos_++].text;
  }

  // NEWLINE INDENT stmt+ DEDENT, or a simple statement on the same line.
  Status Block(AstStmt* owner) {
    KILN_RETURN_IF_ERROR(ExpectOp(":"));
    std::vector<AstStmtP>* out = &owner->body;
    if (!Skip(Tok::kNewline)) {
      KILN_ASSIGN_OR_RETURN(AstStmtP s, Simple());
      owner->end_line = s->loc.line;
      out->push_back(std::move(s));
      return Status::Ok();
    }
    if (!Skip(Tok::kIndent)) return Expected("an indented block");
    while (!Skip(Tok::kDedent)) {
      if (At(Tok::kEnd)) break;
      if (Skip(Tok::kNewline)) continue;
      KILN_ASSIGN_OR_RETURN(AstStmtP s, Statement());
      owner->end_line = std::max(owner->end_line, std::max(s->end_line, s->loc.line));
      out->push_back(std::move(s));
    }
    return Status::Ok();
  }

  Result<AstStmtP> Def(std::vector<AstExprP> decorators) {
    auto s = std::make_shared<AstStmt>();
    s->kind = StmtKind::kDef;
    s->loc = Peek().loc;
    s->decorators = std::move(decorators);
    ++pos_;  // def
    KILN_ASSIGN_OR_RETURN(s->name, Name("a function name"));
    Loc open = Peek().loc;
    KILN_RETURN_IF_ERROR(ExpectOp("("));
    while (!AtOp(")")) {
      AstParam p;
      p.loc = Peek().loc;
      KILN_ASSIGN_OR_RETURN(p.name, Name("a parameter name"));
      if (SkipOp(":")) {
        KILN_ASSIGN_OR_RETURN(p.annotation, Test());
      }
      s->params.push_back(std::move(p));
      if (!SkipOp(",")) break;
    }
    KILN_RETURN_IF_ERROR(ExpectClose(")", "(", open));
    if (SkipOp("->")) {
      KILN_ASSIGN_OR_RETURN(s->returns, Test());
    }
    KILN_RETURN_IF_ERROR(Block(s.get()));
    return AstStmtP(s);
  }

  Result<AstStmtP> Class(std::vector<AstExprP> decorators) {
    auto s = std::make_shared<AstStmt>();
    s->kind = StmtKind::kClass;
    s->loc = Peek().loc;
    s->decorators = std::move(decorators);
    ++pos_;  // class
    KILN_ASSIGN_OR_RETURN(s->name, Name("a class name"));
    if (AtOp("(")) {  // base classes are ignored
      Loc open = Peek().loc;
      ++pos_;
      while (!AtOp(")") && !At(Tok::kEnd)) {
        KILN_ASSIGN_OR_RETURN(AstExprP ignored, Test());
        (void)ignored;
        if (!SkipOp(",")) break;
      }
      KILN_RETURN_IF_ERROR(ExpectClose(")", "(", open));
    }
    KILN_RETURN_IF_ERROR(Block(s.get()));
    return AstStmtP(s);
  }

  Result<AstStmtP> For() {
    auto s = std::make_shared<AstStmt>();
    s->kind = StmtKind::kFor;
    s->loc = Peek().loc;
    ++pos_;
    KILN_ASSIGN_OR_RETURN(s->target, TargetList());
    if (!AtName("in")) return Expected("'in'");
    ++pos_;
    KILN_ASSIGN_OR_RETURN(s->value, Test());
    KILN_RETURN_IF_ERROR(Block(s.get()));
    return AstStmtP(s);
  }

  Result<AstStmtP> With() {
    auto s = std::make_shared<AstStmt>();
    s->kind = StmtKind::kWith;
    s->loc = Peek().loc;
    ++pos_;
    KILN_ASSIGN_OR_RETURN(s->value, Test());
    if (AtName("as")) {
      ++pos_;
      KILN_ASSIGN_OR_RETURN(s->target, TargetList());
    }
    KILN_RETURN_IF_ERROR(Block(s.get()));
    return AstStmtP(s);
  }

  Result<AstStmtP> If() {
    auto s = std::make_shared<AstStmt>();
    s->kind = StmtKind::kIf;
    s->loc = Peek().loc;
    ++pos_;  // if / elif
    KILN_ASSIGN_OR_RETURN(s->value, Test());
    KILN_RETURN_IF_ERROR(Block(s.get()));
    if (AtName("elif")) {
      KILN_ASSIGN_OR_RETURN(AstStmtP e, If());
      s->end_line = std::max(s->end_line, e->end_line);
      s->orelse.push_back(std::move(e));
    } else if (AtName("else")) {
      ++pos_;
      AstStmt tmp;
      KILN_RETURN_IF_ERROR(Block(&tmp));
      s->orelse = std::move(tmp.body);
      s->end_line = std::max(s->end_line, tmp.end_line);
    }
    return AstStmtP(s);
  }

  // import a.b [as c], ... | from a.b import x [as y], ...
  Status Import() {
    bool from = AtName("from");
    ++pos_;
    if (from) {
      KILN_RETURN_IF_ERROR(DottedName());
      if (!AtName("import")) return Expected("'import'");
      ++pos_;
    }
    do {
      if (from) {
        KILN_ASSIGN_OR_RETURN(std::string n, Name("a name to import"));
        (void)n;
      } else {
        KILN_RETURN_IF_ERROR(DottedName());
      }
      if (AtName("as")) {
        ++pos_;
        KILN_ASSIGN_OR_RETURN(std::string alias, Name("a name after 'as'"));
        (void)alias;
      }
    } while (SkipOp(","));
    return Status::Ok();
  }

  Status DottedName() {
    KILN_ASSIGN_OR_RETURN(std::string n, Name("a module name"));
    (void)n;
    while (SkipOp(".")) {
      KILN_ASSIGN_OR_RETURN(std::string part, Name("a module name"));
      (void)part;
    }
    return Status::Ok();
  }

  bool AtAugmentedAssign() const {
    return AtOp("+=") || AtOp("-=") || AtOp("*=") || AtOp("/=") || AtOp("//=") || AtOp("%=");
  }

  // A simple statement, ended by NEWLINE.
  Result<AstStmtP> Simple() {
    auto s = std::make_shared<AstStmt>();
    s->loc = Peek().loc;
    if (AtName("pass")) {
      ++pos_;
      s->kind = StmtKind::kPass;
    } else if (AtName("import") || AtName("from")) {
      KILN_RETURN_IF_ERROR(Import());
      s->kind = StmtKind::kImport;
    } else if (AtName("return")) {
      ++pos_;
      s->kind = StmtKind::kReturn;
      if (!At(Tok::kNewline)) {
        KILN_ASSIGN_OR_RETURN(s->value, TestList());
      }
    } else {
      KILN_ASSIGN_OR_RETURN(AstExprP first, TestList());
      if (SkipOp(":")) {
        s->kind = StmtKind::kAssign;
        s->target = first;
        KILN_ASSIGN_OR_RETURN(s->annotation, Test());
        if (SkipOp("=")) {
          KILN_ASSIGN_OR_RETURN(s->value, TestList());
        }
      } else if (SkipOp("=")) {
        s->kind = StmtKind::kAssign;
        s->target = first;
        KILN_ASSIGN_OR_RETURN(s->value, TestList());
      } else if (AtAugmentedAssign()) {
        // C[vi, vj] += x is C[vi, vj] = C[vi, vj] + x, as TVMScript reads it.
        Token op = t_[pos_++];
        s->kind = StmtKind::kAssign;
        s->target = first;
        KILN_ASSIGN_OR_RETURN(AstExprP rhs, Test());
        s->value = Binary(op.text.substr(0, op.text.size() - 1), op.loc, first, rhs);
      } else {
        s->kind = StmtKind::kExpr;
        s->value = first;
      }
    }
    s->end_line = s->loc.line;
    if (!Skip(Tok::kNewline) && !At(Tok::kEnd) && !At(Tok::kDedent)) return Expected("end of line");
    return AstStmtP(s);
  }

  // ------------------------------------------------------------ expressions

  // Names separated by commas (for/with targets).
  Result<AstExprP> TargetList() {
    Loc loc = Peek().loc;
    std::vector<AstExprP> items;
    do {
      if (AtName("in")) break;
      KILN_ASSIGN_OR_RETURN(AstExprP e, Primary());
      items.push_back(std::move(e));
    } while (SkipOp(","));
    if (items.size() == 1) return items[0];
    auto t = NewExpr(AstKind::kTuple, loc);
    t->items = std::move(items);
    return AstExprP(t);
  }

  // test (',' test)* [','] -- a tuple when there is a comma.
  Result<AstExprP> TestList() {
    Loc loc = Peek().loc;
    KILN_ASSIGN_OR_RETURN(AstExprP first, Test());
    if (!AtOp(",")) return first;
    auto t = NewExpr(AstKind::kTuple, loc);
    t->items.push_back(std::move(first));
    while (SkipOp(",")) {
      if (At(Tok::kNewline) || AtOp("=") || AtOp(":") || AtOp(")")) break;
      KILN_ASSIGN_OR_RETURN(AstExprP e, Test());
      t->items.push_back(std::move(e));
    }
    return AstExprP(t);
  }

  Result<AstExprP> Test() { return Or(); }

  AstExprP Binary(const std::string& op, Loc loc, AstExprP a, AstExprP b) {
    auto e = NewExpr(AstKind::kBinary, loc);
    e->str = op;
    e->items = {std::move(a), std::move(b)};
    return e;
  }

  Result<AstExprP> Or() {
    KILN_ASSIGN_OR_RETURN(AstExprP a, And());
    while (AtName("or")) {
      Loc loc = Peek().loc;
      ++pos_;
      KILN_ASSIGN_OR_RETURN(AstExprP b, And());
      a = Binary("or", loc, a, b);
    }
    return a;
  }

  Result<AstExprP> And() {
    KILN_ASSIGN_OR_RETURN(AstExprP a, Not());
    while (AtName("and")) {
      Loc loc = Peek().loc;
      ++pos_;
      KILN_ASSIGN_OR_RETURN(AstExprP b, Not());
      a = Binary("and", loc, a, b);
    }
    return a;
  }

  Result<AstExprP> Not() {
    if (AtName("not")) {
      auto e = NewExpr(AstKind::kUnary, Peek().loc);
      ++pos_;
      e->str = "not";
      KILN_ASSIGN_OR_RETURN(AstExprP a, Not());
      e->items.push_back(std::move(a));
      return AstExprP(e);
    }
    return Comparison();
  }

  Result<AstExprP> Comparison() {
    KILN_ASSIGN_OR_RETURN(AstExprP a, Arith());
    static const char* kOps[] = {"<", "<=", ">", ">=", "==", "!="};
    for (const char* op : kOps) {
      if (AtOp(op)) {
        Loc loc = Peek().loc;
        ++pos_;
        KILN_ASSIGN_OR_RETURN(AstExprP b, Arith());
        for (const char* op2 : kOps)
          if (AtOp(op2)) return src_.Error(Peek().loc, "chained comparisons are not supported; use 'and'");
        return Binary(op, loc, a, b);
      }
    }
    return a;
  }

  Result<AstExprP> Arith() {
    KILN_ASSIGN_OR_RETURN(AstExprP a, Term());
    while (AtOp("+") || AtOp("-")) {
      Token op = t_[pos_++];
      KILN_ASSIGN_OR_RETURN(AstExprP b, Term());
      a = Binary(op.text, op.loc, a, b);
    }
    return a;
  }

  Result<AstExprP> Term() {
    KILN_ASSIGN_OR_RETURN(AstExprP a, Factor());
    while (AtOp("*") || AtOp("/") || AtOp("//") || AtOp("%")) {
      Token op = t_[pos_++];
      KILN_ASSIGN_OR_RETURN(AstExprP b, Factor());
      a = Binary(op.text, op.loc, a, b);
    }
    return a;
  }

  Result<AstExprP> Factor() {
    if (AtOp("-") || AtOp("+")) {
      Token op = t_[pos_++];
      KILN_ASSIGN_OR_RETURN(AstExprP a, Factor());
      // Fold signs into number literals so "-1" is one literal.
      if (op.text == "-" && (a->kind == AstKind::kInt || a->kind == AstKind::kFloat)) {
        auto n = std::make_shared<AstExpr>(*a);
        n->loc = op.loc;
        n->i = -n->i;
        n->f = -n->f;
        return AstExprP(n);
      }
      if (op.text == "+") return a;
      auto e = NewExpr(AstKind::kUnary, op.loc);
      e->str = op.text;
      e->items.push_back(std::move(a));
      return AstExprP(e);
    }
    KILN_ASSIGN_OR_RETURN(AstExprP a, Primary());
    if (AtOp("**")) {
      Loc loc = Peek().loc;
      ++pos_;
      KILN_ASSIGN_OR_RETURN(AstExprP b, Factor());
      return Binary("**", loc, a, b);
    }
    return a;
  }

  Result<AstExprP> Primary() {
    KILN_ASSIGN_OR_RETURN(AstExprP e, Atom());
    while (true) {
      if (AtOp(".")) {
        ++pos_;
        auto a = NewExpr(AstKind::kAttr, e->loc);
        KILN_ASSIGN_OR_RETURN(a->str, Name("an attribute name after '.'"));
        a->base = e;
        e = a;
      } else if (AtOp("(")) {
        Loc open = Peek().loc;
        ++pos_;
        auto c = NewExpr(AstKind::kCall, e->loc);
        c->base = e;
        while (!AtOp(")")) {
          if (At(Tok::kName) && Peek(1).kind == Tok::kOp && Peek(1).text == "=") {
            std::string key = Peek().text;
            Loc kloc = Peek().loc;
            pos_ += 2;
            KILN_ASSIGN_OR_RETURN(AstExprP v, Test());
            c->kwargs.emplace_back(key, std::move(v));
            c->kwarg_locs.push_back(kloc);
          } else {
            if (!c->kwargs.empty())
              return src_.Error(Peek().loc, "positional argument follows keyword argument");
            KILN_ASSIGN_OR_RETURN(AstExprP v, Test());
            c->items.push_back(std::move(v));
          }
          if (!SkipOp(",")) break;
        }
        KILN_RETURN_IF_ERROR(ExpectClose(")", "(", open));
        e = c;
      } else if (AtOp("[")) {
        Loc open = Peek().loc;
        ++pos_;
        auto s = NewExpr(AstKind::kSubscript, e->loc);
        s->base = e;
        while (!AtOp("]")) {
          KILN_ASSIGN_OR_RETURN(AstExprP v, SliceItem());
          s->items.push_back(std::move(v));
          if (!SkipOp(",")) break;
        }
        KILN_RETURN_IF_ERROR(ExpectClose("]", "[", open));
        e = s;
      } else {
        return e;
      }
    }
  }

  Result<AstExprP> SliceItem() {
    Loc loc = Peek().loc;
    AstExprP lo;
    if (!AtOp(":")) {
      KILN_ASSIGN_OR_RETURN(lo, Test());
      if (!AtOp(":")) return lo;
    }
    ++pos_;  // ':'
    auto s = NewExpr(AstKind::kSlice, loc);
    AstExprP hi;
    if (!AtOp(",") && !AtOp("]")) {
      KILN_ASSIGN_OR_RETURN(hi, Test());
    }
    s->items = {lo, hi};
    return AstExprP(s);
  }

  Result<AstExprP> Atom() {
    const Token& tok = Peek();
    Loc loc = tok.loc;
    switch (tok.kind) {
      case Tok::kName: {
        if (tok.text == "True" || tok.text == "False") {
          auto e = NewExpr(AstKind::kBool, loc);
          e->i = tok.text == "True";
          ++pos_;
          return AstExprP(e);
        }
        if (tok.text == "None") {
          ++pos_;
          return AstExprP(NewExpr(AstKind::kNone, loc));
        }
        if (IsKeyword(tok.text)) return Expected("an expression");
        auto e = NewExpr(AstKind::kName, loc);
        e->str = tok.text;
        ++pos_;
        return AstExprP(e);
      }
      case Tok::kInt: {
        auto e = NewExpr(AstKind::kInt, loc);
        e->i = tok.int_value;
        ++pos_;
        return AstExprP(e);
      }
      case Tok::kFloat: {
        auto e = NewExpr(AstKind::kFloat, loc);
        e->f = tok.float_value;
        ++pos_;
        return AstExprP(e);
      }
      case Tok::kString: {
        auto e = NewExpr(AstKind::kString, loc);
        while (At(Tok::kString)) e->str += t_[pos_++].text;
        return AstExprP(e);
      }
      case Tok::kOp:
        if (tok.text == "(") {
          ++pos_;
          if (SkipOp(")")) return AstExprP(NewExpr(AstKind::kTuple, loc));
          KILN_ASSIGN_OR_RETURN(AstExprP first, Test());
          if (SkipOp(")")) return first;  // parenthesized expression
          if (!AtOp(",")) return ExpectClose(")", "(", loc);
          auto t = NewExpr(AstKind::kTuple, loc);
          t->items.push_back(std::move(first));
          while (SkipOp(",")) {
            if (AtOp(")")) break;
            KILN_ASSIGN_OR_RETURN(AstExprP e, Test());
            t->items.push_back(std::move(e));
          }
          KILN_RETURN_IF_ERROR(ExpectClose(")", "(", loc));
          return AstExprP(t);
        }
        if (tok.text == "[") {
          ++pos_;
          auto l = NewExpr(AstKind::kList, loc);
          while (!AtOp("]")) {
            KILN_ASSIGN_OR_RETURN(AstExprP e, Test());
            l->items.push_back(std::move(e));
            if (!SkipOp(",")) break;
          }
          KILN_RETURN_IF_ERROR(ExpectClose("]", "[", loc));
          return AstExprP(l);
        }
        if (tok.text == "{") {
          ++pos_;
          auto d = NewExpr(AstKind::kDict, loc);
          while (!AtOp("}")) {
            KILN_ASSIGN_OR_RETURN(AstExprP k, Test());
            KILN_RETURN_IF_ERROR(ExpectOp(":"));
            KILN_ASSIGN_OR_RETURN(AstExprP v, Test());
            d->items.push_back(std::move(k));
            d->items.push_back(std::move(v));
            if (!SkipOp(",")) break;
          }
          KILN_RETURN_IF_ERROR(ExpectClose("}", "{", loc));
          return AstExprP(d);
        }
        break;
      default:
        break;
    }
    return Expected("an expression");
  }

  const SourceFile& src_;
  const std::vector<Token>& t_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::vector<AstStmtP>> ParsePython(const SourceFile& src, const TokenStream& tokens) {
  return Parser(src, tokens.tokens).File();
}

Result<AstExprP> ParsePythonExpr(const std::string& text) {
  SourceFile src(text, "<dimension>");
  KILN_ASSIGN_OR_RETURN(TokenStream toks, Tokenize(src));
  return Parser(src, toks.tokens).OneExpr();
}

}  // namespace text
}  // namespace kiln
