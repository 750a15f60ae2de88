#include "compiler/arith/debug_string.h"

#include <sstream>

namespace kiln {
namespace arith {
namespace {

using namespace ir;

// Binding strength; higher binds tighter.
int Precedence(TirKind k) {
  switch (k) {
    case TirKind::kOr: return 1;
    case TirKind::kAnd: return 2;
    case TirKind::kEQ: case TirKind::kNE: case TirKind::kLT:
    case TirKind::kLE: case TirKind::kGT: case TirKind::kGE: return 3;
    case TirKind::kAdd: case TirKind::kSub: return 4;
    case TirKind::kMul: case TirKind::kDiv: case TirKind::kFloorDiv: case TirKind::kFloorMod: return 5;
    case TirKind::kNot: return 6;
    default: return 7;  // atoms and call-like forms
  }
}

const char* InfixOp(TirKind k) {
  switch (k) {
    case TirKind::kAdd: return " + ";
    case TirKind::kSub: return " - ";
    case TirKind::kMul: return " * ";
    case TirKind::kDiv: return " / ";
    case TirKind::kFloorDiv: return " // ";
    case TirKind::kFloorMod: return " % ";
    case TirKind::kEQ: return " == ";
    case TirKind::kNE: return " != ";
    case TirKind::kLT: return " < ";
    case TirKind::kLE: return " <= ";
    case TirKind::kGT: return " > ";
    case TirKind::kGE: return " >= ";
    case TirKind::kAnd: return " && ";
    case TirKind::kOr: return " || ";
    default: return nullptr;
  }
}

void Print(const PrimExpr& e, std::ostream& os);

// Prints `e` in parentheses if it binds looser than `min_prec`.
void PrintOperand(const PrimExpr& e, int min_prec, std::ostream& os) {
  if (e.defined() && Precedence(e->kind()) < min_prec) {
    os << '(';
    Print(e, os);
    os << ')';
  } else {
    Print(e, os);
  }
}

void PrintList(const std::vector<PrimExpr>& list, std::ostream& os) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) os << ", ";
    Print(list[i], os);
  }
}

void Print(const PrimExpr& e, std::ostream& os) {
  if (!e.defined()) {
    os << "<undefined>";
    return;
  }
  switch (e->kind()) {
    case TirKind::kIntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      if (e.dtype() == DType::Bool()) os << (v ? "true" : "false");
      else os << v;
      return;
    }
    case TirKind::kFloatImm: os << e.as<FloatImmNode>()->value; return;
    case TirKind::kStringImm: os << '"' << e.as<StringImmNode>()->value << '"'; return;
    case TirKind::kVar: os << e.as<VarNode>()->name; return;
    case TirKind::kNot: os << '!'; PrintOperand(e.as<NotNode>()->a, Precedence(TirKind::kNot), os); return;
    case TirKind::kCast:
      os << DTypeToString(e.dtype()) << '(';
      Print(e.as<CastNode>()->value, os);
      os << ')';
      return;
    case TirKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      os << "select(";
      PrintList({n->cond, n->true_value, n->false_value}, os);
      os << ')';
      return;
    }
    case TirKind::kBufferLoad: {
      const auto* n = e.as<BufferLoadNode>();
      os << n->buffer->name << '[';
      PrintList(n->indices, os);
      os << ']';
      return;
    }
    case TirKind::kCall: {
      const auto* n = e.as<CallNode>();
      os << n->op << '(';
      PrintList(n->args, os);
      os << ')';
      return;
    }
    case TirKind::kMin:
    case TirKind::kMax: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      os << (e->kind() == TirKind::kMin ? "min(" : "max(");
      PrintList({n->a, n->b}, os);
      os << ')';
      return;
    }
    default: break;
  }
  const char* op = InfixOp(e->kind());
  KILN_CHECK(op != nullptr, "ToDebugString: unexpected node kind %s", TirKindName(e->kind()));
  const auto* n = static_cast<const BinaryNode*>(e.get());
  const int prec = Precedence(e->kind());
  // Left-associative: the right operand needs parentheses at equal precedence;
  // comparisons do not chain, so both of their operands do.
  PrintOperand(n->a, prec == Precedence(TirKind::kEQ) ? prec + 1 : prec, os);
  os << op;
  PrintOperand(n->b, prec + 1, os);
}

}  // namespace

std::string ToDebugString(const PrimExpr& e) {
  std::ostringstream os;
  Print(e, os);
  return os.str();
}

}  // namespace arith
}  // namespace kiln
