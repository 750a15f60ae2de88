// Printing of TIR: expressions, statements and PrimFuncs, in the form that
// tir_builder.cc parses back to the same IR.
//
// Literal typing mirrors the parser: an integer literal prints bare only when
// the parser would give a bare literal at that spot exactly its dtype (the
// context's default, or the other operand's dtype); otherwise it prints typed,
// as T.int64(1). Float literals always print typed: T.float32(0).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "compiler/text/printer_util.h"
#include "compiler/text/tir_intrinsics.h"

namespace kiln {
namespace text {

using ir::PrimExpr;

// ---------------------------------------------------------------- helpers

Namer::Namer() {
  frames_.emplace_back();
  // Names the text form gives a meaning of its own.
  for (const char* r : {"T", "R", "I", "cls", "range", "metadata", "True", "False", "None", "and", "or", "not",
                        "in", "if", "else", "for", "with", "def", "class", "return", "pass", "as", "elif"})
    taken_.insert(r);
}

void Namer::Pop() {
  for (const void* k : frames_.back()) {
    auto it = names_.find(k);
    if (it != names_.end()) {
      taken_.erase(it->second);
      names_.erase(it);
    }
  }
  frames_.pop_back();
}

std::string Namer::Define(const void* key, const std::string& hint) {
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  std::string base = hint.empty() ? "v" : hint;
  for (char& c : base)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  if (base[0] >= '0' && base[0] <= '9') base = "v" + base;
  std::string name = base;
  for (int i = 1; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
  taken_.insert(name);
  names_[key] = name;
  frames_.back().push_back(key);
  return name;
}

std::string Namer::Get(const void* key, const std::string& hint) {
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  // Undeclared keys belong to the whole function: define in the outermost
  // frame so the name stays taken until the function ends.
  std::swap(frames_.front(), frames_.back());
  std::string n = Define(key, hint);
  std::swap(frames_.front(), frames_.back());
  return n;
}

std::string FloatRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string AttrValueText(const ir::AttrValue& v) {
  switch (v.kind) {
    case ir::AttrValue::Kind::kNone: return "None";
    case ir::AttrValue::Kind::kBool: return v.i ? "True" : "False";
    case ir::AttrValue::Kind::kInt: return std::to_string(v.i);
    case ir::AttrValue::Kind::kFloat: {
      if (std::isnan(v.f)) return "float(\"nan\")";
      if (std::isinf(v.f)) return v.f > 0 ? "float(\"inf\")" : "float(\"-inf\")";
      std::string s = FloatRepr(v.f);
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
      return s;
    }
    case ir::AttrValue::Kind::kString: return Quote(v.s);
    case ir::AttrValue::Kind::kIntList: {
      std::string s = "[";
      for (size_t i = 0; i < v.ints.size(); ++i) s += (i ? ", " : "") + std::to_string(v.ints[i]);
      return s + "]";
    }
    case ir::AttrValue::Kind::kIntDict: {
      std::string s = "{";
      bool first = true;
      for (const auto& kv : v.int_dict) {
        s += (first ? "" : ", ") + Quote(kv.first) + ": " + std::to_string(kv.second);
        first = false;
      }
      return s + "}";
    }
  }
  return "None";
}

std::string AttrDictText(const ir::AttrMap& m) {
  std::string s = "{";
  bool first = true;
  for (const auto& kv : m) {
    s += (first ? "" : ", ") + Quote(kv.first) + ": " + AttrValueText(kv.second);
    first = false;
  }
  return s + "}";
}

void Indent(std::ostringstream& os, int n) {
  for (int i = 0; i < n; ++i) os << "    ";
}

// ---------------------------------------------------------------- expressions

namespace {

enum Prec { kPrecOr = 1, kPrecAnd, kPrecNot, kPrecCmp, kPrecAdd, kPrecMul, kPrecUnary, kPrecAtom };

bool IsIntLiteral(const PrimExpr& e) {
  const auto* i = e.as<ir::IntImmNode>();
  return i && i->dtype != DType::Bool();
}

// Which of two operands print as bare literals (see the file comment).
void PairBare(const PrimExpr& a, const PrimExpr& b, DType ctx, bool* ba, bool* bb) {
  bool la = IsIntLiteral(a), lb = IsIntLiteral(b);
  *ba = *bb = false;
  if (la && lb) {
    *ba = *bb = a.dtype() == ctx && b.dtype() == ctx;
  } else if (la) {
    *ba = a.dtype() == b.dtype();
  } else if (lb) {
    *bb = b.dtype() == a.dtype();
  }
}

const char* BinaryOp(ir::TirKind k, DType t) {
  switch (k) {
    case ir::TirKind::kAdd: return "+";
    case ir::TirKind::kSub: return "-";
    case ir::TirKind::kMul: return "*";
    case ir::TirKind::kDiv: return t.is_float() ? "/" : nullptr;
    case ir::TirKind::kFloorDiv: return "//";
    case ir::TirKind::kFloorMod: return "%";
    case ir::TirKind::kEQ: return "==";
    case ir::TirKind::kNE: return "!=";
    case ir::TirKind::kLT: return "<";
    case ir::TirKind::kLE: return "<=";
    case ir::TirKind::kGT: return ">";
    case ir::TirKind::kGE: return ">=";
    case ir::TirKind::kAnd: return "and";
    case ir::TirKind::kOr: return "or";
    default: return nullptr;
  }
}

int BinaryPrec(ir::TirKind k) {
  switch (k) {
    case ir::TirKind::kAdd:
    case ir::TirKind::kSub: return kPrecAdd;
    case ir::TirKind::kMul:
    case ir::TirKind::kDiv:
    case ir::TirKind::kFloorDiv:
    case ir::TirKind::kFloorMod: return kPrecMul;
    case ir::TirKind::kAnd: return kPrecAnd;
    case ir::TirKind::kOr: return kPrecOr;
    default: return kPrecCmp;
  }
}

}  // namespace

std::string TirPrinter::VarName(const ir::Var& v) { return namer_ ? namer_->Get(v.get(), v->name) : v->name; }

std::string TirPrinter::BufferName(const ir::Buffer& b) { return namer_ ? namer_->Get(b.get(), b->name) : b->name; }

std::string TirPrinter::Literal(const PrimExpr& e, bool bare) {
  if (const auto* i = e.as<ir::IntImmNode>()) {
    if (i->dtype == DType::Bool()) return i->value ? "True" : "False";
    if (bare) return std::to_string(i->value);
    return "T." + DTypeToString(i->dtype) + "(" + std::to_string(i->value) + ")";
  }
  const auto* f = e.as<ir::FloatImmNode>();
  std::string r = FloatRepr(f->value);
  if (std::isnan(f->value) || std::isinf(f->value)) r = Quote(r);
  return "T." + DTypeToString(f->dtype) + "(" + r + ")";
}

std::string TirPrinter::Expr(const PrimExpr& e, DType ctx_int) {
  int prec;
  return E(e, ctx_int, &prec);
}

void TirPrinter::Pair(const PrimExpr& a, const PrimExpr& b, DType ctx, std::string* sa, std::string* sb) {
  bool ba, bb;
  PairBare(a, b, ctx, &ba, &bb);
  *sa = IsIntLiteral(a) ? Literal(a, ba) : Expr(a, ctx);
  *sb = IsIntLiteral(b) ? Literal(b, bb) : Expr(b, ctx);
}

std::string TirPrinter::Operand(const PrimExpr& e, DType ctx, int min_prec) {
  int p;
  std::string s = E(e, ctx, &p);
  return p < min_prec ? "(" + s + ")" : s;
}

std::string TirPrinter::Shape(const std::vector<PrimExpr>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + Expr(dims[i], DType::Int64());
  return s + (dims.size() == 1 ? ",)" : ")");
}

std::string TirPrinter::E(const PrimExpr& e, DType ctx, int* prec) {
  *prec = kPrecAtom;
  if (!e.defined()) return "None";
  switch (e->kind()) {
    case ir::TirKind::kIntImm: {
      bool bare = IsIntLiteral(e) && e.dtype() == ctx;
      if (bare && e.as<ir::IntImmNode>()->value < 0) *prec = kPrecUnary;
      return Literal(e, bare);
    }
    case ir::TirKind::kFloatImm: return Literal(e, false);
    case ir::TirKind::kStringImm: return Quote(e.as<ir::StringImmNode>()->value);
    case ir::TirKind::kVar: return VarName(std::static_pointer_cast<const ir::VarNode>(e.node()));
    case ir::TirKind::kNot: {
      *prec = kPrecNot;
      return "not " + Operand(e.as<ir::NotNode>()->a, ctx, kPrecNot);
    }
    case ir::TirKind::kCast: {
      const auto* c = e.as<ir::CastNode>();
      return "T.Cast(" + Quote(DTypeToString(c->dtype)) + ", " + Expr(c->value, ctx) + ")";
    }
    case ir::TirKind::kSelect: {
      const auto* s = e.as<ir::SelectNode>();
      std::string a, b;
      Pair(s->true_value, s->false_value, ctx, &a, &b);
      return "T.Select(" + Expr(s->cond, ctx) + ", " + a + ", " + b + ")";
    }
    case ir::TirKind::kBufferLoad: {
      const auto* l = e.as<ir::BufferLoadNode>();
      std::string s = BufferName(l->buffer) + "[";
      for (size_t i = 0; i < l->indices.size(); ++i) s += (i ? ", " : "") + Expr(l->indices[i], DType::Int32());
      return s + "]";
    }
    case ir::TirKind::kCall: {
      const auto* c = e.as<ir::CallNode>();
      const TirIntrinsic* in = FindTirIntrinsic(c->op);
      if (c->op == "if_then_else" && c->args.size() == 3 && c->dtype == c->args[1].dtype()) {
        std::string a, b;
        Pair(c->args[1], c->args[2], ctx, &a, &b);
        return "T.if_then_else(" + Expr(c->args[0], ctx) + ", " + a + ", " + b + ")";
      }
      if (in && static_cast<int>(c->args.size()) == in->arity) {
        std::vector<std::string> args(c->args.size());
        bool bare0 = false, bare1 = false;
        if (c->args.size() == 2) {
          PairBare(c->args[0], c->args[1], ctx, &bare0, &bare1);
          Pair(c->args[0], c->args[1], ctx, &args[0], &args[1]);
        } else {
          bare0 = IsIntLiteral(c->args[0]) && c->args[0].dtype() == ctx;
          args[0] = Expr(c->args[0], ctx);
        }
        DType expect = c->args[0].dtype();
        if (bare0 && !expect.is_float()) expect = DType::Float32();
        if (in->predicate) expect = DType::Bool();
        if (expect == c->dtype) {
          std::string s = std::string("T.") + in->name + "(";
          for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
          return s + ")";
        }
      }
      std::string s = "T.call_intrin(" + Quote(DTypeToString(c->dtype)) + ", " + Quote(c->op);
      for (const auto& a : c->args) s += ", " + Expr(a, ctx);
      return s + ")";
    }
    default: break;
  }
  if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    std::string sa, sb;
    bool ba, bb;
    PairBare(b->a, b->b, ctx, &ba, &bb);
    const char* op = BinaryOp(e->kind(), b->a.dtype());
    if (!op) {
      const char* fn = e->kind() == ir::TirKind::kMin ? "T.min" : e->kind() == ir::TirKind::kMax ? "T.max" : "T.truncdiv";
      Pair(b->a, b->b, ctx, &sa, &sb);
      return std::string(fn) + "(" + sa + ", " + sb + ")";
    }
    int p = BinaryPrec(e->kind());
    // Left-associative: the left operand may share the precedence, the right
    // one may not; comparisons do not chain at all.
    int left_min = p == kPrecCmp ? p + 1 : p;
    sa = IsIntLiteral(b->a) ? Literal(b->a, ba) : Operand(b->a, ctx, left_min);
    sb = IsIntLiteral(b->b) ? Literal(b->b, bb) : Operand(b->b, ctx, p + 1);
    *prec = p;
    return sa + " " + op + " " + sb;
  }
  return "<?>";
}

// ---------------------------------------------------------------- free vars

void CollectVars(const PrimExpr& e, std::vector<ir::Var>* out, std::set<const ir::VarNode*>* seen) {
  if (!e.defined()) return;
  switch (e->kind()) {
    case ir::TirKind::kVar: {
      auto v = std::static_pointer_cast<const ir::VarNode>(e.node());
      if (seen->insert(v.get()).second) out->push_back(v);
      return;
    }
    case ir::TirKind::kNot: CollectVars(e.as<ir::NotNode>()->a, out, seen); return;
    case ir::TirKind::kCast: CollectVars(e.as<ir::CastNode>()->value, out, seen); return;
    case ir::TirKind::kSelect: {
      const auto* s = e.as<ir::SelectNode>();
      CollectVars(s->cond, out, seen);
      CollectVars(s->true_value, out, seen);
      CollectVars(s->false_value, out, seen);
      return;
    }
    case ir::TirKind::kBufferLoad:
      for (const auto& i : e.as<ir::BufferLoadNode>()->indices) CollectVars(i, out, seen);
      return;
    case ir::TirKind::kCall:
      for (const auto& a : e.as<ir::CallNode>()->args) CollectVars(a, out, seen);
      return;
    default: break;
  }
  if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    CollectVars(b->a, out, seen);
    CollectVars(b->b, out, seen);
  }
}

namespace {

struct FreeVarCollector {
  std::vector<ir::Var> used;
  std::set<const ir::VarNode*> seen;
  std::set<const ir::VarNode*> bound;

  void E(const PrimExpr& e) { CollectVars(e, &used, &seen); }
  void Buffer(const ir::Buffer& b) {
    for (const auto& d : b->shape) E(d);
    for (const auto& d : b->strides) E(d);
  }
  void S(const ir::Stmt& s) {
    if (!s) return;
    switch (s->kind()) {
      case ir::TirKind::kBufferStore: {
        const auto* st = ir::As<ir::BufferStoreNode>(s);
        E(st->value);
        for (const auto& i : st->indices) E(i);
        return;
      }
      case ir::TirKind::kFor: {
        const auto* f = ir::As<ir::ForNode>(s);
        bound.insert(f->loop_var.get());
        E(f->min);
        E(f->extent);
        S(f->body);
        return;
      }
      case ir::TirKind::kSeqStmt:
        for (const auto& x : ir::As<ir::SeqStmtNode>(s)->seq) S(x);
        return;
      case ir::TirKind::kIfThenElse: {
        const auto* i = ir::As<ir::IfThenElseNode>(s);
        E(i->cond);
        S(i->then_case);
        S(i->else_case);
        return;
      }
      case ir::TirKind::kLetStmt: {
        const auto* l = ir::As<ir::LetStmtNode>(s);
        bound.insert(l->var.get());
        E(l->value);
        S(l->body);
        return;
      }
      case ir::TirKind::kEvaluate: E(ir::As<ir::EvaluateNode>(s)->value); return;
      case ir::TirKind::kAllocate: {
        const auto* a = ir::As<ir::AllocateNode>(s);
        Buffer(a->buffer);
        S(a->body);
        return;
      }
      case ir::TirKind::kBlockRealize: {
        const auto* br = ir::As<ir::BlockRealizeNode>(s);
        for (const auto& v : br->iter_values) E(v);
        E(br->predicate);
        const ir::Block& b = br->block;
        for (const auto& iv : b.iter_vars) {
          bound.insert(iv.var.get());
          E(iv.min);
          E(iv.extent);
        }
        for (const auto& buf : b.alloc_buffers) Buffer(buf);
        for (const auto* regions : {&b.reads, &b.writes})
          for (const auto& r : *regions)
            for (const auto& rg : r.ranges) {
              E(rg.first);
              E(rg.second);
            }
        S(b.init);
        S(b.body);
        return;
      }
      default: return;
    }
  }
};

}  // namespace

std::vector<ir::Var> FreeVars(const ir::PrimFuncNode& f) {
  FreeVarCollector c;
  for (const auto& p : f.params) c.bound.insert(p.get());
  for (const auto& kv : f.buffer_map) c.Buffer(kv.second);
  c.S(f.body);
  std::vector<ir::Var> out;
  for (const auto& v : c.used)
    if (!c.bound.count(v.get())) out.push_back(v);
  return out;
}

// ---------------------------------------------------------------- statements

namespace {

bool IsTrue(const PrimExpr& e) {
  const auto* i = e.as<ir::IntImmNode>();
  return i && i->value == 1 && i->dtype == DType::Bool();
}

bool IsZeroOf(const PrimExpr& e, DType t) {
  const auto* i = e.as<ir::IntImmNode>();
  return i && i->value == 0 && i->dtype == t;
}

bool SimpleEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  const auto* ia = a.as<ir::IntImmNode>();
  const auto* ib = b.as<ir::IntImmNode>();
  return ia && ib && ia->value == ib->value && ia->dtype == ib->dtype;
}

bool IsRootBlock(const ir::BlockRealizeNode& br) {
  const ir::Block& b = br.block;
  return b.name == "root" && b.iter_vars.empty() && br.iter_values.empty() && b.reads.empty() && b.writes.empty() &&
         !b.init && b.annotations.empty() && IsTrue(br.predicate);
}

// A loop printable as `range(extent)` / in a T.grid: starts at a zero of the
// extent's dtype, and its variable has that dtype.
bool ZeroBased(const ir::ForNode& f) {
  return IsZeroOf(f.min, f.extent.dtype()) && f.loop_var->dtype == f.extent.dtype();
}

}  // namespace

std::string TirPrinter::BufferDecl(const ir::Buffer& b, const char* fn, const std::string& first_arg) {
  std::string s = std::string(fn) + "(" + first_arg + Shape(b->shape) + ", " + Quote(DTypeToString(b->dtype));
  if (!b->strides.empty()) s += ", strides=" + Shape(b->strides);
  if (b->scope != "global") s += ", scope=" + Quote(b->scope);
  return s + ")";
}

std::string TirPrinter::Region(const ir::BufferRegion& r) {
  std::string s = BufferName(r.buffer) + "[";
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    const PrimExpr& lo = r.ranges[i].first;
    const PrimExpr& ext = r.ranges[i].second;
    s += i ? ", " : "";
    const auto* one = ext.as<ir::IntImmNode>();
    if (one && one->value == 1 && ext.dtype() == lo.dtype() && one->dtype != DType::Bool()) {
      s += Expr(lo, DType::Int32());
      continue;
    }
    PrimExpr hi;
    const auto* l = lo.as<ir::IntImmNode>();
    if (l && one && l->dtype == one->dtype) {
      hi = ir::IntImm(ext.dtype(), l->value + one->value);
    } else if (l && l->value == 0) {
      hi = ext;
    } else {
      hi = ir::MakeBinary(ir::TirKind::kAdd, lo, ext);
    }
    std::string a, b;
    Pair(lo, hi, DType::Int32(), &a, &b);
    s += a + ":" + b;
  }
  return s + "]";
}

void TirPrinter::Stmt(const ir::Stmt& s, std::ostringstream& os, int indent) {
  switch (s->kind()) {
    case ir::TirKind::kSeqStmt: {
      const auto* seq = ir::As<ir::SeqStmtNode>(s);
      if (seq->seq.empty()) {
        Indent(os, indent);
        os << "pass\n";
      }
      for (const auto& x : seq->seq) Stmt(x, os, indent);
      return;
    }
    case ir::TirKind::kBufferStore: {
      const auto* st = ir::As<ir::BufferStoreNode>(s);
      Indent(os, indent);
      os << BufferName(st->buffer) << "[";
      for (size_t i = 0; i < st->indices.size(); ++i) os << (i ? ", " : "") << Expr(st->indices[i], DType::Int32());
      DType ctx = st->buffer->dtype.is_float() ? DType::Int32() : st->buffer->dtype;
      os << "] = " << Expr(st->value, ctx) << "\n";
      return;
    }
    case ir::TirKind::kFor: {
      const auto* f = ir::As<ir::ForNode>(s);
      namer_->Push();
      std::vector<const ir::ForNode*> chain{f};
      if (f->for_kind == ir::ForKind::kSerial && ZeroBased(*f)) {
        while (true) {
          const auto* inner = ir::As<ir::ForNode>(chain.back()->body);
          if (!inner || inner->for_kind != ir::ForKind::kSerial || !ZeroBased(*inner)) break;
          chain.push_back(inner);
        }
      }
      Indent(os, indent);
      if (chain.size() > 1) {
        std::string vars, exts;
        for (size_t i = 0; i < chain.size(); ++i) {
          vars += (i ? ", " : "") + namer_->Define(chain[i]->loop_var.get(), chain[i]->loop_var->name);
          exts += (i ? ", " : "") + Expr(chain[i]->extent, DType::Int32());
        }
        os << "for " << vars << " in T.grid(" << exts << "):\n";
      } else {
        const char* fn = f->for_kind == ir::ForKind::kParallel     ? "T.parallel"
                         : f->for_kind == ir::ForKind::kVectorized ? "T.vectorized"
                         : f->for_kind == ir::ForKind::kUnrolled   ? "T.unroll"
                         : f->for_kind == ir::ForKind::kThreadBinding ? "T.thread_binding"
                                                                   : "range";
        os << "for " << namer_->Define(f->loop_var.get(), f->loop_var->name) << " in " << fn << "(";
        if (ZeroBased(*f)) {
          os << Expr(f->extent, DType::Int32());
        } else {
          PrimExpr hi;
          const auto* l = f->min.as<ir::IntImmNode>();
          const auto* x = f->extent.as<ir::IntImmNode>();
          hi = l && x ? ir::IntImm(f->extent.dtype(), l->value + x->value) : ir::MakeBinary(ir::TirKind::kAdd, f->min, f->extent);
          std::string a, b;
          Pair(f->min, hi, DType::Int32(), &a, &b);
          os << a << ", " << b;
        }
        if (f->for_kind == ir::ForKind::kThreadBinding) os << ", thread=\"" << f->thread_tag << "\"";
        os << "):\n";
      }
      for (const auto* l : chain) loops_.push_back(l);
      Stmt(chain.back()->body, os, indent + 1);
      loops_.resize(loops_.size() - chain.size());
      namer_->Pop();
      return;
    }
    case ir::TirKind::kIfThenElse: {
      const auto* i = ir::As<ir::IfThenElseNode>(s);
      Indent(os, indent);
      os << "if " << Expr(i->cond, DType::Int32()) << ":\n";
      namer_->Push();
      Stmt(i->then_case, os, indent + 1);
      namer_->Pop();
      if (i->else_case) {
        Indent(os, indent);
        os << "else:\n";
        namer_->Push();
        Stmt(i->else_case, os, indent + 1);
        namer_->Pop();
      }
      return;
    }
    case ir::TirKind::kLetStmt: {
      const auto* l = ir::As<ir::LetStmtNode>(s);
      DType t = l->var->dtype;
      std::string value = Expr(l->value, t.is_float() ? DType::Int32() : t);
      namer_->Push();
      Indent(os, indent);
      os << namer_->Define(l->var.get(), l->var->name) << ": T." << DTypeToString(t) << " = " << value << "\n";
      Stmt(l->body, os, indent);
      namer_->Pop();
      return;
    }
    case ir::TirKind::kEvaluate:
      Indent(os, indent);
      os << "T.evaluate(" << Expr(ir::As<ir::EvaluateNode>(s)->value, DType::Int32()) << ")\n";
      return;
    case ir::TirKind::kAllocate: {
      const auto* a = ir::As<ir::AllocateNode>(s);
      namer_->Push();
      Indent(os, indent);
      os << namer_->Define(a->buffer.get(), a->buffer->name) << " = " << BufferDecl(a->buffer, "T.decl_buffer", "")
         << "\n";
      Stmt(a->body, os, indent);
      namer_->Pop();
      return;
    }
    case ir::TirKind::kBlockRealize: Block(*ir::As<ir::BlockRealizeNode>(s), os, indent); return;
    default: Indent(os, indent); os << "# unknown statement\n"; return;
  }
}

void TirPrinter::Block(const ir::BlockRealizeNode& br, std::ostringstream& os, int indent) {
  const ir::Block& b = br.block;
  namer_->Push();
  Indent(os, indent);
  os << "with T.block(" << Quote(b.name) << "):\n";
  int in = indent + 1;
  // T.axis.remap when every iterator is bound to a distinct enclosing loop
  // variable over that loop's domain; T.axis.spatial/reduce otherwise.
  bool remap = !b.iter_vars.empty();
  std::set<const ir::VarNode*> used;
  for (size_t i = 0; remap && i < b.iter_vars.size(); ++i) {
    const ir::IterVar& iv = b.iter_vars[i];
    const auto* lv = br.iter_values[i].as<ir::VarNode>();
    const ir::ForNode* loop = nullptr;
    for (const auto* l : loops_)
      if (l->loop_var.get() == lv) loop = l;
    remap = lv && loop && used.insert(lv).second && SimpleEqual(loop->min, iv.min) &&
            SimpleEqual(loop->extent, iv.extent) && iv.var->dtype == lv->dtype;
  }
  if (remap) {
    std::string names, kinds, binds;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      const ir::IterVar& iv = b.iter_vars[i];
      names += (i ? ", " : "") + namer_->Define(iv.var.get(), iv.var->name);
      kinds += iv.kind == ir::IterKind::kSpatial ? "S" : "R";
      binds += (i ? ", " : "") + Expr(br.iter_values[i], DType::Int32());
    }
    Indent(os, in);
    os << names << " = T.axis.remap(" << Quote(kinds) << ", [" << binds << "])\n";
  } else {
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      const ir::IterVar& iv = b.iter_vars[i];
      DType t = br.iter_values[i].dtype();
      std::string value = Expr(br.iter_values[i], DType::Int32());
      std::string dom;
      if (IsZeroOf(iv.min, iv.extent.dtype()) && iv.extent.dtype() == t) {
        dom = Expr(iv.extent, t);
      } else {
        PrimExpr hi = ir::MakeBinary(ir::TirKind::kAdd, iv.min, iv.extent);
        const auto* l = iv.min.as<ir::IntImmNode>();
        const auto* x = iv.extent.as<ir::IntImmNode>();
        if (l && x) hi = ir::IntImm(iv.extent.dtype(), l->value + x->value);
        dom = "(" + Expr(iv.min, t) + ", " + Expr(hi, t) + ")";
      }
      Indent(os, in);
      os << namer_->Define(iv.var.get(), iv.var->name) << " = T.axis."
         << (iv.kind == ir::IterKind::kSpatial ? "spatial" : "reduce") << "(" << dom << ", " << value << ")\n";
    }
  }
  if (!IsTrue(br.predicate)) {
    Indent(os, in);
    os << "T.where(" << Expr(br.predicate, DType::Int32()) << ")\n";
  }
  for (const auto* regions : {&b.reads, &b.writes}) {
    if (regions->empty()) continue;
    Indent(os, in);
    os << (regions == &b.reads ? "T.reads(" : "T.writes(");
    for (size_t i = 0; i < regions->size(); ++i) os << (i ? ", " : "") << Region((*regions)[i]);
    os << ")\n";
  }
  if (!b.annotations.empty()) {
    Indent(os, in);
    os << "T.block_attr({";
    bool first = true;
    for (const auto& kv : b.annotations) {
      os << (first ? "" : ", ") << Quote(kv.first) << ": " << Quote(kv.second);
      first = false;
    }
    os << "})\n";
  }
  for (const auto& buf : b.alloc_buffers) {
    Indent(os, in);
    os << namer_->Define(buf.get(), buf->name) << " = " << BufferDecl(buf, "T.alloc_buffer", "") << "\n";
  }
  if (b.init) {
    Indent(os, in);
    os << "with T.init():\n";
    namer_->Push();
    Stmt(b.init, os, in + 1);
    namer_->Pop();
  }
  Stmt(b.body, os, in);
  namer_->Pop();
}

void TirPrinter::PrimFunc(const ir::PrimFuncNode& f, const std::string& name, std::ostringstream& os, int indent) {
  Indent(os, indent);
  os << (f.is_private ? "@T.prim_func(private=True)\n" : "@T.prim_func\n");
  Indent(os, indent);
  os << "def " << name << "(";
  // A buffer with a static, compact, global shape is declared inline in the
  // signature (T.Buffer); any other goes through T.handle + T.match_buffer,
  // after the symbolic variables its shape uses.
  std::vector<std::pair<std::string, ir::Buffer>> matched;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ir::Var& p = f.params[i];
    ir::Buffer b = f.BufferOf(p);
    bool inline_buffer = b && b->strides.empty() && b->scope == "global";
    if (b)
      for (const auto& d : b->shape) inline_buffer &= d.as<ir::IntImmNode>() != nullptr;
    os << (i ? ", " : "");
    if (inline_buffer) {
      os << namer_->Define(b.get(), b->name) << ": " << BufferDecl(b, "T.Buffer", "");
    } else if (b || p->dtype == ir::HandleType()) {
      std::string pn = namer_->Define(p.get(), p->name);
      os << pn << ": T.handle";
      if (b) matched.emplace_back(pn, b);
    } else {
      os << namer_->Define(p.get(), p->name) << ": T." << DTypeToString(p->dtype);
    }
  }
  os << "):\n";
  int in = indent + 1;
  if (!f.attrs.empty()) {
    Indent(os, in);
    os << "T.func_attr(" << AttrDictText(f.attrs) << ")\n";
  }
  for (const auto& v : FreeVars(f)) {
    Indent(os, in);
    os << namer_->Define(v.get(), v->name) << " = T." << DTypeToString(v->dtype) << "()\n";
  }
  for (const auto& m : matched) {
    Indent(os, in);
    os << namer_->Define(m.second.get(), m.second->name) << " = "
       << BufferDecl(m.second, "T.match_buffer", m.first + ", ") << "\n";
  }
  if (const auto* br = ir::As<ir::BlockRealizeNode>(f.body); br && IsRootBlock(*br)) {
    Indent(os, in);
    os << "# with T.block(\"root\"):\n";
    for (const auto& buf : br->block.alloc_buffers) {
      Indent(os, in);
      os << namer_->Define(buf.get(), buf->name) << " = " << BufferDecl(buf, "T.alloc_buffer", "") << "\n";
    }
    Stmt(br->block.body, os, in);
  } else if (f.body) {
    Stmt(f.body, os, in);
  } else {
    Indent(os, in);
    os << "pass\n";
  }
}

}  // namespace text
}  // namespace kiln
