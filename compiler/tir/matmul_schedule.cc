#include "compiler/tir/matmul_schedule.h"
#include "compiler/tir/schedule_knobs.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/tir/matmul_dot.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

constexpr int kMaxRows = 8;    // MR: rows of accumulators (N < 64)
constexpr int kCols = 32;      // NR: two 16-float vectors per row (N < 64)
// NR for one- or two-row problems (more independent FMAs), and for any
// problem with N >= 64 (or symbolic), with kWideRows rows: 24 accumulator
// vectors, and per k 4 vector loads of B and 6 broadcasts of A for 24 FMAs
// where 8 x 32 needed 2 + 8 for 16. MiniLM's layers at 2 x 128 tokens, one
// thread, CPU time, against oneDNN in the same run (busy machine):
// 256x384x1536 + GELU 0.85 -> 1.02-1.05, 256x1536x384 0.83 -> 0.86-0.89,
// 256x384x384 0.94 -> 0.99-1.03 (7 x 64, 12 x 32, 14 x 32, 8 x 48 and
// 5 x 64 were measured too, none better overall; 4 x 96 spilled).
constexpr int kWideCols = 64;
constexpr int kWideRows = 6;
// NR for one-row problems with many columns (a classifier's GEMV): each k row
// of B is read 512 contiguous bytes at a time instead of 256. MobileNetV2's
// 1280 x 1000 layer inside the network (its 5 MiB weight no longer in cache):
// 391 -> 336 us (kernel profile, 1 thread, 2 runs each); 256 columns (one
// partial sum) gave 390 us.
constexpr int kGemvCols = 128;
constexpr int64_t kGemvMinCols = 512;
// Short and wide: at most kShortWideMaxRows rows (static) against a static
// N of kGemvMinCols or more, B read in place (not a blocked weight; a run-time
// B such as a decoder's attention at batch 1, or a weight passed as an
// input). Every row is in one tile, so B is read once per call, and the
// tile is as wide as kShortWideAccumulators accumulator vectors allow, at
// most kGemvCols: 2-3 rows x 128, 4 x 96, 5-6 x 64, 7-8 x 48. No prefetch
// hints (PrefetchB). 1 thread, K = 256, B warm in L3, medians of 9
// processes each (the heap placement of B moves the time by up to 1.4x
// from one process to the next): 2 x 1024 14.8 -> 9.9 us, 2 x 4096 69.5 ->
// 50.3, 3 x 4096 60.3 -> 41.5, 4 x 1024 12.8 -> 10.9, 4 x 4096 62.7 ->
// 45.5, 6 x 4096 77.1 -> 57.1, 8 x 4096 118 -> 72.7; 4 x 1024 x 1024 59.7
// -> 45.1; 4 x 128 spilled (58.9 at 4 x 4096). With the prefetch hints and
// the wider tiles, 4 x 4096 was 51.8. Cold (kiln-tune --cold-cache), the
// same without the hints: 2 x 4096 132-147 -> 102-107 us, 4 x 4096
// 140-181 -> 125-130 us.
constexpr int64_t kShortWideMaxRows = 8;
constexpr int kShortWideAccumulators = 24;
constexpr int64_t kPackMinRows = 256;  // rows (M) from which packing B is considered
constexpr int kRowSplit = 4;  // partial sums of a one-row tile
constexpr int kChunkCols = 16;  // column blocks of a symbolic N's last block
// A symbolic N under 16 at run time (an attention score matrix over a short
// sequence) is computed at 16 columns from a zero-padded copy of B's panel
// of at most this many bytes (a stack buffer per tile); see NarrowPanel.
constexpr int64_t kNarrowPanelMaxBytes = 16 * 1024;
// B of this many bytes or more is prefetched kMatmulPrefetchAheadBytes of
// its panel ahead of the k loop (PrefetchB): more than L2 holds, so inside
// a model it streams from L3 or memory, and a tile's k step asks for only
// nr / 16 new lines of it per mr * nr / 16 FMAs. ResNet-18's F(2x2)
// products of layer 4 (16 x 512 x 512 with a 17 MB weight a call) took 944
// us in the model against 607 us alone, warm; see matmul_schedule.h.
constexpr int64_t kMatmulPrefetchMinBytes = int64_t{2} << 20;
constexpr int64_t kMatmulPrefetchAheadBytes = 4096;

struct MatmulNest {
  std::vector<const ForNode*> loops;  // batch.., i, j, k
  Buffer c, a, b;
  std::vector<PrimExpr> c_idx, a_idx, b_idx;
  PrimExpr init;
  // kMatmulWeightBlock when B is a blocked weight read B[j / b, k, j % b]
  // (R.matmul's weight_layout KN<b>n); 0: B[.., k, j].
  int64_t b_block = 0;
};

// Whether `l` reads a blocked weight at B[j / kMatmulWeightBlock, k, j % kMatmulWeightBlock].
bool IsBlockedWeightLoad(const BufferLoadNode* l, const VarNode* j, const VarNode* k) {
  if (l->indices.size() != 3 || l->buffer->shape.size() != 3 || !IsVar(l->indices[1], k)) return false;
  const auto* d = l->indices[0].as<FloorDivNode>();
  const auto* m = l->indices[2].as<FloorModNode>();
  auto is_block = [](const PrimExpr& e) {
    const int64_t* v = ConstInt(e);
    return v != nullptr && *v == kMatmulWeightBlock;
  };
  const int64_t* inner = ConstInt(l->buffer->shape[2]);
  return d && m && IsVar(d->a, j) && is_block(d->b) && IsVar(m->a, j) && is_block(m->b) && inner &&
         *inner == kMatmulWeightBlock;
}

bool IndicesAreLoopVars(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops, size_t n) {
  if (idx.size() != n) return false;
  for (size_t d = 0; d < n; ++d)
    if (!IsVar(idx[d], loops[d]->loop_var.get())) return false;
  return true;
}

bool SameIndices(const std::vector<PrimExpr>& x, const std::vector<PrimExpr>& y) {
  if (x.size() != y.size()) return false;
  for (size_t d = 0; d < x.size(); ++d)
    if (x[d].get() != y[d].get()) return false;
  return true;
}

bool MatchMatmul(const Stmt& s, MatmulNest* m) {
  Stmt body;
  m->loops = PeelNest(s, &body);
  const auto& loops = m->loops;
  if (loops.size() < 3) return false;
  // Rectangular nests only: no extent may depend on a loop of the nest.
  std::unordered_set<const VarNode*> nest_vars;
  for (const ForNode* f : loops) nest_vars.insert(f->loop_var.get());
  for (const ForNode* f : loops)
    if (!IsZero(f->min) || Uses(f->extent, nest_vars)) return false;
  const auto* seq = As<SeqStmtNode>(body);
  if (seq == nullptr || seq->seq.size() != 2) return false;
  const auto* guard = As<IfThenElseNode>(seq->seq[0]);
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  if (guard == nullptr || guard->else_case || update == nullptr) return false;
  const VarNode* k = loops.back()->loop_var.get();
  const VarNode* i = loops[loops.size() - 3]->loop_var.get();
  const VarNode* j = loops[loops.size() - 2]->loop_var.get();
  const auto* eq = guard->cond.as<EQNode>();
  if (eq == nullptr || !IsVar(eq->a, k) || !IsZero(eq->b)) return false;
  const auto* init = As<BufferStoreNode>(guard->then_case);
  if (init == nullptr || init->buffer != update->buffer || !(init->value.as<FloatImmNode>() || init->value.as<IntImmNode>())) {
    return false;
  }

  m->c = update->buffer;
  m->c_idx = update->indices;
  // float32, or int32 (MatMulInteger's widened operands: integer sums are
  // exact in any order, so the tiles change no result).
  if ((m->c->dtype != DType::Float32() && m->c->dtype != DType::Int32()) || !m->c->strides.empty()) return false;
  if (!IndicesAreLoopVars(update->indices, loops, loops.size() - 1)) return false;
  if (!SameIndices(init->indices, update->indices)) return false;
  m->init = init->value;

  const auto* add = update->value.as<AddNode>();
  if (add == nullptr) return false;
  PrimExpr acc = add->a, prod = add->b;
  if (!acc.as<BufferLoadNode>() || acc.as<BufferLoadNode>()->buffer != m->c) std::swap(acc, prod);
  const auto* acc_load = acc.as<BufferLoadNode>();
  const auto* mul = prod.as<MulNode>();
  if (acc_load == nullptr || acc_load->buffer != m->c || !SameIndices(acc_load->indices, update->indices) ||
      mul == nullptr) {
    return false;
  }
  // A float32 product may read 16-bit float operands widened by a cast
  // (--precision=fp16|bf16: half weights and activations, float32 sums).
  auto operand = [&](const PrimExpr& e) -> const BufferLoadNode* {
    const auto* cast = e.as<CastNode>();
    if (cast == nullptr) return e.as<BufferLoadNode>();
    const auto* l = cast->value.as<BufferLoadNode>();
    bool half = l && l->buffer->dtype.is_float() && l->buffer->dtype.bits == 16 && l->buffer->dtype.lanes == 1;
    return half && cast->dtype == DType::Float32() && m->c->dtype == DType::Float32() ? l : nullptr;
  };
  const auto* x = operand(mul->a);
  const auto* y = operand(mul->b);
  if (x == nullptr || y == nullptr) return false;
  // A is read as a scalar broadcast per row, so it may be stored either way
  // round: A[.., i, k] or transposed, A[.., k, i] (Winograd's tile-major
  // product, transform/winograd_conv2d.h).
  auto is_a = [&](const BufferLoadNode* l) {
    size_t n = l->indices.size();
    return n >= 2 && ((IsVar(l->indices[n - 2], i) && IsVar(l->indices[n - 1], k)) ||
                      (IsVar(l->indices[n - 2], k) && IsVar(l->indices[n - 1], i)));
  };
  auto is_b = [&](const BufferLoadNode* l) {
    size_t n = l->indices.size();
    return (n >= 2 && IsVar(l->indices[n - 2], k) && IsVar(l->indices[n - 1], j)) || IsBlockedWeightLoad(l, j, k);
  };
  if (!(is_a(x) && is_b(y))) std::swap(x, y);
  if (!(is_a(x) && is_b(y))) return false;
  m->b_block = IsBlockedWeightLoad(y, j, k) ? kMatmulWeightBlock : 0;
  for (const BufferLoadNode* l : {x, y}) {
    bool widened = l->buffer->dtype != m->c->dtype && l->buffer->dtype.bits == 16;  // checked by `operand`
    if (l->buffer == m->c || (l->buffer->dtype != m->c->dtype && !widened) || !l->buffer->strides.empty()) return false;
    if (l == y && m->b_block) continue;  // its indices are checked
    for (size_t d = 0; d + 2 < l->indices.size(); ++d)
      if (Uses(l->indices[d], {i, j, k})) return false;
  }
  m->a = x->buffer;
  m->a_idx = x->indices;
  m->b = y->buffer;
  m->b_idx = y->indices;
  return true;
}

struct Parts {
  MatmulNest mm;
  std::vector<EpilogueStage> epilogue;
  int threads = 1;
  ScheduleKnobs knobs;  // schedule_knobs.h: 0 or absent = the rule below
};

class KernelBuilder {
 public:
  // The new loops are int64; user-written TIR may have int32 extents.
  static PrimExpr i64(const PrimExpr& e) {
    if (e.dtype() == DType::Int64()) return e;
    if (const auto* imm = e.as<IntImmNode>()) return IntImm(DType::Int64(), imm->value);
    return Cast(DType::Int64(), e);
  }

  // A 16-bit float operand element as the accumulator's float32.
  PrimExpr Widen(const PrimExpr& load) const {
    return load.dtype() == p_.mm.c->dtype ? load : Cast(p_.mm.c->dtype, load);
  }

  explicit KernelBuilder(const Parts& p) : p_(p) {
    const auto& loops = p.mm.loops;
    size_t nb = loops.size() - 3;
    for (size_t d = 0; d < nb; ++d) batch_.push_back(loops[d]);
    m_ = i64(loops[nb]->extent);
    n_ = i64(loops[nb + 1]->extent);
    k_ = i64(loops[nb + 2]->extent);
    FoldBatchIntoRows();
    const int64_t* ms = ConstInt(m_);
    const int64_t* ns = ConstInt(n_);
    const ScheduleKnobs& kn = p_.knobs;
    // Wide tiles (6 x 64) where N fills them: a symbolic N or N >= 64. A
    // tuned row count keeps the widths it was tuned with (8 x 64 would
    // spill).
    // A static N past 64 that leaves at most 32 columns in its last block
    // (196 = 3 x 64 + 4): 64-column tiles compute a whole overlapping last
    // block (256 columns for 196), 32-column ones at most 31 extra (224), so
    // kWideRows x kCols tiles. Tuning's records (ResNet-18's F(4x4)
    // products, 36 x 64 x 64 x 196, Zen 5, 1 thread): 6 x 32 0.85 of the
    // 6 x 64 default, 8 x 32 0.91-1.05.
    const bool ragged = ns != nullptr && *ns > kWideCols && *ns % kWideCols != 0 && *ns % kWideCols <= kCols &&
                        p_.mm.b_block == 0;
    bool wide = (ns == nullptr || (*ns >= kWideCols && !ragged) || p_.mm.b_block > 0) && kn.Get("matmul.mr") <= 0;
    mr_ = wide || (ragged && kn.Get("matmul.mr") <= 0) ? kWideRows : kMaxRows;
    if (kn.Get("matmul.mr") > 0) mr_ = static_cast<int>(std::min<int64_t>(kn.Get("matmul.mr"), kMaxRows));
    if (ms != nullptr && *ms < mr_) mr_ = static_cast<int>(std::max<int64_t>(*ms, 1));
    short_wide_ = ms != nullptr && *ms <= kShortWideMaxRows && ns != nullptr && *ns >= kGemvMinCols &&
                  p_.mm.b_block == 0;
    if (short_wide_ && kn.Get("matmul.mr") <= 0) mr_ = static_cast<int>(std::max<int64_t>(*ms, 1));
    nr_ = mr_ <= 2 || wide ? kWideCols : kCols;
    if (mr_ == 1 && ns != nullptr && *ns >= kGemvMinCols) nr_ = kGemvCols;
    if (short_wide_) nr_ = std::min(kGemvCols, kShortWideAccumulators / mr_ * 16);
    // A tuned width: whole 16-float vectors, at most the GEMV width.
    if (kn.Get("matmul.nr") > 0) nr_ = static_cast<int>(std::min<int64_t>((kn.Get("matmul.nr") + 15) / 16 * 16, kGemvCols));
    if (ns != nullptr && *ns < nr_) nr_ = static_cast<int>(std::max<int64_t>(*ns, 1));
    // A blocked weight is read a panel (block) at a time: its columns are
    // the tile's. A last block past N is zero padding: that tile computes
    // the whole panel and stores only the columns before N.
    if (p_.mm.b_block > 0) {
      nr_ = static_cast<int>(p_.mm.b_block);
      packed_ = p_.mm.b;
    }
  }

  // A batch whose B is shared by every batch element (a [.., M, K] tensor
  // times a weight) is one (batch * M) x K matrix times B: the rows of all
  // batch elements fill the MR-row tiles and each panel of B is read once for
  // all of them. (128 batches of one row, as PyTorch's attention in-projection
  // exports, were 128 one-row GEMVs that each read the whole weight.) Row r
  // is batch element r / M, row r % M. Symbolic extents fold too: a
  // sequence-first projection [seq, batch, K] x W with batch 1 at run time
  // was seq one-row GEMVs (khmersm's QKV projections, 3x the pinned
  // build's time); the divisions by a symbolic M are per row of a tile and
  // outside its k loop.
  void FoldBatchIntoRows() {
    if (batch_.empty()) return;
    std::unordered_set<const VarNode*> batch_vars;
    int64_t total = 1;
    bool batch_static = true;
    PrimExpr rows = m_;
    for (const ForNode* f : batch_) {
      if (const int64_t* e = ConstInt(f->extent)) {
        total *= *e;
      } else {
        batch_static = false;
      }
      batch_vars.insert(f->loop_var.get());
    }
    const auto& b_idx = p_.mm.b_idx;
    for (size_t d = 0; d + 2 < b_idx.size(); ++d)
      if (Uses(b_idx[d], batch_vars)) return;
    if (batch_static && total <= 1) return;
    bool all_static = batch_static && ConstInt(m_) != nullptr;
    folded_ = batch_;
    batch_.clear();
    rows_per_batch_ = m_;
    if (all_static) {
      m_ = IntImm(DType::Int64(), total * *ConstInt(m_));
      return;
    }
    for (const ForNode* f : folded_) rows = rows * i64(f->extent);
    m_ = rows;
  }

  // Whether rows are folded with a symbolic stride (rows per batch element
  // or a batch extent), over int64 loop variables.
  bool FoldedBySymbol() const {
    if (folded_.empty()) return false;
    const auto& loops = p_.mm.loops;
    bool symbolic = ConstInt(rows_per_batch_) == nullptr;
    for (const ForNode* f : folded_) {
      symbolic = symbolic || ConstInt(f->extent) == nullptr;
      if (f->loop_var->dtype != DType::Int64()) return false;
    }
    return symbolic && loops[loops.size() - 3]->loop_var->dtype == DType::Int64();
  }

  // Binds the batch variables and i of the original nest for flat row `r`
  // in *map, and appends the output index of that row to *idx.
  void MapRow(const PrimExpr& r, VarMap* map, std::vector<PrimExpr>* idx) const {
    auto c = [](int64_t v) { return IntImm(DType::Int64(), v); };
    auto is_one = [](const PrimExpr& e) {
      const int64_t* v = ConstInt(e);
      return v != nullptr && *v == 1;
    };
    const auto& loops = p_.mm.loops;
    const VarNode* iv = loops[loops.size() - 3]->loop_var.get();
    if (folded_.empty()) {
      for (size_t d = 0; d < batch_.size(); ++d) {
        (*map)[batch_[d]->loop_var.get()] = PrimExpr(batch_vals_[d]);
        idx->push_back(PrimExpr(batch_vals_[d]));
      }
      (*map)[iv] = r;
      idx->push_back(r);
      return;
    }
    std::vector<PrimExpr> vals(folded_.size());
    PrimExpr stride = rows_per_batch_;
    for (size_t d = folded_.size(); d-- > 0;) {
      PrimExpr ext = i64(folded_[d]->extent);
      PrimExpr q = is_one(stride) ? r : MakeBinary(TirKind::kFloorDiv, r, stride);
      vals[d] = is_one(ext) ? c(0) : d == 0 ? q : MakeBinary(TirKind::kFloorMod, q, ext);
      const int64_t *se = ConstInt(stride), *ee = ConstInt(ext);
      stride = se && ee ? c(*se * *ee) : stride * ext;
    }
    for (size_t d = 0; d < folded_.size(); ++d) {
      (*map)[folded_[d]->loop_var.get()] = vals[d];
      idx->push_back(vals[d]);
    }
    PrimExpr i = is_one(rows_per_batch_) ? c(0) : MakeBinary(TirKind::kFloorMod, r, rows_per_batch_);
    (*map)[iv] = i;
    idx->push_back(i);
  }

  // Symbolic rows over a B that the static rule would pack (static K and N,
  // full column blocks, conflicting panels, shared by the batch): the rows
  // are only known at run time, so the kernel is built twice and the rows
  // choose: packed from kPackMinRows rows, as is below. (MiniLM's FFN
  // up-projection, 256 x 384 x 1536, symbolic batch and sequence: 2.25 ms
  // unpacked, 1.87 ms packed per call, one thread, loaded machine, minimum
  // of 40 calls.)
  bool PacksFromRowsAtRunTime() const {
    const int64_t* ns = ConstInt(n_);
    if (p_.mm.b_block > 0 || ConstInt(m_) != nullptr || ns == nullptr || *ns % nr_ != 0 || !PanelsConflict()) return false;
    for (size_t d = 0; d + 2 < p_.mm.b_idx.size(); ++d)
      if (!ConstInt(p_.mm.b_idx[d])) return false;
    return p_.knobs.Get("matmul.pack") <= 0;
  }
  // 2: pack B, 1: do not, 0: the rule (ShouldPack).
  void ForcePack(bool pack) { force_pack_ = pack ? 2 : 1; }
  const PrimExpr& rows() const { return m_; }

  Stmt Build() {
    DType i64 = DType::Int64();
    auto c = [&](int64_t v) { return IntImm(i64, v); };
    auto div = [](PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, a, b); };
    auto mod = [](PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, a, b); };
    const int64_t* ms = ConstInt(m_);
    const int64_t* ns = ConstInt(n_);
    // Row blocks: full tiles of mr rows, then the leftover rows (M % mr) as
    // at most one tile each of 4, 2 and 1 rows (its binary digits): each
    // reads the panel of B once where one-row tiles read it once per row
    // (romanizer's GRU gates at batch 4 with a symbolic batch: four GEMVs).
    // A static remainder has only the tiles of its set bits; a symbolic one
    // counts its tiles at run time (below): the tile loop has no empty tiles
    // (three per column block, for a batch of 1, made romanizer's GRU GEMVs
    // 40 % slower inside the model, weights streaming from L3).
    PrimExpr mt = ms ? c(*ms / mr_) : div(m_, c(mr_));
    PrimExpr mrem = ms ? c(*ms % mr_) : mod(m_, c(mr_));
    PrimExpr rb_count = mt;
    // A symbolic remainder: a tile of 4 rows when it is 4 or more, then one
    // tile of exactly the rows left (1 to 3, chosen at run time), so a
    // remainder of 3 reads each panel of B once, as the pinned 3-row tile
    // does, not twice in tiles of 2 and 1 (Silero VAD's LSTM projection at
    // batch 3, [3, 128] x [128, 512]). `sym_tail` is that last tile's rows.
    PrimExpr sym_big, sym_tail;
    if (!ms && mr_ > 1) {
      sym_big = mr_ > 4 ? div(mrem, c(4)) : c(0);
      sym_tail = mr_ > 4 ? mod(mrem, c(4)) : mrem;
      rb_count = mt + sym_big + div(sym_tail + c(3), c(4));
    }
    for (int size = 4; size >= 1 && ms; size /= 2) {
      if (size >= mr_ || (*ms % mr_) % (2 * size) < size) continue;
      leftover_.push_back(size);
    }
    int64_t rb_static = ms ? *ms / mr_ + static_cast<int64_t>(leftover_.size()) : 0;
    if (ms) rb_count = c(rb_static);
    PrimExpr cb_count = ns ? c((*ns + nr_ - 1) / nr_) : div(n_ + c(nr_ - 1), c(nr_));
    bool cols_exact = ns && *ns % nr_ == 0;

    Var t = MakeVar("tile");
    Var rb = MakeVar("rb"), cb = MakeVar("cb");
    cb_ = cb;
    bool pack = ShouldPack(cols_exact);
    if (pack) {
      auto node = std::make_shared<BufferNode>();
      node->name = p_.mm.b->name + "_packed";
      node->data = MakeVar(node->name + "_data", HandleType());
      node->dtype = p_.mm.b->dtype;
      node->shape = {cb_count, k_, c(nr_)};
      packed_ = node;
    }
    Var col0 = MakeVar("col0");

    // Batch indices from the tile number (last batch dimension fastest).
    std::vector<std::pair<Var, PrimExpr>> lets;
    PrimExpr rest = div(PrimExpr(t), rb_count * cb_count);
    int64_t total_static = 1;
    bool all_static = ms && ns;
    for (size_t d = batch_.size(); d-- > 0;) {
      const ForNode* f = batch_[d];
      Var bv = MakeVar(f->loop_var->name, f->loop_var->dtype);
      batch_vals_.push_back(bv);
      lets.push_back({bv, d == 0 ? rest : mod(rest, f->extent)});
      rest = div(rest, f->extent);
      const int64_t* e = ConstInt(f->extent);
      if (e) total_static *= *e; else all_static = false;
    }
    std::reverse(batch_vals_.begin(), batch_vals_.end());
    lets.push_back({rb, mod(PrimExpr(t), rb_count)});
    lets.push_back({cb, mod(div(PrimExpr(t), rb_count), cb_count)});
    // A static N that is not a multiple of NR: the last column block moves
    // back to end at N (overlapping the one before; those columns are
    // computed twice and stored twice with the same values), so every tile
    // runs the full-width kernel instead of a loop of run-time width.
    bool overlap = ns && !cols_exact && *ns > nr_ && p_.mm.b_block == 0;
    lets.push_back({col0, overlap ? MakeBinary(TirKind::kMin, PrimExpr(cb) * c(nr_), c(*ns - nr_))
                                  : PrimExpr(cb) * c(nr_)});

    // Rows: a full tile, or one of the leftover tiles.
    auto rows_part = [&](int64_t width_static, PrimExpr width, const Var& col0, int64_t store_width = 0,
                         bool narrow = false) {
      // Fresh per call: each variable is defined once in the function.
      Var row0 = MakeVar("row0");
      Stmt full = std::make_shared<LetStmtNode>(row0, PrimExpr(rb) * c(mr_),
                                                Kernel(row0, mr_, col0, width_static, width, store_width, narrow));
      if (sym_tail.defined()) {
        // The exact tail tile after the full tiles and the 4-row one.
        Var row0t = MakeVar("row0");
        Stmt tail;
        for (int size = 1; size <= 3 && size < mr_; ++size) {
          Stmt t = Kernel(row0t, size, col0, width_static, width, store_width, narrow);
          tail = tail ? std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, sym_tail, c(size)), t, tail) : t;
        }
        Stmt rest = std::make_shared<LetStmtNode>(row0t, mt * c(mr_) + sym_big * c(4), tail);
        if (mr_ > 4) {
          Var row0b = MakeVar("row0");
          Stmt big = std::make_shared<LetStmtNode>(row0b, mt * c(mr_),
                                                   Kernel(row0b, 4, col0, width_static, width, store_width, narrow));
          rest = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(rb), mt + sym_big), big, rest);
        }
        return Stmt(std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(rb), mt), full, rest));
      }
      if (leftover_.empty()) return full;
      // Leftover tile p (of `size` rows) starts after the full tiles and the
      // larger leftover tiles: at mt * mr + (rem - rem % (2 * size)).
      Stmt rest;
      for (size_t p = leftover_.size(); p-- > 0;) {
        int size = leftover_[p];
        Var row0b = MakeVar("row0");
        PrimExpr start = c(*ms / mr_ * mr_ + *ms % mr_ - (*ms % mr_) % (2 * size));
        Stmt tile = std::make_shared<LetStmtNode>(row0b, start,
                                                  Kernel(row0b, size, col0, width_static, width, store_width, narrow));
        if (!rest) {
          rest = tile;
          continue;
        }
        // Tile p when rb - mt is p.
        PrimExpr upto = c(static_cast<int64_t>(p + 1));
        rest = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(rb), mt + upto), tile, rest);
      }
      return Stmt(std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(rb), mt), full, rest));
    };
    Stmt inner;
    if (cols_exact || overlap) {
      inner = rows_part(nr_, c(nr_), col0);
    } else if (p_.mm.b_block > 0 && ns) {
      // The padded last panel: full-width FMAs (the padding's zeros), the
      // store cut at N.
      inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(cb), c((*ns + nr_ - 1) / nr_ - 1)),
                                               rows_part(nr_, c(nr_), col0),
                                               rows_part(nr_, c(nr_), col0, *ns % nr_));
    } else {
      PrimExpr width = n_ - PrimExpr(col0);
      // Under 16 columns (only a symbolic N gets here with N < 16 at run
      // time): 16 lanes over a zero-padded panel where it fits (NarrowPanel).
      Stmt partial = rows_part(-1, width, col0, 0, !ns && NarrowPanel());
      if (!ns && nr_ > kChunkCols) {
        // A symbolic N's last, partial block: with N >= 16, blocks of 16
        // columns, the last one moved back to end at N (columns computed
        // and stored twice with equal values, as the static overlap does).
        // The masked loops of run-time width kept the accumulators in
        // memory: romanizer's attention scores over 23 source positions
        // took 2.3x the pinned build's time.
        Var q = MakeVar("cq"), col16 = MakeVar("col0");
        Stmt chunk = std::make_shared<LetStmtNode>(
            col16, MakeBinary(TirKind::kMin, PrimExpr(col0) + PrimExpr(q) * c(kChunkCols), n_ - c(kChunkCols)),
            rows_part(kChunkCols, c(kChunkCols), col16));
        Stmt chunks = std::make_shared<ForNode>(q, c(0), div(width + c(kChunkCols - 1), c(kChunkCols)),
                                                ForKind::kSerial, chunk);
        partial = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kGE, n_, c(kChunkCols)), chunks, partial);
      }
      inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLE, PrimExpr(col0) + c(nr_), n_),
                                               rows_part(nr_, c(nr_), col0), partial);
    }
    for (size_t l = lets.size(); l-- > 0;) inner = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, inner);

    PrimExpr count = rb_count * cb_count;
    for (const ForNode* f : batch_) count = count * f->extent;
    bool parallel = p_.threads >= 2;
    if (all_static) {
      int64_t work = total_static * *ms * *ns;
      if (const int64_t* ks = ConstInt(k_)) work *= *ks;
      parallel = parallel && work >= kMinParallelMatmulWork;
      count = c(total_static * rb_static * ((*ns + nr_ - 1) / nr_));
    }
    if (p_.knobs.Get("matmul.parallel") > 0) parallel = p_.threads >= 2 && p_.knobs.Get("matmul.parallel") == 2;
    Stmt tiles = std::make_shared<ForNode>(t, c(0), count, parallel ? ForKind::kParallel : ForKind::kSerial, inner);
    if (!pack) return tiles;
    // Bp[cb, k, jj] = B[k, cb * nr + jj]: each column block's panel becomes
    // contiguous, so the kernel streams it with no cache-set conflicts.
    Var pc = MakeVar("cb"), pk = MakeVar("k"), pj = MakeVar("jj");
    size_t nb = p_.mm.loops.size() - 3;
    VarMap map;
    map[p_.mm.loops[nb + 1]->loop_var.get()] = PrimExpr(pc) * c(nr_) + PrimExpr(pj);
    map[p_.mm.loops[nb + 2]->loop_var.get()] = PrimExpr(pk);
    Stmt copy = Store(packed_, Substitute(Load(p_.mm.b, p_.mm.b_idx), map), {PrimExpr(pc), PrimExpr(pk), PrimExpr(pj)});
    // Rows of B outermost: B is read front to back.
    copy = std::make_shared<ForNode>(pj, c(0), c(nr_), ForKind::kVectorized, copy);
    copy = std::make_shared<ForNode>(pc, c(0), cb_count, ForKind::kSerial, copy);
    copy = std::make_shared<ForNode>(pk, c(0), k_, p_.threads >= 2 ? ForKind::kParallel : ForKind::kSerial, copy);
    return std::make_shared<AllocateNode>(packed_, Seq({copy, tiles}));
  }

 private:
  // Whether the k loop prefetches B ahead: B a parameter of static shape of
  // kMatmulPrefetchMinBytes or more (a weight that does not stay in L2
  // between calls; inside a model it comes from L3 or memory), not packed
  // per call (the copy has brought it in), the rule; matmul.prefetch 1: never,
  // 2: for any B of static shape.
  bool PrefetchB() const {
    if (packed_ && packed_ != p_.mm.b) return false;
    int64_t bytes = 4;
    for (const PrimExpr& e : p_.mm.b->shape) {
      const int64_t* v = ConstInt(e);
      if (v == nullptr) return false;
      bytes *= *v;
    }
    if (p_.knobs.Get("matmul.prefetch") > 0) return p_.knobs.Get("matmul.prefetch") == 2;
    // A short-wide product reads its B in place a few hundred bytes of a
    // row at a time, rows N floats apart: the hints (several a k step, each
    // a page or more ahead) slowed it (kShortWideMaxRows).
    if (short_wide_) return false;
    return bytes >= kMatmulPrefetchMinBytes;
  }

  // Packing B pays when its panels are large and their rows sit a multiple of
  // 512 bytes apart (cache-set conflicts), and there are enough rows to amortize
  // the copy. Only for full column blocks and a B shared by the whole batch.
  bool ShouldPack(bool cols_exact) const {
    if (p_.mm.b_block > 0) return false;  // packed already
    if (force_pack_ != 0) return force_pack_ == 2;
    const int64_t *ms = ConstInt(m_), *ns = ConstInt(n_), *ks = ConstInt(k_);
    if (!cols_exact || ms == nullptr || ns == nullptr || ks == nullptr) return false;
    for (size_t d = 0; d + 2 < p_.mm.b_idx.size(); ++d)
      if (!ConstInt(p_.mm.b_idx[d])) return false;
    if (p_.knobs.Get("matmul.pack") > 0) return p_.knobs.Get("matmul.pack") == 2;
    return *ms >= kPackMinRows && PanelsConflict();
  }

  // Panels of B whose rows sit a multiple of 512 bytes apart (their lines
  // fall in few cache sets) and that are large enough (32 KiB) for it to
  // matter. 512, not 1 KiB: MiniLM's 384-column weights (rows 1536 bytes
  // apart) ran 3-8 % faster packed per call at 256 rows (K 384 and 1536,
  // same-run ratios, one thread, loaded machine).
  bool PanelsConflict() const {
    const int64_t *ns = ConstInt(n_), *ks = ConstInt(k_);
    return ns && ks && (*ns * 4) % 512 == 0 && *ks * nr_ * 4 >= 32 * 1024;
  }

  // Whether a tile of fewer than 16 columns of run-time width (a symbolic N
  // under 16: col0 is 0) is computed at 16 columns from a copy of B's panel
  // padded with zeros, Bp[k, jj] (K x 16, static K, at most
  // kNarrowPanelMaxBytes), its result stored through a 16-column row buffer.
  // The loops of run-time width this replaces (every FMA a masked loop of
  // one vector) kept the accumulators in memory: khmersm's attention scores
  // over 7 tokens (6 heads of 7 x 32 x 7) took 1.7 us against the pinned
  // build's 0.5. Only the copy and the store are of run-time width.
  bool NarrowPanel() const {
    const int64_t* ks = ConstInt(k_);
    if (ks == nullptr || packed_ || p_.mm.b_block > 0 || nr_ < kChunkCols) return false;
    if (p_.mm.c->dtype != DType::Float32()) return false;
    return *ks * kChunkCols * 4 <= kNarrowPanelMaxBytes;
  }

  // The tile at (row0, col0): `mr` rows (static) x `width` columns, where
  // width_static is the width when known (> 0) and nr_ bounds it; only the
  // first store_width columns are stored when that is > 0. `narrow`: width
  // is under 16 at run time and NarrowPanel holds.
  Stmt Kernel(const Var& row0, int mr, const Var& col0, int64_t width_static, const PrimExpr& width,
              int64_t store_width = 0, bool narrow = false) {
    DType f32 = DType::Float32(), i64 = DType::Int64();
    auto c = [&](int64_t v) { return IntImm(i64, v); };
    // A one-row tile has only nr/16 accumulator vectors, too few to hide the
    // FMA latency; it keeps kRowSplit partial sums over interleaved k instead
    // and adds them up before the epilogue. A two-row leftover tile of 32
    // columns (4 vectors) keeps two.
    const auto* init_imm = p_.mm.init.as<FloatImmNode>();
    bool zero_init = init_imm != nullptr && init_imm->value == 0.0;
    int split = 1;
    if (zero_init && mr == 1) {
      split = kRowSplit;
      // Wider one-row tiles have more accumulator vectors of their own: as
      // many partial sums as keep 16 (the 128-column GEMV: 2).
      if (nr_ > kWideCols) split = std::max(1, kRowSplit * kWideCols / nr_);
      if (p_.knobs.Get("matmul.row_split") > 0) split = static_cast<int>(p_.knobs.Get("matmul.row_split"));
    } else if (zero_init && mr == 2 && nr_ <= kCols) {
      split = 2;
    }
    int acc_rows = mr * split;
    auto acc_node = std::make_shared<BufferNode>();
    acc_node->name = "acc";
    acc_node->data = MakeVar("acc_data", HandleType());
    acc_node->dtype = p_.mm.c->dtype;
    acc_node->shape = {c(acc_rows), c(nr_)};
    acc_node->scope = "local";
    Buffer acc = acc_node;
    PrimExpr w = narrow ? c(kChunkCols) : width_static > 0 ? c(width_static) : width;
    // The padded panel (NarrowPanel): B's dtype, K x 16.
    Buffer panel;
    if (narrow) {
      auto node = std::make_shared<BufferNode>();
      node->name = p_.mm.b->name + "_narrow";
      node->data = MakeVar(node->name + "_data", HandleType());
      node->dtype = p_.mm.b->dtype;
      node->shape = {k_, c(kChunkCols)};
      node->scope = "local";
      panel = node;
    }
    auto grid = [&](const std::string& tag, int rows, const std::function<Stmt(const Var&, const Var&)>& body,
                    PrimExpr cols = PrimExpr()) {
      Var ii = MakeVar("ii" + tag), jj = MakeVar("jj" + tag);
      Stmt inner = std::make_shared<ForNode>(jj, c(0), cols.defined() ? cols : w, ForKind::kVectorized, body(ii, jj));
      return std::make_shared<ForNode>(ii, c(0), c(rows), ForKind::kUnrolled, inner);
    };
    const auto& loops = p_.mm.loops;
    size_t nb = loops.size() - 3;
    const VarNode* jv = loops[nb + 1]->loop_var.get();
    const VarNode* kv = loops[nb + 2]->loop_var.get();
    // Rows folded by a symbolic M: each row's batch indices and i are
    // divisions by run-time values, which LLVM kept inside the k loop (its
    // floordiv guards a divisor of 0 or -1 with branches, so nothing there is
    // speculated: 5x slower). They go into small local tables, filled once
    // per tile before the k loop: the first row's by division, each next one
    // by adding 1 to i with a carry into the batch indices (eight divisions
    // per tile cost khmersm's 96 x 192 x 768 layer 13 %). The row loops are
    // unrolled, so the tables become registers.
    std::vector<Buffer> row_tables;
    std::vector<const VarNode*> row_vars;
    Stmt fill_tables;
    if (FoldedBySymbol()) {
      for (const ForNode* f : folded_) row_vars.push_back(f->loop_var.get());
      row_vars.push_back(loops[nb]->loop_var.get());
      std::vector<PrimExpr> exts;
      for (const ForNode* f : folded_) exts.push_back(KernelBuilder::i64(f->extent));
      exts.push_back(rows_per_batch_);
      size_t levels = row_vars.size();
      auto make_local = [&](const std::string& name, int64_t n) {
        auto node = std::make_shared<BufferNode>();
        node->name = name;
        node->data = MakeVar(name + "_data", HandleType());
        node->dtype = i64;
        node->shape = {c(n)};
        node->scope = "local";
        return Buffer(node);
      };
      Buffer cur = make_local("row_index", static_cast<int64_t>(levels));
      VarMap first;
      std::vector<PrimExpr> unused;
      MapRow(PrimExpr(row0), &first, &unused);
      std::vector<Stmt> init, fills;
      Var ii = MakeVar("ii_row");
      for (size_t d = 0; d < levels; ++d) {
        init.push_back(Store(cur, first.at(row_vars[d]), {c(static_cast<int64_t>(d))}));
        row_tables.push_back(make_local(row_vars[d]->name + "_of_row", mr));
        fills.push_back(Store(row_tables.back(), Load(cur, {c(static_cast<int64_t>(d))}), {PrimExpr(ii)}));
      }
      // The next row: the last level + 1; a level that reaches its extent
      // wraps to 0 and carries into the one before (level 0 never wraps).
      Stmt carry;
      for (size_t d = 0; d < levels; ++d) {
        PrimExpr at = c(static_cast<int64_t>(d));
        Stmt inc = Store(cur, Load(cur, {at}) + c(1), {at});
        if (d == 0) {
          carry = inc;
          continue;
        }
        Stmt wrap = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, Load(cur, {at}), exts[d]),
                                                     Seq({Store(cur, c(0), {at}), carry}), nullptr);
        carry = Seq({inc, wrap});
      }
      fills.push_back(carry);
      init.push_back(std::make_shared<ForNode>(ii, c(0), c(mr), ForKind::kUnrolled, Seq(fills)));
      fill_tables = std::make_shared<AllocateNode>(cur, Seq(init));
    }
    // The index of row `row` of the tile in the output (and its variables
    // in *map).
    auto row_index = [&](const PrimExpr& row, VarMap* map, std::vector<PrimExpr>* idx) {
      if (row_tables.empty()) return MapRow(PrimExpr(row0) + row, map, idx);
      for (size_t t = 0; t < row_vars.size(); ++t) {
        PrimExpr v = Load(row_tables[t], {row});
        (*map)[row_vars[t]] = v;
        idx->push_back(v);
      }
    };
    // acc[acc_row, jj] = fma(A[row0 + row, kk], B[kk, col0 + jj], acc[acc_row, jj])
    auto fma_at = [&](PrimExpr acc_row, PrimExpr row, PrimExpr kk, const Var& jj) {
      VarMap map;
      std::vector<PrimExpr> unused;
      row_index(row, &map, &unused);
      map[jv] = PrimExpr(col0) + PrimExpr(jj);
      map[kv] = kk;
      PrimExpr a = Widen(Substitute(Load(p_.mm.a, p_.mm.a_idx), map));
      PrimExpr b = Widen(panel     ? Load(panel, {kk, PrimExpr(jj)})
                         : packed_ ? Load(packed_, {PrimExpr(cb_), kk, PrimExpr(jj)})
                                   : Substitute(Load(p_.mm.b, p_.mm.b_idx), map));
      PrimExpr cur = Load(acc, {acc_row, PrimExpr(jj)});
      if (p_.mm.c->dtype != f32) return Store(acc, cur + a * b, {acc_row, PrimExpr(jj)});  // int32
      return Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{a, b, cur})),
                   {acc_row, PrimExpr(jj)});
    };

    Stmt zero = grid("_init", acc_rows, [&](const Var& ii, const Var& jj) {
      return Store(acc, p_.mm.init, {PrimExpr(ii), PrimExpr(jj)});
    });
    Var k = MakeVar("k");
    Stmt kloops;
    if (split == 1) {
      Stmt update = grid("", mr, [&](const Var& ii, const Var& jj) { return fma_at(PrimExpr(ii), PrimExpr(ii), PrimExpr(k), jj); });
      // Prefetch hints for B's panel kPrefetchAhead bytes of it ahead
      // (PrefetchB): one a 64-byte line of the tile's row of B, at k + d
      // (clamped to the last row).
      if (width_static > 0 && PrefetchB()) {
        const int64_t d = std::max<int64_t>(1, (kMatmulPrefetchAheadBytes + 4 * width_static - 1) / (4 * width_static));
        PrimExpr ahead = MakeBinary(TirKind::kMin, PrimExpr(k) + c(d), k_ - c(1));
        std::vector<Stmt> hints;
        for (int64_t f = 0; f < width_static; f += 16) {
          VarMap map;
          std::vector<PrimExpr> unused;
          row_index(c(0), &map, &unused);
          map[jv] = PrimExpr(col0) + c(f);
          map[kv] = ahead;
          PrimExpr at = packed_ ? Load(packed_, {PrimExpr(cb_), ahead, c(f)}) : Substitute(Load(p_.mm.b, p_.mm.b_idx), map);
          hints.push_back(std::make_shared<EvaluateNode>(
              PrimExpr(std::make_shared<CallNode>(DType::Int32(), "prefetch", std::vector<PrimExpr>{at}))));
        }
        hints.push_back(update);
        update = Seq(hints);
      }
      kloops = std::make_shared<ForNode>(k, c(0), k_, ForKind::kSerial, update);
    } else {
      // Partial sum u of row ii is acc[u * mr + ii], over k = k' * split + u.
      const int64_t* ks = ConstInt(k_);
      PrimExpr kmain = ks ? c(*ks / split) : MakeBinary(TirKind::kFloorDiv, k_, c(split));
      PrimExpr ktail = ks ? c(*ks % split) : MakeBinary(TirKind::kFloorMod, k_, c(split));
      Var u = MakeVar("u");
      Stmt update = grid("", mr, [&](const Var& ii, const Var& jj) {
        PrimExpr acc_row = mr == 1 ? PrimExpr(u) : PrimExpr(u) * c(mr) + PrimExpr(ii);
        return fma_at(acc_row, PrimExpr(ii), PrimExpr(k) * c(split) + PrimExpr(u), jj);
      });
      update = std::make_shared<ForNode>(u, c(0), c(split), ForKind::kUnrolled, update);
      std::vector<Stmt> parts = {std::make_shared<ForNode>(k, c(0), kmain, ForKind::kSerial, update)};
      if (!(ks && *ks % split == 0)) {
        Var kt = MakeVar("k_tail");
        Stmt tail = grid("_tail", mr, [&](const Var& ii, const Var& jj) {
          return fma_at(PrimExpr(ii), PrimExpr(ii), kmain * c(split) + PrimExpr(kt), jj);
        });
        parts.push_back(std::make_shared<ForNode>(kt, c(0), ktail, ForKind::kSerial, tail));
      }
      kloops = Seq(parts);
    }
    // The sum of row ii's partial sums at column jj.
    auto sum_at = [&](const Var& ii, const Var& jj) {
      PrimExpr v = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
      for (int u = 1; u < split; ++u) v = v + Load(acc, {c(u * mr) + PrimExpr(ii), PrimExpr(jj)});
      return v;
    };
    // Narrow: the rows go through a stack buffer at 16 columns first, so
    // that the store's loop of run-time width reads that buffer, not the
    // accumulators (which then stay in registers).
    Buffer rows_buf;
    Stmt to_rows;
    if (narrow) {
      auto node = std::make_shared<BufferNode>();
      node->name = "acc_rows";
      node->data = MakeVar("acc_rows_data", HandleType());
      node->dtype = p_.mm.c->dtype;
      node->shape = {c(mr), c(kChunkCols)};
      node->scope = "local";
      rows_buf = node;
      to_rows = grid("_rows", mr, [&](const Var& ii, const Var& jj) {
        return Store(rows_buf, sum_at(ii, jj), {PrimExpr(ii), PrimExpr(jj)});
      });
    }
    Stmt store = grid("_out", mr, [&](const Var& ii, const Var& jj) {
      std::vector<PrimExpr> idx;
      VarMap unused;
      row_index(PrimExpr(ii), &unused, &idx);
      idx.push_back(PrimExpr(col0) + PrimExpr(jj));
      PrimExpr v = narrow ? Load(rows_buf, {PrimExpr(ii), PrimExpr(jj)}) : sum_at(ii, jj);
      // Each chain buffer's value at this point, as an expression of the
      // accumulator (a stage may read several; LLVM shares the common parts).
      std::vector<std::pair<const VarNode*, PrimExpr>> values = {{p_.mm.c->data.get(), v}};
      Buffer dst = p_.mm.c;
      for (const EpilogueStage& e : p_.epilogue) {
        PrimExpr x = e.value;
        for (const auto& kv : values)
          if (std::find(e.reads.begin(), e.reads.end(), kv.first) != e.reads.end())
            x = ReplaceLoads(kv.first, kv.second).MutateExpr(x);
        VarMap map;
        for (size_t d = 0; d < idx.size(); ++d) map[e.loops[d]->loop_var.get()] = idx[d];
        v = Substitute(x, map);
        values.emplace_back(e.dst->data.get(), v);
        dst = e.dst;
      }
      return Store(dst, v, idx);
    }, narrow ? width : store_width > 0 ? c(store_width) : PrimExpr());
    Stmt kernel;
    if (narrow) {
      // Bp[kk, jj] = 0 for the 16 columns, then B[kk, col0 + jj] for the
      // tile's width.
      Var kz = MakeVar("k_pad"), jz = MakeVar("jj_pad"), kc = MakeVar("k_copy"), jc = MakeVar("jj_copy");
      Stmt pad = std::make_shared<ForNode>(
          kz, c(0), k_, ForKind::kSerial,
          std::make_shared<ForNode>(jz, c(0), c(kChunkCols), ForKind::kVectorized,
                                    Store(panel, FloatImm(panel->dtype, 0.0), {PrimExpr(kz), PrimExpr(jz)})));
      VarMap map;
      std::vector<PrimExpr> unused;
      row_index(c(0), &map, &unused);
      map[jv] = PrimExpr(col0) + PrimExpr(jc);
      map[kv] = PrimExpr(kc);
      Stmt copy = std::make_shared<ForNode>(
          kc, c(0), k_, ForKind::kSerial,
          std::make_shared<ForNode>(jc, c(0), width, ForKind::kVectorized,
                                    Store(panel, Substitute(Load(p_.mm.b, p_.mm.b_idx), map), {PrimExpr(kc), PrimExpr(jc)})));
      Stmt compute = std::make_shared<AllocateNode>(acc, Seq({zero, kloops, to_rows}));
      kernel = std::make_shared<AllocateNode>(
          panel, std::make_shared<AllocateNode>(rows_buf, Seq({pad, copy, compute, store})));
    } else {
      kernel = std::make_shared<AllocateNode>(acc, Seq({zero, kloops, store}));
    }
    if (fill_tables) {
      kernel = Seq({fill_tables, kernel});
      for (const Buffer& t : row_tables) kernel = std::make_shared<AllocateNode>(t, kernel);
    }
    return kernel;
  }

  const Parts& p_;
  std::vector<const ForNode*> batch_;
  std::vector<const ForNode*> folded_;  // batch loops folded into the rows
  PrimExpr rows_per_batch_;             // M of the original nest, when folded
  std::vector<Var> batch_vals_;
  PrimExpr m_, n_, k_;
  int mr_ = kMaxRows, nr_ = kCols;
  bool short_wide_ = false;  // kShortWideMaxRows
  Var cb_;
  Buffer packed_;
  int force_pack_ = 0;  // ForcePack
  std::vector<int> leftover_;  // rows of the leftover tiles, largest first
};

// Finds matmul nests in statement sequences and rewrites them with their
// fusable epilogues.
class MatmulRewriter : public StmtExprMutator {
 public:
  MatmulRewriter(const PrimFunc& func, int threads, const ScheduleKnobs& knobs) : threads_(threads), knobs_(knobs) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
    all_refs_ = RefsOf(func->body);
  }
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* seq = As<SeqStmtNode>(s)) return RewriteSeq(seq->seq, s);
    if (As<ForNode>(s)) return RewriteSeq({s}, s);
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  Stmt RewriteSeq(const std::vector<Stmt>& in, const Stmt& orig) {
    std::vector<Stmt> out;
    std::unordered_map<size_t, size_t> out_at;  // in's index -> out's, where kept
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) {
      Parts parts;
      if (!MatchMatmul(in[i], &parts.mm)) {
        Stmt m = As<ForNode>(in[i]) ? in[i] : StmtExprMutator::MutateStmt(in[i]);
        any = any || m != in[i];
        out_at[i] = out.size();
        out.push_back(m);
        continue;
      }
      size_t copy = 0;
      if (Stmt dot = AsDotProducts(in, i, parts.mm, &copy)) {
        // The transposed copy B was made from is no longer read.
        auto at = out_at.find(copy);
        if (at != out_at.end()) out[at->second] = nullptr;
        out.push_back(dot);
        any = true;
        continue;
      }
      parts.threads = threads_;
      parts.knobs = knobs_;
      std::vector<const ForNode*> out_loops(parts.mm.loops.begin(), parts.mm.loops.end() - 1);
      // Candidate stages: the statements right after the nest that each read
      // the chain (C or an earlier candidate's output) at the loop point.
      // Buffers the fused kernel reads while tiles are still being computed:
      // no stage may store to one of them.
      std::unordered_set<const VarNode*> read_by_kernel = {parts.mm.a->data.get(), parts.mm.b->data.get()};
      std::unordered_set<const VarNode*> chain = {parts.mm.c->data.get()};
      std::vector<EpilogueStage> candidates;
      for (size_t next = i + 1; next < in.size(); ++next) {
        EpilogueStage e;
        if (!MatchEpilogueStage(in[next], chain, out_loops, &e)) break;
        if (read_by_kernel.count(e.dst->data.get())) break;
        BufferRefs stage_loads;
        stage_loads.VisitExpr(e.value);
        for (const auto& kv : stage_loads.loads) read_by_kernel.insert(kv.first);
        if (read_by_kernel.count(e.dst->data.get())) break;
        chain.insert(e.dst->data.get());
        candidates.push_back(e);
      }
      // The longest prefix whose intermediates (C and every stage output but
      // the last) are function-local and referenced nowhere outside the
      // kernel and the prefix's stages: those are never stored.
      std::vector<BufferRefs> stage_refs;
      for (size_t c = 0; c < candidates.size(); ++c) stage_refs.push_back(RefsOf(in[i + 1 + c]));
      BufferRefs nest_refs = RefsOf(in[i]);
      size_t fused = 0;
      for (size_t len = candidates.size(); len > 0 && fused == 0; --len) {
        std::vector<const VarNode*> inner = {parts.mm.c->data.get()};
        for (size_t c = 0; c + 1 < len; ++c) inner.push_back(candidates[c].dst->data.get());
        bool ok = true;
        for (const VarNode* b : inner) {
          int here = nest_refs.Refs(b);
          for (size_t c = 0; c < len; ++c) here += stage_refs[c].Refs(b);
          ok = ok && !params_.count(b) && all_refs_.Refs(b) == here;
        }
        if (ok) fused = len;
      }
      parts.epilogue.assign(candidates.begin(), candidates.begin() + fused);
      size_t next = i + 1 + fused;
      KernelBuilder kb(parts);
      if (kb.PacksFromRowsAtRunTime()) {
        // Two kernels, each with its own variables; the rows pick one.
        KernelBuilder packed(parts), plain(parts);
        packed.ForcePack(true);
        plain.ForcePack(false);
        PrimExpr big = MakeBinary(TirKind::kGE, kb.rows(), IntImm(DType::Int64(), kPackMinRows));
        out.push_back(std::make_shared<IfThenElseNode>(big, packed.Build(), plain.Build()));
      } else {
        out.push_back(kb.Build());
      }
      i = next - 1;
      any = true;
    }
    if (!any) return orig;
    changed = true;
    out.erase(std::remove(out.begin(), out.end(), nullptr), out.end());
    return Seq(out);
  }

  // The dot-product kernel (matmul_dot.h) of the matmul in[i], or nullptr;
  // *copy gets the index of the transposed copy it reads through.
  Stmt AsDotProducts(const std::vector<Stmt>& in, size_t i, const MatmulNest& mm, size_t* copy) {
    size_t nb = mm.loops.size() - 3;
    const int64_t* m = ConstInt(mm.loops[nb]->extent);
    const VarNode* j = mm.loops[nb + 1]->loop_var.get();
    const VarNode* k = mm.loops[nb + 2]->loop_var.get();
    if (m == nullptr || *m != 1 || mm.b_block != 0 || mm.c->dtype != DType::Float32() ||
        mm.a->dtype != DType::Float32() || mm.b->dtype != DType::Float32() || params_.count(mm.b->data.get()) ||
        mm.a_idx.empty() || !IsVar(mm.a_idx.back(), k)) {
      return nullptr;
    }
    const VarNode* b = mm.b->data.get();
    int here = RefsOf(in[i]).Refs(b);
    for (size_t p = 0; p < i; ++p) {
      BufferRefs refs = RefsOf(in[p]);
      if (refs.stores.count(b) == 0) continue;
      Buffer s;
      std::vector<PrimExpr> s_idx;
      if (all_refs_.Refs(b) != here + refs.Refs(b) || !MatchTransposedCopy(in[p], mm.b, mm.b_idx, j, k, &s, &s_idx))
        return nullptr;
      // S still holds what the copy read when the matmul runs.
      for (size_t q = p + 1; q <= i; ++q)
        if (RefsOf(in[q]).stores.count(s->data.get())) return nullptr;
      Stmt dot = DotProductMatmul(mm.loops, mm.c, mm.c_idx, mm.init, mm.a, mm.a_idx, s, s_idx, threads_);
      if (dot) *copy = p;
      return dot;
    }
    return nullptr;
  }

  int threads_;
  ScheduleKnobs knobs_;
  std::unordered_set<const VarNode*> params_;
  BufferRefs all_refs_;
};

}  // namespace

PrimFunc ScheduleMatmuls(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  MatmulRewriter rewriter(func, num_threads_hint, knobs);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
