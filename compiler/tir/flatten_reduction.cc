#include "compiler/tir/flatten_reduction.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers


bool AnyUses(const std::vector<PrimExpr>& idx, const std::unordered_set<const VarNode*>& vars) {
  for (const PrimExpr& e : idx)
    if (Uses(e, vars)) return true;
  return false;
}

// The product of extents, folded to a constant when they all are.
PrimExpr Product(const std::vector<PrimExpr>& ext) {
  PrimExpr p = I64(1);
  for (const PrimExpr& e : ext) p = p * e;
  return arith::Simplify(p);
}

// Loads B[.., k1, .., km] -> B_flat[.., k]; `ok` false when a use of the k
// variables is anything else.
class FlattenLoads : public StmtExprMutator {
 public:
  FlattenLoads(std::vector<const VarNode*> ks, std::vector<PrimExpr> ext, Var k)
      : ks_(std::move(ks)), ext_(std::move(ext)), k_(std::move(k)), set_(ks_.begin(), ks_.end()) {}
  bool ok = true;

  PrimExpr MutateExpr(const PrimExpr& e) override {
    const auto* l = e.as<BufferLoadNode>();
    if (l == nullptr) return StmtExprMutator::MutateExpr(e);
    if (!AnyUses(l->indices, set_)) return e;
    const Buffer& b = l->buffer;
    size_t m = ks_.size(), n = l->indices.size();
    if (n < m || !b->strides.empty() || b->shape.size() != n) return Fail(e);
    for (size_t d = 0; d < m; ++d) {
      // Symbolic extents (a mean over H x W of any image size) too: the
      // buffer's and the loop's equal expressions.
      const PrimExpr& dim = b->shape[n - m + d];
      if (!IsVar(l->indices[n - m + d], ks_[d]) ||
          (!ProvenSameExtent(dim, ext_[d]))) {
        return Fail(e);
      }
    }
    std::vector<PrimExpr> lead(l->indices.begin(), l->indices.end() - m);
    if (AnyUses(lead, set_)) return Fail(e);
    lead.push_back(PrimExpr(k_));
    return Load(View(b), lead);
  }

 private:
  PrimExpr Fail(const PrimExpr& e) {
    ok = false;
    return e;
  }
  Buffer View(const Buffer& b) {
    auto it = views_.find(b->data.get());
    if (it != views_.end()) return it->second;
    auto v = std::make_shared<BufferNode>(*b);
    v->shape.resize(b->shape.size() - ext_.size());
    v->shape.push_back(Product(ext_));
    views_[b->data.get()] = v;
    return v;
  }

  std::vector<const VarNode*> ks_;
  std::vector<PrimExpr> ext_;
  Var k_;
  std::unordered_set<const VarNode*> set_;
  std::unordered_map<const VarNode*, Buffer> views_;
};

class Flattener : public StmtExprMutator {
 public:
  bool changed = false;
  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      if (Stmt r = TryFlatten(s)) {
        changed = true;
        return r;
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  Stmt TryFlatten(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> loops = PeelNest(s, &body);
    const BufferStoreNode* update = As<BufferStoreNode>(body);
    const IfThenElseNode* guard = nullptr;
    const BufferStoreNode* init = nullptr;
    if (const auto* seq = As<SeqStmtNode>(body)) {
      if (seq->seq.size() != 2) return nullptr;
      guard = As<IfThenElseNode>(seq->seq[0]);
      update = As<BufferStoreNode>(seq->seq[1]);
      if (guard == nullptr || guard->else_case) return nullptr;
      init = As<BufferStoreNode>(guard->then_case);
      if (init == nullptr) return nullptr;
    }
    if (update == nullptr) return nullptr;
    // The reduction loops: the innermost ones the store's indices don't use.
    size_t first = loops.size();
    while (first > 0 && !AnyUses(update->indices, {loops[first - 1]->loop_var.get()})) --first;
    size_t m = loops.size() - first;
    if (m < 2) return nullptr;
    std::vector<const VarNode*> ks;
    std::vector<PrimExpr> ext;
    for (size_t d = first; d < loops.size(); ++d) {
      const int64_t* e = ConstInt(loops[d]->extent);
      if (!IsZero(loops[d]->min) || (e != nullptr && *e <= 0) || loops[d]->for_kind != ForKind::kSerial) return nullptr;
      ks.push_back(loops[d]->loop_var.get());
      ext.push_back(loops[d]->extent);
    }
    PrimExpr total = Product(ext);
    std::unordered_set<const VarNode*> kset(ks.begin(), ks.end());
    if (init != nullptr) {
      if (!IsInitGuard(guard->cond, loops, first) || init->buffer != update->buffer ||
          init->indices.size() != update->indices.size() || Uses(init->value, kset) || AnyUses(init->indices, kset)) {
        return nullptr;
      }
      for (size_t d = 0; d < init->indices.size(); ++d)
        if (!SameExtent(init->indices[d], update->indices[d])) return nullptr;
    }
    Var k = MakeVar("k");
    FlattenLoads flatten(ks, ext, k);
    PrimExpr value = flatten.MutateExpr(update->value);
    if (!flatten.ok || Uses(value, kset)) return nullptr;
    Stmt inner = Store(update->buffer, value, update->indices);
    if (init != nullptr) {
      PrimExpr at_zero = MakeBinary(TirKind::kEQ, PrimExpr(k), I64(0));
      inner = Seq({std::make_shared<IfThenElseNode>(at_zero, guard->then_case, nullptr), inner});
    }
    Stmt out = std::make_shared<ForNode>(k, I64(0), total, ForKind::kSerial, inner);
    for (size_t d = first; d-- > 0;) {
      const ForNode* f = loops[d];
      out = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, out);
    }
    return out;
  }
};

}  // namespace

PrimFunc FlattenTrailingReductions(const PrimFunc& func) {
  Flattener f;
  Stmt body = f.MutateStmt(func->body);
  return f.changed ? WithBody(func, body) : func;
}

}  // namespace tir
}  // namespace kiln
