#include "compiler/tir/matmul_dot.h"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;     // NOLINT
using namespace nest;  // NOLINT

bool MatchTransposedCopy(const Stmt& copy, const Buffer& b, const std::vector<PrimExpr>& b_idx, const VarNode* j,
                         const VarNode* k, Buffer* s, std::vector<PrimExpr>* s_idx) {
  Stmt body;
  std::vector<const ForNode*> loops = PeelNest(copy, &body);
  const auto* store = As<BufferStoreNode>(body);
  if (loops.empty() || store == nullptr || store->buffer != b) return false;
  const auto* load = store->value.as<BufferLoadNode>();
  if (load == nullptr || load->buffer == b || load->buffer->dtype != DType::Float32() || !load->buffer->strides.empty())
    return false;
  // Each of B's indices its own loop variable (each element stored once)
  // over loops that cover B: the copy writes all of B.
  std::unordered_map<const VarNode*, size_t> dim_of;  // loop variable -> B's dimension
  if (store->indices.size() != b_idx.size() || store->indices.size() != loops.size()) return false;
  for (size_t d = 0; d < store->indices.size(); ++d) {
    const auto* v = store->indices[d].as<VarNode>();
    if (v == nullptr || dim_of.count(v) || !IsZero(loops[d]->min) || loops[d]->loop_var.get() != v ||
        !ProvenSameExtent(loops[d]->extent, b->shape[d])) {
      return false;
    }
    dim_of[v] = d;
  }
  // S's indices in the matmul's variables.
  VarMap map;
  for (const auto& kv : dim_of) map[kv.first] = b_idx[kv.second];
  std::vector<PrimExpr> idx;
  for (const PrimExpr& e : load->indices) {
    const auto* v = e.as<VarNode>();
    if (v == nullptr || !dim_of.count(v)) return false;
    idx.push_back(Substitute(e, map));
  }
  if (idx.empty() || !IsVar(idx.back(), k)) return false;
  bool reads_j = false;
  for (size_t d = 0; d + 1 < idx.size(); ++d) {
    if (Uses(idx[d], {k})) return false;
    reads_j = reads_j || Uses(idx[d], {j});
  }
  if (!reads_j) return false;
  *s = load->buffer;
  *s_idx = std::move(idx);
  return true;
}

namespace {

PrimExpr Var64(const Var& v) { return PrimExpr(std::static_pointer_cast<const PrimExprNode>(v)); }

Stmt For(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

// Columns j0 .. j0 + cols - 1 of one output row: `value(j, k)` is A * S at
// (j, k); `store(j, sum)` writes a result.
Stmt DotTile(int64_t cols, const PrimExpr& j0, const PrimExpr& k_ext, const PrimExpr& init,
             const std::function<PrimExpr(PrimExpr, PrimExpr)>& a_at, const std::function<PrimExpr(PrimExpr, PrimExpr)>& s_at,
             const std::function<Stmt(PrimExpr, PrimExpr)>& store) {
  const PrimExpr lanes = I64(kDotLanes);
  Buffer acc = Float32Buffer("dot_acc", {I64(cols), lanes}, "local");
  Var c0 = MakeVar("dc"), l0 = MakeVar("dl");
  std::vector<Stmt> body;
  body.push_back(For(c0, I64(cols), ForKind::kUnrolled,
                     For(l0, lanes, ForKind::kVectorized, Store(acc, FloatImm(DType::Float32(), 0.0), {Var64(c0), Var64(l0)}))));
  Var ko = MakeVar("dk"), c1 = MakeVar("dc"), l1 = MakeVar("dl");
  PrimExpr kk = Var64(ko) * lanes + Var64(l1);
  PrimExpr jj = j0 + Var64(c1);
  Stmt fma = Store(acc, Fma(a_at(jj, kk), s_at(jj, kk), Load(acc, {Var64(c1), Var64(l1)})), {Var64(c1), Var64(l1)});
  PrimExpr blocks = MakeBinary(TirKind::kFloorDiv, k_ext, lanes);
  body.push_back(For(ko, blocks, ForKind::kSerial,
                     For(c1, I64(cols), ForKind::kUnrolled, For(l1, lanes, ForKind::kVectorized, fma))));
  // The lane tree: each step a fresh buffer written and read at one width,
  // so that the lanes stay in registers (as reduce_schedule.cc's trees).
  Buffer cur = acc;
  std::vector<Buffer> steps;
  for (int64_t h = kDotLanes / 2; h >= 1; h /= 2) {
    Buffer next = Float32Buffer("dot_h" + std::to_string(h), {I64(cols), I64(h)}, "local");
    Var c = MakeVar("dc"), l = MakeVar("dh");
    Stmt st = Store(next, Load(cur, {Var64(c), Var64(l)}) + Load(cur, {Var64(c), Var64(l) + I64(h)}), {Var64(c), Var64(l)});
    body.push_back(For(c, I64(cols), ForKind::kUnrolled, For(l, I64(h), h >= 4 ? ForKind::kVectorized : ForKind::kUnrolled, st)));
    steps.push_back(next);
    cur = next;
  }
  // The k % 16 tail in scalars, then the result.
  Buffer sum = Float32Buffer("dot_sum", {I64(cols)}, "local");
  Var c2 = MakeVar("dc");
  PrimExpr j2 = j0 + Var64(c2);
  Var kt = MakeVar("dt");
  PrimExpr kv = blocks * lanes + Var64(kt);
  std::vector<Stmt> fin;
  fin.push_back(Store(sum, Load(cur, {Var64(c2), I64(0)}), {Var64(c2)}));
  fin.push_back(For(kt, MakeBinary(TirKind::kFloorMod, k_ext, lanes), ForKind::kSerial,
                    Store(sum, Fma(a_at(j2, kv), s_at(j2, kv), Load(sum, {Var64(c2)})), {Var64(c2)})));
  PrimExpr total = IsFloatZero(init) ? Load(sum, {Var64(c2)}) : init + Load(sum, {Var64(c2)});
  fin.push_back(store(j2, total));
  body.push_back(For(c2, I64(cols), ForKind::kUnrolled, Seq(fin)));
  Stmt out = std::make_shared<AllocateNode>(sum, Seq(body));
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) out = std::make_shared<AllocateNode>(*it, out);
  return std::make_shared<AllocateNode>(acc, out);
}

}  // namespace

Stmt DotProductMatmul(const std::vector<const ForNode*>& loops, const Buffer& c, const std::vector<PrimExpr>& c_idx,
                      const PrimExpr& init, const Buffer& a, const std::vector<PrimExpr>& a_idx, const Buffer& s,
                      const std::vector<PrimExpr>& s_idx, int threads) {
  size_t nb = loops.size() - 3;
  const VarNode* i = loops[nb]->loop_var.get();
  const VarNode* j = loops[nb + 1]->loop_var.get();
  const VarNode* k = loops[nb + 2]->loop_var.get();
  for (const ForNode* f : loops)
    if (f->loop_var->dtype != DType::Int64()) return nullptr;
  // New batch variables (the nest's own are bound by its loops, which this
  // kernel replaces).
  VarMap batch;
  std::vector<Var> bvars;
  for (size_t d = 0; d < nb; ++d) {
    bvars.push_back(MakeVar(loops[d]->loop_var->name));
    batch[loops[d]->loop_var.get()] = Var64(bvars.back());
  }
  auto at = [&](const std::vector<PrimExpr>& idx, const PrimExpr& jv, const PrimExpr& kv) {
    VarMap m = batch;
    m[i] = I64(0);
    m[j] = jv;
    m[k] = kv;
    std::vector<PrimExpr> out;
    for (const PrimExpr& e : idx) out.push_back(Substitute(e, m));
    return out;
  };
  auto a_at = [&](PrimExpr jv, PrimExpr kv) { return Load(a, at(a_idx, jv, kv)); };
  auto s_at = [&](PrimExpr jv, PrimExpr kv) { return Load(s, at(s_idx, jv, kv)); };
  auto store = [&](PrimExpr jv, PrimExpr v) { return Store(c, v, at(c_idx, jv, I64(0))); };
  PrimExpr n = loops[nb + 1]->extent, kx = loops[nb + 2]->extent;
  Var jo = MakeVar("dj"), jr = MakeVar("dj");
  PrimExpr whole = MakeBinary(TirKind::kFloorDiv, n, I64(kDotCols));
  // Threads take batches; without a batch loop, groups of columns.
  ForKind cols_kind = nb == 0 && threads > 1 ? ForKind::kParallel : ForKind::kSerial;
  Stmt wide = For(jo, whole, cols_kind, DotTile(kDotCols, Var64(jo) * I64(kDotCols), kx, init, a_at, s_at, store));
  Stmt rest = For(jr, MakeBinary(TirKind::kFloorMod, n, I64(kDotCols)), ForKind::kSerial,
                  DotTile(1, whole * I64(kDotCols) + Var64(jr), kx, init, a_at, s_at, store));
  Stmt body = Seq({wide, rest});
  for (size_t d = nb; d-- > 0;) {
    ForKind kind = d == 0 && threads > 1 ? ForKind::kParallel : ForKind::kSerial;
    body = std::make_shared<ForNode>(bvars[d], I64(0), loops[d]->extent, kind, body);
  }
  return body;
}

}  // namespace tir
}  // namespace kiln
