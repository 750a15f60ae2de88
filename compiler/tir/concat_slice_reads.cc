#include "compiler/tir/concat_slice_reads.h"

#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;    // NOLINT
using namespace nest;  // NOLINT: the shared nest helpers

namespace {

// One source of the staged slice: B[y..] = S[lead.., y..] for v in [lo, hi).
struct Piece {
  const BufferLoadNode* load = nullptr;
  int64_t lo = 0, hi = 0;
};

// The fill's value as pieces over [0, extent) of the loop variable v.
bool ParsePieces(const PrimExpr& value, const VarNode* v, int64_t extent, const std::vector<const ForNode*>& fill,
                 std::vector<Piece>* pieces) {
  std::unordered_set<const VarNode*> ys;
  for (const ForNode* f : fill) ys.insert(f->loop_var.get());
  auto leaf = [&](const PrimExpr& e, int64_t lo, int64_t hi) {
    const auto* ld = e.as<BufferLoadNode>();
    if (ld == nullptr || ld->indices.size() < fill.size()) return false;
    const size_t lead = ld->indices.size() - fill.size();
    for (size_t d = 0; d < ld->indices.size(); ++d) {
      if (d < lead ? Uses(ld->indices[d], ys) : !IsVar(ld->indices[d], fill[d - lead]->loop_var.get())) return false;
    }
    pieces->push_back({ld, lo, hi});
    return true;
  };
  PrimExpr rest = value;
  int64_t lo = 0;
  for (;;) {
    const auto* call = rest.as<CallNode>();
    if (call == nullptr || call->op != "if_then_else" || call->args.size() != 3) break;
    const auto* lt = call->args[0].as<LTNode>();
    const int64_t* b = lt ? ConstInt(lt->b) : nullptr;
    if (b == nullptr || !IsVar(lt->a, v) || *b <= lo || *b >= extent) return false;
    if (!leaf(call->args[1], lo, *b)) return false;
    lo = *b;
    rest = call->args[2];
  }
  return leaf(rest, lo, extent);
}

// Loads of B (of B's rank) read from the piece's source instead.
class RedirectLoads : public StmtExprMutator {
 public:
  RedirectLoads(const VarNode* b, const BufferLoadNode* src, std::vector<PrimExpr> lead)
      : b_(b), src_(src), lead_(std::move(lead)) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    const auto* ld = m.as<BufferLoadNode>();
    if (ld == nullptr || ld->buffer->data.get() != b_) return m;
    std::vector<PrimExpr> idx = lead_;
    for (const PrimExpr& i : ld->indices) idx.push_back(i);
    return Load(src_->buffer, std::move(idx));
  }

 private:
  const VarNode* b_;
  const BufferLoadNode* src_;
  std::vector<PrimExpr> lead_;
};

// Every load of `b` in `s` has `rank` indices, and `s` stores into none of
// `written`.
bool ReadsOnly(const Stmt& s, const VarNode* b, size_t rank, const std::unordered_set<const VarNode*>& written) {
  BufferRefs refs = RefsOf(s);
  for (const auto& kv : refs.stores)
    if (kv.first == b || written.count(kv.first)) return false;
  for (const BufferLoadNode* ld : refs.load_nodes)
    if (ld->buffer->data.get() == b && ld->indices.size() != rank) return false;
  return true;
}

// The rewrite of one loop, or null.
Stmt Rewrite(const ForNode* loop) {
  const int64_t* extent = ConstInt(loop->extent);
  const auto* alloc = As<AllocateNode>(loop->body);
  const auto* seq = alloc ? As<SeqStmtNode>(alloc->body) : nullptr;
  if (extent == nullptr || !IsZero(loop->min) || seq == nullptr || seq->seq.size() < 2) return nullptr;
  const Buffer& b = alloc->buffer;
  Stmt inner;
  std::vector<const ForNode*> fill = PeelNest(seq->seq.front(), &inner);
  const auto* st = As<BufferStoreNode>(inner);
  if (st == nullptr || st->buffer->data.get() != b->data.get() || fill.size() != b->shape.size() ||
      st->indices.size() != fill.size())
    return nullptr;
  for (size_t d = 0; d < fill.size(); ++d) {
    const int64_t* e = ConstInt(fill[d]->extent);
    const int64_t* s = ConstInt(b->shape[d]);
    if (!IsZero(fill[d]->min) || e == nullptr || s == nullptr || *e != *s ||
        !IsVar(st->indices[d], fill[d]->loop_var.get()))
      return nullptr;
  }
  std::vector<Piece> pieces;
  if (!ParsePieces(st->value, loop->loop_var.get(), *extent, fill, &pieces)) return nullptr;
  std::unordered_set<const VarNode*> sources;
  for (const Piece& p : pieces) sources.insert(p.load->buffer->data.get());
  std::vector<Stmt> rest(seq->seq.begin() + 1, seq->seq.end());
  Stmt consumer = Seq(rest);
  if (!ReadsOnly(consumer, b->data.get(), fill.size(), sources)) return nullptr;
  std::vector<Stmt> out;
  for (const Piece& p : pieces) {
    Var v = MakeVar(loop->loop_var->name, loop->loop_var->dtype);
    VarMap map;
    map[loop->loop_var.get()] = p.lo == 0 ? PrimExpr(v) : PrimExpr(v) + IntImm(v->dtype, p.lo);
    std::vector<PrimExpr> lead;
    for (size_t d = 0; d + fill.size() < p.load->indices.size(); ++d)
      lead.push_back(arith::Simplify(Substitute(p.load->indices[d], map)));
    Stmt body = RedirectLoads(b->data.get(), p.load, lead).MutateStmt(Substitute(consumer, map));
    out.push_back(std::make_shared<ForNode>(v, loop->min, IntImm(loop->extent.dtype(), p.hi - p.lo), loop->for_kind,
                                            body, loop->thread_tag));
  }
  return Seq(out);
}

class Rewriter : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* loop = As<ForNode>(m);
    if (loop == nullptr) return m;
    Stmt r = Rewrite(loop);
    return r ? r : m;
  }
};

}  // namespace

PrimFunc ReadConcatSlicesInPlace(const PrimFunc& func) {
  Stmt body = Rewriter().MutateStmt(func->body);
  return body.get() == func->body.get() ? func : WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
