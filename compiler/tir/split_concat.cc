#include "compiler/tir/split_concat.h"

#include <memory>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;    // NOLINT
using namespace nest;  // NOLINT: the shared nest helpers

namespace {

// A concatenation nest: its loops, its store, the axis (a loop index) the
// chain tests, the pieces' values and their lower bounds (bounds[0] = 0;
// constants, or expressions of the function's shape variables where the
// concatenated extents are symbolic).
struct ConcatNest {
  std::vector<const ForNode*> loops;
  const BufferStoreNode* store = nullptr;
  size_t axis = 0;
  std::vector<PrimExpr> values;
  std::vector<PrimExpr> bounds;
};

// The chain if_then_else(v < b, e, rest) of `value` on one loop variable,
// into *n (values and upper bounds of all but the last piece). A bound is a
// constant or, where the concatenated extents are symbolic (YOLOv8's
// detection head: rows of h * w * 16, h * w * 4 and h * w positions), an
// expression free of the nest's loop variables; the bounds must be proven
// increasing and inside the axis, so that the pieces tile it.
bool ParseChain(const PrimExpr& value, ConcatNest* n) {
  std::unordered_set<const VarNode*> loop_vars;
  for (const ForNode* f : n->loops) loop_vars.insert(f->loop_var.get());
  PrimExpr rest = value;
  const VarNode* v = nullptr;
  std::vector<PrimExpr> uppers;
  for (;;) {
    // The kind is checked before the cast (as<> compares the tag).
    const auto* call = rest.as<CallNode>();
    if (call == nullptr || call->op != "if_then_else" || call->args.size() != 3) break;
    const auto* lt = call->args[0].as<LTNode>();
    const VarNode* var = lt ? lt->a.as<VarNode>() : nullptr;
    if (var == nullptr || (v != nullptr && var != v) || Uses(lt->b, loop_vars)) return false;
    PrimExpr b = lt->b;
    // Strictly increasing constants as before; symbolic ones not
    // decreasing (a piece of run-time extent 0 is empty).
    const PrimExpr prev = uppers.empty() ? IntImm(b.dtype(), 0) : uppers.back();
    const bool both_const = ConstInt(b) != nullptr && ConstInt(prev) != nullptr;
    if (both_const ? *ConstInt(b) <= *ConstInt(prev) : !ProveAtMost(prev, b)) return false;
    v = var;
    uppers.push_back(b);
    n->values.push_back(call->args[1]);
    rest = call->args[2];
  }
  if (v == nullptr) return false;
  n->values.push_back(rest);
  n->bounds.push_back(IntImm(uppers.front().dtype(), 0));
  for (const PrimExpr& u : uppers) n->bounds.push_back(u);
  for (size_t d = 0; d < n->loops.size(); ++d) {
    if (n->loops[d]->loop_var.get() != v) continue;
    n->axis = d;
    // The last bound lies inside the axis (a constant extent), or the axis
    // is symbolic and the last constant bound is taken on trust (the last
    // piece then runs to its end), or a symbolic last bound is proven not
    // past the axis' end.
    const int64_t* ext = ConstInt(n->loops[d]->extent);
    const int64_t* last = ConstInt(uppers.back());
    if (last != nullptr) return ext == nullptr || *ext > *last;
    return ProveAtMost(uppers.back(), n->loops[d]->extent);
  }
  return false;
}

bool MatchConcat(const Stmt& item, const std::unordered_set<const VarNode*>& params, ConcatNest* n) {
  Stmt body;
  n->loops = PeelNest(item, &body);
  const auto* st = As<BufferStoreNode>(body);
  if (st == nullptr || n->loops.empty() || !params.count(st->buffer->data.get())) return false;
  if (st->indices.size() != n->loops.size()) return false;
  for (size_t d = 0; d < n->loops.size(); ++d) {
    if (!IsZero(n->loops[d]->min) || !IsVar(st->indices[d], n->loops[d]->loop_var.get())) return false;
  }
  n->store = st;
  return ParseChain(st->value, n);
}

// One nest per piece, each with fresh loop variables (no variable is
// defined by two loops).
std::vector<Stmt> Split(const ConcatNest& n) {
  std::vector<Stmt> out;
  const ForNode* axis = n.loops[n.axis];
  for (size_t i = 0; i < n.values.size(); ++i) {
    VarMap map;
    std::vector<Var> vars;
    for (const ForNode* f : n.loops) {
      Var v = MakeVar(f->loop_var->name, f->loop_var->dtype);
      vars.push_back(v);
      map[f->loop_var.get()] = PrimExpr(v);
    }
    const PrimExpr& lo = n.bounds[i];
    const bool at_zero = IsZero(lo);
    map[axis->loop_var.get()] = at_zero ? PrimExpr(vars[n.axis]) : lo + PrimExpr(vars[n.axis]);
    PrimExpr extent = arith::Simplify(i + 1 < n.bounds.size() ? n.bounds[i + 1] - lo : axis->extent - lo);
    std::vector<PrimExpr> idx;
    // The axis index as lo + v, unsimplified: the schedules take a store at
    // an invariant offset plus the loop variable as one element per
    // iteration (default_schedule.cc, symbolic_parallel.cc).
    for (const PrimExpr& e : n.store->indices) idx.push_back(Substitute(e, map));
    if (!at_zero) idx[n.axis] = lo + PrimExpr(vars[n.axis]);
    Stmt s = Store(n.store->buffer, arith::Simplify(Substitute(n.values[i], map)), idx);
    for (size_t d = n.loops.size(); d-- > 0;) {
      const ForNode* f = n.loops[d];
      PrimExpr ext = d == n.axis ? extent : f->extent;
      s = std::make_shared<ForNode>(vars[d], IntImm(f->min.dtype(), 0), ext, f->for_kind, s);
    }
    out.push_back(s);
  }
  return out;
}

// The function's items (under its top-level Allocates) and those Allocates.
std::vector<Stmt> ItemsOf(const PrimFunc& func, std::vector<const AllocateNode*>* allocs) {
  Stmt inner = func->body;
  while (const auto* a = As<AllocateNode>(inner)) {
    allocs->push_back(a);
    inner = a->body;
  }
  if (const auto* seq = As<SeqStmtNode>(inner)) return seq->seq;
  return {inner};
}

std::unordered_set<const VarNode*> ParamData(const PrimFunc& func) {
  std::unordered_set<const VarNode*> params;
  for (const auto& kv : func->buffer_map) params.insert(kv.second->data.get());
  return params;
}

// The fewest elements a piece of `n` stores, counting a symbolic extent as 1.
int64_t SmallestPiece(const ConcatNest& n) {
  int64_t others = 1;
  for (size_t d = 0; d < n.loops.size(); ++d) {
    const int64_t* e = ConstInt(n.loops[d]->extent);
    if (d != n.axis && e != nullptr) others *= *e;
  }
  int64_t smallest = -1;
  for (size_t i = 0; i < n.bounds.size(); ++i) {
    PrimExpr ext = arith::Simplify(i + 1 < n.bounds.size() ? n.bounds[i + 1] - n.bounds[i]
                                                           : n.loops[n.axis]->extent - n.bounds[i]);
    const int64_t* e = ConstInt(ext);
    int64_t piece = others * (e != nullptr ? *e : 1);
    if (smallest < 0 || piece < smallest) smallest = piece;
  }
  return smallest;
}

PrimFunc SplitNests(const PrimFunc& func, int64_t min_piece_elements) {
  std::vector<const AllocateNode*> allocs;
  std::vector<Stmt> items = ItemsOf(func, &allocs);
  std::unordered_set<const VarNode*> params = ParamData(func);
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& item : items) {
    ConcatNest n;
    if (!MatchConcat(item, params, &n) || SmallestPiece(n) < min_piece_elements) {
      out.push_back(item);
      continue;
    }
    for (Stmt& s : Split(n)) out.push_back(std::move(s));
    changed = true;
  }
  if (!changed) return func;
  Stmt body = Seq(out);
  for (size_t i = allocs.size(); i-- > 0;) body = std::make_shared<AllocateNode>(allocs[i]->buffer, body);
  return WithBody(func, body);
}

}  // namespace

PrimFunc SplitConcatenations(const PrimFunc& func) { return SplitNests(func, 0); }

PrimFunc SplitConcatenationsAndInline(const PrimFunc& lowered) {
  PrimFunc f = InlineElementwise(SplitConcatenations(lowered));
  if (!HasSplittableConcatenation(f)) return f;
  PrimFunc split = SplitNests(f, kMinLateSplitPieceElements);
  return split == f ? f : InlineElementwise(split);
}

bool HasSplittableConcatenation(const PrimFunc& func) {
  PrimFunc lowered = LowerBlocks(func);
  std::vector<const AllocateNode*> allocs;
  std::unordered_set<const VarNode*> params = ParamData(lowered);
  for (const Stmt& item : ItemsOf(lowered, &allocs)) {
    ConcatNest n;
    if (MatchConcat(item, params, &n)) return true;
  }
  return false;
}

}  // namespace tir
}  // namespace kiln
