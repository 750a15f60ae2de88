#include "compiler/tir/flatten_elementwise.h"

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

// The row offset k of a row index c + k (or c): -1 when it is anything else.
int64_t RowOffset(const PrimExpr& e, const VarNode* c) {
  if (IsVar(e, c)) return 0;
  const auto* add = e.as<AddNode>();
  if (add == nullptr) return -1;
  const int64_t* k = ConstInt(add->b);
  if (IsVar(add->a, c) && k != nullptr && *k >= 0) return *k;
  k = ConstInt(add->a);
  if (IsVar(add->b, c) && k != nullptr && *k >= 0) return *k;
  return -1;
}

// Accesses B[lead.., c + k, x] -> B_flat[lead.., k * W + j]; `ok` false
// when a use of c or x is anything else.
class Flatten : public StmtExprMutator {
 public:
  Flatten(const VarNode* c, const VarNode* x, PrimExpr width, Var j, const std::unordered_set<const VarNode*>* params)
      : c_(c), x_(x), width_(std::move(width)), j_(std::move(j)), params_(params), set_({c, x}) {}
  bool ok = true;

  PrimExpr MutateExpr(const PrimExpr& e) override {
    const auto* l = e.as<BufferLoadNode>();
    if (l == nullptr) return StmtExprMutator::MutateExpr(e);
    if (!AnyUses(l->indices, set_)) return e;
    std::vector<PrimExpr> idx;
    if (!At(l->buffer, l->indices, &idx)) {
      ok = false;
      return e;
    }
    return Load(View(l->buffer), idx);
  }

  // The flat indices of an access at `indices` of `b`, into *out.
  bool At(const Buffer& b, const std::vector<PrimExpr>& indices, std::vector<PrimExpr>* out) {
    size_t n = indices.size();
    // Views of parameters only: the passes after the schedule size the
    // function's own buffers by their accesses, which would then see two
    // shapes.
    if (n < 2 || !b->strides.empty() || b->shape.size() != n || !params_->count(b->data.get())) return false;
    int64_t k = RowOffset(indices[n - 2], c_);
    if (k < 0 || !IsVar(indices[n - 1], x_) || !ProvenSameExtent(b->shape[n - 1], width_)) return false;
    out->assign(indices.begin(), indices.end() - 2);
    if (AnyUses(*out, set_)) return false;
    out->push_back(k == 0 ? PrimExpr(j_) : I64(k) * width_ + PrimExpr(j_));
    return true;
  }

  Buffer View(const Buffer& b) {
    auto it = views_.find(b->data.get());
    if (it != views_.end()) return it->second;
    auto v = std::make_shared<BufferNode>(*b);
    size_t n = b->shape.size();
    v->shape.resize(n - 2);
    v->shape.push_back(arith::Simplify(b->shape[n - 2] * b->shape[n - 1]));
    views_[b->data.get()] = v;
    return v;
  }

 private:
  const VarNode* c_;
  const VarNode* x_;
  PrimExpr width_;
  Var j_;
  const std::unordered_set<const VarNode*>* params_;
  std::unordered_set<const VarNode*> set_;
  std::unordered_map<const VarNode*, Buffer> views_;
};

class Flattener : public StmtExprMutator {
 public:
  explicit Flattener(const PrimFunc& func) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
  }
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
    const BufferStoreNode* store = As<BufferStoreNode>(body);
    if (store == nullptr || loops.size() < 2) return nullptr;
    const ForNode* cl = loops[loops.size() - 2];
    const ForNode* xl = loops.back();
    for (const ForNode* f : {cl, xl})
      if (!IsZero(f->min) || f->for_kind != ForKind::kSerial) return nullptr;
    // A static width is a loop LLVM vectorizes or unrolls as it stands.
    // A static row count, and a loop outside the rows that is not of static
    // extent 1: the default schedule makes the outermost such loop parallel
    // and the innermost vectorized, which must then be two loops (a flat
    // loop alone would be made parallel and scalar).
    if (ConstInt(xl->extent) != nullptr || ConstInt(cl->extent) == nullptr) return nullptr;
    bool outer = false;
    for (size_t k = 0; k + 2 < loops.size(); ++k) {
      const int64_t* e = ConstInt(loops[k]->extent);
      outer = outer || e == nullptr || *e != 1;
    }
    if (!outer) return nullptr;
    const Buffer& d = store->buffer;
    const size_t n = store->indices.size();
    if (n < 2 || d->shape.size() != n || !IsVar(store->indices[n - 2], cl->loop_var.get()) ||
        !ProvenSameExtent(d->shape[n - 2], cl->extent)) {
      return nullptr;
    }
    Var j = MakeVar("j");
    Flatten flatten(cl->loop_var.get(), xl->loop_var.get(), xl->extent, j, &params_);
    std::vector<PrimExpr> idx;
    if (!flatten.At(d, store->indices, &idx)) return nullptr;
    // D is read nowhere in the value (an elementwise store, not an update).
    BufferRefs refs;
    refs.VisitExpr(store->value);
    if (refs.loads.count(d->data.get())) return nullptr;
    PrimExpr value = flatten.MutateExpr(store->value);
    if (!flatten.ok || Uses(value, {cl->loop_var.get(), xl->loop_var.get()})) return nullptr;
    Stmt out = std::make_shared<ForNode>(j, I64(0), arith::Simplify(cl->extent * xl->extent), ForKind::kSerial,
                                         Store(flatten.View(d), value, idx));
    for (size_t k = loops.size() - 2; k-- > 0;) {
      const ForNode* f = loops[k];
      out = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, out);
    }
    return out;
  }

  std::unordered_set<const VarNode*> params_;
};

// Whether some store reads its own buffer (a reduction or an update: a
// conv's, a matmul's). Their functions are left alone: their schedules and
// epilogue matchers read the elementwise nests after them in their rows.
bool HasUpdate(const Stmt& body) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = As<BufferStoreNode>(s)) {
        BufferRefs refs;
        refs.VisitExpr(st->value);
        if (refs.loads.count(st->buffer->data.get())) found = true;
      }
      if (!found) StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

}  // namespace

PrimFunc FlattenElementwiseRows(const PrimFunc& func) {
  if (HasUpdate(func->body)) return func;
  Flattener f(func);
  Stmt body = f.MutateStmt(func->body);
  return f.changed ? WithBody(func, body) : func;
}

}  // namespace tir
}  // namespace kiln
