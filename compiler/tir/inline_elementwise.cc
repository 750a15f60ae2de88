#include "compiler/tir/inline_elementwise.h"

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// A math epilogue (x * sigmoid(x)) repeated into a register tile of more
// elements than this (8 zmm vectors) stays a pass of its own.
constexpr int64_t kMaxMathTileElements = 128;

using namespace nest;  // NOLINT: the shared nest helpers

// A store, the loops around it inside its item (outermost first), and
// whether only loops and sequences lie between the item's root and it.
struct StoreSite {
  const BufferStoreNode* store = nullptr;
  std::vector<const ForNode*> loops;
  bool plain = true;
  size_t item = 0;
};

// A load and the store whose value holds it (-1: a condition, an extent).
struct LoadSite {
  const BufferLoadNode* load = nullptr;
  int store = -1;
  size_t item = 0;
};

class SiteCollector : public StmtExprVisitor {
 public:
  std::vector<StoreSite> stores;
  std::vector<LoadSite> loads;
  size_t item = 0;

  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      loops_.push_back(f);
      StmtExprVisitor::VisitStmt(s);
      loops_.pop_back();
      return;
    }
    if (const auto* st = As<BufferStoreNode>(s)) {
      StoreSite site;
      site.store = st;
      site.loops = loops_;
      site.plain = wrappers_ == 0;
      site.item = item;
      stores.push_back(site);
      int saved = current_;
      current_ = static_cast<int>(stores.size()) - 1;
      StmtExprVisitor::VisitStmt(s);
      current_ = saved;
      return;
    }
    bool wrapper = As<SeqStmtNode>(s) == nullptr;
    wrappers_ += wrapper ? 1 : 0;
    StmtExprVisitor::VisitStmt(s);
    wrappers_ -= wrapper ? 1 : 0;
  }

  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) loads.push_back({l, current_, item});
    StmtExprVisitor::VisitExpr(e);
  }

 private:
  std::vector<const ForNode*> loops_;
  int wrappers_ = 0;
  int current_ = -1;
};

const VarNode* DataOf(const Buffer& b) { return b->data.get(); }

// indices[d] is loops[d]'s variable for every d, each loop from 0.
bool AtLoopPoint(const std::vector<PrimExpr>& indices, const std::vector<const ForNode*>& loops) {
  if (indices.size() != loops.size()) return false;
  for (size_t d = 0; d < loops.size(); ++d) {
    if (!IsVar(indices[d], loops[d]->loop_var.get()) || !IsZero(loops[d]->min)) return false;
  }
  return true;
}

// The loop values at which a store to `t` at `indices` inside `loops` writes
// the element at `at`, into *map: each loop (from 0) is an index by itself,
// or a loop v that the default schedule fused from two dimensions (for
// parallel work over a symbolic batch), stored at v // E in one and v % E in
// another whose extent is E: then v = at[first] * E + at[second]. False when
// a loop is neither, or is used elsewhere in the indices.
// A fused loop v of InvertStoreIndices: v // by is `quotient`, v % by is
// `remainder` at the element read.
struct FusedLoop {
  const VarNode* v;
  int64_t by;
  PrimExpr quotient, remainder;
};

// Rewrites v // by and v % by of each fused loop to its parts, so the
// inlined value has no division (the simplifier cannot tell that the
// remainder lies in [0, by)).
class ReplaceFusedParts : public StmtExprMutator {
 public:
  explicit ReplaceFusedParts(const std::vector<FusedLoop>& fused) : fused_(fused) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    const BinaryNode* fd = e.as<FloorDivNode>();
    const BinaryNode* fm = e.as<FloorModNode>();
    const BinaryNode* b = fd ? fd : fm;
    if (const int64_t* c = b ? ConstInt(b->b) : nullptr) {
      for (const FusedLoop& f : fused_)
        if (IsVar(b->a, f.v) && *c == f.by) return fd ? f.quotient : f.remainder;
    }
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  const std::vector<FusedLoop>& fused_;
};

bool InvertStoreIndices(const std::vector<PrimExpr>& indices, const std::vector<const ForNode*>& loops,
                        const Buffer& t, const std::vector<PrimExpr>& at, VarMap* map,
                        std::vector<FusedLoop>* fused) {
  if (indices.size() != t->shape.size() || at.size() != indices.size()) return false;
  for (const ForNode* f : loops) {
    if (!IsZero(f->min)) return false;
    const VarNode* v = f->loop_var.get();
    int whole = -1, div = -1, mod = -1;
    int64_t div_by = 0, mod_by = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      const PrimExpr& e = indices[d];
      if (IsVar(e, v)) {
        if (whole >= 0 || div >= 0 || mod >= 0) return false;
        whole = static_cast<int>(d);
        continue;
      }
      // The kind is checked before the cast (as<> compares the tag).
      const BinaryNode* fd = e.as<FloorDivNode>();
      const BinaryNode* fm = e.as<FloorModNode>();
      const BinaryNode* b = fd ? fd : fm;
      const int64_t* c = b ? ConstInt(b->b) : nullptr;
      if (fd && c && *c > 0 && IsVar(b->a, v) && div < 0) {
        div = static_cast<int>(d);
        div_by = *c;
      } else if (fm && c && *c > 0 && IsVar(b->a, v) && mod < 0) {
        mod = static_cast<int>(d);
        mod_by = *c;
      } else if (Uses(e, {v})) {
        return false;
      }
    }
    if (whole >= 0 && div < 0 && mod < 0) {
      (*map)[v] = at[whole];
    } else if (whole < 0 && div >= 0 && mod >= 0 && div_by == mod_by) {
      const int64_t* ext = ConstInt(t->shape[mod]);
      if (ext == nullptr || *ext != mod_by) return false;
      (*map)[v] = at[div] * IntImm(at[mod].dtype(), mod_by) + at[mod];
      fused->push_back({v, mod_by, at[div], at[mod]});
    } else {
      return false;
    }
  }
  // Every index is a loop's (no index is free of the loops).
  for (const PrimExpr& e : indices) {
    bool used = false;
    for (const ForNode* f : loops) used = used || Uses(e, {f->loop_var.get()});
    if (!used) return false;
  }
  return true;
}

bool CoversShape(const std::vector<const ForNode*>& loops, const Buffer& b) {
  if (loops.size() != b->shape.size()) return false;
  // Symbolic extents: the loop's and the buffer's are often equal
  // expressions built separately (H * 16 twice), not one node.
  for (size_t d = 0; d < loops.size(); ++d)
    if (!ProvenSameExtent(loops[d]->extent, b->shape[d]))
      return false;
  return true;
}

// Whether a store at `indices` inside `loops` visits each element of `b`
// once, with at least one loop fused from two dimensions: each loop (from 0,
// in order) is one dimension's index by itself (its extent the dimension's),
// or, fused (SpreadSymbolicParallel: parallel work over a symbolic batch), a
// loop v over N * E indexing dimension d by v // E and d + 1 by v % E, with
// b's shape N, E there. A conv schedule's epilogue over a symbolic batch
// (bias and relu after Silero VAD's encoder convolutions) runs in such a
// loop.
bool CoversShapeFused(const std::vector<PrimExpr>& indices, const std::vector<const ForNode*>& loops,
                      const Buffer& b) {
  if (indices.size() != b->shape.size()) return false;
  size_t d = 0;
  bool fused = false;
  for (const ForNode* f : loops) {
    if (d >= indices.size() || !IsZero(f->min)) return false;
    const VarNode* v = f->loop_var.get();
    if (IsVar(indices[d], v)) {
      if (!ProvenSameExtent(f->extent, b->shape[d])) return false;
      ++d;
      continue;
    }
    if (d + 1 >= indices.size()) return false;
    const BinaryNode* q = indices[d].as<FloorDivNode>();
    const BinaryNode* r = indices[d + 1].as<FloorModNode>();
    const int64_t* qe = q ? ConstInt(q->b) : nullptr;
    const int64_t* re = r ? ConstInt(r->b) : nullptr;
    const int64_t* e = ConstInt(b->shape[d + 1]);
    if (qe == nullptr || re == nullptr || e == nullptr || *qe != *re || *qe != *e || !IsVar(q->a, v) ||
        !IsVar(r->a, v) || !ProvenSameExtent(f->extent, b->shape[d] * I64(*e)))
      return false;
    d += 2;
    fused = true;
  }
  return fused && d == indices.size();
}

// The same index: one node, or the same loop variable divided (or taken
// modulo) by the same constant (a fused loop's parts, built per use).
bool SameIndex(const PrimExpr& a, const PrimExpr& b) {
  if (a.get() == b.get()) return true;
  if (a->kind() != b->kind() || (a->kind() != TirKind::kFloorDiv && a->kind() != TirKind::kFloorMod)) return false;
  const auto* x = static_cast<const BinaryNode*>(a.get());
  const auto* y = static_cast<const BinaryNode*>(b.get());
  const int64_t* cx = ConstInt(x->b);
  const int64_t* cy = ConstInt(y->b);
  return x->a.as<VarNode>() != nullptr && x->a.get() == y->a.get() && cx != nullptr && cy != nullptr && *cx == *cy;
}

std::optional<int64_t> StaticCount(const std::vector<PrimExpr>& extents) {
  int64_t n = 1;
  for (const PrimExpr& e : extents) {
    const int64_t* v = ConstInt(e);
    if (v == nullptr) return std::nullopt;
    n *= *v;
  }
  return n;
}

// Symbolic extents whose products are provably equal (a transpose of T:
// the consumer computes each element of T once).
bool SameElementCount(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  auto product = [](const std::vector<PrimExpr>& v) {
    PrimExpr p = I64(1);
    for (const PrimExpr& e : v) p = p * e;
    return p;
  };
  return arith::CanProveEqual(product(a), product(b));
}

// Whether the extents `c` hold at most `growth` times the elements of `t`
// where both have the same symbolic extents (each proven equal to one of the
// other's) and static ones otherwise: a symbolic batch N times static image
// sizes, N cancels. (Without this a consumer reading a slice of T, under a
// symbolic batch, was neither a cover of T's shape nor of its element count.)
bool AtMostTimesCount(const std::vector<PrimExpr>& c, const std::vector<PrimExpr>& t, int64_t growth) {
  int64_t cn = 1, tn = 1;
  std::vector<PrimExpr> c_sym, t_sym;
  for (const PrimExpr& e : c) {
    if (const int64_t* v = ConstInt(e)) cn *= *v;
    else c_sym.push_back(e);
  }
  for (const PrimExpr& e : t) {
    if (const int64_t* v = ConstInt(e)) tn *= *v;
    else t_sym.push_back(e);
  }
  if (c_sym.size() != t_sym.size()) return false;
  std::vector<bool> used(t_sym.size(), false);
  for (const PrimExpr& e : c_sym) {
    bool found = false;
    for (size_t j = 0; j < t_sym.size() && !found; ++j)
      if (!used[j] && arith::CanProveEqual(e, t_sym[j])) used[j] = found = true;
    if (!found) return false;
  }
  return cn <= growth * tn;
}

bool Loads(const PrimExpr& e, const VarNode* data) {
  BufferRefs r;
  r.VisitExpr(e);
  return r.loads.count(data) > 0;
}

// The buffers an expression loads.
std::unordered_set<const VarNode*> LoadedBy(const PrimExpr& e) {
  BufferRefs r;
  r.VisitExpr(e);
  std::unordered_set<const VarNode*> out;
  for (const auto& kv : r.loads) out.insert(kv.first);
  return out;
}

// Whether `e` may be evaluated twice at no cost: at most two loads besides
// those of register tiles ("local" buffers: a tile's value plus a BN scale
// and shift) and no call but fma and if_then_else.
// A window schedule's 9-tap sum stored straight from strided loads, repeated
// in x * sigmoid(x), made MobileNetV3's 112^2 -> 56^2 depthwise layer 1.5x
// slower than the separate pass (LLVM did not fold the copies).
bool CheapToRepeat(const PrimExpr& e) {
  struct Finder : StmtExprVisitor {
    bool costly = false;
    int loads = 0;
    void VisitExpr(const PrimExpr& x) override {
      if (const auto* c = x.as<CallNode>())
        if (c->op != "fma" && c->op != "if_then_else") costly = true;
      if (const auto* l = x.as<BufferLoadNode>()) loads += l->buffer->scope != "local";
      StmtExprVisitor::VisitExpr(x);
    }
  } f;
  f.VisitExpr(e);
  return !f.costly && f.loads <= 2;
}

// Whether `e` calls a function other than fma and if_then_else (sigmoid,
// exp, tanh: a polynomial and a divide per vector).
bool CallsMath(const PrimExpr& e) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitExpr(const PrimExpr& x) override {
      if (const auto* c = x.as<CallNode>())
        if (c->op != "fma" && c->op != "if_then_else") found = true;
      StmtExprVisitor::VisitExpr(x);
    }
  } f;
  f.VisitExpr(e);
  return f.found;
}

// Elements one pass of a store's unrolled and vectorized loops writes (its
// register tile); 0 when an extent is not a constant.
int64_t TileElements(const std::vector<const ForNode*>& loops) {
  int64_t n = 1;
  for (const ForNode* f : loops) {
    if (f->for_kind != ForKind::kUnrolled && f->for_kind != ForKind::kVectorized) continue;
    const int64_t* ext = ConstInt(f->extent);
    if (ext == nullptr) return 0;
    n *= *ext;
  }
  return n;
}

// `s` without the store `target`; loops and sequences left empty go too.
Stmt RemoveStore(const Stmt& s, const BufferStoreNode* target) {
  if (s.get() == target) return nullptr;
  if (const auto* f = As<ForNode>(s)) {
    Stmt body = RemoveStore(f->body, target);
    if (body == f->body) return s;
    if (!body) return nullptr;
    return std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, body);
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& c : seq->seq) {
      Stmt m = RemoveStore(c, target);
      changed = changed || m != c;
      if (m) out.push_back(m);
    }
    if (!changed) return s;
    return out.empty() ? nullptr : Seq(out);
  }
  return s;
}

class ReplaceLoad : public StmtExprMutator {
 public:
  ReplaceLoad(const BufferLoadNode* target, PrimExpr with) : target_(target), with_(std::move(with)) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (e.get() == target_) return with_;
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  const BufferLoadNode* target_;
  PrimExpr with_;
};

// Rewrites each store of one buffer through `rewrite`.
class RewriteStores : public StmtExprMutator {
 public:
  RewriteStores(const VarNode* data, std::function<Stmt(const BufferStoreNode*)> rewrite)
      : data_(data), rewrite_(std::move(rewrite)) {}
  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) {
      if (DataOf(st->buffer) == data_) return rewrite_(st);
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  const VarNode* data_;
  std::function<Stmt(const BufferStoreNode*)> rewrite_;
};

// if_then_else(a, if_then_else(b, x, c), c') with c == c' (float32):
// if_then_else(a && b, x, c'), the form the window schedule reads its taps
// in (one test over one load).
class MergeTests : public StmtExprMutator {
 public:
  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    const auto* outer = m.as<CallNode>();
    if (outer == nullptr || outer->op != "if_then_else" || outer->args.size() != 3) return m;
    const auto* inner = outer->args[1].as<CallNode>();
    if (inner == nullptr || inner->op != "if_then_else" || inner->args.size() != 3) return m;
    const auto* a = outer->args[2].as<FloatImmNode>();
    const auto* b = inner->args[2].as<FloatImmNode>();
    if (a == nullptr || b == nullptr || static_cast<float>(a->value) != static_cast<float>(b->value)) return m;
    return PrimExpr(std::make_shared<CallNode>(
        outer->dtype, outer->op,
        std::vector<PrimExpr>{MakeBinary(TirKind::kAnd, outer->args[0], inner->args[0]), inner->args[1], outer->args[2]}));
  }
};

class Inliner {
 public:
  Inliner(std::vector<Stmt> items, std::vector<Buffer> temps, bool repeat_cheap)
      : items_(std::move(items)), temps_(std::move(temps)), repeat_cheap_(repeat_cheap) {}

  bool Step() {
    Collect();
    redirected_ = false;
    for (const Buffer& t : temps_) {
      if (Forward(t) || Reverse(t)) return true;
    }
    for (const Buffer& t : temps_) {
      if (RedirectCopyLoad(t)) return redirected_ = true;
    }
    return false;
  }

  // Whether the last Step redirected a load (removing no store).
  bool redirected() const { return redirected_; }

  const std::vector<Stmt>& items() const { return items_; }

 private:
  void Collect() {
    SiteCollector c;
    for (size_t i = 0; i < items_.size(); ++i) {
      c.item = i;
      c.VisitStmt(items_[i]);
    }
    stores_ = std::move(c.stores);
    loads_ = std::move(c.loads);
  }

  std::vector<const StoreSite*> StoresOf(const VarNode* data) const {
    std::vector<const StoreSite*> out;
    for (const StoreSite& s : stores_)
      if (DataOf(s.store->buffer) == data) out.push_back(&s);
    return out;
  }
  std::vector<const LoadSite*> LoadsOf(const VarNode* data) const {
    std::vector<const LoadSite*> out;
    for (const LoadSite& l : loads_)
      if (DataOf(l.load->buffer) == data) out.push_back(&l);
    return out;
  }

  // Every buffer in `reads` (but `except`) is stored only in items before `item`.
  bool FinalBefore(const std::unordered_set<const VarNode*>& reads, const VarNode* except, size_t item) const {
    for (const VarNode* r : reads) {
      if (r == except) continue;
      for (const StoreSite* s : StoresOf(r))
        if (s->item >= item) return false;
    }
    return true;
  }

  // A plain elementwise store: at the loop point of its loops, not reading
  // what it stores.
  bool PlainStore(const StoreSite& s) const {
    return s.plain && AtLoopPoint(s.store->indices, s.loops) && !Loads(s.store->value, DataOf(s.store->buffer));
  }

  // A slice store: plain, each index its loop's variable (loops from 0)
  // plus an offset, not reading what it stores (a piece of a split
  // concatenation, split_concat.h). The offset is a constant or, where the
  // pieces' extents are symbolic, an expression free of the nest's loop
  // variables. Its [lo, lo + extent) per axis into *box.
  bool SliceStore(const StoreSite& s, std::vector<std::pair<PrimExpr, PrimExpr>>* box) const {
    if (!s.plain || s.store->indices.size() != s.loops.size() || Loads(s.store->value, DataOf(s.store->buffer)))
      return false;
    std::unordered_set<const VarNode*> loop_vars;
    for (const ForNode* f : s.loops) loop_vars.insert(f->loop_var.get());
    box->clear();
    for (size_t d = 0; d < s.loops.size(); ++d) {
      const PrimExpr& e = s.store->indices[d];
      const VarNode* v = s.loops[d]->loop_var.get();
      if (!IsZero(s.loops[d]->min)) return false;
      PrimExpr lo = IntImm(e.dtype(), 0);
      if (!IsVar(e, v)) {
        // lo + v (as split_concat writes it) or v + c.
        const auto* add = e.as<AddNode>();
        if (add == nullptr) return false;
        if (IsVar(add->b, v) && !nest::Uses(add->a, loop_vars)) {
          lo = add->a;
        } else if (IsVar(add->a, v) && ConstInt(add->b) != nullptr) {
          lo = add->b;
        } else {
          return false;
        }
      }
      box->push_back({lo, arith::Simplify(lo + s.loops[d]->extent)});
    }
    return true;
  }

  // Every store of `d` is a slice store, and no two overlap: on some axis
  // one range is proven to end where the other begins or before.
  bool DisjointSlices(const VarNode* d) const {
    std::vector<std::vector<std::pair<PrimExpr, PrimExpr>>> boxes;
    for (const StoreSite* s : StoresOf(d)) {
      boxes.emplace_back();
      if (!SliceStore(*s, &boxes.back())) return false;
    }
    for (size_t i = 0; i < boxes.size(); ++i) {
      for (size_t j = i + 1; j < boxes.size(); ++j) {
        if (boxes[i].size() != boxes[j].size()) return false;
        bool apart = false;
        for (size_t k = 0; k < boxes[i].size() && !apart; ++k) {
          const auto& a = boxes[i][k];
          const auto& b = boxes[j][k];
          apart = nest::ProveAtMost(a.second, b.first) || nest::ProveAtMost(b.second, a.first);
        }
        if (!apart) return false;
      }
    }
    return true;
  }

  bool Forward(const Buffer& t) {
    const VarNode* data = DataOf(t);
    auto st = StoresOf(data);
    auto ld = LoadsOf(data);
    if (st.size() != 1 || ld.size() != 1 || ld[0]->store < 0) return false;
    const StoreSite& p = *st[0];
    const StoreSite& c = stores_[ld[0]->store];
    if (c.store->buffer == t) return false;
    if (c.item < p.item || (c.item == p.item && c.store == p.store)) return false;
    // A copy of a copy: the producer only moves elements (a transpose, a
    // reshape or a pad) and the consumer stores the loaded element as it is,
    // in any nest (a schedule's packing of a convolution's input, as after
    // the NHWC -> NCHW transpose of a Keras export). Each consumer store
    // then loads the producer's source instead: one load for one, and T's
    // pass over memory goes. The producer's loops may be fused ones
    // (InvertStoreIndices): Silero VAD's reflect pad before its STFT, with
    // a symbolic batch of windows, was a separate pass (31 windows, 370 us
    // against 310 us with the batch pinned, where it was inlined).
    const bool copy_of_copy = p.store->value.as<BufferLoadNode>() != nullptr &&
                              c.store->value.get() == ld[0]->load && !Loads(c.store->value, DataOf(c.store->buffer));
    VarMap map;
    std::vector<FusedLoop> fused;
    if (copy_of_copy && p.plain && !Loads(p.store->value, data) && !(PlainStore(p) && CoversShape(p.loops, t))) {
      if (!InvertStoreIndices(p.store->indices, p.loops, t, ld[0]->load->indices, &map, &fused)) return false;
    } else {
      if (!PlainStore(p) || !CoversShape(p.loops, t)) return false;
      // (A load through a view of another rank has other indices.)
      if (ld[0]->load->indices.size() != p.loops.size()) return false;
      for (size_t d = 0; d < p.loops.size(); ++d) map[p.loops[d]->loop_var.get()] = ld[0]->load->indices[d];
    }
    const bool pad_into_window = !copy_of_copy && PadIntoWindow(p, c, ld[0]->load);
    if (!copy_of_copy && !pad_into_window) {
      // A slice store (a piece of a split concatenation) takes it as well:
      // the value moves to the load, wherever the consumer stores it (a
      // padded shift of a spectrum into its slice of a harmonic stack).
      std::vector<std::pair<PrimExpr, PrimExpr>> box;
      if (!PlainStore(c) && !SliceStore(c, &box)) return false;
      std::vector<PrimExpr> c_ext, t_ext = t->shape;
      for (const ForNode* f : c.loops) c_ext.push_back(f->extent);
      auto cn = StaticCount(c_ext), tn = StaticCount(t_ext);
      if (cn && tn) {
        if (*cn > kMaxInlineGrowth * *tn) return false;
      } else if (!CoversShape(c.loops, t) && !SameElementCount(c_ext, t_ext) &&
                 !AtMostTimesCount(c_ext, t_ext, kMaxInlineGrowth)) {
        return false;
      }
    }
    if (!FinalBefore(LoadedBy(p.store->value), data, p.item)) return false;
    PrimExpr value = Substitute(fused.empty() ? p.store->value : ReplaceFusedParts(fused).MutateExpr(p.store->value), map);
    // Remove the producer first: the consumer may sit in the same item.
    const BufferStoreNode* producer = p.store;
    const BufferLoadNode* load = ld[0]->load;
    size_t pi = p.item, ci = c.item;
    items_[ci] = ReplaceLoad(load, value).MutateStmt(items_[ci]);
    if (pad_into_window) items_[ci] = MergeTests().MutateStmt(items_[ci]);
    items_[pi] = RemoveStore(items_[pi], producer);
    Compact();
    return true;
  }

  // A pad (T[v] = if_then_else(inside, S[..], constant)) read by a max or
  // min window (D[i] = OP(D[i], T[..]) inside the tap loops): the tap reads
  // S under the pad's test, the form a pool with padding lowers to, which
  // the window schedule vectorizes with its tests as bounds (one run-time
  // interior). Kept as a separate pass, the copy cost more than the pool:
  // the importer's pad of a possibly-short MaxPool input (onnx ops_nn.cc,
  // PadShortMaxPoolInput) made ppocr_cls_v2's last 2 x 2 pool 6.4 us
  // against 1.4 pinned, 1 thread. Each tap is one tested load, as the
  // padded pool's own taps are, so no growth limit applies. Only max and
  // min: the conv schedules read their own form of padding.
  bool PadIntoWindow(const StoreSite& p, const StoreSite& c, const BufferLoadNode* load) const {
    const auto* call = p.store->value.as<CallNode>();
    if (call == nullptr || call->op != "if_then_else" || call->args.size() != 3) return false;
    if (call->args[1].as<BufferLoadNode>() == nullptr || call->args[2].as<FloatImmNode>() == nullptr) return false;
    if (!c.plain || !IsBinary(c.store->value->kind())) return false;
    TirKind op = c.store->value->kind();
    if (op != TirKind::kMax && op != TirKind::kMin) return false;
    const auto* bin = static_cast<const BinaryNode*>(c.store->value.get());
    // The tap as the pool lowers it: the load, or a test over it whose
    // other side is the pad's constant (then the two tests merge).
    auto is_tap = [&](const PrimExpr& e) {
      if (e.get() == load) return true;
      const auto* t = e.as<CallNode>();
      if (t == nullptr || t->op != "if_then_else" || t->args.size() != 3 || t->args[1].get() != load) return false;
      const auto* a = t->args[2].as<FloatImmNode>();
      const auto* b = call->args[2].as<FloatImmNode>();
      return a != nullptr && static_cast<float>(a->value) == static_cast<float>(b->value);
    };
    if (!is_tap(bin->a) && !is_tap(bin->b)) return false;
    const PrimExpr& acc = is_tap(bin->a) ? bin->b : bin->a;
    const auto* own = acc.as<BufferLoadNode>();
    if (own == nullptr || own->buffer != c.store->buffer || own->indices.size() != c.store->indices.size()) return false;
    for (size_t d = 0; d < own->indices.size(); ++d)
      if (!arith::StructuralEqual(own->indices[d], c.store->indices[d])) return false;
    return true;
  }

  // Before the schedules: a temporary T that is a plain copy (T[v] = S[f(v)]
  // over T's whole shape) and is loaded more than once. One of its loads in
  // a plain elementwise store reads S instead, one load for one; the
  // rewrites above take T with its last load. A symbolic STFT's magnitude
  // (silero-vad: sqrt(re^2 + im^2) over the two halves of a staged copy)
  // kept three workspace buffers of symbolic size and three passes (2.3 us
  // against 0.2 us with the dimensions pinned, where the buffers were small
  // stack arrays). After the schedules copies are theirs (packing).
  bool RedirectCopyLoad(const Buffer& t) {
    if (repeat_cheap_) return false;
    const VarNode* data = DataOf(t);
    auto st = StoresOf(data);
    auto ld = LoadsOf(data);
    if (st.size() != 1 || ld.size() < 2) return false;
    const StoreSite& p = *st[0];
    if (!p.store->value.as<BufferLoadNode>() || !PlainStore(p) || !CoversShape(p.loops, t)) return false;
    if (!FinalBefore(LoadedBy(p.store->value), data, p.item)) return false;
    for (const LoadSite* l : ld) {
      if (l->store < 0) continue;
      const StoreSite& c = stores_[l->store];
      if (c.store->buffer == t || !PlainStore(c)) continue;
      if (c.item < p.item || (c.item == p.item && c.store == p.store)) continue;
      if (l->load->indices.size() != p.loops.size()) continue;
      VarMap map;
      for (size_t d = 0; d < p.loops.size(); ++d) map[p.loops[d]->loop_var.get()] = l->load->indices[d];
      items_[c.item] = ReplaceLoad(l->load, Substitute(p.store->value, map)).MutateStmt(items_[c.item]);
      return true;
    }
    return false;
  }

  bool Reverse(const Buffer& t) {
    const VarNode* data = DataOf(t);
    auto st = StoresOf(data);
    auto ld = LoadsOf(data);
    if (st.empty() || ld.empty() || ld[0]->store < 0) return false;
    // Read more than once (x * sigmoid(x), hard-swish): only by one store,
    // after the schedules, and each producer value then appears that many
    // times in the consumer's, so it must be cheap to repeat.
    if (ld.size() > 1 && !repeat_cheap_) return false;
    for (const LoadSite* l : ld)
      if (l->store != ld[0]->store) return false;
    const StoreSite& c = stores_[ld[0]->store];
    const Buffer& d = c.store->buffer;
    // Or the consumer copies T into a slice of D (a piece of a split
    // concatenation): then T's producer writes the slice, and D's other
    // stores must be slices that this one does not overlap.
    std::vector<std::pair<PrimExpr, PrimExpr>> box;
    const bool slice = !PlainStore(c) && ld.size() == 1 && SliceStore(c, &box);
    // Or the consumer's loops are fused ones over T's (and D's) whole shape
    // (CoversShapeFused): each producer store then writes D at its own
    // indices, the fused loop's parts replaced by them.
    const bool fused = !PlainStore(c) && !slice && c.plain && !Loads(c.store->value, DataOf(d)) &&
                       CoversShapeFused(c.store->indices, c.loops, t) && CoversShapeFused(c.store->indices, c.loops, d);
    if ((!PlainStore(c) && !slice && !fused) || d == t) return false;
    if (!fused && !CoversShape(c.loops, t)) return false;
    if (!slice && !fused && !CoversShape(c.loops, d)) return false;
    // Each load at the consumer's point: its loop variables, or 0 for a
    // loop of extent 1 (as fused kernels index a batch of one).
    for (const LoadSite* l : ld) {
      const auto& li = l->load->indices;
      if (li.size() != c.store->indices.size()) return false;
      for (size_t k = 0; k < li.size(); ++k) {
        if (fused) {
          if (!SameIndex(li[k], c.store->indices[k])) return false;
          continue;
        }
        const int64_t* ext = ConstInt(c.loops[k]->extent);
        bool unit = ext != nullptr && *ext == 1 && IsZero(li[k]);
        bool at_loop = slice && IsVar(li[k], c.loops[k]->loop_var.get());
        if (li[k].get() != c.store->indices[k].get() && !unit && !at_loop) return false;
      }
    }
    size_t pi = st[0]->item;
    for (const StoreSite* s : st) {
      if (s->item != pi || Loads(s->store->value, data)) return false;
      if (fused && s->store->indices.size() != t->shape.size()) return false;
      if (ld.size() > 1 && !CheapToRepeat(s->store->value)) return false;
      if (ld.size() > 1 && CallsMath(c.store->value) && TileElements(s->loops) > kMaxMathTileElements) return false;
    }
    if (pi >= c.item) return false;
    if (StoresOf(DataOf(d)).size() != 1 && !(slice && DisjointSlices(DataOf(d)))) return false;
    for (const LoadSite* l : LoadsOf(DataOf(d)))
      if (l->item <= c.item) return false;
    if (!FinalBefore(LoadedBy(c.store->value), data, pi)) return false;
    const BufferStoreNode* consumer = c.store;
    std::vector<const ForNode*> loops = c.loops;
    size_t ci = c.item;
    items_[pi] = RewriteStores(data, [&](const BufferStoreNode* s) -> Stmt {
                   VarMap map;
                   if (fused) {
                     // D has T's shape and the consumer stores at the element it loads.
                     std::vector<FusedLoop> parts;
                     InvertStoreIndices(consumer->indices, loops, t, s->indices, &map, &parts);
                     PrimExpr g = ReplaceLoads(data, s->value)
                                      .MutateExpr(Substitute(ReplaceFusedParts(parts).MutateExpr(consumer->value), map));
                     return Store(consumer->buffer, g, s->indices);
                   }
                   for (size_t k = 0; k < loops.size(); ++k) map[loops[k]->loop_var.get()] = s->indices[k];
                   PrimExpr g = ReplaceLoads(data, s->value).MutateExpr(Substitute(consumer->value, map));
                   std::vector<PrimExpr> idx;
                   for (const PrimExpr& e : consumer->indices) idx.push_back(Substitute(e, map));
                   return Store(consumer->buffer, g, idx);
                 }).MutateStmt(items_[pi]);
    items_[ci] = RemoveStore(items_[ci], consumer);
    Compact();
    return true;
  }

  void Compact() {
    std::vector<Stmt> out;
    for (const Stmt& s : items_)
      if (s) out.push_back(s);
    items_ = std::move(out);
  }

  std::vector<Stmt> items_;
  std::vector<Buffer> temps_;
  bool repeat_cheap_;
  bool redirected_ = false;
  std::vector<StoreSite> stores_;
  std::vector<LoadSite> loads_;
};

}  // namespace

PrimFunc InlineElementwise(const PrimFunc& func, bool after_schedule) {
  // Top-level Allocates around the items.
  std::vector<const AllocateNode*> allocs;
  Stmt inner = func->body;
  while (const auto* a = As<AllocateNode>(inner)) {
    allocs.push_back(a);
    inner = a->body;
  }
  if (allocs.empty()) return func;
  std::vector<Stmt> items;
  if (const auto* seq = As<SeqStmtNode>(inner)) {
    items = seq->seq;
  } else {
    items = {inner};
  }
  std::unordered_set<const VarNode*> params;
  for (const auto& kv : func->buffer_map) params.insert(DataOf(kv.second));
  std::vector<Buffer> temps;
  for (const AllocateNode* a : allocs)
    if (!params.count(DataOf(a->buffer))) temps.push_back(a->buffer);
  Inliner inliner(items, temps, after_schedule);
  bool changed = false;
  // Each step removes a store of a temporary; bounded by their count. A
  // redirect removes a load of a temporary (for one of a buffer stored in an
  // earlier item): finitely many, not counted.
  for (size_t step = 0; step < 4 * temps.size() + 4 && inliner.Step(); step += inliner.redirected() ? 0 : 1) changed = true;
  if (!changed) return func;
  Stmt body = inliner.items().empty() ? Stmt(std::make_shared<SeqStmtNode>(std::vector<Stmt>{})) : Seq(inliner.items());
  for (size_t i = allocs.size(); i-- > 0;) body = std::make_shared<AllocateNode>(allocs[i]->buffer, body);
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
