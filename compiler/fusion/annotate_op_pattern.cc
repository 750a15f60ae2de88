#include "compiler/fusion/annotate_op_pattern.h"

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace fusion {
namespace {

using ir::BufferLoadNode;
using ir::PrimExpr;
using ir::Stmt;
using VarSet = std::set<const ir::VarNode*>;

OpPattern Combine(OpPattern a, OpPattern b) { return std::max(a, b); }

// The loads of an expression; `nested` is set when a load sits inside the
// indices of another (data-dependent indexing: gather, take).
class LoadCollector : public tir::StmtExprVisitor {
 public:
  std::vector<const BufferLoadNode*> loads;
  bool nested = false;

  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      if (depth_ > 0) nested = true;
      loads.push_back(l);
      ++depth_;
      for (const auto& i : l->indices) VisitExpr(i);
      --depth_;
      return;
    }
    tir::StmtExprVisitor::VisitExpr(e);
  }

 private:
  int depth_ = 0;
};

class VarCollector : public tir::StmtExprVisitor {
 public:
  VarSet vars;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) vars.insert(v);
    tir::StmtExprVisitor::VisitExpr(e);
  }
};

const ir::VarNode* PlainVar(const PrimExpr& e) { return e.as<ir::VarNode>(); }

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const ir::VarNode* va = PlainVar(a[i]);
    if (va == nullptr || va != PlainVar(b[i])) return false;
  }
  return true;
}

// Load indices relative to the store's (distinct plain variables).
OpPattern ClassifyLoad(const std::vector<PrimExpr>& store_idx, const BufferLoadNode& load, const VarSet& iter_vars) {
  if (SameIndices(store_idx, load.indices)) return kElemWise;
  // Broadcast: constants, or store variables in the store's order.
  bool broadcast = true;
  size_t next = 0;
  for (const auto& idx : load.indices) {
    if (idx.as<ir::IntImmNode>()) continue;
    const ir::VarNode* v = PlainVar(idx);
    size_t pos = next;
    while (v && pos < store_idx.size() && PlainVar(store_idx[pos]) != v) ++pos;
    if (!v || pos == store_idx.size()) {
      broadcast = false;
      break;
    }
    next = pos + 1;
  }
  if (broadcast) return kBroadcast;
  // Injective: any arithmetic of the store variables and of variables that are
  // not iteration variables (symbolic shapes).
  VarSet store_vars;
  for (const auto& s : store_idx) store_vars.insert(PlainVar(s));
  for (const auto& idx : load.indices) {
    VarCollector vc;
    vc.VisitExpr(idx);
    for (const ir::VarNode* v : vc.vars)
      if (iter_vars.count(v) && !store_vars.count(v)) return kOpaque;
  }
  return kInjective;
}

OpPattern AnalyzeReduction(const ir::Block& block, const ir::BufferStoreNode& store) {
  if (block.init) {
    const auto* init = ir::As<ir::BufferStoreNode>(block.init);
    if (!init || init->buffer != store.buffer || !SameIndices(init->indices, store.indices)) return kOpaque;
  }
  // The update must combine the accumulator (this very element) with a term.
  if (!ir::IsBinary(store.value->kind())) return kOpaque;
  const auto* bin = static_cast<const ir::BinaryNode*>(store.value.get());
  auto is_acc = [&](const PrimExpr& e) {
    const auto* l = e.as<BufferLoadNode>();
    return l && l->buffer == store.buffer && SameIndices(l->indices, store.indices);
  };
  PrimExpr term;
  if (is_acc(bin->a)) {
    term = bin->b;
  } else if (is_acc(bin->b)) {
    term = bin->a;
  } else {
    return kOpaque;
  }
  LoadCollector lc;
  lc.VisitExpr(term);
  if (lc.nested) return kOpaque;
  for (const auto* l : lc.loads)
    if (l->buffer == store.buffer) return kOpaque;
  // C += A * B: the inputs are re-read for many outputs (matmul, conv).
  if (store.value->kind() == ir::TirKind::kAdd && term->kind() == ir::TirKind::kMul && lc.loads.size() >= 2) {
    return kOutEWiseFusable;
  }
  for (const auto* l : lc.loads) {
    for (const auto& idx : l->indices) {
      if (!idx.as<ir::IntImmNode>() && !PlainVar(idx)) return kOutEWiseFusable;  // a window (pooling)
    }
  }
  return kCommReduce;
}

OpPattern AnalyzeBlock(const ir::Block& block, const VarSet& loop_vars) {
  const auto* store = ir::As<ir::BufferStoreNode>(block.body);
  if (!store) return kOpaque;
  VarSet seen;
  for (const auto& idx : store->indices) {
    const ir::VarNode* v = PlainVar(idx);
    if (!v || !seen.insert(v).second) return kOpaque;
  }
  bool has_reduce = false;
  VarSet iter_vars = loop_vars;
  for (const auto& iv : block.iter_vars) {
    iter_vars.insert(iv.var.get());
    has_reduce |= iv.kind == ir::IterKind::kReduce;
  }
  if (has_reduce) return AnalyzeReduction(block, *store);
  if (block.init) return kOpaque;

  LoadCollector lc;
  lc.VisitExpr(store->value);
  if (lc.nested) return kOpaque;
  if (lc.loads.empty()) return kBroadcast;  // a fill
  OpPattern p = kElemWise;
  for (const auto* l : lc.loads) {
    if (l->buffer == store->buffer) return kOpaque;  // reads what it writes: a scan or accumulation
    p = Combine(p, ClassifyLoad(store->indices, *l, iter_vars));
    if (p == kOpaque) return kOpaque;
  }
  return p;
}

OpPattern Walk(const Stmt& s, VarSet* loop_vars) {
  if (!s) return kOpaque;
  if (const auto* f = ir::As<ir::ForNode>(s)) {
    loop_vars->insert(f->loop_var.get());
    OpPattern p = Walk(f->body, loop_vars);
    loop_vars->erase(f->loop_var.get());
    return p;
  }
  if (const auto* seq = ir::As<ir::SeqStmtNode>(s)) {
    if (seq->seq.empty()) return kOpaque;
    OpPattern p = kElemWise;
    for (const auto& c : seq->seq) p = Combine(p, Walk(c, loop_vars));
    return p;
  }
  if (const auto* br = ir::As<ir::BlockRealizeNode>(s)) {
    const ir::Block& b = br->block;
    if (ir::As<ir::BufferStoreNode>(b.body)) return AnalyzeBlock(b, *loop_vars);
    // A block with no iteration variables only groups others (the root block).
    if (b.iter_vars.empty() && !b.init) return Walk(b.body, loop_vars);
    return kOpaque;
  }
  return kOpaque;
}

}  // namespace

OpPattern AnalyzeOpPattern(const ir::PrimFunc& func) {
  VarSet loop_vars;
  return Walk(func->body, &loop_vars);
}

ir::IRModule AnnotateOpPattern(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  for (auto& e : out.entries) {
    if (!e.prim) continue;
    auto it = e.prim->attrs.find(kOpPatternAttr);
    if (it != e.prim->attrs.end() && it->second.kind == ir::AttrValue::Kind::kInt) continue;
    auto f = std::make_shared<ir::PrimFuncNode>(*e.prim);
    ir::AttrValue v;
    v.kind = ir::AttrValue::Kind::kInt;
    v.i = AnalyzeOpPattern(e.prim);
    f->attrs[kOpPatternAttr] = v;
    e.prim = f;
  }
  return out;
}

}  // namespace fusion
}  // namespace kiln
