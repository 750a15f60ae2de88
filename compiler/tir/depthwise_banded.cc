#include "compiler/tir/depthwise_banded.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace dw {

using namespace ir;  // NOLINT

namespace {

using nest::ConstInt;
using nest::I64;
using nest::IsVar;
using nest::IsZero;

constexpr int64_t kLanes = 16;
// Vectors of a tile of a block's last rows, at most (ShortColumns).
constexpr int64_t kMaxTailVectors = 8;
// Accumulators a tile of a block's last one or two rows aims for
// (ShortColumns; two FMA pipes x four cycles of latency is 8, and the
// skipped kernel rows shorten the chains).
constexpr int64_t kTailChains = 12;

PrimExpr S(const PrimExpr& e) { return arith::Simplify(e); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b))); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b))); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kMin, std::move(a), std::move(b))); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kMax, std::move(a), std::move(b))); }
PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLT, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kAnd, std::move(a), std::move(b)); }

// A loop, or nothing when its extent is the constant 0 (null).
Stmt For(const Var& v, const PrimExpr& extent, ForKind kind, Stmt body) {
  PrimExpr e = S(extent);
  const int64_t* c = ConstInt(e);
  if (c != nullptr && *c <= 0) return nullptr;
  return std::make_shared<ForNode>(v, I64(0), e, kind, std::move(body));
}

// if (cond) a else b, folded when the condition is a constant.
Stmt If(const PrimExpr& cond, Stmt a, Stmt b) {
  PrimExpr c = S(cond);
  if (const int64_t* k = ConstInt(c)) return *k ? a : b;
  if (!a && !b) return nullptr;
  if (!a) return std::make_shared<IfThenElseNode>(PrimExpr(std::make_shared<NotNode>(c)), b, nullptr);
  return std::make_shared<IfThenElseNode>(c, a, b);
}

Stmt Let(const Var& v, const PrimExpr& value, Stmt body) {
  if (!body) return nullptr;
  return std::make_shared<LetStmtNode>(v, S(value), std::move(body));
}

Stmt SeqOf(const std::vector<Stmt>& parts) {
  std::vector<Stmt> kept;
  for (const Stmt& s : parts)
    if (s) kept.push_back(s);
  if (kept.empty()) return nullptr;
  return Seq(kept);
}

// The smallest j >= 0 with j * s + phase - pad >= 0.
int64_t FirstInside(int64_t s, int64_t phase, int64_t pad) {
  int64_t a = pad - phase;
  return a <= 0 ? 0 : (a + s - 1) / s;
}

class Kernel {
 public:
  Kernel(const DepthwiseNest& d, const ScheduleKnobs& knobs) : d_(d) {
    const auto& L = d.loops;
    ho_ = L[2]->extent;
    wo_ = L[3]->extent;
    h_ = d.data->shape[2];
    w_ = d.data->shape[3];
    halo_r_ = (d.kh - 1) / d.sh;
    halo_c_ = (d.kw - 1) / d.sw;
    phases_ = d.sh * d.sw;
    int64_t r = knobs.Get("depthwise.rows");
    rows_ = r > 0 ? std::min<int64_t>(r, 8) : 4;
    int64_t c = knobs.Get("depthwise.cols");
    cols_ = c > 0 ? std::min<int64_t>(c, 4) : 2;
  }

  Stmt Build() {
    const auto& L = d_.loops;
    Var t = MakeVar("dw_task");
    const TaskPoint p = TaskImageChannel(d_, t);
    n_ = p.n, ch_ = p.ch, xn_ = p.xn, xc_ = p.xc;

    PrimExpr nvec = Div(wo_ + I64(kLanes - 1), I64(kLanes));
    PrimExpr pitch = S(nvec * I64(kLanes) + I64(halo_c_));
    // Output rows per block: as many as keep the band within kBandFloats
    // (at least one tile's, at most the plane's).
    PrimExpr fit = Div(I64(kBandFloats), I64(phases_) * pitch) - I64(halo_r_);
    PrimExpr rb = Min(ho_, Max(fit, I64(rows_)));
    PrimExpr plane = S((rb + I64(halo_r_)) * pitch);
    band_ = nest::Float32Buffer(d_.data->name + "_band", {S(I64(phases_) * plane)}, "global");
    // Symbolic ones named once (the indices use them), static ones folded.
    std::vector<std::pair<Var, PrimExpr>> lets;
    auto named = [&](const char* name, const PrimExpr& e) {
      if (ConstInt(e) != nullptr) return e;
      Var v = MakeVar(name);
      lets.push_back({v, e});
      return PrimExpr(v);
    };
    pitch_ = named("dw_pitch", pitch);
    rb_ = named("dw_block_rows", rb);
    plane_ = named("dw_plane", plane);

    Var b = MakeVar("dw_block"), y0 = MakeVar("dw_y0"), bh = MakeVar("dw_rows");
    y0_ = PrimExpr(y0);
    Stmt block = SeqOf({Copy(PrimExpr(bh)), Rows(PrimExpr(bh))});
    block = Let(bh, Min(rb_, ho_ - y0_), block);
    block = Let(y0, PrimExpr(b) * rb_, block);
    Stmt blocks = For(b, Div(ho_ + rb_ - I64(1), rb_), ForKind::kSerial, block);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) blocks = Let(it->first, it->second, blocks);
    Stmt task = std::make_shared<AllocateNode>(band_, blocks);
    return std::make_shared<ForNode>(t, I64(0), S(L[0]->extent * I64(d_.o)), ForKind::kParallel, task);
  }

 private:
  PrimExpr BandIndex(int64_t py, int64_t px, const PrimExpr& row, const PrimExpr& col) const {
    return S(I64(py * d_.sw + px) * plane_ + row * pitch_ + col);
  }

  // band[py, px][i][j] = X[iy, j * sw + px - pl], or 0 outside X.
  Stmt CopyAt(int64_t py, int64_t px, const PrimExpr& i, const PrimExpr& iy, const PrimExpr& j, bool checked) {
    PrimExpr ix = S(j * I64(d_.sw) + I64(px - d_.pl));
    std::vector<PrimExpr> to = {BandIndex(py, px, i, j)};
    Stmt copy = Store(band_, Load(d_.data, {xn_, xc_, iy, ix}), to);
    if (!checked) return copy;
    return If(And(Ge(ix, I64(0)), Lt(ix, w_)), copy, Store(band_, FloatImm(DType::Float32(), 0), to));
  }

  Stmt Zeros(int64_t py, int64_t px, const PrimExpr& i, const PrimExpr& from, const PrimExpr& count) {
    Var z = MakeVar("dz");
    return For(z, count, ForKind::kVectorized,
               Store(band_, FloatImm(DType::Float32(), 0), {BandIndex(py, px, i, from + PrimExpr(z))}));
  }

  // The band rows of the block starting at output row y0_ with `bh` rows.
  //
  // One loop over the band rows, the row phases of a band row side by side:
  // the input's rows in order, as the static band kernel copies them (a
  // loop per row phase read every other input row, twice over the input,
  // and its loads stalled: 96 ch 80^2 -> 40^2 3x3/2 spent half its time in
  // the copy's first load). (The row phases as a loop inside it, not
  // unrolled, took 1.3x the CPU time at 192 ch 40^2 -> 20^2 5x5/2.)
  Stmt Copy(const PrimExpr& bh) {
    std::vector<Stmt> phases;
    Var iv = MakeVar("bi");
    PrimExpr i(iv);
    for (int64_t py = 0; py < d_.sh; ++py) {
      PrimExpr iy = S((y0_ + i) * I64(d_.sh) + I64(py - d_.pt));
      // Columns [lo, hi) are inside X for every column phase; a phase's
      // last inside column is at most hi (the phases' ends differ by one).
      int64_t lo = 0;
      PrimExpr hi = pitch_;
      for (int64_t px = 0; px < d_.sw; ++px) {
        lo = std::max(lo, FirstInside(d_.sw, px, d_.pl));
        hi = Min(hi, Div(w_ - I64(1) + I64(d_.pl - px), I64(d_.sw)) + I64(1));
      }
      PrimExpr hi2 = Max(hi, I64(lo));
      PrimExpr count = S(hi2 - I64(lo));
      std::vector<Stmt> row, outside;
      // The interior in chunks of 16 columns, the last moved back to end at
      // hi (a constant-extent vector loop: wide loads and shuffles for a
      // column stride); under 16 columns one by one.
      Var ct = MakeVar("bc"), c0 = MakeVar("bc0"), cj = MakeVar("bj"), cs = MakeVar("bs");
      std::vector<Stmt> chunk_body, narrow_body;
      for (int64_t px = 0; px < d_.sw; ++px) {
        chunk_body.push_back(CopyAt(py, px, i, iy, PrimExpr(c0) + PrimExpr(cj), false));
        narrow_body.push_back(CopyAt(py, px, i, iy, PrimExpr(cs) + I64(lo), false));
      }
      Stmt chunk = For(cj, I64(kLanes), ForKind::kVectorized, SeqOf(chunk_body));
      chunk = Let(c0, I64(lo) + Min(PrimExpr(ct) * I64(kLanes), count - I64(kLanes)), chunk);
      Stmt chunks = For(ct, Div(count + I64(kLanes - 1), I64(kLanes)), ForKind::kSerial, chunk);
      Stmt narrow = For(cs, count, ForKind::kSerial, SeqOf(narrow_body));
      row.push_back(If(Ge(count, I64(kLanes)), chunks, narrow));
      for (int64_t px = 0; px < d_.sw; ++px) {
        // Left of the interior: static, a few columns with their test.
        for (int64_t j = 0; j < lo; ++j) row.push_back(CopyAt(py, px, i, iy, I64(j), true));
        // Column stride 1: every column from hi2 on is outside X (one
        // zero loop, not a column with its test and then the loop).
        if (d_.sw == 1) {
          row.push_back(Zeros(py, px, i, hi2, S(pitch_ - hi2)));
          outside.push_back(Zeros(py, px, i, I64(0), pitch_));
          continue;
        }
        // At hi2 (when inside the band): the phase's last column, if inside.
        row.push_back(If(Lt(hi2, pitch_), CopyAt(py, px, i, iy, hi2, true), nullptr));
        // Zeros past it.
        row.push_back(Zeros(py, px, i, S(hi2 + I64(1)), S(pitch_ - hi2 - I64(1))));
        outside.push_back(Zeros(py, px, i, I64(0), pitch_));
      }
      phases.push_back(If(And(Ge(iy, I64(0)), Lt(iy, h_)), SeqOf(row), SeqOf(outside)));
    }
    return For(iv, S(bh + I64(halo_r_)), ForKind::kSerial, SeqOf(phases));
  }

  // The block's output rows: tiles of rows_ rows, the last moved back; a
  // block of fewer rows in tiles of one.
  Stmt Rows(const PrimExpr& bh) {
    Var rt = MakeVar("rt");
    PrimExpr full = Div(bh, I64(rows_));
    Stmt tiles = For(rt, full, ForKind::kSerial, Columns(S(PrimExpr(rt) * I64(rows_)), rows_));
    // The rest, r < rows_ rows, one tile of r rows (a branch per r: the
    // short planes of PP-OCR, 3 or 6 rows, recomputed a third of their
    // rows when the last tile moved back).
    PrimExpr rest = Mod(bh, I64(rows_)), y = S(full * I64(rows_));
    Stmt tail;
    for (int64_t r = rows_ - 1; r >= 1; --r) {
      Stmt one = Columns(y, r);
      tail = tail ? If(MakeBinary(TirKind::kEQ, rest, I64(r)), one, tail) : If(MakeBinary(TirKind::kEQ, rest, I64(r)), one, nullptr);
    }
    return SeqOf({tiles, tail});
  }

  // Output rows [ty, ty + rows) of the block, every column: tiles of cols_
  // vectors, then the row's last columns.
  //
  // Stride 1, tiles of rows_ rows: the last columns go into the last tile,
  // widened to take them (the vectors from the last whole tile's start to
  // the row's end, the last moved back to end there: 3 or 4 vectors with
  // tiles of 2; a row of 17 to 31 columns one tile of 2 vectors, the second
  // moved back). A tile of one vector has too few accumulators to hide the
  // FMAs' latency (4 rows: four chains of 25 FMAs at 5x5), so it took as
  // long as a whole tile of two: CPU time per call, 1 thread, hard-swish,
  // symbolic H and W, same run: 384 ch 20^2 5x5 149 -> 110 us, 192 ch 40^2
  // 217 -> 150 us (pinned 73 and 145).
  //
  // Otherwise (strided planes, and the block's last rows; row stride
  // alone a two-vector tile for a rest of 17 to 31 columns) tiles of one
  // vector, the last moved back to end at the row's end: the widened tiles
  // took 1.2x the CPU time at 192 ch 40^2 -> 20^2 5x5/2 (its 25 weights and
  // 8 accumulators are more than the 32 vector registers; 96 ch 80^2 ->
  // 40^2 3x3/2 and 48 ch 160^2 -> 80^2 level), and the block's last rows,
  // a tile at most, are not worth their code.
  Stmt Columns(const PrimExpr& ty, int64_t rows) {
    const int64_t wide = cols_ * kLanes;
    Var ct = MakeVar("ct");
    PrimExpr main_tiles = Div(wo_, I64(wide));
    PrimExpr done = S(main_tiles * I64(wide));
    PrimExpr rest = S(wo_ - done);
    auto contiguous = [&](const PrimExpr& x0, int64_t count) {
      std::vector<PrimExpr> xs;
      for (int64_t k = 0; k < count; ++k) xs.push_back(S(x0 + I64(k * kLanes)));
      return xs;
    };
    auto whole_tiles = [&](const PrimExpr& count) {
      return For(ct, count, ForKind::kSerial, Tile(ty, rows, contiguous(PrimExpr(ct) * I64(wide), cols_), nullptr));
    };
    // A row narrower than a vector: one, its columns stored one by one.
    Stmt narrow = Tile(ty, rows, {I64(0)}, &wo_);
    if (Short(rows)) return ShortColumns(ty, rows, narrow);
    if (d_.sh > 1 && d_.sw == 1 && rows == rows_ && cols_ >= 2) {
      // Row stride only: 17 to 31 columns left take one tile of two
      // vectors, the second moved back to end at the row's end, as the
      // pinned kernel's two-vector tiles do; 1 to 16 one vector. In PP-OCR's
      // classifier at 2 x 3 x 32 x 100 (3x3/(2, 1), rows of 50: a whole
      // tile, then 18 columns), kernel CPU time per call inside the model,
      // median of 21 alternating traced rounds, 1 thread, busy machine:
      // 24 ch 8 x 50 -> 4 x 50 4.79 -> 4.59 us (pinned 2.85), 8 ch 16 x 50
      // -> 8 x 50 3.11 -> 2.97 (pinned 1.90). The widened tile of stride 1
      // (4 rows x 4 vectors) lost there: 4.77 -> 5.13 us for the first (its
      // 16 accumulators, 9 weights and the epilogue's constants spill).
      Stmt pair = Tile(ty, rows, {done, S(wo_ - I64(kLanes))}, nullptr);
      Stmt one = Tile(ty, rows, {S(wo_ - I64(kLanes))}, nullptr);
      Stmt rest_tile = If(Ge(rest, I64(kLanes + 1)), pair, If(Ge(rest, I64(1)), one, nullptr));
      return SeqOf({whole_tiles(main_tiles), If(Ge(wo_, I64(kLanes)), rest_tile, narrow)});
    }
    if (d_.sh * d_.sw > 1 || rows < rows_ || cols_ < 2) {
      Var vt = MakeVar("vt"), vx = MakeVar("vx");
      Stmt one = Let(vx, Min(done + PrimExpr(vt) * I64(kLanes), wo_ - I64(kLanes)), Tile(ty, rows, {PrimExpr(vx)}, nullptr));
      Stmt vectors = For(vt, Div(rest + I64(kLanes - 1), I64(kLanes)), ForKind::kSerial, one);
      return SeqOf({whole_tiles(main_tiles), If(Ge(wo_, I64(kLanes)), vectors, narrow)});
    }
    // All whole tiles but the last, then the last widened by ceil(rest /
    // 16) vectors, the last of them ending at the row's end.
    PrimExpr last = S(done - I64(wide));
    Stmt widened;
    for (int64_t extra = 1; extra <= cols_; ++extra) {
      std::vector<PrimExpr> xs = contiguous(last, cols_);
      for (int64_t k = 0; k + 1 < extra; ++k) xs.push_back(S(done + I64(k * kLanes)));
      xs.push_back(S(wo_ - I64(kLanes)));
      Stmt t = Tile(ty, rows, xs, nullptr);
      // rest in ((extra - 1) * 16, extra * 16]
      widened = widened ? If(Ge(rest, I64((extra - 1) * kLanes + 1)), t, widened) : t;
    }
    Stmt with_rest = SeqOf({whole_tiles(S(main_tiles - I64(1))), widened});
    // Rows under one whole tile (16 <= wo < wide): cols_ vectors, the last
    // moved back to end at the row's end.
    std::vector<PrimExpr> short_xs;
    for (int64_t k = 0; k < cols_; ++k) short_xs.push_back(Min(I64(k * kLanes), wo_ - I64(kLanes)));
    Stmt short_row = Tile(ty, rows, short_xs, nullptr);
    Stmt wide_row = If(Ge(rest, I64(1)), with_rest, whole_tiles(main_tiles));
    return If(Ge(wo_, I64(wide)), wide_row, If(Ge(wo_, I64(kLanes)), short_row, narrow));
  }

  // Whether a tile of `rows` rows (a block's last) takes ShortColumns and
  // skips the kernel rows outside the input (Tile): at most half a whole
  // tile's rows, one column phase, chains of 25 or more FMAs. In PP-OCR's
  // classifier at 1 x 48 x 192 (CPU time per kernel call, same run), two
  // rows of a 3x3 plane (32 ch 6 x 96) took 3.56 -> 4.2 us in the wide
  // tiles, which they fill without skipping a kernel row. Two rows at row
  // stride 2 (5x5/(2, 1)) lost in the per-tap loops (104 ch 3 x 96 -> 2 x
  // 96: 12.9 -> 15.9 us with 6 vectors) but gain since a tile of two rows
  // loads each band row once (BandRowTaps): 2 x 3 x 32 x 100, 1 thread,
  // input 104 ch 2 x 50 10.5 -> 9.8 us, 88 ch 11.1 -> 8.2, 40 ch 5.3 -> 3.8
  // (median of 3 rounds of each kernel's fastest call); the model 0.93-0.95x.
  bool Short(int64_t rows) const {
    return rows * 2 <= rows_ && d_.sw == 1 && cols_ >= 2 && d_.kh * d_.kw >= 25;
  }

  // A block's last one or two rows (Short): tiles of
  // up to kTailChains accumulators, 8 vectors for one row, 6 for two; then
  // the rest of the row in one tile of as many vectors as it needs, the
  // last moved back to end at the row's end. Tiles of one vector left each
  // chain of kh x kw FMAs waiting on its latency; on planes 1 or 2 rows
  // tall (PP-OCR's classifier at height 32, 5x5 after strides (2, 1)) they
  // were the whole kernel. With the skipped kernel rows (Tile), 200 ch 1 x
  // 50 5x5 + hard-swish, batch 2, 1 thread, CPU time per call: 28.7 -> 12.6
  // us (pinned 15.9), 2 x 50 37.5 -> 26.5 (pinned 18.2), 2 x 96 42.0 ->
  // 35.4 (pinned 32.2). Three rows gained nothing from wider tiles (3 x 3
  // or 3 x 4 vectors: 3 x 96 54.8 -> 65-68 us) and keep theirs, as does
  // column stride 2 (its phases' loads and 25 weights leave no registers).
  Stmt ShortColumns(const PrimExpr& ty, int64_t rows, const Stmt& narrow) {
    const int64_t per = std::min<int64_t>(kMaxTailVectors, (kTailChains + rows - 1) / rows);
    const int64_t wide = per * kLanes;
    Var ct = MakeVar("ct");
    PrimExpr main_tiles = Div(wo_, I64(wide));
    PrimExpr done = S(main_tiles * I64(wide));
    PrimExpr rest = S(wo_ - done);
    std::vector<PrimExpr> xs;
    for (int64_t k = 0; k < per; ++k) xs.push_back(S(PrimExpr(ct) * I64(wide) + I64(k * kLanes)));
    Stmt whole = For(ct, main_tiles, ForKind::kSerial, Tile(ty, rows, xs, nullptr));
    // rest in ((m - 1) * 16, m * 16]: m vectors from `done`, the last at wo - 16.
    Stmt last;
    for (int64_t m = 1; m <= per; ++m) {
      std::vector<PrimExpr> ms;
      for (int64_t k = 0; k + 1 < m; ++k) ms.push_back(S(done + I64(k * kLanes)));
      ms.push_back(S(wo_ - I64(kLanes)));
      Stmt t = Tile(ty, rows, ms, nullptr);
      last = last ? If(Ge(rest, I64((m - 1) * kLanes + 1)), t, last) : t;
    }
    Stmt wide_row = SeqOf({whole, If(Ge(rest, I64(1)), last, nullptr)});
    return If(Ge(wo_, I64(kLanes)), wide_row, narrow);
  }

  // Output rows [ty, ty + rows) x the vectors starting at columns `xs`:
  // every tap's FMA into acc, then the columns stored (`narrow`: only that
  // many of the one vector, one by one). Vectors may overlap (their common
  // columns computed and stored twice, the same values).
  Stmt Tile(const PrimExpr& ty, int64_t rows, const std::vector<PrimExpr>& xs, const PrimExpr* narrow) {
    DType f32 = DType::Float32();
    const int64_t cols = static_cast<int64_t>(xs.size());
    // (Not "acc": the symbolic schedule's tests count their own tiles by that name.)
    Buffer acc = nest::Float32Buffer("dw_acc", {I64(rows), I64(cols * kLanes)}, "local");
    // One unrolled loop over the rows, a 16-lane vector loop per vector.
    auto grid = [&](const std::string& tag, const std::function<Stmt(const PrimExpr&, int64_t, const PrimExpr&)>& body) {
      Var ii = MakeVar("ii" + tag);
      std::vector<Stmt> vecs;
      for (int64_t k = 0; k < cols; ++k) {
        Var jj = MakeVar("jj" + tag);
        vecs.push_back(std::make_shared<ForNode>(jj, I64(0), I64(kLanes), ForKind::kVectorized,
                                                 body(PrimExpr(ii), k, PrimExpr(jj))));
      }
      return std::make_shared<ForNode>(ii, I64(0), I64(rows), ForKind::kUnrolled, Seq(vecs));
    };
    // Stride 2 both ways: each vector's whole chain in one vector loop,
    // zero then every tap's FMA. (A vector loop per tap, every vector and
    // row in turn, kept their one-vector tiles' accumulators in the stack
    // frame: 192 ch 40^2 -> 20^2 5x5/2 took 2x the time of this form, 1
    // thread.) The others keep the loop per tap: in one loop, stride 1's
    // widened tiles with hard-swish (192 ch 40^2 5x5 in PP-OCRv4's detector)
    // took 1.05-1.07x, and 240 ch 24 x 80 5x5/(2,1) + hard-swish 1.11x.
    std::vector<Stmt> steps;
    auto fma_at = [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj, int64_t ky, int64_t kx) {
      std::vector<PrimExpr> at = {ii, I64(k * kLanes) + jj};
      PrimExpr w = Load(d_.weight, {ch_, I64(0), I64(ky), I64(kx)});
      PrimExpr row = ty + ii + I64(ky / d_.sh);
      PrimExpr col = xs[k] + jj + I64(kx / d_.sw);
      PrimExpr x = Load(band_, {BandIndex(ky % d_.sh, kx % d_.sw, row, col)});
      PrimExpr call(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, Load(acc, at)}));
      return Store(acc, call, at);
    };
    if (d_.sh > 1 && d_.sw > 1) {
      steps.push_back(grid("", [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj) {
        std::vector<Stmt> chain = {Store(acc, FloatImm(f32, 0), {ii, I64(k * kLanes) + jj})};
        for (int64_t ky = 0; ky < d_.kh; ++ky)
          for (int64_t kx = 0; kx < d_.kw; ++kx) chain.push_back(fma_at(ii, k, jj, ky, kx));
        return Seq(chain);
      }));
    } else if (rows > 1 && d_.sw == 1) {
      steps.push_back(grid("_init", [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj) {
        return Store(acc, FloatImm(f32, 0), {ii, I64(k * kLanes) + jj});
      }));
      steps.push_back(BandRowTaps(ty, rows, xs, acc, Short(rows)));
    } else {
      steps.push_back(grid("_init", [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj) {
        return Store(acc, FloatImm(f32, 0), {ii, I64(k * kLanes) + jj});
      }));
      // A block's last one or two rows (Short) skip the kernel rows whose
      // taps read only rows outside the input (the band's zeros) for every
      // row of the tile: on a plane one row tall, 4 of a 5x5 kernel's 5
      // rows. (The other tiles keep their taps unconditional.)
      const bool skip = Short(rows);
      for (int64_t ky = 0; ky < d_.kh; ++ky) {
        std::vector<Stmt> taps;
        for (int64_t kx = 0; kx < d_.kw; ++kx)
          taps.push_back(grid("", [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj) { return fma_at(ii, k, jj, ky, kx); }));
        if (!skip) {
          steps.insert(steps.end(), taps.begin(), taps.end());
          continue;
        }
        // Input rows of tap ky over the tile's rows: first .. last, step sh.
        PrimExpr first = S((y0_ + ty) * I64(d_.sh) + I64(ky - d_.pt));
        PrimExpr last = S(first + I64((rows - 1) * d_.sh));
        Stmt group = If(And(Lt(first, h_), Ge(last, I64(0))), Seq(taps), nullptr);
        if (group) steps.push_back(group);
      }
    }
    // Vector k's columns (its 16 lanes, or the `narrow` ones one by one).
    Var ii = MakeVar("ii_out");
    auto stores_of = [&](int64_t k) {
      Var xx = MakeVar("xx");
      PrimExpr value = Load(acc, {PrimExpr(ii), I64(k * kLanes) + PrimExpr(xx)});
      std::vector<PrimExpr> at = {n_, ch_, S(y0_ + ty + PrimExpr(ii)), S(xs[k] + PrimExpr(xx))};
      Stmt store = StoresAt(d_, value, at);
      return narrow != nullptr ? For(xx, *narrow, ForKind::kSerial, store)
                               : For(xx, I64(kLanes), ForKind::kVectorized, store);
    };
    std::vector<Stmt> vecs;
    for (int64_t k = 0; k < cols; ++k) vecs.push_back(stores_of(k));
    steps.push_back(std::make_shared<ForNode>(ii, I64(0), I64(rows), ForKind::kUnrolled, Seq(vecs)));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // The taps of a tile of `rows` > 1 rows at column stride 1, band row by
  // band row:
  // each band row's vectors at a column offset loaded once into `line` and
  // fed to every (output row, kernel row) pair that reads them. The tap
  // loops of Tile load them once per pair, and with a run-time pitch LLVM
  // does not see that (ty + ii + ky) * pitch is one address for the pairs
  // of equal ii + ky, so it reloads: 3 to 4-row tiles ran at half the
  // pinned kernel's FMA rate, whose constant pitch folds the addresses.
  // Input rows in order, so each accumulator still takes its taps kernel
  // row by kernel row, column by column (the same sums as the tap loops).
  // `skip` (Short): an input row outside the input (the band's zeros)
  // skips its loads and FMAs.
  Stmt BandRowTaps(const PrimExpr& ty, int64_t rows, const std::vector<PrimExpr>& xs, const Buffer& acc, bool skip) {
    DType f32 = DType::Float32();
    const int64_t cols = static_cast<int64_t>(xs.size());
    Buffer line = nest::Float32Buffer("dw_line", {I64(cols * kLanes)}, "local");
    const int64_t span = (rows - 1) * d_.sh + d_.kh;  // input rows the tile reads
    std::vector<Stmt> groups;
    for (int64_t v = 0; v < span; ++v) {
      const int64_t py = v % d_.sh, r = v / d_.sh;
      // The column offsets as an unrolled loop: its 16-lane loops are then
      // emitted as explicit vectors (kernel_emitter.cc), not as loops that
      // LLVM's loop passes vectorize one by one (4x the compile time).
      Var kx = MakeVar("kx");
      std::vector<Stmt> taps;
      for (int64_t k = 0; k < cols; ++k) {
        Var jj = MakeVar("jj_line");
        PrimExpr col = xs[k] + PrimExpr(jj) + PrimExpr(kx);
        Stmt load = Store(line, Load(band_, {BandIndex(py, 0, ty + I64(r), col)}), {I64(k * kLanes) + PrimExpr(jj)});
        taps.push_back(std::make_shared<ForNode>(jj, I64(0), I64(kLanes), ForKind::kVectorized, load));
      }
      for (int64_t ii = 0; ii < rows; ++ii) {
        const int64_t ky = v - ii * d_.sh;
        if (ky < 0 || ky >= d_.kh) continue;
        PrimExpr w = Load(d_.weight, {ch_, I64(0), I64(ky), PrimExpr(kx)});
        for (int64_t k = 0; k < cols; ++k) {
          Var jj = MakeVar("jj");
          std::vector<PrimExpr> at = {I64(ii), I64(k * kLanes) + PrimExpr(jj)};
          PrimExpr x = Load(line, {I64(k * kLanes) + PrimExpr(jj)});
          PrimExpr call(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, Load(acc, at)}));
          taps.push_back(std::make_shared<ForNode>(jj, I64(0), I64(kLanes), ForKind::kVectorized, Store(acc, call, at)));
        }
      }
      Stmt group = std::make_shared<ForNode>(kx, I64(0), I64(d_.kw), ForKind::kUnrolled, Seq(taps));
      if (skip) {
        PrimExpr iy = S((y0_ + ty) * I64(d_.sh) + I64(v - d_.pt));
        group = If(And(Ge(iy, I64(0)), Lt(iy, h_)), group, nullptr);
      }
      if (group) groups.push_back(group);
    }
    return std::make_shared<AllocateNode>(line, Seq(groups));
  }

  const DepthwiseNest& d_;
  PrimExpr ho_, wo_, h_, w_, pitch_, rb_, plane_, n_, ch_, xn_, xc_, y0_;
  int64_t halo_r_ = 0, halo_c_ = 0, phases_ = 1, rows_ = 4, cols_ = 2;
  Buffer band_;
};

}  // namespace

namespace {

// A load at the loop point of the (n, o, y, x) loops, or 0 for a loop of
// extent 1 (legalize indexes a batch of one with 0).
bool AtLoopPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& L) {
  if (idx.size() != 4) return false;
  for (size_t k = 0; k < 4; ++k) {
    if (IsVar(idx[k], L[k]->loop_var.get())) continue;
    const int64_t* ext = ConstInt(L[k]->extent);
    if (ext == nullptr || *ext != 1 || !IsZero(idx[k])) return false;
  }
  return true;
}

// Epilogue statements: stores at the loop point (not to C, X or W), C and
// what they stored read only at the loop point, nothing read before it is
// stored (overlapping tiles store some points twice: the same values).
bool EpilogueOk(const DepthwiseNest& d) {
  std::unordered_set<const VarNode*> stored;
  for (const Stmt& st : d.epilogue) {
    const auto* store = As<BufferStoreNode>(st);
    if (store == nullptr || store->indices.size() != 4) return false;
    for (size_t k = 0; k < 4; ++k)
      if (!IsVar(store->indices[k], d.loops[k]->loop_var.get())) return false;
    const VarNode* dst = store->buffer->data.get();
    if (dst == d.out->data.get() || dst == d.data->data.get() || dst == d.weight->data.get()) return false;
    for (const BufferLoadNode* l : nest::RefsOf(st).load_nodes) {
      const VarNode* b = l->buffer->data.get();
      if ((b == d.out->data.get() || stored.count(b)) && !AtLoopPoint(l->indices, d.loops)) return false;
      if (b == dst && !stored.count(b)) return false;
    }
    stored.insert(dst);
  }
  return true;
}

}  // namespace

bool MatchDepthwiseNest(const Stmt& s, DepthwiseNest* d) {
  Stmt body;
  std::vector<const ForNode*> L = nest::PeelNest(s, &body);
  d->epilogue.clear();
  d->store_out = true;
  if (L.size() == 4) {
    // The reduction's loops, then the epilogue, inside (n, o, y, x).
    const auto* seq = As<SeqStmtNode>(body);
    if (seq == nullptr || seq->seq.size() < 2) return false;
    Stmt inner_body;
    std::vector<const ForNode*> inner = nest::PeelNest(seq->seq[0], &inner_body);
    if (inner.size() != 3) return false;
    L.insert(L.end(), inner.begin(), inner.end());
    d->epilogue.assign(seq->seq.begin() + 1, seq->seq.end());
    body = inner_body;
  }
  if (L.size() != 7) return false;
  // (The default schedule may have made the outer loop parallel already.)
  for (const ForNode* l : L)
    if (!IsZero(l->min) || l->for_kind == ForKind::kVectorized) return false;
  const int64_t* o = ConstInt(L[1]->extent);
  const int64_t* ki = ConstInt(L[4]->extent);
  const int64_t* kh = ConstInt(L[5]->extent);
  const int64_t* kw = ConstInt(L[6]->extent);
  if (o == nullptr || ki == nullptr || kh == nullptr || kw == nullptr || *o <= 0 || *ki != 1 || *kh <= 0 || *kw <= 0)
    return false;
  conv::ConvReduction r;
  if (!conv::MatchConvReduction(body, L, &r) || r.w_load->indices.size() != 4) return false;
  if (r.dh != 1 || r.dw != 1 || r.pt < 0 || r.pl < 0) return false;
  if (!r.inside.defined() && (r.pt != 0 || r.pl != 0)) return false;
  if (r.data->shape.size() != 4 || !r.data->strides.empty() || r.data->dtype != DType::Float32()) return false;
  // Output channel o reads input channel o, of a tensor with o channels.
  VarMap at = {{L[4]->loop_var.get(), I64(0)}};
  PrimExpr ch = arith::Simplify(Substitute(r.x_load->indices[1], at));
  if (!IsVar(ch, L[1]->loop_var.get()) || !arith::CanProveEqual(r.data->shape[1], I64(*o))) return false;
  // X's image: the batch loop's variable, or 0 with a batch of one.
  const int64_t* n_ext = ConstInt(L[0]->extent);
  const PrimExpr& xn = r.x_load->indices[0];
  if (!IsVar(xn, L[0]->loop_var.get()) && !(IsZero(xn) && n_ext != nullptr && *n_ext == 1)) return false;
  for (size_t k = 0; k < 4; ++k)
    if (!nest::ProvenSameExtent(r.out->shape[k], L[k]->extent))
      return false;
  d->loops = L;
  d->out = r.out, d->data = r.data, d->weight = r.weight, d->x_load = r.x_load;
  d->o = *o, d->kh = *kh, d->kw = *kw, d->sh = r.sh, d->sw = r.sw, d->pt = r.pt, d->pl = r.pl;
  d->symbolic = false;
  for (const ForNode* l : L) d->symbolic |= ConstInt(l->extent) == nullptr;
  for (const PrimExpr& e : r.data->shape) d->symbolic |= ConstInt(e) == nullptr;
  return EpilogueOk(*d);
}

PrimExpr TakesRow(const DepthwiseNest& d) { return Ge(d.loops[3]->extent, I64(kLanes)); }

Stmt BuildBandedDepthwise(const DepthwiseNest& d, const ScheduleKnobs& knobs) { return Kernel(d, knobs).Build(); }

TaskPoint TaskImageChannel(const DepthwiseNest& d, const Var& t) {
  const auto& L = d.loops;
  const int64_t* n_ext = ConstInt(L[0]->extent);
  bool one_image = n_ext != nullptr && *n_ext == 1;
  TaskPoint p;
  p.n = one_image ? I64(0) : Div(PrimExpr(t), I64(d.o));
  p.ch = one_image ? PrimExpr(t) : Mod(PrimExpr(t), I64(d.o));
  VarMap at = {{L[0]->loop_var.get(), p.n}, {L[1]->loop_var.get(), p.ch}, {L[4]->loop_var.get(), I64(0)}};
  p.xn = S(Substitute(d.x_load->indices[0], at));
  p.xc = S(Substitute(d.x_load->indices[1], at));
  return p;
}

Stmt StoresAt(const DepthwiseNest& d, const PrimExpr& value, const std::vector<PrimExpr>& at) {
  std::vector<Stmt> stores;
  if (d.store_out || d.epilogue.empty()) stores.push_back(Store(d.out, value, at));
  if (!d.epilogue.empty()) {
    struct FromAcc : StmtExprMutator {
      const VarNode* c;
      PrimExpr value;
      PrimExpr MutateExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer->data.get() == c) return value;
        return StmtExprMutator::MutateExpr(e);
      }
    } from_acc;
    from_acc.c = d.out->data.get();
    from_acc.value = value;
    VarMap point;
    for (size_t q = 0; q < 4; ++q) point[d.loops[q]->loop_var.get()] = at[q];
    for (const Stmt& st : d.epilogue) stores.push_back(Substitute(from_acc.MutateStmt(st), point));
  }
  return Seq(stores);
}

}  // namespace dw
}  // namespace tir
}  // namespace kiln
