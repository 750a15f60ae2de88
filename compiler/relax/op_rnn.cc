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
// place). Each batch entry is an independent recurrence (the outer loop,
// parallel when the batch is large or symbolic), with a serial loop over
// steps inside; per step and direction the product R·h accumulates into a
// gate scratch [G, H] (inner loop over the units of a gate row: contiguous,
// vectorized) and one loop over the hidden units applies the gates and
// writes the next state: the cell is one fused loop. Y, Y_h and Y_c are
// then read out of S (zeros past a sequence's length).
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
    // The gate accumulator of one (batch entry, step, direction); GRU without
    // linear_before_reset also needs r ⊙ h for its second product.
    acc_ = ir::MakeBuffer("gates", {I(Gates(a_.cell)), h_}, dt_);
    rh_ = ir::MakeBuffer("reset_h", {h_}, dt_);
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
    // Each batch entry is its own recurrence: the batch loop is outermost,
    // with the scratch rows allocated inside it, so that it can run in
    // parallel (default_schedule.h: an independent loop).
    ir::Var bv = ir::MakeVar("b"), step = ir::MakeVar("step");
    PrimExpr b(bv), sp(step);
    std::vector<ir::Stmt> dirs;
    for (int64_t d = 0; d < d_.d; ++d) {
      PrimExpr t = Reverse(I(d)) ? t_ - I(1) - sp : sp;
      ir::Stmt cell = Step(sp, t, d, b);
      dirs.push_back(lens_.defined() ? std::make_shared<ir::IfThenElseNode>(Bin(TirKind::kLT, t, Len(b)), cell, CopyState(sp, d, b))
                                     : cell);
    }
    ir::Stmt steps = For(step, t_, ir::Seq(dirs));
    if (a_.cell == Cell::kGru && !a_.linear_before_reset) steps = std::make_shared<ir::AllocateNode>(rh_, steps);
    body.push_back(For(bv, b_, std::make_shared<ir::AllocateNode>(acc_, steps)));
    return ir::Seq(body);
  }

  // S[s+1, d, b] = S[s, d, b]: a step past the sequence's end.
  ir::Stmt CopyState(const PrimExpr& s, int64_t d, const PrimExpr& b) const {
    ir::Var j = ir::MakeVar("j");
    std::vector<ir::Stmt> st;
    st.push_back(ir::Store(s_, ir::Load(s_, {s, I(d), b, PrimExpr(j)}), {s + I(1), I(d), b, PrimExpr(j)}));
    return For(j, h_, ir::Seq(st));
  }

  // gates[g, j] = bias + Σ_k r[d, k, g*H + j] * v[k] for gates g in
  // [g0, g1): the innermost loop runs over the contiguous units j of a gate
  // row (vectorized), g and k outside it. k advances by kUnroll when H
  // allows: each pass over a gate row then adds kUnroll products, so the
  // accumulator row is loaded and stored kUnroll times less often (LSTM
  // with H = 128, 100 steps, one thread: 0.51 -> 0.30 ms; 8 gains nothing).
  static constexpr int64_t kUnroll = 4;
  ir::Stmt MatVec(int64_t d, int g0, int g1, const std::function<PrimExpr(const PrimExpr&)>& v) const {
    ir::Var ga = ir::MakeVar("g"), ja = ir::MakeVar("j"), gv = ir::MakeVar("g"), jv = ir::MakeVar("j"), k = ir::MakeVar("k");
    auto col = [&](const ir::Var& g, const ir::Var& j) { return h_ * (PrimExpr(g) + I(g0)) + PrimExpr(j); };
    PrimExpr bias = rb_.defined() ? rb_({I(d), col(ga, ja)}) : Const(dt_, 0);
    ir::Stmt init = For(ga, I(g1 - g0), For(ja, h_, ir::Store(acc_, bias, {PrimExpr(ga) + I(g0), PrimExpr(ja)})));
    std::vector<PrimExpr> at = {PrimExpr(gv) + I(g0), PrimExpr(jv)};
    auto hs = ConstDim(h_);
    int64_t u = hs && *hs % kUnroll == 0 ? kUnroll : 1;
    PrimExpr sum = ir::Load(acc_, at);
    for (int64_t i = 0; i < u; ++i) {
      PrimExpr kk = u == 1 ? PrimExpr(k) : PrimExpr(k) * I(u) + I(i);
      sum = Bin(TirKind::kAdd, sum, Bin(TirKind::kMul, r_({I(d), kk, col(gv, jv)}), v(kk)));
    }
    PrimExpr steps = u == 1 ? h_ : I(*hs / u);
    ir::Stmt accum = For(k, steps, For(gv, I(g1 - g0), For(jv, h_, ir::Store(acc_, sum, at))));
    return ir::Seq({init, accum});
  }

  ir::Stmt Step(const PrimExpr& s, const PrimExpr& t, int64_t d, const PrimExpr& b) const {
    auto hprev = [&](const PrimExpr& k) { return ir::Load(s_, {s, I(d), b, k}); };
    auto g = [&](int gate, const PrimExpr& j) { return ir::Load(acc_, {I(gate), j}); };
    auto add = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kAdd, p, q); };
    auto mul = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kMul, p, q); };
    auto sub = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kSub, p, q); };
    PrimExpr one = Const(dt_, 1);
    ir::Var jv = ir::MakeVar("j");
    PrimExpr j(jv);
    std::vector<ir::Stmt> st;
    if (a_.cell == Cell::kLstm) {
      st.push_back(MatVec(d, 0, Gates(a_.cell), hprev));
      PrimExpr cprev = ir::Load(s_, {t_ + I(1), I(d), b, j});
      auto peep = [&](int which, const PrimExpr& c) { return mul(p_({I(d), arith::Simplify(h_ * I(which)) + j}), c); };
      PrimExpr i = ClipAct(d, 0, add(add(X(t, b, d, 0, j), g(0, j)), peep(0, cprev)));
      PrimExpr f = a_.input_forget ? sub(one, i) : ClipAct(d, 0, add(add(X(t, b, d, 2, j), g(2, j)), peep(2, cprev)));
      PrimExpr cand = ClipAct(d, 1, add(X(t, b, d, 3, j), g(3, j)));
      PrimExpr c = add(mul(f, cprev), mul(i, cand));
      // o and h(c) use c as an expression, not as a reload of the stored
      // value: LLVM refuses to vectorize a loop that stores c and reads it
      // back, and the few recomputed activations cost little beside R·h.
      PrimExpr o = ClipAct(d, 0, add(add(X(t, b, d, 1, j), g(1, j)), peep(1, c)));
      st.push_back(For(jv, h_, ir::Seq({ir::Store(s_, mul(o, ClipAct(d, 2, c)), {s + I(1), I(d), b, j}),
                                        ir::Store(s_, c, {t_ + I(1), I(d), b, j})})));
    } else if (a_.cell == Cell::kGru) {
      PrimExpr hp = hprev(j);
      PrimExpr hh;
      if (a_.linear_before_reset) {
        st.push_back(MatVec(d, 0, Gates(a_.cell), hprev));
        PrimExpr r = ClipAct(d, 0, add(X(t, b, d, 1, j), g(1, j)));
        hh = ClipAct(d, 1, add(X(t, b, d, 2, j), mul(r, g(2, j))));
      } else {
        // (r ⊙ h)·Rhᵀ: r first, then the candidate's product over r ⊙ h.
        st.push_back(MatVec(d, 0, 2, hprev));
        ir::Var kv = ir::MakeVar("j");
        PrimExpr k(kv);
        PrimExpr r = ClipAct(d, 0, add(X(t, b, d, 1, k), g(1, k)));
        st.push_back(For(kv, h_, ir::Store(rh_, mul(r, hprev(k)), {k})));
        st.push_back(MatVec(d, 2, 3, [&](const PrimExpr& i) { return ir::Load(rh_, {i}); }));
        hh = ClipAct(d, 1, add(X(t, b, d, 2, j), g(2, j)));
      }
      PrimExpr z = ClipAct(d, 0, add(X(t, b, d, 0, j), g(0, j)));
      st.push_back(For(jv, h_, ir::Store(s_, add(mul(sub(one, z), hh), mul(z, hp)), {s + I(1), I(d), b, j})));
    } else {
      st.push_back(MatVec(d, 0, Gates(a_.cell), hprev));
      st.push_back(For(jv, h_, ir::Store(s_, ClipAct(d, 0, add(X(t, b, d, 0, j), g(0, j))), {s + I(1), I(d), b, j})));
    }
    return ir::Seq(st);
  }

  const RnnAttrs& a_;
  const Dims& d_;
  te::Tensor x_, r_, rb_, h0_, c0_, p_, lens_;
  PrimExpr t_, b_, h_;  // the kernel's own (local) dimensions
  DType dt_;
  ir::Buffer s_, acc_, rh_;
};

Result<ir::PrimFunc> LegalizeRnn(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(RnnAttrs a, ReadAttrs(call));
  for (size_t i = 0; i < call.args.size(); ++i) { KILN_RETURN_IF_ERROR(ShapedTensorArg(call, i, "argument").status()); }
  KILN_ASSIGN_OR_RETURN(std::optional<Dims> d, CheckArgs(call, a));
  if (!d) return Unimplemented(Prefix(call) + "legalization needs known shapes");
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
