#include "compiler/tir/channel_major_dense.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// Positions per vector: 16 floats.
constexpr int64_t kLanes = 16;
// Longest position run taken (four vectors): beyond it the matmul
// schedule's row tiles have enough rows to themselves.
constexpr int64_t kMaxPositions = 64;

PrimExpr ToI64(const PrimExpr& e) {
  if (e.dtype() == DType::Int64()) return e;
  if (const auto* imm = e.as<IntImmNode>()) return IntImm(DType::Int64(), imm->value);
  return Cast(DType::Int64(), e);
}

// v // len or v % len (kind) with len a constant: its len, else 0.
int64_t DivisorOf(const PrimExpr& e, TirKind kind, const VarNode* v) {
  if (e->kind() != kind) return 0;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  const int64_t* len = ConstInt(b->b);
  return IsVar(b->a, v) && len != nullptr && *len > 0 ? *len : 0;
}

// The transposed operand's nest: T[i0, i1] = value, where value reads X at
// [.., i0 // len (div_pos), .., i0 % len (last)] and uses i0 nowhere else.
struct Prologue {
  const ForNode* rows = nullptr;
  const ForNode* chans = nullptr;
  Buffer t, x;
  PrimExpr value;
  size_t div_pos = 0;
  int64_t len = 0;
};

// Whether `l` reads the prologue's X in its pattern (div_pos, len set from the
// first one seen).
bool IsChannelMajorLoad(const BufferLoadNode* l, const VarNode* i0, Prologue* p) {
  size_t n = l->indices.size();
  if (n < 2 || !l->buffer->strides.empty()) return false;
  int64_t len = DivisorOf(l->indices[n - 1], TirKind::kFloorMod, i0);
  if (len == 0) return false;
  size_t div_pos = n;
  for (size_t d = 0; d + 1 < n; ++d) {
    if (DivisorOf(l->indices[d], TirKind::kFloorDiv, i0) == len) {
      if (div_pos != n) return false;
      div_pos = d;
    } else if (Uses(l->indices[d], {i0})) {
      return false;
    }
  }
  if (div_pos == n) return false;
  if (p->x) return p->x == l->buffer && p->div_pos == div_pos && p->len == len;
  p->x = l->buffer;
  p->div_pos = div_pos;
  p->len = len;
  return true;
}

// The prologue's value at position block n, channel k, position x: X's loads
// at [.., n, .., x] and every other i1 as k.
class AtPosition : public StmtExprMutator {
 public:
  AtPosition(const Prologue& p, PrimExpr n, PrimExpr k, PrimExpr x)
      : p_(p), n_(std::move(n)), x_(std::move(x)) {
    map_[p.chans->loop_var.get()] = std::move(k);
  }
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      if (l->buffer == p_.x) {
        Prologue probe = p_;
        if (IsChannelMajorLoad(l, p_.rows->loop_var.get(), &probe)) {
          std::vector<PrimExpr> idx;
          for (size_t d = 0; d < l->indices.size(); ++d) {
            if (d == p_.div_pos) idx.push_back(n_);
            else if (d + 1 == l->indices.size()) idx.push_back(x_);
            else idx.push_back(Substitute(l->indices[d], map_));
          }
          return Load(l->buffer, idx);
        }
      }
    }
    if (const auto* v = e.as<VarNode>()) {
      auto it = map_.find(v);
      if (it != map_.end()) return it->second;
    }
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  const Prologue& p_;
  PrimExpr n_, x_;
  VarMap map_;
};

bool MatchPrologue(const Stmt& s, Prologue* p) {
  Stmt body;
  std::vector<const ForNode*> loops = PeelNest(s, &body);
  if (loops.size() != 2) return false;
  std::unordered_set<const VarNode*> vars = {loops[0]->loop_var.get(), loops[1]->loop_var.get()};
  for (const ForNode* f : loops)
    if (!IsZero(f->min) || Uses(f->extent, vars)) return false;
  const auto* st = As<BufferStoreNode>(body);
  if (st == nullptr || st->indices.size() != 2 || !IsVar(st->indices[0], loops[0]->loop_var.get()) ||
      !IsVar(st->indices[1], loops[1]->loop_var.get()) || st->buffer->dtype != DType::Float32() ||
      !st->buffer->strides.empty()) {
    return false;
  }
  p->rows = loops[0];
  p->chans = loops[1];
  p->t = st->buffer;
  p->value = st->value;
  const VarNode* i0 = loops[0]->loop_var.get();
  BufferRefs refs;
  refs.VisitExpr(st->value);
  if (refs.loads.count(p->t->data.get())) return false;
  for (const BufferLoadNode* l : refs.load_nodes) {
    bool uses_row = false;
    for (const PrimExpr& ix : l->indices) uses_row = uses_row || Uses(ix, {i0});
    if (uses_row && !IsChannelMajorLoad(l, i0, p)) return false;
  }
  if (!p->x || p->x == p->t) return false;
  // i0 only inside X's loads, and the rows exactly X's blocks of len.
  Var probe = MakeVar("probe");
  if (Uses(AtPosition(*p, PrimExpr(probe), PrimExpr(probe), PrimExpr(probe)).MutateExpr(p->value), {i0})) return false;
  return arith::CanProveEqual(ToI64(p->rows->extent), ToI64(p->x->shape[p->div_pos]) * IntImm(DType::Int64(), p->len));
}

// C[i, j] = init when k == 0; C[i, j] = C[i, j] + T[i, k] * W[k, j] (either
// operand order), float32.
struct Dense {
  std::vector<const ForNode*> loops;  // i, j, k
  Buffer c, w;
  std::vector<PrimExpr> w_idx;
  PrimExpr init;
};

bool MatchDense(const Stmt& s, const Prologue& p, Dense* m) {
  Stmt body;
  m->loops = PeelNest(s, &body);
  const auto& loops = m->loops;
  if (loops.size() != 3) return false;
  std::unordered_set<const VarNode*> vars;
  for (const ForNode* f : loops) vars.insert(f->loop_var.get());
  for (const ForNode* f : loops)
    if (!IsZero(f->min) || Uses(f->extent, vars)) return false;
  const VarNode* i = loops[0]->loop_var.get();
  const VarNode* j = loops[1]->loop_var.get();
  const VarNode* k = loops[2]->loop_var.get();
  const auto* seq = As<SeqStmtNode>(body);
  if (seq == nullptr || seq->seq.size() != 2) return false;
  const auto* guard = As<IfThenElseNode>(seq->seq[0]);
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  if (guard == nullptr || guard->else_case || update == nullptr) return false;
  const auto* eq = guard->cond.as<EQNode>();
  const auto* init = As<BufferStoreNode>(guard->then_case);
  if (eq == nullptr || !IsVar(eq->a, k) || !IsZero(eq->b) || init == nullptr || init->buffer != update->buffer ||
      !init->value.as<FloatImmNode>()) {
    return false;
  }
  m->c = update->buffer;
  m->init = init->value;
  auto at_ij = [&](const std::vector<PrimExpr>& idx) {
    return idx.size() == 2 && IsVar(idx[0], i) && IsVar(idx[1], j);
  };
  if (m->c->dtype != DType::Float32() || !m->c->strides.empty() || !at_ij(update->indices) || !at_ij(init->indices)) {
    return false;
  }
  const auto* add = update->value.as<AddNode>();
  if (add == nullptr) return false;
  PrimExpr acc = add->a, prod = add->b;
  if (!acc.as<BufferLoadNode>() || acc.as<BufferLoadNode>()->buffer != m->c) std::swap(acc, prod);
  const auto* acc_load = acc.as<BufferLoadNode>();
  const auto* mul = prod.as<MulNode>();
  if (acc_load == nullptr || acc_load->buffer != m->c || !at_ij(acc_load->indices) || mul == nullptr) return false;
  const auto* a = mul->a.as<BufferLoadNode>();
  const auto* b = mul->b.as<BufferLoadNode>();
  if (a == nullptr || b == nullptr) return false;
  if (a->buffer != p.t) std::swap(a, b);
  if (a->buffer != p.t || a->indices.size() != 2 || !IsVar(a->indices[0], i) || !IsVar(a->indices[1], k)) return false;
  if (b->buffer == p.t || b->buffer == m->c || b->buffer->dtype != DType::Float32() || !b->buffer->strides.empty() ||
      b->indices.size() != 2 || !IsVar(b->indices[0], k) || !IsVar(b->indices[1], j)) {
    return false;
  }
  m->w = b->buffer;
  m->w_idx = b->indices;
  return arith::CanProveEqual(ToI64(loops[0]->extent), ToI64(p.rows->extent)) &&
         arith::CanProveEqual(ToI64(loops[2]->extent), ToI64(p.chans->extent));
}

Stmt Build(const Prologue& p, const Dense& m, const std::vector<EpilogueStage>& stages, int threads) {
  DType f32 = DType::Float32(), i64 = DType::Int64();
  auto c = [&](int64_t v) { return IntImm(i64, v); };
  int64_t len = p.len;
  int64_t cols = *ConstInt(m.loops[1]->extent);
  auto acc_node = std::make_shared<BufferNode>();
  acc_node->name = "acc";
  acc_node->data = MakeVar("acc_data", HandleType());
  acc_node->dtype = f32;
  acc_node->shape = {c(cols), c(len)};
  acc_node->scope = "local";
  Buffer acc = acc_node;
  Var n = MakeVar("n"), k = MakeVar("k");
  // j unrolled (one accumulator row each), the positions one vector loop.
  auto grid = [&](const std::string& tag, const std::function<Stmt(const Var&, const Var&)>& body) {
    Var j = MakeVar("j" + tag), x = MakeVar("x" + tag);
    Stmt inner = std::make_shared<ForNode>(x, c(0), c(len), ForKind::kVectorized, body(j, x));
    return std::make_shared<ForNode>(j, c(0), c(cols), ForKind::kUnrolled, inner);
  };
  Stmt zero = grid("_init", [&](const Var& j, const Var& x) { return Store(acc, m.init, {PrimExpr(j), PrimExpr(x)}); });
  const VarNode* jv = m.loops[1]->loop_var.get();
  const VarNode* kv = m.loops[2]->loop_var.get();
  Stmt update = grid("", [&](const Var& j, const Var& x) {
    // The same operand for every j: LLVM computes it once per k.
    PrimExpr a = AtPosition(p, PrimExpr(n), PrimExpr(k), PrimExpr(x)).MutateExpr(p.value);
    PrimExpr w = Substitute(Load(m.w, m.w_idx), VarMap{{jv, PrimExpr(j)}, {kv, PrimExpr(k)}});
    PrimExpr cur = Load(acc, {PrimExpr(j), PrimExpr(x)});
    return Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{a, w, cur})),
                 {PrimExpr(j), PrimExpr(x)});
  });
  Stmt kloop = std::make_shared<ForNode>(k, c(0), ToI64(m.loops[2]->extent), ForKind::kSerial, update);
  Stmt store = grid("_out", [&](const Var& j, const Var& x) {
    std::vector<PrimExpr> idx = {PrimExpr(n) * c(len) + PrimExpr(x), PrimExpr(j)};
    PrimExpr v = Load(acc, {PrimExpr(j), PrimExpr(x)});
    std::vector<std::pair<const VarNode*, PrimExpr>> values = {{m.c->data.get(), v}};
    Buffer dst = m.c;
    for (const EpilogueStage& e : stages) {
      PrimExpr val = e.value;
      for (const auto& kv2 : values)
        if (std::find(e.reads.begin(), e.reads.end(), kv2.first) != e.reads.end())
          val = ReplaceLoads(kv2.first, kv2.second).MutateExpr(val);
      v = Substitute(val, VarMap{{e.loops[0]->loop_var.get(), idx[0]}, {e.loops[1]->loop_var.get(), idx[1]}});
      values.emplace_back(e.dst->data.get(), v);
      dst = e.dst;
    }
    return Store(dst, v, idx);
  });
  Stmt body = std::make_shared<AllocateNode>(acc, Seq({zero, kloop, store}));
  ForKind kind = threads >= 2 ? ForKind::kParallel : ForKind::kSerial;
  return std::make_shared<ForNode>(n, c(0), ToI64(p.x->shape[p.div_pos]), kind, body);
}

class DenseRewriter : public StmtExprMutator {
 public:
  DenseRewriter(const PrimFunc& func, int threads) : threads_(threads) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
    all_refs_ = RefsOf(func->body);
  }
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* seq = As<SeqStmtNode>(s)) return RewriteSeq(seq->seq, s);
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  // Whether buffer b is referenced only by the statements in [from, to).
  bool OnlyIn(const VarNode* b, const std::vector<Stmt>& in, size_t from, size_t to) const {
    int here = 0;
    for (size_t s = from; s < to; ++s) here += RefsOf(in[s]).Refs(b);
    return !params_.count(b) && all_refs_.Refs(b) == here;
  }

  Stmt RewriteSeq(const std::vector<Stmt>& in, const Stmt& orig) {
    std::vector<Stmt> out;
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) {
      Prologue p;
      Dense m;
      if (i + 1 >= in.size() || !MatchPrologue(in[i], &p) || !MatchDense(in[i + 1], p, &m) ||
          !OnlyIn(p.t->data.get(), in, i, i + 2) || !Fits(p, m)) {
        Stmt r = As<ForNode>(in[i]) ? in[i] : MutateStmt(in[i]);
        any = any || r != in[i];
        out.push_back(r);
        continue;
      }
      // Buffers the kernel reads while it stores: no stage may write one.
      BufferRefs kernel_loads;
      kernel_loads.VisitExpr(p.value);
      std::unordered_set<const VarNode*> read = {m.w->data.get(), p.x->data.get()};
      for (const auto& kv : kernel_loads.loads) read.insert(kv.first);
      if (read.count(m.c->data.get())) {
        out.push_back(in[i]);
        continue;
      }
      std::unordered_set<const VarNode*> chain = {m.c->data.get()};
      std::vector<EpilogueStage> candidates;
      for (size_t next = i + 2; next < in.size(); ++next) {
        EpilogueStage e;
        if (!MatchEpilogueStage(in[next], chain, {m.loops[0], m.loops[1]}, &e) || read.count(e.dst->data.get())) break;
        BufferRefs loads;
        loads.VisitExpr(e.value);
        for (const auto& kv : loads.loads) read.insert(kv.first);
        if (read.count(e.dst->data.get())) break;
        chain.insert(e.dst->data.get());
        candidates.push_back(e);
      }
      // The longest prefix whose intermediates (C, every stage output but the
      // last) nothing outside the matmul and those stages references.
      size_t fused = 0;
      for (size_t n = candidates.size(); n > 0 && fused == 0; --n) {
        bool ok = OnlyIn(m.c->data.get(), in, i + 1, i + 2 + n);
        for (size_t s = 0; ok && s + 1 < n; ++s) ok = OnlyIn(candidates[s].dst->data.get(), in, i + 1, i + 2 + n);
        if (ok) fused = n;
      }
      candidates.resize(fused);
      out.push_back(Build(p, m, candidates, threads_));
      i += 1 + fused;
      any = true;
    }
    if (!any) return orig;
    changed = true;
    return Seq(out);
  }

  static bool Fits(const Prologue& p, const Dense& m) {
    const int64_t* cols = ConstInt(m.loops[1]->extent);
    if (cols == nullptr || *cols < 1 || p.len > kMaxPositions) return false;
    return *cols * ((p.len + kLanes - 1) / kLanes) <= kMaxDenseAccVectors;
  }

  int threads_;
  std::unordered_set<const VarNode*> params_;
  BufferRefs all_refs_;
};

}  // namespace

PrimFunc ScheduleChannelMajorDense(const PrimFunc& func, int num_threads_hint) {
  DenseRewriter rewriter(func, num_threads_hint);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
