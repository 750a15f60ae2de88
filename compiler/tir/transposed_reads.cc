#include "compiler/tir/transposed_reads.h"

#include <memory>
#include <vector>

#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// The statement inside loops of static extent 1 around `s` (those loops
// into `units`, outermost first).
Stmt ThroughUnitLoops(const Stmt& s, std::vector<const ForNode*>* units) {
  Stmt at = s;
  while (const auto* f = As<ForNode>(at)) {
    const int64_t* e = nest::ConstInt(f->extent);
    if (e == nullptr || *e != 1) break;
    units->push_back(f);
    at = f->body;
  }
  return at;
}

bool HasWholeIndex(const std::vector<PrimExpr>& idx, const VarNode* v) {
  for (const PrimExpr& i : idx)
    if (nest::IsVar(i, v)) return true;
  return false;
}

// Whether `value` reads a buffer down a column: last index exactly a, and
// b in another index.
bool ReadsColumn(const PrimExpr& value, const VarNode* a, const VarNode* b) {
  nest::BufferRefs refs;
  refs.VisitExpr(value);
  for (const BufferLoadNode* l : refs.load_nodes) {
    const auto& idx = l->indices;
    if (idx.size() < 2 || !nest::IsVar(idx.back(), a)) continue;
    for (size_t d = 0; d + 1 < idx.size(); ++d)
      if (nest::Uses(idx[d], {b})) return true;
  }
  return false;
}

Stmt Wrap(const std::vector<const ForNode*>& units, Stmt body) {
  for (size_t u = units.size(); u-- > 0;) {
    const ForNode* f = units[u];
    body = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, std::move(body));
  }
  return body;
}

class Blocker : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    if (Stmt r = TryBlock(s)) return r;
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  static Stmt TryBlock(const Stmt& s) {
    const auto* fa = As<ForNode>(s);
    if (fa == nullptr || !nest::IsZero(fa->min)) return nullptr;
    if (fa->for_kind != ForKind::kSerial && fa->for_kind != ForKind::kParallel) return nullptr;
    const int64_t* ea = nest::ConstInt(fa->extent);
    if (ea == nullptr || *ea % kTransposeBlock != 0 || *ea < 2 * kTransposeBlock) return nullptr;
    std::vector<const ForNode*> outer_units, inner_units;
    const auto* fb = As<ForNode>(ThroughUnitLoops(fa->body, &outer_units));
    if (fb == nullptr || fb->for_kind != ForKind::kSerial) return nullptr;
    const int64_t* eb = nest::ConstInt(fb->extent);
    if (eb == nullptr || *eb < kTransposeBlock) return nullptr;
    Stmt store = ThroughUnitLoops(fb->body, &inner_units);
    const auto* st = As<BufferStoreNode>(store);
    if (st == nullptr) return nullptr;
    const VarNode* a = fa->loop_var.get();
    const VarNode* b = fb->loop_var.get();
    if (!HasWholeIndex(st->indices, a) || !HasWholeIndex(st->indices, b)) return nullptr;
    nest::BufferRefs refs;
    refs.VisitExpr(st->value);
    if (refs.loads.count(st->buffer->data.get())) return nullptr;
    if (!ReadsColumn(st->value, a, b)) return nullptr;
    DType t = fa->loop_var->dtype;
    Var ao = MakeVar(fa->loop_var->name + "_o", t), ai = MakeVar(fa->loop_var->name + "_i", t);
    VarMap at{{a, PrimExpr(ao) * IntImm(t, kTransposeBlock) + PrimExpr(ai)}};
    Stmt inner = Wrap(inner_units, Substitute(store, at));
    inner = std::make_shared<ForNode>(ai, IntImm(t, 0), IntImm(t, kTransposeBlock), ForKind::kSerial, inner);
    inner = std::make_shared<ForNode>(fb->loop_var, fb->min, fb->extent, ForKind::kSerial, inner);
    inner = Wrap(outer_units, inner);
    return std::make_shared<ForNode>(ao, IntImm(t, 0), IntImm(t, *ea / kTransposeBlock), fa->for_kind, inner);
  }
};

}  // namespace

PrimFunc BlockTransposedReads(const PrimFunc& func) {
  Stmt body = Blocker().MutateStmt(func->body);
  return body == func->body ? func : nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
