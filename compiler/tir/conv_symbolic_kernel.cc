// The register tiles of SymConvKernel: the build, flat rows, channel and row
// tiles, and the tile itself.
// (conv_symbolic_kernel.h declares the class; conv_symbolic_schedule.h says
// what the kernel computes.)
#include "compiler/tir/conv_symbolic_kernel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace symconv {

SymConvKernel::SymConvKernel(const SymConv& cv, int threads, bool store_out, const std::unordered_set<const VarNode*>& params,
                             std::vector<SymConcatSource> sources, const Stmt& prologue)
    : cv_(cv),
      threads_(threads),
      store_out_(store_out),
      params_(params),
      sources_(std::move(sources)),
      prologue_(prologue) {
  for (int64_t r : kTileRows) {
    if (cv.o % r == 0) {
      mr_ = r;
      break;
    }
  }
  // Tiles of 2 channels hold too few accumulators to hide the FMA latency
  // (6 at 48 columns): where O has a divisor of 3 to 8 that kTileRows
  // lacks, tiles of it (PlaneChannels' rule).
  if (mr_ <= 2) mr_ = PlaneChannels();
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

Stmt SymConvKernel::Build() {
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
        if (ShortRowsApply(ho)) {
          strided_planes = std::make_shared<IfThenElseNode>(Lt(wo, I64(kShortRowWidth + 1)), ShortRows(wo, wp), strided_planes);
        }
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
    if (PointDotsApply()) {
      per_image = std::make_shared<IfThenElseNode>(Lt(hw_, I64(kTileWidths[2])), PointDots(), per_image);
    }
    // Unpadded, stride 1, not depthwise, more than one tap, a symbolic
    // width: narrow rows read X as flat planes (InPlacePlanes).
    // One static output row (a lifted 1-D convolution): its row is the
    // flat span, so only spans under 8 columns, which the row took in
    // one-column tiles, change.
    if (!flat_ && !spatial_ok_ && cv_.kh * cv_.kw > 1 && cv_.sh == 1 && cv_.sw == 1 && ConstInt(wo) == nullptr &&
        cv_.data->strides.empty() && cv_.data->shape.size() == 4) {
      const int64_t* h = ConstInt(ho);
      const int64_t narrow = h != nullptr && *h == 1 ? kTileWidths[2] : kStridedPlaneWidth;
      Stmt planes = InPlacePlanes(ho, wo, narrow <= kTileWidths[0]);
      if (ShiftedPlanesApply()) {
        planes = std::make_shared<IfThenElseNode>(Ge(arith::Simplify(ho * wo), I64(kTileWidths[2])), ShiftedPlanes(ho, wo),
                                                  planes);
      }
      per_image = std::make_shared<IfThenElseNode>(Lt(wo, I64(narrow)), planes, per_image);
    }
  }
  Stmt images = MakeFor(n_, L[0]->extent, ForKind::kSerial, per_image);
  // Output planes of at most kMaxLanePoints points at run time: output
  // channels in the lanes (conv_symbolic_small_plane.cc), each version
  // with its own image loop (LLVM hoists what a loop's body holds,
  // however deep in branches, out of the loop: all the versions'
  // set-up ran first when they shared one).
  PrimExpr points = arith::Simplify(ho * wo);
  if (!cv_.guarded && ConstInt(points) == nullptr && SmallPlaneLanesApply()) {
    images = std::make_shared<IfThenElseNode>(Lt(points, I64(kMaxLanePoints + 1)), SmallPlaneLanes(ho, wo), images);
  }
  return images;
}

// Rewrites accesses B[.., y, x] of compact buffers whose last two extents
// are the output's into B_flat[.., j] (views of the same memory); `ok`
// turns false on any other use of y or x, or on a view of a buffer that is
// not a parameter, C (when only the epilogue reads it), X or a source.
namespace {
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
};

// f over the output plane (the nest's y and x) flattened to j; C is left to
// the accumulators where only the epilogue reads it (!stores_out).
void InitPlaneFlatten(Flatten* f, const SymConv& cv, const std::unordered_set<const VarNode*>* params, bool stores_out,
                      const Var& j) {
  const auto& L = cv.loops;
  f->params = params;
  f->data = cv.data->data.get();
  if (!stores_out) f->acc_only = cv.out->data.get();
  f->y = L[2]->loop_var.get();
  f->x = L[3]->loop_var.get();
  f->ho = L[2]->extent;
  f->wo = L[3]->extent;
  f->j = j;
}
}  // namespace

void SymConvKernel::TryFlat() {
  const auto& L = cv_.loops;
  if (cv_.kh != 1 || cv_.kw != 1 || cv_.sh != 1 || cv_.sw != 1 || cv_.guarded) return;
  j_ = MakeVar("j");
  // The one tap is ky = kx = 0: X[n, c, y + ky, x + kx] is X[n, c, y, x].
  VarMap tap0 = {{L[5]->loop_var.get(), I64(0)}, {L[6]->loop_var.get(), I64(0)}};
  std::vector<PrimExpr> xi;
  for (const PrimExpr& e : cv_.x_load->indices) xi.push_back(arith::Simplify(Substitute(e, tap0)));
  PrimExpr x_at = Load(cv_.data, xi);
  // X computed by the prologue: its value at the point instead (then only
  // with flat rows, and not with a concatenation's sources).
  PrimExpr x_value;
  if (prologue_ && sources_.empty() && MatchPrologueNest(prologue_, cv_.data, xi, &x_value)) x_at = x_value;
  const bool stores_out = store_out_ || epilogue_.empty();
  Flatten f;
  InitPlaneFlatten(&f, cv_, &params_, stores_out, j_);
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
  reads_prologue_ = x_value.defined() && x_at.get() == x_value.get();
  source_views_ = std::move(source_views);
  flat_ = true;
  x_expr_ = x;
  epilogue_ = epi;
  out_ = out_view;
  out_idx_ = {out_idx_[0], out_idx_[1], PrimExpr(j_)};  // only stored when stores_out
}

bool SymConvKernel::FlatEpilogue(const Var& j, std::vector<Stmt>* epi, Buffer* out,
                                 std::vector<PrimExpr>* out_idx) const {
  const bool stores_out = store_out_ || epilogue_.empty();
  Flatten f;
  InitPlaneFlatten(&f, cv_, &params_, stores_out, j);
  if (!f.AtYX(cv_.out, out_idx_)) return false;
  epi->clear();
  for (const Stmt& st : epilogue_) epi->push_back(f.MutateStmt(st));
  *out = stores_out ? f.View(cv_.out) : cv_.out;
  *out_idx = {out_idx_[0], out_idx_[1], PrimExpr(j)};
  return f.ok;
}

PrimExpr SymConvKernel::NImage() const {
  VarMap map;
  map[cv_.loops[0]->loop_var.get()] = PrimExpr(n_);
  return Substitute(cv_.x_load->indices[0], map);
}

Stmt SymConvKernel::Tiling(const PrimExpr& ho, const PrimExpr& wo) {
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

int64_t SymConvKernel::RowTileCount(const PrimExpr& wo) const {
  if (flat_) return 1;
  const int64_t* w = ConstInt(wo);
  if (w == nullptr && wide_rows_only_) return 1;
  if (w != nullptr && (*w < kTileWidths[2] || *w >= kTileWidths[0])) return 1;
  return std::max<int64_t>(1, kMaxTileAccumulators / mr_);
}

PrimExpr SymConvKernel::RowTilesFit(const PrimExpr& wo) const {
  PrimExpr narrow = Lt(wo, I64(kTileWidths[0]));
  PrimExpr mid = MakeBinary(TirKind::kAnd, Ge(wo, I64(kTileWidths[0] + 1)), Lt(wo, I64(3 * kTileWidths[1] + 1)));
  return MakeBinary(TirKind::kAnd, Ge(wo, I64(kTileWidths[2])), MakeBinary(TirKind::kOr, narrow, mid));
}

Stmt SymConvKernel::ChannelTiles(const PrimExpr& ho, const PrimExpr& wo) {
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

Stmt SymConvKernel::TileLoop(const PrimExpr& ho, const PrimExpr& wo) {
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

PrimExpr SymConvKernel::FlatRowWidth(const PrimExpr& y) const {
  PrimExpr rest = hw_ - y * I64(kFlatRow);
  PrimExpr before_last = Min(I64(1), flat_rows_ - I64(1) - y);
  return arith::Simplify(rest - before_last * (rest - I64(kFlatRow)));
}

bool SymConvKernel::RowOuter() const {
  return cv_.o / mr_ > 1 && cv_.o * cv_.ki * cv_.kh * cv_.kw * 4 <= kRowOuterWeightBytes;
}

Stmt SymConvKernel::Row(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo) {
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
  // Flat rows too take WideRowTiles' exact cover of their 16-column
  // vectors (48s, then at most two 32s): a flat row of 80 (PP-OCRv4 det's
  // 8 x 10 planes) computed 96 columns as 2 x 48 where 48 + 32 is exact,
  // as the pinned schedule has it; 256 took 8 x 32, now 4 x 48 + 2 x 32.
  if (!spatial_ && mr_ * (kFlatTileWidth / 16) <= kMaxTileAccumulators) {
    chain = std::make_shared<IfThenElseNode>(Fits(wo, kFlatTileWidth), WideRowTiles(o0, y, wo), chain);
  }
  // A few columns past the row's last 16-column vector: vectors of output
  // channels (conv_symbolic_points.cc).
  if (PointColumnsApply()) chain = WithPointColumns(o0, y, wo, chain);
  return chain;
}

Stmt SymConvKernel::WideRowTiles(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo) {
  // k 16-column vectors cover the row; b = (3 - k % 3) % 3 tiles of 32 and
  // a = (k - 2b) / 3 of 48 make exactly 16k columns (k >= 3 here).
  const int64_t wide = kFlatTileWidth, narrow = kTileWidths[0];
  PrimExpr k = Div(wo + I64(15), I64(16));
  PrimExpr b = arith::Simplify(Mod(I64(3) - Mod(k, I64(3)), I64(3)));
  PrimExpr a = arith::Simplify(Div(k - b * I64(2), I64(3)));
  Var xa = MakeVar("xt" + std::to_string(wide)), x0a = MakeVar("x0_" + std::to_string(wide));
  Var xb = MakeVar("xt" + std::to_string(narrow)), x0b = MakeVar("x0_" + std::to_string(narrow));
  // With no 32-column tile (b == 0) the last 48-column tile may pass the
  // row's end by up to 15 columns: moved back to end at it, like Tiles.
  Stmt wides = MakeFor(xa, a, ForKind::kSerial,
                       std::make_shared<LetStmtNode>(x0a, Min(PrimExpr(xa) * I64(wide), wo - I64(wide)),
                                                     Tile(o0, y, PrimExpr(x0a), wide)));
  Stmt narrows = MakeFor(xb, b, ForKind::kSerial,
                         std::make_shared<LetStmtNode>(
                             x0b, Min(a * I64(wide) + PrimExpr(xb) * I64(narrow), wo - I64(narrow)),
                             Tile(o0, y, PrimExpr(x0b), narrow)));
  return Seq({wides, narrows});
}

Stmt SymConvKernel::Tiles(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo, int64_t nr) {
  Var xt = MakeVar("xt" + std::to_string(nr)), x0 = MakeVar("x0_" + std::to_string(nr));
  Stmt tile = Tile(o0, y, PrimExpr(x0), nr);
  PrimExpr start = nr == 1 ? PrimExpr(xt) : Min(PrimExpr(xt) * I64(nr), wo - I64(nr));
  tile = std::make_shared<LetStmtNode>(x0, start, tile);
  PrimExpr count = nr == 1 ? wo : Div(wo + I64(nr - 1), I64(nr));
  return MakeFor(xt, count, ForKind::kSerial, tile);
}

VarMap SymConvKernel::At(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, const Var& ii, const PrimExpr& jj,
          const Var& ri) const {
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

Stmt SymConvKernel::Tile(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, int64_t nr) {
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
  // Spatial tiles' rows are image rows of the one channel o0 (any channel).
  PrimExpr wv = Load(cv_.weight, spatial_ ? WeightIndex(o0, 1, I64(0), map) : WeightIndex(o0, mr_, PrimExpr(ii), map));
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
    xv = XAt(map);
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
    // A packed weight is one stream of rows of b * KH * KW floats (one input
    // channel of a block); without the hints, weights that are cold each
    // call (PP-OCRv4 det's 384 -> 384 on 8 x 10: 576 KiB each) read slower
    // packed than from OIHW's 8 streams.
    if (!spatial_ && source_views_.empty()) t = WithWeightPrefetch(o0, cc, t);
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
      parts.push_back(reduce(cs, sources_[k].count, Load(cv_.weight, WeightIndex(o0, mr_, PrimExpr(ii), at)),
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

std::vector<PrimExpr> SymConvKernel::WeightIndex(const PrimExpr& o0, int64_t step, const PrimExpr& ii,
                                                 const VarMap& map) const {
  VarMap at = map;
  at[cv_.loops[1]->loop_var.get()] = o0 + ii;
  std::vector<PrimExpr> idx;
  for (const PrimExpr& e : cv_.w_load->indices) idx.push_back(arith::Simplify(Substitute(e, at)));
  const int64_t b = cv_.wblock;
  if (b == 0) return idx;
  // idx is (o / b, c, ky, kx, o % b) at o = o0 + ii; the simplifier cannot
  // split it, not knowing that o0 is a multiple of step.
  if (step == b) {
    idx[0] = arith::Simplify(Div(o0, I64(b)));
    idx[4] = ii;
  } else if (step % b == 0) {
    idx[0] = arith::Simplify(Div(o0, I64(b)) + Div(ii, I64(b)));
    idx[4] = Mod(ii, I64(b));
  } else if (b % step == 0) {
    idx[0] = arith::Simplify(Div(o0, I64(b)));
    idx[4] = arith::Simplify(Mod(o0, I64(b)) + ii);
  }
  return idx;
}

Stmt SymConvKernel::WithWeightPrefetch(const PrimExpr& o0, const Var& c, Stmt taps) const {
  if (cv_.wblock != mr_) return taps;
  // Input channel c's row of the block at o0 (mr_ * KH * KW floats) is one
  // stream over c: hinted kPrefetchAheadBytes on, as the static kernel does
  // (conv_kernel_tile.cc), one hint a 64-byte line, clamped to the weight's
  // last row.
  const int64_t row_floats = mr_ * cv_.kh * cv_.kw, rows_total = cv_.o / mr_ * cv_.ki;
  const int64_t ahead_rows = (conv::kPrefetchAheadBytes + 4 * row_floats - 1) / (4 * row_floats);
  PrimExpr row = Min(Div(o0, I64(mr_)) * I64(cv_.ki) + PrimExpr(c) + I64(ahead_rows), I64(rows_total - 1));
  std::vector<Stmt> hints;
  for (int64_t f = 0; f < row_floats && f < 16 * conv::kMaxUnrolledPrefetchHints; f += 16) {
    PrimExpr at = Load(cv_.weight, {I64(0), row, I64(0), I64(0), I64(f)});
    hints.push_back(std::make_shared<EvaluateNode>(
        PrimExpr(std::make_shared<CallNode>(DType::Int32(), "prefetch", std::vector<PrimExpr>{at}))));
  }
  hints.push_back(std::move(taps));
  return Seq(hints);
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
