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

Stmt ConvKernel::Grid(const std::string& tag, int rows, ForKind row_kind, const std::function<Stmt(const Var&, const Var&)>& body) {
  Var ii = MakeVar("ii" + tag), jj = MakeVar("jj" + tag);
  Stmt inner = MakeFor(jj, I64(nr_), ForKind::kVectorized, body(ii, jj));
  return MakeFor(ii, I64(rows), row_kind, inner);
}

Stmt ConvKernel::Tile(const Var& o0, int rows, bool spatial) {
  DType f32 = DType::Float32();
  Buffer acc = nest::Float32Buffer("acc", {I64(rows), I64(nr_)}, "local");
  Buffer tmp = nest::Float32Buffer("tile", {I64(rows), I64(nr_)}, "local");
  Stmt zero = Grid("_init", rows, ForKind::kUnrolled, [&](const Var& ii, const Var& jj) {
    return Store(acc, FloatImm(f32, 0), {PrimExpr(ii), PrimExpr(jj)});
  });
  // A packed weight whose blocks are the tile's rows (o0 a multiple of b):
  // the tap's weights are W[ob, c, ky, kx, 0..rows), contiguous.
  const int64_t b = cv_.wblock;
  bool block_rows = b > 0 && rows == b && cv_.opg % b == 0;
  Var ob = MakeVar("ob");
  // The taps of input channels [c_off, c_off + count), read from q at
  // channel c - c_off.
  auto part_taps = [&](const Buffer& q, int64_t c_off, int64_t count) -> Stmt {
    Var c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
    // Phase and offset of tap (ky, kx) in Q; affine when the stride is 1.
    PrimExpr ya = PrimExpr(ky) * I64(cv_.dh), xa = PrimExpr(kx) * I64(cv_.dw);
    PrimExpr phase = I64(0), off;
    if (cv_.sh == 1) {
      off = ya * I64(wq_);
    } else {
      phase = Mod(ya, I64(cv_.sh)) * I64(cv_.sw);
      off = Div(ya, I64(cv_.sh)) * I64(wq_);
    }
    if (shift_planes_) {
      phase = PrimExpr(kx);
    } else if (cv_.sw == 1) {
      off = off + xa;
    } else {
      phase = phase + Mod(xa, I64(cv_.sw));
      off = off + Div(xa, I64(cv_.sw));
    }
    PrimExpr wc = c_off == 0 ? PrimExpr(c) : PrimExpr(c) + I64(c_off);
    auto weight_at = [&](const PrimExpr& ii) -> PrimExpr {
      std::vector<PrimExpr> cky = {wc, PrimExpr(ky), PrimExpr(kx)};
      if (b == 0) return WidenF32(Load(cv_.weight, {PrimExpr(o0) + ii, cky[0], cky[1], cky[2]}));
      if (block_rows) return WidenF32(Load(cv_.weight, {PrimExpr(ob), cky[0], cky[1], cky[2], ii}));
      PrimExpr o = PrimExpr(o0) + ii;
      return WidenF32(Load(cv_.weight, {Div(o, I64(b)), cky[0], cky[1], cky[2], Mod(o, I64(b))}));
    };
    auto tap_fma = [&](const Var& ii, const PrimExpr& jj) -> Stmt {
      PrimExpr wv = weight_at(spatial ? I64(0) : PrimExpr(ii));
      PrimExpr pos = PrimExpr(qcol0_) + off + jj;
      if (spatial) pos = pos + PrimExpr(ii) * I64(wq_);
      PrimExpr xv = WidenF32(Load(q, q_index_(PrimExpr(c), phase, pos)));
      PrimExpr cur = Load(acc, {PrimExpr(ii), jj});
      return Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{wv, xv, cur})),
                   {PrimExpr(ii), jj});
    };
    Stmt update;
    TapBox box;
    if (!spatial && WholePlaneTailTaps(&box)) {
      // The whole-vector columns take every tap; the tail's few columns
      // only the taps that read inside the input for one of them
      // (WholePlaneTailTaps).
      const int64_t main_w = nr_ / 16 * 16;
      Var ii = MakeVar("ii"), jj = MakeVar("jj"), it = MakeVar("ii_tail"), jt = MakeVar("jj_tail");
      Stmt main = MakeFor(ii, I64(rows), ForKind::kUnrolled,
                          MakeFor(jj, I64(main_w), ForKind::kVectorized, tap_fma(ii, PrimExpr(jj))));
      Stmt tail = MakeFor(it, I64(rows), ForKind::kUnrolled,
                          MakeFor(jt, I64(nr_ - main_w), ForKind::kVectorized, tap_fma(it, I64(main_w) + PrimExpr(jt))));
      auto in = [](const Var& v, int64_t lo, int64_t hi) {
        return MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, PrimExpr(v), I64(lo)),
                          MakeBinary(TirKind::kLE, PrimExpr(v), I64(hi)));
      };
      PrimExpr inside = MakeBinary(TirKind::kAnd, in(ky, box.ky_lo, box.ky_hi), in(kx, box.kx_lo, box.kx_hi));
      update = Seq({main, std::make_shared<IfThenElseNode>(inside, tail, nullptr)});
    } else {
      update = Grid("", rows, ForKind::kUnrolled, [&](const Var& ii, const Var& jj) { return tap_fma(ii, PrimExpr(jj)); });
    }
    Stmt t = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, update);
    t = MakeFor(ky, I64(cv_.kh), spatial ? ForKind::kUnrolled : ForKind::kSerial, t);
    if (block_rows && PrefetchWeights()) {
      // The weight row (b floats a tap) kPrefetchAheadBytes on in the
      // packed weight's memory order (past this block's last channel, the
      // next block's first), clamped to the last row; one hint a 64-byte
      // line of the row.
      // (A half weight, --precision=fp16|bf16, is 2 bytes an element.)
      const int64_t row_floats = b * cv_.kh * cv_.kw, rows_total = cv_.o / b * cv_.ki;
      const int64_t elem = cv_.weight->dtype.bits / 8;
      PrimExpr ahead = Min(PrimExpr(ob) * I64(cv_.ki) + wc + I64(CeilDiv(kPrefetchAheadBytes, elem * row_floats)),
                           I64(rows_total - 1));
      std::vector<Stmt> hints;
      auto hint = [&](const PrimExpr& f) -> Stmt {
        PrimExpr at = Load(cv_.weight, {I64(0), ahead, I64(0), I64(0), f});
        return std::make_shared<EvaluateNode>(
            PrimExpr(std::make_shared<CallNode>(DType::Int32(), "prefetch", std::vector<PrimExpr>{at})));
      };
      const int64_t line = 64 / elem, nhints = CeilDiv(row_floats, line);
      if (nhints > kMaxUnrolledPrefetchHints) {
        // A long window's row (1x256: 128 lines) in a loop, not 128 copies.
        Var f = MakeVar("pf");
        hints.push_back(MakeFor(f, I64(nhints), ForKind::kSerial, hint(PrimExpr(f) * I64(line))));
      } else {
        for (int64_t f = 0; f < row_floats; f += line) hints.push_back(hint(I64(f)));
      }
      hints.push_back(t);
      t = Seq(hints);
    }
    return MakeFor(c, I64(count), ForKind::kSerial, t);
  };
  std::vector<Stmt> parts;
  for (const InputPart& part : InputParts()) parts.push_back(part_taps(part.q, part.c0, part.count));
  Stmt taps = Seq(parts);
  if (block_rows) taps = std::make_shared<LetStmtNode>(ob, Div(PrimExpr(o0), I64(b)), taps);
  // The accumulators go to memory with static indices only (so they stay in
  // registers during the reduction); the write-back reads that copy.
  // In 16-float pieces: one vector load and store each (LLVM turned a
  // 48-wide copy loop into gathers and scatters across the rows).
  Stmt copy;
  {
    Var ii = MakeVar("ii_copy"), v = MakeVar("v_copy"), l = MakeVar("l_copy");
    PrimExpr jj = PrimExpr(v) * I64(16) + PrimExpr(l);
    copy = MakeFor(l, I64(16), ForKind::kVectorized,
                   Store(tmp, Load(acc, {PrimExpr(ii), jj}), {PrimExpr(ii), jj}));
    copy = MakeFor(v, I64(nr_ / 16), ForKind::kUnrolled, copy);
    if (nr_ % 16 != 0) {  // shift-plane tiles: widths that are not whole vectors
      Var t = MakeVar("l_tail");
      PrimExpr jt = I64(nr_ / 16 * 16) + PrimExpr(t);
      copy = Seq({copy, MakeFor(t, I64(nr_ % 16), ForKind::kUnrolled,
                                Store(tmp, Load(acc, {PrimExpr(ii), jt}), {PrimExpr(ii), jt}))});
    }
    copy = MakeFor(ii, I64(rows), ForKind::kUnrolled, copy);
  }
  if (row_tiles_ && !spatial) {
    return std::make_shared<AllocateNode>(acc, Seq({zero, taps, RowTileWriteBack(acc, o0, rows)}));
  }
  // Pointwise and shift-plane tiles: their columns are the output's, in
  // order.
  if ((direct_ || shift_planes_) && !spatial) {
    if (Stmt flat = FlatWriteBack(acc, o0, rows)) return std::make_shared<AllocateNode>(acc, Seq({zero, taps, flat}));
  }
  if (spatial) {
    if (Stmt by_row = RowWriteBack(acc, o0, rows)) {
      return std::make_shared<AllocateNode>(acc, Seq({zero, taps, by_row}));
    }
  } else if (Stmt by_row = RowSpanWriteBack(acc, o0, rows)) {
    return std::make_shared<AllocateNode>(acc, Seq({zero, taps, by_row}));
  }
  Stmt general = std::make_shared<AllocateNode>(tmp, Seq({copy, WriteBack(tmp, o0, rows, spatial)}));
  if (!spatial) {
    if (Stmt column = ColumnWriteBack(acc, o0, rows)) {
      // Whole tiles (all but the plane's or band's last) as whole vectors.
      PrimExpr whole = MakeBinary(TirKind::kLE, PrimExpr(col0_) + I64(nr_), yend_);
      return std::make_shared<AllocateNode>(
          acc, Seq({zero, taps, std::make_shared<IfThenElseNode>(whole, column, general)}));
    }
  }
  return std::make_shared<AllocateNode>(acc, Seq({zero, taps, general}));
}

Stmt ConvKernel::RemainderTile(const Var& o0, int64_t cols) {
  DType f32 = DType::Float32();
  const int64_t hw = cv_.ho * cv_.wo;
  const int64_t chains = std::max<int64_t>(1, kRemainderChains / cols);
  Buffer acc = nest::Float32Buffer("acc_rem", {I64(chains * cols), I64(mr_)}, "local");
  Var jz = MakeVar("jj_init"), iz = MakeVar("ii_init");
  Stmt zero = MakeFor(jz, I64(chains * cols), ForKind::kUnrolled,
                      MakeFor(iz, I64(mr_), ForKind::kVectorized,
                              Store(acc, FloatImm(f32, 0), {PrimExpr(jz), PrimExpr(iz)})));
  Var ob = MakeVar("ob");
  std::vector<Stmt> parts;
  for (const InputPart& part : InputParts()) {
    // Channels [first, first + count / chains * chains) in groups of
    // `chains` (channel u of a group into partial sum u), then the rest
    // into partial sum 0.
    auto taps = [&](int64_t groups, int64_t group_size, int64_t first) {
      Var c = MakeVar("c"), u = MakeVar("u"), jj = MakeVar("jj"), ii = MakeVar("ii");
      PrimExpr ch = PrimExpr(c) * I64(group_size) + PrimExpr(u) + I64(first);
      PrimExpr wc = part.c0 == 0 ? ch : ch + I64(part.c0);
      PrimExpr wv = WidenF32(Load(cv_.weight, {PrimExpr(ob), wc, I64(0), I64(0), PrimExpr(ii)}));
      PrimExpr xv = WidenF32(Load(part.q, q_index_(ch, I64(0), I64(hw - cols) + PrimExpr(jj))));
      PrimExpr row = PrimExpr(u) * I64(cols) + PrimExpr(jj);
      PrimExpr cur = Load(acc, {row, PrimExpr(ii)});
      Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{wv, xv, cur})),
                       {row, PrimExpr(ii)});
      Stmt body = MakeFor(u, I64(group_size), ForKind::kUnrolled,
                          MakeFor(jj, I64(cols), ForKind::kUnrolled, MakeFor(ii, I64(mr_), ForKind::kVectorized, fma)));
      return MakeFor(c, I64(groups), ForKind::kSerial, body);
    };
    const int64_t groups = part.count / chains, rest = part.count % chains;
    if (groups > 0) parts.push_back(taps(groups, chains, 0));
    if (rest > 0) parts.push_back(taps(rest, 1, groups * chains));
  }
  if (chains > 1) {
    Var jj = MakeVar("jj_sum"), ii = MakeVar("ii_sum");
    PrimExpr sum = Load(acc, {PrimExpr(jj), PrimExpr(ii)});
    for (int64_t u = 1; u < chains; ++u) sum = sum + Load(acc, {I64(u * cols) + PrimExpr(jj), PrimExpr(ii)});
    parts.push_back(MakeFor(jj, I64(cols), ForKind::kUnrolled,
                            MakeFor(ii, I64(mr_), ForKind::kVectorized, Store(acc, sum, {PrimExpr(jj), PrimExpr(ii)}))));
  }
  Stmt taps = std::make_shared<LetStmtNode>(ob, Div(PrimExpr(o0), I64(mr_)), Seq(parts));
  Stmt out = FlatWriteBack(acc, o0, mr_, static_cast<int>(cols), I64(hw - cols), true);
  if (!out) return nullptr;
  return std::make_shared<AllocateNode>(acc, Seq({zero, taps, out}));
}

}  // namespace conv
}  // namespace tir
}  // namespace kiln
