#include "compiler/tir/conv_symbolic_schedule.h"

#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/conv_symbolic_concat.h"
#include "compiler/tir/conv_symbolic_plane_tail.h"
#include "compiler/tir/depthwise_banded.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// Column tile widths tried widest first (the row's width decides at run
// time); 32 columns x 8 channels is 16 AVX-512 accumulators.
constexpr int64_t kTileWidths[] = {32, 16, 8};
// Accumulator vectors a tile of channels may hold. A static row narrower
// than 32 columns takes tiles of several output rows (channels x rows x
// one vector of 16 or 8 columns), each tap's weight broadcast then serving
// every row: PLCMOS's 64 -> 128-channel 3 x 3 on rows of 16 (symbolic
// height) took 8 x 16 tiles, 8 accumulators and a broadcast an FMA.
constexpr int64_t kMaxTileAccumulators = 24;
// Pointwise planes are cut into rows of this many columns (TryFlat): rows
// long enough for 48-column tiles, and (channel tile, row) tasks enough for
// the threads. The last row takes the columns left over, kFlatTileWidth to
// kFlatRow + kFlatTileWidth - 1 of them (a plane of 256: one row of 8 x 32,
// not 240 and a row of 16).
constexpr int64_t kFlatRow = 240;
// Flat rows take tiles of 8 channels x 48 columns where that recomputes no
// more columns than 32-column tiles (FlatWideFits): 24 accumulators, three
// vector loads and eight broadcasts per 24 FMAs against two and eight per
// 16. Pointwise convolutions with a hard-swish alone, symbolic H and W, one
// thread, loaded machine, kiln-bench p50 over that of 8 x 32 tiles on rows
// of 256 in the same run: PP-OCRv4 rec's 480 -> 480 on 6 x 80 and 3 x 80
// 0.90 and 0.86, 240 -> 240 on 12 x 80 0.87; 96 -> 96 on 80 x 80 (det)
// 0.83; 240 -> 240 from 7 x 16 to 20 x 80 0.75 to 1.00.
constexpr int64_t kFlatTileWidth = 48;
// Weights up to this size are read again for every output row (TileLoop's
// row-outer order): a quarter of a 4 MiB L2, half of a 2 MiB one.
constexpr int64_t kRowOuterWeightBytes = 1 << 20;
// Output channels per tile, the largest of these that divides O.
constexpr int64_t kTileRows[] = {8, 6, 4, 3, 2, 1};
// Depthwise (one input channel per output channel) tiles of this many output
// rows of one channel, the taps unrolled: neighbouring rows read the same
// input rows at other taps (row ii, tap ky and row ii + 1, tap ky - 1), so
// LLVM loads each input vector once for several FMAs, where a tile of
// channels made one load per FMA (a different input channel per row). Rows
// x columns per width (the widest that fits the row): 6 x 32 and 8 x 16
// are 12 and 8 vector accumulators of 16 lanes, 8 x 8 eight of 8 lanes.
struct SpatialTile {
  int64_t rows, cols;
};
constexpr SpatialTile kSpatialTiles[] = {{6, 32}, {8, 16}, {8, 8}};
// Depthwise at stride 1 on planes whose width the spatial tiles cover badly
// (PlaneTilesPay): each channel's padded plane is read as one flat row of
// Hp * Wp floats, output point (y, x) at y * Wp + x, tap (ky, kx) at
// ky * dh * Wp + kx * dw further on; tiles of kPlaneChannels channels x NR
// flat columns (4 x 32: 8 independent accumulator vectors) run over the
// flat span, computing the Wp - Wo columns between rows for nothing, into a
// per-channel buffer from which the rows are copied out through the
// epilogue. A 10 x 10 plane (5 x 5 kernel, Wp 14) computes 160 flat columns
// in tiles of 32 where 8 x 8 spatial tiles computed 256, and 7 x 7 planes,
// narrower than any spatial tile, no longer fall to one-column tiles
// (512 channels, 5 x 5, at 7 x 7, 1 thread, CPU time per call in one run:
// 188 -> 65 us, pinned 61 us).
constexpr int64_t kPlaneChannels[] = {4, 3, 2, 1};
// Convolutions that are not depthwise (strided, or stride 1 with a kernel
// of more than one tap) whose output rows are narrower than this take the
// flat (phase-)plane tiles (StridedPlanes).
constexpr int64_t kStridedPlaneWidth = 64;
// Columns per chunk of the stride-phase copy (PackPhases): one vector.
constexpr int64_t kPhaseChunk = 16;

PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMax, std::move(a), std::move(b)); }
PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLT, std::move(a), std::move(b)); }

Stmt MakeFor(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

// A load at the loop point of `loops`: each index the loop's variable, or 0
// where the loop's extent is 1 (legalize writes X[0, c, y, x] for a batch
// of one; the epilogue of such a convolution is still at the loop point).
bool AtLoopPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops) {
  if (idx.size() > loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (IsVar(idx[d], loops[d]->loop_var.get())) continue;
    const int64_t* ext = ConstInt(loops[d]->extent);
    if (ext == nullptr || *ext != 1 || !IsZero(idx[d])) return false;
  }
  return true;
}

bool ExactlyVars(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops, size_t first) {
  if (idx.size() + first > loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!IsVar(idx[d], loops[first + d]->loop_var.get())) return false;
  return true;
}

bool AnySymbolic(const std::vector<PrimExpr>& shape) {
  for (const PrimExpr& d : shape)
    if (ConstInt(d) == nullptr) return true;
  return false;
}

// A convolution nest with a symbolic extent somewhere.
struct SymConv {
  std::vector<const ForNode*> loops;  // n, o, y, x, c, ky, kx
  Buffer out, data, weight;
  const BufferLoadNode* x_load = nullptr;
  const BufferLoadNode* w_load = nullptr;
  int64_t o = 0, ki = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  bool guarded = false;            // reads through an `inside` test
  std::vector<Stmt> epilogue;      // statements after the reduction, inside (n, o, y, x)
};

// The reduction (conv_match.h's matcher, symbolic extents allowed), with the
// symbolic schedule's own limits: an OIHW weight, X's image and channel
// indices of n, o and c only, and no unguarded padding.
bool MatchReduction(const Stmt& body, SymConv* m) {
  const auto& L = m->loops;
  conv::ConvReduction r;
  if (!conv::MatchConvReduction(body, L, &r) || r.w_load->indices.size() != 4) return false;
  m->out = r.out, m->data = r.data, m->weight = r.weight;
  m->x_load = r.x_load, m->w_load = r.w_load;
  m->sh = r.sh, m->sw = r.sw, m->dh = r.dh, m->dw = r.dw, m->pt = r.pt, m->pl = r.pl;
  // The image and channel indices may use n, o and c only.
  std::unordered_set<const VarNode*> spatial = {L[2]->loop_var.get(), L[3]->loop_var.get(), L[5]->loop_var.get(),
                                                L[6]->loop_var.get()};
  if (Uses(r.x_load->indices[0], spatial) || Uses(r.x_load->indices[1], spatial)) return false;
  m->guarded = r.inside.defined();
  return m->guarded || (m->pt == 0 && m->pl == 0);
}

bool EpilogueOk(const SymConv& cv);

bool MatchSymConv(const Stmt& s, SymConv* m) {
  Stmt body;
  std::vector<const ForNode*> outer = PeelNest(s, &body);
  if (outer.size() == 7) {
    m->loops = outer;
  } else if (outer.size() == 4) {
    // The reduction nest first, then the epilogue stores, in the (n, o, y, x) loops.
    const auto* seq = As<SeqStmtNode>(body);
    if (seq == nullptr || seq->seq.size() < 2) return false;
    Stmt inner_body;
    std::vector<const ForNode*> inner = PeelNest(seq->seq[0], &inner_body);
    if (inner.size() != 3) return false;
    m->loops = outer;
    m->loops.insert(m->loops.end(), inner.begin(), inner.end());
    m->epilogue.assign(seq->seq.begin() + 1, seq->seq.end());
    body = inner_body;
  } else {
    return false;
  }
  const auto& L = m->loops;
  for (const ForNode* l : L)
    if (!IsZero(l->min) || l->for_kind == ForKind::kVectorized) return false;
  // Channels and taps static; something else symbolic (static nests belong to ScheduleConvs).
  const int64_t* o = ConstInt(L[1]->extent);
  const int64_t* ki = ConstInt(L[4]->extent);
  const int64_t* kh = ConstInt(L[5]->extent);
  const int64_t* kw = ConstInt(L[6]->extent);
  if (o == nullptr || ki == nullptr || kh == nullptr || kw == nullptr || *o <= 0 || *ki <= 0 || *kh <= 0 ||
      *kw <= 0) {
    return false;
  }
  m->o = *o, m->ki = *ki, m->kh = *kh, m->kw = *kw;
  if (ConstInt(L[0]->extent) && ConstInt(L[2]->extent) && ConstInt(L[3]->extent)) return false;
  if (!MatchReduction(body, m)) return false;
  if (!AnySymbolic(m->data->shape) && !AnySymbolic(m->out->shape)) return false;
  for (size_t d = 0; d < 4; ++d)
    if (!ProvenSameExtent(m->out->shape[d], L[d]->extent))
      return false;
  return EpilogueOk(*m);
}

bool EpilogueOk(const SymConv& cv) {
  const SymConv* m = &cv;
  const auto& L = cv.loops;
  // Epilogue: only stores, each at the loop point; C read only at the loop
  // point and never stored; no buffer read before an epilogue statement
  // stores it (overlapping tiles compute some points twice, which must give
  // the same values), and X and W never stored.
  std::unordered_set<const VarNode*> stored;
  for (const Stmt& st : m->epilogue) {
    const auto* store = As<BufferStoreNode>(st);
    if (store == nullptr || !ExactlyVars(store->indices, L, 0) || store->buffer->shape.size() != 4) return false;
    const VarNode* dst = store->buffer->data.get();
    if (dst == m->out->data.get() || dst == m->data->data.get() || dst == m->weight->data.get()) return false;
    BufferRefs r = RefsOf(st);
    for (const BufferLoadNode* l : r.load_nodes) {
      const VarNode* b = l->buffer->data.get();
      if (b == m->out->data.get() && !AtLoopPoint(l->indices, L)) return false;
      if (b == dst && !stored.count(b)) return false;
    }
    stored.insert(dst);
  }
  for (const Stmt& st : m->epilogue) {
    for (const BufferLoadNode* l : RefsOf(st).load_nodes)
      if (stored.count(l->buffer->data.get()) && !AtLoopPoint(l->indices, L)) return false;
  }
  return true;
}

class SymConvKernel {
 public:
  // `params`: the function's buffer parameters (flat views only of those).
  // `sources`: X is the concatenation of these, computed just before (read
  // in place when the kernel takes flat rows: ReadsSources).
  SymConvKernel(const SymConv& cv, int threads, bool store_out, const std::unordered_set<const VarNode*>& params,
                std::vector<SymConcatSource> sources = {})
      : cv_(cv), threads_(threads), store_out_(store_out), params_(params), sources_(std::move(sources)) {
    for (int64_t r : kTileRows) {
      if (cv.o % r == 0) {
        mr_ = r;
        break;
      }
    }
    const auto& L = cv.loops;
    x_expr_ = Load(cv.data, cv.x_load->indices);
    epilogue_ = cv.epilogue;
    out_ = cv.out;
    for (size_t d = 0; d < 4; ++d) out_idx_.push_back(PrimExpr(L[d]->loop_var));
    TryFlat();
    if (!flat_) sources_.clear();
    if (cv.ki == 1 && cv.kh * cv.kw > 1 && !flat_) {
      spatial_ok_ = true;
      // Output channel o reads input channel o (one channel per group).
      const ForNode* o = L[1];
      VarMap at = {{L[4]->loop_var.get(), I64(0)}};
      PrimExpr ch = arith::Simplify(Substitute(cv.x_load->indices[1], at));
      own_channel_ = IsVar(ch, o->loop_var.get()) && arith::CanProveEqual(cv.data->shape[1], I64(cv.o));
    }
  }

  // Whether the tiles read the concatenated sources, not X (the caller then
  // drops the concatenation's copy).
  bool ReadsSources() const { return !source_views_.empty(); }

  Stmt Build() {
    const auto& L = cv_.loops;
    n_ = MakeVar("n");
    PrimExpr ho = L[2]->extent, wo = L[3]->extent;
    if (flat_) {
      // Rows of kFlatRow columns of the flat plane, the last one with the
      // rest (at least kFlatTileWidth columns when the plane has them).
      hw_ = arith::Simplify(L[2]->extent * L[3]->extent);
      ho = Max(I64(1), Div(hw_ + I64(kFlatRow - kFlatTileWidth), I64(kFlatRow)));
      flat_rows_ = ho;
    }
    // The padded copy: rows and columns exactly as far as the taps read.
    Stmt per_image;
    Stmt strided_planes;
    if (cv_.guarded) {
      PrimExpr hp = (ho - I64(1)) * I64(cv_.sh) + I64((cv_.kh - 1) * cv_.dh + 1);
      PrimExpr wp = (wo - I64(1)) * I64(cv_.sw) + I64((cv_.kw - 1) * cv_.dw + 1);
      hp = arith::Simplify(hp);
      wp = arith::Simplify(wp);
      PrimExpr ch = cv_.data->shape[1];
      Stmt whole;
      if (cv_.sw > 1) {
        // A column stride: every channel's padded copy split into column
        // phases (PackPhases), so that a tile's taps read contiguous
        // vectors instead of every sw-th float (a permute per FMA: the
        // stride-2 3x3 convolutions of YOLOv8n took 2-4x their pinned
        // time, which reads packed rows).
        wph_ = arith::Simplify(Div(wp + I64(cv_.sw - 1), I64(cv_.sw)));
        q_ = nest::Float32Buffer(cv_.data->name + "_phases", {ch, hp, arith::Simplify(wph_ * I64(cv_.sw))}, "global");
        qs_ = q_;
        phased_ = phases_by_channel_ = true;
        // Narrow rows take StridedPlanes instead (not depthwise).
        wide_rows_only_ = !spatial_ok_;
        Var pc = MakeVar("pc");
        Stmt pack = MakeFor(pc, ch, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, PackPhases(PrimExpr(pc), hp));
        whole = Seq({pack, ChannelTiles(ho, wo)});
        phased_ = phases_by_channel_ = wide_rows_only_ = false;
        if (!spatial_ok_) strided_planes = StridedPlanes(ho, wo, hp);
      } else {
        q_ = nest::Float32Buffer(cv_.data->name + "_padded", {ch, hp, wp}, "global");
        // Stride 1, not depthwise, a kernel wider than one tap: narrow rows
        // take the flat plane tiles too (StridedPlanes with one phase: the
        // padded copy read flat, Wp - Wo columns of a row computed for
        // nothing). Rows of 10, 20 and 40 columns took overlapping tiles
        // of 8 + 8, 16 + 16 and 3 x 16 columns (YOLOv8n's 3 x 3
        // convolutions at 320 x 320). A static width keeps its row tiles
        // (PLCMOS's 64 -> 128 on rows of 16, symbolic height: 1.91-2.10 ms
        // with them, 1.86-2.10 with the flat planes; no reason to change).
        const bool flat_planes = !spatial_ok_ && cv_.kh * cv_.kw > 1 && ConstInt(wo) == nullptr;
        wide_rows_only_ = flat_planes;
        // The tiles read q_ through the indices set in TapFma.
        whole = Seq({Pack(ch, hp, wp), ChannelTiles(ho, wo)});
        wide_rows_only_ = false;
        if (flat_planes) {
          wph_ = wp;
          strided_planes = StridedPlanes(ho, wo, hp);
        }
      }
      if (spatial_ok_ && own_channel_) {
        // Each channel's copy made just before its tiles read it (still in
        // cache), not the whole padded input first: on depthwise
        // convolutions, 9 or 25 FMAs an output, the copy through memory
        // cost about as much as the tiles.
        for (auto it = std::rbegin(kSpatialTiles); it != std::rend(kSpatialTiles); ++it) {
          BeginSpatial(*it);
          Stmt per_channel = PerChannel(ho, wo, hp, wp);
          whole = std::make_shared<IfThenElseNode>(FitsSpatial(ho, wo), per_channel, whole);
          EndSpatial();
        }
        if (cv_.sh == 1 && cv_.sw == 1) {
          whole = std::make_shared<IfThenElseNode>(PlaneTilesPay(wo), PlaneTiles(ho, wo, hp, wp), whole);
        }
      }
      per_image = std::make_shared<AllocateNode>(q_, whole);
      if (strided_planes) {
        per_image = std::make_shared<IfThenElseNode>(Lt(wo, I64(kStridedPlaneWidth)), strided_planes, per_image);
      }
    } else {
      per_image = Tiling(ho, wo);
    }
    return MakeFor(n_, L[0]->extent, ForKind::kSerial, per_image);
  }

 private:
  // Pointwise (1x1, stride 1, no padding) reads and writes every plane as
  // flat rows of kFlatRow columns, not image row by image row (20 x 20
  // planes: rows of 20 took tiles of 8 or overlapping tiles of 16). Every access that uses y or x must be B[.., y, x] of a
  // compact buffer whose last two extents are the output's: it becomes
  // B_flat[.., j] (a view of the same memory). Otherwise rows.
  void TryFlat() {
    const auto& L = cv_.loops;
    if (cv_.kh != 1 || cv_.kw != 1 || cv_.sh != 1 || cv_.sw != 1 || cv_.guarded) return;
    j_ = MakeVar("j");
    // The one tap is ky = kx = 0: X[n, c, y + ky, x + kx] is X[n, c, y, x].
    VarMap tap0 = {{L[5]->loop_var.get(), I64(0)}, {L[6]->loop_var.get(), I64(0)}};
    std::vector<PrimExpr> xi;
    for (const PrimExpr& e : cv_.x_load->indices) xi.push_back(arith::Simplify(Substitute(e, tap0)));
    PrimExpr x_at = Load(cv_.data, xi);
    struct Flatten : StmtExprMutator {
      const VarNode *y, *x;
      const std::unordered_set<const VarNode*>* params;
      const VarNode* acc_only = nullptr;  // C, when only the epilogue reads it
      const VarNode* data = nullptr;      // X, when it is the function's own
      // The concatenated sources X is made of: only read, like X.
      std::unordered_set<const VarNode*> sources;
      PrimExpr ho, wo;
      Var j;
      bool ok = true;
      std::unordered_map<const VarNode*, Buffer> views;
      bool AtYX(const Buffer& b, const std::vector<PrimExpr>& idx) const {
        return idx.size() == 4 && IsVar(idx[2], y) && IsVar(idx[3], x) && b->strides.empty() &&
               b->shape.size() == 4 && arith::CanProveEqual(b->shape[2], ho) && arith::CanProveEqual(b->shape[3], wo);
      }
      Buffer View(const Buffer& b) {
        // A buffer of the function's own would be seen by the passes after
        // (CompactLoopBuffers) through two shapes: rows instead.
        // C's loads in the epilogue become the accumulators (ReplaceLoads
        // matches the data variable): a view of it is never read.
        // X is the exception: the kernel only reads it (EpilogueOk takes no
        // store to X), the view reads the very elements the rows would, and
        // the passes after leave a buffer
        // seen through a view of another rank alone (CompactLoopBuffers'
        // and AliasOutputBuffers' other_shape, InlineElementwise's rank
        // test), so it stays one allocation, read in place: a concatenation
        // before a 1x1 convolution is not read by image rows of 8-column
        // tiles (YOLOv8's C2f blocks at 10 x 10).
        if (!params->count(b->data.get()) && b->data.get() != acc_only && b->data.get() != data &&
            !sources.count(b->data.get()))
          ok = false;
        auto it = views.find(b->data.get());
        if (it != views.end()) return it->second;
        auto v = std::make_shared<BufferNode>(*b);
        v->shape = {b->shape[0], b->shape[1], arith::Simplify(b->shape[2] * b->shape[3])};
        return views[b->data.get()] = v;
      }
      std::vector<PrimExpr> Idx(const std::vector<PrimExpr>& idx) {
        return {MutateExpr(idx[0]), MutateExpr(idx[1]), PrimExpr(j)};
      }
      PrimExpr MutateExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && AtYX(l->buffer, l->indices))
          return Load(View(l->buffer), Idx(l->indices));
        if (const auto* v = e.as<VarNode>(); v == y || v == x) ok = false;
        return StmtExprMutator::MutateExpr(e);
      }
      Stmt MutateStmt(const Stmt& s) override {
        if (const auto* st = As<BufferStoreNode>(s); st != nullptr && AtYX(st->buffer, st->indices))
          return Store(View(st->buffer), MutateExpr(st->value), Idx(st->indices));
        return StmtExprMutator::MutateStmt(s);
      }
    } f;
    f.params = &params_;
    f.data = cv_.data->data.get();
    const bool stores_out = store_out_ || epilogue_.empty();
    if (!stores_out) f.acc_only = cv_.out->data.get();
    f.y = L[2]->loop_var.get();
    f.x = L[3]->loop_var.get();
    f.ho = L[2]->extent;
    f.wo = L[3]->extent;
    f.j = j_;
    PrimExpr x = f.MutateExpr(x_at);
    std::vector<Stmt> epi;
    for (const Stmt& st : epilogue_) epi.push_back(f.MutateStmt(st));
    if (!f.AtYX(out_, out_idx_) || x.get() == x_at.get()) return;
    // C needs a flat view only where it is stored: with an epilogue that
    // alone reads it, it is usually the function's own intermediate, which
    // (a buffer that is no parameter) would otherwise keep the rows.
    Buffer out_view = stores_out ? f.View(out_) : out_;
    // The sources of a concatenation X is, each seen flat like X (their
    // batch, height and width are X's: MatchSymbolicChannelConcat), when X's
    // channel index is the reduction's own (a plain pointwise convolution).
    std::vector<Buffer> source_views;
    if (!sources_.empty() && x.as<BufferLoadNode>() != nullptr &&
        IsVar(cv_.x_load->indices[1], L[4]->loop_var.get())) {
      for (const SymConcatSource& src : sources_) f.sources.insert(src.buffer->data.get());
      for (const SymConcatSource& src : sources_) source_views.push_back(f.View(src.buffer));
    }
    if (!f.ok) return;
    source_views_ = std::move(source_views);
    flat_ = true;
    x_expr_ = x;
    epilogue_ = epi;
    out_ = out_view;
    out_idx_ = {out_idx_[0], out_idx_[1], PrimExpr(j_)};  // only stored when stores_out
  }

  // Q[c, a, b] = X[n, c, a - pt, b - pl] inside X, else 0: each row zeroed,
  // then its interior copied (both plain vector loops).
  Stmt Pack(const PrimExpr& ch, const PrimExpr& hp, const PrimExpr& wp) {
    Var c = MakeVar("pc");
    return MakeFor(c, ch, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, PackChannel(PrimExpr(c), hp, wp));
  }

  // Channel c of the padded copy.
  Stmt PackChannel(const PrimExpr& c, const PrimExpr& hp, const PrimExpr& wp) {
    Var a = MakeVar("pa"), b = MakeVar("pb"), b2 = MakeVar("pb2");
    PrimExpr h = cv_.data->shape[2], w = cv_.data->shape[3];
    Stmt zero = MakeFor(b, wp, ForKind::kVectorized,
                        Store(q_, FloatImm(DType::Float32(), 0.0), {c, PrimExpr(a), PrimExpr(b)}));
    PrimExpr iy = PrimExpr(a) - I64(cv_.pt);
    // Columns of the row inside X: [pl, pl + min(W, Wp - pl)).
    PrimExpr count = Min(w, wp - I64(cv_.pl));
    Stmt copy = MakeFor(b2, count, ForKind::kVectorized,
                        Store(q_, Load(cv_.data, {NImage(), c, iy, PrimExpr(b2)}),
                              {c, PrimExpr(a), PrimExpr(b2) + I64(cv_.pl)}));
    Stmt inside = std::make_shared<IfThenElseNode>(
        MakeBinary(TirKind::kAnd, Ge(iy, I64(0)), Lt(iy, h)), copy, Stmt());
    return MakeFor(a, hp, ForKind::kSerial, Seq({zero, inside}));
  }

  // X's image index at image n_ (the original may be 0 for a batch of one).
  PrimExpr NImage() const {
    VarMap map;
    map[cv_.loops[0]->loop_var.get()] = PrimExpr(n_);
    return Substitute(cv_.x_load->indices[0], map);
  }

  // The tile loop: depthwise planes of at least kSpatialRows output rows in
  // tiles of rows (SpatialTileLoop), others (and smaller planes) in tiles
  // of channels.
  Stmt Tiling(const PrimExpr& ho, const PrimExpr& wo) {
    Stmt chain = ChannelTiles(ho, wo);
    if (!spatial_ok_) return chain;
    for (auto it = std::rbegin(kSpatialTiles); it != std::rend(kSpatialTiles); ++it) {
      BeginSpatial(*it);
      Stmt rows = SpatialTileLoop(ho, wo);
      chain = std::make_shared<IfThenElseNode>(FitsSpatial(ho, wo), rows, chain);
      EndSpatial();
    }
    return chain;
  }

  // Spatial tiles of this size while building them (At, Tile read it).
  void BeginSpatial(const SpatialTile& t) {
    spatial_ = true;
    srows_ = t.rows;
    scols_ = t.cols;
  }
  void EndSpatial() { spatial_ = false; }

  // Whether planes of ho x wo take the current spatial tiles.
  PrimExpr FitsSpatial(const PrimExpr& ho, const PrimExpr& wo) const {
    // Rows of 33 to 55 columns take tiles of 16 (at most 48 + 8 columns
    // computed), not two of 32 (64).
    PrimExpr cols = Ge(wo, I64(scols_));
    if (scols_ == 32) cols = MakeBinary(TirKind::kOr, Ge(wo, I64(56)), MakeBinary(TirKind::kEQ, wo, I64(32)));
    return MakeBinary(TirKind::kAnd, Ge(ho, I64(srows_)), cols);
  }

  // Depthwise, padded, output channel o reading input channel o: for each
  // channel (in parallel), its padded copy, then its spatial tiles.
  // With a column stride, the copy is split into column phases instead
  // (PackPhases), so that the tiles read contiguous vectors.
  Stmt PerChannel(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp, const PrimExpr& wp) {
    Var o = MakeVar("o"), yt = MakeVar("yt"), y = MakeVar("y");
    PrimExpr nyt = arith::Simplify(Div(ho + I64(srows_ - 1), I64(srows_)));
    if (cv_.sw > 1) {
      wph_ = arith::Simplify(Div(wp + I64(cv_.sw - 1), I64(cv_.sw)));
      // One channel's, allocated in the parallel loop (the workspace cache
      // of each thread reuses it): it stays in cache between the copy and
      // the tiles. (All channels' phases in one buffer made the copy cost
      // twice the tiles: the whole padded input written to memory and read
      // back.)
      qs_ = nest::Float32Buffer(cv_.data->name + "_phases", {hp, arith::Simplify(wph_ * I64(cv_.sw))}, "global");
      phased_ = true;
    }
    Stmt rows = Tiles(PrimExpr(o), PrimExpr(y), wo, scols_);
    rows = std::make_shared<LetStmtNode>(y, Min(PrimExpr(yt) * I64(srows_), ho - I64(srows_)), rows);
    rows = MakeFor(yt, nyt, ForKind::kSerial, rows);
    const ForKind kind = threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial;
    if (!phased_) return MakeFor(o, I64(cv_.o), kind, Seq({PackChannel(PrimExpr(o), hp, wp), rows}));
    phased_ = false;
    return MakeFor(o, I64(cv_.o), kind, std::make_shared<AllocateNode>(qs_, Seq({PackPhases(PrimExpr(o), hp), rows})));
  }

  // Channel c of the padded input split into the sw column phases of a
  // stride-sw convolution: qs_[a, p * Wph + b] = Q[c, a, b * sw + p] (or
  // qs_[c, a, ..] when it holds every channel, phases_by_channel_; Q the
  // zero-padded copy of PackChannel), so that tap kx of output columns
  // x0 .. x0 + NR reads qs_[.., ((kx * dw) % sw) * Wph + x0 + (kx * dw) / sw
  // ..], one contiguous vector, where Q needed a strided load (a permute per
  // FMA: PP-OCRv4's and PP-LCNet's stride-2 depthwise layers ran 2.2-3.9x
  // slower than their pinned schedule). Each row: zeroed, then the columns
  // whose sw phases all lie inside X copied in one loop (an interleaved
  // load), the few at the edges one by one with their bounds test (0
  // outside); rows outside X zeroed.
  Stmt PackPhases(const PrimExpr& c, const PrimExpr& hp) {
    const int64_t sw = cv_.sw;
    Var a = MakeVar("pa"), b = MakeVar("pb"), b2 = MakeVar("pb2"), e = MakeVar("pe"), e2 = MakeVar("pe2");
    PrimExpr h = cv_.data->shape[2], w = cv_.data->shape[3];
    PrimExpr iy = PrimExpr(a) - I64(cv_.pt);
    Stmt zero;
    if (row_phases_) {
      Var zp = MakeVar("pzp");
      zero = MakeFor(zp, I64(sw), ForKind::kSerial,
                     MakeFor(b, wph_, ForKind::kVectorized,
                             Store(qs_, FloatImm(DType::Float32(), 0.0), PhaseAt(c, PrimExpr(a), PrimExpr(zp), PrimExpr(b)))));
    } else {
      zero = MakeFor(b, wph_ * I64(sw), ForKind::kVectorized,
                     Store(qs_, FloatImm(DType::Float32(), 0.0), PhaseIndex(c, PrimExpr(a), PrimExpr(b))));
    }
    // Phase column b holds X column b * sw + p - pl: inside X for every p
    // when b in [lo, hi).
    const int64_t lo = (cv_.pl + sw - 1) / sw;
    PrimExpr hi = arith::Simplify(MakeBinary(TirKind::kMax, I64(lo),
                                             Min(wph_, Div(w + I64(cv_.pl - sw), I64(sw)) + I64(1))));
    auto copy = [&](const PrimExpr& col, bool checked) {
      std::vector<Stmt> st;
      for (int64_t p = 0; p < sw; ++p) {
        PrimExpr ix = col * I64(sw) + I64(p - cv_.pl);
        std::vector<PrimExpr> at = PhaseAt(c, PrimExpr(a), I64(p), col);
        Stmt one = Store(qs_, Load(cv_.data, {NImage(), c, iy, ix}), at);
        if (checked) {
          one = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kAnd, Ge(ix, I64(0)), Lt(ix, w)), one,
                                                 Store(qs_, FloatImm(DType::Float32(), 0.0), at));
        }
        st.push_back(one);
      }
      return Seq(st);
    };
    // The interior in chunks of kPhaseChunk columns, the last moved back to
    // end at hi: a vectorized loop of constant extent with loads two floats
    // apart is emitted as explicit vectors (a wide load and a shuffle,
    // codegen/vector_loop.h); of symbolic extent it was left to LLVM, which
    // built it lane by lane (the copy took 5x the tiles' time).
    PrimExpr count = arith::Simplify(hi - I64(lo));
    Var t = MakeVar("pt"), b0 = MakeVar("pb0");
    Stmt chunk = MakeFor(b2, I64(kPhaseChunk), ForKind::kVectorized, copy(PrimExpr(b0) + PrimExpr(b2), false));
    chunk = std::make_shared<LetStmtNode>(b0, I64(lo) + Min(PrimExpr(t) * I64(kPhaseChunk), count - I64(kPhaseChunk)),
                                          chunk);
    Stmt chunks = MakeFor(t, Div(count + I64(kPhaseChunk - 1), I64(kPhaseChunk)), ForKind::kSerial, chunk);
    Stmt narrow = MakeFor(b2, count, ForKind::kSerial, copy(PrimExpr(b2) + I64(lo), false));
    Stmt interior = std::make_shared<IfThenElseNode>(Ge(count, I64(kPhaseChunk)), chunks, narrow);
    Stmt left = MakeFor(e, I64(lo), ForKind::kSerial, copy(PrimExpr(e), true));
    Stmt right = MakeFor(e2, wph_ - hi, ForKind::kSerial, copy(PrimExpr(e2) + hi, true));
    // Each element written once: rows outside X zeroed, the others copied
    // with their edge columns' padding.
    Stmt row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kAnd, Ge(iy, I64(0)), Lt(iy, h)),
                                                Seq({left, interior, right}), zero);
    return MakeFor(a, hp, ForKind::kSerial, row);
  }

  // Strided convolutions (not depthwise) on rows narrower than
  // kStridedPlaneWidth: every input channel's padded copy split into its
  // sh * sw phase planes, P[c, (a % sh) * sw + p, (a / sh) * Wph + b] =
  // Q[c, a, b * sw + p] (PackPhases), each plane flat with rows of Wph =
  // ceil(Wp / sw) columns. Output point (y, x) is then flat column
  // j = y * Wph + x of every plane, and tap (ky, kx) reads plane
  // ((ky * dh) % sh) * sw + (kx * dw) % sw at j + ((ky * dh) / sh) * Wph +
  // (kx * dw) / sw: tiles of MR channels x NR flat columns run over the
  // span (Ho - 1) * Wph + Wo like the pointwise flat rows, computing the
  // Wph - Wo columns between rows for nothing, into per-tile-group planes
  // whose rows are copied out through the epilogue. Rows of 10 or 20 output
  // columns took tiles of 8 or 16 columns, the last one overlapping (16 x 2
  // for 20 columns).
  Stmt StridedPlanes(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp) {
    const int64_t planes = cv_.sh * cv_.sw;
    PrimExpr hph = arith::Simplify(Div(hp + I64(cv_.sh - 1), I64(cv_.sh)));
    PrimExpr ch = cv_.data->shape[1];
    Buffer pq = nest::Float32Buffer(cv_.data->name + "_phase_planes", {ch, I64(planes), arith::Simplify(hph * wph_)}, "global");
    // The copy: every row of every plane written (rows past the padded
    // input zeroed), so the columns between rows read initialized memory.
    qs_ = pq;
    phases_by_channel_ = true;
    row_phases_ = true;
    Var pc = MakeVar("pc");
    Stmt pack = MakeFor(pc, ch, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial,
                        PackPhases(PrimExpr(pc), arith::Simplify(hph * I64(cv_.sh))));
    row_phases_ = false;
    phases_by_channel_ = false;
    // Tile groups of mr_ output channels (in parallel).
    Var g = MakeVar("g");
    PrimExpr o0 = PrimExpr(g) * I64(mr_);
    PrimExpr span = arith::Simplify((ho - I64(1)) * wph_ + wo);
    Buffer tf = nest::Float32Buffer("plane_out", {I64(mr_), span}, "global");
    Stmt tiles = StridedPlaneRow(o0, pq, tf, span, 1);
    for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
      tiles = std::make_shared<IfThenElseNode>(Fits(span, *it), StridedPlaneSpan(o0, pq, tf, span, *it), tiles);
    }
    Stmt rows = PlaneRowsOut(o0, mr_, tf, ho, wo, wph_);
    Stmt body = std::make_shared<AllocateNode>(tf, Seq({tiles, rows}));
    Stmt groups = MakeFor(g, I64(cv_.o / mr_), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, body);
    return std::make_shared<AllocateNode>(pq, Seq({pack, groups}));
  }

  // The span (at least nr columns) in tiles of nr columns and its
  // remainder as conv_symbolic_plane_tail.h plans it: widened into the last
  // tile (nr + 8 or nr + 16 columns, one pass over the weights) where that
  // fits the span and the registers, else in a tile of its own.
  Stmt StridedPlaneSpan(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span, int64_t nr) {
    const std::vector<int64_t> tails = PlaneTailWidths(nr, std::begin(kTileWidths), std::end(kTileWidths));
    if (tails.size() < 2) return StridedPlaneRow(o0, pq, tf, span, nr);
    PrimExpr rem = Mod(span, I64(nr));
    // Built from the widest: the first test that holds picks the narrowest fit.
    Stmt tail = StridedPlaneRow(o0, pq, tf, span, tails.back(), FlatTiles::kLast);
    for (size_t i = tails.size() - 1; i-- > 0;) {
      tail = std::make_shared<IfThenElseNode>(Lt(rem, I64(tails[i] + 1)),
                                              StridedPlaneRow(o0, pq, tf, span, tails[i], FlatTiles::kLast), tail);
    }
    tail = std::make_shared<IfThenElseNode>(Ge(rem, I64(1)), tail, Stmt());
    Stmt plan = Seq({StridedPlaneRow(o0, pq, tf, span, nr, FlatTiles::kWhole), tail});
    int64_t lo = 1;
    std::vector<std::pair<PrimExpr, Stmt>> widened;
    for (int64_t w : tails) {
      if (w >= nr) break;
      if (PlaneTailWidens(nr, w, mr_, kMaxTileAccumulators)) {
        PrimExpr in = MakeBinary(TirKind::kAnd, Ge(rem, I64(lo)), Lt(rem, I64(w + 1)));
        widened.push_back({MakeBinary(TirKind::kAnd, in, Ge(span, I64(nr + w))),
                           Seq({StridedPlaneRow(o0, pq, tf, span, nr, FlatTiles::kWholeButLast),
                                StridedPlaneRow(o0, pq, tf, span, nr + w, FlatTiles::kLast)})});
      }
      lo = w + 1;
    }
    for (auto it = widened.rbegin(); it != widened.rend(); ++it) {
      plan = std::make_shared<IfThenElseNode>(it->first, it->second, plan);
    }
    return plan;
  }

  // The tile loop that StridedPlaneRow and PlaneTileRow share: ceil(span /
  // nr) tiles (the last moved back to end at the span's end; nr == 1: one
  // column each), each zeroing `acc` (rows x nr), running `taps` (the
  // reduction into acc at columns x0 ..) and copying acc to tf[r, x0 + j].
  // `which` other than kCover: the whole tiles, all but the last of them,
  // or the one tile ending at the span's end (conv_symbolic_plane_tail.h).
  static Stmt FlatTileLoop(const Var& xt, const Var& x0, const Buffer& acc, int64_t rows, int64_t nr, const Buffer& tf,
                           const PrimExpr& span, const Stmt& taps, FlatTiles which = FlatTiles::kCover) {
    DType f32 = DType::Float32();
    Var zi = MakeVar("zi"), zj = MakeVar("zj");
    Stmt zero = MakeFor(zi, I64(rows), ForKind::kUnrolled,
                        MakeFor(zj, I64(nr), ForKind::kVectorized,
                                Store(acc, FloatImm(f32, 0.0), {PrimExpr(zi), PrimExpr(zj)})));
    Var wi = MakeVar("wi"), wj = MakeVar("wj");
    Stmt write = MakeFor(wi, I64(rows), ForKind::kUnrolled,
                         MakeFor(wj, I64(nr), ForKind::kVectorized,
                                 Store(tf, Load(acc, {PrimExpr(wi), PrimExpr(wj)}),
                                       {PrimExpr(wi), PrimExpr(x0) + PrimExpr(wj)})));
    Stmt tile = std::make_shared<AllocateNode>(acc, Seq({zero, taps, write}));
    if (which == FlatTiles::kLast) return std::make_shared<LetStmtNode>(x0, span - I64(nr), tile);
    if (which == FlatTiles::kWhole || which == FlatTiles::kWholeButLast) {
      tile = std::make_shared<LetStmtNode>(x0, PrimExpr(xt) * I64(nr), tile);
      PrimExpr count = Div(span, I64(nr));
      if (which == FlatTiles::kWholeButLast) count = count - I64(1);
      return MakeFor(xt, count, ForKind::kSerial, tile);
    }
    PrimExpr start = nr == 1 ? PrimExpr(xt) : Min(PrimExpr(xt) * I64(nr), span - I64(nr));
    tile = std::make_shared<LetStmtNode>(x0, start, tile);
    PrimExpr count = nr == 1 ? span : Div(span + I64(nr - 1), I64(nr));
    return MakeFor(xt, count, ForKind::kSerial, tile);
  }

  // ceil(span / nr) tiles of mr_ channels x nr flat columns of StridedPlanes
  // (the last moved back to end at the span's end; nr == 1: one column
  // each; `which`: FlatTileLoop's), reduced over (c, ky, kx) in the nest's
  // order.
  Stmt StridedPlaneRow(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span, int64_t nr,
                       FlatTiles which = FlatTiles::kCover) {
    const auto& L = cv_.loops;
    DType f32 = DType::Float32();
    const std::string tag = (which == FlatTiles::kLast ? "t" : "") + std::to_string(nr);
    Var xt = MakeVar("st" + tag), x0 = MakeVar("sx0_" + tag);
    Buffer acc = nest::Float32Buffer("acc", {I64(mr_), I64(nr)}, "local");
    Var ii = MakeVar("ii"), jj = MakeVar("jj"), c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
    VarMap map;
    map[L[0]->loop_var.get()] = PrimExpr(n_);
    map[L[1]->loop_var.get()] = o0 + PrimExpr(ii);
    map[L[4]->loop_var.get()] = PrimExpr(c);
    map[L[5]->loop_var.get()] = PrimExpr(ky);
    map[L[6]->loop_var.get()] = PrimExpr(kx);
    std::vector<PrimExpr> widx;
    for (const PrimExpr& e : cv_.w_load->indices) widx.push_back(arith::Simplify(Substitute(e, map)));
    PrimExpr chan = arith::Simplify(Substitute(cv_.x_load->indices[1], map));
    PrimExpr kyd = PrimExpr(ky) * I64(cv_.dh), kxd = PrimExpr(kx) * I64(cv_.dw);
    PrimExpr plane = Mod(kyd, I64(cv_.sh)) * I64(cv_.sw) + Mod(kxd, I64(cv_.sw));
    PrimExpr off = Div(kyd, I64(cv_.sh)) * wph_ + Div(kxd, I64(cv_.sw));
    PrimExpr xv = Load(pq, {chan, plane, PrimExpr(x0) + PrimExpr(jj) + off});
    PrimExpr cur = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
    Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                     {PrimExpr(ii), PrimExpr(jj)});
    Stmt taps = MakeFor(ii, I64(mr_), ForKind::kUnrolled, MakeFor(jj, I64(nr), ForKind::kVectorized, fma));
    taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
    taps = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, taps);
    taps = MakeFor(c, I64(cv_.ki), ForKind::kSerial, taps);
    return FlatTileLoop(xt, x0, acc, mr_, nr, tf, span, taps, which);
  }

  // Rows out of flat planes: C[n, o0 + r, y, x] = tf[r, y * row + x]
  // through the epilogue, for r < rows_of_channels.
  Stmt PlaneRowsOut(const PrimExpr& o0, int64_t channels, const Buffer& tf, const PrimExpr& ho, const PrimExpr& wo,
                    const PrimExpr& row) {
    Var wr = MakeVar("wr"), y = MakeVar("y"), x = MakeVar("x");
    const auto& L = cv_.loops;
    VarMap at;
    at[L[0]->loop_var.get()] = PrimExpr(n_);
    at[L[1]->loop_var.get()] = o0 + PrimExpr(wr);
    at[L[2]->loop_var.get()] = PrimExpr(y);
    at[L[3]->loop_var.get()] = PrimExpr(x);
    PrimExpr v = Load(tf, {PrimExpr(wr), PrimExpr(y) * row + PrimExpr(x)});
    std::vector<Stmt> back;
    std::vector<PrimExpr> out_idx;
    for (const PrimExpr& e : out_idx_) out_idx.push_back(Substitute(e, at));
    if (store_out_ || epilogue_.empty()) back.push_back(Store(out_, v, out_idx));
    ReplaceLoads replace(cv_.out->data.get(), v);
    for (const Stmt& st : epilogue_) back.push_back(Substitute(replace.MutateStmt(st), at));
    return MakeFor(wr, I64(channels), ForKind::kSerial,
                   MakeFor(y, ho, ForKind::kSerial, MakeFor(x, wo, ForKind::kVectorized, Seq(back))));
  }

  // Whether the flat plane tiles (kPlaneChannels) replace the spatial ones
  // at run time: rows narrower than 8 columns (no spatial tile fits), and
  // widths whose last spatial tile recomputes at least half its columns
  // (8 x 8 tiles on 9 to 12 columns, 8 x 16 on 17 to 24); the flat span
  // wastes (Wp - Wo) / Wp, 4 of 14 columns for a 5 x 5 kernel on 10.
  PrimExpr PlaneTilesPay(const PrimExpr& wo) const {
    auto in = [&](int64_t lo, int64_t hi) { return MakeBinary(TirKind::kAnd, Ge(wo, I64(lo)), Lt(wo, I64(hi))); };
    return MakeBinary(TirKind::kOr, Lt(wo, I64(8)), MakeBinary(TirKind::kOr, in(9, 13), in(17, 25)));
  }

  // The flat plane tiles: for each group of pc channels (in parallel), their
  // padded planes copied flat, the tiles over the flat span into `acc`
  // planes, then each output row copied out of them through the epilogue.
  Stmt PlaneTiles(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp, const PrimExpr& wp) {
    int64_t pc = 1;
    for (int64_t r : kPlaneChannels) {
      if (cv_.o % r == 0) {
        pc = r;
        break;
      }
    }
    Var g = MakeVar("g");
    PrimExpr o0 = PrimExpr(g) * I64(pc);
    Buffer qf = nest::Float32Buffer(cv_.data->name + "_planes", {I64(pc), arith::Simplify(hp * wp)}, "global");
    PrimExpr span = arith::Simplify((ho - I64(1)) * wp + wo);
    Buffer tf = nest::Float32Buffer("plane_out", {I64(pc), span}, "global");
    // The copies: row a of channel o0 + r at r, [a * Wp, (a + 1) * Wp).
    Var r = MakeVar("pr"), a = MakeVar("pa"), b = MakeVar("pb"), b2 = MakeVar("pb2");
    PrimExpr iy = PrimExpr(a) - I64(cv_.pt);
    PrimExpr row0 = PrimExpr(a) * wp;
    Stmt zero = MakeFor(b, wp, ForKind::kVectorized,
                        Store(qf, FloatImm(DType::Float32(), 0.0), {PrimExpr(r), row0 + PrimExpr(b)}));
    Stmt copy = MakeFor(b2, Min(cv_.data->shape[3], wp - I64(cv_.pl)), ForKind::kVectorized,
                        Store(qf, Load(cv_.data, {NImage(), o0 + PrimExpr(r), iy, PrimExpr(b2)}),
                              {PrimExpr(r), row0 + PrimExpr(b2) + I64(cv_.pl)}));
    Stmt inside = std::make_shared<IfThenElseNode>(
        MakeBinary(TirKind::kAnd, Ge(iy, I64(0)), Lt(iy, cv_.data->shape[2])), copy, Stmt());
    Stmt pack = MakeFor(r, I64(pc), ForKind::kSerial, MakeFor(a, hp, ForKind::kSerial, Seq({zero, inside})));
    // The tiles, widest first, as in Row.
    Stmt tiles = PlaneTileRow(o0, pc, qf, tf, span, wp, 1);
    for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
      tiles = std::make_shared<IfThenElseNode>(Fits(span, *it), PlaneTileRow(o0, pc, qf, tf, span, wp, *it), tiles);
    }
    // Rows out: C[n, o0 + r, y, x] = plane_out[r, y * Wp + x] through the epilogue.
    Stmt rows = PlaneRowsOut(o0, pc, tf, ho, wo, wp);
    Stmt body = std::make_shared<AllocateNode>(qf, std::make_shared<AllocateNode>(tf, Seq({pack, tiles, rows})));
    return MakeFor(g, I64(cv_.o / pc), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, body);
  }

  // ceil(span / nr) tiles of pc channels x nr flat columns (the last moved
  // back to end at the span's end; nr == 1: one column each).
  Stmt PlaneTileRow(const PrimExpr& o0, int64_t pc, const Buffer& qf, const Buffer& tf, const PrimExpr& span,
                    const PrimExpr& wp, int64_t nr) {
    const auto& L = cv_.loops;
    DType f32 = DType::Float32();
    Var xt = MakeVar("pt" + std::to_string(nr)), x0 = MakeVar("px0_" + std::to_string(nr));
    Buffer acc = nest::Float32Buffer("acc", {I64(pc), I64(nr)}, "local");
    Var ii = MakeVar("ii"), jj = MakeVar("jj"), ky = MakeVar("ky"), kx = MakeVar("kx");
    VarMap map;
    map[L[1]->loop_var.get()] = o0 + PrimExpr(ii);
    map[L[4]->loop_var.get()] = I64(0);
    map[L[5]->loop_var.get()] = PrimExpr(ky);
    map[L[6]->loop_var.get()] = PrimExpr(kx);
    std::vector<PrimExpr> widx;
    for (const PrimExpr& e : cv_.w_load->indices) widx.push_back(arith::Simplify(Substitute(e, map)));
    PrimExpr off = PrimExpr(ky) * I64(cv_.dh) * wp + PrimExpr(kx) * I64(cv_.dw);
    PrimExpr xv = Load(qf, {PrimExpr(ii), PrimExpr(x0) + PrimExpr(jj) + off});
    PrimExpr cur = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
    Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                     {PrimExpr(ii), PrimExpr(jj)});
    Stmt taps = MakeFor(ii, I64(pc), ForKind::kUnrolled, MakeFor(jj, I64(nr), ForKind::kVectorized, fma));
    // kx a loop, as the static schedule's taps: with every tap unrolled LLVM
    // hoisted all pc * kh * kw weight broadcasts out of the tile loop and
    // spilled them (100 vectors for 4 channels of 5 x 5), one reload per FMA.
    taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
    taps = MakeFor(ky, I64(cv_.kh), ForKind::kUnrolled, taps);
    return FlatTileLoop(xt, x0, acc, pc, nr, tf, span, taps);
  }

  // for t in O * ceil(Ho / SR): channel o = t / ceil(Ho / SR), output rows
  // [y0, y0 + SR), the last tile of rows moved back to end at Ho (rows
  // computed twice store the same values, as columns do in Tiles).
  Stmt SpatialTileLoop(const PrimExpr& ho, const PrimExpr& wo) {
    Var t = MakeVar("t"), o0 = MakeVar("o0"), y = MakeVar("y");
    PrimExpr nyt = arith::Simplify(Div(ho + I64(srows_ - 1), I64(srows_)));
    Stmt row = Tiles(PrimExpr(o0), PrimExpr(y), wo, scols_);
    row = std::make_shared<LetStmtNode>(y, Min(Mod(PrimExpr(t), nyt) * I64(srows_), ho - I64(srows_)), row);
    row = std::make_shared<LetStmtNode>(o0, Div(PrimExpr(t), nyt), row);
    return MakeFor(t, I64(cv_.o) * nyt, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, row);
  }

  // Rows per channel tile (kMaxTileAccumulators): 1 unless the row may be
  // narrower than the widest column tile (a static width of 8 to 31
  // columns, or any symbolic width: ChannelTiles then tests it at run time).
  int64_t RowTileCount(const PrimExpr& wo) const {
    if (flat_) return 1;
    const int64_t* w = ConstInt(wo);
    if (w == nullptr && wide_rows_only_) return 1;
    if (w != nullptr && (*w < kTileWidths[2] || *w >= kTileWidths[0])) return 1;
    return std::max<int64_t>(1, kMaxTileAccumulators / mr_);
  }

  // Whether a symbolic row of `wo` columns takes the tiles of several rows:
  // 8 to 31 columns (one 16- or 8-column vector per row, as a static width
  // does), and 33 to 48 (three 16-column vectors, 48 columns computed where
  // 32-column tiles computed 64). YOLOv8n's stride-2 3 x 3 convolutions at
  // 320 x 320, symbolic H and W, wrote rows of 10, 20 and 40 columns as
  // tiles of one row (8 accumulators for 10 and 20 columns: too few to hide
  // the FMA latency, and the overlapping last tile doubling the work).
  PrimExpr RowTilesFit(const PrimExpr& wo) const {
    PrimExpr narrow = Lt(wo, I64(kTileWidths[0]));
    PrimExpr mid = MakeBinary(TirKind::kAnd, Ge(wo, I64(kTileWidths[0] + 1)), Lt(wo, I64(3 * kTileWidths[1] + 1)));
    return MakeBinary(TirKind::kAnd, Ge(wo, I64(kTileWidths[2])), MakeBinary(TirKind::kOr, narrow, mid));
  }

  // TileLoop, in tiles of RowTileCount rows where the plane has that many
  // (a run-time test of the symbolic height, and of a symbolic width).
  Stmt ChannelTiles(const PrimExpr& ho, const PrimExpr& wo) {
    const int64_t r = RowTileCount(wo);
    const int64_t* h = ConstInt(ho);
    if (r == 1 || (h != nullptr && *h < r)) return TileLoop(ho, wo);
    yr_ = r;
    Stmt rows = TileLoop(ho, wo);
    yr_ = 1;
    PrimExpr fits;
    if (h == nullptr) fits = Ge(ho, I64(r));
    if (ConstInt(wo) == nullptr) fits = fits.defined() ? MakeBinary(TirKind::kAnd, fits, RowTilesFit(wo)) : RowTilesFit(wo);
    if (!fits.defined()) return rows;
    return std::make_shared<IfThenElseNode>(fits, rows, TileLoop(ho, wo));
  }

  // for t in (O / MR) * ceil(Ho / YR): every column tile of rows [y, y +
  // YR), channels [c * MR, +MR), where the row tile is t % ceil(Ho / YR) and
  // c = t / ceil(Ho / YR) -- or, where the whole weight fits in the cache
  // (RowOuter), the row tile is t / (O / MR) and c = t % (O / MR):
  // consecutive tasks then read the same input rows of every channel (and
  // the next row shares KH - 1 of them), which stay in cache for all channel
  // tiles, where channel-tile order streamed the whole input once per tile.
  // The last tile of rows is moved back to end at Ho (rows computed twice
  // store the same values).
  Stmt TileLoop(const PrimExpr& ho, const PrimExpr& wo) {
    Var t = MakeVar("t"), o0 = MakeVar("o0"), y = MakeVar("y");
    Stmt row = Row(PrimExpr(o0), PrimExpr(y), flat_ ? FlatRowWidth(PrimExpr(y)) : wo);
    const int64_t ot = cv_.o / mr_;
    PrimExpr nyt = yr_ == 1 ? ho : arith::Simplify(Div(ho + I64(yr_ - 1), I64(yr_)));
    const bool row_outer = RowOuter();
    PrimExpr yt = row_outer ? Div(PrimExpr(t), I64(ot)) : Mod(PrimExpr(t), nyt);
    PrimExpr ct = row_outer ? Mod(PrimExpr(t), I64(ot)) : Div(PrimExpr(t), nyt);
    PrimExpr y_at = yr_ == 1 ? yt : Min(yt * I64(yr_), ho - I64(yr_));
    row = std::make_shared<LetStmtNode>(y, y_at, row);
    row = std::make_shared<LetStmtNode>(o0, ct * I64(mr_), row);
    return MakeFor(t, I64(ot) * nyt, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, row);
  }

  // Flat row y's columns: kFlatRow, the last row the rest, written without
  // a select: min(1, rows - 1 - y) is 1 before the last row, 0 at it.
  PrimExpr FlatRowWidth(const PrimExpr& y) const {
    PrimExpr rest = hw_ - y * I64(kFlatRow);
    PrimExpr before_last = Min(I64(1), flat_rows_ - I64(1) - y);
    return arith::Simplify(rest - before_last * (rest - I64(kFlatRow)));
  }

  // Rows outside channel tiles when the weight (read again for every row)
  // fits in the cache; with one tile of channels the orders are the same.
  // Pointwise convolutions with a hard-swish epilogue (as in PP-OCRv4 det),
  // symbolic H and W, one thread, CPU time per call on a loaded machine:
  // 96 -> 96 on 80 x 80 1.82 -> 0.93 ms, 48 -> 48 on 160 x 160 2.00 ->
  // 0.95 ms; a padded 3 x 3 96 -> 24 on 160 x 160 about the same (9.4 ->
  // 9.2 ms: its 9 taps reuse each input row already).
  bool RowOuter() const {
    return cv_.o / mr_ > 1 && cv_.o * cv_.ki * cv_.kh * cv_.kw * 4 <= kRowOuterWeightBytes;
  }

  // The row's columns in tiles of the widest width that fits it.
  Stmt Row(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo) {
    if (const int64_t* w = ConstInt(wo); w != nullptr && yr_ > 1) {
      // A static width of 8 to 31 columns (RowTileCount): its one tile width.
      return Tiles(o0, y, wo, *w >= kTileWidths[1] ? kTileWidths[1] : kTileWidths[2]);
    }
    if (yr_ > 1) {
      // A symbolic width that RowTilesFit took: 16-column vectors from 16
      // columns on, else one of 8.
      return std::make_shared<IfThenElseNode>(Fits(wo, kTileWidths[1]), Tiles(o0, y, wo, kTileWidths[1]),
                                              Tiles(o0, y, wo, kTileWidths[2]));
    }
    Stmt chain = Tiles(o0, y, wo, 1);
    for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
      chain = std::make_shared<IfThenElseNode>(Fits(wo, *it), Tiles(o0, y, wo, *it), chain);
    }
    if (flat_) chain = std::make_shared<IfThenElseNode>(FlatWideFits(wo), Tiles(o0, y, wo, kFlatTileWidth), chain);
    return chain;
  }

  // Whether a flat row of `wo` columns takes tiles of kFlatTileWidth: it
  // fits, and its last tile (moved back) recomputes no more columns than
  // 32-column tiles would (a row of 160: 4 x 48 computed 192, 5 x 32 160).
  PrimExpr FlatWideFits(const PrimExpr& wo) const {
    auto waste = [&](int64_t nr) { return Mod(I64(nr) - Mod(wo, I64(nr)), I64(nr)); };
    return MakeBinary(TirKind::kAnd, Fits(wo, kFlatTileWidth),
                      MakeBinary(TirKind::kLE, waste(kFlatTileWidth), waste(kTileWidths[0])));
  }

  // Whether rows of `wo` columns take tiles of `nr`: the widest that fits.
  // (Narrower tiles to recompute fewer columns, 40 columns as 3 x 16
  // instead of 2 x 32, measured no faster: an 8 x 16 tile has too few
  // accumulators to hide the FMA latency.)
  PrimExpr Fits(const PrimExpr& wo, int64_t nr) const { return Ge(wo, I64(nr)); }

  // ceil(Wo / nr) tiles, the last one moved back to end at Wo.
  Stmt Tiles(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo, int64_t nr) {
    Var xt = MakeVar("xt" + std::to_string(nr)), x0 = MakeVar("x0_" + std::to_string(nr));
    Stmt tile = Tile(o0, y, PrimExpr(x0), nr);
    PrimExpr start = nr == 1 ? PrimExpr(xt) : Min(PrimExpr(xt) * I64(nr), wo - I64(nr));
    tile = std::make_shared<LetStmtNode>(x0, start, tile);
    PrimExpr count = nr == 1 ? wo : Div(wo + I64(nr - 1), I64(nr));
    return MakeFor(xt, count, ForKind::kSerial, tile);
  }

  // Substitution of the nest's variables at tile row ii, column jj.
  // With row tiles (yr_ > 1), `ri` is the tile's row.
  VarMap At(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, const Var& ii, const PrimExpr& jj,
            const Var& ri = Var()) const {
    const auto& L = cv_.loops;
    VarMap map;
    map[L[0]->loop_var.get()] = PrimExpr(n_);
    // Tile row ii: output channel o0 + ii of row y, or (spatial) row y + ii
    // of channel o0.
    map[L[1]->loop_var.get()] = spatial_ ? o0 : o0 + PrimExpr(ii);
    map[L[2]->loop_var.get()] = spatial_ ? y + PrimExpr(ii) : ri ? y + PrimExpr(ri) : y;
    map[L[3]->loop_var.get()] = x0 + jj;
    if (flat_) map[j_.get()] = y * I64(kFlatRow) + x0 + jj;
    return map;
  }

  Stmt Tile(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, int64_t nr) {
    const auto& L = cv_.loops;
    const int64_t rows = spatial_ ? srows_ : mr_;
    // Row tiles: accumulator ii * yr + ri for channel ii, row ri.
    const int64_t yr = spatial_ ? 1 : yr_;
    Buffer acc = nest::Float32Buffer("acc", {I64(rows * yr), I64(nr)}, "local");
    DType f32 = DType::Float32();
    Var zi = MakeVar("zi"), zj = MakeVar("zj");
    Stmt zero = MakeFor(zi, I64(rows * yr), ForKind::kUnrolled,
                        MakeFor(zj, I64(nr), ForKind::kVectorized,
                                Store(acc, FloatImm(f32, 0.0), {PrimExpr(zi), PrimExpr(zj)})));
    // One tap: acc[ii, jj] = fma(W, X or Q, acc[ii, jj]).
    Var ii = MakeVar("ii"), jj = MakeVar("jj"), ri = yr > 1 ? MakeVar("ri") : Var();
    VarMap map = At(o0, y, x0, ii, PrimExpr(jj), ri);
    PrimExpr slot = yr > 1 ? PrimExpr(ii) * I64(yr) + PrimExpr(ri) : PrimExpr(ii);
    // Fresh reduction variables: every tile width has its own loops.
    Var c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
    map[L[4]->loop_var.get()] = PrimExpr(c);
    map[L[5]->loop_var.get()] = PrimExpr(ky);
    map[L[6]->loop_var.get()] = PrimExpr(kx);
    std::vector<PrimExpr> widx;
    for (const PrimExpr& e : cv_.w_load->indices) widx.push_back(arith::Simplify(Substitute(e, map)));
    PrimExpr wv = Load(cv_.weight, widx);
    PrimExpr xv;
    if (cv_.guarded) {
      // Q is X shifted by the padding: Q[ch, iy + pt, ix + pl].
      PrimExpr ch = arith::Simplify(Substitute(cv_.x_load->indices[1], map));
      PrimExpr qy = arith::Simplify(Substitute(cv_.x_load->indices[2], map) + I64(cv_.pt));
      PrimExpr qx = arith::Simplify(Substitute(cv_.x_load->indices[3], map) + I64(cv_.pl));
      xv = Load(q_, {ch, qy, qx});
      if (phased_) {
        // Column (x0 + jj) * sw + kx * dw of the padded row: phase
        // (kx * dw) % sw, column x0 + jj + (kx * dw) / sw (PackPhases).
        PrimExpr kxd = PrimExpr(kx) * I64(cv_.dw);
        xv = Load(qs_, PhaseIndex(ch, qy, Mod(kxd, I64(cv_.sw)) * wph_ + x0 + PrimExpr(jj) + Div(kxd, I64(cv_.sw))));
      }
    } else {
      const auto* l = x_expr_.as<BufferLoadNode>();
      std::vector<PrimExpr> idx;
      for (const PrimExpr& e : l->indices) idx.push_back(arith::Simplify(Substitute(e, map)));
      xv = Load(l->buffer, idx);
    }
    PrimExpr cur = Load(acc, {slot, PrimExpr(jj)});
    // The taps of input channels [0, count) reading x (over c), with weights
    // w (over c).
    auto reduce = [&](const Var& cc, int64_t count, const PrimExpr& w, const PrimExpr& x) {
      Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, cur})),
                       {slot, PrimExpr(jj)});
      Stmt t = MakeFor(jj, I64(nr), ForKind::kVectorized, fma);
      if (yr > 1) t = MakeFor(ri, I64(yr), ForKind::kUnrolled, t);
      t = MakeFor(ii, I64(rows), ForKind::kUnrolled, t);
      const ForKind tap_kind = spatial_ ? ForKind::kUnrolled : ForKind::kSerial;
      t = MakeFor(kx, I64(cv_.kw), tap_kind, t);
      t = MakeFor(ky, I64(cv_.kh), tap_kind, t);
      return MakeFor(cc, I64(count), ForKind::kSerial, t);
    };
    Stmt taps;
    if (!source_views_.empty()) {
      // X is a concatenation: one loop per source, reading it in place at
      // its own channel c and the weights at c0 + c (the order of the
      // reduction over X's channels is kept).
      const auto* l = x_expr_.as<BufferLoadNode>();
      std::vector<Stmt> parts;
      for (size_t k = 0; k < sources_.size(); ++k) {
        Var cs = MakeVar("c");
        VarMap at = map;
        at[L[4]->loop_var.get()] = PrimExpr(cs);
        PrimExpr img = arith::Simplify(Substitute(l->indices[0], at));
        PrimExpr col = arith::Simplify(Substitute(l->indices[2], at));
        at[L[4]->loop_var.get()] = PrimExpr(cs) + I64(sources_[k].c0);
        std::vector<PrimExpr> wk;
        for (const PrimExpr& e : cv_.w_load->indices) wk.push_back(arith::Simplify(Substitute(e, at)));
        parts.push_back(reduce(cs, sources_[k].count, Load(cv_.weight, wk),
                               Load(source_views_[k], {img, PrimExpr(cs), col})));
      }
      taps = Seq(parts);
    } else {
      taps = reduce(c, cv_.ki, wv, xv);
    }
    // Write-back: C (when read elsewhere), then the epilogue on the accumulators.
    Var wi = MakeVar("wi"), wj = MakeVar("wj"), wr = yr > 1 ? MakeVar("wr") : Var();
    VarMap wmap = At(o0, y, x0, wi, PrimExpr(wj), wr);
    PrimExpr a = Load(acc, {yr > 1 ? PrimExpr(wi) * I64(yr) + PrimExpr(wr) : PrimExpr(wi), PrimExpr(wj)});
    std::vector<Stmt> back;
    std::vector<PrimExpr> out_idx;
    for (const PrimExpr& e : out_idx_) out_idx.push_back(Substitute(e, wmap));
    if (store_out_ || epilogue_.empty()) back.push_back(Store(out_, a, out_idx));
    ReplaceLoads replace(cv_.out->data.get(), a);
    for (const Stmt& st : epilogue_) back.push_back(Substitute(replace.MutateStmt(st), wmap));
    Stmt write = MakeFor(wj, I64(nr), ForKind::kVectorized, Seq(back));
    if (yr > 1) write = MakeFor(wr, I64(yr), ForKind::kUnrolled, write);
    write = MakeFor(wi, I64(rows), ForKind::kUnrolled, write);
    return std::make_shared<AllocateNode>(acc, Seq({zero, taps, write}));
  }

  const SymConv& cv_;
  int threads_;
  bool store_out_;
  const std::unordered_set<const VarNode*>& params_;
  std::vector<SymConcatSource> sources_;
  std::vector<Buffer> source_views_;  // flat views of sources_, when the tiles read them
  int64_t mr_ = 1;
  PrimExpr flat_rows_;  // flat_: the number of flat rows
  // Output rows per channel tile (RowTileCount): more than 1 only while
  // building the tiles of several rows (TileLoop over row tiles).
  int64_t yr_ = 1;
  bool spatial_ok_ = false;  // depthwise: spatial tiles where the plane fits them
  int64_t srows_ = 0, scols_ = 0;  // the spatial tile being built
  bool spatial_ = false;  // building the spatial tiles (At, Tile)
  bool own_channel_ = false;  // depthwise: output channel o reads input channel o
  Var n_;
  Buffer q_;
  // Building PerChannel's tiles of a column stride: they read qs_, the
  // channel's padded rows in column phases of wph_ columns (PackPhases).
  bool phased_ = false;
  // qs_ holds every channel (ch, rows, phase columns), not one (rows, phase
  // columns): the strided convolutions that are not depthwise.
  bool phases_by_channel_ = false;
  std::vector<PrimExpr> PhaseIndex(const PrimExpr& c, const PrimExpr& row, const PrimExpr& col) const {
    if (phases_by_channel_) return {c, row, col};
    return {row, col};
  }
  // Where PackPhases stores padded row `row`, column phase p, phase column
  // b: PhaseIndex's row of sw phases, or (row_phases_, StridedPlanes) plane
  // (row % sh) * sw + p of channel c, flat at (row / sh) * Wph + b.
  std::vector<PrimExpr> PhaseAt(const PrimExpr& c, const PrimExpr& row, const PrimExpr& p, const PrimExpr& b) const {
    if (!row_phases_) return PhaseIndex(c, row, p * wph_ + b);
    return {c, Mod(row, I64(cv_.sh)) * I64(cv_.sw) + p, Div(row, I64(cv_.sh)) * wph_ + b};
  }
  bool row_phases_ = false;
  // The channel tiles being built serve only rows of kStridedPlaneWidth
  // columns and more (StridedPlanes takes the narrower ones): no row tiles.
  bool wide_rows_only_ = false;
  Buffer qs_;
  PrimExpr wph_;
  // What the tiles read, store and apply, over the nest's variables (and
  // j_, the flat column, when flat_).
  PrimExpr x_expr_;
  std::vector<Stmt> epilogue_;
  Buffer out_;
  std::vector<PrimExpr> out_idx_;
  bool flat_ = false;
  Var j_;
  PrimExpr hw_;  // flat_: H * W
};

// The elementwise nest `s` after a convolution: four loops over the
// convolution's output extents (any kinds: the default schedule may have
// vectorized or parallelized them) around stores at the loop point; its
// statements with the convolution's loop variables, or false.
bool MatchEpilogueNest(const Stmt& s, const SymConv& cv, std::vector<Stmt>* out) {
  Stmt body;
  std::vector<const ForNode*> L = PeelNest(s, &body);
  if (L.size() != 4) return false;
  VarMap map;
  for (size_t d = 0; d < 4; ++d) {
    if (!IsZero(L[d]->min)) return false;
    if (!ProvenSameExtent(L[d]->extent, cv.loops[d]->extent))
      return false;
    map[L[d]->loop_var.get()] = PrimExpr(cv.loops[d]->loop_var);
  }
  std::vector<Stmt> stmts;
  if (const auto* seq = As<SeqStmtNode>(body)) {
    stmts = seq->seq;
  } else {
    stmts = {body};
  }
  for (const Stmt& st : stmts) {
    const auto* store = As<BufferStoreNode>(st);
    if (store == nullptr || !ExactlyVars(store->indices, L, 0)) return false;
    out->push_back(Substitute(st, map));
  }
  return true;
}

class SymConvRewriter : public StmtExprMutator {
 public:
  SymConvRewriter(const PrimFunc& func, int threads) : threads_(threads) {
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
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) {
      SymConv cv;
      if (!As<ForNode>(in[i]) || !MatchSymConv(in[i], &cv)) {
        Stmt m = As<ForNode>(in[i]) ? DescendLoops(in[i]) : StmtExprMutator::MutateStmt(in[i]);
        any = any || m != in[i];
        out.push_back(m);
        continue;
      }
      // An elementwise nest over the output after it (statements that touch
      // neither the output nor what the convolution reads may sit between;
      // they move before the kernel).
      BufferRefs here = RefsOf(in[i]);
      std::vector<Stmt> moved;
      size_t used = i;
      const VarNode* c = cv.out->data.get();
      if (cv.epilogue.empty() && !params_.count(c)) {
        std::unordered_set<const VarNode*> chain = {c};
        size_t resume = i + 1;
        for (size_t next = i + 1; next < in.size(); ++next) {
          BufferRefs r = RefsOf(in[next]);
          std::vector<Stmt> epi;
          if (MatchEpilogueNest(in[next], cv, &epi)) {
            SymConv with = cv;
            with.epilogue.insert(with.epilogue.end(), epi.begin(), epi.end());
            if (!EpilogueOk(with)) break;
            cv = with;
            for (size_t j = resume; j < next; ++j) moved.push_back(in[j]);
            resume = next + 1;
            used = next;
            for (const auto& kv : r.loads) here.loads[kv.first] += kv.second;
            for (const auto& kv : r.stores) {
              here.stores[kv.first] += kv.second;
              chain.insert(kv.first);
            }
            continue;
          }
          bool blocked = r.stores.count(cv.data->data.get()) > 0 || r.stores.count(cv.weight->data.get()) > 0;
          for (const VarNode* b : chain) blocked |= r.Refs(b) > 0;
          if (blocked) break;
        }
      }
      InlineIntermediates(&cv, here);
      bool store_out = params_.count(c) > 0 || all_refs_.Refs(c) > here.Refs(c);
      // A pointwise convolution of a concatenation just computed (and read
      // nowhere else): the flat tiles read the concatenated tensors in place
      // and the copy goes (YOLOv8's C2f blocks copied every source first).
      std::vector<SymConcatSource> sources;
      const VarNode* x = cv.data->data.get();
      bool concat_before = !out.empty() && i > 0 && out.back() == in[i - 1] && !params_.count(x) &&
                           all_refs_.Refs(x) == 2 && MatchSymbolicChannelConcat(out.back(), cv.data, &sources);
      SymConvKernel builder(cv, threads_, store_out, params_, std::move(sources));
      if (concat_before && builder.ReadsSources()) out.pop_back();
      for (const Stmt& m : moved) out.push_back(m);
      Stmt kernel = builder.Build();
      // Depthwise: the banded phase planes (depthwise_banded.h) for output
      // rows of at least one vector, chosen at run time.
      dw::DepthwiseNest d;
      if (dw::MatchDepthwiseNest(in[i], &d)) {
        d.epilogue = cv.epilogue;
        d.store_out = store_out;
        kernel = std::make_shared<IfThenElseNode>(dw::TakesRow(d), dw::BuildBandedDepthwise(d, {}), kernel);
      }
      out.push_back(kernel);
      i = used;
      any = true;
    }
    if (!any) return orig;
    changed = true;
    return Seq(out);
  }

  // Loops that are not convolutions: look for sequences inside.
  Stmt DescendLoops(const Stmt& s) { return StmtExprMutator::MutateStmt(s); }

  // Epilogue stores into buffers of this function that nothing else reads
  // become values: later statements use the stored expression.
  void InlineIntermediates(SymConv* cv, const BufferRefs& here) {
    std::vector<Stmt> kept;
    std::vector<std::pair<const VarNode*, PrimExpr>> values;
    for (size_t k = 0; k < cv->epilogue.size(); ++k) {
      Stmt st = cv->epilogue[k];
      for (const auto& kv : values) st = ReplaceLoads(kv.first, kv.second).MutateStmt(st);
      const auto* store = As<BufferStoreNode>(st);
      const VarNode* b = store->buffer->data.get();
      bool last_store = true;
      for (size_t j = k + 1; j < cv->epilogue.size(); ++j)
        if (RefsOf(cv->epilogue[j]).stores.count(b)) last_store = false;
      if (!params_.count(b) && all_refs_.Refs(b) == here.Refs(b) && last_store && k + 1 < cv->epilogue.size()) {
        values.emplace_back(b, store->value);
        continue;
      }
      kept.push_back(st);
    }
    cv->epilogue = kept;
  }

  int threads_;
  std::unordered_set<const VarNode*> params_;
  BufferRefs all_refs_;
};

}  // namespace

PrimFunc ScheduleSymbolicConvs(const PrimFunc& func, int num_threads_hint) {
  SymConvRewriter rewriter(func, num_threads_hint);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
