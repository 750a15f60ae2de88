#include "compiler/tir/conv_kernel.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace conv {

using namespace nest;  // NOLINT: the shared nest helpers

void ConvKernel::BeginWholeInputTiles() {
  nn_ = MakeVar("n");
  grp_ = MakeVar("g");
  col0_ = MakeVar("col0");
  qcol0_ = col0_;
  yend_ = I64(cv_.ho);
  q_index_ = [this](const PrimExpr& c, const PrimExpr& phase, const PrimExpr& pos) {
    PrimExpr chan = cv_.groups == 1 ? c : PrimExpr(grp_) * I64(cv_.ki) + c;
    return std::vector<PrimExpr>{PrimExpr(nn_), chan, phase, pos};
  };
}

Stmt ConvKernel::RowTileLoop() {
  int64_t rb_count = RowBlockCount();
  int64_t per_row = row_ncol_, per_block = per_row * cv_.ho;
  int64_t count = cv_.n * cv_.groups * rb_count * per_block;
  Var t = MakeVar("tile"), y = MakeVar("y"), ct = MakeVar("ct"), rb = MakeVar("rb");
  BeginWholeInputTiles();
  // The last column tile is moved back to end at the row's end: all its
  // columns are stored (its first few again, with the same values). With
  // dead lanes at its end LLVM split its accumulators into 8 + 4 + 2 + 1
  // lanes and spilled them (47 of 48 columns: 1.3x the flat tiles' time).
  const int64_t last_nr = (row_last_w_ + 15) / 16 * 16;
  Var x0 = MakeVar("x0");
  tile_y_ = PrimExpr(y);
  tile_x_ = PrimExpr(x0);
  PrimExpr tt(t);
  std::vector<std::pair<Var, PrimExpr>> lets = {
      {ct, Mod(tt, I64(per_row))},
      {y, Mod(Div(tt, I64(per_row)), I64(cv_.ho))},
      {rb, Mod(Div(tt, I64(per_block)), I64(rb_count))},
      {grp_, Mod(Div(tt, I64(per_block * rb_count)), I64(cv_.groups))},
      {nn_, Div(tt, I64(per_block * rb_count * cv_.groups))},
      {x0, Min(PrimExpr(ct) * I64(row_nr_), I64(cv_.wo - last_nr))},
      {col0_, PrimExpr(y) * I64(wq_) + PrimExpr(x0)}};
  const int full_nr = nr_;
  nr_ = static_cast<int>(row_nr_);
  Stmt inner = RowBlocks(rb);
  nr_ = static_cast<int>(last_nr);
  Stmt last = RowBlocks(rb);
  nr_ = full_nr;
  if (row_ncol_ > 1) {
    inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(ct), I64(row_ncol_ - 1)), inner, last);
  } else {
    inner = last;
  }
  for (size_t l = lets.size(); l-- > 0;) inner = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, inner);
  return MakeFor(t, I64(count), ParallelWork(count) ? ForKind::kParallel : ForKind::kSerial, inner);
}

Stmt ConvKernel::Build() {
  if (direct_) return BuildDirect();
  return band_rows_ > 0 ? BuildBands() : BuildWhole();
}

Stmt ConvKernel::Pack(const PrimExpr& n, const PrimExpr& src_ch, const PrimExpr& a0, const PrimExpr& rows, const Buffer& q,
          const std::function<std::vector<PrimExpr>(PrimExpr, PrimExpr)>& q_at) {
  std::vector<Stmt> phases;
  for (int64_t ph = 0; ph < RowPhases(); ++ph) {
    // iy = a*sh + ph - pt in [0, H)  <=>  a in [a_lo, a_hi); same for b.
    int64_t a_lo = std::clamp<int64_t>(CeilDiv(cv_.pt - ph, cv_.sh), 0, hq_);
    int64_t a_hi = std::clamp<int64_t>(CeilDiv(cv_.h + cv_.pt - ph, cv_.sh), a_lo, hq_);
    const int64_t cplanes = ColPlanes(), cstride = ColStride();
    std::vector<int64_t> b_lo(cplanes), b_hi(cplanes);
    int64_t common_lo = 0, common_hi = wq_;
    for (int64_t pw = 0; pw < cplanes; ++pw) {
      b_lo[pw] = std::clamp<int64_t>(CeilDiv(cv_.pl - ColShift(pw), cstride), 0, wq_);
      b_hi[pw] = std::clamp<int64_t>(CeilDiv(cv_.w + cv_.pl - ColShift(pw), cstride), b_lo[pw], wq_);
      common_lo = std::max(common_lo, b_lo[pw]);
      common_hi = std::min(common_hi, b_hi[pw]);
    }
    Var r = MakeVar("r");
    PrimExpr a = a0 + PrimExpr(r), row = PrimExpr(r) * I64(wq_);
    PrimExpr iy = a * I64(cv_.sh) + I64(ph - cv_.pt);
    auto plane = [&](int64_t pw) { return I64(ph * cplanes + pw); };
    // Zeroes [from, from + count) of a plane.
    auto zero = [&](int64_t pw, PrimExpr from, int64_t count) -> Stmt {
      return VectorLoop("z", I64(count), [&](PrimExpr z) {
        return Store(q, FloatImm(DType::Float32(), 0), q_at(plane(pw), from + z));
      });
    };
    auto copy_at = [&](int64_t pw, PrimExpr b) {
      PrimExpr ix = b * I64(cstride) + I64(ColShift(pw) - cv_.pl);
      return Store(q, WidenF32(Load(cv_.data, {n, src_ch, iy, ix})), q_at(plane(pw), row + b));
    };
    auto copy = [&](int64_t pw, int64_t from, int64_t to, ForKind kind) -> Stmt {
      Var b = MakeVar("b");
      return MakeFor(b, I64(to - from), kind, copy_at(pw, PrimExpr(b) + I64(from)));
    };
    std::vector<Stmt> parts, outside;
    if (cplanes > kMaxUnrolledColPlanes) {
      // Many column planes (a long column stride: Basic Pitch's 1x256/256): one
      // loop over the planes, each plane's inside columns [lo, hi) computed
      // from pw (b in range <=> b*cstride + shift - pl in [0, W)).
      Var pw = MakeVar("pw"), b = MakeVar("b");
      PrimExpr shift = shift_planes_ ? PrimExpr(pw) * I64(cv_.dw) : PrimExpr(pw);
      PrimExpr pln = I64(ph * cplanes) + PrimExpr(pw);
      auto zero_at = [&](PrimExpr from, PrimExpr count) -> Stmt {
        return VectorLoop("z", count, [&](PrimExpr z) {
          return Store(q, FloatImm(DType::Float32(), 0), q_at(pln, from + z));
        });
      };
      auto ceil_div = [&](PrimExpr x) { return Div(x + I64(cstride - 1), I64(cstride)); };
      PrimExpr lo = Min(Max(ceil_div(I64(cv_.pl) - shift), I64(0)), I64(wq_));
      PrimExpr hi = Min(Max(ceil_div(I64(cv_.w + cv_.pl) - shift), lo), I64(wq_));
      PrimExpr bb = PrimExpr(b) + lo;
      PrimExpr ix = bb * I64(cstride) + shift - I64(cv_.pl);
      Stmt copy_loop = MakeFor(b, hi - lo, ForKind::kSerial,
                               Store(q, WidenF32(Load(cv_.data, {n, src_ch, iy, ix})), q_at(pln, row + bb)));
      Stmt inside_row = MakeFor(pw, I64(cplanes), ForKind::kSerial,
                                Seq({zero_at(row, lo), copy_loop, zero_at(row + hi, I64(wq_) - hi)}));
      Stmt outside_row = MakeFor(pw, I64(cplanes), ForKind::kSerial, zero_at(row, I64(wq_)));
      if (a_hi > a_lo) {
        PrimExpr inside = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, a, I64(a_lo)),
                                     MakeBinary(TirKind::kLT, a, I64(a_hi)));
        phases.push_back(MakeFor(r, rows, ForKind::kSerial,
                                 std::make_shared<IfThenElseNode>(inside, inside_row, outside_row)));
      } else {
        phases.push_back(MakeFor(r, rows, ForKind::kSerial, outside_row));
      }
      continue;
    }
    for (int64_t pw = 0; pw < cplanes; ++pw) outside.push_back(zero(pw, row, wq_));
    if (a_hi > a_lo) {
      // With a stride, the phases' columns are copied in one loop over the
      // columns they share (the loads X[b*sw + pw - pl] of all pw form one
      // interleaved group that LLVM vectorizes with wide loads and
      // shuffles; a loop per phase was vectorized with gathers), and the
      // few columns at the edges one by one.
      bool shared = !shift_planes_ && cv_.sw > 1 && common_hi > common_lo;
      for (int64_t pw = 0; pw < cplanes; ++pw) {
        if (b_lo[pw] > 0) parts.push_back(zero(pw, row, b_lo[pw]));
        if (!shared && b_hi[pw] > b_lo[pw]) parts.push_back(copy(pw, b_lo[pw], b_hi[pw], ForKind::kVectorized));
        if (shared && common_lo > b_lo[pw]) parts.push_back(copy(pw, b_lo[pw], common_lo, ForKind::kSerial));
      }
      if (shared) {
        Var b = MakeVar("b");
        std::vector<Stmt> stores;
        for (int64_t pw = 0; pw < cplanes; ++pw) stores.push_back(copy_at(pw, PrimExpr(b) + I64(common_lo)));
        parts.push_back(MakeFor(b, I64(common_hi - common_lo), ForKind::kVectorized, Seq(stores)));
      }
      for (int64_t pw = 0; pw < cplanes; ++pw) {
        if (shared && b_hi[pw] > common_hi) parts.push_back(copy(pw, common_hi, b_hi[pw], ForKind::kSerial));
        if (wq_ > b_hi[pw]) parts.push_back(zero(pw, row + I64(b_hi[pw]), wq_ - b_hi[pw]));
      }
      PrimExpr inside = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, a, I64(a_lo)),
                                   MakeBinary(TirKind::kLT, a, I64(a_hi)));
      phases.push_back(MakeFor(r, rows, ForKind::kSerial,
                               std::make_shared<IfThenElseNode>(inside, Seq(parts), Seq(outside))));
    } else {
      phases.push_back(MakeFor(r, rows, ForKind::kSerial, Seq(outside)));
    }
  }
  return Seq(phases);
}

Stmt ConvKernel::PlaneLoop(const std::function<Stmt(const PrimExpr&)>& body) const {
  if (ColPlanes() > kMaxUnrolledColPlanes) {
    Var pl = MakeVar("pl");
    return MakeFor(pl, I64(planes_), ForKind::kSerial, body(PrimExpr(pl)));
  }
  std::vector<Stmt> parts;
  for (int64_t pl = 0; pl < planes_; ++pl) parts.push_back(body(I64(pl)));
  return Seq(parts);
}

Stmt ConvKernel::RowBlocks(const Var& rb) {
  PrimExpr group_base = PrimExpr(grp_) * I64(cv_.opg);
  Var o0 = MakeVar("o0");
  Stmt inner = std::make_shared<LetStmtNode>(o0, group_base + PrimExpr(rb) * I64(mr_), Tile(o0, mr_));
  // The channels left over take one tile of their own (rem_ rows): as
  // rem_ one-row tiles each had one or two accumulators, a chain of
  // dependent FMAs that waited on their latency (DeepCut's 150 = 6 x 24 + 6
  // channels of shift-plane tiles spent a fifth of their time there).
  if (rem_ != 0) {
    Var o1 = MakeVar("o0");
    Stmt last = std::make_shared<LetStmtNode>(o1, group_base + I64(full_ * mr_), Tile(o1, static_cast<int>(rem_)));
    inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(rb), I64(full_)), inner, last);
  }
  return inner;
}

Stmt ConvKernel::BuildBands() {
  q_ = nest::Float32Buffer(cv_.data->name + "_band", {I64(cv_.ki), I64(planes_), I64(band_len_)}, "global");
  Var t = MakeVar("band"), bi = MakeVar("bi"), y0 = MakeVar("y0"), yend = MakeVar("yend");
  nn_ = MakeVar("n");
  grp_ = MakeVar("g");
  col0_ = MakeVar("col0");
  qcol0_ = MakeVar("qcol0");
  yend_ = PrimExpr(yend);
  q_index_ = [](const PrimExpr& c, const PrimExpr& phase, const PrimExpr& pos) {
    return std::vector<PrimExpr>{c, phase, pos};
  };
  Var cp = MakeVar("cp");
  PrimExpr src_ch = PrimExpr(grp_) * I64(cv_.ki) + PrimExpr(cp);
  PrimExpr rows = Min(I64(band_rows_ + offa_max_ + 1), I64(hq_) - PrimExpr(y0));
  Stmt pack_rows = Pack(PrimExpr(nn_), src_ch, PrimExpr(y0), rows, q_, [&](PrimExpr plane, PrimExpr pos) {
    return std::vector<PrimExpr>{PrimExpr(cp), plane, pos};
  });
  if (GroupBands()) {
    // The last column tiles read past the packed rows (their outputs are
    // dropped): zeroed, so that no stale denormal or NaN of the task's
    // buffer slows the FMAs (RegNet's 784/16 3x3/2 at 14^2 read one stale
    // float a plane: 300 us against 190 with the whole input zeroed there).
    std::vector<Stmt> parts = {pack_rows};
    PrimExpr from = rows * I64(wq_);
    parts.push_back(PlaneLoop([&](const PrimExpr& pl) {
      return VectorLoop("z", I64(band_len_) - from, [&](PrimExpr z) {
        return Store(q_, FloatImm(DType::Float32(), 0), {PrimExpr(cp), pl, from + z});
      });
    }));
    pack_rows = Seq(parts);
  }
  Stmt pack = MakeFor(cp, I64(cv_.ki), ForKind::kSerial, pack_rows);
  Var rb = MakeVar("rb"), ct = MakeVar("ct");
  Stmt tiles;
  if (srows_ > 0) {
    Var o0 = MakeVar("o0");
    tile_y_ = PrimExpr(y0) + PrimExpr(rb) * I64(srows_);
    tile_x_ = PrimExpr(ct) * I64(nr_);
    Stmt inner = std::make_shared<LetStmtNode>(o0, PrimExpr(grp_), Tile(o0, static_cast<int>(srows_), true));
    inner = std::make_shared<LetStmtNode>(col0_, PrimExpr(y0) * I64(wq_) + PrimExpr(qcol0_), inner);
    inner = std::make_shared<LetStmtNode>(qcol0_, PrimExpr(rb) * I64(srows_ * wq_) + PrimExpr(ct) * I64(nr_), inner);
    PrimExpr row_groups = Div(PrimExpr(yend) - PrimExpr(y0) + I64(srows_ - 1), I64(srows_));
    tiles = MakeFor(rb, row_groups, ForKind::kSerial, MakeFor(ct, I64(CeilDiv(wq_, nr_)), ForKind::kSerial, inner));
  } else {
    Stmt inner = RowBlocks(rb);
    inner = std::make_shared<LetStmtNode>(col0_, PrimExpr(y0) * I64(wq_) + PrimExpr(qcol0_), inner);
    inner = std::make_shared<LetStmtNode>(qcol0_, PrimExpr(ct) * I64(nr_), inner);
    PrimExpr ncols = Div((PrimExpr(yend) - PrimExpr(y0)) * I64(wq_) + I64(nr_ - 1), I64(nr_));
    tiles = MakeFor(rb, I64(RowBlockCount()), ForKind::kSerial, MakeFor(ct, ncols, ForKind::kSerial, inner));
  }
  Stmt body = std::make_shared<AllocateNode>(q_, Seq({pack, tiles}));
  int64_t count = cv_.n * cv_.groups * nbands_;
  PrimExpr tt(t);
  std::vector<std::pair<Var, PrimExpr>> lets = {
      {bi, Mod(tt, I64(nbands_))},
      {grp_, Mod(Div(tt, I64(nbands_)), I64(cv_.groups))},
      {nn_, Div(tt, I64(nbands_ * cv_.groups))},
      {y0, PrimExpr(bi) * I64(band_rows_)},
      {yend, Min(I64(cv_.ho), PrimExpr(y0) + I64(band_rows_))},
  };
  for (size_t l = lets.size(); l-- > 0;) body = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, body);
  return MakeFor(t, I64(count), ParallelWork(count) ? ForKind::kParallel : ForKind::kSerial, body);
}

Stmt ConvKernel::BuildWhole() {
  q_ = nest::Float32Buffer(cv_.data->name + "_padded", {I64(cv_.n), I64(cv_.ch), I64(planes_), I64(plane_len_)}, "global");
  bool par = threads_ >= 2;
  int64_t pieces = std::min(hq_, std::max<int64_t>(1, CeilDiv(2 * kMinConvBandTasks, cv_.n * cv_.ch)));
  int64_t piece_rows = CeilDiv(hq_, pieces);
  pieces = CeilDiv(hq_, piece_rows);
  Var p = MakeVar("pack"), n = MakeVar("n"), ch = MakeVar("ch"), a0 = MakeVar("a0");
  Stmt pack = Pack(PrimExpr(n), PrimExpr(ch), PrimExpr(a0), Min(I64(piece_rows), I64(hq_) - PrimExpr(a0)), q_,
                   [&](PrimExpr plane, PrimExpr pos) {
                     return std::vector<PrimExpr>{PrimExpr(n), PrimExpr(ch), plane, PrimExpr(a0) * I64(wq_) + pos};
                   });
  // The columns past the packed rows (to plane_len_) are read by the last
  // column tiles for outputs that are dropped; zeroed so that they hold no
  // leftover denormals or NaNs. Unwritten, PP-OCRv4's SE convolutions on
  // 1 x 1 planes (120 -> 480 and 60 -> 240, 32-column tiles of one output
  // column) read 31 stale floats a tap and took 570 and 250 us; zeroed,
  // 40 to 50 and 12 (kernel profile, 1 thread).
  if (int64_t tail = plane_len_ - hq_ * wq_; tail > 0) {
    Stmt zeros = PlaneLoop([&](const PrimExpr& pl) {
      return VectorLoop("z", I64(tail), [&](PrimExpr z) {
        return Store(q_, FloatImm(DType::Float32(), 0), {PrimExpr(n), PrimExpr(ch), pl, I64(hq_ * wq_) + z});
      });
    });
    Stmt last_piece = std::make_shared<IfThenElseNode>(
        MakeBinary(TirKind::kGE, PrimExpr(a0) + I64(piece_rows), I64(hq_)), zeros, nullptr);
    pack = Seq({pack, last_piece});
  }
  PrimExpr pp(p);
  pack = std::make_shared<LetStmtNode>(a0, Mod(pp, I64(pieces)) * I64(piece_rows), pack);
  pack = std::make_shared<LetStmtNode>(ch, Mod(Div(pp, I64(pieces)), I64(cv_.ch)), pack);
  pack = std::make_shared<LetStmtNode>(n, Div(pp, I64(pieces * cv_.ch)), pack);
  int64_t pack_tasks = cv_.n * cv_.ch * pieces;
  pack = MakeFor(p, I64(pack_tasks), par && pack_tasks >= 2 ? ForKind::kParallel : ForKind::kSerial, pack);

  // Shift planes and column planes in several tiles: the last one is
  // narrower (TileLoop's last column tile).
  int64_t last_col = (shift_planes_ || ColumnPlaneTail()) && nr_last_ != nr_ ? cv_.ho * cv_.wo - nr_last_ : -1;
  return std::make_shared<AllocateNode>(q_, Seq({pack, row_tiles_ ? RowTileLoop() : TileLoop(last_col)}));
}

Stmt ConvKernel::TileLoop(int64_t last_col) {
  int64_t rb_count = RowBlockCount();
  int64_t count = cv_.n * cv_.groups * rb_count * jt_;
  Var t = MakeVar("tile");
  BeginWholeInputTiles();
  Var rb = MakeVar("rb");
  PrimExpr tt(t);
  // Column tiles fastest, or (RowBlocksFastest) row blocks fastest, or
  // (ColumnChunkTiles) every row block over one chunk of column tiles.
  const bool rb_fast = RowBlocksFastest(rb_count);
  const int64_t chunk = ColumnChunkTiles(rb_count);
  PrimExpr col_tile = rb_fast ? Mod(Div(tt, I64(rb_count)), I64(jt_)) : Mod(tt, I64(jt_));
  PrimExpr rb_index = rb_fast ? Mod(tt, I64(rb_count)) : Mod(Div(tt, I64(jt_)), I64(rb_count));
  if (chunk > 0) {
    // (chunk of column tiles, row block, column tile in the chunk); the
    // last chunk holds the jt_ % chunk tiles left (width below).
    PrimExpr idx = Mod(tt, I64(rb_count * jt_));
    PrimExpr first = Div(idx, I64(rb_count * chunk)) * I64(chunk);
    PrimExpr width = Min(I64(chunk), I64(jt_) - first);
    PrimExpr r = Mod(idx, I64(rb_count * chunk));
    col_tile = first + Mod(r, width);
    rb_index = Div(r, width);
  }
  PrimExpr start = col_tile * I64(nr_);
  std::vector<std::pair<Var, PrimExpr>> lets;
  if (last_col >= 0) {
    own0_ = MakeVar("own0");
    lets = {{own0_, start}, {col0_, Min(PrimExpr(own0_), I64(last_col))}};
  } else {
    lets = {{col0_, start}};
  }
  lets.push_back({rb, rb_index});
  lets.push_back({grp_, Mod(Div(tt, I64(jt_ * rb_count)), I64(cv_.groups))});
  lets.push_back({nn_, Div(tt, I64(jt_ * rb_count * cv_.groups))});
  Stmt inner = RowBlocks(rb);
  if (last_col >= 0 && nr_last_ < 0) {
    // The last few columns: one vector of the row block's channels each
    // (or, when the epilogue can't be stored flat, a 16-column tile ending
    // at H * W: last_col is H * W - 16).
    Var o0 = MakeVar("o0");
    Stmt last;
    if (Stmt rem = RemainderTile(o0, -nr_last_)) {
      last = std::make_shared<LetStmtNode>(o0, PrimExpr(grp_) * I64(cv_.opg) + PrimExpr(rb) * I64(mr_), rem);
    } else {
      int full_nr = nr_;
      nr_ = 16;
      last = RowBlocks(rb);
      nr_ = full_nr;
    }
    // A plane of remainder columns only (ConvKernel's gemv): no full tile.
    const bool all_remainder = -nr_last_ == cv_.ho * cv_.wo;
    inner = all_remainder ? last
                          : std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, col_tile, I64(jt_ - 1)), inner, last);
  } else if (last_col >= 0 && nr_last_ != nr_) {
    // The narrower last column tile: the same kernel built for its width.
    int full_nr = nr_;
    nr_ = nr_last_;
    Stmt last = RowBlocks(rb);
    nr_ = full_nr;
    inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, col_tile, I64(jt_ - 1)), inner, last);
  }
  for (size_t l = lets.size(); l-- > 0;) inner = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, inner);
  return MakeFor(t, I64(count), ParallelWork(count) ? ForKind::kParallel : ForKind::kSerial, inner);
}

Stmt ConvKernel::BuildDirect() {
  int64_t hw = cv_.ho * cv_.wo;
  auto view = std::make_shared<BufferNode>(*cv_.data);
  view->shape = {I64(cv_.n), I64(cv_.ch), I64(1), I64(hw)};
  q_ = view;
  for (ConcatSource& src : sources_) {
    auto part = std::make_shared<BufferNode>(*src.buffer);
    part->shape = {I64(cv_.n), I64(src.count), I64(1), I64(hw)};
    src.view = part;
  }
  return TileLoop(nr_last_ < 0 ? std::max<int64_t>(hw - 16, 0) : hw - nr_last_);
}

std::vector<ConvKernel::InputPart> ConvKernel::InputParts() const {
  if (sources_.empty()) return {{q_, 0, cv_.ki}};
  std::vector<InputPart> parts;
  for (const ConcatSource& src : sources_) parts.push_back({src.view, src.c0, src.count});
  return parts;
}

Buffer ConvKernel::FlatView(const Buffer& b) {
  auto view = std::make_shared<BufferNode>(*b);
  view->shape.pop_back();
  view->shape.back() = I64(Dim(b, b->shape.size() - 2) * Dim(b, b->shape.size() - 1));
  return view;
}

}  // namespace conv
}  // namespace tir
}  // namespace kiln
