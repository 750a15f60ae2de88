#include "compiler/transform/mixed_precision.h"

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/tir/conv_match.h"
#include "compiler/transform/expr_mutator.h"
#include "runtime/half_float.h"

namespace kiln {
namespace transform {
namespace {

// Compute-heavy operators: their cost is the multiply-accumulate loop, which
// reads half operands (half the bytes of weights and activations) and
// accumulates in float32 through out_dtype (a K-long sum rounded to bf16's 8
// bits at every step would lose the result).
const std::set<std::string>& ComputeOps() {
  static const std::set<std::string> ops = {"relax.matmul", "relax.linear", "relax.nn.conv1d", "relax.nn.conv2d",
                                            "relax.nn.conv2d_transpose"};
  return ops;
}

// Operators whose result is one rounding of a function of a few operand
// elements that does not grow past the operands' range by much: computing
// them from half operands (the kernels compute half in float32 and round
// once) costs one rounding. Elementwise arithmetic and the bounded
// activations, data movement, and max / min (exact in any precision).
//
// Deliberately absent, so they stay float32 (the deny list, as TVM's and ONNX
// Runtime's mixed-precision passes keep one):
// - softmax, log_softmax: exp of unnormalized logits and a row sum;
// - layer_norm, rms_norm, group_norm, batch_norm: mean and variance are sums
//   over a row, and a variance is a small difference of large numbers;
// - sum, mean, variance, std, prod, cumsum, cumprod, avg_pool2d,
//   adaptive_avg_pool2d: long accumulations (their kernels accumulate in the
//   output's dtype);
// - exp, log, power, square: exp and squares overflow fp16 (65504) where
//   float32 does not, log near zero loses what little mantissa half has;
// - attention, lstm, gru, rnn: a softmax inside, or a state carried over
//   many steps;
// - astype, and calls of kernels and packed functions (call_tir,
//   call_dps_packed, ...): written for the dtypes they were given;
// - comparisons, isnan and the like: their float operands stay float32 (a
//   comparison of rounded values can flip);
// - max_pool2d, though exact in any precision: LLVM narrows the window
//   schedule's compares of widened halves back to half compares, which x86
//   without AVX512-FP16 runs one lane at a time (DenseNet-121's 3x3/2 pool
//   over 64 x 112^2: 7.4 ms a call in half, 0.13 in float32, 1 thread; the
//   window schedule taught half operands still took ~50x float32).
const std::set<std::string>& FollowOps() {
  static const std::set<std::string> ops = {
      // elementwise arithmetic
      "relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.maximum", "relax.minimum", "relax.where",
      "relax.negative", "relax.abs", "relax.sqrt", "relax.floor", "relax.ceil", "relax.round",
      // bounded activations
      "relax.nn.relu", "relax.nn.leakyrelu", "relax.nn.leaky_relu", "relax.clip", "relax.sigmoid", "relax.tanh",
      "relax.erf", "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.silu", "relax.hard_sigmoid",
      "relax.nn.hard_sigmoid", "relax.hard_swish", "relax.nn.hard_swish", "relax.nn.hardswish",
      // data movement
      "relax.reshape", "relax.flatten", "relax.squeeze", "relax.expand_dims", "relax.permute_dims",
      "relax.broadcast_to", "relax.concat", "relax.strided_slice", "relax.take", "relax.gather_nd", "relax.nn.pad",
      "relax.tile", "relax.repeat", "relax.image.resize2d", "relax.nn.dropout",
      // exact in any precision
      "relax.max", "relax.min"};
  return ops;
}

// Calls of kernels and packed functions: their results cannot take a
// fused rounding cast.
bool IsKernelCall(const std::string& op) {
  return op == "relax.call_tir" || op == "relax.call_dps_packed" || op == "relax.call_packed";
}

// Gathers: from a constant float32 table they run in half too (the table is
// stored half: a transformer's embedding is a large share of its weights).
bool IsGather(const std::string& op) { return op == "relax.take" || op == "relax.gather_nd"; }

const ir::TensorSInfo* TensorOf(const ir::Expr& e) {
  return e ? ir::SInfoAs<ir::TensorSInfo>(e->struct_info) : nullptr;
}

bool IsF32Tensor(const ir::Expr& e) {
  const ir::TensorSInfo* t = TensorOf(e);
  return t && t->has_dtype && t->dtype == DType::Float32();
}

bool IsFloatTensor(const ir::Expr& e) {
  const ir::TensorSInfo* t = TensorOf(e);
  return t && (!t->has_dtype || t->dtype.is_float());
}

const ir::CallExpr* OpCallOf(const ir::Expr& e, std::string* name) {
  const auto* call = ir::ExprAs<ir::CallExpr>(e);
  const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  if (!op) return nullptr;
  *name = op->name;
  return call;
}

// Every variable name bound anywhere in `e` (parameters are added by the caller).
void CollectNames(const ir::Expr& e, std::set<std::string>* names) {
  if (!e) return;
  if (const auto* s = ir::ExprAs<ir::SeqExprNode>(e)) {
    for (const auto& block : s->blocks)
      for (const auto& b : block.bindings) {
        names->insert(b.var->name);
        CollectNames(b.value, names);
      }
    CollectNames(s->body, names);
  } else if (const auto* i = ir::ExprAs<ir::IfExpr>(e)) {
    CollectNames(i->then_branch, names);
    CollectNames(i->else_branch, names);
  }
}

// Constants converted to the half dtype, shared by the whole module (a
// weight used in several places is converted and stored once).
class ConstantCache {
 public:
  explicit ConstantCache(DType half) : half_(half) {}
  ir::Expr Half(const ir::ConstantExpr* c) {
    ir::Expr& e = cache_[c];
    if (e) return e;
    Tensor t = Tensor::Empty(c->data.shape(), half_).value();
    const float* src = c->data.data<float>();
    int64_t n = c->data.NumElements();
    // Rounded to nearest even (overflow to inf), as a conversion on the
    // device would.
    uint16_t* dst = t.data<uint16_t>();
    const bool bf16 = half_.code == kDLBfloat;
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16 ? FloatToBFloat16(src[i]) : FloatToHalf(src[i]);
    e = ir::MakeConstant(t, c->name);
    return e;
  }

 private:
  DType half_;
  std::map<const ir::ConstantExpr*, ir::Expr> cache_;
};

class Rewriter : public ExprMutator {
 public:
  Rewriter(DType half, ConstantCache* constants) : half_(half), constants_(constants) {}

  ir::Function VisitFunction(const ir::Function& f) override {
    names_.clear();
    bound_constants_.clear();
    for (const auto& p : f->params) names_.insert(p->name);
    CollectNames(f->body, &names_);
    return ExprMutator::VisitFunction(f);
  }

  ir::BindingBlock VisitBlock(const ir::BindingBlock& block) override {
    if (!block.is_dataflow) return ExprMutator::VisitBlock(block);
    out_.clear();
    half_of_.clear();
    computed_.clear();
    made_half_.clear();
    wanted_.clear();
    pending_.clear();
    opaque_.clear();
    for (const auto& b : block.bindings) {
      std::string op;
      if (!b.match_cast && OpCallOf(b.value, &op) && IsKernelCall(op)) opaque_.insert(b.var.get());
    }
    MarkWanted(block);
    for (const auto& b : block.bindings) Rewrite(b);
    // Values leaving the block are float32, as they were.
    for (const ir::RVar& v : pending_order_)
      if (pending_.count(v.get()) && !v->is_dataflow) F32(v);
    pending_order_.clear();
    ir::BindingBlock out;
    out.is_dataflow = true;
    out.bindings = std::move(out_);
    return out;
  }

 private:
  void Rewrite(const ir::Binding& b) {
    std::string op;
    const ir::CallExpr* call = b.match_cast ? nullptr : OpCallOf(b.value, &op);
    if (const auto* k = ir::ExprAs<ir::ConstantExpr>(b.value); k && !b.match_cast) bound_constants_[b.var.get()] = k;
    if (call && ComputeOps().count(op) && IsComputeInF32(*call, b.var)) {
      std::vector<ir::Expr> args = call->args;
      args[0] = Half(args[0]);
      args[1] = Half(args[1]);
      for (size_t i = 2; i < args.size(); ++i) UseF32(args[i]);  // linear's bias: added in float32
      ir::AttrMap attrs = call->attrs;
      ir::AttrValue f32;
      f32.kind = ir::AttrValue::Kind::kString;
      f32.s = "float32";
      attrs["out_dtype"] = f32;
      // The original variable keeps its float32 result; its half rounding
      // is made where a consumer wants it.
      out_.push_back(ir::Binding{b.var, ir::MakeOpCall(op, std::move(args), attrs, call->sinfo_args), nullptr, b.span});
      computed_.insert(b.var.get());
      return;
    }
    if (call && FollowOps().count(op) && FollowsHalf(op, *call, b.var)) {
      std::vector<ir::Expr> args;
      for (const auto& a : call->args) args.push_back(HalfLeaves(a));
      ir::RVar h = NewVar(b.var->name);
      out_.push_back(ir::Binding{h, ir::MakeOpCall(op, std::move(args), call->attrs, call->sinfo_args), nullptr, b.span});
      half_of_[b.var.get()] = h;
      pending_[b.var.get()] = b.var;
      made_half_.insert(b.var.get());
      pending_order_.push_back(b.var);
      return;
    }
    UseF32(b.value);
    out_.push_back(b);
  }

  // The values some consumer would take in half: operands of compute-heavy
  // calls, and operands of follow operators whose own result is wanted
  // (consumers come later in the block: one backward walk). A chain that
  // ends in float32 consumers only (the scaled scores before a softmax,
  // a bias add before a layer norm) stays float32: rounding it to half would
  // only lose precision where the deny list keeps it.
  void MarkWanted(const ir::BindingBlock& block) {
    auto want = [&](const ir::Expr& e) {
      std::vector<ir::Expr> leaves;
      FloatLeaves(e, &leaves);
      for (const auto& l : leaves)
        if (const auto* v = ir::ExprAs<ir::VarExpr>(l)) wanted_.insert(v);
    };
    for (auto it = block.bindings.rbegin(); it != block.bindings.rend(); ++it) {
      std::string op;
      const ir::CallExpr* call = it->match_cast ? nullptr : OpCallOf(it->value, &op);
      if (!call) continue;
      if (ComputeOps().count(op) && IsComputeInF32(*call, it->var)) {
        want(call->args[0]);
        want(call->args[1]);
      } else if (FollowOps().count(op) && wanted_.count(it->var.get())) {
        for (const auto& a : call->args) want(a);
      }
    }
  }

  // matmul / conv with float32 operands and result (out_dtype none or float32).
  // A convolution the CPU schedules would not take with half operands
  // stays float32 (tir::conv::ScheduledWithHalfOperands: depthwise ones).
  // An operand computed by a kernel call (call_tir: Winograd's transformed
  // input) keeps the call float32: fusion cannot put the rounding cast into
  // that kernel, so the matmul would read each element rounded and widened
  // again (DenseNet-121's six Winograd matmuls over 36 x 128 x 196: 0.42
  // against 0.35 ms each in float32).
  bool IsComputeInF32(const ir::CallExpr& call, const ir::RVar& var) const {
    if (call.args.size() < 2 || !IsF32Tensor(call.args[0]) || !IsF32Tensor(call.args[1]) || !IsF32Tensor(var))
      return false;
    for (size_t i = 0; i < 2; ++i) {
      const auto* v = ir::ExprAs<ir::VarExpr>(call.args[i]);
      if (v && opaque_.count(v)) return false;
    }
    const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
    auto groups = call.attrs.find("groups");
    const ir::TensorSInfo* w = TensorOf(call.args[1]);
    if (op && (op->name == "relax.nn.conv2d" || op->name == "relax.nn.conv1d") && groups != call.attrs.end() &&
        groups->second.kind == ir::AttrValue::Kind::kInt && w && w->has_shape && w->shape.size() >= 2) {
      const auto* per_group = w->shape[1].as<ir::IntImmNode>();
      if (per_group && !tir::conv::ScheduledWithHalfOperands(groups->second.i, per_group->value)) return false;
    }
    auto it = call.attrs.find("out_dtype");
    if (it == call.attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return true;
    return it->second.kind == ir::AttrValue::Kind::kString &&
           (it->second.s.empty() || it->second.s == "void" || it->second.s == "float32");
  }

  // Whether a follow operator runs in half: a float32 result, every float
  // operand float32 and computed in half (by a follow operator, or by a
  // compute-heavy call, whose outputs are half) or a constant, at least one
  // of them not a constant, and the result wanted in half (MarkWanted).
  bool FollowsHalf(const std::string& op, const ir::CallExpr& call, const ir::RVar& var) const {
    if (!IsF32Tensor(var)) return false;
    // A gather from a constant table is half whoever reads it: the table is
    // stored half (a weight rounded once, no arithmetic).
    bool gather_table = IsGather(op) && !call.args.empty() && ConstantOf(call.args[0]);
    if (!gather_table && !wanted_.count(var.get())) return false;
    std::vector<ir::Expr> leaves;
    for (const auto& a : call.args) FloatLeaves(a, &leaves);
    bool any_half = false;
    for (const auto& l : leaves) {
      if (!IsF32Tensor(l)) return false;
      if (ConstantOf(l)) continue;
      const auto* v = ir::ExprAs<ir::VarExpr>(l);
      // A float32 value merely cast for a matmul does not count: a residual
      // stream (x + attention(x)) stays float32.
      if (!v || !(made_half_.count(v) || computed_.count(v))) return false;
      any_half = true;
    }
    return any_half || gather_table;
  }

  static void FloatLeaves(const ir::Expr& e, std::vector<ir::Expr>* out) {
    if (const auto* t = ir::ExprAs<ir::TupleExpr>(e)) {
      for (const auto& f : t->fields) FloatLeaves(f, out);
    } else if (IsFloatTensor(e)) {
      out->push_back(e);
    }
  }

  const ir::ConstantExpr* ConstantOf(const ir::Expr& e) const {
    if (const auto* k = ir::ExprAs<ir::ConstantExpr>(e)) return k->data.dtype() == DType::Float32() ? k : nullptr;
    const auto* v = ir::ExprAs<ir::VarExpr>(e);
    auto it = v ? bound_constants_.find(v) : bound_constants_.end();
    if (it == bound_constants_.end() || it->second->data.dtype() != DType::Float32()) return nullptr;
    return it->second;
  }

  // `e` (a float32 tensor operand) in half: a converted constant, the value's
  // half variable, or a new cast of it.
  ir::Expr Half(const ir::Expr& e) {
    if (const ir::ConstantExpr* k = ConstantOf(e)) return constants_->Half(k);
    const auto* v = ir::ExprAs<ir::VarExpr>(e);
    if (!v) return e;  // not reached in A-normal form
    auto it = half_of_.find(v);
    if (it != half_of_.end()) return it->second;
    ir::RVar h = NewVar(v->name);
    out_.push_back(ir::Binding{h, Cast(e, half_), nullptr, {}});
    half_of_[v] = h;
    return h;
  }

  // `e` with its float tensor leaves in half (tuples rebuilt).
  ir::Expr HalfLeaves(const ir::Expr& e) {
    if (const auto* t = ir::ExprAs<ir::TupleExpr>(e)) {
      std::vector<ir::Expr> fields;
      for (const auto& f : t->fields) fields.push_back(HalfLeaves(f));
      return std::make_shared<ir::TupleExpr>(std::move(fields));
    }
    return IsF32Tensor(e) ? Half(e) : e;
  }

  // Defines the float32 variable `v` from its half value if it is not yet.
  void F32(const ir::RVar& v) {
    auto it = pending_.find(v.get());
    if (it == pending_.end()) return;
    out_.push_back(ir::Binding{v, Cast(half_of_.at(v.get()), DType::Float32()), nullptr, {}});
    pending_.erase(it);
  }

  // Every variable `e` uses, as float32.
  void UseF32(const ir::Expr& e) {
    if (!e) return;
    switch (e->kind) {
      case ir::ExprKind::kVar: {
        auto it = pending_.find(static_cast<const ir::VarExpr*>(e.get()));
        if (it != pending_.end()) F32(it->second);
        return;
      }
      case ir::ExprKind::kTuple:
        for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) UseF32(f);
        return;
      case ir::ExprKind::kTupleGetItem: UseF32(static_cast<const ir::TupleGetItemExpr&>(*e).tuple); return;
      case ir::ExprKind::kCall:
        for (const auto& a : static_cast<const ir::CallExpr&>(*e).args) UseF32(a);
        return;
      default: return;
    }
  }

  ir::Expr Cast(const ir::Expr& x, DType to) const {
    ir::AttrValue d;
    d.kind = ir::AttrValue::Kind::kString;
    d.s = DTypeToString(to);
    return ir::MakeOpCall("relax.astype", {x}, {{"dtype", d}});
  }

  ir::RVar NewVar(const std::string& base) {
    std::string stem = base + (half_.code == kDLBfloat ? "_bf16" : "_f16");
    for (int i = 0;; ++i) {
      std::string n = i == 0 ? stem : stem + "_" + std::to_string(i);
      if (names_.insert(n).second) return ir::MakeRVar(n, nullptr, /*dataflow=*/true);
    }
  }

  DType half_;
  ConstantCache* constants_;
  std::set<std::string> names_;
  std::unordered_map<const ir::VarExpr*, const ir::ConstantExpr*> bound_constants_;
  // Per dataflow block: the bindings made, each value's half variable, and
  // the values so far defined only in half (their float32 variable is bound
  // when first used as float32).
  std::vector<ir::Binding> out_;
  std::unordered_map<const ir::VarExpr*, ir::RVar> half_of_;
  std::unordered_set<const ir::VarExpr*> computed_;   // float32 results of compute-heavy calls
  std::unordered_set<const ir::VarExpr*> made_half_;  // results of follow operators run in half
  std::unordered_set<const ir::VarExpr*> wanted_;     // MarkWanted
  std::unordered_set<const ir::VarExpr*> opaque_;     // results of kernel calls (IsKernelCall)
  std::unordered_map<const ir::VarExpr*, ir::RVar> pending_;
  std::vector<ir::RVar> pending_order_;
};

}  // namespace

Result<Precision> ParsePrecision(const std::string& text) {
  if (text == "fp32") return Precision::kFloat32;
  if (text == "fp16") return Precision::kFloat16;
  if (text == "bf16") return Precision::kBFloat16;
  return InvalidArgument("--precision must be fp32, fp16 or bf16, got '" + text + "'");
}

DType PrecisionDType(Precision p) {
  switch (p) {
    case Precision::kFloat16: return DType::Float16();
    case Precision::kBFloat16: return DType{kDLBfloat, 16, 1};
    case Precision::kFloat32: break;
  }
  return DType::Float32();
}

Result<ir::IRModule> ToMixedPrecision(const ir::IRModule& mod, Precision precision) {
  if (precision == Precision::kFloat32) return mod;
  ConstantCache constants(PrecisionDType(precision));
  ir::IRModule out = mod;
  bool changed = false;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    Rewriter r(PrecisionDType(precision), &constants);
    ir::Function f = r.VisitFunction(e.relax);
    changed |= f != e.relax;
    e.relax = f;
  }
  if (!changed) return out;
  return relax::InferStructInfo(out);
}

}  // namespace transform
}  // namespace kiln
