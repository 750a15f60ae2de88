#include "compiler/tir/deinterleave_channels.h"

#include <memory>
#include <unordered_set>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// Pixels per chunk: one 16-lane float vector per channel.
constexpr int64_t kChunk = 16;

bool Compact4d(const Buffer& b) {
  return b->strides.empty() && b->shape.size() == 4 && b->dtype == DType::Float32();
}

// Whether `b` is D's flat view: (N, C, H * W).
bool IsFlatView(const Buffer& b, const Buffer& d) {
  return b->strides.empty() && b->shape.size() == 3 && ProvenSameExtent(b->shape[0], d->shape[0]) &&
         ProvenSameExtent(b->shape[1], d->shape[1]) &&
         ProvenSameExtent(b->shape[2], arith::Simplify(d->shape[2] * d->shape[3]));
}

// Whether every reference to D's memory in `s` is a load or store of D
// (four indices) or of its flat view (three; the symbolic conv schedules
// read the plane through one): no raw handle use (a call's argument, an
// address) and no other shape.
bool OnlyPlainAccesses(const Stmt& s, const Buffer& d) {
  struct Finder : StmtExprVisitor {
    Buffer d;
    bool bad = false;
    bool Ok(const Buffer& b, size_t n) const {
      return b->data.get() != d->data.get() || (n == 4 && b->shape.size() == 4) || (n == 3 && IsFlatView(b, d));
    }
    void VisitExpr(const PrimExpr& e) override {
      if (e.get() == d->data.get()) bad = true;
      if (const auto* l = e.as<BufferLoadNode>(); l && !Ok(l->buffer, l->indices.size())) bad = true;
      if (!bad) StmtExprVisitor::VisitExpr(e);
    }
    void VisitStmt(const Stmt& st) override {
      if (const auto* b = As<BufferStoreNode>(st); b && !Ok(b->buffer, b->indices.size())) bad = true;
      if (!bad) StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.d = d;
  f.VisitStmt(s);
  return !f.bad;
}

// Finds the transposing nest of D (the file comment's pattern) in a
// statement and replaces it by the chunked deinterleave; every other access
// of D goes to the flat D'.
class Rewriter : public StmtExprMutator {
 public:
  Rewriter(const Buffer& d, const Buffer& flat, const std::unordered_set<const VarNode*>* params)
      : d_(d), flat_(flat), params_(params) {}
  int replaced = 0;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr && replaced == 0) {
      if (Stmt r = TryNest(s)) {
        ++replaced;
        return r;
      }
    }
    if (const auto* st = As<BufferStoreNode>(s); st && st->buffer->data.get() == d_->data.get() && st->indices.size() == 4) {
      std::vector<PrimExpr> idx;
      MutateExprs(st->indices, &idx);
      return Store(flat_, MutateExpr(st->value), Flat(idx));
    }
    return StmtExprMutator::MutateStmt(s);
  }

  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>(); l && l->buffer->data.get() == d_->data.get() && l->indices.size() == 4) {
      std::vector<PrimExpr> idx;
      MutateExprs(l->indices, &idx);
      return Load(flat_, Flat(idx));
    }
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  std::vector<PrimExpr> Flat(const std::vector<PrimExpr>& idx) const {
    return {idx[0], idx[1], arith::Simplify(idx[2] * d_->shape[3] + idx[3])};
  }

  Stmt TryNest(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> loops = PeelNest(s, &body);
    const auto* st = As<BufferStoreNode>(body);
    if (st == nullptr || st->buffer->data.get() != d_->data.get() || st->indices.size() != 4) return nullptr;
    const auto* ld = st->value.as<BufferLoadNode>();
    if (ld == nullptr || !Compact4d(ld->buffer) || !params_->count(ld->buffer->data.get())) return nullptr;
    const Buffer& b = ld->buffer;
    const std::vector<PrimExpr>& e = st->indices;
    const std::vector<PrimExpr>& f = ld->indices;
    if (!arith::StructuralEqual(f[0], e[0]) || !arith::StructuralEqual(f[1], e[2]) ||
        !arith::StructuralEqual(f[2], e[3]) || !arith::StructuralEqual(f[3], e[1])) {
      return nullptr;
    }
    const std::vector<PrimExpr>& ds = d_->shape;
    if (!ProvenSameExtent(b->shape[0], ds[0]) || !ProvenSameExtent(b->shape[1], ds[2]) ||
        !ProvenSameExtent(b->shape[2], ds[3]) || !ProvenSameExtent(b->shape[3], ds[1])) {
      return nullptr;
    }
    // Every element once: loops from 0 over exactly D's element count.
    PrimExpr count = I64(1);
    for (const ForNode* l : loops) {
      if (!IsZero(l->min)) return nullptr;
      count = count * l->extent;
    }
    if (!ProvenSameExtent(arith::Simplify(count), arith::Simplify(ds[0] * ds[1] * ds[2] * ds[3]))) return nullptr;
    const int64_t channels = *ConstInt(ds[1]);
    // B' [N, H * W * C]: a view of a parameter (the same memory).
    auto bv = std::make_shared<BufferNode>(*b);
    PrimExpr plane = arith::Simplify(ds[2] * ds[3]);
    bv->shape = {b->shape[0], arith::Simplify(plane * I64(channels))};
    Buffer bflat = bv;
    Var n = MakeVar("n"), q = MakeVar("q"), s0 = MakeVar("s0"), j = MakeVar("j"), p = MakeVar("p");
    std::vector<Stmt> vec, scalar;
    for (int64_t c = 0; c < channels; ++c) {
      PrimExpr from = PrimExpr(s0) * I64(channels) + PrimExpr(j) * I64(channels) + I64(c);
      vec.push_back(Store(flat_, Load(bflat, {PrimExpr(n), from}), {PrimExpr(n), I64(c), PrimExpr(s0) + PrimExpr(j)}));
      PrimExpr at = PrimExpr(p) * I64(channels) + I64(c);
      scalar.push_back(Store(flat_, Load(bflat, {PrimExpr(n), at}), {PrimExpr(n), I64(c), PrimExpr(p)}));
    }
    Stmt inner = std::make_shared<ForNode>(j, I64(0), I64(kChunk), ForKind::kVectorized, Seq(vec));
    PrimExpr start = MakeBinary(TirKind::kMin, PrimExpr(q) * I64(kChunk), plane - I64(kChunk));
    inner = std::make_shared<LetStmtNode>(s0, start, inner);
    PrimExpr chunks = arith::Simplify(MakeBinary(TirKind::kFloorDiv, plane + I64(kChunk - 1), I64(kChunk)));
    Stmt chunked = std::make_shared<ForNode>(q, I64(0), chunks, ForKind::kParallel, inner);
    Stmt small = std::make_shared<ForNode>(p, I64(0), plane, ForKind::kSerial, Seq(scalar));
    PrimExpr wide = MakeBinary(TirKind::kGE, plane, I64(kChunk));
    Stmt per_image = std::make_shared<IfThenElseNode>(wide, chunked, small);
    return std::make_shared<ForNode>(n, I64(0), ds[0], ForKind::kSerial, per_image);
  }

  Buffer d_, flat_;
  const std::unordered_set<const VarNode*>* params_;
};

class Finder : public StmtExprMutator {
 public:
  explicit Finder(const PrimFunc& func) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
  }

  Stmt MutateStmt(const Stmt& s) override {
    const auto* a = As<AllocateNode>(s);
    if (a == nullptr) return StmtExprMutator::MutateStmt(s);
    Stmt body = MutateStmt(a->body);
    const Buffer& d = a->buffer;
    const int64_t* c = Compact4d(d) ? ConstInt(d->shape[1]) : nullptr;
    // A static plane is one LLVM vectorizes as it stands (pinned builds).
    // (ConstInt points into its argument: the plane is named.)
    const PrimExpr plane = c != nullptr ? arith::Simplify(d->shape[2] * d->shape[3]) : PrimExpr();
    bool candidate = c != nullptr && (*c == 2 || *c == 3) && d->scope == "global" && ConstInt(plane) == nullptr;
    if (candidate && OnlyPlainAccesses(body, d)) {
      auto flat = std::make_shared<BufferNode>(*d);
      flat->shape = {d->shape[0], d->shape[1], plane};
      Rewriter r(d, flat, &params_);
      Stmt out = r.MutateStmt(body);
      if (r.replaced == 1) return std::make_shared<AllocateNode>(flat, out);
    }
    if (body == a->body) return s;
    return std::make_shared<AllocateNode>(a->buffer, body);
  }

 private:
  std::unordered_set<const VarNode*> params_;
};

}  // namespace

PrimFunc DeinterleaveChannels(const PrimFunc& func) {
  Finder finder(func);
  return WithBody(func, finder.MutateStmt(func->body));
}

}  // namespace tir
}  // namespace kiln
