#include "compiler/tir/kernel_cost.h"

#include <map>
#include <set>

#include "compiler/arith/simplify.h"

namespace kiln {
namespace tir {
namespace {

using ir::PrimExpr;
using ir::TirKind;

bool IsArithmetic(TirKind k) {
  switch (k) {
    case TirKind::kAdd: case TirKind::kSub: case TirKind::kMul: case TirKind::kDiv:
    case TirKind::kFloorDiv: case TirKind::kFloorMod: case TirKind::kMin: case TirKind::kMax:
      return true;
    default:
      return false;
  }
}

// Arithmetic operations in a stored value; loads count nothing (their indices
// are address arithmetic), nor do the conditions of selects (bounds checks of
// padding on indices).
int64_t OpsIn(const PrimExpr& e) {
  if (!e.defined()) return 0;
  const ir::PrimExprNode* n = e.get();
  if (ir::IsBinary(n->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(n);
    return (IsArithmetic(n->kind()) ? 1 : 0) + OpsIn(b->a) + OpsIn(b->b);
  }
  switch (n->kind()) {
    case TirKind::kNot: return OpsIn(static_cast<const ir::NotNode*>(n)->a);
    case TirKind::kCast: return OpsIn(static_cast<const ir::CastNode*>(n)->value);
    case TirKind::kSelect: {
      const auto* s = static_cast<const ir::SelectNode*>(n);
      return std::max(OpsIn(s->true_value), OpsIn(s->false_value));
    }
    case TirKind::kCall: {
      const auto* c = static_cast<const ir::CallNode*>(n);
      int64_t ops = 0;
      if (c->op == "if_then_else") return c->args.size() == 3 ? std::max(OpsIn(c->args[1]), OpsIn(c->args[2])) : 0;
      for (const auto& a : c->args) ops += OpsIn(a);
      return ops + 1;
    }
    default: return 0;
  }
}

bool UsesAny(const PrimExpr& e, const std::set<const ir::VarNode*>& vars) {
  if (!e.defined()) return false;
  const ir::PrimExprNode* n = e.get();
  if (n->kind() == TirKind::kVar) return vars.count(static_cast<const ir::VarNode*>(n)) > 0;
  if (ir::IsBinary(n->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(n);
    return UsesAny(b->a, vars) || UsesAny(b->b, vars);
  }
  switch (n->kind()) {
    case TirKind::kNot: return UsesAny(static_cast<const ir::NotNode*>(n)->a, vars);
    case TirKind::kCast: return UsesAny(static_cast<const ir::CastNode*>(n)->value, vars);
    case TirKind::kSelect: {
      const auto* s = static_cast<const ir::SelectNode*>(n);
      return UsesAny(s->cond, vars) || UsesAny(s->true_value, vars) || UsesAny(s->false_value, vars);
    }
    case TirKind::kCall:
      for (const auto& a : static_cast<const ir::CallNode*>(n)->args)
        if (UsesAny(a, vars)) return true;
      return false;
    case TirKind::kBufferLoad: return true;  // a data-dependent extent
    default: return false;
  }
}

PrimExpr Zero() { return PrimExpr(int64_t{0}); }

// Sums `ops per store x trip count` over a statement.
class FlopCounter {
 public:
  bool ok = true;

  PrimExpr Count(const ir::Stmt& s, const PrimExpr& trips) {
    if (!s || !ok) return Zero();
    switch (s->kind()) {
      case TirKind::kBufferStore: {
        int64_t ops = OpsIn(ir::As<ir::BufferStoreNode>(s)->value);
        return ops == 0 ? Zero() : trips * PrimExpr(ops);
      }
      case TirKind::kFor: {
        const auto* f = ir::As<ir::ForNode>(s);
        if (UsesAny(f->extent, loop_vars_)) {
          ok = false;  // a triangular nest: not a product of extents
          return Zero();
        }
        loop_vars_.insert(f->loop_var.get());
        PrimExpr r = Count(f->body, trips * f->extent);
        loop_vars_.erase(f->loop_var.get());
        return r;
      }
      case TirKind::kSeqStmt: {
        PrimExpr sum = Zero();
        for (const auto& x : ir::As<ir::SeqStmtNode>(s)->seq) sum = sum + Count(x, trips);
        return sum;
      }
      case TirKind::kIfThenElse: {
        const auto* i = ir::As<ir::IfThenElseNode>(s);
        PrimExpr a = arith::Simplify(Count(i->then_case, trips));
        PrimExpr b = arith::Simplify(Count(i->else_case, trips));
        if (arith::AsConstInt(b) == 0) return a;
        if (arith::AsConstInt(a) == 0) return b;
        return ir::MakeBinary(TirKind::kMax, a, b);
      }
      case TirKind::kLetStmt: return Count(ir::As<ir::LetStmtNode>(s)->body, trips);
      case TirKind::kAllocate: return Count(ir::As<ir::AllocateNode>(s)->body, trips);
      case TirKind::kBlockRealize: {
        const auto* b = ir::As<ir::BlockRealizeNode>(s);
        return Count(b->block.init, trips) + Count(b->block.body, trips);
      }
      default: return Zero();
    }
  }

 private:
  std::set<const ir::VarNode*> loop_vars_;
};

// Writes `e` in the grammar of runtime/kernel_cost.h with its variables as
// parameter references; false when a variable has none or a node has no form.
bool Print(const PrimExpr& e, const std::map<const ir::VarNode*, std::string>& refs, std::string* out) {
  const ir::PrimExprNode* n = e.get();
  if (!n) return false;
  if (const auto* i = e.as<ir::IntImmNode>()) {
    *out += i->value < 0 ? "(0 - " + std::to_string(-i->value) + ")" : std::to_string(i->value);
    return true;
  }
  if (n->kind() == TirKind::kVar) {
    auto it = refs.find(static_cast<const ir::VarNode*>(n));
    if (it == refs.end()) return false;
    *out += it->second;
    return true;
  }
  if (n->kind() == TirKind::kCast) return Print(static_cast<const ir::CastNode*>(n)->value, refs, out);
  const char* op = nullptr;
  switch (n->kind()) {
    case TirKind::kAdd: op = " + "; break;
    case TirKind::kSub: op = " - "; break;
    case TirKind::kMul: op = " * "; break;
    case TirKind::kFloorDiv: op = " // "; break;
    case TirKind::kFloorMod: op = " % "; break;
    case TirKind::kMin: op = "min"; break;
    case TirKind::kMax: op = "max"; break;
    default: return false;
  }
  const auto* b = static_cast<const ir::BinaryNode*>(n);
  bool call = op[0] != ' ';
  *out += call ? std::string(op) + "(" : "(";
  if (!Print(b->a, refs, out)) return false;
  *out += call ? ", " : op;
  if (!Print(b->b, refs, out)) return false;
  *out += ")";
  return true;
}

}  // namespace

bool PrintKernelCostExpr(const PrimExpr& e, const std::map<const ir::VarNode*, std::string>& refs, std::string* out) {
  return Print(e, refs, out);
}

KernelCost ComputeKernelCost(const ir::PrimFunc& f) {
  KernelCost cost;
  if (!f) return cost;
  // Each symbolic variable by the first parameter that carries it.
  std::map<const ir::VarNode*, std::string> refs;
  std::vector<ir::Var> shape_vars;
  PrimExpr bytes = Zero();
  bool bytes_ok = true;
  for (size_t p = 0; p < f->params.size(); ++p) {
    const ir::Var& v = f->params[p];
    ir::Buffer buf = f->BufferOf(v);
    if (!buf) {
      refs.emplace(v.get(), "$" + std::to_string(p));
      continue;
    }
    PrimExpr size = PrimExpr(static_cast<int64_t>(buf->dtype.bytes()));
    for (size_t d = 0; d < buf->shape.size(); ++d) {
      const PrimExpr& dim = buf->shape[d];
      if (dim.get() && dim->kind() == TirKind::kVar) {
        const auto* var = static_cast<const ir::VarNode*>(dim.get());
        if (refs.emplace(var, "$" + std::to_string(p) + "." + std::to_string(d)).second)
          shape_vars.push_back(std::static_pointer_cast<const ir::VarNode>(dim.node()));
      }
      size = size * dim;
    }
    if (!buf->strides.empty()) bytes_ok = false;  // a view: its size is not its extent
    bytes = bytes + size;
  }
  arith::VarBounds bounds = arith::LowerBounds(shape_vars, 0);
  FlopCounter counter;
  PrimExpr flops = counter.Count(f->body, PrimExpr(int64_t{1}));
  if (counter.ok) {
    std::string text;
    if (Print(arith::Simplify(flops, bounds), refs, &text)) cost.flops = text;
  }
  if (bytes_ok) {
    std::string text;
    if (Print(arith::Simplify(bytes, bounds), refs, &text)) cost.bytes = text;
  }
  return cost;
}

}  // namespace tir
}  // namespace kiln
