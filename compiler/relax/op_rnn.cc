// Recurrent layers: R.nn.lstm, R.nn.gru, R.nn.rnn — the recurrence of ONNX's
// LSTM, GRU and RNN operators, given the input projection of every step.
//
//   R.nn.lstm(x_proj, r, h0, c0, p[, seq_lens])  -> (Y, Y_h, Y_c)
//   R.nn.gru(x_proj, r, rb, h0[, seq_lens])      -> (Y, Y_h)
//   R.nn.rnn(x_proj, r, h0[, seq_lens])          -> (Y, Y_h)
//
// G gates (LSTM 4 in ONNX's order i, o, f, c; GRU 3: z, r, h; RNN 1),
// D directions (1 or 2, a constant), hidden size H, T steps, batch B.
// Shapes for layout=0 (layout=1 swaps the first two axes of x_proj, h0, c0,
// Y, Y_h and Y_c, as ONNX's layout attribute does):
//   x_proj [T, B, D*G*H]  X·Wᵀ + biases for all steps and directions (one
//                          matmul before the call: ONNX's W of direction d,
//                          gate g, unit j is column (d*G + g)*H + j)
//   r      [D, H, G*H]     the recurrence weights transposed (r[d, k, n] =
//                          ONNX R[d, n, k]), so that a step's matrix-vector
//                          product runs along contiguous gate rows
//   rb     [D, 3*H]        GRU only: the recurrence bias Rb, added to R·h
//                          (GRU needs it inside the reset gate's product)
//   h0, c0 [D, B or 1, H]  initial states (a batch of 1 broadcasts)
//   p      [D, 3*H]        LSTM peepholes (i, o, f)
//   seq_lens [B]           integer; steps t >= seq_lens[b] output zeros in Y
//                          and carry the last state to Y_h / Y_c (reverse
//                          directions start at step seq_lens[b] - 1)
//   Y      [T, D, B, H],  Y_h, Y_c [D, B, H]
// Attributes: direction ("forward", "reverse", "bidirectional"; D must be 2
// exactly for bidirectional), activations (rnn_activation.h; G-1 per
// direction for LSTM f, g, h / GRU f, g, one for RNN f; given once for both
// directions or once per direction), clip (None: no clipping of the
// activations' inputs), input_forget (LSTM), linear_before_reset (GRU),
// layout (0 or 1).
//
// The kernel is one opaque stage holding the states in a buffer S of shape
// [T+1 (+1 for LSTM), D, B, H]: slot 0 the initial h, slot s+1 the h after
// the s-th processed step, and for LSTM slot T+1 the running c (updated in
// place). Each direction is an independent recurrence (the outer loop,
// parallel when D = 2), with a serial loop over steps inside; per step the
// batch entries go in tiles of up to 4 rows (a symbolic batch that is 1
// when the kernel runs: tiles of one row), and a tile's products R·h are
// one register-blocked GEMM (accumulators rows x a block of gate columns,
// held across the whole sum; each vector of R feeds every row), written to
// a gate scratch [rows, G*H]; then one loop per row over the hidden units
// applies the gates and writes the next state: the cell is one fused loop.
// Y, Y_h and Y_c are then read out of S (zeros past a sequence's length).
#include <algorithm>
#include <functional>
#include <optional>

#include "compiler/arith/simplify.h"
#include "compiler/relax/op_defs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/rnn_activation.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using namespace elem;  // NOLINT

enum class Cell { kLstm, kGru, kRnn };

Cell CellOf(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (op && op->name == "relax.nn.lstm") return Cell::kLstm;
  if (op && op->name == "relax.nn.gru") return Cell::kGru;
  return Cell::kRnn;
}

int Gates(Cell c) { return c == Cell::kLstm ? 4 : c == Cell::kGru ? 3 : 1; }
int NumActs(Cell c) { return c == Cell::kLstm ? 3 : c == Cell::kGru ? 2 : 1; }
const char* DefaultActs(Cell c) {
  return c == Cell::kLstm ? "Sigmoid,Tanh,Tanh" : c == Cell::kGru ? "Sigmoid,Tanh" : "Tanh";
}

// Argument positions; -1: the operator has no such argument.
struct Args {
  int rb = -1, h0 = -1, c0 = -1, p = -1, seq_lens = -1;
};

struct RnnAttrs {
  Cell cell = Cell::kRnn;
  std::string direction;
  int64_t layout = 0;
  std::vector<RnnActivation> acts;  // NumActs per direction, D * NumActs in all
  std::optional<double> clip;
  bool input_forget = false;
  bool linear_before_reset = false;
  Args args;
};

Result<RnnAttrs> ReadAttrs(const ir::CallExpr& call) {
  RnnAttrs a;
  a.cell = CellOf(call);
  size_t fixed = a.cell == Cell::kLstm ? 5 : a.cell == Cell::kGru ? 4 : 3;
  size_t n = call.args.size();
  if (n != fixed && n != fixed + 1) {
    const char* sig = a.cell == Cell::kLstm  ? "x_proj, r, h0, c0, p[, seq_lens]"
                      : a.cell == Cell::kGru ? "x_proj, r, rb, h0[, seq_lens]"
                                             : "x_proj, r, h0[, seq_lens]";
    return Error(call, std::string("takes (") + sig + "), got " + std::to_string(n) + " arguments");
  }
  // {rb, h0, c0, p, seq_lens}
  if (a.cell == Cell::kLstm) a.args = {-1, 2, 3, 4, -1};
  if (a.cell == Cell::kGru) a.args = {2, 3, -1, -1, -1};
  if (a.cell == Cell::kRnn) a.args = {-1, 2, -1, -1, -1};
  if (n == fixed + 1) a.args.seq_lens = static_cast<int>(fixed);

  KILN_ASSIGN_OR_RETURN(a.direction, StringAttr(call, "direction", "forward"));
  if (a.direction != "forward" && a.direction != "reverse" && a.direction != "bidirectional") {
    return Error(call, "direction must be \"forward\", \"reverse\" or \"bidirectional\", got \"" + a.direction + "\"");
  }
  KILN_ASSIGN_OR_RETURN(a.layout, IntAttr(call, "layout", 0));
  if (a.layout != 0 && a.layout != 1) return Error(call, "layout must be 0 or 1, got " + std::to_string(a.layout));
  KILN_ASSIGN_OR_RETURN(std::string acts, StringAttr(call, "activations", DefaultActs(a.cell)));
  auto parsed = ParseRnnActivations(acts);
  if (!parsed.ok()) return Error(call, parsed.status().message());
  size_t per = static_cast<size_t>(NumActs(a.cell));
  size_t dirs = a.direction == "bidirectional" ? 2 : 1;
  a.acts = *parsed;
  if (a.acts.size() == per && dirs == 2) a.acts.insert(a.acts.end(), parsed->begin(), parsed->end());
  if (a.acts.size() != per * dirs) {
    return Error(call, "activations: expected " + std::to_string(per) + (dirs == 2 ? " or " + std::to_string(2 * per) : "") +
                           " functions, got " + std::to_string(parsed->size()) + " (\"" + acts + "\")");
  }
  auto it = call.attrs.find("clip");
  if (it != call.attrs.end() && it->second.kind != ir::AttrValue::Kind::kNone) {
    KILN_ASSIGN_OR_RETURN(double clip, FloatAttr(call, "clip", 0));
    if (!(clip > 0)) return Error(call, "clip must be positive, got " + std::to_string(clip));
    a.clip = clip;
  }
  KILN_ASSIGN_OR_RETURN(a.input_forget, BoolAttr(call, "input_forget", false));
  KILN_ASSIGN_OR_RETURN(a.linear_before_reset, BoolAttr(call, "linear_before_reset", false));
  if (a.input_forget && a.cell != Cell::kLstm) return Error(call, "input_forget applies to R.nn.lstm only");
  if (a.linear_before_reset && a.cell != Cell::kGru) return Error(call, "linear_before_reset applies to R.nn.gru only");
  return a;
}

// The dimensions of one call, read from its arguments (symbolic where they are).
struct Dims {
  PrimExpr t, b, h;
  int64_t d = 1;
  DType dtype;
};

// Expects `got` == `want` unless provably different; `what` names the axis.
Status ExpectDim(const ir::CallExpr& call, const PrimExpr& got, const PrimExpr& want, const std::string& what) {
  if (CompareDims(got, want) == DimRelation::kNotEqual) {
    return Error(call, what + " must be " + DimString(want) + ", got " + DimString(got));
  }
  return Status::Ok();
}

Result<const ir::TensorSInfo*> Ranked(const ir::CallExpr& call, size_t i, const char* what, int ndim) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, TensorArg(call, i, what));
  if (t->ndim >= 0 && t->ndim != ndim) {
    return Error(call, std::string(what) + " must have rank " + std::to_string(ndim) + ", got " + std::to_string(t->ndim));
  }
  return t;
}

// Checks every argument against the others. Returns nullopt dims when a
// shape is unknown (inference then gives ranks only).
Result<std::optional<Dims>> CheckArgs(const ir::CallExpr& call, const RnnAttrs& a) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, Ranked(call, 0, "x_proj", 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* r, Ranked(call, 1, "r", 3));
  if (x->has_dtype && !x->dtype.is_float()) return Error(call, "x_proj must be a float tensor, got " + Str(x->dtype));
  for (size_t i = 1; i < call.args.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, TensorArg(call, i, "every argument"));
    bool lens = static_cast<int>(i) == a.args.seq_lens;
    if (t->has_dtype && x->has_dtype && !lens && t->dtype != x->dtype) {
      return Error(call, "argument " + std::to_string(i) + " has dtype " + Str(t->dtype) + ", x_proj " + Str(x->dtype));
    }
    if (lens && t->has_dtype && (!t->dtype.is_int() || IsBool(t->dtype))) {
      return Error(call, "seq_lens must be an integer tensor, got " + Str(t->dtype));
    }
  }
  if (!x->has_shape || !r->has_shape) return std::optional<Dims>();
  Dims d;
  d.dtype = x->dtype;
  auto dirs = ConstDim(r->shape[0]);
  int64_t want_dirs = a.direction == "bidirectional" ? 2 : 1;
  if (!dirs || *dirs != want_dirs) {
    return Error(call, "r has " + DimString(r->shape[0]) + " directions; direction \"" + a.direction + "\" needs " +
                           std::to_string(want_dirs));
  }
  d.d = want_dirs;
  d.h = r->shape[1];
  PrimExpr gh = arith::Simplify(d.h * PrimExpr(int64_t{Gates(a.cell)}));
  KILN_RETURN_IF_ERROR(ExpectDim(call, r->shape[2], gh, "axis 2 of r (gates x hidden)"));
  d.t = x->shape[a.layout == 0 ? 0 : 1];
  d.b = x->shape[a.layout == 0 ? 1 : 0];
  KILN_RETURN_IF_ERROR(ExpectDim(call, x->shape[2], arith::Simplify(gh * PrimExpr(d.d)), "axis 2 of x_proj"));
  for (int idx : {a.args.h0, a.args.c0}) {
    if (idx < 0) continue;
    const char* what = idx == a.args.h0 ? "h0" : "c0";
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* s, Ranked(call, static_cast<size_t>(idx), what, 3));
    if (!s->has_shape) continue;
    size_t bd = a.layout == 0 ? 1 : 0;
    KILN_RETURN_IF_ERROR(ExpectDim(call, s->shape[1 - bd], PrimExpr(d.d), std::string("the directions axis of ") + what));
    auto one = ConstDim(s->shape[bd]);
    if (!one || *one != 1) KILN_RETURN_IF_ERROR(ExpectDim(call, s->shape[bd], d.b, std::string("the batch axis of ") + what));
    KILN_RETURN_IF_ERROR(ExpectDim(call, s->shape[2], d.h, std::string("axis 2 of ") + what));
  }
  for (int idx : {a.args.rb, a.args.p}) {
    if (idx < 0) continue;
    const char* what = idx == a.args.rb ? "rb" : "p";
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* s, Ranked(call, static_cast<size_t>(idx), what, 2));
    if (!s->has_shape) continue;
    KILN_RETURN_IF_ERROR(ExpectDim(call, s->shape[0], PrimExpr(d.d), std::string("axis 0 of ") + what));
    KILN_RETURN_IF_ERROR(ExpectDim(call, s->shape[1], arith::Simplify(d.h * PrimExpr(int64_t{3})), std::string("axis 1 of ") + what));
  }
  if (a.args.seq_lens >= 0) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* s, Ranked(call, static_cast<size_t>(a.args.seq_lens), "seq_lens", 1));
    if (s->has_shape) KILN_RETURN_IF_ERROR(ExpectDim(call, s->shape[0], d.b, "seq_lens' length"));
  }
  return std::optional<Dims>(d);
}

std::vector<PrimExpr> YShape(const Dims& d, int64_t layout) {
  if (layout == 0) return {d.t, PrimExpr(d.d), d.b, d.h};
  return {d.b, d.t, PrimExpr(d.d), d.h};
}
std::vector<PrimExpr> StateShape(const Dims& d, int64_t layout) {
  if (layout == 0) return {PrimExpr(d.d), d.b, d.h};
  return {d.b, PrimExpr(d.d), d.h};
}

Result<ir::StructInfo> InferRnn(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(RnnAttrs a, ReadAttrs(call));
  KILN_ASSIGN_OR_RETURN(std::optional<Dims> d, CheckArgs(call, a));
  const ir::TensorSInfo* x = TensorInfoOf(call.args[0]);
  int outs = a.cell == Cell::kLstm ? 3 : 2;
  std::vector<ir::StructInfo> fields;
  for (int i = 0; i < outs; ++i) {
    int nd = i == 0 ? 4 : 3;
    if (d) {
      fields.push_back(std::make_shared<ir::TensorSInfo>(true, i == 0 ? YShape(*d, a.layout) : StateShape(*d, a.layout), nd,
                                                         x->dtype, x->has_dtype));
    } else {
      fields.push_back(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, nd, x->dtype, x->has_dtype));
    }
  }
  return ir::StructInfo(std::make_shared<ir::TupleSInfo>(fields));
}

// ------------------------------------------------------------ legalization

PrimExpr I(int64_t v) { return PrimExpr(v); }

ir::Stmt For(const ir::Var& v, const PrimExpr& extent, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, I(0), extent, ir::ForKind::kSerial, std::move(body));
}

// Builds the kernel's TIR for one call.
class RnnKernel {
 public:
  RnnKernel(const RnnAttrs& a, const Dims& d) : a_(a), d_(d) {}

  Result<ir::PrimFunc> Build(const ir::CallExpr& call, const std::string& name) {
    te::FuncBuilder b(name);
    std::vector<te::Tensor> in;
    for (size_t i = 0; i < call.args.size(); ++i) {
      const ir::TensorSInfo* t = TensorInfoOf(call.args[i]);
      in.push_back(b.Input(ArgName(static_cast<int>(i)), t->shape, t->dtype));
    }
    x_ = in[0];
    r_ = in[1];
    if (a_.args.rb >= 0) rb_ = in[a_.args.rb];
    h0_ = in[a_.args.h0];
    if (a_.args.c0 >= 0) c0_ = in[a_.args.c0];
    if (a_.args.p >= 0) p_ = in[a_.args.p];
    if (a_.args.seq_lens >= 0) lens_ = in[a_.args.seq_lens];
    t_ = b.Local(d_.t);
    b_ = b.Local(d_.b);
    h_ = b.Local(d_.h);
    dt_ = d_.dtype;

    PrimExpr slots = t_ + I(a_.cell == Cell::kLstm ? 2 : 1);
    te::Tensor s = b.Custom("T_" + std::string(CellName()) + "_states", {slots, I(d_.d), b_, h_}, dt_,
                            [&](const ir::Buffer& out) { return States(out); });
    std::vector<PrimExpr> yshape = b.Local(YShape(d_, a_.layout));
    te::Tensor y = b.Compute("T_" + std::string(CellName()) + "_y", yshape, dt_, [&](const te::Indices& i) {
      PrimExpr t = a_.layout == 0 ? i[0] : i[1];
      PrimExpr dir = a_.layout == 0 ? i[1] : i[2];
      PrimExpr bb = a_.layout == 0 ? i[2] : i[0];
      // The slot holding step t: processed as step t (forward) or T-1-t (reverse).
      PrimExpr slot = Reverse(dir) ? t_ - t : t + I(1);
      if (a_.direction == "bidirectional") {
        slot = Select(Bin(TirKind::kEQ, dir, I(1)), t_ - t, t + I(1));
      }
      PrimExpr h = ir::Load(s.buffer(), {slot, dir, bb, i[3]});
      if (!lens_.defined()) return h;
      return Select(Bin(TirKind::kLT, t, Len(bb)), h, Const(dt_, 0));
    });
    std::vector<te::Tensor> outs = {y};
    std::vector<PrimExpr> sshape = b.Local(StateShape(d_, a_.layout));
    for (int64_t n = 0; n < (a_.cell == Cell::kLstm ? 2 : 1); ++n) {
      const char* which = n == 0 ? "_y_h" : "_y_c";
      outs.push_back(b.Compute("T_" + std::string(CellName()) + which, sshape, dt_, [&](const te::Indices& i) {
        PrimExpr dir = a_.layout == 0 ? i[0] : i[1];
        PrimExpr bb = a_.layout == 0 ? i[1] : i[0];
        return ir::Load(s.buffer(), {t_ + I(n), dir, bb, i[2]});
      }));
    }
    return b.Build(outs);
  }

 private:
  const char* CellName() const { return a_.cell == Cell::kLstm ? "lstm" : a_.cell == Cell::kGru ? "gru" : "rnn"; }
  std::string ArgName(int i) const {
    if (i == 0) return "x_proj";
    if (i == 1) return "r";
    if (i == a_.args.rb) return "rb";
    if (i == a_.args.h0) return "h0";
    if (i == a_.args.c0) return "c0";
    if (i == a_.args.p) return "p";
    return "seq_lens";
  }
  // Whether direction `dir` (a constant in the step loops; for Y a variable,
  // handled by the caller when bidirectional) runs backwards.
  bool Reverse(const PrimExpr& dir) const {
    if (a_.direction == "reverse") return true;
    if (a_.direction == "forward") return false;
    auto c = ConstDim(dir);
    return c && *c == 1;
  }
  // The valid length of batch entry b: min(seq_lens[b], T).
  PrimExpr Len(const PrimExpr& b) const {
    return Bin(TirKind::kMin, CastTo(DType::Int64(), lens_({b})), t_);
  }
  PrimExpr ClipAct(int64_t d, int which, PrimExpr v) const {
    if (a_.clip) v = Bin(TirKind::kMin, Bin(TirKind::kMax, v, Const(dt_, -*a_.clip)), Const(dt_, *a_.clip));
    return ApplyRnnActivation(a_.acts[static_cast<size_t>(d * NumActs(a_.cell) + which)], v);
  }
  // Element (b, j) of a state-shaped input (h0, c0) of direction d; a batch of 1 broadcasts.
  PrimExpr StateIn(const te::Tensor& t, int64_t d, const PrimExpr& b, const PrimExpr& j) const {
    size_t bd = a_.layout == 0 ? 1 : 0;
    auto one = ConstDim(t.shape()[bd]);
    PrimExpr bb = one && *one == 1 ? I(0) : b;
    return a_.layout == 0 ? t({I(d), bb, j}) : t({bb, I(d), j});
  }
  // x_proj at step t, batch b, direction d, gate g, unit j.
  PrimExpr X(const PrimExpr& t, const PrimExpr& b, int64_t d, int g, const PrimExpr& j) const {
    PrimExpr col = arith::Simplify(h_ * I(d * Gates(a_.cell) + g)) + j;
    return a_.layout == 0 ? x_({t, b, col}) : x_({b, t, col});
  }

  // The whole recurrence, writing S (see the file comment).
  ir::Stmt States(const ir::Buffer& s) {
    s_ = s;
    auto bs = ConstDim(b_);
    // Batch entries are processed in tiles of rows_ (the last tile's extra
    // rows repeat entry B-1 in the products and are skipped by the cell).
    rows_ = bs ? std::min<int64_t>(*bs, kTileRows) : kTileRows;
    // The gate pre-activations R·h of one tile's rows; GRU without
    // linear_before_reset also needs r ⊙ h for its second product.
    acc_ = ir::MakeBuffer("gates", {I(rows_), I(Gates(a_.cell)) * h_}, dt_);
    rh_ = ir::MakeBuffer("reset_h", {I(rows_), h_}, dt_);
    std::vector<ir::Stmt> body;
    // Slot 0: the initial states.
    {
      ir::Var d = ir::MakeVar("d"), bv = ir::MakeVar("b"), j = ir::MakeVar("j");
      std::vector<ir::Stmt> init;
      for (int64_t n = 0; n < (c0_.defined() ? 2 : 1); ++n) {
        for (int64_t dd = 0; dd < d_.d; ++dd) {
          const te::Tensor& src = n == 0 ? h0_ : c0_;
          PrimExpr slot = n == 0 ? I(0) : t_ + I(1);
          init.push_back(ir::Store(s, StateIn(src, dd, PrimExpr(bv), PrimExpr(j)), {slot, I(dd), PrimExpr(bv), PrimExpr(j)}));
        }
      }
      body.push_back(For(bv, b_, For(j, h_, ir::Seq(init))));
    }
    // The directions are independent recurrences: the outermost loop, each
    // with its own scratch and S indexed by the loop variable itself, so that
    // the two directions can run in parallel (default_schedule.h: an
    // independent loop). Inside, the steps, then the batch tiles: a tile's
    // rows share every load of R (one pass over R per step and direction
    // instead of one per batch entry).
    ir::Var dv = ir::MakeVar("d");
    dir_ = PrimExpr(dv);
    auto directions = [&]() {
      full_tiles_ = rows_ == 1 || exact_rows_ || (bs && *bs % rows_ == 0);
      PrimExpr tiles = bs ? I((*bs + rows_ - 1) / rows_) : Bin(TirKind::kFloorDiv, b_ + I(rows_ - 1), I(rows_));
      ir::Stmt per_dir;
      for (int64_t d = d_.d - 1; d >= 0; --d) {
        ir::Var bt = ir::MakeVar("bt"), step = ir::MakeVar("step");
        PrimExpr sp(step);
        PrimExpr t = Reverse(I(d)) ? t_ - I(1) - sp : sp;
        ir::Stmt steps = For(step, t_, For(bt, tiles, Step(sp, t, d, PrimExpr(bt))));
        per_dir = per_dir ? std::make_shared<ir::IfThenElseNode>(Bin(TirKind::kEQ, dir_, I(d)), steps, per_dir) : steps;
      }
      return per_dir;
    };
    ir::Stmt per_dir = directions();
    if (!bs) {
      // A symbolic batch below the tile takes one tile of exactly its rows
      // by a run-time test, as a pinned batch does. A batch of one (a
      // streaming model called one window at a time: Silero VAD) in tiles
      // of 4 computed 3 copies of the row (its whole call took 0.081 ms
      // against 0.037 with the batch pinned to 1, 1 thread); lac_encoder's
      // batch of 3 computed a fourth (each GRU 405 us against 370 pinned,
      // 3x48 tokens, 1 thread, busy machine).
      int64_t wide = rows_;
      exact_rows_ = true;
      for (int64_t r = wide - 1; r >= 1; --r) {
        rows_ = r;
        ir::Stmt exact = directions();
        per_dir = std::make_shared<ir::IfThenElseNode>(Bin(TirKind::kEQ, b_, I(r)), exact, per_dir);
      }
      exact_rows_ = false;
      rows_ = wide;
      full_tiles_ = false;
    }
    if (a_.cell == Cell::kGru && !a_.linear_before_reset) per_dir = std::make_shared<ir::AllocateNode>(rh_, per_dir);
    body.push_back(For(dv, I(d_.d), std::make_shared<ir::AllocateNode>(acc_, per_dir)));
    return ir::Seq(body);
  }

  // Batch entry of row ii of tile bt: clamped to B-1 for loads (the rows
  // past B of a last, partial tile compute a copy of entry B-1).
  PrimExpr Row(const PrimExpr& bt, const PrimExpr& ii) const {
    PrimExpr r = bt * I(rows_) + ii;
    return full_tiles_ ? r : Bin(TirKind::kMin, r, b_ - I(1));
  }

  // gates[ii, col] = bias + Σ_k r[d, k, col] * v(ii, k) for the columns col
  // of gates [g0, g1) and the rows ii of a tile: a register-blocked GEMM
  // (rows x kCols accumulators held across the whole k loop, rows unrolled,
  // columns vectorized), each loaded vector of R feeding every row. A last
  // column block that would pass the end is moved back to end there
  // (overlapping its neighbour: equal values stored twice).
  static constexpr int64_t kTileRows = 4;
  static constexpr int64_t kAccFloats = 128;  // rows x columns of accumulators
  ir::Stmt MatVec(int64_t d, int g0, int g1, const std::function<PrimExpr(const PrimExpr&, const PrimExpr&)>& v) const {
    int64_t n = (g1 - g0) * *ConstDim(h_);
    // Whole vectors (16 floats: one AVX-512 register, two AVX2 ones): 3 rows
    // with 42 columns split each row into 16 + 16 + 8 + 2 (lac_encoder, B=3).
    int64_t nr = std::min(n, std::max<int64_t>(16, kAccFloats / rows_ / 16 * 16));
    int64_t blocks = (n + nr - 1) / nr;
    ir::Var cb = ir::MakeVar("cb"), k = ir::MakeVar("k");
    PrimExpr c0 = n % nr == 0 ? PrimExpr(cb) * I(nr) : Bin(TirKind::kMin, PrimExpr(cb) * I(nr), I(n - nr));
    PrimExpr base = I(g0 * *ConstDim(h_)) + c0;
    // "local": kept in registers (LLVM promotes it once the row loop is
    // unrolled and the column loop vectorized).
    auto acc_node = std::make_shared<ir::BufferNode>(*ir::MakeBuffer("acc", {I(rows_), I(nr)}, dt_));
    acc_node->scope = "local";
    ir::Buffer acc = acc_node;
    auto grid = [&](const std::function<ir::Stmt(const PrimExpr&, const PrimExpr&)>& f) {
      ir::Var ii = ir::MakeVar("ii"), jj = ir::MakeVar("jj");
      ir::Stmt inner = std::make_shared<ir::ForNode>(jj, I(0), I(nr), ir::ForKind::kVectorized, f(PrimExpr(ii), PrimExpr(jj)));
      return ir::Stmt(std::make_shared<ir::ForNode>(ii, I(0), I(rows_), ir::ForKind::kUnrolled, inner));
    };
    ir::Stmt init = grid([&](const PrimExpr& ii, const PrimExpr& jj) {
      return ir::Store(acc, rb_.defined() ? rb_({I(d), base + jj}) : Const(dt_, 0), {ii, jj});
    });
    ir::Stmt update = grid([&](const PrimExpr& ii, const PrimExpr& jj) {
      PrimExpr w = r_({I(d), PrimExpr(k), base + jj});
      PrimExpr cur = ir::Load(acc, {ii, jj});
      PrimExpr x = v(ii, PrimExpr(k));
      PrimExpr sum = dt_ == DType::Float32()
                         ? PrimExpr(std::make_shared<ir::CallNode>(dt_, "fma", std::vector<PrimExpr>{w, x, cur}))
                         : Bin(TirKind::kAdd, cur, Bin(TirKind::kMul, w, x));
      return ir::Store(acc, sum, {ii, jj});
    });
    ir::Stmt store = grid([&](const PrimExpr& ii, const PrimExpr& jj) {
      return ir::Store(acc_, ir::Load(acc, {ii, jj}), {ii, base + jj});
    });
    ir::Stmt blk = std::make_shared<ir::AllocateNode>(acc, ir::Seq({init, For(k, h_, update), store}));
    return For(cb, I(blocks), blk);
  }

  // One step of direction d for the rows of tile bt: the products, then one
  // fused loop per row applying the gates (a row past a sequence's end
  // carries its state; a row past B of a partial tile is skipped).
  ir::Stmt Step(const PrimExpr& s, const PrimExpr& t, int64_t d, const PrimExpr& bt) const {
    auto hprev = [&](const PrimExpr& ii, const PrimExpr& k) { return ir::Load(s_, {s, dir_, Row(bt, ii), k}); };
    auto add = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kAdd, p, q); };
    auto mul = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kMul, p, q); };
    auto sub = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kSub, p, q); };
    PrimExpr one = Const(dt_, 1);
    std::vector<ir::Stmt> st;
    // The products first (they read rows of S that the cells then advance).
    if (a_.cell == Cell::kGru && !a_.linear_before_reset) {
      // (r ⊙ h)·Rhᵀ: r first, then the candidate's product over r ⊙ h.
      st.push_back(MatVec(d, 0, 2, hprev));
      ir::Var iv = ir::MakeVar("ii"), kv = ir::MakeVar("j");
      PrimExpr ii(iv), k(kv);
      PrimExpr r = ClipAct(d, 0, add(X(t, Row(bt, ii), d, 1, k), ir::Load(acc_, {ii, h_ + k})));
      st.push_back(For(iv, I(rows_), For(kv, h_, ir::Store(rh_, mul(r, hprev(ii, k)), {ii, k}))));
      st.push_back(MatVec(d, 2, 3, [&](const PrimExpr& i2, const PrimExpr& k2) { return ir::Load(rh_, {i2, k2}); }));
    } else {
      st.push_back(MatVec(d, 0, Gates(a_.cell), hprev));
    }
    ir::Var iv = ir::MakeVar("ii"), jv = ir::MakeVar("j");
    PrimExpr ii(iv), j(jv);
    PrimExpr b = bt * I(rows_) + ii;  // a valid entry inside the cell
    auto g = [&](int gate) { return ir::Load(acc_, {ii, arith::Simplify(h_ * I(gate)) + j}); };
    PrimExpr hp = ir::Load(s_, {s, dir_, b, j});
    std::optional<PrimExpr> live;
    if (lens_.defined()) live = Bin(TirKind::kLT, t, Len(b));
    auto keep = [&](PrimExpr v, PrimExpr old) { return live ? Select(*live, v, old) : v; };
    std::vector<ir::Stmt> cell;
    if (a_.cell == Cell::kLstm) {
      PrimExpr cprev = ir::Load(s_, {t_ + I(1), dir_, b, j});
      auto peep = [&](int which, const PrimExpr& c) { return mul(p_({I(d), arith::Simplify(h_ * I(which)) + j}), c); };
      PrimExpr i = ClipAct(d, 0, add(add(X(t, b, d, 0, j), g(0)), peep(0, cprev)));
      PrimExpr f = a_.input_forget ? sub(one, i) : ClipAct(d, 0, add(add(X(t, b, d, 2, j), g(2)), peep(2, cprev)));
      PrimExpr cand = ClipAct(d, 1, add(X(t, b, d, 3, j), g(3)));
      PrimExpr c = add(mul(f, cprev), mul(i, cand));
      // c is stored first and o and h(c) read it back (the cell loop is
      // explicit vectors, vector_loop.h: the load is at the store's own
      // indices, so each chunk's h sees its own c). As one expression
      // instead, h's statement held i, f and the candidate again, and LLVM
      // computed them twice wherever it could not prove the h store leaves
      // gates and x_proj unchanged (a symbolic batch: S and the gate scratch
      // are run-time-sized blocks): 8 activations per element, not 5, and
      // the batch-3 cell loop 158 FMAs against the pinned build's 100.
      // A row past its sequence's end reads back cprev; its h keeps hp.
      PrimExpr cnew = ir::Load(s_, {t_ + I(1), dir_, b, j});
      PrimExpr o = ClipAct(d, 0, add(add(X(t, b, d, 1, j), g(1)), peep(1, cnew)));
      cell = {ir::Store(s_, keep(c, cprev), {t_ + I(1), dir_, b, j}),
              ir::Store(s_, keep(mul(o, ClipAct(d, 2, cnew)), hp), {s + I(1), dir_, b, j})};
    } else if (a_.cell == Cell::kGru) {
      PrimExpr hh;
      if (a_.linear_before_reset) {
        PrimExpr r = ClipAct(d, 0, add(X(t, b, d, 1, j), g(1)));
        hh = ClipAct(d, 1, add(X(t, b, d, 2, j), mul(r, g(2))));
      } else {
        hh = ClipAct(d, 1, add(X(t, b, d, 2, j), g(2)));
      }
      PrimExpr z = ClipAct(d, 0, add(X(t, b, d, 0, j), g(0)));
      cell = {ir::Store(s_, keep(add(mul(sub(one, z), hh), mul(z, hp)), hp), {s + I(1), dir_, b, j})};
    } else {
      cell = {ir::Store(s_, keep(ClipAct(d, 0, add(X(t, b, d, 0, j), g(0))), hp), {s + I(1), dir_, b, j})};
    }
    ir::Stmt rowloop = For(jv, h_, ir::Seq(cell));
    if (!full_tiles_) rowloop = std::make_shared<ir::IfThenElseNode>(Bin(TirKind::kLT, b, b_), rowloop, ir::Stmt());
    st.push_back(For(iv, I(rows_), rowloop));
    return ir::Seq(st);
  }

  const RnnAttrs& a_;
  const Dims& d_;
  te::Tensor x_, r_, rb_, h0_, c0_, p_, lens_;
  PrimExpr t_, b_, h_;  // the kernel's own (local) dimensions
  DType dt_;
  ir::Buffer s_, acc_, rh_;
  PrimExpr dir_;            // the direction loop's variable: S's index 1
  int64_t rows_ = 1;        // batch entries per tile
  bool full_tiles_ = true;  // whether the tiles cover exactly B entries
  bool exact_rows_ = false;  // building the variant for a batch of exactly rows_
};

Result<ir::PrimFunc> LegalizeRnn(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(RnnAttrs a, ReadAttrs(call));
  for (size_t i = 0; i < call.args.size(); ++i) { KILN_RETURN_IF_ERROR(ShapedTensorArg(call, i, "argument").status()); }
  KILN_ASSIGN_OR_RETURN(std::optional<Dims> d, CheckArgs(call, a));
  if (!d) return Unimplemented(Prefix(call) + "legalization needs known shapes");
  // The products' register blocks are laid out over the gate columns at
  // compile time (ONNX's importer always gives a static hidden size).
  if (!ConstDim(d->h)) return Unimplemented(Prefix(call) + "legalization needs a static hidden size, got " + DimString(d->h));
  RnnKernel k(a, *d);
  return k.Build(call, name);
}

}  // namespace

void AddRnnOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.nn.lstm", "lstm", -1, InferRnn, LegalizeRnn, OpPattern::kOpaque});
  t->push_back({"relax.nn.gru", "gru", -1, InferRnn, LegalizeRnn, OpPattern::kOpaque});
  t->push_back({"relax.nn.rnn", "rnn", -1, InferRnn, LegalizeRnn, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
