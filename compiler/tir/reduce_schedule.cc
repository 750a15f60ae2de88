#include "compiler/tir/reduce_schedule.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// ---------------------------------------------------------------- analysis

using Accesses = nest::BufferAccesses;  // index lists, stores and allocations per buffer

bool IsVar(const PrimExpr& e, const VarNode* v) { return e.get() == v; }

// The dimension at which every index list uses exactly `v`, or -1.
int CommonDim(const std::vector<const std::vector<PrimExpr>*>& lists, const VarNode* v) {
  if (lists.empty()) return -1;
  size_t ndim = lists.front()->size();
  for (size_t d = 0; d < ndim; ++d) {
    bool all = true;
    for (const auto* idx : lists) {
      if (idx->size() != ndim || !IsVar((*idx)[d], v)) {
        all = false;
        break;
      }
    }
    if (all) return static_cast<int>(d);
  }
  return -1;
}

// True when different values of `v` touch disjoint slices of every buffer
// `body` stores to (buffers allocated inside `body` excepted).
bool IndependentOn(const Stmt& body, const VarNode* v) {
  Accesses a;
  a.VisitStmt(body);
  for (const auto& kv : a.by_buffer) {
    if (!kv.second.stored || a.allocated.count(kv.first)) continue;
    if (CommonDim(kv.second.indices, v) < 0) return false;
  }
  return true;
}

bool UsesVar(const PrimExpr& e, const VarNode* v) {
  struct Finder : StmtExprVisitor {
    const VarNode* v;
    bool found = false;
    void VisitExpr(const PrimExpr& x) override {
      if (x.get() == v) found = true;
      if (!found) StmtExprVisitor::VisitExpr(x);
    }
  } f;
  f.v = v;
  f.VisitExpr(e);
  return f.found;
}

bool TouchesBuffer(const Stmt& s, const VarNode* data) {
  Accesses a;
  a.VisitStmt(s);
  return a.by_buffer.count(data) > 0;
}

bool ContainsFor(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (As<ForNode>(st)) found = true;
      if (!found) StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

Stmt MakeFor(const Var& v, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, std::move(min), std::move(extent), kind, std::move(body));
}

std::optional<int64_t> StaticInt(const PrimExpr& e) {
  if (const auto* imm = e.as<IntImmNode>()) return imm->value;
  return std::nullopt;
}

// ---------------------------------------------------------------- 1. fusion

bool ContainsParallel(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (const auto* f = As<ForNode>(st)) found = found || f->for_kind == ForKind::kParallel;
      if (!found) StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

// Whether `s` updates a buffer in place, X[idx] = X[idx] OP f (a reduction's
// step): a row-wise kernel's loop rather than a chain of elementwise stages.
bool HasUpdate(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (const auto* store = As<BufferStoreNode>(st); store != nullptr && IsBinary(store->value->kind())) {
        const auto* bin = static_cast<const BinaryNode*>(store->value.get());
        for (const PrimExpr* side : {&bin->a, &bin->b}) {
          const auto* l = side->as<BufferLoadNode>();
          if (l == nullptr || l->buffer->data != store->buffer->data || l->indices.size() != store->indices.size()) continue;
          bool same = true;
          for (size_t d = 0; d < l->indices.size() && same; ++d) {
            const PrimExpr& a = l->indices[d];
            const PrimExpr& b = store->indices[d];
            const auto* ca = a.as<IntImmNode>();
            const auto* cb = b.as<IntImmNode>();
            same = a.get() == b.get() || (ca != nullptr && cb != nullptr && ca->value == cb->value);
          }
          found = found || same;
        }
      }
      if (!found) StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

// Parallel when one loop was (and no body holds a parallel loop: parallel
// loops never nest), vectorized when all were, serial otherwise.
ForKind FusedKind(const std::vector<const ForNode*>& loops) {
  if (loops.front()->for_kind == ForKind::kUnrolled) return ForKind::kUnrolled;  // all are
  bool any_par = false, all_vec = true, inner_par = false;
  for (const ForNode* f : loops) {
    any_par = any_par || f->for_kind == ForKind::kParallel;
    all_vec = all_vec && f->for_kind == ForKind::kVectorized;
    inner_par = inner_par || ContainsParallel(f->body);
  }
  if (any_par) return inner_par ? ForKind::kSerial : ForKind::kParallel;
  return all_vec ? ForKind::kVectorized : ForKind::kSerial;
}

class Fuser : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    const auto* seq = As<SeqStmtNode>(s);
    if (seq == nullptr) return StmtExprMutator::MutateStmt(s);
    // Greedy, left to right: a run of fusable loops becomes one loop.
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& st : seq->seq) {
      if (!out.empty()) {
        Stmt fused = TryFuse(out.back(), st);
        if (fused) {
          out.back() = fused;
          changed = true;
          continue;
        }
      }
      out.push_back(st);
    }
    // Then inside each (fused) statement.
    for (Stmt& st : out) {
      Stmt m = MutateStmt(st);
      if (m != st) changed = true;
      st = m;
    }
    return changed ? Seq(out) : s;
  }

 private:
  static Stmt TryFuse(const Stmt& a, const Stmt& b) {
    const auto* fa = As<ForNode>(a);
    const auto* fb = As<ForNode>(b);
    if (fa == nullptr || fb == nullptr) return nullptr;
    // Unrolled loops (micro-kernels) fuse only with each other: fusing would
    // drop the unroll.
    if ((fa->for_kind == ForKind::kUnrolled) != (fb->for_kind == ForKind::kUnrolled)) return nullptr;
    if (!arith::CanProveEqual(fa->min, fb->min) || !arith::CanProveEqual(fa->extent, fb->extent)) return nullptr;
    VarMap rename{{fb->loop_var.get(), PrimExpr(std::static_pointer_cast<const PrimExprNode>(fa->loop_var))}};
    Stmt body = Seq({fa->body, Substitute(fb->body, rename)});
    // Loops of one iteration run their bodies once either way, however
    // they index: a unit batch loop that one stage indexes by its variable
    // and the next by 0 (a pinned batch of 1) fuses, so that the row loops
    // inside can.
    // (Not unrolled ones: the micro-kernels' unit tile loops keep their
    // accumulators where the schedules put them. Only where a body holds a
    // reduction: chains of elementwise stages after a conv stay as they
    // are for InlineElementwise to store from the conv's tiles.)
    std::optional<int64_t> ext = StaticInt(fa->extent);
    bool once = ext && *ext == 1 && fa->for_kind != ForKind::kUnrolled && (HasUpdate(fa->body) || HasUpdate(fb->body));
    if (!once && !IndependentOn(body, fa->loop_var.get())) return nullptr;
    auto n = std::make_shared<ForNode>(fa->loop_var, fa->min, fa->extent, FusedKind({fa, fb}), body);
    n->span = fa->span;
    return n;
  }
};

// ---------------------------------------------------------------- 2. sinking

// Replaces every access of `from` by `to` with index `dim` dropped (index 0
// when `to` has one element and `from` had one dimension).
class DropDim : public StmtExprMutator {
 public:
  DropDim(const Buffer& from, Buffer to, int dim) : from_(from->data.get()), to_(std::move(to)), dim_(dim) {}

  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    if (const auto* load = m.as<BufferLoadNode>()) {
      if (load->buffer->data.get() == from_) return Load(to_, Indices(load->indices));
    }
    return m;
  }
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    if (const auto* store = As<BufferStoreNode>(m)) {
      if (store->buffer->data.get() == from_) return Store(to_, store->value, Indices(store->indices));
    }
    return m;
  }

 private:
  std::vector<PrimExpr> Indices(const std::vector<PrimExpr>& in) const {
    std::vector<PrimExpr> out;
    for (size_t d = 0; d < in.size(); ++d) {
      if (static_cast<int>(d) != dim_) out.push_back(in[d]);
    }
    if (out.empty()) out.push_back(IntImm(in[0].dtype(), 0));
    return out;
  }
  const VarNode* from_;
  Buffer to_;
  int dim_;
};

// `buf` allocated around `s`: the statement with the allocation moved into
// the one loop that uses it, or null when it cannot move.
// True when `s` uses `data` as a value (an address passed to a call, ...),
// not only through loads and stores of its buffer.
bool UsesHandle(const Stmt& s, const VarNode* data) {
  struct Finder : StmtExprVisitor {
    const VarNode* v;
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (e.get() == v) found = true;
      if (!found) StmtExprVisitor::VisitExpr(e);
    }
  } f;
  f.v = data;
  f.VisitStmt(s);
  return f.found;
}

Stmt Sink(const Buffer& buf, const Stmt& s) {
  const VarNode* data = buf->data.get();
  if (const auto* a = As<AllocateNode>(s)) {
    Stmt r = Sink(buf, a->body);
    return r ? std::make_shared<AllocateNode>(a->buffer, r) : nullptr;
  }
  if (const auto* l = As<LetStmtNode>(s)) {
    Stmt r = Sink(buf, l->body);
    return r ? std::make_shared<LetStmtNode>(l->var, l->value, r) : nullptr;
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    int user = -1;
    for (size_t i = 0; i < seq->seq.size(); ++i) {
      if (!TouchesBuffer(seq->seq[i], data)) continue;
      if (user >= 0) return nullptr;
      user = static_cast<int>(i);
    }
    if (user < 0) return nullptr;
    Stmt r = Sink(buf, seq->seq[user]);
    if (!r) return nullptr;
    std::vector<Stmt> out = seq->seq;
    out[user] = r;
    return Seq(out);
  }
  const auto* f = As<ForNode>(s);
  if (f == nullptr) return nullptr;
  Accesses acc;
  acc.VisitStmt(f->body);
  auto it = acc.by_buffer.find(data);
  if (it == acc.by_buffer.end()) return nullptr;
  int dim = CommonDim(it->second.indices, f->loop_var.get());
  // In a loop of one iteration its variable is its min: a dimension indexed
  // by either (a pinned unit batch, [b, ..] in one stage, [0, ..] in the
  // next) is this loop's slice too.
  std::optional<int64_t> lo = StaticInt(f->min), one = StaticInt(f->extent);
  bool unit = lo && one && *one == 1 && f->for_kind != ForKind::kUnrolled;
  for (size_t d = 0; dim < 0 && unit && d < buf->shape.size(); ++d) {
    bool all = true;
    for (const auto* idx : it->second.indices) {
      std::optional<int64_t> c = d < idx->size() ? StaticInt((*idx)[d]) : std::nullopt;
      all = all && d < idx->size() && (IsVar((*idx)[d], f->loop_var.get()) || (c && *c == *lo));
    }
    if (all) dim = static_cast<int>(d);
  }
  if (dim < 0) return nullptr;
  std::vector<PrimExpr> shape;
  int64_t count = 1;
  bool fits = true;  // static and small enough to be allocated in this loop
  for (size_t d = 0; d < buf->shape.size(); ++d) {
    if (static_cast<int>(d) == dim) continue;
    std::optional<int64_t> n = StaticInt(buf->shape[d]);
    if (!n || *n < 0) {
      fits = false;
    } else {
      count *= *n;
    }
    shape.push_back(buf->shape[d]);
  }
  int64_t elem = buf->dtype.bits == 1 ? 1 : buf->dtype.bytes();
  fits = fits && count * elem <= kMaxSunkBufferBytes;
  if (shape.empty()) shape.push_back(IntImm(buf->shape[dim].dtype(), 1));
  Buffer local = MakeBuffer(buf->name, shape, buf->dtype);
  Stmt body = DropDim(buf, local, dim).MutateStmt(f->body);
  // Further in when an inner loop is the only user of the row. A slice that
  // does not fit here may still fit there: softmax's exp buffer [n, s, 6625]
  // with symbolic n and s leaves a [s, 6625] slice in the n loop, but a
  // row of 26 KB in the s loop (it stayed a 1 MB workspace at 1 x 40 rows,
  // ppocrv4_rec's CTC head).
  Stmt deeper = Sink(local, body);
  if (!deeper && !fits) return nullptr;
  Stmt inner = deeper ? deeper : std::make_shared<AllocateNode>(local, body);
  auto n = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, inner);
  n->span = f->span;
  return n;
}

class Sinker : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);  // inner allocations first
    const auto* a = As<AllocateNode>(m);
    if (a == nullptr || UsesHandle(a->body, a->buffer->data.get())) return m;
    Stmt r = Sink(a->buffer, a->body);
    return r ? r : m;
  }
};

// ---------------------------------------------------------------- 3. reductions

enum class Op { kAdd, kMax, kMin };

struct Reduction {
  const ForNode* loop;
  Buffer buffer;
  std::vector<PrimExpr> idx;
  PrimExpr init;  // undefined: no init in the loop
  Op op;
  PrimExpr value;  // f(k)
};

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!arith::CanProveEqual(a[i], b[i])) return false;
  }
  return true;
}

bool IsLoadOf(const PrimExpr& e, const Buffer& b, const std::vector<PrimExpr>& idx) {
  const auto* l = e.as<BufferLoadNode>();
  return l != nullptr && l->buffer->data.get() == b->data.get() && SameIndices(l->indices, idx);
}

// Loads in `f` use k only as the last index, as k or k + (free of k), and f
// never reads `x`; so lanes of consecutive k read consecutive elements.
bool ContiguousIn(const PrimExpr& f, const VarNode* k, const VarNode* x) {
  struct Check : StmtExprVisitor {
    const VarNode* k;
    const VarNode* x;
    bool ok = true;
    void VisitExpr(const PrimExpr& e) override {
      if (!ok) return;
      if (const auto* l = e.as<BufferLoadNode>()) {
        if (l->buffer->data.get() == x) {
          ok = false;
          return;
        }
        for (size_t d = 0; d < l->indices.size(); ++d) {
          const PrimExpr& i = l->indices[d];
          if (!UsesVar(i, k)) continue;
          if (d + 1 != l->indices.size()) {
            ok = false;
            return;
          }
          if (IsVar(i, k)) continue;
          const auto* add = i.as<AddNode>();
          bool unit = add != nullptr && ((IsVar(add->a, k) && !UsesVar(add->b, k)) ||
                                         (IsVar(add->b, k) && !UsesVar(add->a, k)));
          if (!unit) {
            ok = false;
            return;
          }
        }
        for (const PrimExpr& i : l->indices) VisitExpr(i);
        return;
      }
      if (const auto* c = e.as<CallNode>()) {
        // Lazy selects and opaque calls are fine lane by lane; nothing else
        // has side effects in TIR expressions.
        (void)c;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } c;
  c.k = k;
  c.x = x;
  c.VisitExpr(f);
  return c.ok;
}

std::optional<Reduction> MatchReduction(const ForNode* f) {
  if (f->for_kind == ForKind::kParallel || ContainsFor(f->body)) return std::nullopt;
  const VarNode* k = f->loop_var.get();
  Stmt init_stmt, update;
  if (const auto* seq = As<SeqStmtNode>(f->body)) {
    if (seq->seq.size() != 2) return std::nullopt;
    init_stmt = seq->seq[0];
    update = seq->seq[1];
  } else {
    update = f->body;
  }
  const auto* st = As<BufferStoreNode>(update);
  if (st == nullptr) return std::nullopt;
  Reduction r;
  r.loop = f;
  r.buffer = st->buffer;
  r.idx = st->indices;
  DType t = st->buffer->dtype;
  if (t.lanes != 1) return std::nullopt;
  bool is_float = t.code == kDLFloat;
  bool is_int = t.code == kDLInt || t.code == kDLUInt;
  if (!is_float && !is_int) return std::nullopt;
  for (const PrimExpr& i : r.idx) {
    if (UsesVar(i, k)) return std::nullopt;
  }
  if (!st->value.defined() || !IsBinary(st->value->kind())) return std::nullopt;
  const auto* bin = static_cast<const BinaryNode*>(st->value.get());
  switch (st->value->kind()) {
    case TirKind::kAdd:
      r.op = Op::kAdd;
      break;
    case TirKind::kMax:
      r.op = Op::kMax;
      break;
    case TirKind::kMin:
      r.op = Op::kMin;
      break;
    default:
      return std::nullopt;
  }
  if (!is_float && r.op != Op::kAdd) return std::nullopt;
  if (IsLoadOf(bin->a, r.buffer, r.idx)) {
    r.value = bin->b;
  } else if (IsLoadOf(bin->b, r.buffer, r.idx)) {
    r.value = bin->a;
  } else {
    return std::nullopt;
  }
  if (!UsesVar(r.value, k) || !ContiguousIn(r.value, k, r.buffer->data.get())) return std::nullopt;
  if (init_stmt) {
    // if (k == min) X[idx] = init
    const auto* ite = As<IfThenElseNode>(init_stmt);
    if (ite == nullptr || ite->else_case) return std::nullopt;
    const auto* eq = ite->cond.as<EQNode>();
    if (eq == nullptr || !IsVar(eq->a, k) || !arith::CanProveEqual(eq->b, f->min)) return std::nullopt;
    const auto* ist = As<BufferStoreNode>(ite->then_case);
    if (ist == nullptr || ist->buffer->data.get() != r.buffer->data.get() || !SameIndices(ist->indices, r.idx)) {
      return std::nullopt;
    }
    if (UsesVar(ist->value, k)) return std::nullopt;
    Accesses reads;
    reads.VisitStmt(std::make_shared<EvaluateNode>(ist->value));
    if (reads.by_buffer.count(r.buffer->data.get())) return std::nullopt;
    r.init = ist->value;
  }
  return r;
}

using nest::Fma;

// Float a * b + c (either order of the addition) as fma(a, b, c), anywhere in e.
class FmaContractor : public StmtExprMutator {
 public:
  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    const auto* add = m.as<AddNode>();
    if (add == nullptr || m.dtype().code != kDLFloat || m.dtype().lanes != 1) return m;
    if (const auto* p = add->a.as<MulNode>()) return Fma(p->a, p->b, add->b);
    if (const auto* p = add->b.as<MulNode>()) return Fma(p->a, p->b, add->a);
    return m;
  }
};

// `plain_max`: a > b ? a : b, which drops a NaN on one side (one vmaxps)
// where T.max propagates it (compare, compare-unordered, blend); see
// SoftmaxMaxLoops for where that is exact in effect.
PrimExpr Combine(Op op, PrimExpr a, PrimExpr b, bool plain_max = false) {
  switch (op) {
    case Op::kAdd:
      return MakeBinary(TirKind::kAdd, std::move(a), std::move(b));
    case Op::kMax:
      if (plain_max) {
        PrimExpr gt = MakeBinary(TirKind::kGT, a, b);
        return PrimExpr(std::make_shared<const SelectNode>(std::move(gt), std::move(a), std::move(b)));
      }
      return MakeBinary(TirKind::kMax, std::move(a), std::move(b));
    case Op::kMin:
      return MakeBinary(TirKind::kMin, std::move(a), std::move(b));
  }
  return a;
}

PrimExpr Identity(Op op, DType t) {
  if (op == Op::kAdd) return t.code == kDLFloat ? FloatImm(t, 0.0) : IntImm(t, 0);
  double inf = std::numeric_limits<double>::infinity();
  return FloatImm(t, op == Op::kMax ? -inf : inf);
}

// The lanes of the window that folds a run-time row's last elements (fewer
// than 16) into the accumulators (WindowTailCondition).
constexpr int64_t kWindowLanes = 16;

// Whether the 16 elements of every buffer `value` loads, at k from `first`
// on, lie inside the buffer: their flat offset at `first` is at least 0
// (ContiguousIn checked that k moves only the last index, by one). Undefined
// when a loaded buffer is not compact.
PrimExpr WindowInBounds(const PrimExpr& value, const VarNode* k, const PrimExpr& first) {
  PrimExpr cond;
  bool ok = true;
  struct Loads : StmtExprVisitor {
    std::vector<const BufferLoadNode*> loads;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) loads.push_back(l);
      StmtExprVisitor::VisitExpr(e);
    }
  } loads;
  loads.VisitExpr(value);
  for (const BufferLoadNode* l : loads.loads) {
    bool moves = false;
    for (const PrimExpr& i : l->indices) moves = moves || UsesVar(i, k);
    if (!moves) continue;
    if (!l->buffer->strides.empty() || l->indices.size() != l->buffer->shape.size()) {
      ok = false;
      break;
    }
    PrimExpr flat;
    for (size_t d = 0; d < l->indices.size(); ++d) {
      PrimExpr i = Substitute(l->indices[d], VarMap{{k, first}});
      flat = flat.defined() ? flat * l->buffer->shape[d] + i : i;
    }
    PrimExpr in = MakeBinary(TirKind::kGE, flat, IntImm(flat.dtype(), 0));
    cond = cond.defined() ? MakeBinary(TirKind::kAnd, cond, in) : in;
  }
  return ok ? cond : PrimExpr();
}

// Whether `e` (a reduction's f(k)) is made of what the kernel emitter
// computes as explicit vectors (codegen/vector_loop.h): float32 loads,
// arithmetic, min / max, fma and exp, selects on float comparisons, and
// anything free of k. The window below is emitted that way; another value
// (a widened integer, a cast) keeps the scalar tail.
bool ExplicitVectorValue(const PrimExpr& e, const VarNode* k) {
  if (!UsesVar(e, k)) return true;
  if (e.dtype() != DType::Float32()) return false;
  switch (e->kind()) {
    case TirKind::kBufferLoad:
      return true;  // contiguous in k (ContiguousIn)
    case TirKind::kAdd:
    case TirKind::kSub:
    case TirKind::kMul:
    case TirKind::kDiv:
    case TirKind::kMin:
    case TirKind::kMax: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      return ExplicitVectorValue(b->a, k) && ExplicitVectorValue(b->b, k);
    }
    case TirKind::kSelect: {
      const auto* sel = e.as<SelectNode>();
      bool cond = !UsesVar(sel->cond, k);
      TirKind c = sel->cond->kind();
      if (!cond && (c == TirKind::kGT || c == TirKind::kLT || c == TirKind::kGE || c == TirKind::kLE)) {
        const auto* cmp = static_cast<const BinaryNode*>(sel->cond.get());
        cond = ExplicitVectorValue(cmp->a, k) && ExplicitVectorValue(cmp->b, k) && cmp->a.dtype() == DType::Float32();
      }
      return cond && ExplicitVectorValue(sel->true_value, k) && ExplicitVectorValue(sel->false_value, k);
    }
    case TirKind::kCall: {
      const auto* call = e.as<CallNode>();
      if (call->op != "fma" && call->op != "exp") return false;
      for (const PrimExpr& a : call->args)
        if (!ExplicitVectorValue(a, k)) return false;
      return true;
    }
    default:
      return false;
  }
}

// `lanes_knob`, `unroll_knob`: reduce.lanes and reduce.unroll (0: the rule).
Stmt Vectorized(const Reduction& r, bool plain_max = false, int64_t lanes_knob = 0, int64_t unroll_knob = 0) {
  const ForNode* f = r.loop;
  std::optional<int64_t> ext = StaticInt(f->extent);
  if (ext && *ext < 16) return nullptr;
  int64_t lanes = 64;
  if ((lanes_knob == 16 || lanes_knob == 32 || lanes_knob == 64) && (!ext || lanes_knob <= *ext)) {
    lanes = lanes_knob;
  } else if (ext) {
    // Cycles, roughly: each block of V lanes is one add latency (V / 16
    // independent vector chains), each tail element one more (a scalar
    // chain), each tree step one. 169 (a 13 x 13 mean): 32 lanes and a tail
    // of 9, not 64 and a tail of 41; 784: still 64 (a tail of 16).
    auto cost = [&](int64_t v) {
      int64_t steps = 0;
      for (int64_t h = v; h > 1; h /= 2) ++steps;
      return *ext / v + *ext % v + steps;
    };
    lanes = 16;
    for (int64_t v : {32, 64})
      if (v <= *ext && cost(v) < cost(lanes)) lanes = v;
  }
  DType it = f->loop_var->dtype;
  DType t = r.buffer->dtype;
  const VarNode* k = f->loop_var.get();
  Buffer acc = MakeBuffer(r.buffer->name + "_acc", {IntImm(DType::Int64(), lanes)}, t);
  PrimExpr v = IntImm(it, lanes);
  auto lane_var = [&](const char* name) { return MakeVar(f->loop_var->name + name, it); };
  auto as_expr = [](const Var& x) { return PrimExpr(std::static_pointer_cast<const PrimExprNode>(x)); };

  // Blocks: [min, min + nb * V); tail: [min + nb * V, min + extent).
  PrimExpr nb = ext ? IntImm(it, *ext / lanes) : MakeBinary(TirKind::kFloorDiv, f->extent, v);
  PrimExpr tail_start = ext ? IntImm(it, (*ext / lanes) * lanes) : nb * v;
  PrimExpr tail_len = ext ? IntImm(it, *ext % lanes) : f->extent - tail_start;
  bool zero_min = StaticInt(f->min) == std::optional<int64_t>(0);
  auto offset = [&](PrimExpr e) { return zero_min ? e : f->min + e; };

  std::vector<Stmt> body;
  if (r.init.defined()) body.push_back(Store(r.buffer, r.init, r.idx));
  std::vector<Stmt> in_acc;
  Var l0 = lane_var("_i");
  in_acc.push_back(MakeFor(l0, IntImm(it, 0), v, ForKind::kVectorized, Store(acc, Identity(r.op, t), {as_expr(l0)})));
  Var ko = lane_var("_o");
  Var l1 = lane_var("_l");
  PrimExpr kval = offset(as_expr(ko) * v + as_expr(l1));
  PrimExpr fv = Substitute(r.value, VarMap{{k, kval}});
  PrimExpr lane = Load(acc, {as_expr(l1)});
  // acc + a * b as one fma: the multiply moves off the add pipes (the
  // variance and rms_norm's sum of squares), and rounds once instead of twice.
  const auto* prod = fv.as<MulNode>();
  PrimExpr upd = r.op == Op::kAdd && t.code == kDLFloat && prod != nullptr ? Fma(prod->a, prod->b, lane)
                                                                          : Combine(r.op, lane, fv, plain_max);
  Stmt step = Store(acc, upd, {as_expr(l1)});
  std::optional<int64_t> nblocks = StaticInt(nb);
  if (unroll_knob >= 2 && nblocks && *nblocks >= unroll_knob) {
    // reduce.unroll: U blocks per step of the outer loop, unrolled; the
    // blocks past the last whole step in a loop of their own.
    int64_t u = unroll_knob, whole = *nblocks / u;
    Var kq = lane_var("_q");
    Var ku = lane_var("_u");
    PrimExpr kb = as_expr(kq) * IntImm(it, u) + as_expr(ku);
    Stmt unrolled = Substitute(MakeFor(l1, IntImm(it, 0), v, ForKind::kVectorized, step), VarMap{{ko.get(), kb}});
    in_acc.push_back(MakeFor(kq, IntImm(it, 0), IntImm(it, whole), ForKind::kSerial,
                             MakeFor(ku, IntImm(it, 0), IntImm(it, u), ForKind::kUnrolled, unrolled)));
    if (*nblocks % u != 0) {
      Var kr = lane_var("_r");
      Stmt rest = Substitute(MakeFor(l1, IntImm(it, 0), v, ForKind::kVectorized, step),
                             VarMap{{ko.get(), IntImm(it, whole * u) + as_expr(kr)}});
      in_acc.push_back(MakeFor(kr, IntImm(it, 0), IntImm(it, *nblocks % u), ForKind::kSerial, rest));
    }
  } else {
    in_acc.push_back(
        MakeFor(ko, IntImm(it, 0), nb, ForKind::kSerial, MakeFor(l1, IntImm(it, 0), v, ForKind::kVectorized, step)));
  }
  // A symbolic tail (fewer than V elements): its whole 16-element chunks go
  // into the first 16 lanes before the tree, and what is left (under 16)
  // into X after it. Softmax over khmersm's 96-column attention rows spent
  // 32 dependent scalar maxes and 32 adds per row in a scalar tail; one
  // masked vector loop of run-time extent instead kept the accumulators in
  // memory (masked stores, then loads of the same lanes).
  PrimExpr rest_start = tail_start, rest_len = tail_len;
  PrimExpr window_cond;  // when the rest went into the accumulators instead
  if (!ext) {
    Var kc = lane_var("_c");
    Var lc = lane_var("_cl");
    PrimExpr cval = Substitute(r.value, VarMap{{k, offset(tail_start + as_expr(kc) * IntImm(it, 16) + as_expr(lc))}});
    PrimExpr clane = Load(acc, {as_expr(lc)});
    const auto* cprod = cval.as<MulNode>();
    PrimExpr cupd = r.op == Op::kAdd && t.code == kDLFloat && cprod != nullptr ? Fma(cprod->a, cprod->b, clane)
                                                                             : Combine(r.op, clane, cval, plain_max);
    in_acc.push_back(MakeFor(kc, IntImm(it, 0), MakeBinary(TirKind::kFloorDiv, tail_len, IntImm(it, 16)),
                             ForKind::kSerial,
                             MakeFor(lc, IntImm(it, 0), IntImm(it, 16), ForKind::kVectorized, Store(acc, cupd, {as_expr(lc)}))));
    rest_start = f->extent - MakeBinary(TirKind::kFloorMod, f->extent, IntImm(it, 16));
    rest_len = MakeBinary(TirKind::kFloorMod, f->extent, IntImm(it, 16));
    // What is left (under 16) in one vector where it can be read: the 16
    // elements that end at the row's end, those before the rest replaced by
    // the identity (elements already folded in, or of rows before this
    // one). That is every row of 16 or more, and a shorter one whose window
    // starts inside each buffer it reads. The scalar tail after the tree
    // stays for the others. khmersm's attention rows of 7: softmax 1.4 us
    // a kernel, its max and sum each a chain of 7 dependent scalar steps.
    Var lw = lane_var("_w");
    PrimExpr first = offset(f->extent - IntImm(it, kWindowLanes));
    PrimExpr inside = WindowInBounds(r.value, k, first);
    if (inside.defined() && t == DType::Float32() && ExplicitVectorValue(r.value, k)) {
      // (None at all for a row of whole 16-element chunks: a window of no
      // lanes still cost 96-column rows 20 %.)
      window_cond = MakeBinary(
          TirKind::kAnd, MakeBinary(TirKind::kGT, rest_len, IntImm(it, 0)),
          MakeBinary(TirKind::kOr, MakeBinary(TirKind::kGE, f->extent, IntImm(it, kWindowLanes)), inside));
      PrimExpr wv = Substitute(r.value, VarMap{{k, first + as_expr(lw)}});
      // The lane test as a float comparison of a lane-index buffer, which
      // the kernel emitter's explicit vectors take (one compare, one blend).
      Buffer lanes_f = MakeBuffer(r.buffer->name + "_lane", {IntImm(DType::Int64(), kWindowLanes)}, t);
      Var li = lane_var("_li");
      Stmt fill = MakeFor(li, IntImm(it, 0), IntImm(it, kWindowLanes), ForKind::kVectorized,
                          Store(lanes_f, PrimExpr(std::make_shared<CastNode>(t, as_expr(li))), {as_expr(li)}));
      PrimExpr from = PrimExpr(std::make_shared<CastNode>(t, IntImm(it, kWindowLanes) - rest_len));
      PrimExpr fresh = MakeBinary(TirKind::kGE, Load(lanes_f, {as_expr(lw)}), from);
      wv = PrimExpr(std::make_shared<const SelectNode>(fresh, wv, Identity(r.op, t)));
      Stmt window = MakeFor(lw, IntImm(it, 0), IntImm(it, kWindowLanes), ForKind::kVectorized,
                            Store(acc, Combine(r.op, Load(acc, {as_expr(lw)}), wv, plain_max), {as_expr(lw)}));
      // Inside a loop of one unrolled iteration: the kernel emitter writes a
      // vectorized loop inside an unrolled one as explicit vectors
      // (kernel_emitter.cc, vector_loop.h); left to LLVM, this loop was
      // unrolled and rebuilt from 8-, 4-, 2- and 1-lane pieces (softmax over
      // symbolic rows of 7: 1.6 us a call, against 1.1 us explicit).
      Var one = lane_var("_one");
      window = MakeFor(one, IntImm(it, 0), IntImm(it, 1), ForKind::kUnrolled, window);
      in_acc.push_back(std::make_shared<IfThenElseNode>(
          window_cond, std::make_shared<AllocateNode>(lanes_f, Seq({fill, window})), nullptr));
    }
  }
  // Tree: each step halves into a fresh buffer, so that every buffer is
  // written and read at one width (LLVM then keeps them in registers).
  Buffer cur = acc;
  std::vector<Buffer> steps;
  for (int64_t h = lanes / 2; h >= 1; h /= 2) {
    Var l = lane_var("_h");
    PrimExpr le = as_expr(l);
    Buffer next = MakeBuffer(r.buffer->name + "_h" + std::to_string(h), {IntImm(DType::Int64(), h)}, t);
    Stmt s = Store(next, Combine(r.op, Load(cur, {le}), Load(cur, {le + IntImm(it, h)}), plain_max), {le});
    in_acc.push_back(MakeFor(l, IntImm(it, 0), IntImm(it, h), h >= 4 ? ForKind::kVectorized : ForKind::kUnrolled, s));
    steps.push_back(next);
    cur = next;
  }
  in_acc.push_back(Store(r.buffer, Combine(r.op, Load(r.buffer, r.idx), Load(cur, {IntImm(it, 0)}), plain_max), r.idx));
  Stmt tree = Seq(in_acc);
  for (auto it2 = steps.rbegin(); it2 != steps.rend(); ++it2) tree = std::make_shared<AllocateNode>(*it2, tree);
  body.push_back(std::make_shared<AllocateNode>(acc, tree));
  if (!ext || *ext % lanes != 0) {
    Var kt = lane_var("_t");
    PrimExpr kv = offset(rest_start + as_expr(kt));
    PrimExpr tv = Substitute(r.value, VarMap{{k, kv}});
    Stmt rest = MakeFor(kt, IntImm(it, 0), rest_len, ForKind::kSerial,
                        Store(r.buffer, Combine(r.op, Load(r.buffer, r.idx), tv, plain_max), r.idx));
    if (window_cond.defined())
      rest = std::make_shared<IfThenElseNode>(PrimExpr(std::make_shared<NotNode>(window_cond)), rest, nullptr);
    body.push_back(rest);
  }
  return Seq(body);
}

// A long reduction outside any parallel loop: P = `threads` partial results,
// each a vectorized reduction over one chunk of k (chunks are multiples of 64
// elements), computed in a parallel loop, then combined in order into X.
Stmt SplitAcrossThreads(const Reduction& r, int64_t threads, bool plain_max) {
  const ForNode* f = r.loop;
  DType it = f->loop_var->dtype;
  DType t = r.buffer->dtype;
  auto as_expr = [](const Var& x) { return PrimExpr(std::static_pointer_cast<const PrimExprNode>(x)); };
  std::optional<int64_t> ext = StaticInt(f->extent);
  PrimExpr chunk;
  if (ext) {
    int64_t c = (*ext + threads - 1) / threads;
    chunk = IntImm(it, (c + 63) / 64 * 64);
  } else {
    PrimExpr step = IntImm(it, threads * 64);
    chunk = MakeBinary(TirKind::kFloorDiv, f->extent + IntImm(it, threads * 64 - 1), step) * IntImm(it, 64);
  }
  Buffer part = MakeBuffer(r.buffer->name + "_part", {IntImm(DType::Int64(), threads)}, t);
  Var p = MakeVar(f->loop_var->name + "_p", it);
  Var kk = MakeVar(f->loop_var->name + "_c", it);
  PrimExpr start = as_expr(p) * chunk;
  PrimExpr len = MakeBinary(TirKind::kMax, MakeBinary(TirKind::kMin, chunk, f->extent - start), IntImm(it, 0));
  bool zero_min = StaticInt(f->min) == std::optional<int64_t>(0);
  PrimExpr k_at = zero_min ? start + as_expr(kk) : f->min + start + as_expr(kk);
  PrimExpr value = Substitute(r.value, VarMap{{f->loop_var.get(), k_at}});
  std::vector<PrimExpr> pi = {as_expr(p)};
  auto chunk_loop = std::make_shared<ForNode>(kk, IntImm(it, 0), len, ForKind::kSerial,
                                              Store(part, Combine(r.op, Load(part, pi), value, plain_max), pi));
  Reduction inner{chunk_loop.get(), part, pi, PrimExpr(), r.op, value};
  Stmt reduce = Vectorized(inner, plain_max);
  if (!reduce) reduce = chunk_loop;
  Stmt per_thread = Seq({Store(part, Identity(r.op, t), pi), reduce});
  Var q = MakeVar(f->loop_var->name + "_q", it);
  Stmt combine = MakeFor(q, IntImm(it, 0), IntImm(it, threads), ForKind::kSerial,
                         Store(r.buffer, Combine(r.op, Load(r.buffer, r.idx), Load(part, {as_expr(q)}), plain_max), r.idx));
  std::vector<Stmt> body;
  if (r.init.defined()) body.push_back(Store(r.buffer, r.init, r.idx));
  body.push_back(std::make_shared<AllocateNode>(
      part, Seq({MakeFor(p, IntImm(it, 0), IntImm(it, threads), ForKind::kParallel, per_thread), combine})));
  return Seq(body);
}

// ------------------------------------------------ softmax's plain max
//
// Softmax's row statistic m = max_k x[k] is read only as exp(x[j] - m), whose
// values are summed over the whole row (s) and then only used as e[j] / s.
// With T.max's NaN propagation, a row holding a NaN gives m = NaN, every e[j]
// NaN, s NaN and every output NaN. With the plain a > b ? a : b instead, m is
// some value, but e at the NaN's position is exp(NaN - m) = NaN, so s, which
// sums every e[k], is NaN again (op_softmax.cc's min(x - m, 0) keeps the
// NaN), and every output e[j] / s is NaN: the same
// rows of NaN. A row without NaN gets the same m bit for bit (the plain max
// is T.max's select without its NaN test; +-inf and signed zeros compare the
// same), so every output is identical. m, e and s are row-local buffers, so
// nothing else observes the difference. The plain max is one vmaxps per step
// and lets LLVM keep the lane tree in registers.

// The load x[..., k] (last index exactly `k`) that `e` is, or null.
const BufferLoadNode* RowLoad(const PrimExpr& e, const VarNode* k) {
  const auto* l = e.as<BufferLoadNode>();
  if (l == nullptr || l->indices.empty() || !IsVar(l->indices.back(), k)) return nullptr;
  for (size_t d = 0; d + 1 < l->indices.size(); ++d) {
    if (UsesVar(l->indices[d], k)) return nullptr;
  }
  return l;
}

bool SameRow(const BufferLoadNode* a, const BufferLoadNode* b) {
  if (a->buffer->data.get() != b->buffer->data.get() || a->indices.size() != b->indices.size()) return false;
  for (size_t d = 0; d + 1 < a->indices.size(); ++d) {
    if (!arith::CanProveEqual(a->indices[d], b->indices[d])) return false;
  }
  return true;
}

bool SameRange(const ForNode* a, const ForNode* b) {
  return arith::CanProveEqual(a->min, b->min) && arith::CanProveEqual(a->extent, b->extent);
}

// The max loops of `seq` (a row body) that compute softmax's m as described
// above, with m, e and s in `local` (allocated inside the row).
std::unordered_set<const ForNode*> SoftmaxMaxLoops(const std::vector<Stmt>& seq,
                                                   const std::unordered_set<const VarNode*>& local) {
  std::unordered_set<const ForNode*> out;
  for (size_t m = 0; m < seq.size(); ++m) {
    const auto* fm = As<ForNode>(seq[m]);
    std::optional<Reduction> rm = fm ? MatchReduction(fm) : std::nullopt;
    if (!rm || rm->op != Op::kMax || rm->buffer->dtype.code != kDLFloat) continue;
    const VarNode* mdata = rm->buffer->data.get();
    const BufferLoadNode* xm = RowLoad(rm->value, fm->loop_var.get());
    if (xm == nullptr || !local.count(mdata)) continue;
    const VarNode* edata = nullptr;
    const VarNode* sdata = nullptr;
    std::vector<PrimExpr> sidx;
    std::unordered_set<size_t> parts = {m};
    // e[j] = exp(x[..., j] - m), over the max loop's range.
    for (size_t j = m + 1; j < seq.size() && edata == nullptr; ++j) {
      const auto* fe = As<ForNode>(seq[j]);
      const auto* st = fe ? As<BufferStoreNode>(fe->body) : nullptr;
      if (st == nullptr || !SameRange(fe, fm) || st->indices.size() != 1 || !IsVar(st->indices[0], fe->loop_var.get())) continue;
      const auto* call = st->value.as<CallNode>();
      if (call == nullptr || call->op != "exp" || call->args.size() != 1) continue;
      // exp(x - m), or exp(min(x - m, 0)) as op_softmax.cc writes it.
      PrimExpr arg = call->args[0];
      if (const auto* mn = arg.as<MinNode>()) {
        arg = nest::IsFloatZero(mn->b) ? mn->a : nest::IsFloatZero(mn->a) ? mn->b : arg;
      }
      const auto* sub = arg.as<SubNode>();
      const BufferLoadNode* xe = sub ? RowLoad(sub->a, fe->loop_var.get()) : nullptr;
      if (xe == nullptr || !SameRow(xe, xm) || !IsLoadOf(sub->b, rm->buffer, rm->idx)) continue;
      if (!local.count(st->buffer->data.get())) continue;
      edata = st->buffer->data.get();
      parts.insert(j);
    }
    // s = sum_k e[k], over the same range.
    for (size_t j = m + 1; j < seq.size() && edata != nullptr && sdata == nullptr; ++j) {
      const auto* fs = As<ForNode>(seq[j]);
      std::optional<Reduction> rs = fs ? MatchReduction(fs) : std::nullopt;
      if (!rs || rs->op != Op::kAdd || !SameRange(fs, fm) || !local.count(rs->buffer->data.get())) continue;
      const auto* le = rs->value.as<BufferLoadNode>();
      if (le == nullptr || le->buffer->data.get() != edata || le->indices.size() != 1 || !IsVar(le->indices[0], fs->loop_var.get())) continue;
      sdata = rs->buffer->data.get();
      sidx = rs->idx;
      parts.insert(j);
    }
    if (sdata == nullptr) continue;
    // Every other statement touching m, e or s is an output loop y[...] = e[j] / s,
    // and nothing stores to x.
    bool ok = true;
    for (size_t j = 0; j < seq.size() && ok; ++j) {
      Accesses a;
      a.VisitStmt(seq[j]);
      auto xs = a.by_buffer.find(xm->buffer->data.get());
      if (xs != a.by_buffer.end() && xs->second.stored) ok = false;
      if (parts.count(j)) continue;
      bool touches = a.by_buffer.count(mdata) || a.by_buffer.count(edata) || a.by_buffer.count(sdata);
      if (!touches) continue;
      const auto* fo = As<ForNode>(seq[j]);
      const auto* st = fo ? As<BufferStoreNode>(fo->body) : nullptr;
      const auto* div = st ? st->value.as<DivNode>() : nullptr;
      const auto* le = div ? div->a.as<BufferLoadNode>() : nullptr;
      const auto* ls = div ? div->b.as<BufferLoadNode>() : nullptr;
      ok = le != nullptr && ls != nullptr && le->buffer->data.get() == edata && ls->buffer->data.get() == sdata &&
           SameIndices(ls->indices, sidx) && !local.count(st->buffer->data.get());
    }
    if (ok) out.insert(fm);
  }
  return out;
}

class ReductionVectorizer : public StmtExprMutator {
 public:
  ReductionVectorizer(int threads, const ScheduleKnobs& knobs) : threads_(threads), knobs_(knobs) {}

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* a = As<AllocateNode>(s)) {
      const VarNode* data = a->buffer->data.get();
      bool added = local_.insert(data).second;
      Stmt out = StmtExprMutator::MutateStmt(s);
      if (added) local_.erase(data);
      return out;
    }
    if (const auto* seq = As<SeqStmtNode>(s)) {
      for (const ForNode* f : SoftmaxMaxLoops(seq->seq, local_)) plain_max_.insert(f);
      return StmtExprMutator::MutateStmt(s);
    }
    const auto* f = As<ForNode>(s);
    if (f == nullptr) return StmtExprMutator::MutateStmt(s);
    if (f->for_kind == ForKind::kParallel) {
      ++in_parallel_;
      Stmt out = StmtExprMutator::MutateStmt(s);
      --in_parallel_;
      return out;
    }
    if (std::optional<Reduction> r = MatchReduction(f)) {
      std::optional<int64_t> ext = StaticInt(f->extent);
      bool plain = plain_max_.count(f) > 0;
      if (threads_ >= 2 && in_parallel_ == 0 && (!ext || *ext >= kMinSplitReduction)) {
        // kSplitChunksPerThread chunks per thread, which the pool's threads
        // claim one at a time: a thread whose core is busy takes fewer
        // instead of holding up the row with a fixed half.
        int64_t chunks = knobs_.Get("reduce.split_chunks");
        return SplitAcrossThreads(*r, int64_t{threads_} * (chunks >= 1 ? chunks : kSplitChunksPerThread), plain);
      }
      if (Stmt v = Vectorized(*r, plain, knobs_.Get("reduce.lanes"), knobs_.Get("reduce.unroll"))) return v;
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  int threads_;
  const ScheduleKnobs& knobs_;
  int in_parallel_ = 0;
  std::unordered_set<const VarNode*> local_;       // buffers allocated around the statement
  std::unordered_set<const ForNode*> plain_max_;  // softmax max loops (see SoftmaxMaxLoops)
};

// ---------------------------------------------------------------- 4. reciprocals

// In an innermost vectorized loop, x / d with a float divisor d that reads a
// buffer (a row statistic), is free of the loop variable and reads nothing the
// loop stores becomes x * r with r = 1 / d computed once before the loop: one
// division per row instead of one per element.
class ReciprocalHoister : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    if (f == nullptr || f->for_kind != ForKind::kVectorized || ContainsFor(f->body)) {
      return StmtExprMutator::MutateStmt(s);
    }
    Accesses acc;
    acc.VisitStmt(f->body);
    struct Rewriter : StmtExprMutator {
      const ForNode* loop;
      const Accesses* acc;
      std::vector<std::pair<Var, PrimExpr>> lets;
      PrimExpr MutateExpr(const PrimExpr& e) override {
        if (RoundsToInteger(e)) return e;
        PrimExpr m = StmtExprMutator::MutateExpr(e);
        const auto* div = m.as<DivNode>();
        if (div == nullptr || m.dtype().code != kDLFloat || m.dtype().lanes != 1 || !Invariant(div->b)) return m;
        Var r = MakeVar("rcp", m.dtype());
        lets.emplace_back(r, MakeBinary(TirKind::kDiv, FloatImm(m.dtype(), 1.0), div->b));
        return div->a * PrimExpr(std::static_pointer_cast<const PrimExprNode>(r));
      }
      // A quotient that is rounded to an integer keeps its exact division:
      // one ULP can carry it across a rounding boundary (DynamicQuantizeLinear's
      // round(x / scale): -2.5f / (5.0f / 255) is -127.49999, -2.5f * (1 / that
      // scale) is -127.5, which rounds to -128 instead of -127).
      static bool RoundsToInteger(const PrimExpr& e) {
        if (const auto* c = e.as<CastNode>()) return c->dtype.code != kDLFloat;
        const auto* call = e.as<CallNode>();
        if (call == nullptr) return false;
        for (const char* op : {"round", "nearbyint", "rint", "floor", "ceil", "trunc"}) {
          if (call->op == op) return true;
        }
        return false;
      }
      bool Invariant(const PrimExpr& d) const {
        if (UsesVar(d, loop->loop_var.get())) return false;
        Accesses reads;
        reads.VisitStmt(std::make_shared<EvaluateNode>(d));
        if (reads.by_buffer.empty()) return false;  // constants keep their exact division
        for (const auto& kv : reads.by_buffer) {
          auto it = acc->by_buffer.find(kv.first);
          if (it != acc->by_buffer.end() && it->second.stored) return false;
        }
        return true;
      }
    } rw;
    rw.loop = f;
    rw.acc = &acc;
    Stmt body = rw.MutateStmt(f->body);
    if (rw.lets.empty()) return s;
    // A normalization's output, (x - m) * r * g + b: the last add as an fma.
    body = FmaContractor().MutateStmt(body);
    Stmt out = MakeFor(f->loop_var, f->min, f->extent, f->for_kind, body);
    for (auto it = rw.lets.rbegin(); it != rw.lets.rend(); ++it) {
      out = std::make_shared<LetStmtNode>(it->first, it->second, out);
    }
    return out;
  }
};

}  // namespace

Stmt FuseRowLoops(const Stmt& body) { return Fuser().MutateStmt(body); }
Stmt SinkBuffers(const Stmt& body) { return Sinker().MutateStmt(body); }
Stmt VectorizeReductions(const Stmt& body, int num_threads_hint, const ScheduleKnobs& knobs) {
  return ReductionVectorizer(num_threads_hint, knobs).MutateStmt(body);
}
Stmt HoistReciprocals(const Stmt& body) { return ReciprocalHoister().MutateStmt(body); }

PrimFunc ScheduleRowReductions(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  Stmt rows = SinkBuffers(FuseRowLoops(func->body));
  // Long reductions outside parallel loops are split across threads, also
  // beside other parallel loops (a softmax over one long row: its exp and
  // output loops are parallel, its max and sum are split).
  Stmt body = HoistReciprocals(VectorizeReductions(rows, num_threads_hint, knobs));
  return nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
