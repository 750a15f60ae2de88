#include "compiler/tir/default_schedule.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/tir/channel_major_dense.h"
#include "compiler/tir/conv1d_lift.h"
#include "compiler/tir/conv_dot_schedule.h"
#include "compiler/tir/conv_grouped_block.h"
#include "compiler/tir/conv_batch_peel.h"
#include "compiler/tir/conv_border_split_schedule.h"
#include "compiler/tir/conv_channel_lanes.h"
#include "compiler/tir/conv_im2col_schedule.h"
#include "compiler/tir/conv_schedule.h"
#include "compiler/tir/conv_symbolic_schedule.h"
#include "compiler/tir/depthwise_schedule.h"
#include "compiler/tir/flatten_elementwise.h"
#include "compiler/tir/flatten_reduction.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/matmul_schedule.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/reduce_schedule.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"
#include "compiler/tir/symbolic_divisions.h"
#include "compiler/tir/symbolic_parallel.h"
#include "compiler/tir/transpose_tiles.h"
#include "compiler/tir/transposed_reads.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using AccessCollector = nest::BufferAccesses;  // index lists, stores and allocations per buffer

bool IsVar(const PrimExpr& e, const Var& v) { return e.get() == v.get(); }

// The variables a loop's body binds (inner loops, lets).
std::unordered_set<const VarNode*> BoundInside(const Stmt& body) {
  struct Finder : StmtExprVisitor {
    std::unordered_set<const VarNode*> vars;
    void VisitStmt(const Stmt& st) override {
      if (const auto* f = As<ForNode>(st)) vars.insert(f->loop_var.get());
      if (const auto* l = As<LetStmtNode>(st)) vars.insert(l->var.get());
      StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(body);
  return f.vars;
}

// v, or r + v with r the same for every iteration of `loop` (free of v and
// of what its body binds: a row offset, r = y * w after a flat index was
// split into rows and columns): distinct iterations, distinct elements.
bool IsVarOrOffset(const PrimExpr& e, const ForNode* loop) {
  if (IsVar(e, loop->loop_var)) return true;
  const auto* add = e.as<AddNode>();
  if (add == nullptr || !IsVar(add->b, loop->loop_var)) return false;
  std::unordered_set<const VarNode*> varying = BoundInside(loop->body);
  varying.insert(loop->loop_var.get());
  return !nest::Uses(add->a, varying);
}

bool IsIndependent(const ForNode* loop) {
  AccessCollector c;
  c.VisitStmt(loop->body);
  for (const auto& kv : c.by_buffer) {
    if (!kv.second.stored || c.allocated.count(kv.first)) continue;
    const auto& lists = kv.second.indices;
    size_t ndim = lists.front()->size();
    bool found = false;
    for (size_t d = 0; d < ndim && !found; ++d) {
      // Every access at the same v or r + v (one expression): iterations
      // touch different elements.
      bool all = IsVarOrOffset((*lists.front())[d], loop);
      for (const auto* idx : lists) {
        if (!all || idx->size() != ndim || (*idx)[d].get() != (*lists.front())[d].get()) {
          all = false;
          break;
        }
      }
      found = all;
    }
    if (!found) return false;
  }
  return true;
}

const int64_t* StaticExtent(const ForNode* loop) {
  const auto* imm = loop->extent.as<IntImmNode>();
  return imm ? &imm->value : nullptr;
}

// Static iteration count of a statement's loops; saturates; symbolic extents
// count as "large".
int64_t Work(const Stmt& s) {
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 4;
  auto sat_mul = [&](int64_t a, int64_t b) { return (a != 0 && b > kBig / a) ? kBig : a * b; };
  if (!s) return 0;
  if (const auto* f = As<ForNode>(s)) {
    const int64_t* ext = StaticExtent(f);
    return sat_mul(ext ? std::max<int64_t>(*ext, 0) : kBig, std::max<int64_t>(Work(f->body), 1));
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    int64_t total = 0;
    for (const auto& c : seq->seq) total = std::min(kBig, total + Work(c));
    return total;
  }
  if (const auto* i = As<IfThenElseNode>(s)) return std::max(Work(i->then_case), Work(i->else_case));
  if (const auto* l = As<LetStmtNode>(s)) return Work(l->body);
  if (const auto* a = As<AllocateNode>(s)) return Work(a->body);
  return 1;
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

bool ShouldVectorize(const ForNode* loop) {
  if (loop->for_kind != ForKind::kSerial) return false;
  const int64_t* ext = StaticExtent(loop);
  if (ext != nullptr && *ext < kMinVectorExtent) return false;
  AccessCollector c;
  c.VisitStmt(loop->body);
  if (c.stores.empty()) return false;
  for (const auto* st : c.stores) {
    if (st->indices.empty() || !IsVarOrOffset(st->indices.back(), loop)) return false;
  }
  return IsIndependent(loop);
}

Stmt WithKind(const ForNode* f, ForKind kind, Stmt body) {
  auto n = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, std::move(body));
  n->span = f->span;
  return n;
}

// A vectorized loop of static extent E split into vectors of w lanes, u of
// them per step: for o in E / (u * w), for m in unroll(u), for v in
// vectorized(w), the body at o * u * w + m * w + v. A vectorized loop inside
// an unrolled one becomes explicit vectors of w lanes (kernel_emitter.cc).
// Null when the split does not apply (w unset, or E not a multiple).
Stmt SplitVectorLoop(const ForNode* f, const Stmt& body, int64_t w, int64_t u) {
  u = std::max<int64_t>(u, 1);
  const int64_t* ext = StaticExtent(f);
  if (w <= 0 || ext == nullptr || *ext % (w * u) != 0 || *ext <= w) return Stmt();
  DType t = f->loop_var->dtype;
  Var o = MakeVar(f->loop_var->name + "_o", t), m = MakeVar(f->loop_var->name + "_u", t),
      v = MakeVar(f->loop_var->name + "_v", t);
  PrimExpr at = PrimExpr(o) * IntImm(t, u * w) + PrimExpr(m) * IntImm(t, w) + PrimExpr(v);
  VarMap map;
  map[f->loop_var.get()] = f->min + at;
  Stmt inner = std::make_shared<ForNode>(v, IntImm(t, 0), IntImm(t, w), ForKind::kVectorized, Substitute(body, map));
  Stmt mid = std::make_shared<ForNode>(m, IntImm(t, 0), IntImm(t, u), u > 1 ? ForKind::kUnrolled : ForKind::kSerial, inner);
  return std::make_shared<ForNode>(o, IntImm(t, 0), IntImm(t, *ext / (u * w)), ForKind::kSerial, mid);
}

// A vectorized loop of symbolic extent E as SplitVectorLoop's split of its
// first E - E % (w * u) iterations, then a vectorized loop over the rest
// (left to LLVM). Softmax over a symbolic sequence (all-MiniLM's attention
// rows) keeps the explicit vectors of a static row.
Stmt SplitSymbolicVectorLoop(const ForNode* f, const Stmt& body, int64_t w, int64_t u) {
  DType t = f->loop_var->dtype;
  PrimExpr step = IntImm(t, w * u);
  PrimExpr blocks = MakeBinary(TirKind::kFloorDiv, f->extent, step);
  Var o = MakeVar(f->loop_var->name + "_o", t), m = MakeVar(f->loop_var->name + "_u", t),
      v = MakeVar(f->loop_var->name + "_v", t), r = MakeVar(f->loop_var->name + "_r", t);
  PrimExpr at = PrimExpr(o) * step + PrimExpr(m) * IntImm(t, w) + PrimExpr(v);
  VarMap map;
  map[f->loop_var.get()] = f->min + at;
  Stmt inner = std::make_shared<ForNode>(v, IntImm(t, 0), IntImm(t, w), ForKind::kVectorized, Substitute(body, map));
  Stmt mid = std::make_shared<ForNode>(m, IntImm(t, 0), IntImm(t, u), ForKind::kUnrolled, inner);
  Stmt whole = std::make_shared<ForNode>(o, IntImm(t, 0), blocks, ForKind::kSerial, mid);
  VarMap rest_map;
  rest_map[f->loop_var.get()] = f->min + blocks * step + PrimExpr(r);
  Stmt rest = std::make_shared<ForNode>(r, IntImm(t, 0), MakeBinary(TirKind::kFloorMod, f->extent, step),
                                        ForKind::kVectorized, Substitute(body, rest_map));
  return Seq({whole, rest});
}

// The rule without knobs, for a vectorized loop over v whose body divides v
// by constants (v // c, v % c: a transpose folded into a reshape,
// [h, s, d] -> [s, h * d] reads A[v // d, s, v % d]). Left to LLVM, such a
// loop gathers lane by lane; split so that one step of the outer loop covers
// L = lcm of the divisors (or a multiple of it, below), every c of them is
// constant over each vector of w = min(L, 16) lanes (w divides c), so every
// load is contiguous (the simplifier folds (o * L + m * w + v') // c to
// o * (L / c) + m * w // c).
// Applies when L is a multiple of 8 up to 128, the static extent a multiple
// of L (and above it), and every divisor a multiple of w. Tuning's encoder
// (benchmarks/results/2026-11-29-tuning): [4,128,64] -> [128,256] took
// 15.3 us by default, 2.6 us split 8 x 8 (and 2.7 us at 16 x 8, 32 x 8).
// Returns {w, u}, or {0, 0} when it does not apply.
constexpr int64_t kAlignedStep = 128;
std::pair<int64_t, int64_t> AlignedSplit(const ForNode* f, const Stmt& body) {
  struct Divisors : StmtExprVisitor {
    const VarNode* v = nullptr;
    std::vector<int64_t> found;
    bool other = false;  // a division of v by a non-constant
    void VisitExpr(const PrimExpr& e) override {
      const PrimExpr* a = nullptr;
      const PrimExpr* b = nullptr;
      if (const auto* d = e.as<FloorDivNode>()) a = &d->a, b = &d->b;
      if (const auto* d = e.as<FloorModNode>()) a = &d->a, b = &d->b;
      if (a != nullptr && nest::Uses(*a, {v})) {
        const auto* c = b->as<IntImmNode>();
        if (c != nullptr && c->value > 1 && a->get() == v) {
          found.push_back(c->value);
        } else {
          other = true;
        }
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } d;
  d.v = f->loop_var.get();
  d.VisitStmt(body);
  const int64_t* ext = StaticExtent(f);
  if (d.found.empty() || d.other || ext == nullptr) return {0, 0};
  int64_t l = 1;
  for (int64_t c : d.found) {
    l = l / std::gcd(l, c) * c;
    if (l > 128) return {0, 0};
  }
  int64_t w = std::min<int64_t>(l, 16);
  if (l % 8 != 0 || *ext % l != 0 || *ext <= l) return {0, 0};
  for (int64_t c : d.found)
    if (c % w != 0) return {0, 0};
  // Full 16-lane vectors: steps of kAlignedStep elements where the extent
  // allows (more independent loads per step). Tuning's records for that
  // encoder transpose on Zen 5 (1 thread, kiln-tune, loaded machine): 16 x
  // 8 and 32 x 4 0.71-0.75 of 16 x 4 (L alone); 64 x 4 0.90-0.96, 8 x 8 0.93.
  int64_t step = l;
  while (w == 16 && step < kAlignedStep && *ext % (2 * step) == 0) step *= 2;
  return {w, step / w};
}

// Whether `body` calls a float math function (exp, erf, tanh, sigmoid, ...;
// not if_then_else): a loop worth explicit vectors on its own.
bool CallsMath(const Stmt& body) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* c = e.as<CallNode>())
        if (c->dtype.code == kDLFloat && c->op != "if_then_else") found = true;
      if (!found) StmtExprVisitor::VisitExpr(e);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

// Whether `s` takes a max or a min (softmax's row max): a kernel the early
// split is not for.
bool HasMinMax(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (e.as<MaxNode>() != nullptr || e.as<MinNode>() != nullptr) found = true;
      if (!found) StmtExprVisitor::VisitExpr(e);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

class Scheduler : public StmtExprMutator {
 public:
  Scheduler(int threads, const ScheduleKnobs& knobs, bool aligned, bool early)
      : threads_(threads), knobs_(knobs), aligned_(aligned), early_(early) {}

  // Whether AlignedSplit split a loop.
  bool aligned_made() const { return aligned_made_; }
  // The vectorized loops (by variable) the explicit rule may split once the
  // other schedules ran, with whether each calls math.
  const std::unordered_map<const VarNode*, bool>& explicit_candidates() const { return explicit_; }

  Stmt MutateStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    if (f == nullptr) return StmtExprMutator::MutateStmt(s);  // descends to the nests
    const ForNode* par = threads_ >= 2 ? PickParallel(s) : nullptr;
    return Rewrite(s, par);
  }

 private:
  // The loop of this nest to parallelize, or null.
  const ForNode* PickParallel(const Stmt& nest) const {
    int64_t work = Work(nest);
    const ForNode* f = As<ForNode>(nest);
    for (;;) {
      const int64_t* ext = StaticExtent(f);
      if (ext != nullptr && *ext == 1) {
        const auto* inner = As<ForNode>(f->body);
        if (inner == nullptr) return nullptr;
        f = inner;
        continue;
      }
      break;
    }
    if (f->for_kind != ForKind::kSerial || !IsIndependent(f)) return nullptr;
    const int64_t* ext = StaticExtent(f);
    if (ext == nullptr) return f;
    return (*ext >= 2 && work >= kMinParallelWork) ? f : nullptr;
  }

  // Rebuilds the nest below `s`, marking `par` parallel and innermost loops
  // vectorized.
  Stmt Rewrite(const Stmt& s, const ForNode* par) {
    if (!s) return s;
    const auto* f = As<ForNode>(s);
    if (f == nullptr) {
      // Inside a nest: keep walking through non-loop statements.
      struct Inner : StmtExprMutator {
        Scheduler* self;
        const ForNode* par;
        Stmt MutateStmt(const Stmt& st) override {
          if (As<ForNode>(st)) return self->Rewrite(st, par);
          return StmtExprMutator::MutateStmt(st);
        }
      } inner;
      inner.self = this;
      inner.par = par;
      return inner.MutateStmt(s);
    }
    Stmt body = Rewrite(f->body, par);
    ForKind kind = f->for_kind;
    if (f == par) {
      kind = ForKind::kParallel;
    } else if (!ContainsFor(f->body) && ShouldVectorize(f)) {
      kind = ForKind::kVectorized;
      int64_t w = knobs_.Get("elementwise.vector"), u = knobs_.Get("elementwise.unroll");
      if (w <= 0) std::tie(w, u) = RuleSplit(f, body);
      if (Stmt split = SplitVectorLoop(f, body, w, u)) return split;
      // A norm's symbolic loops (early_; the mean over symbolic rows): the
      // same split and a tail loop.
      if (w <= 0 && early_ && StaticExtent(f) == nullptr) return SplitSymbolicVectorLoop(f, body, kExplicitLanes, 2);
    }
    if (kind == f->for_kind && body == f->body) return s;
    return WithKind(f, kind, body);
  }

  // The aligned rule's split of a vectorized loop without knobs: {w, u},
  // {0, 0} for none. A loop of static extent that the explicit rule
  // (SplitExplicit) may take later is noted.
  std::pair<int64_t, int64_t> RuleSplit(const ForNode* f, const Stmt& body) {
    if (aligned_) {
      std::pair<int64_t, int64_t> a = AlignedSplit(f, body);
      if (a.first > 0 && SplitVectorLoop(f, body, a.first, a.second)) {
        aligned_made_ = true;
        return a;
      }
    }
    const int64_t* ext = StaticExtent(f);
    bool fits = ext != nullptr && *ext % (2 * kExplicitLanes) == 0 && *ext > 2 * kExplicitLanes;
    // A norm's static row (early_): split here, so that the row schedule
    // fuses the split loops (UnrolledLoopsFuseOnlyWithUnrolledLoops).
    if (early_ && fits) return {kExplicitLanes, 2};
    if (ext == nullptr || fits) explicit_[f->loop_var.get()] = CallsMath(body);
    return {0, 0};
  }

  int threads_;
  ScheduleKnobs knobs_;
  bool aligned_;
  bool early_;
  bool aligned_made_ = false;
  std::unordered_map<const VarNode*, bool> explicit_;
};

// The explicit rule: innermost vectorized loops of `candidates` (loop
// variable -> calls math) become kExplicitLanes-lane vectors, two per
// unrolled step, where they call math or `all`. Runs after the row-reduction
// schedule, which matches softmax's loops unsplit (a norm's static loops
// are split before it instead: ApplyDefaultSchedule). LLVM's
// loop vectorizer ran softmax's exp and normalize loops and layer_norm's
// output loop 1.5 to 2.5 times slower than kernel_emitter's explicit
// vectors (softmax rows of 96 to 384: 1.5 to 2x; layer_norm rows of 256 to
// 768: 1.4 to 2.3x; an erf GELU 1.3x; a bias add 1 % slower: memory
// bound, left to LLVM).
PrimFunc SplitExplicit(const PrimFunc& func, const std::unordered_map<const VarNode*, bool>& candidates, bool all) {
  struct Splitter : StmtExprMutator {
    const std::unordered_map<const VarNode*, bool>* candidates;
    bool all;
    Stmt MutateStmt(const Stmt& s) override {
      const auto* f = As<ForNode>(s);
      if (f != nullptr && f->for_kind == ForKind::kVectorized && !ContainsFor(f->body)) {
        auto it = candidates->find(f->loop_var.get());
        if (it != candidates->end() && (it->second || all)) {
          if (StaticExtent(f) == nullptr) return SplitSymbolicVectorLoop(f, f->body, kExplicitLanes, 2);
          if (Stmt split = SplitVectorLoop(f, f->body, kExplicitLanes, 2)) return split;
        }
        return s;
      }
      return StmtExprMutator::MutateStmt(s);
    }
  } splitter;
  splitter.candidates = &candidates;
  splitter.all = all;
  Stmt body = splitter.MutateStmt(func->body);
  return body == func->body ? func : nest::WithBody(func, body);
}

}  // namespace

namespace {

// The default schedule, with the aligned rule or without it; `aligned_made`:
// whether that rule split a loop; `restructured`: whether a conv, matmul or
// window schedule rewrote nests.
PrimFunc Pipeline(const PrimFunc& input, int num_threads_hint, const ScheduleKnobs& knobs, bool aligned, bool early,
                  bool* aligned_made, bool* restructured, bool* norm_rows) {
  // Reductions over several trailing axes become one flat axis first, so the
  // row-reduction schedule vectorizes them.
  // Elementwise rows of a symbolic width become one flat loop (several
  // short rows: one vector loop).
  PrimFunc func = FlattenElementwiseRows(FlattenTrailingReductions(SimplifySymbolicDivisions(input)));
  Scheduler scheduler(num_threads_hint, knobs, aligned, early);
  PrimFunc out = nest::WithBody(func, scheduler.MutateStmt(func->body));
  *aligned_made = scheduler.aligned_made();
  PrimFunc simple = out;
  // Matmul nests get their own structure (matmul_schedule.h); it keeps the
  // kinds chosen above for everything else.
  // 1-D convolutions take the conv2d schedules as height-1 ones, where
  // those take every one lifted (else the function stays as it was).
  std::vector<const VarNode*> lifted_outputs;
  PrimFunc lifted = LiftConv1dNests(out, &lifted_outputs);
  auto schedule_convs = [&](const PrimFunc& f) {
    // Narrow rows of wide kernels (an STFT as a strided conv) first: the
    // others' column tiles would be scalar there.
    // Static strided depthwise: phase planes in cache (depthwise_schedule.h).
    // Tuning's im2col panels (conv.im2col) and interior / border tiles
    // (conv.border_split) before all of them: the latter by a rule
    // (long lines of kernels along them), the former by the knob only.
    // Grouped convs of 16 channels a group: channels in the lanes (conv_grouped_block.h).
    PrimFunc dot = ScheduleGroupedBlockConvs(
        ScheduleStridedDepthwise(ScheduleDotConvs(ScheduleIm2colConvs(ScheduleBorderSplitConvs(ScheduleChannelLaneConvs(f, num_threads_hint, knobs), num_threads_hint, knobs), num_threads_hint, knobs), num_threads_hint), knobs),
        knobs);
    PrimFunc convs = ScheduleConvsPeelingBatch(ScheduleConvs(dot, num_threads_hint, knobs), num_threads_hint, knobs);
    return ScheduleSymbolicConvs(convs, num_threads_hint);
  };
  PrimFunc tried = lifted.get() != out.get() ? schedule_convs(lifted) : PrimFunc();
  out = tried && !HasNaiveUpdate(tried, lifted_outputs) ? tried : schedule_convs(out);
  // A dense layer over a channel-major tensor's positions first: the
  // matmul schedule would transpose it (channel_major_dense.h).
  out = ScheduleChannelMajorDense(out, num_threads_hint);
  out = ScheduleWindowReductions(ScheduleMatmuls(out, num_threads_hint, knobs), knobs);
  *restructured = out.get() != simple.get();
  // Epilogues into the schedules' stores before the row schedule fuses
  // their stages' loops: fused, a chain whose last stage reads its input
  // twice (bias + hard-swish after a depthwise conv) became one loop with a
  // one-element temporary that neither inlines nor vectorizes (a scalar
  // pass over the output: 64 ch 56^2 -> 28^2 3x3/2 depthwise + bias +
  // hard-swish, 1 thread, 23.9 us CPU, inlined 14.9, as without hard-swish).
  if (*restructured) out = InlineElementwise(out, /*after_schedule=*/true);
  PrimFunc reduced = ScheduleRowReductions(out, num_threads_hint, knobs);
  // Explicit vectors where no conv or matmul epilogue needs its loops
  // unsplit: loops that call math, and every candidate of a row-wise kernel
  // (softmax, norms), where they were measured to pay.
  // A row-wise kernel is one with a reduction the row schedule vectorizes
  // (not merely one whose sibling loops it fused: a concatenation's slices).
  if (!*restructured && !scheduler.explicit_candidates().empty()) {
    bool row_wise = reduced.get() != out.get() && VectorizeReductions(out->body, num_threads_hint, knobs) != out->body;
    reduced = SplitExplicit(reduced, scheduler.explicit_candidates(), row_wise);
    *norm_rows = row_wise && !HasMinMax(out->body);
  }
  // A parallel loop over a symbolic batch (1 at run time) hands its
  // threads to the loops below it. Epilogues move into the schedules'
  // stores first (as AfterSchedule would): an elementwise pass whose loop
  // that splits into two versions is no longer one plain store to inline.
  // Then elementwise nests that read down columns take them in blocks of
  // a cache line (after the spread: its parallel loops are kept); vector
  // loops that read across rows move 16 x 16 register tiles.
  return TileTransposes(
      BlockTransposedReads(SpreadSymbolicParallel(InlineElementwise(reduced, /*after_schedule=*/true), num_threads_hint)));
}

}  // namespace

PrimFunc ApplyDefaultSchedule(const PrimFunc& input, int num_threads_hint, const ScheduleKnobs& knobs) {
  bool aligned_made = false, restructured = false, norm_rows = false;
  PrimFunc out = Pipeline(input, num_threads_hint, knobs, true, false, &aligned_made, &restructured, &norm_rows);
  // A norm (a row-wise kernel without a max: not softmax) again with its
  // vector loops split before the row schedule. The split mean loop
  // over the rows no longer fuses, so the row sums run back to back over
  // all rows and only variance -> reciprocal -> output stay fused per row:
  // the sums of consecutive rows overlap instead of each row waiting on the
  // whole chain. Measured (one thread, machine busy with other builds,
  // medians, same run against main): layer_norm [256, 384] 16.1-16.9 ->
  // 11.5-11.7 us (0.70x), [128, 768] 0.80-0.86x, [512, 256] 0.73x; compiled
  // for and run on 2 threads 0.77x and 0.85x; symbolic rows (the mean's
  // loop split with a tail) of 384 at 256 rows 0.80-0.81x, of 192 at
  // 7 / 96 / 256 rows 0.92-0.94x / 0.79-0.82x / 0.79-0.83x; 256 rows of
  // symbolic length 384 / 100 0.85x / 0.63-0.69x. Whole models (minilm,
  // khmersm): within the noise (+-1 %). rms_norm (no
  // mean loop) compiles to the same code as before. Softmax split this
  // way lost (1.05x [256, 384], 1.09x [512, 128]) and keeps the late split.
  if (norm_rows) {
    bool unused = false;
    return Pipeline(input, num_threads_hint, knobs, true, true, &aligned_made, &restructured, &unused);
  }
  // A conv's or matmul's epilogue stages fuse only while their loops are
  // unsplit: where those schedules apply, no aligned splits either.
  if (aligned_made && restructured)
    out = Pipeline(input, num_threads_hint, knobs, false, false, &aligned_made, &restructured, &norm_rows);
  return out;
}

}  // namespace tir
}  // namespace kiln
