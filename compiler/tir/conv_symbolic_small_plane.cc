// SymConvKernel's channel-lane tiles for small run-time output planes: the
// symbolic form of the static channel-lane kernel (conv_channel_lanes.h).
// (conv_symbolic_kernel.h declares the class and says when;
// conv_symbolic_schedule.h says what the kernel computes.)
//
// Per image, a version per point count T (kLaneVersions, up to
// kMaxLanePoints; the plane's P = Ho * Wo points chosen at run time take the
// smallest T >= P, points past P repeating the last): each point's offset
// in X's flat plane, (p / Wo) * sh * W + (p % Wo) * sw, is computed once,
// stepped from the previous point's (no division); then per tile of tb
// weight blocks (vectors of the weight's vb output channels), accumulators
// acc[s, b, p] (P * tb of them, times s partial sums) run over the input channels
// and the taps: each tap loads the tb weight vectors once and adds weight x
// X[n, c, point p's offset + tap offset] (a broadcast, read in place) into
// every point's accumulator. Every lane is an output of the plane: the
// flat tiles over the span (Ho - 1) * W + Wo computed the columns between rows and
// rounded the span up to a tile (mtcnn_pnet's 10 -> 16 on a 3 x 3 output:
// 2 x 8 channels x 16 columns for 9 points, against 9 points x 16
// channels here). Tiles of fewer than kLaneChains accumulators (a 1 x 1
// output: 4 blocks) add input channel c into partial sum c % s, summed
// at the end: FMA chains enough to hide the latency (the static kernel
// ran 2 chains of 144 FMAs for 16 -> 32 on 1 x 1). The tiles are stored
// point by point (os[p][o]), transposed in 16 x 16 pieces (transpose16;
// output channels not a multiple of 16 stored lane by lane instead) into
// one run of P points a channel, and each channel's run written through the
// flat epilogue (FlatEpilogue) as one vector of P lanes.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_symbolic_kernel.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace symconv {

namespace {

// Independent accumulators a tile wants before it splits the reduction
// into partial sums: two FMA pipes of four cycles' latency, with room.
constexpr int64_t kLaneChains = 12;
// Kernels of at most this many taps (the taps of a kernel row are unrolled).
constexpr int64_t kMaxLaneTaps = 49;
// The side of the register transpose (transpose16).
constexpr int64_t kSide = 16;
// The versions' point counts: a plane of P points takes the first that
// holds it, its points past P repeating the last (a version per count
// took mtcnn_pnet's compile from 25 to 40 s on a loaded machine).
constexpr int64_t kLaneVersions[] = {1, 2, 4, 9, kMaxLanePoints};

// A vector loop of `lanes`, body(l), in a one-trip unrolled loop (the code
// generator's explicit vectors).
Stmt VectorLanes(const std::string& tag, int64_t lanes, const std::function<Stmt(const PrimExpr&)>& body) {
  Var u = MakeVar("u" + tag), l = MakeVar("l" + tag);
  return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(l, I64(lanes), ForKind::kVectorized, body(PrimExpr(l))));
}

}  // namespace

bool SymConvKernel::SmallPlaneLanesApply() const {
  const auto& L = cv_.loops;
  if (cv_.guarded || flat_ || spatial_ok_ || cv_.kh * cv_.kw < 2 || cv_.kh * cv_.kw > kMaxLaneTaps) return false;
  // The weight's blocks are the vectors; X's channel the reduction's own
  // (one group: every output channel reads the same input element).
  if (cv_.wblock < 8 || cv_.o % cv_.wblock != 0 || !IsVar(cv_.x_load->indices[1], L[4]->loop_var.get())) return false;
  if (!cv_.data->strides.empty() || cv_.data->shape.size() != 4) return false;
  std::vector<Stmt> epi;
  Buffer out;
  std::vector<PrimExpr> idx;
  return FlatEpilogue(MakeVar("j"), &epi, &out, &idx);
}

Stmt SymConvKernel::SmallPlaneLanes(const PrimExpr& ho, const PrimExpr& wo) {
  PrimExpr points = arith::Simplify(ho * wo);
  // os[p][o] (kSide rows: the transposes read whole 16 x 16 pieces; rows
  // past P are never read back) and ot[o][p], shared by the versions (one
  // stack block each, not one per version).
  Buffer os = nest::Float32Buffer(cv_.out->name + "_lanes_pminor", {I64(kSide * cv_.o)}, "global");
  Buffer ot = nest::Float32Buffer(cv_.out->name + "_lanes_rows", {I64(cv_.o * kSide)}, "global");
  Stmt body;
  const Var images = n_;
  for (size_t v = std::size(kLaneVersions); v-- > 0;) {
    n_ = MakeVar("n");  // each version's own image loop
    const int64_t from = v == 0 ? 1 : kLaneVersions[v - 1] + 1;
    Stmt one = SmallPlaneLanesOf(kLaneVersions[v], from, points, wo, os, ot);
    body = body ? Stmt(std::make_shared<IfThenElseNode>(Lt(points, I64(kLaneVersions[v] + 1)), one, body)) : one;
  }
  n_ = images;
  body = std::make_shared<AllocateNode>(ot, body);
  if (cv_.o % kSide == 0) body = std::make_shared<AllocateNode>(os, body);
  return body;
}

Stmt SymConvKernel::SmallPlaneLanesOf(int64_t points, int64_t from, const PrimExpr& count, const PrimExpr& wo,
                                      const Buffer& os, const Buffer& ot) {
  const auto& L = cv_.loops;
  DType f32 = DType::Float32();
  const Buffer& x = cv_.data;
  auto view = std::make_shared<BufferNode>(*x);
  view->shape = {x->shape[0], x->shape[1], arith::Simplify(x->shape[2] * x->shape[3])};
  Buffer xf(view);
  const PrimExpr& w = x->shape[3];
  const int64_t vb = cv_.wblock, nb = cv_.o / vb;
  // Blocks a tile: the most that divide the blocks within the accumulators.
  int64_t tb = 1;
  for (int64_t b = nb; b >= 1; --b) {
    if (nb % b == 0 && points * b <= kMaxTileAccumulators) {
      tb = b;
      break;
    }
  }
  // Partial sums over the input channels where the tile has few chains.
  int64_t parts = 1;
  for (int64_t s = 2; points * tb * parts < kLaneChains && points * tb * s <= kMaxTileAccumulators; ++s) {
    if (cv_.ki % s == 0) parts = s;
  }
  const int64_t accs = parts * tb * points;

  // Each point's offset in X's flat plane, from the previous point's: one
  // column on, or the next row's first at the end of a row (its column
  // lx counted beside it). A division per point by the run-time Wo, guarded
  // against 0 and -1 and rounded to -inf, was 26 of the 112 cache lines
  // mtcnn_pnet's 10 -> 16 ran at 12 x 12.
  std::vector<Var> at;
  std::vector<Var> lets;
  std::vector<PrimExpr> let_values;
  PrimExpr row_step = arith::Simplify(I64(cv_.sh) * w - (wo - I64(1)) * I64(cv_.sw));
  Var lx_prev;
  for (int64_t p = 0; p < points; ++p) {
    at.push_back(MakeVar("lp" + std::to_string(p)));
    if (p == 0) {
      lets.push_back(at[0]);
      let_values.push_back(I64(0));
      if (points > 1) {
        lx_prev = MakeVar("lx0");
        lets.push_back(lx_prev);
        let_values.push_back(I64(0));
      }
      continue;
    }
    PrimExpr next = PrimExpr(lx_prev) + I64(1);
    PrimExpr wrap = MakeBinary(TirKind::kEQ, next, wo);
    PrimExpr lx = PrimExpr(std::make_shared<SelectNode>(wrap, I64(0), next));
    PrimExpr lp = PrimExpr(at[p - 1]) + PrimExpr(std::make_shared<SelectNode>(wrap, row_step, I64(cv_.sw)));
    if (p >= from) {
      // Points past the plane's last (p >= count) repeat it.
      PrimExpr on = Lt(I64(p), count);
      lx = PrimExpr(std::make_shared<SelectNode>(on, lx, PrimExpr(lx_prev)));
      lp = PrimExpr(std::make_shared<SelectNode>(on, lp, PrimExpr(at[p - 1])));
    }
    lets.push_back(at[p]);
    let_values.push_back(lp);
    if (p + 1 < points) {
      Var lxv = MakeVar("lx" + std::to_string(p));
      lets.push_back(lxv);
      let_values.push_back(lx);
      lx_prev = lxv;
    }
  }

  Var q = MakeVar("lq"), cs = MakeVar("lc"), ky = MakeVar("lky");
  Buffer acc = nest::Float32Buffer("acc_lanes", {I64(accs), I64(vb)}, "local");
  auto ai = [&](int64_t s, int64_t b, int64_t p) { return I64((s * tb + b) * points + p); };
  std::vector<Stmt> steps;
  steps.push_back(VectorLanes("_lz", vb, [&](const PrimExpr& l) {
    std::vector<Stmt> s;
    for (int64_t i = 0; i < accs; ++i) s.push_back(Store(acc, FloatImm(f32, 0.0), {I64(i), l}));
    return Seq(s);
  }));
  // The taps of kernel row ky, input channels cs * parts + s.
  std::vector<Stmt> taps;
  for (int64_t kx = 0; kx < cv_.kw; ++kx) {
    for (int64_t s = 0; s < parts; ++s) {
      taps.push_back(VectorLanes("_lt", vb, [&](const PrimExpr& l) {
        PrimExpr c = parts == 1 ? PrimExpr(cs) : PrimExpr(cs) * I64(parts) + I64(s);
        VarMap map;
        map[L[0]->loop_var.get()] = PrimExpr(n_);
        map[L[4]->loop_var.get()] = c;
        map[L[5]->loop_var.get()] = PrimExpr(ky);
        map[L[6]->loop_var.get()] = I64(kx);
        std::vector<PrimExpr> wv;
        for (int64_t b = 0; b < tb; ++b) {
          std::vector<PrimExpr> widx = WeightIndex((PrimExpr(q) * I64(tb) + I64(b)) * I64(vb), vb, l, map);
          widx[0] = arith::Simplify(PrimExpr(q) * I64(tb) + I64(b));
          wv.push_back(Load(cv_.weight, widx));
        }
        PrimExpr tap = PrimExpr(ky) * I64(cv_.dh) * w + I64(kx * cv_.dw);
        std::vector<Stmt> fmas;
        for (int64_t p = 0; p < points; ++p) {
          PrimExpr xv = Load(xf, {NImage(), c, PrimExpr(at[p]) + tap});
          for (int64_t b = 0; b < tb; ++b) {
            PrimExpr cur = Load(acc, {ai(s, b, p), l});
            fmas.push_back(Store(acc, Fma(wv[b], xv, cur), {ai(s, b, p), l}));
          }
        }
        return Seq(fmas);
      }));
    }
  }
  Stmt reduction = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, Seq(taps));
  steps.push_back(MakeFor(cs, I64(cv_.ki / parts), ForKind::kSerial, reduction));
  if (parts > 1) {
    // The partial sums into the first, in order.
    steps.push_back(VectorLanes("_ls", vb, [&](const PrimExpr& l) {
      std::vector<Stmt> s;
      for (int64_t b = 0; b < tb; ++b) {
        for (int64_t p = 0; p < points; ++p) {
          PrimExpr sum = Load(acc, {ai(0, b, p), l});
          for (int64_t k = 1; k < parts; ++k) sum = sum + Load(acc, {ai(k, b, p), l});
          s.push_back(Store(acc, sum, {ai(0, b, p), l}));
        }
      }
      return Seq(s);
    }));
  }
  // The statements that write value v of output channel o at flat point j
  // through the flat epilogue.
  Var j = MakeVar("lj");
  std::vector<Stmt> epi;
  Buffer out;
  std::vector<PrimExpr> out_idx;
  FlatEpilogue(j, &epi, &out, &out_idx);
  auto write = [&](const PrimExpr& o, const PrimExpr& at_j, const PrimExpr& v) {
    VarMap om;
    om[L[0]->loop_var.get()] = PrimExpr(n_);
    om[L[1]->loop_var.get()] = o;
    om[j.get()] = at_j;
    std::vector<Stmt> back;
    std::vector<PrimExpr> idx;
    for (const PrimExpr& e : out_idx) idx.push_back(Substitute(e, om));
    if (store_out_ || epi.empty()) back.push_back(Store(out, v, idx));
    ReplaceLoads replace(cv_.out->data.get(), v);
    for (const Stmt& st : epi) back.push_back(Substitute(replace.MutateStmt(st), om));
    return Seq(back);
  };
  // One point: each accumulator is a run of output channels of the
  // output's one point (contiguous: the plane holds one element), written
  // straight through the epilogue. More: os[p][o], or, for output channels
  // not a multiple of 16, ot[o][p] lane by lane.
  const bool transpose = cv_.o % kSide == 0;
  steps.push_back(VectorLanes("_lw", vb, [&](const PrimExpr& l) {
    std::vector<Stmt> s;
    for (int64_t b = 0; b < tb; ++b) {
      PrimExpr o = (PrimExpr(q) * I64(tb) + I64(b)) * I64(vb) + l;
      for (int64_t p = 0; p < points; ++p) {
        PrimExpr v = Load(acc, {ai(0, b, p), l});
        if (points == 1) {
          s.push_back(write(o, I64(0), v));
        } else {
          s.push_back(transpose ? Store(os, v, {I64(p * cv_.o) + o}) : Store(ot, v, {o * I64(kSide) + I64(p)}));
        }
      }
    }
    return Seq(s);
  }));
  Stmt tiles = MakeFor(q, I64(nb / tb), ForKind::kSerial, std::make_shared<AllocateNode>(acc, Seq(steps)));
  std::vector<Stmt> parts_out = {tiles};
  if (transpose && points > 1) {
    for (int64_t g = 0; g < cv_.o / kSide; ++g) {
      std::vector<PrimExpr> args{Load(os, {I64(g * kSide)}), I64(cv_.o), Load(ot, {I64(g * kSide * kSide)})};
      for (int64_t r = 0; r < kSide; ++r) args.push_back(I64(r * kSide));
      parts_out.push_back(std::make_shared<EvaluateNode>(
          PrimExpr(std::make_shared<CallNode>(DType::Int32(), "transpose16", std::move(args)))));
    }
  }
  // Each channel's P points, one vector, through the flat epilogue.
  if (points > 1) {
    Var o = MakeVar("lo");
    PrimExpr v = Load(ot, {PrimExpr(o) * I64(kSide) + PrimExpr(j)});
    parts_out.push_back(MakeFor(o, I64(cv_.o), ForKind::kSerial,
                                MakeFor(j, from == points ? I64(points) : count, ForKind::kVectorized,
                                        write(PrimExpr(o), PrimExpr(j), v))));
  }
  Stmt body = Seq(parts_out);
  for (size_t i = lets.size(); i-- > 0;) body = std::make_shared<LetStmtNode>(lets[i], let_values[i], body);
  return MakeFor(n_, L[0]->extent, ForKind::kSerial, body);
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
