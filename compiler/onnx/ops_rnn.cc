// Recurrent ONNX operators: LSTM, GRU, RNN. Each becomes one R.matmul for
// the input projections of every step and direction (X·Wᵀ plus the biases
// that sit outside the recurrence), then one R.nn.lstm / R.nn.gru / R.nn.rnn
// for the recurrence (compiler/relax/op_rnn.cc), whose results Y, Y_h, Y_c
// feed the node's outputs. Weights that are initializers fold at compile
// time (the transposes, the bias sums); missing initial states, peepholes
// and GRU's recurrence bias become zero constants (initial states with a
// batch of 1, which the operator broadcasts, so a symbolic batch needs no
// shape arithmetic).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "compiler/onnx/graph_importer.h"
#include "compiler/relax/rnn_activation.h"

namespace kiln {
namespace onnx {
namespace {

enum class Cell { kLstm, kGru, kRnn };

int Gates(Cell c) { return c == Cell::kLstm ? 4 : c == Cell::kGru ? 3 : 1; }
int NumActs(Cell c) { return c == Cell::kLstm ? 3 : c == Cell::kGru ? 2 : 1; }

Result<ir::Expr> Zeros(const std::vector<int64_t>& shape, DType dt) {
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, dt));
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  std::memset(t.raw_data(), 0, n * dt.bytes());  // all-zero bits are 0.0 in every float type
  return MakeConstant(t);
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);  // round-trips a float32 attribute exactly
  return buf;
}

// The operator's `activations` text: ONNX's names with the alphas and betas
// that each consumes, in order (the lists feed only the activations that
// take parameters; a list that runs out leaves the ONNX defaults).
Result<std::string> ActivationsText(NodeCtx& ctx, size_t want_per_dir, size_t dirs) {
  const ::onnx::AttributeProto* a = ctx.Attr("activations");
  if (!a) return std::string();
  KILN_ASSIGN_OR_RETURN(std::vector<double> alphas, ctx.AttrFloats("activation_alpha", {}));
  KILN_ASSIGN_OR_RETURN(std::vector<double> betas, ctx.AttrFloats("activation_beta", {}));
  size_t n = static_cast<size_t>(a->strings_size());
  if (n != want_per_dir * dirs && n != want_per_dir) {
    return ctx.Invalid("activations: expected " + std::to_string(want_per_dir * dirs) + " functions, got " +
                       std::to_string(n));
  }
  size_t ai = 0, bi = 0;
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    const std::string& name = a->strings(static_cast<int>(i));
    int params = relax::RnnActivationParams(name);
    if (params < 0) return ctx.Unsupported("activation \"" + name + "\"");
    std::string entry = name;
    std::vector<std::string> args;
    if (params >= 1 && ai < alphas.size()) args.push_back(Num(alphas[ai++]));
    if (params >= 2 && bi < betas.size()) {
      if (args.empty()) {
        // A beta without an alpha: spell out the default alpha.
        auto defaults = relax::ParseRnnActivations(name);
        if (!defaults.ok()) return defaults.status();
        args.push_back(Num(defaults->front().alpha));
      }
      args.push_back(Num(betas[bi++]));
    }
    if (!args.empty()) entry += "(" + args[0] + (args.size() > 1 ? ", " + args[1] : "") + ")";
    text += (text.empty() ? "" : ",") + entry;
  }
  return text;
}

Status ConvertRecurrent(NodeCtx& ctx, Cell cell) {
  const int g = Gates(cell);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* wi, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ri, ctx.Info(2));
  if (xi->ndim != 3 || wi->ndim != 3 || ri->ndim != 3) return ctx.Invalid("X, W and R must have rank 3");
  if (!xi->dtype.is_float()) return ctx.Invalid("X must be a float tensor, got " + DTypeName(xi->dtype));
  DType dt = xi->dtype;
  KILN_ASSIGN_OR_RETURN(std::string direction, ctx.AttrString("direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.Unsupported("direction \"" + direction + "\"");
  }
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  KILN_ASSIGN_OR_RETURN(int64_t layout, ctx.AttrInt("layout", 0));
  if (layout != 0 && layout != 1) return ctx.Unsupported("layout " + std::to_string(layout));
  auto in_size = ConstDim(wi->shape[2]);
  auto hidden = ConstDim(ri->shape[2]);
  if (!in_size || !hidden) return ctx.Unsupported("W and R with symbolic dimensions");
  KILN_ASSIGN_OR_RETURN(int64_t hidden_attr, ctx.AttrInt("hidden_size", *hidden));
  if (hidden_attr != *hidden) {
    return ctx.Invalid("hidden_size " + std::to_string(hidden_attr) + " does not match R's last dimension " +
                       std::to_string(*hidden));
  }
  auto wd = ConstDim(wi->shape[0]);
  auto wg = ConstDim(wi->shape[1]);
  if (!wd || *wd != dirs || !wg || *wg != g * *hidden) {
    return ctx.Invalid("W must have shape [" + std::to_string(dirs) + ", " + std::to_string(g * *hidden) + ", input_size]");
  }
  int64_t H = *hidden, gh = g * H;

  // X·Wᵀ for every step and direction: W [D, GH, I] -> [I, D*GH].
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr w, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr wt, ctx.Op("permute_dims", {w}, {{"axes", AttrInts({2, 0, 1})}}));
  KILN_ASSIGN_OR_RETURN(wt, ctx.Op("reshape", {wt, MakeShape({ir::PrimExpr(*in_size), ir::PrimExpr(dirs * gh)})}));
  // With a symbolic step count or batch, the projection runs as one 2-D
  // matmul over the T*B rows (reshaped around it): the matmul schedule folds
  // a batch into its rows only for static shapes, and a batched [T, B, I]
  // product with B rows per batch element ran at about half the 2-D one's
  // speed (romanizer_encoder at 4x23, one thread, busy machine: 0.80 ms per
  // projection batched, 0.39-0.45 ms as [92, 256] x [256, 768]).
  bool flatten = !ConstDim(xi->shape[0]) || !ConstDim(xi->shape[1]);
  if (flatten) {
    KILN_ASSIGN_OR_RETURN(x, ctx.Op("reshape", {x, MakeShape({xi->shape[0] * xi->shape[1], ir::PrimExpr(*in_size)})}));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr proj, ctx.Op("matmul", {x, wt}));

  // Biases: Wb always into the projection; Rb too, except for GRU whose
  // candidate gate needs it inside the reset gate's product.
  ir::Expr rb;
  if (ctx.HasInput(3)) {
    KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(3));
    auto half = [&](int64_t lo) -> Result<ir::Expr> {
      return ctx.Op("strided_slice", {b}, {{"axes", AttrInts({1})}, {"begin", AttrInts({lo})}, {"end", AttrInts({lo + gh})},
                                           {"strides", AttrInts({1})}});
    };
    KILN_ASSIGN_OR_RETURN(ir::Expr wb, half(0));
    KILN_ASSIGN_OR_RETURN(ir::Expr rbias, half(gh));
    ir::Expr in_bias = wb;
    if (cell == Cell::kGru) {
      rb = rbias;
    } else {
      KILN_ASSIGN_OR_RETURN(in_bias, ctx.Op("add", {wb, rbias}));
    }
    KILN_ASSIGN_OR_RETURN(in_bias, ctx.Op("reshape", {in_bias, MakeShape({ir::PrimExpr(dirs * gh)})}));
    KILN_ASSIGN_OR_RETURN(proj, ctx.Op("add", {proj, in_bias}));
  } else if (cell == Cell::kGru) {
    KILN_ASSIGN_OR_RETURN(rb, Zeros({dirs, gh}, dt));
  }

  if (flatten) {
    KILN_ASSIGN_OR_RETURN(proj, ctx.Op("reshape", {proj, MakeShape({xi->shape[0], xi->shape[1], ir::PrimExpr(dirs * gh)})}));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(ir::Expr rt, ctx.Op("permute_dims", {r}, {{"axes", AttrInts({0, 2, 1})}}));
  std::vector<int64_t> state_shape = layout == 0 ? std::vector<int64_t>{dirs, 1, H} : std::vector<int64_t>{1, dirs, H};
  auto state = [&](size_t i) -> Result<ir::Expr> {
    if (ctx.HasInput(i)) return ctx.Input(i);
    return Zeros(state_shape, dt);
  };
  std::vector<ir::Expr> args = {proj, rt};
  if (cell == Cell::kGru) args.push_back(rb);
  KILN_ASSIGN_OR_RETURN(ir::Expr h0, state(5));
  args.push_back(h0);
  if (cell == Cell::kLstm) {
    KILN_ASSIGN_OR_RETURN(ir::Expr c0, state(6));
    args.push_back(c0);
    if (ctx.HasInput(7)) {
      KILN_ASSIGN_OR_RETURN(ir::Expr p, ctx.Input(7));
      args.push_back(p);
    } else {
      KILN_ASSIGN_OR_RETURN(ir::Expr p, Zeros({dirs, 3 * H}, dt));
      args.push_back(p);
    }
  }
  if (ctx.HasInput(4)) {
    KILN_ASSIGN_OR_RETURN(ir::Expr lens, ctx.Input(4));
    args.push_back(lens);
  }

  ir::AttrMap attrs;
  attrs["direction"] = AttrS(direction);
  if (layout != 0) attrs["layout"] = AttrI(layout);
  KILN_ASSIGN_OR_RETURN(std::string acts, ActivationsText(ctx, static_cast<size_t>(NumActs(cell)), static_cast<size_t>(dirs)));
  if (!acts.empty()) attrs["activations"] = AttrS(acts);
  if (ctx.HasAttr("clip")) {
    KILN_ASSIGN_OR_RETURN(double clip, ctx.AttrFloat("clip", 0));
    if (!(clip > 0)) return ctx.Invalid("clip must be positive, got " + Num(clip));
    attrs["clip"] = AttrF(clip);
  }
  if (cell == Cell::kLstm) {
    KILN_ASSIGN_OR_RETURN(int64_t input_forget, ctx.AttrInt("input_forget", 0));
    if (input_forget) attrs["input_forget"] = AttrB(true);
  }
  if (cell == Cell::kGru) {
    KILN_ASSIGN_OR_RETURN(int64_t lbr, ctx.AttrInt("linear_before_reset", 0));
    if (lbr) attrs["linear_before_reset"] = AttrB(true);
  }
  const char* op = cell == Cell::kLstm ? "nn.lstm" : cell == Cell::kGru ? "nn.gru" : "nn.rnn";
  KILN_ASSIGN_OR_RETURN(ir::Expr results, ctx.Op(op, args, attrs));
  size_t outs = cell == Cell::kLstm ? 3 : 2;
  for (size_t i = 0; i < outs; ++i) {
    if (!ctx.HasOutput(i)) continue;
    KILN_ASSIGN_OR_RETURN(ir::Expr part, ctx.Emit(std::make_shared<ir::TupleGetItemExpr>(results, static_cast<int>(i))));
    ctx.SetOutput(i, part);
  }
  return Status::Ok();
}

Status ConvertLstm(NodeCtx& ctx) { return ConvertRecurrent(ctx, Cell::kLstm); }
Status ConvertGru(NodeCtx& ctx) { return ConvertRecurrent(ctx, Cell::kGru); }
Status ConvertRnn(NodeCtx& ctx) { return ConvertRecurrent(ctx, Cell::kRnn); }

}  // namespace

void AddRnnConverters(ConverterTable* t) {
  (*t)["LSTM"] = ConvertLstm;
  (*t)["GRU"] = ConvertGru;
  (*t)["RNN"] = ConvertRnn;
}

}  // namespace onnx
}  // namespace kiln
