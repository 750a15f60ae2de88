#include "compiler/tune/space_text.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace kiln {
namespace tune {

namespace {

using tir::Instruction;
using tir::TraceArg;

struct Token {
  enum Kind : uint8_t { kName, kInt, kFloat, kString, kPunct, kNewline, kEnd } kind = kEnd;
  std::string s;  // name, string contents, punctuation
  int64_t i = 0;
  double f = 0;
  int line = 0, column = 0;
};

// Splits the text into tokens; newlines inside brackets are not statement ends.
class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  Result<std::vector<Token>> Run() {
    std::vector<Token> out;
    int depth = 0;
    while (p_ < text_.size()) {
      char c = text_[p_];
      if (c == '#') {
        while (p_ < text_.size() && text_[p_] != '\n') Advance();
        continue;
      }
      if (c == '\\' && p_ + 1 < text_.size() && text_[p_ + 1] == '\n') {  // explicit continuation
        Advance();
        Advance();
        continue;
      }
      if (c == '\n') {
        if (depth == 0) out.push_back(Make(Token::kNewline));
        Advance();
        continue;
      }
      if (isspace(static_cast<unsigned char>(c))) {
        Advance();
        continue;
      }
      Token t = Make(Token::kPunct);
      if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
        t.kind = Token::kName;
        while (p_ < text_.size() && (isalnum(static_cast<unsigned char>(text_[p_])) || text_[p_] == '_'))
          t.s += Advance();
      } else if (isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && p_ + 1 < text_.size() && isdigit(static_cast<unsigned char>(text_[p_ + 1])))) {
        std::string num;
        bool is_float = false;
        while (p_ < text_.size()) {
          char d = text_[p_];
          if (isdigit(static_cast<unsigned char>(d))) {
            num += Advance();
          } else if (d == '.' || d == 'e' || d == 'E') {
            is_float = true;
            num += Advance();
            if ((d == 'e' || d == 'E') && p_ < text_.size() && (text_[p_] == '-' || text_[p_] == '+')) num += Advance();
          } else {
            break;
          }
        }
        char* end = nullptr;
        if (is_float) {
          t.kind = Token::kFloat;
          t.f = strtod(num.c_str(), &end);
        } else {
          t.kind = Token::kInt;
          t.i = strtoll(num.c_str(), &end, 10);
        }
        if (end == nullptr || *end != '\0') return Error(t, "bad number '" + num + "'");
      } else if (c == '"' || c == '\'') {
        t.kind = Token::kString;
        Advance();
        while (true) {
          if (p_ >= text_.size() || text_[p_] == '\n') return Error(t, "unterminated string");
          char d = Advance();
          if (d == c) break;
          if (d == '\\' && p_ < text_.size()) d = Advance();
          t.s += d;
        }
      } else if (c == '-' && p_ + 1 < text_.size() && text_[p_ + 1] == '>') {
        t.s = "->";
        Advance();
        Advance();
      } else if (std::string("()[],=.:-*").find(c) != std::string::npos) {
        t.s = std::string(1, Advance());
        if (c == '(' || c == '[') {
          ++depth;
          open_.push_back(t);
        }
        if (c == ')' || c == ']') {
          if (open_.empty()) return Error(t, std::string("'") + c + "' closes nothing");
          const Token& o = open_.back();
          if ((c == ')') != (o.s == "("))
            return Error(t, std::string("'") + c + "' does not close the '" + o.s + "' opened at " +
                                std::to_string(o.line) + ":" + std::to_string(o.column));
          --depth;
          open_.pop_back();
        }
      } else {
        return Error(t, std::string("unexpected character '") + c + "'");
      }
      out.push_back(t);
    }
    if (!open_.empty()) return Error(open_.back(), "'" + open_.back().s + "' is never closed");
    out.push_back(Make(Token::kNewline));
    out.push_back(Make(Token::kEnd));
    return out;
  }

 private:
  char Advance() {
    char c = text_[p_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  Token Make(Token::Kind k) const {
    Token t;
    t.kind = k;
    t.line = line_;
    t.column = col_;
    return t;
  }
  Status Error(const Token& t, const std::string& m) const {
    return InvalidArgument(file_ + ":" + std::to_string(t.line) + ":" + std::to_string(t.column) + ": " + m);
  }

  const std::string& text_;
  const std::string& file_;
  size_t p_ = 0;
  int line_ = 1, col_ = 1;
  std::vector<Token> open_;  // brackets not yet closed
};

// An argument as written.
struct Value {
  enum Kind : uint8_t { kInt, kFloat, kNone, kString, kName, kList } kind = kInt;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Value> items;
  int line = 0, column = 0;
};

// How a primitive's parameter is read.
enum class PK : uint8_t {
  kBlock, kLoop, kBlockOrLoop, kInt, kInts, kFloats, kString, kFactors, kExpr, kDecision, kLoops
};
struct Param {
  const char* name;
  PK kind;
  bool optional;
  int64_t default_int;  // for an optional kInt
};
// What a primitive binds: nothing, one handle, a count that the names decide
// (get_loops), one per split factor, or n sampled ints.
enum class Out : uint8_t { kNone, kBlock, kLoop, kExpr, kLoopsByNames, kBlocksByNames, kLoopsPerFactor, kExprsN };
struct Signature {
  std::vector<Param> params;
  Out out;
};

const std::map<std::string, Signature>& Signatures() {
  static const std::map<std::string, Signature> kSigs = {
      {"get_block", {{{"name", PK::kString, false, 0}, {"func_name", PK::kString, true, 0}}, Out::kBlock}},
      {"get_loops", {{{"block", PK::kBlock, false, 0}}, Out::kLoopsByNames}},
      {"get_child_blocks", {{{"block_or_loop", PK::kBlockOrLoop, false, 0}}, Out::kBlocksByNames}},
      {"split", {{{"loop", PK::kLoop, false, 0}, {"factors", PK::kFactors, false, 0}}, Out::kLoopsPerFactor}},
      {"fuse", {{{"loops", PK::kLoops, false, 0}}, Out::kLoop}},
      {"reorder", {{{"ordered_loops", PK::kLoops, false, 0}}, Out::kNone}},
      {"parallel", {{{"loop", PK::kLoop, false, 0}}, Out::kNone}},
      {"vectorize", {{{"loop", PK::kLoop, false, 0}}, Out::kNone}},
      {"unroll", {{{"loop", PK::kLoop, false, 0}}, Out::kNone}},
      {"sample_perfect_tile",
       {{{"loop", PK::kLoop, false, 0},
         {"n", PK::kInt, false, 0},
         {"max_innermost_factor", PK::kInt, true, 16},
         {"decision", PK::kDecision, true, 0}},
        Out::kExprsN}},
      {"sample_categorical",
       {{{"candidates", PK::kInts, false, 0}, {"probs", PK::kFloats, false, 0}, {"decision", PK::kDecision, true, 0}},
        Out::kExpr}},
      {"sample_compute_location",
       {{{"block", PK::kBlock, false, 0}, {"decision", PK::kDecision, true, 0}}, Out::kLoop}},
      {"compute_inline", {{{"block", PK::kBlock, false, 0}}, Out::kNone}},
      {"reverse_compute_inline", {{{"block", PK::kBlock, false, 0}}, Out::kNone}},
      {"compute_at", {{{"block", PK::kBlock, false, 0}, {"loop", PK::kLoop, false, 0}}, Out::kNone}},
      {"reverse_compute_at", {{{"block", PK::kBlock, false, 0}, {"loop", PK::kLoop, false, 0}}, Out::kNone}},
      {"cache_read",
       {{{"block", PK::kBlock, false, 0}, {"read_buffer_index", PK::kInt, false, 0}, {"storage_scope", PK::kString, false, 0}},
        Out::kBlock}},
      {"cache_write",
       {{{"block", PK::kBlock, false, 0}, {"write_buffer_index", PK::kInt, false, 0}, {"storage_scope", PK::kString, false, 0}},
        Out::kBlock}},
      {"decompose_reduction", {{{"block", PK::kBlock, false, 0}, {"loop", PK::kLoop, false, 0}}, Out::kBlock}},
      {"annotate", {{{"key", PK::kString, false, 0}, {"value", PK::kExpr, false, 0}}, Out::kNone}},
      {"storage_align",
       {{{"buffer", PK::kString, false, 0}, {"axis", PK::kInt, false, 0}, {"factor", PK::kInt, false, 0},
         {"offset", PK::kInt, false, 0}},
        Out::kNone}},
  };
  return kSigs;
}

// What a name is bound to.
struct Binding {
  enum Kind : uint8_t { kBlock, kLoop, kExpr, kExprList } kind = kBlock;
  std::vector<int64_t> ids;
};
const char* BindingKind(Binding::Kind k) {
  switch (k) {
    case Binding::kBlock: return "a block";
    case Binding::kLoop: return "a loop";
    case Binding::kExpr: return "a sampled int";
    case Binding::kExprList: return "a list of sampled ints";
  }
  return "?";
}

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& file, const std::vector<std::string>& lines)
      : toks_(std::move(toks)), file_(file), lines_(lines) {}

  Result<TextSpace> Run() {
    TextSpace space;
    space.file = file_;
    while (Peek().kind != Token::kEnd) {
      if (Peek().kind == Token::kNewline) {
        ++p_;
        continue;
      }
      const Token& first = Peek();
      if (first.kind == Token::kName && (first.s == "def" || first.s == "return" || first.s == "pass")) {
        // The function around the statements (and its `return sch`) carries
        // nothing the space needs.
        SkipLine();
        continue;
      }
      KILN_RETURN_IF_ERROR(Statement(&space));
    }
    return space;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return toks_[std::min(p_ + ahead, toks_.size() - 1)]; }
  bool IsPunct(const Token& t, const char* s) const { return t.kind == Token::kPunct && t.s == s; }
  void SkipLine() {
    while (Peek().kind != Token::kNewline && Peek().kind != Token::kEnd) ++p_;
  }
  Status Error(int line, int column, const std::string& m) const {
    return InvalidArgument(file_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + m);
  }
  Status Error(const Token& t, const std::string& m) const { return Error(t.line, t.column, m); }
  Status Error(const Value& v, const std::string& m) const { return Error(v.line, v.column, m); }
  Status Expect(const char* punct) {
    if (!IsPunct(Peek(), punct)) return Error(Peek(), std::string("expected '") + punct + "'" + Found(Peek()));
    ++p_;
    return Status::Ok();
  }
  static std::string Found(const Token& t) {
    switch (t.kind) {
      case Token::kName: return ", found '" + t.s + "'";
      case Token::kPunct: return ", found '" + t.s + "'";
      case Token::kNewline: return ", found the end of the line";
      case Token::kEnd: return ", found the end of the file";
      default: return "";
    }
  }

  Result<Value> ParseValue() {
    const Token& t = Peek();
    Value v;
    v.line = t.line;
    v.column = t.column;
    if (IsPunct(t, "-") && (Peek(1).kind == Token::kInt || Peek(1).kind == Token::kFloat)) {
      ++p_;
      KILN_ASSIGN_OR_RETURN(v, ParseValue());
      v.i = -v.i;
      v.f = -v.f;
      v.line = t.line;
      v.column = t.column;
      return v;
    }
    switch (t.kind) {
      case Token::kInt: v.kind = Value::kInt; v.i = t.i; v.f = static_cast<double>(t.i); ++p_; return v;
      case Token::kFloat: v.kind = Value::kFloat; v.f = t.f; ++p_; return v;
      case Token::kString: v.kind = Value::kString; v.s = t.s; ++p_; return v;
      case Token::kName:
        v.kind = t.s == "None" ? Value::kNone : Value::kName;
        v.s = t.s;
        ++p_;
        return v;
      default: break;
    }
    if (IsPunct(t, "[") || IsPunct(t, "(")) {
      const char* close = IsPunct(t, "[") ? "]" : ")";
      ++p_;
      v.kind = Value::kList;
      while (!IsPunct(Peek(), close)) {
        KILN_ASSIGN_OR_RETURN(Value item, ParseValue());
        v.items.push_back(std::move(item));
        if (IsPunct(Peek(), ",")) {
          ++p_;
        } else if (!IsPunct(Peek(), close)) {
          return Error(Peek(), std::string("expected ',' or '") + close + "'" + Found(Peek()));
        }
      }
      ++p_;
      return v;
    }
    return Error(t, "expected a value" + Found(t));
  }

  Result<Binding> Lookup(const Value& v) const {
    auto it = names_.find(v.s);
    if (it == names_.end()) return Error(v, "'" + v.s + "' is not bound by an earlier statement");
    return it->second;
  }

  // Reads argument `v` as parameter `param` of `prim` into `arg`.
  Status Convert(const std::string& prim, const Param& param, const Value& v, TraceArg* arg,
                 std::vector<int64_t>* decision) {
    std::string where = prim + "'s " + param.name + ": ";
    auto handle = [&](bool block_ok, bool loop_ok) -> Status {
      if (v.kind != Value::kName) return Error(v, where + "expected a name bound to " + (block_ok ? "a block" : "a loop"));
      if (loop_ok && names_.count(v.s) == 0 && (v.s == "ROOT" || v.s == "INLINE")) {
        *arg = TraceArg::Loop(tir::LoopRV{v.s == "ROOT" ? tir::kRootLoopId : tir::kInlineLoopId});
        return Status::Ok();
      }
      KILN_ASSIGN_OR_RETURN(Binding b, Lookup(v));
      if (block_ok && b.kind == Binding::kBlock) {
        *arg = TraceArg::Block(tir::BlockRV{b.ids[0]});
      } else if (loop_ok && b.kind == Binding::kLoop) {
        *arg = TraceArg::Loop(tir::LoopRV{b.ids[0]});
      } else {
        return Error(v, where + "'" + v.s + "' is " + BindingKind(b.kind) + ", expected " +
                            (block_ok && loop_ok ? "a block or a loop" : block_ok ? "a block" : "a loop"));
      }
      return Status::Ok();
    };
    auto ints = [&](bool none_ok, std::vector<int64_t>* out) -> Status {
      std::vector<Value> items = v.kind == Value::kList ? v.items : std::vector<Value>{v};
      for (const Value& x : items) {
        if (x.kind == Value::kInt) out->push_back(x.i);
        else if (none_ok && x.kind == Value::kNone) out->push_back(-1);
        else return Error(x, where + "expected " + (none_ok ? "integers or None" : "integers"));
      }
      return Status::Ok();
    };
    switch (param.kind) {
      case PK::kBlock: return handle(true, false);
      case PK::kLoop: return handle(false, true);
      case PK::kBlockOrLoop: return handle(true, true);
      case PK::kInt:
        if (v.kind != Value::kInt) return Error(v, where + "expected an integer");
        *arg = TraceArg::Int(v.i);
        return Status::Ok();
      case PK::kString:
        if (v.kind != Value::kString) return Error(v, where + "expected a string");
        *arg = TraceArg::Str(v.s);
        return Status::Ok();
      case PK::kInts: {
        if (v.kind != Value::kList) return Error(v, where + "expected a list of integers");
        std::vector<int64_t> out;
        KILN_RETURN_IF_ERROR(ints(false, &out));
        *arg = TraceArg::Ints(out);
        return Status::Ok();
      }
      case PK::kFloats: {
        if (v.kind != Value::kList) return Error(v, where + "expected a list of numbers");
        std::vector<double> out;
        for (const Value& x : v.items) {
          if (x.kind != Value::kInt && x.kind != Value::kFloat) return Error(x, where + "expected numbers");
          out.push_back(x.f);
        }
        *arg = TraceArg::Floats(out);
        return Status::Ok();
      }
      case PK::kDecision: return ints(false, decision);
      case PK::kExpr: {
        // annotate's value: a sampled int (the trace prints it as a
        // one-entry list).
        const Value& x = v.kind == Value::kList && v.items.size() == 1 ? v.items[0] : v;
        if (x.kind != Value::kName) return Error(v, where + "expected a name bound to a sampled int");
        KILN_ASSIGN_OR_RETURN(Binding b, Lookup(x));
        if (b.kind != Binding::kExpr) return Error(x, where + "'" + x.s + "' is " + BindingKind(b.kind) + ", expected a sampled int");
        *arg = TraceArg::Exprs({tir::ExprRV(b.ids[0])});
        return Status::Ok();
      }
      case PK::kFactors: {
        // Integers (None: inferred), a name bound by sample_perfect_tile,
        // or a list of names of sampled ints.
        if (v.kind == Value::kName) {
          KILN_ASSIGN_OR_RETURN(Binding b, Lookup(v));
          if (b.kind != Binding::kExprList && b.kind != Binding::kExpr)
            return Error(v, where + "'" + v.s + "' is " + BindingKind(b.kind) + ", expected sampled tile sizes");
          std::vector<tir::ExprRV> e;
          for (int64_t id : b.ids) e.push_back(tir::ExprRV(id));
          *arg = TraceArg::Exprs(e);
          return Status::Ok();
        }
        if (v.kind != Value::kList || v.items.empty()) return Error(v, where + "expected a list of factors");
        bool any_name = false, any_literal = false;
        for (const Value& x : v.items) (x.kind == Value::kName ? any_name : any_literal) = true;
        if (any_name && any_literal)
          return Error(v, where + "mixes integers and sampled ints; use one sample_perfect_tile for all factors");
        if (any_literal) {
          std::vector<int64_t> out;
          KILN_RETURN_IF_ERROR(ints(true, &out));
          *arg = TraceArg::Ints(out);
          return Status::Ok();
        }
        std::vector<tir::ExprRV> e;
        for (const Value& x : v.items) {
          KILN_ASSIGN_OR_RETURN(Binding b, Lookup(x));
          if (b.kind != Binding::kExpr) return Error(x, where + "'" + x.s + "' is " + BindingKind(b.kind) + ", expected a sampled int");
          e.push_back(tir::ExprRV(b.ids[0]));
        }
        *arg = TraceArg::Exprs(e);
        return Status::Ok();
      }
      case PK::kLoops: return handle(false, true);
    }
    return Status::Ok();
  }

  Status Statement(TextSpace* space) {
    const Token& start = Peek();
    // Names bound: `a, b, c =` (a name followed by ',' or '=').
    std::vector<Token> targets;
    if (start.kind == Token::kName && (IsPunct(Peek(1), ",") || IsPunct(Peek(1), "="))) {
      while (true) {
        if (Peek().kind != Token::kName) return Error(Peek(), "expected a name to bind" + Found(Peek()));
        targets.push_back(Peek());
        ++p_;
        if (IsPunct(Peek(), ",")) {
          ++p_;
          if (IsPunct(Peek(), "=")) break;  // trailing comma
          continue;
        }
        break;
      }
      KILN_RETURN_IF_ERROR(Expect("="));
    }
    if (Peek().kind != Token::kName) return Error(Peek(), "expected `sch.PRIMITIVE(...)`" + Found(Peek()));
    ++p_;  // the schedule's name (sch, or whatever the def calls it)
    KILN_RETURN_IF_ERROR(Expect("."));
    const Token prim = Peek();
    if (prim.kind != Token::kName) return Error(prim, "expected a schedule primitive" + Found(prim));
    ++p_;
    auto sig_it = Signatures().find(prim.s);
    if (sig_it == Signatures().end()) {
      std::string known;
      for (const auto& kv : Signatures()) known += (known.empty() ? "" : ", ") + kv.first;
      return Error(prim, "unknown schedule primitive '" + prim.s + "' (known: " + known + ")");
    }
    const Signature& sig = sig_it->second;
    KILN_RETURN_IF_ERROR(Expect("("));
    // Arguments, by position then keyword.
    std::vector<std::pair<std::string, Value>> args;
    std::vector<Token> key_at;  // the keyword's token, per argument (line 0: positional)
    while (!IsPunct(Peek(), ")")) {
      std::string key;
      const Token key_tok = Peek();
      if (Peek().kind == Token::kName && IsPunct(Peek(1), "=")) {
        key = Peek().s;
        p_ += 2;
      } else if (!args.empty() && !args.back().first.empty()) {
        return Error(Peek(), "a positional argument after a keyword argument");
      }
      KILN_ASSIGN_OR_RETURN(Value v, ParseValue());
      if (!key.empty()) key_at.push_back(key_tok);
      else key_at.push_back(Token());
      args.push_back({key, std::move(v)});
      if (IsPunct(Peek(), ",")) ++p_;
      else if (!IsPunct(Peek(), ")")) return Error(Peek(), "expected ',' or ')'" + Found(Peek()));
    }
    ++p_;
    if (Peek().kind != Token::kNewline) return Error(Peek(), "expected the end of the statement" + Found(Peek()));

    Instruction inst;
    inst.name = prim.s;
    std::vector<int64_t> decision;
    if (sig.params.size() == 1 && sig.params[0].kind == PK::kLoops) {
      // fuse / reorder: every argument a loop.
      for (const auto& a : args) {
        if (!a.first.empty()) return Error(key_at[&a - &args[0]], prim.s + " takes loops by position only");
        TraceArg arg;
        KILN_RETURN_IF_ERROR(Convert(prim.s, sig.params[0], a.second, &arg, &decision));
        inst.inputs.push_back(arg);
      }
      if (inst.inputs.empty()) return Error(prim, prim.s + " needs at least one loop");
    } else {
      std::vector<const Value*> slot(sig.params.size(), nullptr);
      for (size_t k = 0; k < args.size(); ++k) {
        size_t idx = k;
        if (!args[k].first.empty()) {
          idx = sig.params.size();
          for (size_t j = 0; j < sig.params.size(); ++j)
            if (args[k].first == sig.params[j].name) idx = j;
          if (idx == sig.params.size()) return Error(key_at[k], prim.s + " has no argument '" + args[k].first + "'");
        } else if (idx >= sig.params.size()) {
          return Error(args[k].second, prim.s + " takes " + std::to_string(sig.params.size()) + " arguments at most");
        }
        if (slot[idx] != nullptr) return Error(args[k].second, prim.s + "'s " + sig.params[idx].name + " is given twice");
        slot[idx] = &args[k].second;
      }
      for (size_t j = 0; j < sig.params.size(); ++j) {
        const Param& param = sig.params[j];
        if (slot[j] == nullptr) {
          if (!param.optional) return Error(prim, prim.s + " needs its argument '" + param.name + "'");
          if (param.kind == PK::kInt) inst.inputs.push_back(TraceArg::Int(param.default_int));
          continue;
        }
        if (prim.s == "get_block" && j == 1) continue;  // func_name: one function is scheduled
        TraceArg arg;
        KILN_RETURN_IF_ERROR(Convert(prim.s, param, *slot[j], &arg, &decision));
        if (param.kind != PK::kDecision) inst.inputs.push_back(arg);
      }
    }
    inst.decision = decision;
    if (prim.s == "sample_perfect_tile") {
      if (inst.inputs[1].i < 1) return Error(prim, "sample_perfect_tile's n must be at least 1");
      if (inst.inputs[2].i < 1) return Error(prim, "sample_perfect_tile's max_innermost_factor must be at least 1");
      inst.keywords = {"loop", "n", "max_innermost_factor"};
    } else if (prim.s == "sample_categorical") {
      if (inst.inputs[0].ints.empty() || inst.inputs[0].ints.size() != inst.inputs[1].floats.size())
        return Error(prim, "sample_categorical needs as many probabilities as candidates (at least one)");
      inst.keywords = {"candidates", "probs"};
    } else if (prim.s == "split") {
      inst.keywords = {"", "factors"};
    }

    // The handles it binds.
    size_t n_out = 0;
    Instruction::Output out_kind = Instruction::Output::kLoop;
    switch (sig.out) {
      case Out::kNone:
        if (!targets.empty()) return Error(targets[0], prim.s + " returns nothing to bind");
        break;
      case Out::kBlock: n_out = 1; out_kind = Instruction::Output::kBlock; break;
      case Out::kLoop: n_out = 1; break;
      case Out::kExpr: n_out = 1; out_kind = Instruction::Output::kExpr; break;
      case Out::kLoopsByNames:
      case Out::kBlocksByNames:
        if (targets.empty())
          return Error(prim, prim.s + "'s results must be named, one name each (i, j, k = sch." + prim.s + "(...))");
        n_out = targets.size();
        if (sig.out == Out::kBlocksByNames) out_kind = Instruction::Output::kBlock;
        break;
      case Out::kLoopsPerFactor:
        n_out = inst.inputs[1].ints.size();  // integer factors or sampled-int ids
        if (!targets.empty() && targets.size() != n_out)
          return Error(targets[0], "split makes " + std::to_string(n_out) + " loops, the statement names " +
                                       std::to_string(targets.size()));
        break;
      case Out::kExprsN:
        n_out = static_cast<size_t>(inst.inputs[1].i);
        out_kind = Instruction::Output::kExpr;
        if (targets.size() > 1 && targets.size() != n_out)
          return Error(targets[0], "sample_perfect_tile makes " + std::to_string(n_out) +
                                       " tile sizes, the statement names " + std::to_string(targets.size()));
        break;
    }
    if (sig.out != Out::kNone && sig.out != Out::kExprsN && targets.size() > n_out)
      return Error(targets[0], prim.s + " makes " + std::to_string(n_out) + " handle" + (n_out == 1 ? "" : "s") +
                                   ", the statement names " + std::to_string(targets.size()));
    for (size_t k = 0; k < n_out; ++k) {
      inst.outputs.push_back(next_id_++);
      inst.output_kinds.push_back(out_kind);
    }
    // Bind the names.
    if (sig.out == Out::kExprsN && targets.size() == 1 && n_out != 1) {
      names_[targets[0].s] = Binding{Binding::kExprList, inst.outputs};
    } else {
      for (size_t k = 0; k < targets.size(); ++k) {
        Binding::Kind bk = out_kind == Instruction::Output::kBlock  ? Binding::kBlock
                           : out_kind == Instruction::Output::kLoop ? Binding::kLoop
                                                                    : Binding::kExpr;
        names_[targets[k].s] = Binding{bk, {inst.outputs[k]}};
      }
    }
    TextSpace::Pos pos;
    pos.line = start.line;
    pos.column = start.column;
    if (start.line >= 1 && static_cast<size_t>(start.line) <= lines_.size()) {
      pos.text = lines_[start.line - 1];
      size_t b = pos.text.find_first_not_of(" \t");
      pos.text = b == std::string::npos ? "" : pos.text.substr(b);
    }
    space->trace.Append(std::move(inst));
    space->where.push_back(pos);
    return Status::Ok();
  }

  std::vector<Token> toks_;
  const std::string& file_;
  const std::vector<std::string>& lines_;
  size_t p_ = 0;
  int64_t next_id_ = 0;
  std::map<std::string, Binding> names_;
};

}  // namespace

Result<TextSpace> ParseTextSpace(const std::string& text, const std::string& file) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  KILN_ASSIGN_OR_RETURN(std::vector<Token> toks, Lexer(text, file).Run());
  Result<TextSpace> space = Parser(std::move(toks), file, lines).Run();
  if (space.ok() && space->trace.instructions().empty())
    return InvalidArgument(file + ": no schedule statement (expected lines such as `b = sch.get_block(\"C\")`)");
  return space;
}

Result<TextSpace> LoadTextSpace(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read the space file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseTextSpace(ss.str(), path);
}

Result<tir::Schedule> ApplyTextSpace(const ir::PrimFunc& func, const TextSpace& space, uint64_t seed) {
  size_t failed_at = 0;
  Result<tir::Schedule> sch = tir::Schedule::ReplayFillingDecisions(func, space.trace, seed, &failed_at);
  if (sch.ok()) return sch;
  std::string msg = sch.status().message();
  if (failed_at >= space.where.size()) return InvalidArgument(space.file + ": " + msg);
  // Replay names the instruction by index; the user knows it by its line.
  const Instruction& inst = space.trace.instructions()[failed_at];
  std::string prefix = "replay: instruction " + std::to_string(failed_at) + " (" + inst.name + ")";
  if (msg.compare(0, prefix.size(), prefix) == 0) {
    msg = msg.substr(prefix.size());
    if (msg.compare(0, 2, ": ") == 0) {
      msg = msg.substr(2);
    } else if (msg.compare(0, 6, " gave ") == 0) {
      size_t rec = msg.find("the trace recorded");
      msg = inst.name + " gives " + msg.substr(6, rec == std::string::npos ? std::string::npos : rec - 6) +
            "the statement names " + (rec == std::string::npos ? "" : msg.substr(rec + 19));
    }
  }
  const TextSpace::Pos& pos = space.where[failed_at];
  return Status(sch.status().code(), space.file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                                         ": `" + pos.text + "` does not apply to " + func->name + ": " + msg);
}

}  // namespace tune
}  // namespace kiln
